/**
 * Coalesces the items of concurrent callers into batches for one executor: the ledger, or the
 * metadata store.
 *
 * A batch goes out when the executor has a free slot (at most `maxInFlight` batches are
 * outstanding) and either it holds `maxBatch` items or its oldest item has waited the current
 * linger; while every slot is busy, arrivals queue up and form the next batch, so batches grow
 * with load. One caller's items are never split across batches (but for a caller with more than
 * `maxBatch`: see submitInChunks), a failed batch fails exactly its own callers, and every wait is
 * bounded by `timeoutMs`, or by the caller's own deadline where that comes sooner.
 *
 * The linger is `lingerMs`, or, with `adaptive`, a value between `lingerMs` and
 * `adaptive.maxLingerMs` learnt from the batches: under load (batches of `growAtItems` or more)
 * it grows by LINGER_STEP_MS per batch, so that requests to an executor that costs more per
 * request than per item go out fuller and fewer; it halves whenever a batch's oldest item waited
 * plus its round trip exceeded `latencyBudgetMs`, takes a step back after a batch of at least half
 * `growAtItems` (one smaller batch under load does not undo it), and falls back to `lingerMs` after
 * a smaller batch or a batch of one (light load: a lone caller is never held). With a `growAtItems`
 * above what few callers can fill, it never grows under light load, where holding a batch would
 * only make its callers wait (in a closed loop: cost throughput).
 *
 * With `idleMs` a lingering batch also goes out once no item has arrived for that long: its
 * callers are closed loops (a client awaiting its answer, a Kafka chunk awaiting all of its
 * messages' answers) that have all come, and the rest of the linger would only delay them. With
 * `returning` the same premise goes further: the callers a batch answered come back, so the next
 * batch goes out the moment they (and those that were already waiting) are all queued, and the idle
 * close counts from the answer, not only from the latest arrival: a few callers left over from the
 * batch before are not sent alone, a round trip ahead of the many about to come.
 */
export interface BatchQueueOptions {
  maxBatch: number;
  maxInFlight: number;
  /**
   * How long the oldest item of a non-full batch may wait for company while a slot is free; 0 sends
   * on the next tick. The floor of an adaptive linger.
   */
  lingerMs: number;
  /**
   * A lingering batch goes out once no item has arrived for this long (ms), whatever is left of
   * its linger; unset: the linger alone decides. At least TIMER_RESOLUTION_MS.
   */
  idleMs?: number;
  /**
   * Callers come back once answered (closed loops: an HTTP client, a Kafka chunk): a lingering
   * batch goes out as soon as the callers answered by the last batch, and those already waiting
   * then, are all queued again; and an idle close counts from that answer as from an arrival.
   */
  returning?: boolean;
  /** Items queued and not yet sent, beyond which callers are refused at once. */
  maxQueued: number;
  /** Bound on any one caller's wait. */
  timeoutMs: number;
  adaptive?: AdaptiveLingerOptions;
}

export interface AdaptiveLingerOptions {
  /** The linger never exceeds this (ms); at most `latencyBudgetMs`. */
  maxLingerMs: number;
  /**
   * Oldest item's wait in the queue + the batch's round trip (ms) above which the linger halves.
   */
  latencyBudgetMs: number;
  /**
   * A batch of at least this many items means load: the linger grows. From half of it a step back;
   * smaller (or a batch of one) resets it to `lingerMs`.
   */
  growAtItems: number;
}

/** How much the adaptive linger grows per batch at or above `growAtItems` (ms). */
export const LINGER_STEP_MS = 0.5;
/** Node's timers count whole milliseconds: a shorter wait is no wait. */
const TIMER_RESOLUTION_MS = 1;

export interface BatchStats {
  batches: number;
  items: number;
  maxBatch: number;
  totalLatencyMs: number;
  maxLatencyMs: number;
  failedBatches: number;
  timeouts: number;
  /** The linger now (ms): `lingerMs`, or where the adaptive linger stands. */
  lingerMs: number;
  /** Sum over batches of how long their oldest item waited in the queue (ms). */
  totalOldestWaitMs: number;
}

interface Unit<In, Out> {
  items: readonly In[];
  resolve: (outcomes: Out[]) => void;
  reject: (error: Error) => void;
  /** performance.now() when submitted. */
  arrived: number;
  /** performance.now() after which the caller is answered `unavailable`. */
  deadline: number;
  /** A deadline before `timeoutMs` (the caller's own): its timer, cleared once settled. */
  earlyTimer: NodeJS.Timeout | undefined;
  settled: boolean;
  /** Handed to the executor: no longer in the queue. */
  sent: boolean;
}

/**
 * A caller's own deadline sooner than `timeoutMs` by less than this is kept by the shared deadline
 * timer, at most this late; a sooner one arms a timer of its own. A request's first call comes a
 * fraction of a millisecond after its start, its deadline `timeoutMs` after that start: a timer
 * per call is what the shared one saves on the hot path.
 */
const DEADLINE_SLACK_MS = 50;

/** Settled units at the head of the deadline list beyond which it is compacted. */
const COMPACT_AFTER = 1024;

export class BatchQueue<In, Out> {
  private queue: Unit<In, Out>[] = [];
  private queued = 0;
  private inFlight = 0;
  private scheduled: { cancel: () => void; lingering: boolean } | undefined;
  /**
   * The units submitted, in submission order, which is deadline order (one timeout for all, a
   * caller's own sooner deadline within DEADLINE_SLACK_MS of it): a single timer for the earliest
   * unsettled deadline bounds every wait, instead of a timer per call on the hot path. Settled
   * units leave it lazily, from the head.
   */
  private readonly deadlines: Unit<In, Out>[] = [];
  private deadlinesHead = 0;
  private unsettled = 0;
  private expiryTimer: NodeJS.Timeout | undefined;
  private readonly statsNow: Omit<BatchStats, 'lingerMs'>;
  /**
   * With `returning`: the items queued once the callers the last batch answered have come back;
   * Infinity while none are expected (a batch is out, or none was answered yet).
   */
  private expectedItems = Infinity;
  /** performance.now() of the last answer: with `returning`, an idle close counts from it. */
  private answeredAt = -Infinity;
  /** The current linger (ms): options.lingerMs unless adaptive. */
  private lingerMs: number;
  /**
   * Observers of each batch (metrics): size in items, round trip and its oldest item's wait in the
   * queue, in ms.
   */
  readonly batchObservers: ((items: number, latencyMs: number, oldestWaitMs: number) => void)[] =
    [];

  /**
   * @param execute answers item i of a batch with outcome i. Its `deadline` (performance.now())
   * is the earliest of the batch's callers': by then each has been answered, so work on the batch
   * that could still take effect later must be over (a store's write cancelled, not left to land).
   * @param unavailable the error a caller gets when the queue is full, times out, or closes.
   */
  constructor(
    private readonly execute: (items: In[], deadline: number) => Promise<Out[]>,
    private readonly options: BatchQueueOptions,
    private readonly unavailable: (reason: string) => Error,
  ) {
    const limitsPositive =
      options.maxBatch >= 1 &&
      options.maxInFlight >= 1 &&
      options.timeoutMs > 0 &&
      options.lingerMs >= 0 &&
      (options.idleMs === undefined || options.idleMs >= TIMER_RESOLUTION_MS) &&
      options.maxQueued >= 1;
    if (!limitsPositive) throw new Error('batch queue limits must be positive');
    const adaptive = options.adaptive;
    const adaptiveInOrder =
      adaptive === undefined ||
      (adaptive.maxLingerMs >= options.lingerMs &&
        adaptive.latencyBudgetMs >= adaptive.maxLingerMs &&
        adaptive.growAtItems >= 1);
    if (!adaptiveInOrder) {
      throw new Error(
        'an adaptive linger needs lingerMs ≤ maxLingerMs ≤ latencyBudgetMs and growAtItems ≥ 1',
      );
    }
    this.lingerMs = options.lingerMs;
    this.statsNow = {
      batches: 0,
      items: 0,
      maxBatch: 0,
      totalLatencyMs: 0,
      maxLatencyMs: 0,
      failedBatches: 0,
      timeouts: 0,
      totalOldestWaitMs: 0,
    };
  }

  stats(): BatchStats {
    return { ...this.statsNow, lingerMs: this.lingerMs };
  }

  /**
   * @param deadline performance.now() by which the caller must be answered, where that comes
   * before `timeoutMs` (a request that waited already): then it is, `unavailable`, as a timeout.
   */
  submit(items: readonly In[], deadline = Infinity): Promise<Out[]> {
    if (items.length === 0) return Promise.resolve([]);
    if (items.length > this.options.maxBatch) return this.submitInChunks(items, deadline);
    if (this.queued + items.length > this.options.maxQueued)
      return Promise.reject(this.unavailable(`more than ${this.options.maxQueued} queued`));
    const now = performance.now();
    if (deadline <= now) {
      this.statsNow.timeouts++;
      return Promise.reject(this.unavailable('no time left before the deadline'));
    }
    return new Promise<Out[]>((resolve, reject) => {
      const unit: Unit<In, Out> = {
        items,
        resolve,
        reject,
        arrived: now,
        deadline: Math.min(deadline, now + this.options.timeoutMs),
        earlyTimer: undefined,
        settled: false,
        sent: false,
      };
      // Listed too, but the list is kept in submission order, `timeoutMs` after each: a deadline
      // much sooner needs a timer.
      if (deadline < now + this.options.timeoutMs - DEADLINE_SLACK_MS)
        unit.earlyTimer = setTimeout(() => this.expireEarly(unit), deadline - now);
      this.deadlines.push(unit);
      this.unsettled++;
      this.expiryTimer ??= setTimeout(() => this.expire(), this.options.timeoutMs);
      this.queue.push(unit);
      this.queued += items.length;
      this.schedule();
    });
  }

  /**
   * More items than one batch holds (a start-up opening every participant's accounts, a
   * settlement moving every account): batches of `maxBatch`, each sent once the one before is
   * answered, so the items are applied in order as if in one batch. A failure stops there: the
   * caller gets it, with the earlier chunks applied (each item atomic on its own, none doubled by
   * a retry). Every chunk waits in the queue as a caller of its own.
   */
  private async submitInChunks(items: readonly In[], deadline: number): Promise<Out[]> {
    const outcomes: Out[] = [];
    for (let start = 0; start < items.length; start += this.options.maxBatch) {
      const chunk = items.slice(start, start + this.options.maxBatch);
      outcomes.push(...(await this.submit(chunk, deadline)));
    }
    return outcomes;
  }

  /** Refuses every queued caller; batches already sent finish on their own. */
  close(): void {
    this.scheduled?.cancel();
    this.scheduled = undefined;
    for (const unit of this.queue.splice(0)) this.settle(unit, this.unavailable('closed'));
    this.queued = 0;
  }

  /**
   * Answers every caller past its deadline, then waits for the next deadline. Those still queued
   * leave the queue in one pass at the end: an outage can expire the whole queue at once, and a
   * search and a splice per caller would stall the event loop for seconds.
   */
  private expire(): void {
    this.expiryTimer = undefined;
    const now = performance.now();
    let dropped = 0;
    while (this.deadlinesHead < this.deadlines.length) {
      const unit = this.deadlines[this.deadlinesHead]!;
      if (!unit.settled && unit.deadline > now) break;
      this.deadlinesHead++;
      if (unit.settled) continue;
      this.statsNow.timeouts++;
      // Still queued: dropped below, so it is never sent. Already sent: its outcome is unknown.
      if (!unit.sent) {
        dropped++;
        this.queued -= unit.items.length;
      }
      this.settle(unit, this.unavailable(`no answer within ${this.options.timeoutMs} ms`));
    }
    // A queued unit is settled only here (close, send and expireEarly take it out of the queue).
    if (dropped > 0) this.queue = this.queue.filter((unit) => !unit.settled);
    this.compactDeadlines();
    const next = this.deadlines[this.deadlinesHead];
    if (next !== undefined)
      this.expiryTimer = setTimeout(() => this.expire(), Math.max(1, next.deadline - now));
  }

  /** A caller whose own deadline came before `timeoutMs`: answered as a timeout, if not yet. */
  private expireEarly(unit: Unit<In, Out>): void {
    if (unit.settled) return;
    this.statsNow.timeouts++;
    if (!unit.sent) {
      this.queue = this.queue.filter((queued) => queued !== unit);
      this.queued -= unit.items.length;
    }
    this.settle(unit, this.unavailable('no answer by the deadline'));
  }

  private compactDeadlines(): void {
    if (this.deadlinesHead === this.deadlines.length) {
      this.deadlines.length = 0;
      this.deadlinesHead = 0;
    } else if (
      this.deadlinesHead >= COMPACT_AFTER &&
      this.deadlinesHead * 2 >= this.deadlines.length
    ) {
      this.deadlines.splice(0, this.deadlinesHead);
      this.deadlinesHead = 0;
    }
  }

  private schedule(): void {
    if (this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return;
    // A batch that fills up, or whose callers have all come back, goes out at once.
    const full = this.queued >= this.options.maxBatch || this.queued >= this.expectedItems;
    if (this.scheduled?.lingering === true && full) {
      this.scheduled.cancel();
      this.scheduled = undefined;
    }
    if (this.scheduled !== undefined) return;
    const waitMs = full ? 0 : this.lingerLeftMs();
    if (waitMs <= 0) {
      const immediate = setImmediate(() => {
        this.scheduled = undefined;
        this.flush();
      });
      this.scheduled = { cancel: () => clearImmediate(immediate), lingering: false };
    } else this.linger(waitMs);
  }

  /**
   * How long the queued batch may still wait: the linger counts from the oldest item's arrival
   * (what it waited for a busy slot counts), an idle close from the latest's (the queue is in
   * arrival order).
   */
  private lingerLeftMs(): number {
    const now = performance.now();
    const lingerLeft = this.lingerMs - (now - this.queue[0]!.arrived);
    const idleMs = this.options.idleMs;
    return idleMs === undefined
      ? lingerLeft
      : Math.min(
          lingerLeft,
          idleMs - (now - Math.max(this.queue.at(-1)!.arrived, this.answeredAt)),
        );
  }

  /**
   * Holds the batch `waitMs`; then, where items arrived meanwhile and an idle close is on, as long
   * again as is left (no timer is moved per arrival).
   */
  private linger(waitMs: number): void {
    const timer = setTimeout(() => {
      this.scheduled = undefined;
      if (this.queue.length === 0) return;
      const leftMs = this.lingerLeftMs();
      if (leftMs < TIMER_RESOLUTION_MS) this.flush();
      else this.linger(leftMs);
    }, waitMs);
    this.scheduled = { cancel: () => clearTimeout(timer), lingering: true };
  }

  private flush(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      let size = 0;
      let count = 0;
      while (
        count < this.queue.length &&
        size + this.queue[count]!.items.length <= this.options.maxBatch
      )
        size += this.queue[count++]!.items.length;
      // One splice per batch: a shift per unit moves the whole of a long queue each time.
      const units = this.queue.splice(0, count);
      this.expectedItems = Infinity;
      for (const unit of units) unit.sent = true;
      this.queued -= size;
      void this.send(units, size);
    }
  }

  /** The adaptive linger's step after each batch (see the class comment). */
  private adapt(size: number, oldestWaitMs: number, latencyMs: number): void {
    const adaptive = this.options.adaptive;
    if (adaptive === undefined) return;
    // Halved below one step it is the floor: a residue of a fraction of a millisecond would still
    // turn the next send from setImmediate into a timer, which waits at least 1 ms.
    if (oldestWaitMs + latencyMs > adaptive.latencyBudgetMs)
      this.lingerMs =
        this.lingerMs / 2 < this.options.lingerMs + LINGER_STEP_MS
          ? this.options.lingerMs
          : this.lingerMs / 2;
    else if (size >= adaptive.growAtItems)
      this.lingerMs = Math.min(adaptive.maxLingerMs, this.lingerMs + LINGER_STEP_MS);
    // Between half of growAtItems and it, a step back: one smaller batch under load does not drop a
    // grown linger.
    else if (size > 1 && 2 * size >= adaptive.growAtItems)
      this.lingerMs = Math.max(this.options.lingerMs, this.lingerMs - LINGER_STEP_MS);
    else this.lingerMs = this.options.lingerMs;
  }

  private async send(units: Unit<In, Out>[], size: number): Promise<void> {
    this.inFlight++;
    const started = performance.now();
    const oldestWaitMs = started - units[0]!.arrived;
    // The earliest of the callers' deadlines (the first unit's, but for a caller's own sooner one).
    let deadline = units[0]!.deadline;
    for (const unit of units) deadline = Math.min(deadline, unit.deadline);
    try {
      const outcomes = await this.execute(
        units.flatMap((u) => u.items),
        deadline,
      );
      if (outcomes.length !== size)
        throw new Error(`executor answered ${outcomes.length} outcomes for ${size} items`);
      let offset = 0;
      for (const unit of units) {
        this.settle(unit, outcomes.slice(offset, offset + unit.items.length));
        offset += unit.items.length;
      }
    } catch (error) {
      this.statsNow.failedBatches++;
      for (const unit of units)
        this.settle(unit, error instanceof Error ? error : new Error(String(error)));
    } finally {
      const latencyMs = performance.now() - started;
      this.statsNow.batches++;
      this.statsNow.items += size;
      this.statsNow.maxBatch = Math.max(this.statsNow.maxBatch, size);
      this.statsNow.totalLatencyMs += latencyMs;
      this.statsNow.maxLatencyMs = Math.max(this.statsNow.maxLatencyMs, latencyMs);
      this.statsNow.totalOldestWaitMs += oldestWaitMs;
      for (const observe of this.batchObservers) observe(size, latencyMs, oldestWaitMs);
      this.adapt(size, oldestWaitMs, latencyMs);
      this.inFlight--;
      if (this.options.returning === true) {
        this.expectedItems = this.queued + size;
        this.answeredAt = performance.now();
      }
      this.schedule();
    }
  }

  private settle(unit: Unit<In, Out>, result: Out[] | Error): void {
    if (unit.settled) return;
    unit.settled = true;
    clearTimeout(unit.earlyTimer);
    if (--this.unsettled === 0) {
      // Nothing left to bound: no timer keeps the process alive, and the list starts afresh.
      clearTimeout(this.expiryTimer);
      this.expiryTimer = undefined;
      this.deadlines.length = 0;
      this.deadlinesHead = 0;
    } else if (this.deadlines[this.deadlinesHead] === unit) {
      this.dropSettledHead();
    }
    if (result instanceof Error) unit.reject(result);
    else unit.resolve(result);
  }

  /** Under steady load the list never empties: settled units at its head leave as they settle. */
  private dropSettledHead(): void {
    while (
      this.deadlinesHead < this.deadlines.length &&
      this.deadlines[this.deadlinesHead]!.settled
    )
      this.deadlinesHead++;
    this.compactDeadlines();
  }
}

/** Bounds a promise by `timeoutMs`, rejecting with `unavailable` when it runs out. */
export function bounded<T>(
  promise: Promise<T>,
  timeoutMs: number,
  unavailable: (reason: string) => Error,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(unavailable(`no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
