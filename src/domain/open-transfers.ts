/**
 * The transfers not yet final that this instance watches — fulfil reads them from here, not the
 * store — and the sweep that records their expiry. Only reservations are here: once final, a
 * transfer leaves memory (the store answers for it).
 */
import type { Ledger } from '../ledger/ledger';
import type { Fault } from '../util/fault';
import { claimExpired, readDue } from './expiry-sweep';
import { transferIdToU128 } from './ids';
import type { MetadataStore, TransferRecord } from './metadata';
import { TransferInternalState } from './states';
import { expiredChange } from './transfer-rules';

export class OpenTransfers {
  private readonly records = new Map<string, TransferRecord>();
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
  ) {}

  get(transferId: string): TransferRecord | undefined {
    return this.records.get(transferId);
  }

  set(record: TransferRecord): void {
    this.records.set(record.transferId, record);
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
      this.records.set(record.transferId, record);
      this.unchecked.add(record.transferId);
    }
    return open.length;
  }

  /**
   * The one place an expiry is recorded. For reservations past their expiration (and, after a
   * restart, every record loaded open) it reads the ledger: what the ledger released by itself
   * is told to payer and payee by `notify`, then recorded EXPIRED_RESERVED, so it leaves the
   * sweep only once told (a failed notify is tried again next sweep; a crash between the two
   * tells again, with the same event id). What the ledger posted or voided — a finish whose
   * metadata write a crash lost — is recorded as the ledger has it and never reported expired.
   */
  async expireDue(notify: (expired: TransferRecord[]) => Promise<void> = async () => {}): Promise<TransferRecord[]> {
    const now = this.now();
    const due = [...this.records.values()].filter((r) => this.unchecked.has(r.transferId) || Date.parse(r.expiration) <= now);
    if (due.length === 0) return [];
    const reading = await readDue(this.ledger, due, (r) => transferIdToU128(r.transferId));
    const claim = await claimExpired(this.store, 'transfer', reading.expired, (r) => r.transferId);
    for (const record of claim.recorded) this.records.delete(record.transferId);
    const expired = claim.mine.map((record) => ({ ...record, ...expiredChange() }));
    const repaired = reading.finished.map(({ record, state }) => ({ ...record, state }));
    if (repaired.length > 0) {
      for (const record of repaired) this.records.delete(record.transferId);
      await this.store.saveTransfers(repaired);
    }
    for (const record of due) this.unchecked.delete(record.transferId);
    if (expired.length === 0) return [];
    await notify(expired);
    this.fault('expiry.after-notify');
    for (const record of expired) this.records.delete(record.transferId);
    await this.store.saveTransfers(expired);
    this.fault('expiry.after-metadata');
    return expired;
  }
}
