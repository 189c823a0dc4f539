/**
 * Metadata in MySQL (knex + mysql2), behind MYSQL_ENABLED. Off the hot path: transfer rows of
 * concurrent requests are written with one multi-row upsert per batch and read with one
 * `IN (...)` query per batch; participants are cached for `PARTICIPANT_CACHE_MS` (the ledger
 * itself enforces activity and limits, so a stale cache can only word a refusal differently;
 * admin changes read them uncached, in the participant's turn).
 * Every query is bounded by the query timeout; an unreachable database answers
 * MetadataUnavailableError, never a hang. A query that times out is killed on the server (KILL
 * QUERY, on a connection of its own) before its caller is answered, and a write's attempts end by
 * its callers' deadline: a write answered as failed never lands later.
 */
import knexFactory, { type Knex } from 'knex';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config';
import {
  MetadataUnavailableError,
  type FundsRecord,
  type FxTransferRecord,
  type HubAccount,
  type MetadataStore,
  type Participant,
  type SettlementModel,
  type SettlementRecord,
  type SettlementWindowRecord,
  type SettlementWrite,
  type TransferRecord,
  type ExpiryKind,
} from '../ports/metadata';
import {
  RECEIVED_FULFIL_DEPENDENT,
  TransferInternalState,
  isFinal,
  isFinalFx,
} from '../ports/states';
import { BatchQueue } from '../util/batch-queue';
import { withSettlementId } from './memory';
import { migrateLatest } from './migrations';
import { expiresAtMs, recordOf, rowOf, type TransferRow } from './mysql-rows';
import { MySqlTurns, splitPool } from './mysql-turns';
import type { LockWarn } from './named-lock';

/** How long a participant read from the database is reused by this instance. */
const PARTICIPANT_CACHE_MS = 1000;
/**
 * How long an instance's claim on telling an expiry keeps the others from telling it: far longer
 * than a notification takes; if the instance dies first, another tells it after this long.
 */
const EXPIRY_CLAIM_MS = 60_000;
/**
 * Where the claims on each kind of expiry live: the claims table, the records it claims (by their
 * id column), the states an expiry can be claimed in (the ledger holds their money) and which are
 * final.
 */
const CLAIMABLE: Record<
  ExpiryKind,
  { claims: string; records: string; id: string; open: string[]; final: (state: string) => boolean }
> = {
  transfer: {
    claims: 'expiry_claims',
    records: 'transfers',
    id: 'transfer_id',
    open: [TransferInternalState.RESERVED],
    final: (state) => isFinal(state as TransferInternalState),
  },
  fx: {
    claims: 'fx_expiry_claims',
    records: 'fx_transfers',
    id: 'commit_request_id',
    open: [TransferInternalState.RESERVED, RECEIVED_FULFIL_DEPENDENT],
    final: (state) => isFinalFx(state as TransferInternalState),
  },
};
/** Rows per multi-row statement; MySQL's packet limit is far above this many transfer rows. */
const MAX_ROWS_PER_STATEMENT = 2000;
/** A failed batch write is tried this many times in all before its callers see the error. */
const WRITE_ATTEMPTS = 3;
/**
 * A claim on a determining transfer is made this many times in all while others give theirs back.
 */
const CLAIM_ATTEMPTS = 3;

/** The errors of a database gone away, slow or locked: 2003 to the caller, never a 500. */
const UNAVAILABLE_MESSAGE = new RegExp(
  [
    'ECONNREFUSED',
    'ETIMEDOUT',
    'ECONNRESET',
    'PROTOCOL_CONNECTION_LOST',
    'Timeout acquiring',
    'query timeout',
    'Lock wait timeout',
    'connect',
    'EPIPE',
    'closed state',
  ].join('|'),
  'i',
);

export class MySqlMetadataStore implements MetadataStore {
  readonly name = 'mysql';
  private readonly db: Knex;
  private readonly timeoutMs: number;
  private readonly writes: BatchQueue<TransferRecord, void>;
  private readonly reads: BatchQueue<string, TransferRecord | undefined>;
  /**
   * Every prepare asks whether an fxTransfer waits on its id: one query per batch, not per prepare.
   */
  private readonly dependents: BatchQueue<string, FxTransferRecord | undefined>;
  /** Names this process in expiry_claims. */
  private readonly instanceId = randomUUID();
  /** By name in lower case, as the table matches names (MetadataStore.participant). */
  private readonly participantCache = new Map<
    string,
    { participant: Participant | undefined; until: number }
  >();
  /**
   * Participant saves finished so far: a read that overlapped one may hold the row as it was
   * before it, and is not cached (with it, the instance's next admin change or prepare would find
   * the change undone for a second).
   */
  private participantSaves = 0;
  /** Settlements' and participants' turns (mysql-turns.ts). */
  private readonly turns: MySqlTurns;
  readonly writeTimeoutMs: number;
  /**
   * The upsert's assignments, each kept as stored when the write is staler than the row: with
   * several instances, one may hold a transfer open (RESERVED, no fulfilment) that another
   * finished, and its repair from the ledger (GET, the expiry sweep, a refused duplicate finish)
   * must not wipe the finisher's fulfilment, finish hash or error, nor reopen a final row.
   * MySQL assigns left to right, each seeing the columns already assigned: `state` and
   * `finish_hash`, which the condition reads, come last (once assigned they keep it true or false).
   */
  private readonly finishMerge: Record<string, Knex.Raw>;
  /**
   * The same for conversions: a final row is kept as stored (another instance finished it; this
   * one's copy is stale) — but for a bare abort (ABORTED_ERROR with no error: the dependent
   * transfer's abort, or a repair from the ledger, written first) that the FXP's withdrawal
   * completes (its own finish hash, and its error or the FXP's ABORTED as ABORTED_REJECTED): kept,
   * it would lose the withdrawal's finish, and a resend of it would be recorded and told again.
   */
  private readonly fxMerge: Record<string, Knex.Raw>;

  /**
   * @param options.turnTimeoutMs how long a settlement's or participant's change waits for its turn
   * (TURN_TIMEOUT_MS; tests shorten it)
   */
  constructor(config: Config['mysql'], options: { turnTimeoutMs?: number } = {}) {
    this.timeoutMs = config.queryTimeoutMs;
    // The extra options (TLS, ...) may change the connection as central-ledger lets them, never
    // how numbers are read: amounts stay exact strings.
    const connection = {
      host: config.host,
      port: config.port,
      user: config.user,
      password: config.password,
      database: config.database,
      connectTimeout: config.connectTimeoutMs,
      ...config.connectionOptions,
      supportBigNumbers: true,
      bigNumberStrings: true,
    };
    // The server's own bound on a row lock's wait, should the KILL of a timed-out query not reach
    // it (a connect for it failing): whole seconds, at least one.
    const lockWaitSeconds = Math.max(1, Math.ceil(config.queryTimeoutMs / 1000));
    // The turns' locks have a few of MYSQL_POOL_MAX's connections (splitPool); the rest are here.
    const poolMax = splitPool(config.poolMax).store;
    this.db = knexFactory({
      client: 'mysql2',
      connection,
      pool: {
        min: Math.min(config.poolMin, poolMax),
        max: poolMax,
        afterCreate: (
          raw: { query(sql: string, done: (error: Error | null) => void): void },
          done: (error: Error | null, raw: unknown) => void,
        ) => {
          raw.query(`SET SESSION innodb_lock_wait_timeout = ${lockWaitSeconds}`, (error) =>
            done(error, raw),
          );
        },
      },
      acquireConnectionTimeout: config.connectTimeoutMs,
    });
    this.turns = new MySqlTurns(connection, config, options.turnTimeoutMs);
    const unavailable = (reason: string): Error => new MetadataUnavailableError(reason);
    // A write's attempts and a connect: every batch's callers (reads too) wait at most that.
    this.writeTimeoutMs = config.queryTimeoutMs * WRITE_ATTEMPTS + config.connectTimeoutMs;
    const batchOptions = {
      maxBatch: MAX_ROWS_PER_STATEMENT,
      maxInFlight: Math.max(1, Math.floor(poolMax / 2)),
      lingerMs: 0,
      maxQueued: 100_000,
      timeoutMs: this.writeTimeoutMs,
    };
    this.writes = new BatchQueue(
      (records, deadline) => this.upsertTransfers(records, deadline),
      batchOptions,
      unavailable,
    );
    this.reads = new BatchQueue((ids) => this.selectTransfers(ids), batchOptions, unavailable);
    this.dependents = new BatchQueue(
      (ids) => this.selectFx('determining_transfer_id', ids, (r) => r.determiningTransferId),
      batchOptions,
      unavailable,
    );
    const open = `('${TransferInternalState.RECEIVED_PREPARE}', '${TransferInternalState.RESERVED}')`;
    const stale = `(transfers.finish_hash IS NOT NULL AND VALUES(finish_hash) IS NULL) OR (transfers.state NOT IN ${open} AND VALUES(state) IN ${open})`;
    const columns = [
      'fulfilment',
      'completed_timestamp',
      'error_information',
      'extension_list',
      'finish_origin',
      'state',
      'finish_hash',
    ];
    this.finishMerge = Object.fromEntries(
      columns.map((c) => [c, this.db.raw(`IF(${stale}, transfers.??, VALUES(??))`, [c, c])]),
    );
    const fxOpen = [TransferInternalState.RECEIVED_PREPARE, ...CLAIMABLE.fx.open]
      .map((state) => `'${state}'`)
      .join(', ');
    const [bare, rejected] = [
      TransferInternalState.ABORTED_ERROR,
      TransferInternalState.ABORTED_REJECTED,
    ].map((state) => `'${state}'`);
    const [storedField, newField] = [
      (f: string) => `JSON_EXTRACT(fx_transfers.record, '$.${f}')`,
      (f: string) => `JSON_EXTRACT(VALUES(record), '$.${f}')`,
    ];
    // The stored row a bare abort; the new one a withdrawal: a finish of its own, and an error or
    // the FXP's ABORTED.
    const completes =
      `(fx_transfers.state = ${bare} AND ${storedField('errorInformation')} IS NULL AND ${newField('finishHash')} IS NOT NULL` +
      ` AND NOT (${newField('finishHash')} <=> ${storedField('finishHash')})` +
      ` AND (VALUES(state) = ${rejected} OR (VALUES(state) = ${bare} AND ${newField('errorInformation')} IS NOT NULL)))`;
    this.fxMerge = {
      record: this.db.raw(
        `IF(fx_transfers.state NOT IN (${fxOpen}) AND NOT ${completes}, fx_transfers.record, VALUES(record))`,
      ),
      // Assigned after `record` (MySQL's order, left to right): the state follows the record kept
      // or written.
      state: this.db.raw(
        'IF(fx_transfers.record <=> VALUES(record), VALUES(state), fx_transfers.state)',
      ),
    };
  }

  /** Applies every pending migration (safe when several instances start at once). */
  migrate(): Promise<string[]> {
    return this.guard(migrateLatest(this.db, this.turns.locks), 'migration');
  }

  async ledgerIdentity(): Promise<bigint | undefined> {
    const [row]: { identity: string }[] = await this.query(
      this.db('ledger_identity').select('identity').where({ slot: 1 }),
    );
    return row === undefined ? undefined : BigInt(row.identity);
  }

  /** The first insert stands: instances starting at once read back the same one. */
  async recordLedgerIdentity(identity: bigint): Promise<bigint> {
    await this.query(
      this.db('ledger_identity')
        .insert({ slot: 1, identity: identity.toString() })
        .onConflict('slot')
        .ignore(),
    );
    const recorded = await this.ledgerIdentity();
    if (recorded === undefined) throw new Error('the ledger identity was not recorded');
    return recorded;
  }

  async healthy(): Promise<boolean> {
    try {
      await this.query(this.db.raw('SELECT 1'));
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.writes.close();
    this.reads.close();
    this.dependents.close();
    await Promise.all([this.db.destroy(), this.turns.close()]);
  }

  async hubAccounts(): Promise<HubAccount[]> {
    const rows: { id: number; type: HubAccount['type']; currency: string; created_date: string }[] =
      await this.query(this.db('hub_accounts').select().orderBy('id'));
    return rows.map((r) => ({
      id: Number(r.id),
      type: r.type,
      currency: r.currency,
      createdDate: r.created_date,
    }));
  }

  async addHubAccount(account: Omit<HubAccount, 'id'>): Promise<HubAccount> {
    const saved = { ...account, id: await this.nextId() };
    await this.query(
      this.db('hub_accounts').insert({
        id: saved.id,
        type: saved.type,
        currency: saved.currency,
        created_date: saved.createdDate,
      }),
    );
    return saved;
  }

  async settlementModels(): Promise<SettlementModel[]> {
    const rows: { model: string }[] = await this.query(
      this.db('settlement_models').select('model').orderBy('name'),
    );
    return rows.map((r) => JSON.parse(r.model) as SettlementModel);
  }

  async addSettlementModel(model: SettlementModel): Promise<void> {
    await this.query(
      this.db('settlement_models').insert({ name: model.name, model: JSON.stringify(model) }),
    );
  }

  async participants(): Promise<Participant[]> {
    const names: { name: string }[] = await this.query(
      this.db('participants').select('name').orderBy('id'),
    );
    const found = await Promise.all(names.map((n) => this.loadParticipant(n.name)));
    return found.filter((p): p is Participant => p !== undefined);
  }

  async participant(
    name: string,
    options: { fresh?: boolean } = {},
  ): Promise<Participant | undefined> {
    const cached = this.participantCache.get(name.toLowerCase());
    if (options.fresh !== true && cached !== undefined && cached.until > Date.now())
      return cached.participant;
    const saves = this.participantSaves;
    const participant = await this.loadParticipant(name);
    if (participant !== undefined && saves === this.participantSaves)
      this.participantCache.set(name.toLowerCase(), {
        participant: Object.freeze(participant),
        until: Date.now() + PARTICIPANT_CACHE_MS,
      });
    return participant;
  }

  async saveParticipant(participant: Participant): Promise<void> {
    try {
      await this.writeParticipant(participant);
    } finally {
      // After the transaction: a read during it cached the row as it was (see participantSaves).
      this.participantSaves++;
      this.participantCache.delete(participant.name.toLowerCase());
    }
  }

  private async writeParticipant(participant: Participant): Promise<void> {
    await this.guard(
      this.db.transaction(async (trx) => {
        await trx('participants')
          .insert({
            name: participant.name,
            id: participant.id,
            is_active: participant.isActive,
            is_proxy: participant.isProxy === true,
            created: participant.created,
            created_by: participant.createdBy,
          })
          .onConflict('name')
          .merge(['is_active']);
        await trx('participant_currencies').where({ participant: participant.name }).delete();
        if (participant.currencies.length > 0) {
          await trx('participant_currencies').insert(
            participant.currencies.map((c) => ({
              participant: participant.name,
              currency: c.currency,
              position_account_id: c.positionAccountId,
              settlement_account_id: c.settlementAccountId,
              position_account_active: c.positionAccountActive,
              created_date: c.createdDate,
              ndc_value: c.netDebitCap?.value ?? null,
              ndc_alarm_percentage: c.netDebitCap?.alarmPercentage ?? null,
            })),
          );
        }
        await trx('participant_endpoints').where({ participant: participant.name }).delete();
        if (participant.endpoints.length > 0) {
          await trx('participant_endpoints').insert(
            participant.endpoints.map((e) => ({
              participant: participant.name,
              type: e.type,
              value: e.value,
            })),
          );
        }
      }),
      'participant write',
    );
  }

  async nextId(): Promise<number> {
    const [id] = (await this.query(this.db('id_sequence').insert({}))) as number[];
    return Number(id);
  }

  async fundsRecord(transferId: string): Promise<FundsRecord | undefined> {
    const row = await this.query(
      this.db('funds_records').where({ transfer_id: transferId }).first(),
    );
    if (row === undefined) return undefined;
    return {
      transferId: row.transfer_id,
      participant: row.participant,
      currency: row.currency,
      action: row.action,
      amount: row.amount,
      state: row.state,
      payloadHash: row.payload_hash,
      ...(row.ledger_id === null ? {} : { ledgerId: row.ledger_id }),
    };
  }

  async saveFundsRecord(record: FundsRecord): Promise<void> {
    await this.query(
      this.db('funds_records')
        .insert({
          transfer_id: record.transferId,
          participant: record.participant,
          currency: record.currency,
          action: record.action,
          amount: record.amount,
          state: record.state,
          payload_hash: record.payloadHash,
          ledger_id: record.ledgerId ?? null,
        })
        .onConflict('transfer_id')
        .merge(['state']),
    );
  }

  transfers(ids: readonly string[]): Promise<(TransferRecord | undefined)[]> {
    return this.reads.submit(ids);
  }

  async saveTransfers(records: readonly TransferRecord[]): Promise<void> {
    await this.writes.submit(records);
  }

  async openTransfers(): Promise<TransferRecord[]> {
    const rows: TransferRow[] = await this.query(
      this.db('transfers').select().whereIn('state', ['RECEIVED_PREPARE', 'RESERVED']),
    );
    return rows.map(recordOf);
  }

  /**
   * Claims, in one statement, the given transfers (conversions) still open whose claim is free,
   * lapsed or already this instance's (a notification that failed is retried by its claimant);
   * then reads which are this instance's and which are recorded final. Assignments run left to
   * right: `owner` first, so `until_ms` is renewed exactly where the claim is now this instance's.
   */
  async claimExpiries(
    kind: ExpiryKind,
    ids: readonly string[],
  ): Promise<{ mine: string[]; recorded: string[] }> {
    // In key order, as the upserts: two instances take their locks in one order.
    const unique = [...new Set(ids)].sort();
    if (unique.length === 0) return { mine: [], recorded: [] };
    const { claims, records, id, open, final } = CLAIMABLE[kind];
    const now = Date.now();
    // The SELECT locks the rows it reads: by primary key, only the named ones. Left to itself the
    // optimizer may scan the (state, expires_at_ms) index for `state IN (…)` and lock a range of
    // every open record, which deadlocked with another instance's upsert of expiries (seen in the
    // scale-out test); a deadlock that still happens is tried again.
    await this.retrying((timeoutMs) =>
      this.query(
        this.db.raw(
          `INSERT INTO ${claims} (${id}, owner, until_ms) SELECT ${id}, ?, ? FROM ${records} FORCE INDEX (PRIMARY) WHERE ${id} IN (${unique.map(() => '?').join(', ')}) AND state IN (${open.map(() => '?').join(', ')}) ` +
            'ON DUPLICATE KEY UPDATE owner = IF(until_ms < ? OR owner = VALUES(owner), VALUES(owner), owner), until_ms = IF(owner = VALUES(owner), VALUES(until_ms), until_ms)',
          [this.instanceId, now + EXPIRY_CLAIM_MS, ...unique, ...open, now],
        ),
        timeoutMs,
      ),
    );
    const rows: { key: string; state: string; owner: string | null }[] = await this.query(
      this.db(records)
        .leftJoin(claims, `${records}.${id}`, `${claims}.${id}`)
        .select({ key: `${records}.${id}`, state: `${records}.state`, owner: `${claims}.owner` })
        .whereIn(`${records}.${id}`, unique),
    );
    return {
      mine: rows
        .filter((r) => open.includes(r.state) && r.owner === this.instanceId)
        .map((r) => r.key),
      recorded: rows.filter((r) => final(r.state)).map((r) => r.key),
    };
  }

  /**
   * Up to `limit` records (transfers or conversions) still open in the ledger's terms that expired
   * before `beforeMs` and whose expiry no live claim covers, oldest first: one range read of the
   * (state, expires_at_ms) index, nothing when none is overdue.
   */
  async overdue(kind: ExpiryKind, beforeMs: number, limit: number): Promise<string[]> {
    const { claims, records, id, open } = CLAIMABLE[kind];
    const rows: { key: string }[] = await this.query(
      this.db(records)
        .leftJoin(claims, `${records}.${id}`, `${claims}.${id}`)
        .select({ key: `${records}.${id}` })
        .whereIn(`${records}.state`, open)
        .andWhere(`${records}.expires_at_ms`, '<', beforeMs)
        .andWhere((q) => {
          q.whereNull(`${claims}.until_ms`).orWhere(`${claims}.until_ms`, '<', Date.now());
        })
        .orderBy(`${records}.expires_at_ms`)
        .limit(limit),
    );
    return rows.map((row) => row.key);
  }

  async fxTransfers(ids: readonly string[]): Promise<(FxTransferRecord | undefined)[]> {
    return this.selectFx('commit_request_id', ids, (r) => r.commitRequestId);
  }

  fxTransfersDetermining(
    transferIds: readonly string[],
  ): Promise<(FxTransferRecord | undefined)[]> {
    return this.dependents.submit(transferIds);
  }

  async saveFxTransfers(records: readonly FxTransferRecord[]): Promise<void> {
    if (records.length === 0) return;
    const rows = latestInKeyOrder(records, (r) => r.commitRequestId).map((r) => ({
      commit_request_id: r.commitRequestId,
      determining_transfer_id: r.determiningTransferId,
      state: r.state,
      record: JSON.stringify(r),
      expires_at_ms: expiresAtMs(r.expiration),
    }));
    await this.upsert(
      this.db('fx_transfers').insert(rows).onConflict('commit_request_id').merge(this.fxMerge),
      performance.now() + this.writeTimeoutMs,
    );
  }

  /**
   * The first insert wins (the primary key); every claimant then reads who that was. A claim given
   * back between the two statements (releaseDetermining) leaves nothing to read: claimed again.
   */
  async claimDetermining(determiningTransferId: string, commitRequestId: string): Promise<string> {
    for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
      await this.query(
        this.db('fx_determining')
          .insert({
            determining_transfer_id: determiningTransferId,
            commit_request_id: commitRequestId,
          })
          .onConflict('determining_transfer_id')
          .ignore(),
      );
      const row: { commit_request_id: string } | undefined = await this.query(
        this.db('fx_determining')
          .where({ determining_transfer_id: determiningTransferId })
          .first('commit_request_id'),
      );
      if (row !== undefined) return row.commit_request_id;
    }
    throw new MetadataUnavailableError(
      `the claim on determining transfer ${determiningTransferId} was given back ${CLAIM_ATTEMPTS} times while read; try again`,
    );
  }

  async releaseDetermining(determiningTransferId: string, commitRequestId: string): Promise<void> {
    await this.query(
      this.db('fx_determining')
        .where({
          determining_transfer_id: determiningTransferId,
          commit_request_id: commitRequestId,
        })
        .delete(),
    );
  }

  async openFxTransfers(): Promise<FxTransferRecord[]> {
    const rows: { record: string }[] = await this.query(
      this.db('fx_transfers')
        .select('record')
        .whereIn('state', [TransferInternalState.RESERVED, RECEIVED_FULFIL_DEPENDENT]),
    );
    return rows.map((row) => JSON.parse(row.record) as FxTransferRecord);
  }

  private async selectFx(
    column: string,
    keys: readonly string[],
    keyOf: (record: FxTransferRecord) => string,
  ): Promise<(FxTransferRecord | undefined)[]> {
    if (keys.length === 0) return [];
    const rows: { record: string }[] = await this.query(
      this.db('fx_transfers')
        .select('record')
        .whereIn(column, [...new Set(keys)]),
    );
    const byKey = new Map(
      rows.map((row) => JSON.parse(row.record) as FxTransferRecord).map((r) => [keyOf(r), r]),
    );
    return keys.map((key) => byKey.get(key));
  }

  settlementWindows(ids?: readonly number[]): Promise<SettlementWindowRecord[]> {
    return this.documents<SettlementWindowRecord>('settlement_windows', ids);
  }

  async openSettlementWindow(): Promise<SettlementWindowRecord> {
    const rows: DocumentRow[] = await this.query(
      this.db('settlement_windows').where({ state: 'OPEN' }).orderBy('id', 'desc').limit(1),
    );
    if (rows[0] === undefined)
      throw new Error(
        'no OPEN settlement window: migration 006 seeds one and only a close replaces it',
      );
    return documentOf(rows[0]);
  }

  settlements(ids?: readonly number[]): Promise<SettlementRecord[]> {
    return this.documents<SettlementRecord>('settlements', ids);
  }

  async renumberOpenWindow(
    open: SettlementWindowRecord,
    id: number,
  ): Promise<SettlementWindowRecord | undefined> {
    return this.guard(
      this.db.transaction(async (trx) => {
        const [highest] = (await trx('settlement_windows').max({ id: 'id' })) as {
          id: number | null;
        }[];
        if (id <= Number(highest?.id ?? 0)) return undefined;
        const { id: openId, version, ...body } = open;
        if (
          (await trx('settlement_windows')
            .where({ id: openId, version, state: 'OPEN' })
            .delete()) !== 1
        )
          return undefined;
        // An explicit id above the highest: InnoDB's auto-increment numbers on from it.
        await trx('settlement_windows').insert({
          id,
          state: open.state,
          version: version + 1,
          body: JSON.stringify(body),
        });
        return { ...open, id, version: version + 1 };
      }),
      'window renumbering',
    );
  }

  async writeSettlement(write: SettlementWrite): Promise<SettlementWrite | undefined> {
    try {
      return await this.guard(
        this.db.transaction(async (trx) => {
          const settlement =
            write.settlement === undefined
              ? undefined
              : await saveDocument(trx, 'settlements', write.settlement);
          const windows: SettlementWindowRecord[] = [];
          for (const window of withSettlementId(write.windows, settlement?.id))
            windows.push(await saveDocument(trx, 'settlement_windows', window));
          return { windows, ...(settlement === undefined ? {} : { settlement }) };
        }),
        'settlement write',
      );
    } catch (error) {
      if (error instanceof StaleDocumentError) return undefined;
      throw error;
    }
  }

  settlementTurn<T>(id: number, work: () => Promise<T>): Promise<T> {
    return this.turns.run('settlement', String(id), work);
  }

  /**
   * Names are matched ignoring case here (the tables' collation: `dfspa` is `DFSPA`'s row), and so
   * are their turns.
   */
  participantTurn<T>(name: string, work: () => Promise<T>): Promise<T> {
    return this.turns.run('participant', name.toLowerCase(), work);
  }

  /**
   * Where the named lock's failures after a turn's work are told (the service's logger, once it
   * exists; stderr before).
   */
  set warn(warn: LockWarn) {
    this.turns.warn = warn;
  }

  private async documents<T>(table: string, ids: readonly number[] | undefined): Promise<T[]> {
    const builder = this.db(table).select().orderBy('id');
    const rows: DocumentRow[] = await this.query(
      ids === undefined ? builder : builder.whereIn('id', [...ids]),
    );
    return rows.map((row) => documentOf<T>(row));
  }

  private async loadParticipant(name: string): Promise<Participant | undefined> {
    const row = await this.query(this.db('participants').where({ name }).first());
    if (row === undefined) return undefined;
    const [currencies, endpoints] = await Promise.all([
      this.query(
        this.db('participant_currencies')
          .where({ participant: name })
          .orderBy('position_account_id'),
      ),
      this.query(this.db('participant_endpoints').where({ participant: name }).orderBy('type')),
    ]);
    return {
      name: row.name,
      id: Number(row.id),
      isActive: Boolean(row.is_active),
      ...(row.is_proxy ? { isProxy: true } : {}),
      created: row.created,
      createdBy: row.created_by,
      currencies: (currencies as Record<string, unknown>[]).map((c) => ({
        currency: String(c.currency),
        positionAccountId: Number(c.position_account_id),
        settlementAccountId: Number(c.settlement_account_id),
        positionAccountActive: Boolean(c.position_account_active),
        createdDate: String(c.created_date),
        netDebitCap:
          c.ndc_value === null
            ? undefined
            : { value: String(c.ndc_value), alarmPercentage: Number(c.ndc_alarm_percentage) },
      })),
      endpoints: (endpoints as Record<string, unknown>[]).map((e) => ({
        type: String(e.type),
        value: String(e.value),
      })),
    };
  }

  /** One multi-row upsert for a whole batch, over by its callers' `deadline`. */
  private async upsertTransfers(records: TransferRecord[], deadline: number): Promise<void[]> {
    await this.upsert(
      this.db('transfers')
        .insert(latestInKeyOrder(records, (r) => r.transferId).map(rowOf))
        .onConflict('transfer_id')
        .merge(this.finishMerge),
      deadline,
    );
    return records.map(() => undefined);
  }

  /**
   * A multi-row upsert, tried again before its callers see a failure: InnoDB answers a deadlock
   * (two instances upserting overlapping rows, e.g. both sweeps recording expiries: seen in the
   * scale-out test) by rolling one statement back, which then simply goes again; likewise a
   * dropped connection.
   */
  private upsert(statement: Knex.QueryBuilder, deadline: number): Promise<void> {
    return this.retrying((timeoutMs) => this.query(statement.clone(), timeoutMs), deadline);
  }

  /**
   * A write tried up to WRITE_ATTEMPTS times, each bounded by the query timeout and all by
   * `deadline` (performance.now(); default: writeTimeoutMs from now), when its callers are
   * answered: none starts after it nor runs past it (a timed-out one is killed). The last failure
   * is the caller's.
   */
  private async retrying(
    write: (timeoutMs: number) => Promise<unknown>,
    deadline = performance.now() + this.writeTimeoutMs,
  ): Promise<void> {
    let lastError: unknown = new MetadataUnavailableError('write: its callers had been answered');
    for (let attempt = 1; attempt <= WRITE_ATTEMPTS; attempt++) {
      const left = Math.floor(deadline - performance.now());
      if (left <= 0) break;
      try {
        await write(Math.min(this.timeoutMs, left));
        return;
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }

  private async selectTransfers(ids: string[]): Promise<(TransferRecord | undefined)[]> {
    const rows: TransferRow[] = await this.query(
      this.db('transfers')
        .select()
        .whereIn('transfer_id', [...new Set(ids)]),
    );
    const byId = new Map(rows.map((row) => [row.transfer_id, recordOf(row)]));
    return ids.map((id) => {
      const found = byId.get(id);
      return found === undefined ? undefined : { ...found };
    });
  }

  /**
   * A query bounded by `timeoutMs`: past it, knex kills it on the server (KILL QUERY on a new
   * connection, outside the pool) before answering; a KILL that fails leaves its fate unknown,
   * answered MetadataUnavailableError as the timeout is (the server's lock wait bound ends it).
   */
  private query<T>(
    builder: Knex.QueryBuilder | Knex.Raw | Promise<T>,
    timeoutMs = this.timeoutMs,
  ): Promise<T> {
    const bounded =
      'timeout' in builder
        ? (builder as Knex.QueryBuilder).timeout(timeoutMs, { cancel: true })
        : builder;
    return this.guard(bounded as unknown as Promise<T>, 'query');
  }

  private async guard<T>(work: Promise<T>, what: string): Promise<T> {
    try {
      return await work;
    } catch (error) {
      const message = (error as Error).message ?? String(error);
      if (UNAVAILABLE_MESSAGE.test(message))
        throw new MetadataUnavailableError(`${what}: ${message}`);
      throw error;
    }
  }
}

type DocumentRow = { id: number; state: string; version: number; body: string };

/** Another instance saved the document since it was read: the whole write is rolled back. */
class StaleDocumentError extends Error {}

function documentOf<T>(row: DocumentRow): T {
  return { ...JSON.parse(row.body), id: Number(row.id), version: Number(row.version) } as T;
}

/**
 * Inserts a new document (id 0) or updates one only if its version is still the one it was read
 * with.
 */
async function saveDocument<T extends { id: number; version: number; state: string }>(
  trx: Knex.Transaction,
  table: string,
  record: T,
): Promise<T> {
  const { id, version, ...body } = record;
  const values = { state: record.state, version: version + 1, body: JSON.stringify(body) };
  if (id === 0) {
    const [inserted] = (await trx(table).insert(values)) as number[];
    return { ...record, id: Number(inserted), version: version + 1 };
  }
  const changed = await trx(table).where({ id, version }).update(values);
  if (changed !== 1) throw new StaleDocumentError(`${table} ${id} changed since it was read`);
  return { ...record, version: version + 1 };
}

/**
 * One record per key, the last written (as sequential writes would leave it), in key order: two
 * instances' upserts then take their row locks in the same order, which keeps InnoDB from
 * deadlocking them on each other.
 */
function latestInKeyOrder<R>(records: readonly R[], keyOf: (record: R) => string): R[] {
  const latest = new Map(records.map((r) => [keyOf(r), r]));
  return [...latest.keys()].sort().map((key) => latest.get(key)!);
}
