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

/**
 * Runs `work` holding the named lock, waiting for it at most `timeoutSeconds`. Errors of the
 * work are passed on as they are; those of the lock itself (LockTimeoutError, a lost
 * connection) go through `failed` first.
 */
export async function withNamedLock<T>(knex: Knex, name: string, timeoutSeconds: number, work: () => Promise<T>, failed: (error: unknown) => unknown = (error) => error): Promise<T> {
  let fromWork: { error: unknown } | undefined;
  try {
    return await knex.transaction(async (session) => {
      const [rows] = (await session.raw('SELECT GET_LOCK(?, ?) AS acquired', [name, timeoutSeconds])) as [{ acquired: number | string | null }[]];
      // 0: timed out; NULL: an error (the wait was killed). Either way not ours.
      if (Number(rows[0]?.acquired) !== 1) throw new LockTimeoutError(name, timeoutSeconds);
      try {
        return await work();
      } catch (error) {
        fromWork = { error };
        throw error;
      } finally {
        await session.raw('SELECT RELEASE_LOCK(?)', [name]);
      }
    });
  } catch (error) {
    if (fromWork !== undefined && error === fromWork.error) throw error;
    throw failed(error);
  }
}
