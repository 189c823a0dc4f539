/** central-ledger's admin API: the routes hub onboarding uses, same paths, bodies and codes. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { FspiopCode, fspiopError } from '../domain/errors';
import { decodeIlpTransaction, IlpDecodeError } from '../domain/ilp';
import type { HubAccountType, Participant, SettlementModel } from '../domain/metadata';
import { HUB_NAME, type FundsAction, type ParticipantService } from '../domain/participants';
import { TransferInternalState } from '../domain/states';
import type { TransferService } from '../domain/transfers';
import * as schemas from './schemas';

type NameParams = { name: string };
type AccountParams = { name: string; id: string };

export interface HealthSource {
  /** The services /health reports, each checked now. */
  check(): Promise<{ name: string; status: 'OK' | 'DOWN' }[]>;
  /**
   * Faults of this process that only a restart mends (a Kafka consumer stopped for good), for
   * /live. An unreachable ledger, database or broker is not one: restarting would not bring it back.
   */
  processFaults(): string[];
}

export function registerAdminRoutes(app: FastifyInstance, participants: ParticipantService, transfers: TransferService, health: HealthSource, version: string): void {
  const startTime = new Date();

  app.get('/health', async (_request, reply) => {
    const services = await health.check();
    const up = services.every((s) => s.status === 'OK');
    return reply.status(up ? 200 : 502).send({
      status: up ? 'OK' : 'DOWN',
      uptime: (Date.now() - startTime.getTime()) / 1000,
      startTime: startTime.toISOString(),
      versionNumber: version,
      services,
    });
  });

  // Liveness for orchestrators: 200 while the process serves and has no fault a restart would mend.
  app.get('/live', async (_request, reply) => {
    const faults = health.processFaults();
    return reply.status(faults.length === 0 ? 200 : 503).send({ status: faults.length === 0 ? 'OK' : 'DOWN', ...(faults.length === 0 ? {} : { faults }) });
  });

  app.get('/enums', async () => ENUMS);

  app.get('/ledgerAccountTypes', async () =>
    Object.entries(ENUMS.ledgerAccountType).map(([name, id]) => ({ id, name, description: name, isActive: 1, isSettleable: name === 'POSITION' || name === 'SETTLEMENT' })),
  );

  app.post<{ Params: NameParams; Body: { currency: string; type: HubAccountType } }>(
    '/participants/:name/accounts',
    { schema: { params: schemas.nameParams, body: schemas.hubAccountBody } },
    async (request, reply) => {
      await participants.addHubAccount(request.params.name, request.body);
      return reply.status(201).send();
    },
  );

  app.post<{ Body: SettlementModel }>('/settlementModels', { schema: { body: schemas.settlementModelBody } }, async (request, reply) => {
    await participants.addSettlementModel({ ...request.body, currency: request.body.currency ?? null });
    return reply.status(201).send();
  });
  app.get('/settlementModels', async () => participants.settlementModels());
  app.get<{ Params: NameParams }>('/settlementModels/:name', { schema: { params: schemas.nameParams } }, async (request) => participants.settlementModel(request.params.name));

  app.post<{ Body: { name: string; currency: string } }>('/participants', { schema: { body: schemas.participantBody } }, async (request, reply) => {
    const participant = await participants.create(request.body);
    return reply.status(201).send(await entityOf(request, participant, participants));
  });
  app.get('/participants', async (request) => Promise.all((await participants.list()).map((p) => entityOf(request, p, participants))));
  app.get<{ Params: NameParams }>('/participants/:name', { schema: { params: schemas.nameParams } }, async (request) =>
    entityOf(request, await participants.get(request.params.name), participants),
  );
  app.put<{ Params: NameParams; Body: { isActive: boolean | number } }>(
    '/participants/:name',
    { schema: { params: schemas.nameParams, body: schemas.isActiveBody } },
    async (request) => entityOf(request, await participants.setActive(request.params.name, Boolean(request.body.isActive)), participants),
  );

  app.post<{ Params: NameParams; Body: { currency: string; limit: { type: string; value: unknown }; initialPosition?: unknown } }>(
    '/participants/:name/initialPositionAndLimits',
    { schema: { params: schemas.nameParams, body: schemas.initialPositionAndLimitsBody } },
    async (request, reply) => {
      await participants.initialPositionAndLimits(request.params.name, request.body);
      return reply.status(201).send();
    },
  );

  app.get<{ Params: NameParams; Querystring: { currency?: string; type?: string } }>('/participants/:name/limits', { schema: { params: schemas.nameParams } }, async (request) =>
    participants.limits(request.params.name, request.query),
  );
  app.put<{ Params: NameParams; Body: { currency: string; limit: { type: string; value: unknown; alarmPercentage?: number } } }>(
    '/participants/:name/limits',
    { schema: { params: schemas.nameParams, body: schemas.limitsBody } },
    async (request) => participants.adjustLimit(request.params.name, request.body),
  );

  app.get<{ Params: NameParams; Querystring: { currency?: string } }>('/participants/:name/positions', { schema: { params: schemas.nameParams } }, async (request) => {
    const positions = await participants.positions(request.params.name, request.query.currency);
    // central-ledger answers one object when a currency is asked for, a list otherwise.
    return request.query.currency === undefined ? positions : (positions[0] ?? {});
  });

  app.get<{ Params: NameParams }>('/participants/:name/accounts', { schema: { params: schemas.nameParams } }, async (request) => participants.accounts(request.params.name));

  app.put<{ Params: AccountParams; Body: { isActive: boolean | number } }>(
    '/participants/:name/accounts/:id',
    { schema: { body: schemas.isActiveBody } },
    async (request, reply) => {
      await participants.setAccountActive(request.params.name, accountIdOf(request.params.id), Boolean(request.body.isActive));
      return reply.status(200).send();
    },
  );

  app.post<{ Params: AccountParams; Body: FundsAction }>('/participants/:name/accounts/:id', { schema: { body: schemas.fundsBody } }, async (request, reply) => {
    await participants.recordFunds(request.params.name, accountIdOf(request.params.id), request.body);
    return reply.status(202).send();
  });

  app.put<{ Params: AccountParams & { transferId: string }; Body: { action: 'recordFundsOutCommit' | 'recordFundsOutAbort' } }>(
    '/participants/:name/accounts/:id/transfers/:transferId',
    { schema: { body: schemas.fundsFinishBody } },
    async (request, reply) => {
      await participants.finishFundsOut(request.params.name, accountIdOf(request.params.id), request.params.transferId, request.body.action);
      return reply.status(202).send();
    },
  );

  app.post<{ Params: NameParams; Body: { type: string; value: string } }>(
    '/participants/:name/endpoints',
    { schema: { params: schemas.nameParams, body: schemas.endpointBody } },
    async (request, reply) => {
      await participants.addEndpoint(request.params.name, request.body);
      return reply.status(201).send();
    },
  );
  app.get<{ Params: NameParams }>('/participants/:name/endpoints', { schema: { params: schemas.nameParams } }, async (request) => participants.endpoints(request.params.name));

  app.get<{ Params: { id: string } }>('/transactions/:id', { schema: { params: schemas.idParams } }, async (request) => transactionOf(transfers, request.params.id));
}

/** The ILP transaction a transfer carried, as GET /transactions/{id} answers it. */
export async function transactionOf(transfers: TransferService, transferId: string): Promise<Record<string, unknown>> {
  const record = await transfers.recordOf(transferId);
  try {
    return decodeIlpTransaction(record.ilpPacket);
  } catch (error) {
    if (error instanceof IlpDecodeError) throw fspiopError(FspiopCode.VALIDATION, `the transfer's ilpPacket cannot be decoded: ${error.message}`);
    throw error;
  }
}

function accountIdOf(text: string): number {
  if (!/^\d{1,9}$/.test(text)) throw fspiopError(FspiopCode.MALFORMED_SYNTAX, `account id ${JSON.stringify(text)} is not a number`);
  return Number(text);
}

/** central-ledger's participant entity. */
async function entityOf(request: FastifyRequest, participant: Participant, participants: ParticipantService): Promise<Record<string, unknown>> {
  const self = `${request.protocol}://${request.host}/participants/${encodeURIComponent(participant.name)}`;
  const accounts =
    participant.name === HUB_NAME
      ? (await participants.hubAccounts()).map((a) => ({ id: a.id, ledgerAccountType: a.type, currency: a.currency, isActive: 1, createdDate: a.createdDate, createdBy: 'unknown' }))
      : participant.currencies.flatMap((c) => [
          { id: c.positionAccountId, ledgerAccountType: 'POSITION', currency: c.currency, isActive: c.positionAccountActive ? 1 : 0, createdDate: c.createdDate, createdBy: participant.createdBy },
          { id: c.settlementAccountId, ledgerAccountType: 'SETTLEMENT', currency: c.currency, isActive: 1, createdDate: c.createdDate, createdBy: participant.createdBy },
        ]);
  return { name: participant.name, id: self, created: participant.created, isActive: participant.isActive ? 1 : 0, links: { self }, accounts };
}

/** /enums as central-ledger seeds them. */
const ENUMS = {
  ledgerAccountType: { POSITION: 1, SETTLEMENT: 2, HUB_RECONCILIATION: 3, HUB_MULTILATERAL_SETTLEMENT: 4, INTERCHANGE_FEE: 5, INTERCHANGE_FEE_SETTLEMENT: 6 },
  ledgerEntryType: {
    PRINCIPLE_VALUE: 1, INTERCHANGE_FEE: 2, HUB_FEE: 3, POSITION_DEPOSIT: 4, POSITION_WITHDRAWAL: 5, SETTLEMENT_NET_RECIPIENT: 6,
    SETTLEMENT_NET_SENDER: 7, SETTLEMENT_NET_ZERO: 8, RECORD_FUNDS_IN: 9, RECORD_FUNDS_OUT: 10,
  },
  participantLimitType: { NET_DEBIT_CAP: 1 },
  transferState: Object.fromEntries(Object.keys(TransferInternalState).map((s) => [s, s])),
  transferParticipantRoleType: { PAYER_DFSP: 1, PAYEE_DFSP: 2, HUB: 3, DFSP_SETTLEMENT: 4, DFSP_POSITION: 5 },
  endpointType: {
    ALARM_NOTIFICATION_URL: 1, ALARM_NOTIFICATION_TOPIC: 2, FSPIOP_CALLBACK_URL_TRANSFER_POST: 3, FSPIOP_CALLBACK_URL_TRANSFER_PUT: 4,
    FSPIOP_CALLBACK_URL_TRANSFER_ERROR: 5, NET_DEBIT_CAP_THRESHOLD_BREACH_EMAIL: 6, NET_DEBIT_CAP_ADJUSTMENT_EMAIL: 7,
    SETTLEMENT_TRANSFER_POSITION_CHANGE_EMAIL: 8, FSPIOP_CALLBACK_URL_PARTICIPANT_PUT: 9, FSPIOP_CALLBACK_URL_PARTICIPANT_PUT_ERROR: 10,
    FSPIOP_CALLBACK_URL_PARTIES_GET: 11, FSPIOP_CALLBACK_URL_PARTIES_PUT: 12, FSPIOP_CALLBACK_URL_PARTIES_PUT_ERROR: 13,
    FSPIOP_CALLBACK_URL_QUOTES: 14, FSPIOP_CALLBACK_URL_TRANSFER_PATCH: 15,
  },
};
