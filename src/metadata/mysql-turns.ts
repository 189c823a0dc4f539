/**
 * Settlements' and participants' turns on MySQL: one change at a time per settlement (participant)
 * across every instance sharing the database. In an instance the requests queue in memory; the one
 * at the head takes the MySQL named lock on a connection of a small pool of its own, so waiting
 * and held turns never take the connections transfers need.
 */
import knexFactory from 'knex';
import type { Config } from '../config/config';
import { KeyedMutex } from '../util/keyed-mutex';
import { MetadataUnavailableError } from '../ports/metadata';
import { LockTimeoutError, NamedLockPool, type LockWarn } from './named-lock';

/**
 * How long a settlement's or a participant's change waits for its turn before it is answered
 * 2003, "try again", counted from when it asks: the wait behind this instance's other changes of
 * the same settlement (participant), for a connection of the lock pool and for the named lock all
 * count. A turn takes milliseconds (docs/settlement.md, cost measured), and
 * at worst about six metadata queries and ledger requests in a row, each bounded at 5 s by
 * default (MYSQL_QUERY_TIMEOUT_MS, LEDGER_TIMEOUT_MS): a change queued behind one that slow
 * still gets its turn, while one queued behind a turn that does not end (its instance hung, or
 * dead on a session MySQL has not yet seen close) is answered within half a minute instead of
 * hanging its caller and the pool connection it waits on.
 */
const TURN_TIMEOUT_MS = 30_000;
/**
 * The most connections the settlement and participant locks are held on. Each turn pins one for
 * the whole wait and the work, idle but for GET_LOCK and RELEASE_LOCK; settlement and participant
 * changes are rare operator actions, one at a time per settlement (participant) in an instance,
 * so a few at once is the most to expect, and more wait for one of these (within their deadline).
 */
const MAX_LOCK_CONNECTIONS = 4;

/**
 * How MYSQL_POOL_MAX (central-ledger's DATABASE.POOL_MAX_SIZE) is shared: a quarter, one to
 * MAX_LOCK_CONNECTIONS, for the locks' own pool, so that waiting and held turns never take the
 * connections transfers and the turns' own queries use; the rest for the store's pool. An
 * instance thus opens at most `poolMax` connections (and, for a moment, one more to KILL a query
 * that timed out: knex's cancel connects outside the pool).
 */
export function splitPool(poolMax: number): { store: number; locks: number } {
  if (!Number.isInteger(poolMax) || poolMax < 2)
    throw new Error(`MYSQL_POOL_MAX must be an integer of at least 2, not ${poolMax}`);
  const locks = Math.min(MAX_LOCK_CONNECTIONS, Math.max(1, Math.floor(poolMax / 4)));
  return { store: poolMax - locks, locks };
}
/** MySQL refuses longer lock names. */
const MAX_LOCK_NAME = 64;

export type TurnKind = 'settlement' | 'participant';

export class MySqlTurns {
  /**
   * This instance's requests for a turn, one at a time per key: only that one waits on (and holds)
   * a connection.
   */
  private readonly queue = new KeyedMutex();
  /** Also the migrations' lock's (migrations.ts), taken at start before any turn. */
  readonly locks: NamedLockPool;
  private readonly timeoutMs: number;
  /** Named locks are the server's, not the database's: theirs name the database too. */
  private readonly database: string;
  /**
   * Where the named lock's failures after a turn's work are told (the service's logger, once it
   * exists; stderr before).
   */
  warn: LockWarn | undefined;

  /** @param timeoutMs how long a change waits for its turn (TURN_TIMEOUT_MS; tests shorten it) */
  constructor(
    connection: Record<string, unknown>,
    config: Config['mysql'],
    timeoutMs = TURN_TIMEOUT_MS,
  ) {
    this.timeoutMs = timeoutMs;
    this.database = config.database;
    // NamedLockPool lets at most as many locks at its pool at once as it has connections: an
    // acquire there waits only for a connect.
    const { locks } = splitPool(config.poolMax);
    this.locks = new NamedLockPool(
      knexFactory({
        client: 'mysql2',
        connection,
        pool: { min: 0, max: locks },
        acquireConnectionTimeout: config.connectTimeoutMs,
      }),
      locks,
    );
  }

  /**
   * A settlement's (participant's) turn: held until the work ends — or the session does, if the
   * instance dies. The whole wait (the queue, a lock connection, GET_LOCK) ends at one deadline,
   * TURN_TIMEOUT_MS after asking. A participant's name (at most 30 characters) always fits the
   * lock name whole; only the database's may be cut.
   */
  run<T>(kind: TurnKind, key: string, work: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.timeoutMs;
    const lock = `central_ledger_${kind}_${key}_${this.database}`.slice(0, MAX_LOCK_NAME);
    const unavailable = (error: unknown): MetadataUnavailableError =>
      new MetadataUnavailableError(
        error instanceof LockTimeoutError
          ? `${kind} ${key} was being changed by another request for ${this.timeoutMs / 1000} s; try again`
          : `${kind} ${key}'s lock: ${(error as Error).message ?? String(error)}`,
      );
    return this.queue.run(
      `${kind}:${key}`,
      () => this.locks.run({ name: lock, deadline, failed: unavailable, warn: this.warn }, work),
      {
        deadline,
        expired: () => unavailable(new LockTimeoutError(lock, 0)),
      },
    );
  }

  close(): Promise<void> {
    return this.locks.close();
  }
}
