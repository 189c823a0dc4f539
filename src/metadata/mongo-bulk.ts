/**
 * Bulk transfers' object store on MongoDB (or FerretDB), through the official driver: the
 * collections bulk-api-adapter and central-ledger share (object-store-lib's names and shapes:
 * `individualTransfers` and `individualTransferFulfils` read, `bulkTransferResults` written), and
 * the service's own records beside them: `tbBulkTransfers` (a BulkRecord per bulk but its
 * members, saved optimistically by version), `tbBulkMemberLists` (a bulk's members, a document
 * written once and replaced by a new one where they change) and `tbBulkMembers` (transferId ->
 * bulkTransferId).
 *
 * The members are kept out of the bulk's document because FerretDB on SQLite reads every document
 * of a collection for any query but one by `_id` alone: the versioned saves and the expiry
 * sweep's query (every second) would otherwise parse every bulk's thousand members each time, a
 * cost growing with the number of bulks ever stored.
 */
import { MongoClient, MongoServerError, type Collection, type Db } from 'mongodb';
import { randomUUID } from 'node:crypto';
import type {
  BulkMember,
  BulkObjectStore,
  BulkRecord,
  BulkResultStore,
  BulkStore,
  BulkTransferResultDocument,
} from '../ports/bulk';

/**
 * A bulk's stored form: the record but its members, keyed by its id, with its expiration as a
 * number to query and the id of its members' list.
 */
interface BulkDocument extends Omit<BulkRecord, 'members'> {
  _id: string;
  expiresAtMs: number;
  membersId: string;
}

interface MemberListDocument {
  _id: string;
  members: BulkMember[];
}

interface MemberDocument {
  _id: string;
  bulkTransferId: string;
}

interface ItemDocument {
  messageId: string;
  payload: Record<string, unknown>;
}

const DUPLICATE_KEY = 11000;
/**
 * Members' lists kept in memory, the latest written or read: a bulk's fulfil then finds the list
 * its prepare wrote (a thousand members, their ILP packets most of it) without reading it back.
 * A few bulks' worth: memory stays bounded whatever the number of bulks.
 */
const CACHED_MEMBER_LISTS = 8;
const FINAL_STATES: readonly BulkRecord['state'][] = ['COMPLETED', 'REJECTED', 'INVALID'];

export interface MongoBulkOptions {
  /** mongodb://user:password@host:port (no database: `database` names it). */
  url: string;
  database: string;
  /** How long an operation waits for a server to serve it. */
  serverSelectionTimeoutMs?: number;
}

export class MongoBulkStore implements BulkStore, BulkObjectStore, BulkResultStore {
  readonly name = 'mongodb';
  private readonly bulks: Collection<BulkDocument>;
  private readonly members: Collection<MemberDocument>;
  private readonly memberLists: Collection<MemberListDocument>;
  private readonly results: Collection<BulkTransferResultDocument>;
  /**
   * Members' lists by id, oldest first (CACHED_MEMBER_LISTS). A list is never changed once
   * written (a change writes a new one), so a copy here can never be stale; another process's
   * lists are read as they are needed.
   */
  private readonly memberListCache = new Map<string, BulkMember[]>();

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
  ) {
    this.bulks = db.collection<BulkDocument>('tbBulkTransfers');
    this.members = db.collection<MemberDocument>('tbBulkMembers');
    this.memberLists = db.collection<MemberListDocument>('tbBulkMemberLists');
    this.results = db.collection<BulkTransferResultDocument>('bulkTransferResults');
  }

  /** Connects and makes the indexes exist (bulk-api-adapter's own too: it may start later). */
  static async open(options: MongoBulkOptions): Promise<MongoBulkStore> {
    const client = new MongoClient(options.url, {
      serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? 10_000,
    });
    await client.connect();
    const store = new MongoBulkStore(client, client.db(options.database));
    try {
      await store.ensureIndexes();
    } catch (error) {
      await client.close();
      throw error;
    }
    return store;
  }

  private async ensureIndexes(): Promise<void> {
    await this.results.createIndex({ messageId: 1, destination: 1 }, { unique: true });
    await this.results.createIndex({ bulkTransferId: 1 });
    await this.db.collection('individualTransfers').createIndex({ messageId: 1 });
    await this.db.collection('individualTransferFulfils').createIndex({ messageId: 1 });
    await this.bulks.createIndex({ state: 1, expiresAtMs: 1 });
  }

  /** Whether the server answers now (for /health). */
  async healthy(): Promise<boolean> {
    try {
      await this.db.command({ ping: 1 });
      return true;
    } catch {
      return false;
    }
  }

  close(): Promise<void> {
    return this.client.close();
  }

  async bulk(bulkTransferId: string): Promise<BulkRecord | undefined> {
    const found = await this.bulks.findOne({ _id: bulkTransferId });
    return found === null ? undefined : this.recordOf(found);
  }

  /**
   * The record a bulk's document and its members' list make. A list deleted between the two
   * reads was replaced by a save: the bulk is read again, and names another.
   */
  private async recordOf(document: BulkDocument): Promise<BulkRecord> {
    for (let found = document; ; ) {
      const { _id: id, expiresAtMs, membersId, ...record }: BulkDocument = found;
      void expiresAtMs;
      const cached = this.memberListCache.get(membersId);
      if (cached !== undefined) return { ...record, members: cached };
      const list = await this.memberLists.findOne({ _id: membersId });
      if (list !== null) return { ...record, members: this.remember(membersId, list.members) };
      const again = await this.bulks.findOne({ _id: id });
      if (again === null || again.membersId === membersId)
        throw new Error(`bulk ${id}: its members' list ${membersId} is missing`);
      found = again;
    }
  }

  async create(record: BulkRecord): Promise<boolean> {
    // The members first: a crash after them leaves a create that a redelivery repeats; one after
    // the bulk would leave members nobody indexes (the repeated create finds the bulk known).
    // A transferId already a member of another bulk keeps its first bulk.
    const members = record.members.map((m) => ({
      _id: m.transferId,
      bulkTransferId: record.bulkTransferId,
    }));
    if (members.length > 0)
      await ignoringDuplicates(this.members.insertMany(members, { ordered: false }));
    const membersId = await this.newMemberList(record);
    try {
      await this.bulks.insertOne(documentOf(record, membersId));
      return true;
    } catch (error) {
      this.memberListCache.delete(membersId);
      await this.memberLists.deleteOne({ _id: membersId });
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async save(record: BulkRecord, previous: BulkRecord): Promise<boolean> {
    const filter = { _id: record.bulkTransferId, version: record.version - 1 };
    const changes = changesOf(record, previous);
    if (record.members === previous.members)
      return (await this.bulks.updateOne(filter, changes)).matchedCount === 1;
    // New members: a new list, the bulk pointed at it, the list it replaced deleted. A save that
    // came second deletes its own list instead; a crash between leaves a list nothing points at.
    const stored = await this.bulks.findOne(
      { _id: record.bulkTransferId },
      { projection: { version: 1, membersId: 1 } },
    );
    if (stored?.version !== filter.version) return false;
    const membersId = await this.newMemberList(record);
    const saved = await this.bulks.updateOne(filter, {
      ...changes,
      $set: { ...changes.$set, membersId },
    });
    const replaced = saved.matchedCount === 1 ? stored.membersId : membersId;
    this.memberListCache.delete(replaced);
    await this.memberLists.deleteOne({ _id: replaced });
    return saved.matchedCount === 1;
  }

  async openExpiredBefore(beforeMs: number, limit: number): Promise<BulkRecord[]> {
    const found = await this.bulks
      .find({ state: { $nin: [...FINAL_STATES] }, expiresAtMs: { $lt: beforeMs } })
      .sort({ expiresAtMs: 1 })
      .limit(limit)
      .toArray();
    return Promise.all(found.map((document) => this.recordOf(document)));
  }

  /** A list of `record`'s members, written once: its id. */
  private async newMemberList(record: BulkRecord): Promise<string> {
    const membersId = randomUUID();
    await this.memberLists.insertOne({ _id: membersId, members: record.members });
    this.remember(membersId, record.members);
    return membersId;
  }

  /** A members' list kept as the newest in memory (the oldest let go past the bound). */
  private remember(membersId: string, members: BulkMember[]): BulkMember[] {
    this.memberListCache.delete(membersId);
    this.memberListCache.set(membersId, members);
    if (this.memberListCache.size > CACHED_MEMBER_LISTS)
      this.memberListCache.delete(this.memberListCache.keys().next().value!);
    return members;
  }

  async bulksOf(transferIds: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    if (transferIds.length === 0) return found;
    const members = await this.members.find({ _id: { $in: [...transferIds] } }).toArray();
    for (const member of members) found.set(member._id, member.bulkTransferId);
    return found;
  }

  async disclaim(bulkTransferId: string, transferIds: readonly string[]): Promise<void> {
    if (transferIds.length === 0) return;
    await this.members.deleteMany({ _id: { $in: [...transferIds] }, bulkTransferId });
  }

  individualTransfers(messageId: string): Promise<Record<string, unknown>[]> {
    return this.items('individualTransfers', messageId);
  }

  individualTransferFulfils(messageId: string): Promise<Record<string, unknown>[]> {
    return this.items('individualTransferFulfils', messageId);
  }

  async saveResult(doc: BulkTransferResultDocument): Promise<void> {
    try {
      await this.results.insertOne({ ...doc });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  private async items(collection: string, messageId: string): Promise<Record<string, unknown>[]> {
    const found = await this.db
      .collection<ItemDocument>(collection)
      .find({ messageId }, { projection: { _id: 0, payload: 1 } })
      // bulk-api-adapter saves a bulk's items concurrently, so the store's natural order is
      // whichever write landed first; their ObjectIds were made in the bulk's order (mongoose
      // assigns them as it builds each document), so the bulk's order is theirs.
      .sort({ _id: 1 })
      .toArray();
    return found.map((item) => item.payload);
  }
}

/** mongodb://[user:password@]host:port, the credentials escaped. */
export function mongoUrl(options: {
  host: string;
  port: number;
  user: string;
  password: string;
}): string {
  const credentials =
    options.user === ''
      ? ''
      : `${encodeURIComponent(options.user)}:${encodeURIComponent(options.password)}@`;
  return `mongodb://${credentials}${options.host}:${options.port}`;
}

function documentOf(record: BulkRecord, membersId: string): BulkDocument {
  const { members, ...rest } = record;
  void members;
  return {
    ...rest,
    _id: record.bulkTransferId,
    expiresAtMs: Date.parse(record.expiration),
    membersId,
  };
}

/**
 * The update turning `previous`'s document into `record`'s: the fields that are not the same (the
 * members aside: they are a list of their own).
 */
function changesOf(
  record: BulkRecord,
  previous: BulkRecord,
): { $set: Record<string, unknown>; $unset?: Record<string, ''> } {
  const set: Record<string, unknown> = {};
  const unset: Record<string, ''> = {};
  for (const key of new Set([...Object.keys(previous), ...Object.keys(record)])) {
    if (key === 'members') continue;
    const value = record[key as keyof BulkRecord];
    if (value === previous[key as keyof BulkRecord]) continue;
    if (value === undefined) unset[key] = '';
    else set[key] = value;
  }
  if (record.expiration !== previous.expiration) set['expiresAtMs'] = Date.parse(record.expiration);
  return Object.keys(unset).length === 0 ? { $set: set } : { $set: set, $unset: unset };
}

function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

/** An unordered insert whose only failures are keys already there. */
async function ignoringDuplicates(insert: Promise<unknown>): Promise<void> {
  try {
    await insert;
  } catch (error) {
    const writeErrors = (error as { writeErrors?: { code: number }[] | { code: number } })
      .writeErrors;
    const list = writeErrors === undefined ? [] : [writeErrors].flat();
    if (list.length === 0 || list.some((e) => e.code !== DUPLICATE_KEY)) throw error;
  }
}
