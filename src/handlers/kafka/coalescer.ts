/**
 * Joins the requests of concurrent callers into one: the notifications of every partition batch
 * being handled go to the broker in one produce request, their offsets in one commit. One request
 * is in flight at a time; what arrives meanwhile waits and goes out together next (as the ledger
 * batcher does), the first of a quiet spell after `lingerMs`, and none sooner than `intervalMs`
 * after the previous one started unless a request's worth is waiting. A caller's promise settles
 * when every request holding one of its items has: rejected if any failed, so that it commits
 * nothing.
 */
export interface CoalescerLimits {
  /** Items per request. */
  maxItems: number;
  /** Bytes (as `sizeOf` counts them) per request; an item larger alone goes alone. */
  maxBytes: number;
  /**
   * How long the first item of an idle coalescer waits for company (0: the current turn of the
   * event loop).
   */
  lingerMs: number;
  /**
   * The least time between the starts of two requests (0: none), waived when a full request
   * (`maxItems` or `maxBytes`) is waiting or when drained() is asked for.
   */
  intervalMs?: number;
}

interface Group<T> {
  items: T[];
  bytes: number;
  settled: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class Coalescer<T> {
  private readonly waiting: Group<T>[] = [];
  /** The group in flight, if any. */
  private sending: Group<T> | undefined;
  /** Set while the first group waits out its linger. */
  private lingering: { cancel(): void } | undefined;
  /** performance.now() when the last request started. */
  private lastStart = -Infinity;
  /** Requests asked for by drained() and not yet started: they wait for no interval. */
  private hurried = 0;

  constructor(
    private readonly limits: CoalescerLimits,
    private readonly sizeOf: (item: T) => number,
    private readonly send: (items: T[]) => Promise<void>,
  ) {
    // Stated positively so that NaN, which compares false, is refused too.
    const valid =
      limits.maxItems >= 1 &&
      limits.maxBytes >= 1 &&
      limits.lingerMs >= 0 &&
      (limits.intervalMs ?? 0) >= 0;
    if (!valid) throw new Error(`invalid coalescer limits ${JSON.stringify(limits)}`);
  }

  /** Resolves once every item is sent; rejects if the request holding any of them failed. */
  add(items: readonly T[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    const groups = new Set<Group<T>>();
    for (const item of items) {
      const bytes = this.sizeOf(item);
      let group = this.waiting[this.waiting.length - 1];
      if (
        group === undefined ||
        group.items.length >= this.limits.maxItems ||
        (group.items.length > 0 && group.bytes + bytes > this.limits.maxBytes)
      ) {
        group = newGroup<T>();
        this.waiting.push(group);
      }
      group.items.push(item);
      group.bytes += bytes;
      groups.add(group);
    }
    this.schedule();
    return Promise.all([...groups].map((g) => g.settled)).then(() => undefined);
  }

  /** Resolves once everything added so far is sent (or failed). */
  async drained(): Promise<void> {
    // Nothing waits out its interval: a stop needs what was added sent now.
    this.hurried = this.waiting.length;
    if (this.sending === undefined) this.flush();
    const last = this.waiting[this.waiting.length - 1] ?? this.sending;
    await last?.settled.catch(() => undefined);
  }

  private schedule(): void {
    if (this.sending !== undefined || this.waiting.length === 0) return;
    // A full request need not wait for company.
    if (this.waiting.length > 1) return this.flush();
    if (this.lingering !== undefined) return;
    const wait = Math.max(
      this.limits.lingerMs,
      this.lastStart + (this.limits.intervalMs ?? 0) - performance.now(),
    );
    if (wait <= 0) {
      const immediate = setImmediate(() => this.flush());
      this.lingering = { cancel: () => clearImmediate(immediate) };
    } else {
      const timer = setTimeout(() => this.flush(), wait);
      this.lingering = { cancel: () => clearTimeout(timer) };
    }
  }

  private flush(): void {
    this.lingering?.cancel();
    this.lingering = undefined;
    if (this.sending !== undefined) return;
    const group = this.waiting.shift();
    if (group === undefined) return;
    this.sending = group;
    this.lastStart = performance.now();
    this.hurried = Math.max(0, this.hurried - 1);
    this.send(group.items)
      .then(group.resolve, group.reject)
      .finally(() => {
        this.sending = undefined;
        // What came meanwhile has waited long enough, unless the interval says otherwise.
        if (this.hurried > 0 || this.waiting.length > 1 || (this.limits.intervalMs ?? 0) === 0)
          this.flush();
        else this.schedule();
      });
  }
}

function newGroup<T>(): Group<T> {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const settled = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A rejection is the callers' to handle; a group without a caller left must not crash the
  // process.
  settled.catch(() => undefined);
  return { items: [], bytes: 0, settled, resolve, reject };
}
