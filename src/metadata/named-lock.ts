/**
 * MySQL named locks (GET_LOCK), the one cross-instance lock of the MySQL store: migrations at
 * start and each settlement's changes queue on one. A lock belongs to the session that took it,
 * so it is held on one pool connection, pinned by a transaction that runs nothing else, while
 * the work runs its own queries on other connections. MySQL releases it when that session ends:
 * an instance that dies (its connections closed by the kernel, or dropped by the server once they
 * go silent) never keeps one. The store holds settlement locks on a small pool of their own
 * (NamedLockPool), so waiting and held locks never take the connections its queries need.
 */
import type { Knex } from 'knex';

/** GET_LOCK did not grant the lock within its timeout: another session held it all along. */
export class LockTimeoutError extends Error {
  constructor(name: string, timeoutSeconds: number) {
    super(`the lock ${name} was held elsewhere for ${timeoutSeconds} s`);
    this.name = 'LockTimeoutError';
  }
}

/**
 * How long to wait for a lock: seconds from when GET_LOCK is asked, or until a deadline (epoch ms).
 */
export type LockWait = number | { deadline: number };

/**
 * GET_LOCK's timeout for `wait`, or undefined when a deadline has passed (not asked at all: a
 * negative timeout would wait forever). GET_LOCK takes whole seconds: what is left of a deadline
 * is rounded down, so the wait never passes it (under a second left: one try that does not wait).
 */
export function lockSeconds(wait: LockWait, now = Date.now()): number | undefined {
  if (typeof wait === 'number') return wait;
  const left = wait.deadline - now;
  return left > 0 ? Math.floor(left / 1000) : undefined;
}

/**
 * Where the lock's own failures after the work are told: they change no answer, so they must be
 * seen.
 */
export type LockWarn = (fields: Record<string, unknown>, message: string) => void;

const stderrWarn: LockWarn = (fields, message) => {
  process.stderr.write(
    `${JSON.stringify({ level: 'warn', ...fields, err: fields.err instanceof Error ? fields.err.message : fields.err, msg: message })}\n`,
  );
};

/** How a lock's own failures are told: before the work, and after it. */
export interface LockFailures {
  /** Turns an error of the lock before the work into the one thrown (default: as it is). */
  failed?: ((error: unknown) => unknown) | undefined;
  /** Default: a warning line on stderr. */
  warn?: LockWarn | undefined;
}

/**
 * Runs `work` holding the named lock `name`, waiting for it at most `wait` (seconds, or until a
 * deadline: one already passed throws LockTimeoutError without asking for the lock). The work's
 * result or error is the answer: errors of the lock before the work (LockTimeoutError, a lost
 * connection) go through `failed`; once the work ran, a release that fails or finds the lock not
 * ours (RELEASE_LOCK ≠ 1: the session was lost, another session may have held the lock during
 * the work) or a failed commit of the pinning transaction is told to `warn`, loudly, and changes
 * nothing: the change was made (the session's end releases the lock anyway).
 */
export async function withNamedLock<T>(
  knex: Knex,
  lock: { name: string; wait: LockWait } & LockFailures,
  work: () => Promise<T>,
): Promise<T> {
  const { name, wait, failed = (error: unknown) => error, warn = stderrWarn } = lock;
  const done: { outcome?: { value: T } | { error: unknown } } = {};
  try {
    if (lockSeconds(wait) === undefined) throw new LockTimeoutError(name, 0);
    await knex.transaction(async (session) => {
      // What is left once a connection is ours.
      const seconds = lockSeconds(wait);
      if (seconds === undefined) throw new LockTimeoutError(name, 0);
      const [rows] = (await session.raw('SELECT GET_LOCK(?, ?) AS acquired', [name, seconds])) as [
        { acquired: number | string | null }[],
      ];
      // 0: timed out; NULL: an error (the wait was killed). Either way not ours.
      if (Number(rows[0]?.acquired) !== 1) throw new LockTimeoutError(name, seconds);
      try {
        done.outcome = { value: await work() };
      } catch (error) {
        done.outcome = { error };
      }
      try {
        const [released] = (await session.raw('SELECT RELEASE_LOCK(?) AS released', [name])) as [
          { released: number | string | null }[],
        ];
        const answer = released[0]?.released ?? null;
        if (Number(answer) !== 1)
          warn(
            { lock: name, released: answer },
            `the named lock ${name} was no longer this session's at release: its session was lost, and another instance may have held it during the work`,
          );
      } catch (error) {
        warn(
          { err: error, lock: name },
          `releasing the named lock ${name} failed after the work (the session's end releases it)`,
        );
      }
    });
  } catch (error) {
    if (done.outcome === undefined) throw failed(error);
    warn(
      { err: error, lock: name },
      `the transaction holding the named lock ${name} failed after the work; the work's answer stands`,
    );
  }
  if ('error' in done.outcome!) throw done.outcome.error;
  return (done.outcome as { value: T }).value;
}

/**
 * Named locks held on a pool of connections of their own (`knex`, at most `size` connections),
 * apart from the store's queries: a turn waiting in GET_LOCK, or holding the lock while its work
 * runs, pins one of these, never one its work or the instance's transfers need. At most `size`
 * locks are asked for at once; more wait here, in arrival order, until their deadline, so the
 * pool's own acquire never waits for a connection another lock holds (only for a connect, bounded
 * by its connect timeout), and no wait outlasts the turn's deadline by more than that.
 */
export class NamedLockPool {
  private free: number;
  private readonly waiting: { resolve: () => void; timer: NodeJS.Timeout }[] = [];

  constructor(
    private readonly knex: Knex,
    readonly size: number,
  ) {
    this.free = size;
  }

  /**
   * withNamedLock on this pool, once a connection of it is this lock's, by `deadline` (epoch ms).
   */
  async run<T>(
    lock: { name: string; deadline: number } & LockFailures,
    work: () => Promise<T>,
  ): Promise<T> {
    const { name, deadline, failed = (error: unknown) => error, warn } = lock;
    if (!(await this.slot(deadline))) {
      throw failed(new LockTimeoutError(name, 0));
    }
    try {
      return await withNamedLock(this.knex, { name, wait: { deadline }, failed, warn }, work);
    } finally {
      this.release();
    }
  }

  /** Closes the pool's connections (releasing any lock still held on them). */
  close(): Promise<void> {
    return this.knex.destroy();
  }

  /**
   * Waits for one of the pool's connections to be this caller's: false once the deadline passed.
   */
  private slot(deadline: number): Promise<boolean> {
    if (this.free > 0 && this.waiting.length === 0) {
      this.free--;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve) => {
      const waiter = {
        resolve: () => {
          clearTimeout(waiter.timer);
          resolve(true);
        },
        timer: setTimeout(
          () => {
            this.waiting.splice(this.waiting.indexOf(waiter), 1);
            resolve(false);
          },
          Math.max(0, deadline - Date.now()),
        ),
      };
      this.waiting.push(waiter);
    });
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next === undefined) this.free++;
    else next.resolve();
  }
}
