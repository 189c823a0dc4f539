/**
 * Health as central-ledger reports it (/health: each service it depends on) and liveness for
 * orchestrators (/live: only faults of this process).
 */
import type { FastifyPluginAsync } from 'fastify';

export interface HealthSource {
  /** The services /health reports, each checked now. */
  check(): Promise<{ name: string; status: 'OK' | 'DOWN' }[]>;
  /**
   * Faults of this process that only a restart mends (a Kafka consumer stopped for good), for
   * /live. An unreachable ledger, database or broker is not one: restarting would not bring it
   * back.
   */
  processFaults(): string[];
}

export interface HealthRoutesOptions {
  source: HealthSource;
  /** The service's version, as /health reports it. */
  version: string;
}

export const healthRoutes: FastifyPluginAsync<HealthRoutesOptions> = async (
  app,
  { source, version },
) => {
  const startTime = new Date();

  app.get('/health', async (_request, reply) => {
    const services = await source.check();
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
    const faults = source.processFaults();
    return reply.status(faults.length === 0 ? 200 : 503).send({
      status: faults.length === 0 ? 'OK' : 'DOWN',
      ...(faults.length === 0 ? {} : { faults }),
    });
  });
};
