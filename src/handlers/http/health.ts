/**
 * Health as central-ledger reports it (/health: each service it depends on; central-settlement's
 * /v2/health the same, settlement.ts) and liveness for orchestrators (/live: only faults of this
 * process).
 */
import type { FastifyPluginAsync, RouteHandlerMethod } from 'fastify';

export interface HealthSource {
  /** The services /health reports, each checked now. */
  check(): Promise<{ name: string; status: 'OK' | 'DOWN' }[]>;
  /**
   * Faults of this process that only a restart mends (a Kafka consumer stopped for good, a ledger
   * client the cluster evicted), for /live. An unreachable ledger, database or broker is not one:
   * restarting would not bring it back.
   */
  processFaults(): string[];
  /**
   * Why the service does not serve yet (its ledger's start-up work has not succeeded): /health
   * then answers 503 with the reason.
   */
  notServing?(): string | undefined;
}

export interface HealthOptions {
  source: HealthSource;
  /** The service's version, as /health reports it. */
  version: string;
}

/**
 * /health's answer; made once per process, so that every route answering it (/health, /v2/health)
 * reports the process's start time.
 */
export function healthAnswer({ source, version }: HealthOptions): RouteHandlerMethod {
  const startTime = new Date();
  return async (_request, reply) => {
    // After the check: it may be what found the service must not serve.
    const services = await source.check();
    const notServing = source.notServing?.();
    const up = notServing === undefined && services.every((s) => s.status === 'OK');
    // 503 while starting: this service is not available yet; 502: one it depends on is down.
    let status = 200;
    if (notServing !== undefined) status = 503;
    else if (!up) status = 502;
    return reply.status(status).send({
      status: up ? 'OK' : 'DOWN',
      ...(notServing === undefined ? {} : { reason: notServing }),
      uptime: (Date.now() - startTime.getTime()) / 1000,
      startTime: startTime.toISOString(),
      versionNumber: version,
      services,
    });
  };
}

export interface HealthRoutesOptions {
  /** /health's answer (healthAnswer). */
  health: RouteHandlerMethod;
  /** What /live reports. */
  source: HealthSource;
}

export const healthRoutes: FastifyPluginAsync<HealthRoutesOptions> = async (
  app,
  { health, source },
) => {
  app.get('/health', health);

  // Liveness for orchestrators: 200 while the process serves and has no fault a restart would mend.
  app.get('/live', async (_request, reply) => {
    const faults = source.processFaults();
    return reply.status(faults.length === 0 ? 200 : 503).send({
      status: faults.length === 0 ? 'OK' : 'DOWN',
      ...(faults.length === 0 ? {} : { faults }),
    });
  });
};
