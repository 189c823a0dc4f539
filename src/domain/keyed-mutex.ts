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

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => current);
    this.tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
