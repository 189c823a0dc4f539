/**
 * central-ledger's admin API: same paths, bodies and codes. Its amounts are JSON numbers both
 * ways, kept exact: requests are parsed with every number literal's text (exact-json.ts), and
 * answers write decimal text as number literals.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { FspiopCode, fspiopError } from '../../domain/shared/errors';
import { decodeIlpTransaction, IlpDecodeError } from '../../domain/shared/ilp';
import type { Participant, SettlementModel } from '../../ports/metadata';
import { plainDecimal } from '../../domain/shared/money';
import {
  HUB_NAME,
  type AccountView,
  type FundsAction,
  type LimitRequest,
  type LimitView,
  type ParticipantService,
  type PositionView,
} from '../../domain/participants/service';
import type { TransferService } from '../../domain/transfers/service';
import { JsonNumber, decimalText, parseExactJson, stringifyExact } from './exact-json';
import { ENUMS } from './enums';
import * as schemas from '../schemas/transfers';

type NameParams = { name: string };
type AccountParams = { name: string; id: string };

export interface AdminRoutesOptions {
  participants: ParticipantService;
  transfers: TransferService;
}

export const adminRoutes: FastifyPluginAsync<AdminRoutesOptions> = async (
  app,
  { participants, transfers },
) => {
  // In this plugin's context only: the exact JSON parser serves the admin API, not the FSPIOP hot
  // path.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, body === '' ? undefined : parseExactJson(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  app.get('/enums', async () => ENUMS);

  app.get('/ledgerAccountTypes', async () =>
    Object.entries(ENUMS.ledgerAccountType).map(([name, id]) => ({
      id,
      name,
      description: name,
      isActive: 1,
      isSettleable: name === 'POSITION' || name === 'SETTLEMENT',
    })),
  );

  app.post<{ Params: NameParams; Body: { currency: string; type: string } }>(
    '/participants/:name/accounts',
    { schema: { params: schemas.nameParams, body: schemas.hubAccountBody } },
    async (request, reply) => {
      await participants.addHubAccount(request.params.name, request.body);
      return reply
        .status(201)
        .send(await entityOf(request, await participants.get(HUB_NAME), participants));
    },
  );

  app.post<{ Body: SettlementModel }>(
    '/settlementModels',
    { schema: { body: schemas.settlementModelBody } },
    async (request, reply) => {
      await participants.addSettlementModel({
        ...request.body,
        currency: request.body.currency ?? null,
      });
      return reply.status(201).send();
    },
  );
  app.get('/settlementModels', async () => participants.settlementModels());
  app.get<{ Params: NameParams }>(
    '/settlementModels/:name',
    { schema: { params: schemas.nameParams } },
    async (request) => participants.settlementModel(request.params.name),
  );

  app.post<{
    Body: { name: string; currency: string; isProxy?: boolean | number | string | null };
  }>('/participants', { schema: { body: schemas.participantBody } }, async (request, reply) => {
    const { isProxy, ...body } = request.body;
    const participant = await participants.create({
      ...body,
      isProxy: isProxy === true || isProxy === 1 || isProxy === '1',
    });
    return reply.status(201).send(await entityOf(request, participant, participants));
  });
  // ?isProxy (any non-empty value, as central-ledger tests it) lists proxy participants only.
  app.get<{ Querystring: { isProxy?: string } }>('/participants', async (request) => {
    const all = await participants.list();
    return Promise.all(
      (request.query.isProxy ? all.filter((p) => p.isProxy === true) : all).map((p) =>
        entityOf(request, p, participants),
      ),
    );
  });
  app.get<{ Params: NameParams }>(
    '/participants/:name',
    { schema: { params: schemas.nameParams } },
    async (request) => entityOf(request, await participants.get(request.params.name), participants),
  );
  app.put<{ Params: NameParams; Body: { isActive: boolean | number } }>(
    '/participants/:name',
    { schema: { params: schemas.nameParams, body: schemas.isActiveBody } },
    async (request) =>
      entityOf(
        request,
        await participants.setActive(request.params.name, Boolean(request.body.isActive)),
        participants,
      ),
  );

  app.post<{ Params: NameParams; Body: LimitBody }>(
    '/participants/:name/initialPositionAndLimits',
    { schema: { params: schemas.nameParams, body: schemas.initialPositionAndLimitsBody } },
    async (request, reply) => {
      await participants.initialPositionAndLimits(
        request.params.name,
        limitRequestOf(request.body, 'nonNegative'),
      );
      return reply.status(201).send();
    },
  );

  app.get<{ Querystring: LimitQuery }>(
    '/participants/limits',
    { schema: { querystring: schemas.limitQuery } },
    async (request, reply) =>
      sendExact(
        reply,
        (await participants.allLimits(request.query)).map(({ name, ...view }) => ({
          name,
          ...limitJson(view),
        })),
      ),
  );
  app.get<{ Params: NameParams; Querystring: LimitQuery }>(
    '/participants/:name/limits',
    { schema: { params: schemas.nameParams, querystring: schemas.limitQuery } },
    async (request, reply) =>
      sendExact(
        reply,
        (await participants.limits(request.params.name, request.query)).map(limitJson),
      ),
  );
  app.put<{ Params: NameParams; Body: LimitBody }>(
    '/participants/:name/limits',
    { schema: { params: schemas.nameParams, body: schemas.limitsBody } },
    async (request, reply) =>
      sendExact(
        reply,
        limitJson(
          await participants.adjustLimit(request.params.name, limitRequestOf(request.body, 'any')),
        ),
      ),
  );

  app.get<{ Params: NameParams; Querystring: { currency?: string } }>(
    '/participants/:name/positions',
    { schema: { params: schemas.nameParams } },
    async (request, reply) => {
      const positions = (
        await participants.positions(request.params.name, request.query.currency)
      ).map(positionJson);
      // central-ledger answers one object when a currency is asked for, a list otherwise.
      return sendExact(
        reply,
        request.query.currency === undefined ? positions : (positions[0] ?? {}),
      );
    },
  );

  app.get<{ Params: NameParams }>(
    '/participants/:name/accounts',
    { schema: { params: schemas.nameParams } },
    async (request, reply) =>
      sendExact(reply, (await participants.accounts(request.params.name)).map(accountJson)),
  );

  app.put<{ Params: AccountParams; Body: { isActive: boolean | number } }>(
    '/participants/:name/accounts/:id',
    { schema: { body: schemas.isActiveBody } },
    async (request, reply) => {
      await participants.setAccountActive(
        request.params.name,
        accountIdOf(request.params.id),
        Boolean(request.body.isActive),
      );
      return reply.status(200).send();
    },
  );

  app.post<{ Params: AccountParams; Body: FundsAction }>(
    '/participants/:name/accounts/:id',
    { schema: { body: schemas.fundsBody } },
    async (request, reply) => {
      const body = request.body;
      const amount = {
        ...body.amount,
        amount: amountText(body.amount, 'amount', 'positive', 'amount'),
      };
      await participants.recordFunds(request.params.name, accountIdOf(request.params.id), {
        ...body,
        amount,
      });
      return reply.status(202).send();
    },
  );

  app.put<{
    Params: AccountParams & { transferId: string };
    Body: { action: 'recordFundsOutCommit' | 'recordFundsOutAbort' };
  }>(
    '/participants/:name/accounts/:id/transfers/:transferId',
    { schema: { body: schemas.fundsFinishBody } },
    async (request, reply) => {
      await participants.finishFundsOut(
        request.params.name,
        accountIdOf(request.params.id),
        request.params.transferId,
        request.body.action,
      );
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
  app.get<{ Params: NameParams }>(
    '/participants/:name/endpoints',
    { schema: { params: schemas.nameParams } },
    async (request) => participants.endpoints(request.params.name),
  );

  app.get<{ Params: { id: string } }>(
    '/transactions/:id',
    { schema: { params: schemas.idParams } },
    async (request) => transactionOf(transfers, request.params.id),
  );
};

type LimitQuery = { currency?: string; type?: string };
type LimitBody = {
  currency: string;
  limit: { type: string; value: unknown; alarmPercentage?: number };
  initialPosition?: unknown;
};

/**
 * An admin amount's exact text, with Joi's number() rules of central-ledger's route (else 3101).
 */
function amountText(
  holder: object,
  key: string,
  rule: 'positive' | 'nonNegative' | 'any',
  what: string,
): string {
  const text = plainDecimal(decimalText(holder, key));
  if (text === undefined)
    throw fspiopError(FspiopCode.MALFORMED_SYNTAX, `${what} must be a safe number`);
  if (rule !== 'any' && text.startsWith('-'))
    throw fspiopError(FspiopCode.MALFORMED_SYNTAX, `${what} must be a positive number`);
  if (rule === 'positive' && /^0(\.0*)?$/.test(text))
    throw fspiopError(FspiopCode.MALFORMED_SYNTAX, `${what} must be a positive number`);
  return text;
}

function limitRequestOf(body: LimitBody, rule: 'nonNegative' | 'any'): LimitRequest {
  return {
    currency: body.currency,
    limit: {
      type: body.limit.type,
      value: amountText(body.limit, 'value', rule, 'limit value'),
      ...(body.limit.alarmPercentage === undefined
        ? {}
        : { alarmPercentage: body.limit.alarmPercentage }),
    },
    ...(body.initialPosition === undefined
      ? {}
      : { initialPosition: amountText(body, 'initialPosition', 'any', 'initialPosition') }),
  };
}

/** Sends a body whose JsonNumbers are written as exact number literals. */
function sendExact(reply: FastifyReply, body: unknown): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(stringifyExact(body));
}

const positionJson = (view: PositionView) => ({ ...view, value: new JsonNumber(view.value) });
const accountJson = (view: AccountView) => ({
  ...view,
  value: new JsonNumber(view.value),
  reservedValue: new JsonNumber(view.reservedValue),
});
const limitJson = (view: LimitView) => ({
  ...view,
  limit: { ...view.limit, value: new JsonNumber(view.limit.value) },
});

/** The ILP transaction a transfer carried, as GET /transactions/{id} answers it. */
export async function transactionOf(
  transfers: TransferService,
  transferId: string,
): Promise<Record<string, unknown>> {
  const record = await transfers.recordOf(transferId);
  try {
    return decodeIlpTransaction(record.ilpPacket);
  } catch (error) {
    if (error instanceof IlpDecodeError)
      throw fspiopError(
        FspiopCode.VALIDATION,
        `the transfer's ilpPacket cannot be decoded: ${error.message}`,
      );
    throw error;
  }
}

function accountIdOf(text: string): number {
  if (!/^\d{1,9}$/.test(text))
    throw fspiopError(
      FspiopCode.MALFORMED_SYNTAX,
      `account id ${JSON.stringify(text)} is not a number`,
    );
  return Number(text);
}

/** central-ledger's participant entity. */
async function entityOf(
  request: FastifyRequest,
  participant: Participant,
  participants: ParticipantService,
): Promise<Record<string, unknown>> {
  const self = `${request.protocol}://${request.host}/participants/${encodeURIComponent(participant.name)}`;
  const accounts =
    participant.name === HUB_NAME
      ? (await participants.hubAccounts()).map((a) => ({
          id: a.id,
          ledgerAccountType: a.type,
          currency: a.currency,
          isActive: 1,
          createdDate: a.createdDate,
          createdBy: 'unknown',
        }))
      : participant.currencies.flatMap((c) => [
          {
            id: c.positionAccountId,
            ledgerAccountType: 'POSITION',
            currency: c.currency,
            isActive: c.positionAccountActive ? 1 : 0,
            createdDate: c.createdDate,
            createdBy: participant.createdBy,
          },
          {
            id: c.settlementAccountId,
            ledgerAccountType: 'SETTLEMENT',
            currency: c.currency,
            isActive: 1,
            createdDate: c.createdDate,
            createdBy: participant.createdBy,
          },
        ]);
  return {
    name: participant.name,
    id: self,
    created: participant.created,
    isActive: participant.isActive ? 1 : 0,
    links: { self },
    accounts,
    isProxy: participant.isProxy === true ? 1 : 0,
  };
}
