/**
 * The transfers not yet final that this instance watches — fulfil reads them from here, not the
 * store — and the sweep that records their expiry. Only reservations are here: once final, a
 * transfer leaves memory (the store answers for it). Which of them a sweep asks the ledger
 * about, and why those watched longest too: domain/watchlist.ts.
 */
import type { Ledger } from '../../ports/ledger';
import type { Fault } from '../../util/fault';
import { FinalWrites, OneSweepAtATime, claimExpired, readDue, type Warn } from './expiry-sweep';
import { transferIdToU128 } from '../shared/ids';
import type { KeyedMutex } from '../../util/keyed-mutex';
import type { MetadataStore, TransferRecord } from '../../ports/metadata';
import { TransferInternalState, isFinal } from '../../ports/states';
import { expiredChange } from '../transfers/rules';
import { Watchlist } from './watchlist';

/**
 * Overdue reservations taken over a pass (OpenTransfers.adoptOverdue, FxService.adoptOverdue): one
 * indexed read of the store's.
 */
export const OVERDUE_PER_PASS = 1000;

export class OpenTransfers {
  private readonly watched: Watchlist<TransferRecord>;
  private readonly sweeps = new OneSweepAtATime();
  /** Told expiries and refusals whose write failed: written by the next sweep. */
  readonly finalWrites: FinalWrites<TransferRecord>;

  constructor(
    private readonly store: MetadataStore,
    private readonly ledger: Ledger,
    private readonly fault: Fault,
    private readonly now: () => number,
    /** The finishes of this instance, per transfer: a repair waits for one under way. */
    private readonly finishing: KeyedMutex,
    warn: Warn | undefined,
  ) {
    this.watched = new Watchlist((record) => Date.parse(record.expiration), now);
    this.finalWrites = new FinalWrites(
      (records) => store.saveTransfers(records),
      (record) => record.transferId,
      warn,
    );
  }

  get(transferId: string): TransferRecord | undefined {
    return this.watched.get(transferId);
  }

  set(record: TransferRecord): void {
    this.watched.set(record.transferId, record);
  }

  delete(transferId: string): void {
    this.watched.delete(transferId);
  }

  /**
   * Loads the transfers left open by an earlier run (or another instance), to watch their
   * expiry. Their metadata may lag the ledger: the first sweep reads the ledger for every one
   * (not at start, so that a start does not need the ledger), and every request about one of
   * them reads it before answering.
   */
  async load(): Promise<number> {
    const open = await this.store.openTransfers();
    this.watchUnchecked(open);
    return open.length;
  }

  /**
   * Takes over, from a store shared by several instances, reservations overdue by `overdueByMs`
   * that no live instance is telling: only the instance that prepared a transfer watches it, and
   * that one may be gone for good (scaled down). The sweep then treats them as loaded at start;
   * the expiry claims keep each told once. At most OVERDUE_PER_PASS a pass.
   */
  async adoptOverdue(overdueByMs: number): Promise<void> {
    const overdue =
      (await this.store.overdue?.('transfer', this.now() - overdueByMs, OVERDUE_PER_PASS)) ?? [];
    const unwatched = overdue.filter((id) => this.watched.get(id) === undefined);
    if (unwatched.length > 0) this.watchUnchecked(await this.store.transfers(unwatched));
  }

  private watchUnchecked(records: readonly (TransferRecord | undefined)[]): void {
    for (const record of records)
      if (record?.state === TransferInternalState.RESERVED)
        this.watched.setUnchecked(record.transferId, record);
  }

  /**
   * The one place an expiry is recorded. For reservations past their expiration (and, after a
   * restart, every record loaded open) it reads the ledger: what the ledger released by itself
   * is told to payer and payee by `notify`, then recorded EXPIRED_RESERVED, so it leaves the
   * sweep only once told (a failed notify is tried again next sweep; a failed record too, without
   * telling again: FinalWrites; a crash between the two tells again, with the same event id).
   * What the ledger posted or voided is let go of: another instance's record of it is kept as it
   * is; missing (a finish whose metadata write a crash lost), it is recorded as the ledger has it
   * and never reported expired. The reservations watched longest are read too (the class comment
   * says why). Never two sweeps at once (OneSweepAtATime).
   */
  expireDue(
    notify: (expired: TransferRecord[]) => Promise<void> = async () => {},
  ): Promise<TransferRecord[]> {
    return this.sweeps.run(() => this.sweep(notify));
  }

  private async sweep(
    notify: (expired: TransferRecord[]) => Promise<void>,
  ): Promise<TransferRecord[]> {
    await this.finalWrites.write();
    const now = this.now();
    const { due, rechecked } = this.watched.select(now);
    if (due.length === 0 && rechecked.length === 0) return [];
    const reading = await readDue(this.ledger, [...due, ...rechecked], (r) =>
      transferIdToU128(r.transferId),
    );
    await this.letGoOfFinished(reading.finished);
    // Found open: asked about again RECHECK_AFTER_MS from now.
    const settled = new Set([...reading.expired, ...reading.finished.map((f) => f.record)]);
    for (const record of rechecked)
      if (!settled.has(record)) this.watched.watchAgain(record.transferId, now);
    for (const record of due) this.watched.checked(record.transferId);
    const claim = await claimExpired(this.store, 'transfer', reading.expired, (r) => r.transferId);
    for (const record of claim.recorded) this.watched.delete(record.transferId);
    const expired = claim.mine.map((record) => ({ ...record, ...expiredChange() }));
    if (expired.length === 0) return [];
    await notify(expired);
    this.fault('expiry.after-notify');
    for (const record of expired) this.watched.delete(record.transferId);
    await this.finalWrites.write(expired);
    this.fault('expiry.after-metadata');
    return expired;
  }

  /**
   * Finished in the ledger: let go of. Most were finished by another instance, whose record (with
   * the fulfilment) is kept as it is; one the store does not have final is repaired.
   */
  private async letGoOfFinished(
    finished: readonly { record: TransferRecord; state: TransferInternalState }[],
  ): Promise<void> {
    if (finished.length === 0) return;
    const stored = await this.store.transfers(finished.map((f) => f.record.transferId));
    for (const [i, { record, state }] of finished.entries()) {
      const id = record.transferId;
      if (isFinalRecord(stored[i])) {
        this.watched.delete(id);
        continue;
      }
      await this.repair(record, state);
    }
  }

  /**
   * A finish the ledger has and the store lacks (the sweep's, a GET's, a duplicate prepare's
   * finding), recorded as the ledger has it and no longer watched — behind any finish of the
   * transfer under way on this instance, whose record then stands. Written after that finish's
   * own (a read of the store from before it), the repair would erase the fulfilment and the
   * finish hash (the memory store keeps whatever comes last; MySQL's upsert refuses it), and a
   * retry of that fulfil would be recorded and answered as a new commit. Returns the record.
   */
  repair(record: TransferRecord, state: TransferInternalState): Promise<TransferRecord> {
    const id = record.transferId;
    return this.finishing.run(id, async () => {
      let [repaired] = await this.store.transfers([id]);
      if (!isFinalRecord(repaired)) {
        repaired = { ...record, state };
        await this.store.saveTransfers([repaired]);
      }
      this.watched.delete(id);
      return repaired;
    });
  }
}

function isFinalRecord(record: TransferRecord | undefined): record is TransferRecord {
  return record !== undefined && isFinal(record.state);
}
