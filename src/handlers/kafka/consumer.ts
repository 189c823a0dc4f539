/**
 * The consumer of the transfer topics: its lifecycle (subscribe, run, a crash it does not recover
 * from, a stop that leaves nothing to redeliver) and its offsets, committed once a chunk's
 * answers are produced. A chunk never keeps it silent to its group (heartbeats while it waits).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  Consumer,
  EachBatchPayload,
  Kafka,
  KafkaMessage,
  TopicPartitionOffsetAndMetadata,
} from 'kafkajs';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config/config';
import { FinishPendingError } from '../../domain/open-records/finish-elsewhere';
import { Coalescer } from './coalescer';

/**
 * Chunks per offset commit: a commit names each partition once (the coalescer merges them), so
 * this only bounds the list a commit is merged from; KAFKA_COMMIT_MAX_MESSAGES bounds it first.
 */
const MAX_COMMIT_CHUNKS = 100_000;
/** The pause before a chunk left undecided (FinishPendingError) is handed over again. */
export const PENDING_RETRY_MS = 250;

/** Up to KAFKA_BATCH_MAX_MESSAGES messages of one partition, in offset order. */
export interface Chunk {
  topic: string;
  partition: number;
  messages: KafkaMessage[];
}

/**
 * A chunk's next offset, to commit, and how many messages it held (what a crash would redeliver).
 */
interface ChunkDone {
  offset: TopicPartitionOffsetAndMetadata;
  messages: number;
}

export interface TransferConsumerOptions {
  config: Config['kafka'];
  /** The client (its client id) and the consumer group of this consumer. */
  kafka: Pick<Kafka, 'consumer'>;
  groupId: string;
  /** The transfer topics it consumes: those of the group (Config['kafka']['consumers']). */
  topics: string[];
  log: FastifyBaseLogger;
  /** Answers a chunk: resolves once its answers are produced, so that it may be committed. */
  handleChunk: (chunk: Chunk) => Promise<void>;
  /**
   * Topics whose chunks handleChunk commits itself, with their answers (transactions.ts): the
   * consumer commits none of their offsets.
   */
  committedWithAnswers?: ReadonlySet<string>;
}

export class TransferConsumer {
  private readonly consumer: Consumer;
  private readonly commits: Coalescer<ChunkDone>;
  private readonly config: Config['kafka'];
  private readonly topics: string[];
  private readonly log: FastifyBaseLogger;
  private readonly handleChunk: (chunk: Chunk) => Promise<void>;
  private readonly committedWithAnswers: ReadonlySet<string>;
  /** The eachBatch calls under way: a stop lets them finish before kafkajs stops taking commits. */
  private readonly underway = new Set<Promise<void>>();
  /** Set once stop() began: what is handed over from then on is left to be delivered again. */
  private stopping = false;
  /**
   * Why the consumer stopped for good, if it did: /health reports the broker DOWN, /live the fault.
   */
  private crashed: string | undefined;

  constructor(options: TransferConsumerOptions) {
    const { config, kafka, groupId, topics, log, handleChunk } = options;
    this.config = config;
    this.topics = topics;
    this.log = log;
    this.handleChunk = handleChunk;
    this.committedWithAnswers = options.committedWithAnswers ?? new Set();
    const { consume } = config;
    this.consumer = kafka.consumer({
      groupId,
      maxBytesPerPartition: consume.fetchMaxBytesPerPartition,
      maxBytes: consume.fetchMaxBytes,
      minBytes: consume.fetchMinBytes,
      maxWaitTimeInMs: consume.fetchMaxWaitMs,
      sessionTimeout: config.sessionTimeoutMs,
      heartbeatInterval: config.heartbeatIntervalMs,
    });
    // At most one commit per KAFKA_COMMIT_INTERVAL_MS (sooner with KAFKA_COMMIT_MAX_MESSAGES
    // waiting): each costs the service and the group coordinator a request.
    this.commits = new Coalescer(
      {
        maxItems: MAX_COMMIT_CHUNKS,
        maxBytes: consume.commitMaxMessages,
        lingerMs: 0,
        intervalMs: consume.commitIntervalMs,
      },
      (chunk) => chunk.messages,
      (chunks) => this.consumer.commitOffsets(latestPerPartition(chunks.map((c) => c.offset))),
    );
  }

  connect(): Promise<void> {
    return this.consumer.connect();
  }

  /** Subscribes to the transfer topics and hands their batches over, until stop(). */
  async start(): Promise<void> {
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      if (payload.restart) return;
      this.crashed = payload.error.message;
      this.log.error(
        { err: payload.error },
        'Kafka consumer stopped for good: no more messages are handled',
      );
    });
    // Partitions may move to another instance: what waits for its commit interval goes now, so that
    // little is delivered there again.
    this.consumer.on(this.consumer.events.REBALANCING, () => void this.settled());
    // A new group skips nothing produced before it joined; on a Kafka central-ledger used, its
    // offsets are set first (docs/kafka.md).
    await this.consumer.subscribe({ topics: this.topics, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.config.consume.partitionsConcurrently,
      eachBatch: (payload) => {
        const handled = this.handleBatch(payload).finally(() => this.underway.delete(handled));
        this.underway.add(handled);
        return handled;
      },
    });
  }

  async stop(): Promise<void> {
    // The batches under way finish, then their commits land: a clean stop leaves nothing to
    // redeliver. All of it before consumer.stop(): from then on kafkajs drops a commit without a
    // word (runner.commitOffsets while not running) and refuses one once it left the group.
    this.stopping = true;
    try {
      // Nothing new is fetched meanwhile.
      this.consumer.pause(this.topics.map((topic) => ({ topic })));
    } catch (error) {
      // Not running (crashed, or between a crash and its restart): nothing is fetched anyway.
      this.log.debug({ err: error }, 'Kafka consumer not running at the stop');
    }
    await Promise.allSettled(this.underway);
    await this.settled();
    await this.consumer.stop();
    await this.consumer.disconnect();
  }

  /** Why the consumer stopped for good (only a restart resumes it), or undefined while it runs. */
  crashReason(): string | undefined {
    return this.crashed;
  }

  /** Resolves once the offset commits issued so far are sent (what stop waits for). */
  async settled(): Promise<void> {
    await this.commits.drained();
  }

  /**
   * One partition's batch, in chunks of at most KAFKA_BATCH_MAX_MESSAGES: a chunk's offsets are
   * committed once its notifications are produced. A failure throws before the commit, as a
   * RetryBatch, so kafkajs delivers the chunk again. The commit is not awaited: the partition's
   * next batch need not wait a round trip to the group coordinator, and commits of a
   * KAFKA_COMMIT_INTERVAL_MS go out as one. Commits go out in order, so a later one covers an
   * earlier that failed; if none lands before a crash, the chunk is delivered again (and answered
   * the same). The chunks of `committedWithAnswers` topics were committed by handleChunk, in the
   * transaction of their answers. A heartbeat that finds the group rebalancing throws out of here
   * (kafkajs rejoins).
   */
  private async handleBatch({
    batch,
    heartbeat,
    resolveOffset,
    isRunning,
    isStale,
  }: EachBatchPayload): Promise<void> {
    const { topic, partition } = batch;
    const limit = this.config.consume.batchMaxMessages;
    const handedOver = (): boolean => isRunning() && !isStale() && !this.stopping;
    for (let start = 0; start < batch.messages.length; start += limit) {
      if (!handedOver()) return;
      const messages = batch.messages.slice(start, start + limit);
      const answered = await this.answerChunk(
        { topic, partition, messages },
        heartbeat,
        handedOver,
      );
      if (!answered) return;
      if (!this.committedWithAnswers.has(topic)) this.commit(topic, partition, messages);
      // Moves this consumer's own position on; the commit is what survives a restart.
      resolveOffset(messages[messages.length - 1]!.offset);
      await heartbeat();
    }
  }

  /** Commits a chunk's offset, behind the batch (with others of the commit interval). */
  private commit(topic: string, partition: number, messages: KafkaMessage[]): void {
    const offset = nextOffsetOf(messages);
    this.commits
      .add([{ offset: { topic, partition, offset }, messages: messages.length }])
      .catch((error: unknown) => {
        this.log.warn(
          { err: error, topic, partition, offset },
          'Kafka offset commit failed; a later commit or a redelivery covers it',
        );
      });
  }

  /**
   * Answers a chunk, heartbeating while it is under way: its messages may wait for the ledger, the
   * store, or another instance's record (bounded per request, open-records/finish-elsewhere.ts),
   * and kafkajs heartbeats only between batches — a member silent for KAFKA_SESSION_TIMEOUT_MS is
   * dropped from the group, and its partitions move (a rebalance of every member). A chunk left
   * undecided (FinishPendingError: another instance's record of a finish may still land) is
   * handed over again, after a heartbeat, while the partition is still `handedOver` to this
   * consumer: thrown to kafkajs, its retries would end in a restart of the consumer, which leaves
   * and rejoins the group. Resolves false when the partition was given up meanwhile (nothing
   * answered: delivered again wherever it goes). Any other failure throws, as a RetryBatch.
   */
  private async answerChunk(
    chunk: Chunk,
    heartbeat: () => Promise<void>,
    handedOver: () => boolean,
  ): Promise<boolean> {
    for (;;) {
      try {
        await this.whileHeartbeating(this.handleChunk(chunk), heartbeat);
        return true;
      } catch (error) {
        if (!(error instanceof FinishPendingError)) throw new RetryBatch(error);
        this.log.info(
          { err: error, topic: chunk.topic, partition: chunk.partition },
          'Kafka chunk not decided yet: handed over again',
        );
      }
      await heartbeat();
      await sleep(PENDING_RETRY_MS);
      if (!handedOver()) return false;
    }
  }

  /**
   * `work`, with a heartbeat every half KAFKA_HEARTBEAT_INTERVAL_MS meanwhile (kafkajs sends one
   * once the interval has passed since its last). A failed one is left to the heartbeat after the
   * work, which meets the same answer (a rebalance) and throws it to kafkajs.
   */
  private async whileHeartbeating(work: Promise<void>, heartbeat: () => Promise<void>) {
    const beats = setInterval(() => {
      heartbeat().catch((error: unknown) =>
        this.log.debug({ err: error }, 'Kafka heartbeat during a chunk failed'),
      );
    }, this.config.heartbeatIntervalMs / 2);
    try {
      await work;
    } finally {
      clearInterval(beats);
    }
  }
}

/**
 * A chunk left unanswered, to be delivered again. kafkajs retries an error from eachBatch only if
 * it judges it retriable: a KafkaJSNonRetriableError of the producer (MESSAGE_TOO_LARGE, an
 * idempotent producer's OUT_OF_ORDER_SEQUENCE_NUMBER) or a TypeError would stop the consumer for
 * good, leaving every partition of this instance unconsumed until a restart.
 */
class RetryBatch extends Error {
  override name = 'RetryBatch';
  readonly retriable = true;

  constructor(cause: unknown) {
    super(
      `the batch is delivered again: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

/** The offset a commit of `messages` (of one partition, in order) moves their partition to. */
export function nextOffsetOf(messages: readonly KafkaMessage[]): string {
  return (BigInt(messages[messages.length - 1]!.offset) + 1n).toString();
}

/** Each partition's highest offset: a commit names a partition once. */
export function latestPerPartition(
  offsets: TopicPartitionOffsetAndMetadata[],
): TopicPartitionOffsetAndMetadata[] {
  const latest = new Map<string, TopicPartitionOffsetAndMetadata>();
  for (const entry of offsets) {
    const key = `${entry.topic}:${entry.partition}`;
    const known = latest.get(key);
    if (known === undefined || BigInt(entry.offset) > BigInt(known.offset)) latest.set(key, entry);
  }
  return [...latest.values()];
}
