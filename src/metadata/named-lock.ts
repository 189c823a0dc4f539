/**
 * MySQL named locks (GET_LOCK), the one cross-instance lock of the MySQL store: migrations at
 * start and each settlement's changes queue on one. A lock belongs to the session that took it,
 * so it is held on one pool connection, pinned by a transaction that runs nothing else, while
 * the work runs its own queries on other connections. MySQL releases it when that session ends:
 * an instance that dies (its connections closed by the kernel, or dropped by the server once they
 * go silent) never keeps one.
 */
import type { Knex } from 'knex';

/** GET_LOCK did not grant the lock within its timeout: another session held it all along. */
export class LockTimeoutError extends Error {
  constructor(name: string, timeoutSeconds: number) {
    super(`the lock ${name} was held elsewhere for ${timeoutSeconds} s`);
    this.name = 'LockTimeoutError';
  }
}

/** Where the lock's own failures after the work are told: they change no answer, so they must be seen. */
export type LockWarn = (fields: Record<string, unknown>, message: string) => void;

const stderrWarn: LockWarn = (fields, message) => {
  process.stderr.write(`${JSON.stringify({ level: 'warn', ...fields, err: fields.err instanceof Error ? fields.err.message : fields.err, msg: message })}\n`);
};

/**
 * Runs `work` holding the named lock, waiting for it at most `timeoutSeconds`. The work's
 * result or error is the answer: errors of the lock before the work (LockTimeoutError, a lost
 * connection) go through `failed`; once the work ran, a release that fails or finds the lock not
 * ours (RELEASE_LOCK ≠ 1: the session was lost, another session may have held the lock during
 * the work) or a failed commit of the pinning transaction is told to `warn`, loudly, and changes
 * nothing: the change was made (the session's end releases the lock anyway).
 */
export async function withNamedLock<T>(knex: Knex, name: string, timeoutSeconds: number, work: () => Promise<T>, failed: (error: unknown) => unknown = (error) => error, warn: LockWarn = stderrWarn): Promise<T> {
  const done: { outcome?: { value: T } | { error: unknown } } = {};
  try {
    await knex.transaction(async (session) => {
      const [rows] = (await session.raw('SELECT GET_LOCK(?, ?) AS acquired', [name, timeoutSeconds])) as [{ acquired: number | string | null }[]];
      // 0: timed out; NULL: an error (the wait was killed). Either way not ours.
      if (Number(rows[0]?.acquired) !== 1) throw new LockTimeoutError(name, timeoutSeconds);
      try {
        done.outcome = { value: await work() };
      } catch (error) {
        done.outcome = { error };
      }
      try {
        const [released] = (await session.raw('SELECT RELEASE_LOCK(?) AS released', [name])) as [{ released: number | string | null }[]];
        const answer = released[0]?.released ?? null;
        if (Number(answer) !== 1) warn({ lock: name, released: answer }, `the named lock ${name} was no longer this session's at release: its session was lost, and another instance may have held it during the work`);
      } catch (error) {
        warn({ err: error, lock: name }, `releasing the named lock ${name} failed after the work (the session's end releases it)`);
      }
    });
  } catch (error) {
    if (done.outcome === undefined) throw failed(error);
    warn({ err: error, lock: name }, `the transaction holding the named lock ${name} failed after the work; the work's answer stands`);
  }
  if ('error' in done.outcome!) throw done.outcome.error;
  return (done.outcome as { value: T }).value;
}
