/**
 * In-memory bulk stores for tests: the service's bulk records (BulkStore, optimistic saves) and
 * the object store's collections bulk-api-adapter writes (BulkObjectStore), filled by the test.
 */
import type { BulkObjectStore, BulkRecord, BulkStore } from '../../src/ports/bulk';

const FINAL = new Set(['COMPLETED', 'REJECTED', 'INVALID']);

export class MemoryBulkStore implements BulkStore {
  private readonly records = new Map<string, BulkRecord>();
  /** Saves refused because another came first (a test's count). */
  conflicts = 0;
  /** Tests: run before each save, e.g. to slip another process's save in first. */
  beforeSave: ((record: BulkRecord) => Promise<void>) | undefined;
  /** Members whose ids their bulk disclaimed (claim()). */
  private readonly disclaimed = new Set<string>();

  async bulk(bulkTransferId: string): Promise<BulkRecord | undefined> {
    const record = this.records.get(bulkTransferId);
    return record === undefined ? undefined : structuredClone(record);
  }

  async create(record: BulkRecord): Promise<boolean> {
    if (this.records.has(record.bulkTransferId)) return false;
    this.records.set(record.bulkTransferId, structuredClone({ ...record, version: 1 }));
    return true;
  }

  async save(record: BulkRecord): Promise<boolean> {
    await this.beforeSave?.(record);
    const stored = this.records.get(record.bulkTransferId);
    if (stored === undefined || stored.version !== record.version - 1) {
      this.conflicts += 1;
      return false;
    }
    this.records.set(record.bulkTransferId, structuredClone(record));
    return true;
  }

  async openExpiredBefore(beforeMs: number, limit: number): Promise<BulkRecord[]> {
    return [...this.records.values()]
      .filter((record) => !FINAL.has(record.state) && Date.parse(record.expiration) < beforeMs)
      .sort((a, b) => Date.parse(a.expiration) - Date.parse(b.expiration))
      .slice(0, limit)
      .map((record) => structuredClone(record));
  }

  async bulksOf(transferIds: readonly string[]): Promise<Map<string, string>> {
    const wanted = new Set(transferIds);
    const found = new Map<string, string>();
    for (const record of this.records.values())
      for (const member of record.members)
        if (
          wanted.has(member.transferId) &&
          !this.disclaimed.has(claim(record.bulkTransferId, member.transferId))
        )
          found.set(member.transferId, record.bulkTransferId);
    return found;
  }

  async disclaim(bulkTransferId: string, transferIds: readonly string[]): Promise<void> {
    for (const transferId of transferIds) this.disclaimed.add(claim(bulkTransferId, transferId));
  }
}

function claim(bulkTransferId: string, transferId: string): string {
  return `${bulkTransferId}\u0000${transferId}`;
}

export class MemoryBulkObjects implements BulkObjectStore {
  private readonly transfers = new Map<string, Record<string, unknown>[]>();
  private readonly fulfils = new Map<string, Record<string, unknown>[]>();

  /** bulk-api-adapter's `individualTransfers` docs of a `POST /bulkTransfers`. */
  putTransfers(messageId: string, items: readonly Record<string, unknown>[]): void {
    this.transfers.set(messageId, structuredClone([...items]));
  }

  /** One `individualTransferFulfils` doc (bulk-api-adapter saves them one by one, unawaited). */
  putFulfil(messageId: string, result: Record<string, unknown>): void {
    this.fulfils.set(messageId, [...(this.fulfils.get(messageId) ?? []), structuredClone(result)]);
  }

  async individualTransfers(messageId: string): Promise<Record<string, unknown>[]> {
    return structuredClone(this.transfers.get(messageId) ?? []);
  }

  async individualTransferFulfils(messageId: string): Promise<Record<string, unknown>[]> {
    return structuredClone(this.fulfils.get(messageId) ?? []);
  }
}
