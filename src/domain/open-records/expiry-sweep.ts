/**
 * The expiry sweep's reading of the ledger, shared by transfers and FX conversions: for records
 * past their expiration (or loaded unchecked after a restart), what the ledger released by itself
 * (expired: to be told to both parties, then recorded) and what it finished otherwise (a finish
 * whose metadata a crash lost: recorded as the ledger has it, never reported expired); and,
 * where several instances sweep the same records, which of the expired this one tells. Also what
 * keeps each service's sweep from telling twice: one sweep at a time, and the final records whose
 * write failed, written by the next sweep.
 */
import type { Ledger, LedgerTransferState } from '../../ports/ledger';
import type { ExpiryKind, MetadataStore } from '../../ports/metadata';
import { TransferInternalState, isFinal } from '../../ports/states';

/** Ledger ids looked up per request (4 TigerBeetle ids each, 8,189 per request). */
const STATES_PER_LOOKUP = 2000;

export interface SweepReading<R> {
  expired: R[];
  finished: { record: R; state: TransferInternalState }[];
}

export async function readDue<R>(sweep: {
  ledger: Ledger;
  due: readonly R[];
  ledgerIdOf: (record: R) => bigint;
  /** The state a record has when the ledger's is this (a conversion's abort reads otherwise). */
  stateOf: (state: LedgerTransferState) => TransferInternalState | undefined;
}): Promise<SweepReading<R>> {
  const { ledger, due, ledgerIdOf } = sweep;
  const states: LedgerTransferState[] = [];
  for (let i = 0; i < due.length; i += STATES_PER_LOOKUP) {
    states.push(
      ...(await ledger.transferStates(due.slice(i, i + STATES_PER_LOOKUP).map(ledgerIdOf))),
    );
  }
  const reading: SweepReading<R> = { expired: [], finished: [] };
  for (const [i, record] of due.entries()) {
    const state = sweep.stateOf(states[i]!);
    if (state === TransferInternalState.EXPIRED_RESERVED) reading.expired.push(record);
    else if (state !== undefined && isFinal(state)) reading.finished.push({ record, state });
    // Still reserved: the ledger's timeout is in whole seconds, it releases it at a later sweep.
  }
  return reading;
}

/**
 * Of the records the ledger released, those this instance tells and records (`mine`), and those
 * another instance has recorded already (`recorded`: to forget). The rest another instance is
 * telling now: left open here, looked at again next sweep. A store without claims (one instance
 * per store) makes every one this instance's.
 */
export async function claimExpired<R>(
  store: MetadataStore,
  kind: ExpiryKind,
  expired: R[],
  idOf: (record: R) => string,
): Promise<{ mine: R[]; recorded: R[] }> {
  if (store.claimExpiries === undefined || expired.length === 0)
    return { mine: expired, recorded: [] };
  const claim = await store.claimExpiries(kind, expired.map(idOf));
  const [mine, recorded] = [new Set(claim.mine), new Set(claim.recorded)];
  return {
    mine: expired.filter((r) => mine.has(idOf(r))),
    recorded: expired.filter((r) => recorded.has(idOf(r))),
  };
}

/**
 * One sweep of a service at a time: the timer starts one every EXPIRY_SWEEP_MS whether or not the
 * last has finished, and a record stays watched until it is told and recorded, so a sweep started
 * meanwhile would pick the same records, find them expired in the ledger and tell them again (a
 * claim this instance holds is "mine" to both; a store without claims has none). Such a sweep is
 * skipped (it expires nothing): the next tick after the running one ends picks up what is due.
 */
export class OneSweepAtATime {
  private running = false;

  async run<R>(sweep: () => Promise<R[]>): Promise<R[]> {
    if (this.running) return [];
    this.running = true;
    try {
      return await sweep();
    } finally {
      this.running = false;
    }
  }
}

/** Where FinalWrites reports what it had to drop: a logger's warn (pino's argument order). */
export type Warn = (fields: Record<string, unknown>, message: string) => void;

/**
 * Final records kept in memory for the next sweep to write, at most, per service. A record is a
 * few kB (its ILP packet mostly), so this holds them in tens of MB; refused prepares during a
 * store outage arrive at the request rate, so some bound is reached within minutes whatever it
 * is, while told expiries never exceed the open transfers the watchlist held anyway.
 */
export const MAX_UNWRITTEN_FINALS = 20_000;

/**
 * Final records whose answer is already given — an expiry told to payer and payee, a prepare the
 * ledger refused (4001, 4200) — and whose write to the store failed: the next sweep writes them.
 * A told expiry has left the watchlist (a later sweep would find it expired and tell it again);
 * a refusal is the ledger's and answered as such, where a 2003 would have the client retry into
 * the ledger's failed_before (3100). Final, so no newer record of theirs can be overwritten.
 *
 * A restart loses them (an expiry is then told again, with the same event id), and so does a
 * store outage long enough to queue more than MAX_UNWRITTEN_FINALS: the oldest refusals go first
 * (a retry of one then meets the ledger's failed_before: 3100 instead of 4001), told expiries
 * only when nothing else is left to drop (one is then told again after a restart).
 */
export class FinalWrites<R> {
  /** Oldest first, each. */
  private expiries: R[] = [];
  private refusals: R[] = [];

  constructor(
    private readonly save: (records: readonly R[]) => Promise<void>,
    private readonly idOf: (record: R) => string,
    private readonly warn: Warn = () => {},
  ) {}

  /**
   * Writes these told expiries with those not written yet; a failed write keeps them all for the
   * next call.
   */
  write(expiries: readonly R[] = []): Promise<void> {
    return this.flush(expiries, []);
  }

  /**
   * A refusal's record: the answer stands whether or not the store took it (the sweep retries, and
   * logs its failure).
   */
  async writeRefusal(record: R): Promise<void> {
    await this.flush([], [record]).catch(() => undefined);
  }

  private async flush(expiries: readonly R[], refusals: readonly R[]): Promise<void> {
    const writing = {
      expiries: this.expiries.concat(expiries),
      refusals: this.refusals.concat(refusals),
    };
    [this.expiries, this.refusals] = [[], []];
    if (writing.expiries.length + writing.refusals.length === 0) return;
    try {
      await this.save([...writing.expiries, ...writing.refusals]);
    } catch (error) {
      // Requests write here as well as the sweep: kept ahead of any queued meanwhile, which are
      // newer.
      this.expiries = writing.expiries.concat(this.expiries);
      this.refusals = writing.refusals.concat(this.refusals);
      this.dropPastBound();
      throw error;
    }
  }

  private dropPastBound(): void {
    const excess = this.expiries.length + this.refusals.length - MAX_UNWRITTEN_FINALS;
    if (excess <= 0) return;
    const refusals = this.refusals.splice(0, Math.min(excess, this.refusals.length));
    const expiries = this.expiries.splice(0, excess - refusals.length);
    this.warn(
      { refusals: refusals.map(this.idOf), expiries: expiries.map(this.idOf) },
      `store unavailable: ${excess} final records past the ${MAX_UNWRITTEN_FINALS} kept for the next sweep dropped unwritten`,
    );
  }
}
