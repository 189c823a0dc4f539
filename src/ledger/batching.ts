/**
 * Coalesces the commands of concurrent callers into ledger batches.
 *
 * A batch goes out as soon as the ledger has a free slot (at most `maxInFlight` batches are
 * outstanding) and holds at most `maxBatchCommands`; while every slot is busy, arrivals queue up
 * and form the next batch, so batches grow with load and a lone request is not delayed beyond
 * the optional `lingerMs`. Every wait is bounded: the TigerBeetle client retries forever, so a
 * caller gives up after `timeoutMs` with LedgerUnavailableError. That leaves the outcome
 * unknown, never doubled: every command carries its id, and the caller's retry is idempotent.
 */
import type { AccountRef, Ledger, LedgerCommand, LedgerOutcome, LedgerTransferState, ParticipantBalance } from './ledger';

export interface BatchingOptions {
  /** Commands per ledger request; a prepare is 2 TigerBeetle events, so 4,000 fit TigerBeetle's 8,189. */
  maxBatchCommands: number;
  maxInFlight: number;
  /** How long a non-full batch may wait for company when a slot is free; 0 sends on the next tick. */
  lingerMs: number;
  /** Commands queued and not yet sent, beyond which callers are refused at once. */
  maxQueuedCommands: number;
  /** Bound on any one caller's wait for the ledger. */
  timeoutMs: number;
}

export class LedgerUnavailableError extends Error {
  constructor(reason: string) {
    super(`ledger unavailable: ${reason}`);
    this.name = 'LedgerUnavailableError';
  }
}

interface Unit {
  commands: readonly LedgerCommand[];
  resolve: (outcomes: LedgerOutcome[]) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
  settled: boolean;
}

export interface BatchStats {
  batches: number;
  commands: number;
  maxBatchCommands: number;
  totalLatencyMs: number;
  maxLatencyMs: number;
  failedBatches: number;
  timeouts: number;
}

export class BatchingLedger implements Ledger {
  readonly name: Ledger['name'];
  private queue: Unit[] = [];
  private queuedCommands = 0;
  private inFlight = 0;
  private scheduled: { cancel: () => void; lingering: boolean } | undefined;
  private readonly statsNow: BatchStats = { batches: 0, commands: 0, maxBatchCommands: 0, totalLatencyMs: 0, maxLatencyMs: 0, failedBatches: 0, timeouts: 0 };
  /** Observers of each batch (metrics): size in commands and latency in ms. */
  readonly batchObservers: ((commands: number, latencyMs: number) => void)[] = [];

  constructor(
    private readonly inner: Ledger,
    private readonly options: BatchingOptions,
  ) {
    if (options.maxBatchCommands < 1 || options.maxInFlight < 1 || options.timeoutMs <= 0 || options.lingerMs < 0) {
      throw new Error('batching limits must be positive');
    }
    this.name = inner.name;
  }

  stats(): BatchStats {
    return { ...this.statsNow };
  }

  execute(commands: readonly LedgerCommand[]): Promise<LedgerOutcome[]> {
    if (commands.length === 0) return Promise.resolve([]);
    if (commands.length > this.options.maxBatchCommands) {
      return Promise.reject(new Error(`${commands.length} commands exceed the batch limit ${this.options.maxBatchCommands}`));
    }
    if (this.queuedCommands + commands.length > this.options.maxQueuedCommands) {
      return Promise.reject(new LedgerUnavailableError(`more than ${this.options.maxQueuedCommands} commands queued`));
    }
    return new Promise<LedgerOutcome[]>((resolve, reject) => {
      const unit: Unit = {
        commands,
        resolve,
        reject,
        settled: false,
        timer: setTimeout(() => {
          if (unit.settled) return;
          unit.settled = true;
          this.statsNow.timeouts++;
          // Still queued: drop it so it is never sent. Already sent: its outcome is unknown.
          const position = this.queue.indexOf(unit);
          if (position >= 0) {
            this.queue.splice(position, 1);
            this.queuedCommands -= unit.commands.length;
          }
          reject(new LedgerUnavailableError(`no answer within ${this.options.timeoutMs} ms`));
        }, this.options.timeoutMs),
      };
      this.queue.push(unit);
      this.queuedCommands += commands.length;
      this.schedule();
    });
  }

  balances(refs: readonly AccountRef[]): Promise<(ParticipantBalance | undefined)[]> {
    return this.bounded(this.inner.balances(refs));
  }

  transferStates(ids: readonly bigint[]): Promise<LedgerTransferState[]> {
    return this.bounded(this.inner.transferStates(ids));
  }

  async close(): Promise<void> {
    this.scheduled?.cancel();
    this.scheduled = undefined;
    for (const unit of this.queue.splice(0)) this.settle(unit, new LedgerUnavailableError('ledger closed'));
    this.queuedCommands = 0;
    await this.inner.close();
  }

  private schedule(): void {
    if (this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return;
    const full = this.queuedCommands >= this.options.maxBatchCommands;
    // A batch that fills up while lingering goes out at once.
    if (this.scheduled?.lingering === true && full) {
      this.scheduled.cancel();
      this.scheduled = undefined;
    }
    if (this.scheduled !== undefined) return;
    const fire = (): void => {
      this.scheduled = undefined;
      this.flush();
    };
    if (full || this.options.lingerMs === 0) {
      const immediate = setImmediate(fire);
      this.scheduled = { cancel: () => clearImmediate(immediate), lingering: false };
    } else {
      const timer = setTimeout(fire, this.options.lingerMs);
      this.scheduled = { cancel: () => clearTimeout(timer), lingering: true };
    }
  }

  private flush(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const units: Unit[] = [];
      let size = 0;
      while (this.queue.length > 0 && size + this.queue[0]!.commands.length <= this.options.maxBatchCommands) {
        const unit = this.queue.shift()!;
        size += unit.commands.length;
        units.push(unit);
      }
      this.queuedCommands -= size;
      void this.send(units, size);
    }
  }

  private async send(units: Unit[], size: number): Promise<void> {
    this.inFlight++;
    const started = performance.now();
    try {
      const outcomes = await this.inner.execute(units.flatMap((u) => u.commands));
      if (outcomes.length !== size) throw new Error(`ledger answered ${outcomes.length} outcomes for ${size} commands`);
      let offset = 0;
      for (const unit of units) {
        this.settle(unit, outcomes.slice(offset, offset + unit.commands.length));
        offset += unit.commands.length;
      }
    } catch (error) {
      this.statsNow.failedBatches++;
      for (const unit of units) this.settle(unit, error instanceof Error ? error : new Error(String(error)));
    } finally {
      const latencyMs = performance.now() - started;
      this.statsNow.batches++;
      this.statsNow.commands += size;
      this.statsNow.maxBatchCommands = Math.max(this.statsNow.maxBatchCommands, size);
      this.statsNow.totalLatencyMs += latencyMs;
      this.statsNow.maxLatencyMs = Math.max(this.statsNow.maxLatencyMs, latencyMs);
      for (const observe of this.batchObservers) observe(size, latencyMs);
      this.inFlight--;
      this.schedule();
    }
  }

  private settle(unit: Unit, result: LedgerOutcome[] | Error): void {
    clearTimeout(unit.timer);
    if (unit.settled) return;
    unit.settled = true;
    if (result instanceof Error) unit.reject(result);
    else unit.resolve(result);
  }

  private bounded<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new LedgerUnavailableError(`no answer within ${this.options.timeoutMs} ms`)), this.options.timeoutMs);
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
}
