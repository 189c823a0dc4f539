/**
 * Serialises read-modify-write sequences per key (a participant's metadata) inside one process.
 * Money needs no lock: every amount changes atomically inside the ledger.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** Whether work for `key` is running or queued: a new run would wait. */
  held(key: string): boolean {
    return this.tails.has(key);
  }

  /**
   * Runs `work` once every earlier run for `key` ended. With `wait`, gives up waiting at
   * `wait.deadline` (epoch ms) and rejects with `wait.expired()` without running the work; its
   * place in the queue passes on only once the run before it ends, so none behind it jumps ahead.
   */
  async run<T>(
    key: string,
    work: () => Promise<T>,
    wait?: { deadline: number; expired: () => unknown },
  ): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => current);
    this.tails.set(key, tail);
    const done = (): void => {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    if (wait === undefined) {
      await previous;
    } else if (!(await turnBy(previous, wait.deadline))) {
      void previous.then(done);
      throw wait.expired();
    }
    try {
      return await work();
    } finally {
      done();
    }
  }
}

/** Whether `previous` settled by `deadline` (epoch ms). */
async function turnBy(previous: Promise<void>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>(
    (resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()))),
  );
  try {
    return await Promise.race([previous.then(() => true as const), expired]);
  } finally {
    clearTimeout(timer);
  }
}
