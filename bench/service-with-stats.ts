/**
 * Diagnostic launcher (bench/run.ts --batch-stats): the built service exactly as dist/src/main.js
 * starts it, plus GET /metrics with the ledger batcher's figures when the service has no
 * /metrics of its own. It exists only until the service exposes them itself (bench/README.md,
 * "What the service should expose"); the production run uses `node dist/src/main.js`.
 *
 *   SERVICE_DIR=. node --import tsx bench/service-with-stats.ts
 */
import path from 'node:path';

interface Stats {
  batches?: number;
  commands?: number;
  items?: number;
  maxBatchCommands?: number;
  maxBatch?: number;
  totalLatencyMs?: number;
  maxLatencyMs?: number;
  failedBatches?: number;
  timeouts?: number;
}

async function main(): Promise<void> {
  const dir = path.resolve(process.env['SERVICE_DIR'] ?? '.');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { buildService } = require(path.join(dir, 'dist/src/app.js')) as typeof import('../src/app');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { loadConfig } = require(path.join(dir, 'dist/src/config.js')) as typeof import('../src/config');
  const config = loadConfig();
  const service = await buildService(config);
  if (!service.app.hasRoute({ method: 'GET', url: '/metrics' })) {
    service.app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const stats = (service.ledger as unknown as { stats(): Stats }).stats();
      const lines = [
        ['ledger_batches_total', 'counter', stats.batches],
        ['ledger_batch_commands_total', 'counter', stats.commands ?? stats.items],
        ['ledger_batch_commands_max', 'gauge', stats.maxBatchCommands ?? stats.maxBatch],
        ['ledger_batch_latency_ms_total', 'counter', stats.totalLatencyMs],
        ['ledger_batch_latency_ms_max', 'gauge', stats.maxLatencyMs],
        ['ledger_batches_failed_total', 'counter', stats.failedBatches],
        ['ledger_timeouts_total', 'counter', stats.timeouts],
      ].flatMap(([name, type, value]) => (value === undefined ? [] : [`# TYPE ${name} ${type}`, `${name} ${value}`]));
      return reply.type('text/plain; version=0.0.4').send(`${lines.join('\n')}\n`);
    });
  }
  const shutdown = (): void => {
    service.close().then(() => process.exit(0), () => process.exit(1));
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  await service.app.listen({ host: config.http.host, port: config.http.port });
}

main().catch((error: unknown) => {
  process.stderr.write(`failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
