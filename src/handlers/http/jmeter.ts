/**
 * The /jmeter/* load-test endpoints of the 2022 TigerBeetle integration, request shapes kept so
 * existing plans and data files work (shared/reference/jmeter-endpoints.md). Off unless
 * JMETER_ENABLED=true: they create funded participants and commit without a fulfilment.
 * Registered under the /jmeter prefix.
 */
import type { FastifyPluginAsync } from 'fastify';
import { FspiopCode, fspiopError } from '../../domain/shared/errors';
import {
  ensureLoadTestParticipant,
  LOAD_TEST_REJECTION,
  type LoadTestFunding,
} from '../../domain/load-test/load-test';
import type { ParticipantService } from '../../domain/participants/service';
import {
  finishView,
  viewOf,
  type PrepareRequest,
  type TransferService,
} from '../../domain/transfers/service';
import { transactionOf } from './admin';
import * as schemas from '../schemas/transfers';

type JmeterPrepare = PrepareRequest & { fulfil: boolean; reject?: boolean; fulfilment?: string };

export interface JmeterRoutesOptions {
  participants: ParticipantService;
  transfers: TransferService;
  funding: LoadTestFunding;
}

export const jmeterRoutes: FastifyPluginAsync<JmeterRoutesOptions> = async (
  app,
  { participants, transfers, funding },
) => {
  app.post<{ Body: { name: string; currency: string; newlyCreated?: boolean } }>(
    '/participants/create',
    { schema: { body: schemas.jmeterParticipantBody } },
    async (request) => {
      const newlyCreated = await ensureLoadTestParticipant(
        participants,
        request.body.name,
        request.body.currency,
        funding,
      );
      return { name: request.body.name, currency: request.body.currency, newlyCreated };
    },
  );

  app.get<{ Params: { name: string } }>(
    '/participants/:name',
    { schema: { params: schemas.nameParams } },
    async (request) => {
      const participant = await participants.get(request.params.name);
      return {
        name: participant.name,
        isActive: participant.isActive,
        accounts: await participants.accounts(participant.name),
      };
    },
  );

  app.get<{ Params: { name: string; id: string } }>(
    '/participants/:name/transfers/:id',
    async (request) => {
      const record = await transfers.recordOf(request.params.id);
      if (record.payerFsp !== request.params.name && record.payeeFsp !== request.params.name) {
        throw fspiopError(
          FspiopCode.TRANSFER_ID_NOT_FOUND,
          `Transfer ${request.params.id} not found for ${request.params.name}`,
        );
      }
      return { ...viewOf(record), amount: { amount: record.amount, currency: record.currency } };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/transactions/ilp/:id',
    { schema: { params: schemas.idParams } },
    async (request) => transactionOf(transfers, request.params.id),
  );

  app.post<{ Body: JmeterPrepare }>(
    '/transfers/prepare',
    { schema: { body: schemas.jmeterPrepareBody } },
    async (request, reply) => {
      const { fulfil, reject, fulfilment, ...prepare } = request.body;
      const prepared = await transfers.prepare(prepare.payerFsp, prepare);
      if (!fulfil || prepared.duplicate)
        return reply.status(prepared.duplicate ? 200 : 201).send(viewOf(prepared.record));
      const finished =
        reject === true
          ? await transfers.error(
              prepare.transferId,
              { source: prepare.payeeFsp, destination: prepare.payerFsp },
              { errorInformation: { ...LOAD_TEST_REJECTION } },
            )
          : await transfers.commitTrusted(prepare.transferId, fulfilment);
      return reply.status(201).send(finishView(finished));
    },
  );
};
