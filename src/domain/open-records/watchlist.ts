/**
 * What an instance watches of the records not yet final (transfers' and FX conversions'
 * reservations), in the order it last found them open, and which of them its expiry sweep reads
 * the ledger for:
 *  - due: past their expiration, or loaded at start (their metadata may lag the ledger);
 *  - rechecked: watched for RECHECK_AFTER_MS. With several instances a reservation is often
 *    finished by another one (the fulfil went there) and nothing tells this one, so the sweep asks
 *    the ledger about those watched longest (at most RECHECK_PER_SWEEP a sweep) and lets go of the
 *    finished: memory holds what is in flight for seconds, not every crossing reservation until its
 *    expiration (120 s in the benchmarks, minutes in a hub).
 */

/**
 * A record watched this long (since it came, or since the ledger last said it was open) is asked
 * about again.
 */
export const RECHECK_AFTER_MS = 5_000;
/**
 * At most this many such questions a sweep: a sweep a second keeps up with 8,000 a second finished
 * elsewhere.
 */
export const RECHECK_PER_SWEEP = 8_000;

interface Watched<R> {
  record: R;
  /** When it came or was last found open in the ledger: the map stays in this order. */
  since: number;
  expiresAt: number;
}

export class Watchlist<R> {
  /** In the order of `since`: a record found open again is moved to the end. */
  private readonly entries = new Map<string, Watched<R>>();
  /** Loaded at start: the next sweep reads the ledger for each (a crash may have lost a write). */
  private readonly unchecked = new Set<string>();

  constructor(
    private readonly expiresAtOf: (record: R) => number,
    private readonly now: () => number,
  ) {}

  get(id: string): R | undefined {
    return this.entries.get(id)?.record;
  }

  /** Watches the record, or replaces the one watched under `id` (keeping its place). */
  set(id: string, record: R): void {
    const watched = this.entries.get(id);
    if (watched !== undefined) watched.record = record;
    else this.entries.set(id, { record, since: this.now(), expiresAt: this.expiresAtOf(record) });
  }

  /** Watches a record left open by an earlier run: the next sweep reads the ledger for it. */
  setUnchecked(id: string, record: R): void {
    this.set(id, record);
    this.unchecked.add(id);
  }

  delete(id: string): void {
    this.entries.delete(id);
    this.unchecked.delete(id);
  }

  /** What the sweep at `now` reads the ledger for. */
  select(now: number): { due: R[]; rechecked: R[] } {
    const due: R[] = [];
    const rechecked: R[] = [];
    for (const [id, watched] of this.entries) {
      if (this.unchecked.has(id) || watched.expiresAt <= now) due.push(watched.record);
      else if (now - watched.since >= RECHECK_AFTER_MS && rechecked.length < RECHECK_PER_SWEEP)
        rechecked.push(watched.record);
    }
    return { due, rechecked };
  }

  /** The ledger was read for the record loaded at start: it is due again only at its expiration. */
  checked(id: string): void {
    this.unchecked.delete(id);
  }

  /** Found open in the ledger at `now`: asked about again RECHECK_AFTER_MS later. */
  watchAgain(id: string, now: number): void {
    const watched = this.entries.get(id);
    if (watched === undefined) return;
    this.entries.delete(id);
    watched.since = now;
    this.entries.set(id, watched);
  }
}
