/**
 * The embedded metadata store: process memory (made durable by JournalMetadataStore). With a
 * store of final records on disk (the journal's), records that became final may leave memory
 * (evict*): reads then find them there, so memory holds only what is still open.
 */
import { KeyedMutex } from '../util/keyed-mutex';
import {
  RECEIVED_FULFIL_DEPENDENT,
  TransferInternalState,
  isFinal,
  isFinalFx,
} from '../ports/states';
import type {
  FundsRecord,
  FxTransferRecord,
  HubAccount,
  MetadataStore,
  Participant,
  SettlementModel,
  SettlementRecord,
  SettlementWindowRecord,
  SettlementWrite,
  TransferRecord,
} from '../ports/metadata';

/** What a save changed in a known transfer: its fields set anew, and those it no longer has. */
export interface TransferChange {
  transferId: string;
  set: Partial<TransferRecord>;
  unset?: string[];
}

/**
 * The change that turns `before` into `after` (fields compared by identity, as saves spread
 * records).
 */
export function transferChange(before: TransferRecord, after: TransferRecord): TransferChange {
  const set: Record<string, unknown> = {};
  const unset: string[] = [];
  const older = before as unknown as Record<string, unknown>;
  const newer = after as unknown as Record<string, unknown>;
  for (const key of Object.keys(newer))
    if (newer[key] !== older[key] && newer[key] !== undefined) set[key] = newer[key];
  for (const key of Object.keys(older))
    if (older[key] !== undefined && newer[key] === undefined) unset.push(key);
  return {
    transferId: after.transferId,
    set: set as Partial<TransferRecord>,
    ...(unset.length === 0 ? {} : { unset }),
  };
}

/** Final records kept on disk rather than in memory, read back when asked for (fresh objects). */
export interface FinalRecordsOnDisk {
  transfer(transferId: string): TransferRecord | undefined;
  funds(transferId: string): FundsRecord | undefined;
  fxTransfer(commitRequestId: string): FxTransferRecord | undefined;
  fxDetermining(determiningTransferId: string): FxTransferRecord | undefined;
}

/** Everything the store holds in memory, as one value (for compaction of its journal). */
export interface MetadataSnapshot {
  hubs: HubAccount[];
  models: SettlementModel[];
  participants: Participant[];
  funds: FundsRecord[];
  transfers: TransferRecord[];
  /** Absent in snapshots written before FX. */
  fxTransfers?: FxTransferRecord[];
  lastId: number;
  /** Absent in snapshots written before settlement existed. */
  windows?: SettlementWindowRecord[];
  settlements?: SettlementRecord[];
  /** MetadataStore.ledgerIdentity in decimal; absent: none recorded. */
  ledgerIdentity?: string;
}

export class MemoryMetadataStore implements MetadataStore {
  readonly name: string = 'memory';
  private readonly hubs: HubAccount[] = [];
  private readonly models: SettlementModel[] = [];
  /** By name in lower case: names are matched ignoring case (MetadataStore.participant). */
  private readonly participantsByName = new Map<string, Participant>();
  private readonly funds = new Map<string, FundsRecord>();
  private readonly transferRecords = new Map<string, TransferRecord>();
  private readonly fxRecords = new Map<string, FxTransferRecord>();
  /** determiningTransferId → commitRequestId */
  private readonly fxByTransfer = new Map<string, string>();
  private lastId = 0;
  private readonly windowsById = new Map<number, SettlementWindowRecord>();
  private readonly settlementsById = new Map<number, SettlementRecord>();
  private recordedLedgerIdentity: bigint | undefined;
  /**
   * Settlements' and participants' turns: the store is one process's (or, in tests, shared by
   * instances in one process).
   */
  private readonly turns = new KeyedMutex();

  constructor(private readonly onDisk?: FinalRecordsOnDisk) {}

  snapshot(): MetadataSnapshot {
    return structuredClone({
      hubs: this.hubs,
      models: this.models,
      participants: [...this.participantsByName.values()],
      funds: [...this.funds.values()],
      transfers: [...this.transferRecords.values()],
      fxTransfers: [...this.fxRecords.values()],
      lastId: this.lastId,
      windows: [...this.windowsById.values()],
      settlements: [...this.settlementsById.values()],
      ...(this.recordedLedgerIdentity === undefined
        ? {}
        : { ledgerIdentity: this.recordedLedgerIdentity.toString() }),
    });
  }

  restore(snapshot: MetadataSnapshot): void {
    this.hubs.splice(0, this.hubs.length, ...snapshot.hubs);
    this.models.splice(0, this.models.length, ...snapshot.models);
    this.participantsByName.clear();
    for (const p of snapshot.participants)
      this.participantsByName.set(p.name.toLowerCase(), deepFreeze(p));
    this.funds.clear();
    for (const f of snapshot.funds) this.funds.set(f.transferId, f);
    this.transferRecords.clear();
    for (const t of snapshot.transfers) this.transferRecords.set(t.transferId, t);
    this.fxRecords.clear();
    this.fxByTransfer.clear();
    this.putFxTransfers(snapshot.fxTransfers ?? []);
    this.lastId = snapshot.lastId;
    this.windowsById.clear();
    this.settlementsById.clear();
    for (const window of snapshot.windows ?? []) this.windowsById.set(window.id, window);
    for (const settlement of snapshot.settlements ?? [])
      this.settlementsById.set(settlement.id, settlement);
    this.recordedLedgerIdentity =
      snapshot.ledgerIdentity === undefined ? undefined : BigInt(snapshot.ledgerIdentity);
  }

  /**
   * Replay of a journalled settlement write: the records as they were saved, ids and versions
   * included.
   */
  restoreSettlement(write: SettlementWrite): void {
    for (const window of write.windows) this.windowsById.set(window.id, structuredClone(window));
    if (write.settlement !== undefined)
      this.settlementsById.set(write.settlement.id, structuredClone(write.settlement));
  }

  /** Replay of a journal: an account with the id it was given, and ids never handed out twice. */
  restoreHubAccount(account: HubAccount): void {
    this.hubs.push({ ...account });
    this.advanceIdTo(account.id);
  }

  advanceIdTo(id: number): void {
    this.lastId = Math.max(this.lastId, id);
  }

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
    return [...this.participantsByName.values()];
  }

  /** The stored participant itself, frozen: read on every prepare, so never copied. */
  async participant(name: string): Promise<Participant | undefined> {
    return this.participantsByName.get(name.toLowerCase());
  }

  async saveParticipant(participant: Participant): Promise<void> {
    this.participantsByName.set(
      participant.name.toLowerCase(),
      deepFreeze(structuredClone(participant)),
    );
  }

  async nextId(): Promise<number> {
    return ++this.lastId;
  }

  async fundsRecord(transferId: string): Promise<FundsRecord | undefined> {
    const found = this.funds.get(transferId);
    return found === undefined ? this.onDisk?.funds(transferId) : { ...found };
  }

  async saveFundsRecord(record: FundsRecord): Promise<void> {
    this.funds.set(record.transferId, { ...record });
  }

  async transfers(ids: readonly string[]): Promise<(TransferRecord | undefined)[]> {
    return ids.map((id) => {
      const found = this.transferRecords.get(id);
      return found === undefined ? this.onDisk?.transfer(id) : { ...found };
    });
  }

  async saveTransfers(records: readonly TransferRecord[]): Promise<void> {
    this.replaceTransfers(records);
  }

  /** Saves records at once (no await) and returns what each replaced, for the journal's changes. */
  replaceTransfers(records: readonly TransferRecord[]): (TransferRecord | undefined)[] {
    return records.map((record) => {
      const previous =
        this.transferRecords.get(record.transferId) ?? this.onDisk?.transfer(record.transferId);
      this.transferRecords.set(record.transferId, { ...record });
      return previous;
    });
  }

  /**
   * Applies a change journalled by replaceTransfers' caller; a change of an unknown transfer is
   * ignored.
   */
  changeTransfer(change: TransferChange): void {
    const previous =
      this.transferRecords.get(change.transferId) ?? this.onDisk?.transfer(change.transferId);
    if (previous === undefined) return;
    const changed: Record<string, unknown> = { ...previous, ...change.set };
    for (const key of change.unset ?? []) delete changed[key];
    this.transferRecords.set(change.transferId, changed as unknown as TransferRecord);
  }

  async openTransfers(): Promise<TransferRecord[]> {
    return [...this.transferRecords.values()]
      .filter((r) => r.state === 'RESERVED' || r.state === 'RECEIVED_PREPARE')
      .map((r) => ({ ...r }));
  }

  async fxTransfers(ids: readonly string[]): Promise<(FxTransferRecord | undefined)[]> {
    return ids.map((id) => copyOf(this.fxRecords.get(id)) ?? this.onDisk?.fxTransfer(id));
  }

  async fxTransfersDetermining(
    transferIds: readonly string[],
  ): Promise<(FxTransferRecord | undefined)[]> {
    return transferIds.map((id) => {
      const commitRequestId = this.fxByTransfer.get(id);
      return commitRequestId === undefined
        ? this.onDisk?.fxDetermining(id)
        : copyOf(this.fxRecords.get(commitRequestId));
    });
  }

  async saveFxTransfers(records: readonly FxTransferRecord[]): Promise<void> {
    this.putFxTransfers(records);
  }

  private putFxTransfers(records: readonly FxTransferRecord[]): void {
    for (const record of records) {
      this.fxRecords.set(record.commitRequestId, { ...record });
      this.fxByTransfer.set(record.determiningTransferId, record.commitRequestId);
    }
  }

  /** The objects memory holds for these ids (to evict exactly those once they are on disk). */
  held(id: string): {
    transfer: TransferRecord | undefined;
    funds: FundsRecord | undefined;
    fx: FxTransferRecord | undefined;
  } {
    return {
      transfer: this.transferRecords.get(id),
      funds: this.funds.get(id),
      fx: this.fxRecords.get(id),
    };
  }

  /** Final records memory holds (to be moved to disk). */
  finalRecords(): {
    transfers: TransferRecord[];
    funds: FundsRecord[];
    fxTransfers: FxTransferRecord[];
  } {
    return {
      transfers: [...this.transferRecords.values()].filter((r) => isFinal(r.state)),
      funds: [...this.funds.values()].filter(isFinalFunds),
      fxTransfers: [...this.fxRecords.values()].filter((r) => isFinalFx(r.state)),
    };
  }

  /**
   * Drops a record now kept on disk, unless memory holds another one for its id than `held` (saved
   * since).
   */
  evictTransfer(transferId: string, held?: TransferRecord): void {
    if (held === undefined || this.transferRecords.get(transferId) === held)
      this.transferRecords.delete(transferId);
  }

  evictFunds(transferId: string, held?: FundsRecord): void {
    if (held === undefined || this.funds.get(transferId) === held) this.funds.delete(transferId);
  }

  evictFx(commitRequestId: string, held?: FxTransferRecord): void {
    const record = this.fxRecords.get(commitRequestId);
    if (record === undefined || (held !== undefined && record !== held)) return;
    this.fxRecords.delete(commitRequestId);
    if (this.fxByTransfer.get(record.determiningTransferId) === commitRequestId)
      this.fxByTransfer.delete(record.determiningTransferId);
  }

  async openFxTransfers(): Promise<FxTransferRecord[]> {
    return [...this.fxRecords.values()]
      .filter(
        (r) => r.state === TransferInternalState.RESERVED || r.state === RECEIVED_FULFIL_DEPENDENT,
      )
      .map((r) => ({ ...r }));
  }

  async settlementWindows(ids?: readonly number[]): Promise<SettlementWindowRecord[]> {
    return pick(this.windowsById, ids);
  }

  async openSettlementWindow(): Promise<SettlementWindowRecord> {
    const open = [...this.windowsById.values()].find((w) => w.state === 'OPEN');
    if (open !== undefined) return structuredClone(open);
    if (this.windowsById.size > 0)
      throw new Error('no OPEN settlement window: the metadata is corrupt');
    const now = new Date().toISOString();
    const written = this.writeNow({
      windows: [
        {
          id: 0,
          state: 'OPEN',
          reason: 'initial window',
          createdDate: now,
          changedDate: now,
          content: [],
          version: 0,
        },
      ],
    });
    return written!.windows[0]!;
  }

  async settlements(ids?: readonly number[]): Promise<SettlementRecord[]> {
    return pick(this.settlementsById, ids);
  }

  async writeSettlement(write: SettlementWrite): Promise<SettlementWrite | undefined> {
    return this.writeNow(write);
  }

  settlementTurn<T>(id: number, work: () => Promise<T>): Promise<T> {
    return this.turns.run(`settlement:${id}`, work);
  }

  /** By name ignoring case, as MySQL's turns: `hub` and `Hub` are the Hub's one record. */
  participantTurn<T>(name: string, work: () => Promise<T>): Promise<T> {
    return this.turns.run(`participant:${name.toLowerCase()}`, work);
  }

  async renumberOpenWindow(
    open: SettlementWindowRecord,
    id: number,
  ): Promise<SettlementWindowRecord | undefined> {
    return this.renumberNow(open, id);
  }

  /**
   * The renumbering with its checks, at once (no await): the journal records it if it returns a
   * window.
   */
  renumberNow(open: SettlementWindowRecord, id: number): SettlementWindowRecord | undefined {
    const stored = this.windowsById.get(open.id);
    // Still the open window as read, and the id above every window's.
    const renumberable =
      stored !== undefined &&
      stored.version === open.version &&
      stored.state === 'OPEN' &&
      id > Math.max(0, ...this.windowsById.keys());
    if (!renumberable) return undefined;
    const renumbered = { ...structuredClone(stored), id, version: stored.version + 1 };
    this.windowsById.delete(open.id);
    this.windowsById.set(id, structuredClone(renumbered));
    return renumbered;
  }

  /** The write with its checks, at once (no await): the journal records what it returns. */
  writeNow(write: SettlementWrite): SettlementWrite | undefined {
    const current = (
      record: { id: number; version: number },
      stored: Map<number, { version: number }>,
    ): boolean =>
      record.id === 0 ? record.version === 0 : stored.get(record.id)?.version === record.version;
    if (!write.windows.every((w) => current(w, this.windowsById))) return undefined;
    if (write.settlement !== undefined && !current(write.settlement, this.settlementsById))
      return undefined;
    const nextId = (stored: Map<number, unknown>): number => Math.max(0, ...stored.keys()) + 1;
    const saved: SettlementWrite = { windows: [] };
    if (write.settlement !== undefined) {
      const settlement = {
        ...structuredClone(write.settlement),
        id: write.settlement.id === 0 ? nextId(this.settlementsById) : write.settlement.id,
        version: write.settlement.version + 1,
      };
      this.settlementsById.set(settlement.id, structuredClone(settlement));
      saved.settlement = settlement;
    }
    for (const w of withSettlementId(write.windows, saved.settlement?.id)) {
      // Set one by one: each new window takes the next id in turn.
      const window = {
        ...structuredClone(w),
        id: w.id === 0 ? nextId(this.windowsById) : w.id,
        version: w.version + 1,
      };
      this.windowsById.set(window.id, structuredClone(window));
      saved.windows.push(window);
    }
    return saved;
  }

  async ledgerIdentity(): Promise<bigint | undefined> {
    return this.recordedLedgerIdentity;
  }

  async recordLedgerIdentity(identity: bigint): Promise<bigint> {
    return this.recordLedgerIdentityNow(identity);
  }

  /** recordLedgerIdentity, at once (no await): for a journal replay. */
  recordLedgerIdentityNow(identity: bigint): bigint {
    this.recordedLedgerIdentity ??= identity;
    return this.recordedLedgerIdentity;
  }

  async healthy(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {}
}

export function isFinalFunds(record: FundsRecord): boolean {
  return record.state !== 'RESERVED';
}

function copyOf<T extends object>(record: T | undefined): T | undefined {
  return record === undefined ? undefined : { ...record };
}

/** Window content naming settlement 0 names the settlement just given `id`. */
export function withSettlementId(
  windows: readonly SettlementWindowRecord[],
  id: number | undefined,
): SettlementWindowRecord[] {
  if (id === undefined) return [...windows];
  return windows.map((w) => ({
    ...w,
    content: w.content.map((c) => (c.settlementId === 0 ? { ...c, settlementId: id } : c)),
  }));
}

function pick<T extends { id: number }>(
  stored: Map<number, T>,
  ids: readonly number[] | undefined,
): T[] {
  const found =
    ids === undefined
      ? [...stored.values()]
      : ids.map((id) => stored.get(id)).filter((r): r is T => r !== undefined);
  return found.sort((a, b) => a.id - b.id).map((r) => structuredClone(r));
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
