/** The embedded metadata store: process memory. */
import type { FundsRecord, HubAccount, MetadataStore, Participant, SettlementModel, TransferRecord } from '../domain/metadata';

export class MemoryMetadataStore implements MetadataStore {
  private readonly hubs: HubAccount[] = [];
  private readonly models: SettlementModel[] = [];
  private readonly participantsByName = new Map<string, Participant>();
  private readonly funds = new Map<string, FundsRecord>();
  private readonly transferRecords = new Map<string, TransferRecord>();
  private lastId = 0;

  async hubAccounts(): Promise<HubAccount[]> {
    return this.hubs.map((h) => ({ ...h }));
  }

  async addHubAccount(account: Omit<HubAccount, 'id'>): Promise<HubAccount> {
    const saved = { ...account, id: await this.nextId() };
    this.hubs.push(saved);
    return { ...saved };
  }

  async settlementModels(): Promise<SettlementModel[]> {
    return this.models.map((m) => ({ ...m }));
  }

  async addSettlementModel(model: SettlementModel): Promise<void> {
    this.models.push({ ...model });
  }

  async participants(): Promise<Participant[]> {
    return [...this.participantsByName.values()].map(clone);
  }

  async participant(name: string): Promise<Participant | undefined> {
    const found = this.participantsByName.get(name);
    return found === undefined ? undefined : clone(found);
  }

  async saveParticipant(participant: Participant): Promise<void> {
    this.participantsByName.set(participant.name, clone(participant));
  }

  async nextId(): Promise<number> {
    return ++this.lastId;
  }

  async fundsRecord(transferId: string): Promise<FundsRecord | undefined> {
    const found = this.funds.get(transferId);
    return found === undefined ? undefined : { ...found };
  }

  async saveFundsRecord(record: FundsRecord): Promise<void> {
    this.funds.set(record.transferId, { ...record });
  }

  async transfers(ids: readonly string[]): Promise<(TransferRecord | undefined)[]> {
    return ids.map((id) => {
      const found = this.transferRecords.get(id);
      return found === undefined ? undefined : { ...found };
    });
  }

  async saveTransfers(records: readonly TransferRecord[]): Promise<void> {
    for (const record of records) this.transferRecords.set(record.transferId, { ...record });
  }
}

function clone(participant: Participant): Participant {
  return {
    ...participant,
    currencies: participant.currencies.map((c) => ({ ...c, netDebitCap: c.netDebitCap === undefined ? undefined : { ...c.netDebitCap } })),
    endpoints: participant.endpoints.map((e) => ({ ...e })),
  };
}
