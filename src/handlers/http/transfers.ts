/**
 * FSPIOP transfers over HTTP. ml-api-adapter would answer 202 and call back later; the ledger
 * decides in milliseconds, so here the answer carries the outcome: the transfer's state, or the
 * FSPIOP error the callback would have carried (docs/http-contract.md).
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { FspiopCode, fspiopError } from '../../domain/shared/errors';
import type { ErrorInformation } from '../../ports/metadata';
import {
  finishView,
  viewOf,
  type Delivery,
  type FulfilRequest,
  type PrepareRequest,
  type TransferService,
} from '../../domain/transfers/service';
import * as schemas from '../schemas/transfers';

type IdParams = { id: string };

export interface TransferRoutesOptions {
  transfers: TransferService;
}

export const transferRoutes: FastifyPluginAsync<TransferRoutesOptions> = async (
  app,
  { transfers },
) => {
  app.post<{ Body: PrepareRequest }>(
    '/transfers',
    { schema: { body: schemas.prepareBody, headers: fspiopHeaders } },
    async (request, reply) => {
      const result = await transfers.prepare(header(request, 'fspiop-source'), request.body);
      return reply.status(result.duplicate ? 200 : 201).send(viewOf(result.record));
    },
  );

  app.put<{ Params: IdParams; Body: FulfilRequest }>(
    '/transfers/:id',
    { schema: { params: schemas.idParams, body: schemas.fulfilBody, headers: fspiopHeaders } },
    async (request) => {
      const result = await transfers.fulfil(request.params.id, deliveryOf(request), request.body);
      return finishView(result);
    },
  );

  app.put<{ Params: IdParams; Body: { errorInformation: ErrorInformation } }>(
    '/transfers/:id/error',
    { schema: { params: schemas.idParams, body: schemas.errorBody, headers: fspiopHeaders } },
    async (request) => {
      const result = await transfers.error(request.params.id, deliveryOf(request), request.body);
      return viewOf(result.record);
    },
  );

  app.get<{ Params: IdParams }>(
    '/transfers/:id',
    { schema: { params: schemas.idParams, headers: fspiopHeaders } },
    async (request) => {
      const found = await transfers.lookup(request.params.id, header(request, 'fspiop-source'));
      return found.transfer === undefined
        ? { transferId: found.funds.transferId, transferState: found.funds.state }
        : viewOf(found.transfer);
    },
  );
};

export const fspiopHeaders = {
  type: 'object',
  required: ['fspiop-source'],
  properties: {
    'fspiop-source': { type: 'string', minLength: 1, maxLength: 32 },
    'fspiop-destination': { type: 'string', maxLength: 32 },
  },
} as const;

export function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  if (Array.isArray(value))
    throw fspiopError(FspiopCode.MALFORMED_SYNTAX, `header ${name} is repeated`);
  return value;
}

/** How a fulfil or error came over HTTP: its FSPIOP-Source and FSPIOP-Destination headers. */
export function deliveryOf(request: FastifyRequest): Delivery {
  return {
    source: header(request, 'fspiop-source'),
    destination: header(request, 'fspiop-destination'),
  };
}
