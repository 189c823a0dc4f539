/**
 * Prometheus metrics at GET /metrics: request latency per route, requests in flight, ledger
 * batch sizes and latencies, event-loop lag, and prom-client's default process metrics named
 * as central-ledger names them (central-services-metrics prefixes them with its config's
 * INSTRUMENTATION.METRICS.config.prefix, `moja_cl_` by default: our metrics.prefix), so dashboards
 * built for it find them. The others have no counterpart there and keep their names. Disabled
 * (METRICS_ENABLED=false, INSTRUMENTATION.METRICS.DISABLED), nothing is measured and /metrics is
 * not served, as central-ledger then registers no metrics plugin.
 */
import type { FastifyPluginAsync } from 'fastify';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the ledger's batch queue tells about itself (BatchingLedger in src/ledger). */
export interface LedgerBatchSource {
  stats(): { lingerMs: number };
  readonly batchObservers: ((commands: number, latencyMs: number, oldestWaitMs: number) => void)[];
}

/** Seconds: from 0.5 ms (a ledger batch on loopback) to 5 s (the default ledger timeout). */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];

export interface MetricsOptions {
  ledger: LedgerBatchSource;
  enabled: boolean;
  /** Of the process metrics' names. */
  prefix: string;
}

const instrumented: FastifyPluginAsync<MetricsOptions> = async (
  app,
  { ledger, enabled, prefix },
) => {
  if (!enabled) return;
  const registry = new Registry();
  collectDefaultMetrics({
    register: registry,
    prefix,
    eventLoopMonitoringPrecision: 10,
  });
  const requestSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  // Counted in a plain number and read at each scrape: a Gauge's inc/dec hash their labels on every
  // request.
  let inFlight = 0;
  new Gauge({
    name: 'http_requests_in_flight',
    help: 'HTTP requests being handled',
    registers: [registry],
    collect() {
      this.set(inFlight);
    },
  });
  const batchCommands = new Histogram({
    name: 'ledger_batch_commands',
    help: 'Commands per ledger batch',
    buckets: BATCH_SIZE_BUCKETS,
    registers: [registry],
  });
  const batchSeconds = new Histogram({
    name: 'ledger_batch_duration_seconds',
    help: 'Ledger batch latency',
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  // How long each batch's oldest command waited in the queue (for a free slot, then the linger),
  // and the linger now: what the adaptive linger does.
  const oldestWaitSeconds = new Counter({
    name: 'ledger_batch_oldest_wait_seconds_total',
    help: 'Sum over ledger batches of how long their oldest command waited in the queue',
    registers: [registry],
  });
  new Gauge({
    name: 'ledger_batch_linger_seconds',
    help: 'The ledger queue linger now (adaptive: where it stands)',
    registers: [registry],
    collect() {
      this.set(ledger.stats().lingerMs / 1000);
    },
  });
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  new Gauge({
    name: 'event_loop_lag_p99_seconds',
    help: 'Event-loop delay, 99th percentile since the last scrape',
    registers: [registry],
    collect() {
      this.set(loopDelay.percentile(99) / 1e9);
      loopDelay.reset();
    },
  });

  ledger.batchObservers.push((commands, latencyMs, oldestWaitMs) => {
    batchCommands.observe(commands);
    batchSeconds.observe(latencyMs / 1000);
    oldestWaitSeconds.inc(oldestWaitMs / 1000);
  });
  // Fastify times every request itself (reply.elapsedTime): nothing kept per request here. The
  // commands sent to the ledger are ledger_batch_commands_sum.
  app.addHook('onRequest', (_request, _reply, done) => {
    inFlight++;
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    inFlight--;
    requestSeconds.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unknown',
        status: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
    done();
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
};

/**
 * Its request hooks time every route, not only its own: the plugin shares the context it is
 * registered in, as Fastify's 'skip-override' property says (what fastify-plugin sets).
 */
export const metrics = Object.assign(instrumented, { [Symbol.for('skip-override')]: true });
