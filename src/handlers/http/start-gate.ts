/**
 * Until the ledger's start-up work has succeeded the service listens but serves nothing that needs
 * the ledger: /health (and central-settlement's /v2/health) answers DOWN with why, /live and
 * /metrics as ever, every other route a clear 2003 with nothing written (rather than a request
 * hanging on a ledger not yet up). The same, for good, once the ledger is found not to be the
 * metadata's (docs/decisions/0007). And while the service stops: a request arriving then gets
 * the same 2003, an FSPIOP error, rather than Fastify's own bare 503.
 */
import type { FastifyInstance } from 'fastify';
import { FspiopCode, FspiopError } from '../../domain/shared/errors';

const SERVED_WHILE_STARTING = new Set(['/health', '/v2/health', '/live', '/metrics']);

export class StartGate {
  /** Why the service does not serve yet; undefined once it does. */
  private why: string | undefined = 'the ledger has not answered yet';
  private readonly waiting: (() => void)[] = [];
  private closed = false;
  /** Set by refuse: the service does not serve again until restarted. */
  private refusedForGood = false;

  get refusal(): string | undefined {
    return this.why;
  }

  /** Whether refuse() stopped serving until a restart. */
  get refusingForGood(): boolean {
    return this.refusedForGood;
  }

  /** What a refused request is told (FSPIOP caps errorDescription at 128 characters). */
  get answer(): string {
    if (this.refusedForGood)
      return 'not serving: the ledger is not the one this metadata was written with (see /health)';
    return this.closed
      ? 'stopping: try again on another instance'
      : 'starting: waiting for the ledger';
  }

  /** The start-up work's last failure, for /health. */
  failed(error: unknown): void {
    if (this.why === undefined || this.refusedForGood) return;
    const reason = error instanceof Error ? error.message : String(error);
    this.why = `waiting for the ledger: ${reason}`;
  }

  /**
   * Serving stops, or never starts, for good: the ledger is not this metadata's (a restart is
   * what serves again, once the operator has mended it). `reason` is /health's.
   */
  refuse(reason: string): void {
    this.refusedForGood = true;
    this.why = `not serving: ${reason}`;
  }

  open(): void {
    if (this.closed || this.refusedForGood) return;
    this.why = undefined;
    for (const run of this.waiting.splice(0)) run();
  }

  /** Runs `run` once the gate is open (at once if it is), never after close. */
  whenOpen(run: () => void): void {
    if (this.why === undefined) run();
    else if (!this.closed) this.waiting.push(run);
  }

  /** The service stops: nothing more is served but what SERVED_WHILE_STARTING names. */
  close(): void {
    this.closed = true;
    this.waiting.length = 0;
    if (!this.refusedForGood) this.why = 'stopping';
  }
}

export function installStartGate(app: FastifyInstance, gate: StartGate): void {
  // A callback hook, not an async one: it stays on every request after the gate opens, and an
  // async hook would cost a promise each time for a flag check.
  app.addHook('onRequest', (request, reply, done) => {
    if (gate.refusal === undefined || SERVED_WHILE_STARTING.has(request.routeOptions.url ?? '')) {
      done();
      return;
    }
    // The reason stays in /health: FSPIOP caps errorDescription at 128 characters.
    const error = new FspiopError(FspiopCode.SERVICE_UNAVAILABLE, gate.answer);
    // Answered here: done() is not called, so the route never runs.
    void reply.status(error.httpStatus).send(error.toApiBody());
  });
}
