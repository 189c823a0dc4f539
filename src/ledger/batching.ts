/**
 * The ledger behind a batch queue: the commands of concurrent callers go to the ledger together.
 * The TigerBeetle client retries forever, so every wait is bounded: a caller gives up after
 * `timeoutMs` with LedgerUnavailableError. That leaves the outcome unknown, never doubled: every
 * command carries its id, and the caller's retry is idempotent.
 */
import { BatchQueue, bounded, type BatchStats } from '../util/batch-queue';
import {
  LedgerUnavailableError,
  type AccountRef,
  type HubAccountRef,
  type Ledger,
  type LedgerCommand,
  type LedgerDeadline,
  type LedgerOutcome,
  type LedgerTransferState,
  type ParticipantBalance,
  type WindowNet,
} from '../ports/ledger';

export interface BatchingOptions {
  /**
   * Commands per ledger request; a command is at most MAX_EVENTS_PER_COMMAND (6) TigerBeetle
   * events, so 1,364 fit TigerBeetle's 8,189.
   */
  maxBatchCommands: number;
  maxInFlight: number;
  /**
   * The linger's floor (ms): how long the oldest command of a non-full batch may wait for company.
   */
  lingerMs: number;
  /**
   * The linger adapts between lingerMs and maxLingerMs (BatchQueue): TigerBeetle's replicas cost
   * more per request than per event, so under load fewer, fuller requests save their CPU. Absent
   * or equal to lingerMs: a fixed linger.
   */
  adaptive?: { maxLingerMs?: number; latencyBudgetMs: number; growAtCommands: number };
  /**
   * A lingering batch goes out once no command has arrived for this long (ms): callers in a
   * closed loop (an HTTP client, a Kafka chunk) that have all come wait no longer. And, the same
   * premise, it goes out at once when the callers the last batch answered have come back (with
   * those already waiting then), and is held up to this long after that answer for them. Unset:
   * the linger alone.
   */
  idleMs?: number;
  maxQueuedCommands: number;
  timeoutMs: number;
}

const unavailable = (reason: string): Error => new LedgerUnavailableError(reason);

export class BatchingLedger implements Ledger {
  readonly name: Ledger['name'];
  private readonly queue: BatchQueue<LedgerCommand, LedgerOutcome>;

  constructor(
    private readonly inner: Ledger,
    private readonly options: BatchingOptions,
  ) {
    this.name = inner.name;
    this.queue = new BatchQueue(
      (commands) => inner.execute(commands),
      {
        maxBatch: options.maxBatchCommands,
        maxInFlight: options.maxInFlight,
        lingerMs: options.lingerMs,
        ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }),
        // The idle close's premise, closed-loop callers, says more: those answered come back.
        returning: options.idleMs !== undefined,
        maxQueued: options.maxQueuedCommands,
        timeoutMs: options.timeoutMs,
        ...(options.adaptive?.maxLingerMs === undefined ||
        options.adaptive.maxLingerMs === options.lingerMs
          ? {}
          : {
              adaptive: {
                maxLingerMs: options.adaptive.maxLingerMs,
                latencyBudgetMs: options.adaptive.latencyBudgetMs,
                growAtItems: options.adaptive.growAtCommands,
              },
            }),
      },
      unavailable,
    );
  }

  /**
   * Observers of each ledger batch (metrics): size in commands, round trip and its oldest command's
   * wait in the queue, in ms.
   */
  get batchObservers(): ((commands: number, latencyMs: number, oldestWaitMs: number) => void)[] {
    return this.queue.batchObservers;
  }

  stats(): BatchStats {
    return this.queue.stats();
  }

  execute(commands: readonly LedgerCommand[], deadline?: LedgerDeadline): Promise<LedgerOutcome[]> {
    return this.queue.submit(commands, deadline);
  }

  balances(refs: readonly AccountRef[]): Promise<(ParticipantBalance | undefined)[]> {
    return this.boundedCall(() => this.inner.balances(refs));
  }

  hubBalances(refs: readonly HubAccountRef[]): Promise<bigint[]> {
    return this.boundedCall(() => this.inner.hubBalances(refs));
  }

  transferStates(
    ids: readonly bigint[],
    deadline?: LedgerDeadline,
  ): Promise<LedgerTransferState[]> {
    return this.boundedCall(() => this.inner.transferStates(ids), deadline);
  }

  finishedAt(ids: readonly bigint[], deadline?: LedgerDeadline): Promise<(number | undefined)[]> {
    return this.boundedCall(() => this.inner.finishedAt(ids), deadline);
  }

  positionsAdjusted(ids: readonly bigint[]): Promise<boolean[]> {
    return this.boundedCall(() => this.inner.positionsAdjusted(ids));
  }

  windowNets(window: number, refs: readonly AccountRef[]): Promise<WindowNet[]> {
    return this.boundedCall(() => this.inner.windowNets(window, refs));
  }

  windowMoved(window: number, currencies: readonly string[]): Promise<boolean[]> {
    return this.boundedCall(() => this.inner.windowMoved(window, currencies));
  }

  grossSinceWindowClose(currencies: readonly string[]): Promise<boolean[]> {
    return this.boundedCall(() => this.inner.grossSinceWindowClose(currencies));
  }

  latestCutWindow(): Promise<number | undefined> {
    return this.boundedCall(() => this.inner.latestCutWindow());
  }

  identity(): Promise<bigint | undefined> {
    return this.boundedCall(() => this.inner.identity());
  }

  recordIdentity(identity: bigint): Promise<bigint> {
    return this.boundedCall(() => this.inner.recordIdentity(identity));
  }

  ledgerModel(): Promise<number | undefined> {
    return this.boundedCall(() => this.inner.ledgerModel());
  }

  recordLedgerModel(): Promise<number> {
    return this.boundedCall(() => this.inner.recordLedgerModel());
  }

  hubsOpened(currencies: readonly string[]): Promise<boolean[]> {
    return this.boundedCall(() => this.inner.hubsOpened(currencies));
  }

  /** A call bounded by LEDGER_TIMEOUT_MS or the caller's sooner deadline; past it, not asked. */
  private boundedCall<T>(ask: () => Promise<T>, deadline?: LedgerDeadline): Promise<T> {
    const leftMs =
      deadline === undefined
        ? this.options.timeoutMs
        : Math.min(this.options.timeoutMs, deadline - performance.now());
    if (leftMs <= 0) return Promise.reject(unavailable('no time left before the deadline'));
    return bounded(ask(), leftMs, unavailable);
  }

  lost(): string | undefined {
    return this.inner.lost?.();
  }

  async close(): Promise<void> {
    this.queue.close();
    await this.inner.close();
  }
}
