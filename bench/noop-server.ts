/**
 * The HTTP ceiling: Fastify with the same routes, body limit and FSPIOP content-type parsing as
 * the service, but no validation, no logging and no work — each route parses the JSON body and
 * answers a view of the same shape and size as the service's. Run as its own process:
 *
 *   PORT=3999 node --import tsx bench/noop-server.ts
 */
import Fastify from 'fastify';

const FSPIOP_CONTENT_TYPE = /^application\/vnd\.interoperability\.[a-z]+\+json/;

async function main(): Promise<void> {
  const app = Fastify({ logger: false, bodyLimit: 65536 });
  app.addContentTypeParser(
    FSPIOP_CONTENT_TYPE,
    { parseAs: 'string' },
    app.getDefaultJsonParser('error', 'error'),
  );

  type Body = { transferId?: string; fulfilment?: string; completedTimestamp?: string };
  app.post<{ Body: Body }>('/transfers', async (request, reply) =>
    reply.status(201).send({ transferId: request.body.transferId, transferState: 'RESERVED' }),
  );
  app.put<{ Params: { id: string }; Body: Body }>('/transfers/:id', async (request) => ({
    transferId: request.params.id,
    transferState: 'COMMITTED',
    fulfilment: request.body.fulfilment,
    completedTimestamp: request.body.completedTimestamp,
  }));
  app.post<{ Body: Body }>('/jmeter/transfers/prepare', async (request, reply) =>
    reply.status(201).send({
      transferId: request.body.transferId,
      transferState: 'COMMITTED',
      fulfilment: request.body.fulfilment,
      completedTimestamp: new Date().toISOString(),
    }),
  );
  app.get('/health', async () => ({ status: 'OK' }));

  const close = (): void => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
  await app.listen({ host: '127.0.0.1', port: Number(process.env['PORT'] ?? 3999) });
}

main().catch((error: unknown) => {
  process.stderr.write(`noop server failed: ${String(error)}\n`);
  process.exit(1);
});
