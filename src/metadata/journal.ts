/**
 * The embedded metadata store made durable: the in-memory store plus a journal file in
 * DATA_DIR. Every change is on disk before its caller is answered (concurrent changes share one
 * write and one fdatasync); at start the journal is replayed and compacted.
 *
 * Memory stays flat with work: a transfer, funds movement or FX conversion that became final
 * (it never changes again) is journalled whole on a line of its own, and once that line is on
 * disk the record leaves memory; a RecordIndex (in memory up to DATA_TABLE_HOT_ENTRIES records,
 * then in sorted runs on disk at ~1.4 bytes of memory per record) keeps where its line is,
 * and a read (GET, a duplicate or modified retry) parses that line again. Only open records,
 * participants, hub accounts and settlement windows stay in memory. Compaction copies the final
 * lines from the old file one at a time, then writes a snapshot of what memory holds.
 * What it keeps and what it does not: docs/operations.md, "Metadata".
 */
import { join } from 'node:path';
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
import { isFinal } from '../ports/states';
import { Journal } from '../util/journal';
import { RecordIndex, type LinePosition } from '../util/record-index';
import type { SpillOptions } from '../util/tiered-table';
import { DATA_TABLE_HOT_ENTRIES } from '../config/config';
import { isFinalFx } from '../ports/states';
import {
  MemoryMetadataStore,
  isFinalFunds,
  transferChange,
  type FinalRecordsOnDisk,
  type MetadataSnapshot,
  type TransferChange,
} from './memory';

/**
 * The journal's layout. 1 (no `format` on the snapshot): every record in the snapshot and in
 * memory; opened, it is migrated to 2 by the compaction. 2: final records on lines of their own.
 */
const JOURNAL_FORMAT = 2;
/**
 * A start compacts the journal once what was appended since the last compaction exceeds this
 * share of what that compaction left: a restart after little work (or a crash loop) does not
 * rewrite the whole file, and the file stays within ~1.25× its compacted size plus one run's work.
 */
const COMPACT_AFTER_GROWTH = 0.25;

type Change =
  /** The first line of a compacted journal of format 2 or later. */
  | { op: 'format'; format: number }
  | { op: 'snapshot'; snapshot: MetadataSnapshot }
  /** A transfer that became final, whole: where reads find it once it has left memory. */
  | { op: 'finalTransfer'; record: TransferRecord }
  /** An FX conversion that became final, whole (as finalTransfer). */
  | { op: 'finalFx'; record: FxTransferRecord }
  | { op: 'hub'; account: HubAccount }
  | { op: 'model'; model: SettlementModel }
  | { op: 'participant'; participant: Participant }
  | { op: 'id'; id: number }
  /** Always whole; a final one leaves memory once on disk, read back from this line. */
  | { op: 'funds'; record: FundsRecord }
  | { op: 'transfers'; records: TransferRecord[] }
  /**
   * What a later save changed in a transfer already journalled (a finish): a few fields, not the
   * ~1.7 KB record again.
   */
  | { op: 'transferChanges'; changes: TransferChange[] }
  /** FX conversions are few and small: always written whole. */
  | { op: 'fxTransfers'; records: FxTransferRecord[] }
  /** Settlement windows and a settlement as saved (ids and versions assigned). */
  | { op: 'settlement'; write: SettlementWrite }
  | { op: 'renumberWindow'; open: SettlementWindowRecord; id: number }
  /** MetadataStore.recordLedgerIdentity, in decimal. */
  | { op: 'ledgerIdentity'; identity: string };

/** Where final records' lines are, by transfer id (funds, transfers) and by both FX ids. */
class FinalLines implements FinalRecordsOnDisk {
  readonly transferLines: RecordIndex;
  readonly fundsLines: RecordIndex;
  readonly fxLines: RecordIndex;
  readonly fxByTransferLines: RecordIndex;

  /** The indexes spill to `dir` beyond `hotEntries` each: a cache the replay at start rebuilds. */
  constructor(
    private readonly journal: Journal,
    dir: string,
    hotEntries: number,
  ) {
    const spill = (name: string): SpillOptions => ({ dir, name: `metadata-${name}`, hotEntries });
    this.transferLines = new RecordIndex(spill('transfers'));
    this.fundsLines = new RecordIndex(spill('funds'));
    this.fxLines = new RecordIndex(spill('fx'));
    this.fxByTransferLines = new RecordIndex(spill('fx-by-transfer'));
  }

  close(): void {
    for (const index of [this.transferLines, this.fundsLines, this.fxLines, this.fxByTransferLines])
      index.close();
  }

  transfer(transferId: string): TransferRecord | undefined {
    return this.transferLines.find(transferId, (at) =>
      this.recordAt<TransferRecord>(at, (r) => r.transferId === transferId),
    );
  }

  funds(transferId: string): FundsRecord | undefined {
    return this.fundsLines.find(transferId, (at) =>
      this.recordAt<FundsRecord>(at, (r) => r.transferId === transferId),
    );
  }

  fxTransfer(commitRequestId: string): FxTransferRecord | undefined {
    return this.fxLines.find(commitRequestId, (at) =>
      this.recordAt<FxTransferRecord>(at, (r) => r.commitRequestId === commitRequestId),
    );
  }

  fxDetermining(determiningTransferId: string): FxTransferRecord | undefined {
    return this.fxByTransferLines.find(determiningTransferId, (at) =>
      this.recordAt<FxTransferRecord>(at, (r) => r.determiningTransferId === determiningTransferId),
    );
  }

  /** Files a final record's line (replacing the line of an earlier save of the same record). */
  file(
    kind: 'transfer' | 'funds' | 'fx',
    record: TransferRecord | FundsRecord | FxTransferRecord,
    at: LinePosition,
  ): void {
    const is =
      <T>(key: (r: T) => boolean) =>
      (position: LinePosition): boolean =>
        this.recordAt<T>(position, key) !== undefined;
    if (kind === 'fx') {
      const fx = record as FxTransferRecord;
      this.fxLines.set(
        fx.commitRequestId,
        at,
        is<FxTransferRecord>((r) => r.commitRequestId === fx.commitRequestId),
      );
      this.fxByTransferLines.set(
        fx.determiningTransferId,
        at,
        is<FxTransferRecord>((r) => r.determiningTransferId === fx.determiningTransferId),
      );
      return;
    }
    const transferId = (record as TransferRecord | FundsRecord).transferId;
    (kind === 'transfer' ? this.transferLines : this.fundsLines).set(
      transferId,
      at,
      is<TransferRecord | FundsRecord>((r) => r.transferId === transferId),
    );
  }

  /** The record on the line at `at`, if it is the one `matches` looks for. */
  private recordAt<T>(at: LinePosition, matches: (record: T) => boolean): T | undefined {
    const record = (this.journal.read(at) as { record: T }).record;
    return matches(record) ? record : undefined;
  }
}

export class JournalMetadataStore implements MetadataStore {
  readonly name = 'journal';
  private readonly lines: FinalLines;
  private readonly memory: MemoryMetadataStore;
  /**
   * Transfers whose last save failed to reach the journal (an I/O error): their next save is
   * written whole.
   */
  private readonly unjournalled = new Set<string>();
  /**
   * What the replay found: the journal's format line, and where the last compaction's snapshot
   * ended.
   */
  private replayedFormat: number | undefined;
  private compactedBytes: number | undefined;

  private constructor(
    private readonly journal: Journal,
    dataDir: string,
    hotEntries: number,
  ) {
    this.lines = new FinalLines(journal, dataDir, hotEntries);
    this.memory = new MemoryMetadataStore(this.lines);
  }

  /**
   * Opens DATA_DIR/metadata.journal, replays it and compacts it when due (final records on disk
   * only).
   */
  static async open(
    dataDir: string,
    hotEntries = DATA_TABLE_HOT_ENTRIES,
  ): Promise<JournalMetadataStore> {
    const path = join(dataDir, 'metadata.journal');
    const journal = Journal.open(path, { bigints: false });
    const store = new JournalMetadataStore(journal, dataDir, hotEntries);
    journal.forEach((change, at) => store.replay(change as Change, at, path));
    if (store.compactionDue()) store.compact();
    return store;
  }

  /**
   * Whether this start compacts: always for a journal never compacted, of an older format, or
   * whose replay left final records in memory (they leave it only by being written on lines of
   * their own); otherwise once the journal has grown by COMPACT_AFTER_GROWTH since.
   */
  private compactionDue(): boolean {
    if (this.replayedFormat !== JOURNAL_FORMAT || this.compactedBytes === undefined) return true;
    const inMemory = this.memory.finalRecords();
    if (inMemory.transfers.length + inMemory.funds.length + inMemory.fxTransfers.length > 0)
      return true;
    return this.journal.bytes - this.compactedBytes > COMPACT_AFTER_GROWTH * this.compactedBytes;
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
    // The object memory now holds, taken in the same tick as the save (a later save replaces it).
    const saved = this.memory.saveFundsRecord(record);
    const held = this.memory.held(record.transferId).funds;
    await saved;
    const [at] = await this.journal.append([{ op: 'funds', record } satisfies Change]);
    if (!isFinalFunds(record)) return;
    this.lines.file('funds', record, at!);
    this.memory.evictFunds(record.transferId, held);
  }

  transfers(ids: readonly string[]): Promise<(TransferRecord | undefined)[]> {
    return this.memory.transfers(ids);
  }

  async saveTransfers(records: readonly TransferRecord[]): Promise<void> {
    // Memory and the journal queue take the save in the same tick, so concurrent saves of one
    // transfer reach the journal in the order memory applied them: each change is against the
    // record the previous journal entry left.
    // A final record is written whole on a line of its own: reads find it there once it has left
    // memory.
    const previous = this.memory.replaceTransfers(records);
    const whole: TransferRecord[] = [];
    const changes: TransferChange[] = [];
    const finals: { record: TransferRecord; held: TransferRecord | undefined }[] = [];
    records.forEach((record, i) => {
      const before = previous[i];
      if (isFinal(record.state))
        finals.push({ record, held: this.memory.held(record.transferId).transfer });
      else if (before === undefined || this.unjournalled.has(record.transferId)) whole.push(record);
      else changes.push(transferChange(before, record));
    });
    const entries: Change[] = finals.map(({ record }) => ({ op: 'finalTransfer', record }));
    if (whole.length > 0) entries.push({ op: 'transfers', records: whole });
    if (changes.length > 0) entries.push({ op: 'transferChanges', changes });
    let positions: LinePosition[];
    try {
      positions = await this.journal.append(entries);
    } catch (error) {
      // Memory has these records and the disk may not: their next save writes them whole.
      for (const record of records) this.unjournalled.add(record.transferId);
      throw error;
    }
    for (const record of whole) this.unjournalled.delete(record.transferId);
    finals.forEach(({ record, held }, i) => {
      this.unjournalled.delete(record.transferId);
      this.lines.file('transfer', record, positions[i]!);
      this.memory.evictTransfer(record.transferId, held);
    });
  }

  openTransfers(): Promise<TransferRecord[]> {
    return this.memory.openTransfers();
  }

  fxTransfers(ids: readonly string[]): Promise<(FxTransferRecord | undefined)[]> {
    return this.memory.fxTransfers(ids);
  }

  fxTransfersDetermining(
    transferIds: readonly string[],
  ): Promise<(FxTransferRecord | undefined)[]> {
    return this.memory.fxTransfersDetermining(transferIds);
  }

  async saveFxTransfers(records: readonly FxTransferRecord[]): Promise<void> {
    const saved = this.memory.saveFxTransfers(records);
    const finals = records
      .filter((r) => isFinalFx(r.state))
      .map((record) => ({ record, held: this.memory.held(record.commitRequestId).fx }));
    await saved;
    const open = records.filter((r) => !isFinalFx(r.state));
    const entries: Change[] = finals.map(({ record }) => ({ op: 'finalFx', record }));
    if (open.length > 0) entries.push({ op: 'fxTransfers', records: open });
    const positions = await this.journal.append(entries);
    finals.forEach(({ record, held }, i) => {
      this.lines.file('fx', record, positions[i]!);
      this.memory.evictFx(record.commitRequestId, held);
    });
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

  settlementTurn<T>(id: number, work: () => Promise<T>): Promise<T> {
    return this.memory.settlementTurn(id, work);
  }

  participantTurn<T>(name: string, work: () => Promise<T>): Promise<T> {
    return this.memory.participantTurn(name, work);
  }

  async renumberOpenWindow(
    open: SettlementWindowRecord,
    id: number,
  ): Promise<SettlementWindowRecord | undefined> {
    const renumbered = this.memory.renumberNow(open, id);
    if (renumbered !== undefined) await this.record({ op: 'renumberWindow', open, id });
    return renumbered;
  }

  ledgerIdentity(): Promise<bigint | undefined> {
    return this.memory.ledgerIdentity();
  }

  /** Journalled only when it is the first: the one replayed is the one held. */
  async recordLedgerIdentity(identity: bigint): Promise<bigint> {
    const first = (await this.memory.ledgerIdentity()) === undefined;
    const recorded = this.memory.recordLedgerIdentityNow(identity);
    if (first) await this.record({ op: 'ledgerIdentity', identity: identity.toString() });
    return recorded;
  }

  async healthy(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {
    this.journal.close();
    this.lines.close();
  }

  private async record(change: Change): Promise<void> {
    await this.journal.append([change]);
  }

  /**
   * Rewrites the journal as every final record's line, then a snapshot of memory: final lines on
   * disk are copied from the old file, in file order, their index entries moved with them; final
   * records memory still holds (a format-1 journal keeps them there) are written and leave it. The
   * snapshot comes last because memory is newer than any line on disk: a record re-saved open
   * after it was final (never in practice) is in memory, and a replay puts it back there.
   */
  private compact(): void {
    const inMemory = this.memory.finalRecords();
    const written: {
      kind: 'transfer' | 'funds' | 'fx';
      record: TransferRecord | FundsRecord | FxTransferRecord;
      at: LinePosition;
    }[] = [];
    this.journal.rewrite((writer) => {
      const snapshot = this.memory.snapshot();
      snapshot.transfers = snapshot.transfers.filter((r) => !isFinal(r.state));
      snapshot.funds = snapshot.funds.filter((r) => !isFinalFunds(r));
      if (snapshot.fxTransfers !== undefined) {
        snapshot.fxTransfers = snapshot.fxTransfers.filter((r) => !isFinalFx(r.state));
      }
      writer.write({ op: 'format', format: JOURNAL_FORMAT } satisfies Change);
      this.lines.transferLines.relocate((at) => writer.copy(at));
      this.lines.fundsLines.relocate((at) => writer.copy(at));
      // Both FX indexes name the same lines: each is copied once.
      const moved = new Map<number, number>();
      this.lines.fxLines.relocate((at) => {
        const offset = writer.copy(at);
        moved.set(at.offset, offset);
        return offset;
      });
      this.lines.fxByTransferLines.relocate((at) => moved.get(at.offset) ?? writer.copy(at));
      for (const record of inMemory.transfers)
        written.push({
          kind: 'transfer',
          record,
          at: writer.write({ op: 'finalTransfer', record } satisfies Change),
        });
      for (const record of inMemory.funds)
        written.push({
          kind: 'funds',
          record,
          at: writer.write({ op: 'funds', record } satisfies Change),
        });
      for (const record of inMemory.fxTransfers)
        written.push({
          kind: 'fx',
          record,
          at: writer.write({ op: 'finalFx', record } satisfies Change),
        });
      writer.write({ op: 'snapshot', snapshot } satisfies Change);
    });
    for (const { kind, record, at } of written) {
      this.lines.file(kind, record, at);
      if (kind === 'transfer') this.memory.evictTransfer((record as TransferRecord).transferId);
      else if (kind === 'funds') this.memory.evictFunds((record as FundsRecord).transferId);
      else this.memory.evictFx((record as FxTransferRecord).commitRequestId);
    }
  }

  /**
   * Replays a change into memory (or a final record's line into the index), in journal order, which
   * is the order memory applied them.
   */
  private replay(change: Change, at: LinePosition, path: string): void {
    const memory = this.memory;
    switch (change.op) {
      case 'format':
        if (change.format > JOURNAL_FORMAT)
          throw new Error(
            `${path} has journal format ${change.format}, this version reads formats up to ${JOURNAL_FORMAT}: run the version that wrote it`,
          );
        this.replayedFormat = change.format;
        return;
      case 'snapshot':
        // A compaction writes its snapshot last: the file it left ends here.
        this.compactedBytes = at.offset + at.length + 1;
        return memory.restore(change.snapshot);
      case 'finalTransfer':
        memory.evictTransfer(change.record.transferId);
        return this.lines.file('transfer', change.record, at);
      case 'finalFx':
        memory.evictFx(change.record.commitRequestId);
        return this.lines.file('fx', change.record, at);
      case 'hub':
        return memory.restoreHubAccount(change.account);
      case 'model':
        return void memory.addSettlementModel(change.model);
      case 'participant':
        return void memory.saveParticipant(change.participant);
      case 'id':
        return memory.advanceIdTo(change.id);
      case 'funds':
        if (!isFinalFunds(change.record)) return void memory.saveFundsRecord(change.record);
        memory.evictFunds(change.record.transferId);
        return this.lines.file('funds', change.record, at);
      case 'transfers':
        return void memory.replaceTransfers(change.records);
      case 'settlement':
        return memory.restoreSettlement(change.write);
      case 'renumberWindow':
        memory.renumberNow(change.open, change.id);
        return;
      case 'ledgerIdentity':
        memory.recordLedgerIdentityNow(BigInt(change.identity));
        return;
      case 'transferChanges':
        // A change whose record never reached the disk (its write failed, a later one did not) is
        // dropped with it: like a crash between the ledger and the metadata, the ledger keeps the
        // truth.
        for (const transfer of change.changes) memory.changeTransfer(transfer);
        return;
      case 'fxTransfers':
        return void memory.saveFxTransfers(change.records);
      default:
        throw new Error(
          `${path} holds an entry this version does not know (${(change as { op: string }).op}): it was written by a newer version`,
        );
    }
  }
}
