/**
 * The transfers not yet final that this instance watches — fulfil reads them from here, not the
 * store — and the sweep that records their expiry. Only reservations are here: once final, a
 * transfer leaves memory (the store answers for it).
 *
 * With several instances, a transfer this one prepared is often finished by another (the fulfil
 * went there): nothing tells this one. So every sweep also asks the ledger about the reservations
 * it has watched longest (up to RECHECK_PER_SWEEP, each at most once per RECHECK_AFTER_MS) and
 * lets go of those finished: memory holds what is in flight for seconds, not every crossing
 * transfer until its expiration (120 s in the benchmarks, minutes in a hub).
 */
import type { Ledger } from '../ledger/ledger';
import type { Fault } from '../util/fault';
import { claimExpired, readDue } from './expiry-sweep';
import { transferIdToU128 } from './ids';
import type { KeyedMutex } from './keyed-mutex';
import type { MetadataStore, TransferRecord } from './metadata';
import { TransferInternalState, isFinal } from './states';
import { expiredChange } from './transfer-rules';

/** A reservation watched this long (since its prepare, or since the ledger last said it was open) is asked about again. */
export const RECHECK_AFTER_MS = 5_000;
/** At most this many such questions a sweep: a sweep a second keeps up with 8,000 transfers/s finished elsewhere. */
export const RECHECK_PER_SWEEP = 8_000;

interface Watched {
  record: TransferRecord;
  /** When it was put here or last found open in the ledger: the map stays in this order. */
  since: number;
  expiresAt: number;
}

export class OpenTransfers {
  /** In the order of `since`: a record found open again is moved to the end. */
  private readonly records = new Map<string, Watched>();
  /**
   * Records loaded at start whose metadata may lag the ledger (a crash between the two writes):
   * the next sweep reads the ledger for each and repairs the metadata.
   */
  private readonly unchecked = new Set<string>();

  constructor(
    private readonly store: MetadataStore,
    private readonly ledger: Ledger,
    private readonly fault: Fault,
    private readonly now: () => number,
    /** The finishes of this instance, per transfer: a repair waits for one under way. */
    private readonly finishing: KeyedMutex,
  ) {}

  get(transferId: string): TransferRecord | undefined {
    return this.records.get(transferId)?.record;
  }

  set(record: TransferRecord): void {
    const watched = this.records.get(record.transferId);
    if (watched !== undefined) watched.record = record;
    else this.records.set(record.transferId, { record, since: this.now(), expiresAt: Date.parse(record.expiration) });
  }

  delete(transferId: string): void {
    this.records.delete(transferId);
  }

  /**
   * Loads the transfers left open by an earlier run (or another instance), to watch their
   * expiry. Their metadata may lag the ledger: the first sweep reads the ledger for every one
   * (not at start, so that a start does not need the ledger), and every request about one of
   * them reads it before answering.
   */
  async load(): Promise<number> {
    const open = await this.store.openTransfers();
    for (const record of open) {
      if (record.state !== TransferInternalState.RESERVED) continue;
      this.set(record);
      this.unchecked.add(record.transferId);
    }
    return open.length;
  }

  /**
   * The one place an expiry is recorded. For reservations past their expiration (and, after a
   * restart, every record loaded open) it reads the ledger: what the ledger released by itself
   * is told to payer and payee by `notify`, then recorded EXPIRED_RESERVED, so it leaves the
   * sweep only once told (a failed notify is tried again next sweep; a crash between the two
   * tells again, with the same event id). What the ledger posted or voided is let go of: another
   * instance's record of it is kept as it is; missing (a finish whose metadata write a crash
   * lost), it is recorded as the ledger has it and never reported expired. The reservations
   * watched longest are read too (the class comment says why).
   */
  async expireDue(notify: (expired: TransferRecord[]) => Promise<void> = async () => {}): Promise<TransferRecord[]> {
    const now = this.now();
    const due: TransferRecord[] = [];
    const rechecked: TransferRecord[] = [];
    for (const watched of this.records.values()) {
      if (this.unchecked.has(watched.record.transferId) || watched.expiresAt <= now) due.push(watched.record);
      else if (now - watched.since >= RECHECK_AFTER_MS && rechecked.length < RECHECK_PER_SWEEP) rechecked.push(watched.record);
    }
    if (due.length === 0 && rechecked.length === 0) return [];
    const reading = await readDue(this.ledger, [...due, ...rechecked], (r) => transferIdToU128(r.transferId));
    await this.letGoOfFinished(reading.finished);
    // Found open: asked about again RECHECK_AFTER_MS from now.
    const settled = new Set([...reading.expired, ...reading.finished.map((f) => f.record)]);
    for (const record of rechecked) if (!settled.has(record)) this.watchAgain(record.transferId, now);
    for (const record of due) this.unchecked.delete(record.transferId);
    const claim = await claimExpired(this.store, 'transfer', reading.expired, (r) => r.transferId);
    for (const record of claim.recorded) this.records.delete(record.transferId);
    const expired = claim.mine.map((record) => ({ ...record, ...expiredChange() }));
    if (expired.length === 0) return [];
    await notify(expired);
    this.fault('expiry.after-notify');
    for (const record of expired) this.records.delete(record.transferId);
    await this.store.saveTransfers(expired);
    this.fault('expiry.after-metadata');
    return expired;
  }

  /**
   * Finished in the ledger: let go of. Most were finished by another instance, whose record (with
   * the fulfilment) is kept as it is; one the store does not have final is recorded as the ledger
   * has it — behind any finish of it under way here, which writes its own record.
   */
  private async letGoOfFinished(finished: readonly { record: TransferRecord; state: TransferInternalState }[]): Promise<void> {
    if (finished.length === 0) return;
    const stored = await this.store.transfers(finished.map((f) => f.record.transferId));
    for (const [i, { record, state }] of finished.entries()) {
      const id = record.transferId;
      if (isFinalRecord(stored[i])) {
        this.records.delete(id);
        continue;
      }
      await this.finishing.run(id, async () => {
        const [now] = await this.store.transfers([id]);
        if (!isFinalRecord(now)) await this.store.saveTransfers([{ ...record, state }]);
        this.records.delete(id);
      });
    }
  }

  private watchAgain(transferId: string, now: number): void {
    const watched = this.records.get(transferId);
    if (watched === undefined) return;
    this.records.delete(transferId);
    watched.since = now;
    this.records.set(transferId, watched);
  }
}

function isFinalRecord(record: TransferRecord | undefined): boolean {
  return record !== undefined && isFinal(record.state);
}
