/**
 * FSPIOP v2.0 /fxTransfers over HTTP, with the transfers resource's contract
 * (docs/http-contract.md): the answer carries what the callback would have carried.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ErrorInformation } from '../../ports/metadata';
import { errorBody, idParams } from '../schemas/transfers';
import { deliveryOf, fspiopHeaders, header } from './transfers';
import { viewOfFx, type FxFulfilRequest, type FxPrepareRequest } from '../../domain/fx/rules';
import { fxFulfilBody, fxPrepareBody } from '../schemas/fx';
import type { FxService } from '../../domain/fx/service';

type IdParams = { id: string };

export interface FxRoutesOptions {
  fx: FxService;
}

export const fxRoutes: FastifyPluginAsync<FxRoutesOptions> = async (app, { fx }) => {
  app.post<{ Body: FxPrepareRequest }>(
    '/fxTransfers',
    { schema: { body: fxPrepareBody, headers: fspiopHeaders } },
    async (request, reply) => {
      const result = await fx.prepare(header(request, 'fspiop-source'), request.body);
      return reply.status(result.duplicate ? 200 : 201).send(viewOfFx(result.record));
    },
  );

  app.put<{ Params: IdParams; Body: FxFulfilRequest }>(
    '/fxTransfers/:id',
    { schema: { params: idParams, body: fxFulfilBody, headers: fspiopHeaders } },
    async (request) => {
      const result = await fx.fulfil(request.params.id, deliveryOf(request), request.body);
      return viewOfFx(result.record);
    },
  );

  app.put<{ Params: IdParams; Body: { errorInformation: ErrorInformation } }>(
    '/fxTransfers/:id/error',
    { schema: { params: idParams, body: errorBody, headers: fspiopHeaders } },
    async (request) =>
      viewOfFx((await fx.error(request.params.id, deliveryOf(request), request.body)).record),
  );

  app.get<{ Params: IdParams }>(
    '/fxTransfers/:id',
    { schema: { params: idParams, headers: fspiopHeaders } },
    async (request) => viewOfFx(await fx.get(request.params.id, header(request, 'fspiop-source'))),
  );
};
