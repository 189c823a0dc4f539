/**
 * Pipelined partition batches. kafkajs fetches again only once every batch of the last fetch is
 * handled, so a handler that waited for the ledger and the produce would leave the messages that
 * arrive meanwhile waiting a whole round. Instead a chunk's work is started and the handler
 * returns; the partition's "lane" commits each chunk's offset once that chunk and every earlier
 * one of the partition have succeeded (their effects are in the ledger and their notifications
 * produced). The first failure in a lane stops its commits and rewinds the partition to that
 * chunk: it is delivered again (handling is idempotent), later chunks with it.
 *
 * At most `maxMessagesInFlight` messages are being handled at once: the handler waits for room,
 * which holds kafkajs's next fetch back.
 */
export interface LaneHooks {
  /** Queues the commit of `offset` (the next one to read) for the partition. */
  commit(topic: string, partition: number, offset: string): void;
  /** Has the partition delivered again from `offset`, after `error` there. */
  rewind(topic: string, partition: number, offset: string, error: unknown): Promise<void>;
}

interface Lane {
  /** Settles when every chunk started so far has: rejected from the first failure on. */
  tail: Promise<void>;
  /** Bumped by a rewind: what an earlier generation finishes afterwards commits nothing. */
  generation: number;
  rewinding: boolean;
}

export class PartitionLanes {
  private readonly lanes = new Map<string, Lane>();
  private readonly rewinds = new Set<Promise<void>>();
  private messagesInFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly maxMessagesInFlight: number,
    private readonly hooks: LaneHooks,
  ) {
    if (!(maxMessagesInFlight >= 1)) throw new Error(`maxMessagesInFlight must be ≥ 1, not ${maxMessagesInFlight}`);
  }

  /** Whether the partition awaits its rewind: batches fetched meanwhile are to be dropped. */
  rewinding(topic: string, partition: number): boolean {
    return this.lanes.get(`${topic}:${partition}`)?.rewinding === true;
  }

  /**
   * Starts `work` for `count` messages of a partition, offsets `first`..`last`, once there is
   * room; resolves true when it has started, false when the partition was rewound meanwhile
   * (the messages will come again: the caller drops its batch).
   */
  async start(topic: string, partition: number, first: string, last: string, count: number, work: () => Promise<void>): Promise<boolean> {
    const key = `${topic}:${partition}`;
    let lane = this.lanes.get(key);
    if (lane === undefined) {
      lane = { tail: Promise.resolve(), generation: 0, rewinding: false };
      this.lanes.set(key, lane);
    }
    const { generation } = lane;
    while (this.messagesInFlight > 0 && this.messagesInFlight + count > this.maxMessagesInFlight) await new Promise<void>((resolve) => this.waiting.push(resolve));
    if (lane.rewinding || lane.generation !== generation) return false;
    this.messagesInFlight += count;
    const done = work();
    const release = (): void => {
      this.messagesInFlight -= count;
      for (const wake of this.waiting.splice(0)) wake();
    };
    done.then(release, release);
    const current = lane;
    current.tail = current.tail
      .then(() => done)
      .then(() => {
        if (current.generation === generation) this.hooks.commit(topic, partition, (BigInt(last) + 1n).toString());
      });
    // Tails reject in offset order, so the first to reach here is the earliest failed chunk.
    current.tail.catch((error: unknown) => {
      if (current.generation !== generation || current.rewinding) return;
      current.rewinding = true;
      const rewind = this.hooks
        .rewind(topic, partition, first, error)
        .catch(() => undefined)
        .finally(() => {
          current.generation++;
          current.tail = Promise.resolve();
          current.rewinding = false;
          this.rewinds.delete(rewind);
        });
      this.rewinds.add(rewind);
    });
    return true;
  }

  /** Resolves once the work started so far, and any rewind it caused, has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.lanes.values()].map((lane) => lane.tail));
    await Promise.allSettled([...this.rewinds]);
  }
}
