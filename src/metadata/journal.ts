/**
 * The embedded metadata store made durable: the in-memory store plus a journal file in
 * DATA_DIR. Every change is on disk before its caller is answered (concurrent changes share one
 * write and one fdatasync); at start the journal is replayed and compacted into one snapshot.
 * What it keeps and what it does not: README.md, "Metadata".
 */
import { join } from 'node:path';
import type { FundsRecord, HubAccount, MetadataStore, Participant, SettlementModel, TransferRecord } from '../domain/metadata';
import { Journal } from '../util/journal';
import { MemoryMetadataStore, type MetadataSnapshot } from './memory';

type Change =
  | { op: 'snapshot'; snapshot: MetadataSnapshot }
  | { op: 'hub'; account: HubAccount }
  | { op: 'model'; model: SettlementModel }
  | { op: 'participant'; participant: Participant }
  | { op: 'id'; id: number }
  | { op: 'funds'; record: FundsRecord }
  | { op: 'transfers'; records: TransferRecord[] };

export class JournalMetadataStore implements MetadataStore {
  readonly name = 'journal';
  private readonly memory = new MemoryMetadataStore();

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
    await this.memory.saveTransfers(records);
    await this.record({ op: 'transfers', records: [...records] });
  }

  openTransfers(): Promise<TransferRecord[]> {
    return this.memory.openTransfers();
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

  /** Replays a change into memory; the outcome does not depend on how concurrent changes were ordered. */
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
    }
  }
}
