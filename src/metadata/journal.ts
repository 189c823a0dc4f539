/**
 * The embedded metadata store made durable: the in-memory store plus a journal file in
 * DATA_DIR. Every change is on disk before its caller is answered (concurrent changes share one
 * write and one fdatasync); at start the journal is replayed and compacted into one snapshot.
 * What it keeps and what it does not: README.md, "Metadata".
 */
import { join } from 'node:path';
import type { FundsRecord, FxTransferRecord, HubAccount, MetadataStore, Participant, SettlementModel, SettlementRecord, SettlementWindowRecord, SettlementWrite, TransferRecord } from '../domain/metadata';
import { Journal } from '../util/journal';
import { MemoryMetadataStore, transferChange, type MetadataSnapshot, type TransferChange } from './memory';

type Change =
  | { op: 'snapshot'; snapshot: MetadataSnapshot }
  | { op: 'hub'; account: HubAccount }
  | { op: 'model'; model: SettlementModel }
  | { op: 'participant'; participant: Participant }
  | { op: 'id'; id: number }
  | { op: 'funds'; record: FundsRecord }
  | { op: 'transfers'; records: TransferRecord[] }
  /** What a later save changed in a transfer already journalled (a finish): a few fields, not the ~1.7 KB record again. */
  | { op: 'transferChanges'; changes: TransferChange[] }
  /** FX conversions are few and small: always written whole. */
  | { op: 'fxTransfers'; records: FxTransferRecord[] }
  /** Settlement windows and a settlement as saved (ids and versions assigned). */
  | { op: 'settlement'; write: SettlementWrite }
  | { op: 'renumberWindow'; open: SettlementWindowRecord; id: number };

export class JournalMetadataStore implements MetadataStore {
  readonly name = 'journal';
  private readonly memory = new MemoryMetadataStore();
  /** Transfers whose last save failed to reach the journal (an I/O error): their next save is written whole. */
  private readonly unjournalled = new Set<string>();

  private constructor(private readonly journal: Journal) {}

  /** Opens DATA_DIR/metadata.journal, replays it and compacts it into one snapshot. */
  static async open(dataDir: string): Promise<JournalMetadataStore> {
    const { journal, entries } = Journal.open(join(dataDir, 'metadata.journal'), { bigints: false });
    const store = new JournalMetadataStore(journal);
    for (const change of entries as Change[]) await store.replay(change);
    journal.rewrite([{ op: 'snapshot', snapshot: store.memory.snapshot() } satisfies Change]);
    return store;
  }

  hubAccounts(): Promise<HubAccount[]> {
    return this.memory.hubAccounts();
  }

  async addHubAccount(account: Omit<HubAccount, 'id'>): Promise<HubAccount> {
    const saved = await this.memory.addHubAccount(account);
    await this.record({ op: 'hub', account: saved });
    return saved;
  }

  settlementModels(): Promise<SettlementModel[]> {
    return this.memory.settlementModels();
  }

  async addSettlementModel(model: SettlementModel): Promise<void> {
    await this.memory.addSettlementModel(model);
    await this.record({ op: 'model', model });
  }

  participants(): Promise<Participant[]> {
    return this.memory.participants();
  }

  participant(name: string): Promise<Participant | undefined> {
    return this.memory.participant(name);
  }

  async saveParticipant(participant: Participant): Promise<void> {
    await this.memory.saveParticipant(participant);
    await this.record({ op: 'participant', participant });
  }

  async nextId(): Promise<number> {
    const id = await this.memory.nextId();
    await this.record({ op: 'id', id });
    return id;
  }

  fundsRecord(transferId: string): Promise<FundsRecord | undefined> {
    return this.memory.fundsRecord(transferId);
  }

  async saveFundsRecord(record: FundsRecord): Promise<void> {
    await this.memory.saveFundsRecord(record);
    await this.record({ op: 'funds', record });
  }

  transfers(ids: readonly string[]): Promise<(TransferRecord | undefined)[]> {
    return this.memory.transfers(ids);
  }

  async saveTransfers(records: readonly TransferRecord[]): Promise<void> {
    // Memory and the journal queue take the save in the same tick, so concurrent saves of one
    // transfer reach the journal in the order memory applied them: each change is against the
    // record the previous journal entry left.
    const previous = this.memory.replaceTransfers(records);
    const whole: TransferRecord[] = [];
    const changes: TransferChange[] = [];
    records.forEach((record, i) => {
      const before = previous[i];
      if (before === undefined || this.unjournalled.has(record.transferId)) whole.push(record);
      else changes.push(transferChange(before, record));
    });
    const entries: Change[] = [];
    if (whole.length > 0) entries.push({ op: 'transfers', records: whole });
    if (changes.length > 0) entries.push({ op: 'transferChanges', changes });
    try {
      await this.journal.append(entries);
    } catch (error) {
      // Memory has these records and the disk may not: their next save writes them whole.
      for (const record of records) this.unjournalled.add(record.transferId);
      throw error;
    }
    for (const record of whole) this.unjournalled.delete(record.transferId);
  }

  openTransfers(): Promise<TransferRecord[]> {
    return this.memory.openTransfers();
  }

  fxTransfers(ids: readonly string[]): Promise<(FxTransferRecord | undefined)[]> {
    return this.memory.fxTransfers(ids);
  }

  fxTransfersDetermining(transferIds: readonly string[]): Promise<(FxTransferRecord | undefined)[]> {
    return this.memory.fxTransfersDetermining(transferIds);
  }

  async saveFxTransfers(records: readonly FxTransferRecord[]): Promise<void> {
    await this.memory.saveFxTransfers(records);
    await this.record({ op: 'fxTransfers', records: [...records] });
  }

  openFxTransfers(): Promise<FxTransferRecord[]> {
    return this.memory.openFxTransfers();
  }

  settlementWindows(ids?: readonly number[]): Promise<SettlementWindowRecord[]> {
    return this.memory.settlementWindows(ids);
  }

  async openSettlementWindow(): Promise<SettlementWindowRecord> {
    const known = await this.memory.settlementWindows();
    const open = await this.memory.openSettlementWindow();
    if (known.length === 0) await this.record({ op: 'settlement', write: { windows: [open] } });
    return open;
  }

  settlements(ids?: readonly number[]): Promise<SettlementRecord[]> {
    return this.memory.settlements(ids);
  }

  async writeSettlement(write: SettlementWrite): Promise<SettlementWrite | undefined> {
    const saved = this.memory.writeNow(write);
    if (saved !== undefined) await this.record({ op: 'settlement', write: saved });
    return saved;
  }

  async renumberOpenWindow(open: SettlementWindowRecord, id: number): Promise<SettlementWindowRecord | undefined> {
    const renumbered = this.memory.renumberNow(open, id);
    if (renumbered !== undefined) await this.record({ op: 'renumberWindow', open, id });
    return renumbered;
  }

  async healthy(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    this.journal.close();
  }

  private async record(change: Change): Promise<void> {
    await this.journal.append([change]);
  }

  /** Replays a change into memory, in journal order, which is the order memory applied them. */
  private async replay(change: Change): Promise<void> {
    const memory = this.memory;
    switch (change.op) {
      case 'snapshot':
        return memory.restore(change.snapshot);
      case 'hub':
        return memory.restoreHubAccount(change.account);
      case 'model':
        return memory.addSettlementModel(change.model);
      case 'participant':
        return memory.saveParticipant(change.participant);
      case 'id':
        return memory.advanceIdTo(change.id);
      case 'funds':
        return memory.saveFundsRecord(change.record);
      case 'transfers':
        return memory.saveTransfers(change.records);
      case 'settlement':
        return memory.restoreSettlement(change.write);
      case 'renumberWindow':
        memory.renumberNow(change.open, change.id);
        return;
      case 'transferChanges':
        // A change whose record never reached the disk (its write failed, a later one did not) is
        // dropped with it: like a crash between the ledger and the metadata, the ledger keeps the truth.
        for (const transfer of change.changes) memory.changeTransfer(transfer);
        return;
      case 'fxTransfers':
        return memory.saveFxTransfers(change.records);
    }
  }
}
