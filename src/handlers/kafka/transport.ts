/**
 * Kafka drop-in mode: consumes the transfer topics ml-api-adapter writes, runs every message
 * through the same TransferService (and so the same ledger batches) as HTTP, and answers each
 * one on topic-notification-event in Mojaloop's envelope. This class puts the parts together:
 * the consumer (consumer.ts), topic admin (topics.ts), the producer (producer.ts), per-transfer
 * order (ordering.ts), the handlers by type and action (registry.ts, transfers.ts, fx.ts), the
 * notifications answering no handler's success (notifications.ts) and malformed messages
 * (poison.ts); bulk-api-adapter's bulk topics (bulk.ts) where bulk transfers are on, through the
 * same machinery, in per-bulk order. A consumer per consumer group (Config['kafka']['consumers']),
 * over the topics this process consumes (its roles); with none, the transport only produces
 * (expiries, settlement).
 *
 * Batches: the partition batches of a fetch are handled concurrently
 * (KAFKA_PARTITIONS_CONCURRENTLY), each one's messages too, so their commands reach the ledger
 * together; messages of one transfer run in order, also across partitions and topics. Their
 * notifications go out in shared produce requests and their offsets in shared commits
 * (coalescer.ts).
 *
 * Delivery: at least once in, nothing lost out; the bulk topics' answers exactly once to
 * read_committed readers (bulk-api-adapter's), each chunk's produced and its offsets committed in
 * one Kafka transaction (transactions.ts). Elsewhere a batch's notifications are produced (acks
 * from all in-sync replicas) before its offsets are committed. If the process dies in between, the
 * messages come again; the service recognises them by their topic/partition/offset (stored with
 * the transfer) and produces the same notifications again, under the same event ids (derived
 * from that origin), while the ledger, idempotent by transfer id, moves no money twice.
 * Only a deliberate refusal (an FSPIOP error, a malformed message) is answered with an error;
 * any other failure (ledger, metadata or broker unavailable, a disk or database error, a fault of
 * ours) fails the batch without committing, so it is delivered again: the money may have moved
 * already, and the redelivery is answered as the ledger has it. A malformed message no party can
 * be named for is logged and skipped.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { FastifyBaseLogger } from 'fastify';
import type { Config, ConsumedTopic } from '../../config/config';
import type { FxTransferRecord, TransferRecord } from '../../ports/metadata';
import type { TransferService } from '../../domain/transfers/service';
import type { FxService } from '../../domain/fx/service';
import type { BulkApi, BulkNotice } from '../../domain/bulk/api';
import type { BulkResultStore } from '../../ports/bulk';
import { noFault, type Fault } from '../../util/fault';
import { speedUpKafkajsCrc32c } from './kafkajs-crc32c';
import { PATCHED_KAFKAJS_VERSION, stopKafkajsIdleLoop } from './kafkajs-idle-loop';
import { speedUpKafkajsProduce } from './kafkajs-produce-encoder';
import { BulkMessages } from './bulk';
import { TransferConsumer, type Chunk } from './consumer';
import { FxMessages } from './fx';
import { Inbound } from './inbound';
import { MessageError, parseMessage, transferIdOf, type MojaloopMessage } from './messages';
import { expiryNotifications, fxExpiryNotifications, withEventIds } from './notifications';
import { TransferOrder } from './ordering';
import { payloadReaders } from './payloads';
import { answerMalformed } from './poison';
import { NotificationProducer } from './producer';
import { HandlerRegistry } from './registry';
import { TopicAdmin } from './topics';
import { TransactionalAnswers } from './transactions';
import { TransferMessages } from './transfers';

export interface KafkaTransportOptions {
  config: Config['kafka'];
  /** The transfer topics this process consumes (Config['roles']['consume']). */
  consume: readonly ConsumedTopic[];
  transfers: TransferService;
  fx: FxService;
  /**
   * The bulk flow and the object store its notices' documents go to: where bulk transfers are
   * on (an object store configured). Without it the bulk topics are neither made nor consumed.
   */
  bulk?: { api: BulkApi; results: BulkResultStore };
  log: FastifyBaseLogger;
  /**
   * This instance's name in the bulk topics' transactional ids: the same across its restarts, no
   * other running instance's (Config['kafka']['transactionalId']).
   */
  instance: string;
  /** Tests only: the crash injection (util/fault.ts). */
  fault?: Fault;
  /** The client to the brokers, for every consumer group too; tests pass one of their own. */
  kafka?: Pick<Kafka, 'consumer' | 'producer' | 'admin'>;
}

export class KafkaTransport {
  private readonly config: Config['kafka'];
  private readonly log: FastifyBaseLogger;
  private readonly consumers: TransferConsumer[];
  /** Those of the consumer groups that consume bulk topics. */
  private readonly transactions: TransactionalAnswers[] = [];
  private readonly producer: NotificationProducer;
  private readonly topics: TopicAdmin;
  private readonly registry: HandlerRegistry;
  private readonly order = new TransferOrder();
  private readonly bulk: BulkMessages | undefined;
  /** Whether start() has made the topics exist and started the consumers. */
  private started = false;

  constructor(options: KafkaTransportOptions) {
    const { config, consume, transfers, fx, bulk, log, kafka } = options;
    this.config = config;
    this.log = log;
    if (!stopKafkajsIdleLoop())
      log.warn(
        `kafkajs is not ${PATCHED_KAFKAJS_VERSION}: ` +
          "its request queues' idle polling is not stopped",
      );
    if (!speedUpKafkajsCrc32c())
      log.warn(
        `kafkajs is not ${PATCHED_KAFKAJS_VERSION}, or it encoded a record batch before this ` +
          'transport: its byte-at-a-time CRC-32C stays',
      );
    if (!speedUpKafkajsProduce())
      log.warn(
        `kafkajs is not ${PATCHED_KAFKAJS_VERSION}, or it produced before this transport: ` +
          'its own produce request encoder stays',
      );
    const clientOf = (clientId: string): Pick<Kafka, 'consumer' | 'producer' | 'admin'> =>
      kafka ?? new Kafka({ clientId, brokers: config.brokers, logLevel: logLevel.WARN });
    const client = clientOf(config.clientId);
    const consumed = bulk === undefined ? consume.filter((topic) => !isBulkTopic(topic)) : consume;
    this.consumers = consumerGroups(config, consumed).map((group) => {
      const groupClient = group.clientId === config.clientId ? client : clientOf(group.clientId);
      const bulkTopics = new Set(config.bulkExactlyOnce ? group.bulkTopics : []);
      const transactions =
        bulkTopics.size === 0
          ? undefined
          : new TransactionalAnswers({
              kafka: groupClient,
              transactionalId: `${options.instance}-${group.groupId}`,
              groupId: group.groupId,
              config,
              fault: options.fault ?? noFault,
            });
      if (transactions !== undefined) this.transactions.push(transactions);
      return new TransferConsumer({
        config,
        kafka: groupClient,
        groupId: group.groupId,
        topics: group.topics,
        log,
        handleChunk: async (chunk) => {
          const answers = await this.answer(chunk);
          if (transactions !== undefined && bulkTopics.has(chunk.topic))
            await transactions.commit(answers, chunk);
          else await this.notify(answers);
        },
        committedWithAnswers: bulkTopics,
      });
    });
    this.producer = new NotificationProducer(config.produce, client);
    this.topics = new TopicAdmin(config, client, log, { bulk: bulk !== undefined });
    this.registry = new HandlerRegistry(log);
    const payloads = payloadReaders();
    const fxMessages = new FxMessages(fx, payloads);
    fxMessages.register(this.registry);
    new TransferMessages(transfers, fxMessages, payloads).register(this.registry);
    this.bulk = bulk === undefined ? undefined : new BulkMessages(bulk.api, bulk.results);
    this.bulk?.register(this.registry);
  }

  async start(): Promise<void> {
    await Promise.all([
      this.producer.connect(),
      ...this.transactions.map((transactions) => transactions.connect()),
      this.topics.connect(),
      ...this.consumers.map((consumer) => consumer.connect()),
    ]);
    await this.topics.ensureTopics();
    await Promise.all(this.consumers.map((consumer) => consumer.start()));
    this.started = true;
  }

  async stop(): Promise<void> {
    await Promise.all(this.consumers.map((consumer) => consumer.stop()));
    await Promise.all([
      this.producer.disconnect(),
      ...this.transactions.map((transactions) => transactions.disconnect()),
      this.topics.disconnect(),
    ]);
  }

  /**
   * Why a consumer stopped for good (only a restart resumes it), or undefined while all run.
   */
  crashReason(): string | undefined {
    return this.consumers.map((consumer) => consumer.crashReason()).find((r) => r !== undefined);
  }

  /**
   * Whether the consumers run and the broker answers now (for /health): not before the topics
   * exist, so that a caller told OK finds them (the HTTP routes serve from before then).
   */
  async healthy(): Promise<boolean> {
    if (!this.started || this.crashReason() !== undefined) return false;
    return this.topics.reachable();
  }

  /** Resolves once the offset commits issued so far are sent. */
  async settled(): Promise<void> {
    await Promise.all(this.consumers.map((consumer) => consumer.settled()));
  }

  /** Tells payer and payee that their reservation expired (before the expiry is recorded). */
  async notifyExpired(records: TransferRecord[]): Promise<void> {
    await this.notify(expiryNotifications(records));
  }

  /** Tells the initiating FSP and the FXP that their conversion expired (fx-timeout-reserved). */
  async notifyFxExpired(records: FxTransferRecord[]): Promise<void> {
    await this.notify(fxExpiryNotifications(records));
  }

  /**
   * Bulk notices no message answers (the expiry sweep's), their results documents saved first.
   */
  async notifyBulk(notices: readonly BulkNotice[]): Promise<void> {
    if (this.bulk === undefined || notices.length === 0) return;
    await this.notify(await this.bulk.tell(notices));
  }

  /**
   * Settlement's messages (src/handlers/kafka/settlement-notifications.ts), on the notification
   * or the window close topic.
   */
  async publish(
    topic: 'notification' | 'settlementClose',
    messages: MojaloopMessage[],
  ): Promise<void> {
    await this.producer.produce(messages, this.config.topics[topic]);
  }

  private notify(messages: readonly MojaloopMessage[]): Promise<void> {
    return this.producer.produce(messages, this.config.topics.notification);
  }

  /**
   * The notifications answering a chunk of one partition: those refusing what could not be
   * parsed, then the others in the order of their messages' transfers.
   */
  private async answer({ topic, partition, messages }: Chunk): Promise<MojaloopMessage[]> {
    const parsed: Inbound[] = [];
    const malformed: MojaloopMessage[] = [];
    for (const { offset, value } of messages) {
      const origin = `${topic}:${partition}:${offset}`;
      try {
        const message = parseMessage(value);
        const transferId = transferIdOf(message);
        if (transferId === undefined) throw new MessageError('no transfer id');
        parsed.push(new Inbound(message, transferId, origin));
      } catch (error) {
        const reason = error as Error;
        const refusal = answerMalformed(
          { value, origin, reason },
          {
            registry: this.registry,
            log: this.log,
          },
        );
        if (refusal !== undefined) malformed.push(...withEventIds([refusal], origin));
      }
    }
    const answers = await this.order.handle(parsed, async (inbound) =>
      withEventIds(await this.registry.answer(inbound), inbound.origin),
    );
    return [...malformed, ...answers];
  }
}

function isBulkTopic(topic: ConsumedTopic): boolean {
  return topic === 'bulkPrepare' || topic === 'bulkFulfil' || topic === 'bulkGet';
}

interface ConsumerGroup {
  groupId: string;
  clientId: string;
  topics: string[];
  /** Those of `topics` answered exactly once (transactions.ts). */
  bulkTopics: string[];
}

/**
 * The consumers of the topics consumed: one per group id, with the client id of its first topic
 * (central-ledger names each topic's group and client; a topic named in no `consumers` entry is
 * consumed in `groupId`).
 */
function consumerGroups(
  config: Config['kafka'],
  consume: readonly ConsumedTopic[],
): ConsumerGroup[] {
  const groups = new Map<string, ConsumerGroup>();
  for (const topic of consume) {
    const { groupId, clientId } = config.consumers[topic] ?? config;
    const group = groups.get(groupId) ?? { groupId, clientId, topics: [], bulkTopics: [] };
    group.topics.push(config.topics[topic]);
    if (isBulkTopic(topic)) group.bulkTopics.push(config.topics[topic]);
    groups.set(groupId, group);
  }
  return [...groups.values()];
}
