/**
 * Exactly-once answers for the bulk topics: each chunk's notifications and its consumed offsets go
 * to the broker in one Kafka transaction, committed together or not at all. bulk-api-adapter's
 * notification consumer (node-rdkafka, librdkafka's default isolation.level read_committed) reads
 * only committed notifications, so a chunk whose transaction a crash left open — its answers
 * written, its offsets not committed — is answered by its redelivery alone: every callback once.
 * Single transfers keep the transport's at-least-once path (producer.ts, consumer.ts).
 *
 * One transactional producer per consumer group that consumes bulk topics, its transactional id
 * `<instance>-<group>`: stable across the instance's restarts, so that the restarted one's start
 * (an empty transaction under the same id) fences the dead one and aborts its open transaction at
 * once; otherwise the broker aborts it after KAFKA_TRANSACTION_TIMEOUT_MS. Until then
 * read_committed readers (bulk-api-adapter, ml-api-adapter) read nothing past it on the
 * notification partitions it wrote to. The chunks of concurrent partition batches share a
 * transaction, as the at-least-once path shares produce requests (coalescer.ts); a chunk never
 * spans two.
 */
import type { Kafka, Producer, TopicOffsets } from 'kafkajs';
import type { Config } from '../../config/config';
import type { Fault } from '../../util/fault';
import { Coalescer } from './coalescer';
import { latestPerPartition, nextOffsetOf, type Chunk } from './consumer';
import type { MojaloopMessage } from './messages';

/** Chunks per transaction: bounds only the list their offsets are merged from. */
const MAX_TRANSACTION_CHUNKS = 10_000;

/** A chunk's answers, serialised, and the offset its commit moves its partition to. */
interface AnsweredChunk {
  messages: { key: string; value: string }[];
  bytes: number;
  offset: { topic: string; partition: number; offset: string };
}

export interface TransactionalAnswersOptions {
  kafka: Pick<Kafka, 'producer'>;
  /** `<instance>-<group>`: the same across a restart, no other running instance's. */
  transactionalId: string;
  /** The consumer group whose offsets the transactions commit. */
  groupId: string;
  config: Config['kafka'];
  fault: Fault;
}

export class TransactionalAnswers {
  private producer: Producer;
  /** The current producer's start (connect and fence); a failed one is tried again by a send. */
  private started: Promise<void> | undefined;
  private readonly chunks: Coalescer<AnsweredChunk>;
  private readonly options: TransactionalAnswersOptions;

  constructor(options: TransactionalAnswersOptions) {
    this.options = options;
    this.producer = this.newProducer();
    const { produce } = options.config;
    this.chunks = new Coalescer(
      { maxItems: MAX_TRANSACTION_CHUNKS, maxBytes: produce.maxBytes, lingerMs: produce.lingerMs },
      (chunk) => chunk.bytes,
      (chunks) => this.transact(chunks),
    );
  }

  /** Refuses to start, naming the way out, where the broker takes no transactions. */
  async connect(): Promise<void> {
    this.started = this.start(this.producer);
    try {
      await this.started;
    } catch (error) {
      throw new Error(
        `Kafka transactions unavailable (${String(error)}): the bulk topics' answers go out in ` +
          'transactions; give the broker a transaction state log it can host ' +
          '(transaction.state.log.replication.factor and min.isr within its brokers) or set ' +
          'KAFKA_BULK_EXACTLY_ONCE=false (at least once, as single transfers)',
        { cause: error },
      );
    }
  }

  async disconnect(): Promise<void> {
    await this.chunks.drained();
    await this.producer.disconnect();
  }

  /**
   * Produces `answers` on the notification topic and commits `chunk`'s offsets in the same
   * transaction. Resolves once it is committed; rejects if it is not (then neither is visible to
   * read_committed readers, and the chunk comes again).
   */
  async commit(answers: readonly MojaloopMessage[], chunk: Chunk): Promise<void> {
    const messages = answers.map((m) => ({ key: m.id, value: JSON.stringify(m) }));
    const { topic, partition } = chunk;
    await this.chunks.add([
      {
        messages,
        bytes: messages.reduce((n, m) => n + bytesOf(m), 0),
        offset: { topic, partition, offset: nextOffsetOf(chunk.messages) },
      },
    ]);
  }

  private async transact(chunks: AnsweredChunk[]): Promise<void> {
    const producer = this.producer;
    const { config, groupId, fault } = this.options;
    try {
      await this.started?.catch(() => (this.started = this.start(producer)));
      const transaction = await producer.transaction();
      for (const messages of requests(chunks, config.produce))
        await transaction.sendBatch({
          acks: -1,
          topicMessages: [{ topic: config.topics.notification, messages }],
        });
      await transaction.sendOffsets({
        consumerGroupId: groupId,
        topics: byTopic(latestPerPartition(chunks.map((c) => c.offset))),
      });
      fault('bulk-answers.before-commit');
      await transaction.commit();
    } catch (error) {
      // Whatever failed (the broker, a fencing, a timed-out transaction), a new producer takes
      // over: its start aborts the transaction left open, and the chunks come again.
      if (producer === this.producer) {
        this.producer = this.newProducer();
        this.started = this.start(this.producer);
        void producer.disconnect().catch(() => undefined);
      }
      throw error;
    }
  }

  /**
   * Connects `producer` and takes the transactional id's producer id (an empty transaction, ended
   * without a request): the broker aborts the transaction an earlier holder of the id left open.
   */
  private start(producer: Producer): Promise<void> {
    const started = producer.connect().then(async () => (await producer.transaction()).abort());
    // Awaited by the next transaction, which starts it again if it failed.
    started.catch(() => undefined);
    return started;
  }

  private newProducer(): Producer {
    const { kafka, transactionalId, config } = this.options;
    return kafka.producer({
      transactionalId,
      transactionTimeout: config.transactionTimeoutMs,
      idempotent: true,
      maxInFlightRequests: 1,
    });
  }
}

/**
 * The chunks' messages in produce requests of at most KAFKA_PRODUCE_MAX_MESSAGES /
 * KAFKA_PRODUCE_MAX_BYTES (a chunk larger than a request spans several).
 */
function requests(
  chunks: readonly AnsweredChunk[],
  limits: Config['kafka']['produce'],
): { key: string; value: string }[][] {
  const all: { key: string; value: string }[][] = [];
  let current: { key: string; value: string }[] = [];
  let bytes = 0;
  for (const message of chunks.flatMap((c) => c.messages)) {
    const size = bytesOf(message);
    const full = current.length >= limits.maxMessages || bytes + size > limits.maxBytes;
    if (current.length > 0 && full) {
      all.push(current);
      current = [];
      bytes = 0;
    }
    current.push(message);
    bytes += size;
  }
  if (current.length > 0) all.push(current);
  return all;
}

/** A message's size in UTF-8 bytes, as the broker counts it. */
function bytesOf(message: { key: string; value: string }): number {
  return Buffer.byteLength(message.key) + Buffer.byteLength(message.value);
}

/** Offsets as sendOffsets names them: per topic, its partitions. */
function byTopic(offsets: AnsweredChunk['offset'][]): TopicOffsets[] {
  const topics = new Map<string, TopicOffsets>();
  for (const { topic, partition, offset } of offsets) {
    const entry = topics.get(topic) ?? { topic, partitions: [] };
    entry.partitions.push({ partition, offset });
    topics.set(topic, entry);
  }
  return [...topics.values()];
}
