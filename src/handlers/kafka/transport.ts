/**
 * Kafka drop-in mode: consumes the transfer topics ml-api-adapter writes, runs every message
 * through the same TransferService (and so the same ledger batches) as HTTP, and answers each
 * one on topic-notification-event in Mojaloop's envelope.
 *
 * Batches: the partition batches of a fetch are handled concurrently
 * (KAFKA_PARTITIONS_CONCURRENTLY),
 * each one's messages too, so their commands reach the ledger together; messages of one transfer
 * run in order, also across partitions and topics. Their notifications go out in shared produce
 * requests and their offsets in shared commits (coalescer.ts).
 *
 * Delivery: at least once in, nothing lost out. A batch's notifications are produced (acks from
 * all in-sync replicas) before its offsets are committed. If the process dies in between, the
 * messages come again; the service recognises them by their topic/partition/offset (stored with
 * the transfer) and produces the same notifications again, under the same event ids (derived
 * from that origin), while the ledger, idempotent by transfer id, moves no money twice.
 * Only a deliberate refusal (an FSPIOP error, a malformed message) is answered with an error;
 * any other failure (ledger, metadata or broker unavailable, a disk or database error, a fault of
 * ours) fails the batch without committing, so it is delivered again: the money may have moved
 * already, and the redelivery is answered as the ledger has it. A malformed message no party can
 * be named for is logged and skipped.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import {
  Kafka,
  logLevel,
  type Consumer,
  type EachBatchPayload,
  type Producer,
  type Admin,
  type TopicPartitionOffsetAndMetadata,
} from 'kafkajs';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config/config';
import { FspiopCode, FspiopError, TransferAbortedError } from '../../domain/shared/errors';
import type { ErrorInformation } from '../../ports/metadata';
import type { TransferRecord } from '../../ports/metadata';
import {
  viewOf,
  type FulfilRequest,
  type PrepareRequest,
  type TransferService,
} from '../../domain/transfers/service';
import * as schemas from '../schemas/transfers';
import { FX_FULFIL_ACTIONS, FxMessages, conversionNotice } from './fx';
import { fxFulfilBody, fxPrepareBody } from '../schemas/fx';
import type { FxService } from '../../domain/fx/service';
import type { FxTransferRecord } from '../../ports/metadata';
import { Coalescer } from './coalescer';
import {
  HUB,
  MessageError,
  decodePayload,
  header,
  notification,
  parseMessage,
  stableUuid,
  timeoutNotification,
  transferIdOf,
  type MojaloopMessage,
} from './messages';

/** How long a health check waits for the broker. */
const HEALTH_TIMEOUT_MS = 2000;
/**
 * Chunks per offset commit: a commit names each partition once (the coalescer merges them), so
 * this only bounds the list a commit is merged from; KAFKA_COMMIT_MAX_MESSAGES bounds it first.
 */
const MAX_COMMIT_CHUNKS = 100_000;
/** Pause between attempts to find or create the topics on a broker that is not ready for them. */
const TOPIC_RETRY_MS = 2000;

/**
 * A chunk's next offset, to commit, and how many messages it held (what a crash would redeliver).
 */
interface ChunkDone {
  offset: TopicPartitionOffsetAndMetadata;
  messages: number;
}

interface Work {
  message: MojaloopMessage;
  transferId: string;
  /** topic:partition:offset — what identifies a redelivery. */
  origin: string;
}

export class KafkaTransport {
  private readonly consumer: Consumer;
  private readonly producer: Producer;
  private readonly admin: Admin;
  private readonly validators: {
    prepare: ValidateFunction;
    fulfil: ValidateFunction;
    error: ValidateFunction;
  };
  private readonly fx: FxMessages;
  private readonly notifications: Coalescer<{ topic: string; key: string; value: string }>;
  private readonly commits: Coalescer<ChunkDone>;
  /** The last work queued for each transfer being handled: its next message waits for it. */
  private readonly chains = new Map<string, Promise<unknown>>();
  /** The eachBatch calls under way: a stop lets them finish before kafkajs stops taking commits. */
  private readonly underway = new Set<Promise<void>>();
  /** Set once stop() began: what is handed over from then on is left to be delivered again. */
  private stopping = false;
  /**
   * Why the consumer stopped for good, if it did: /health reports the broker DOWN, /live the fault.
   */
  private crashed: string | undefined;

  constructor(
    private readonly config: Config['kafka'],
    private readonly transfers: TransferService,
    fx: FxService,
    private readonly log: FastifyBaseLogger,
    /** The client to the brokers; tests pass one of their own. */
    kafka: Pick<Kafka, 'consumer' | 'producer' | 'admin'> = new Kafka({
      clientId: config.clientId,
      brokers: config.brokers,
      logLevel: logLevel.WARN,
    }),
  ) {
    const { consume, produce } = config;
    this.consumer = kafka.consumer({
      groupId: config.groupId,
      maxBytesPerPartition: consume.fetchMaxBytesPerPartition,
      maxBytes: consume.fetchMaxBytes,
      minBytes: consume.fetchMinBytes,
      maxWaitTimeInMs: consume.fetchMaxWaitMs,
    });
    // Idempotent: a retried send inside the producer never writes a notification twice.
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    this.admin = kafka.admin();
    // In UTF-8 bytes, as the broker counts them (a string's length counts UTF-16 units).
    this.notifications = new Coalescer(
      { maxItems: produce.maxMessages, maxBytes: produce.maxBytes, lingerMs: produce.lingerMs },
      (m) => Buffer.byteLength(m.key) + Buffer.byteLength(m.value),
      (messages) => this.sendNotifications(messages),
    );
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
    const ajv = new Ajv({ allErrors: false, coerceTypes: false });
    this.validators = {
      prepare: ajv.compile(schemas.prepareBody),
      fulfil: ajv.compile(schemas.fulfilBody),
      error: ajv.compile(schemas.errorBody),
    };
    this.fx = new FxMessages(
      fx,
      {
        prepare: ajv.compile(fxPrepareBody),
        fulfil: ajv.compile(fxFulfilBody),
        error: this.validators.error,
      },
      (validate, payload) => this.validated(validate, payload),
    );
  }

  async start(): Promise<void> {
    await Promise.all([this.producer.connect(), this.consumer.connect(), this.admin.connect()]);
    await this.ensureTopics();
    const topics = this.config.topics;
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
    // offsets are set first (README, "Kafka drop-in mode").
    await this.consumer.subscribe({
      topics: [topics.prepare, topics.fulfil, topics.get],
      fromBeginning: true,
    });
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

  /**
   * A fresh broker hosts none of the topics: subscribing would fail ("does not host this
   * topic-partition") and the start with it. The missing ones are created with the configured
   * partitions (an instance racing to do the same is harmless: "already exists" is success), and
   * the start waits, saying so, until the broker names a leader for every partition.
   */
  private async ensureTopics(): Promise<void> {
    const { prepare, fulfil, get, notification, settlementClose } = this.config.topics;
    const wanted = [prepare, fulfil, get, notification, settlementClose];
    for (let attempt = 1; ; attempt++) {
      try {
        const existing = new Set(await this.admin.listTopics());
        const missing = wanted.filter((topic) => !existing.has(topic));
        if (missing.length > 0) {
          this.log.info(
            { topics: missing, partitions: this.config.topicPartitions },
            'creating the Kafka topics the broker lacks',
          );
          await this.admin.createTopics({
            topics: missing.map((topic) => ({ topic, numPartitions: this.config.topicPartitions })),
            waitForLeaders: true,
          });
        }
        const { topics } = await this.admin.fetchTopicMetadata({ topics: wanted });
        if (
          topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))
        )
          return;
        throw new Error('a partition has no leader yet');
      } catch (error) {
        this.log.warn(
          { err: error, attempt, topics: wanted },
          `waiting for the Kafka topics; trying again in ${TOPIC_RETRY_MS} ms`,
        );
        await new Promise((resolve) => setTimeout(resolve, TOPIC_RETRY_MS));
      }
    }
  }

  async stop(): Promise<void> {
    // The batches under way finish, then their commits land: a clean stop leaves nothing to
    // redeliver. All of it before consumer.stop(): from then on kafkajs drops a commit without a
    // word (runner.commitOffsets while not running) and refuses one once it left the group.
    this.stopping = true;
    const { prepare, fulfil, get } = this.config.topics;
    try {
      // Nothing new is fetched meanwhile.
      this.consumer.pause([prepare, fulfil, get].map((topic) => ({ topic })));
    } catch (error) {
      // Not running (crashed, or between a crash and its restart): nothing is fetched anyway.
      this.log.debug({ err: error }, 'Kafka consumer not running at the stop');
    }
    await Promise.allSettled(this.underway);
    await this.settled();
    await this.consumer.stop();
    await this.consumer.disconnect();
    await Promise.all([this.producer.disconnect(), this.admin.disconnect()]);
  }

  /** Why the consumer stopped for good (only a restart resumes it), or undefined while it runs. */
  crashReason(): string | undefined {
    return this.crashed;
  }

  /** Whether the broker answers now (for /health). */
  async healthy(): Promise<boolean> {
    if (this.crashed !== undefined) return false;
    const timeout = new Promise<false>((resolve) =>
      setTimeout(() => resolve(false), HEALTH_TIMEOUT_MS).unref(),
    );
    return Promise.race([
      this.admin.describeCluster().then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  }

  /** Tells payer and payee that their reservation expired (before the expiry is recorded). */
  async notifyExpired(records: TransferRecord[]): Promise<void> {
    const error = new FspiopError(FspiopCode.TRANSFER_EXPIRED).toErrorInformation();
    await this.produce(records.map((r) => timeoutNotification(r, error)));
  }

  /** Tells the initiating FSP and the FXP that their conversion expired (fx-timeout-reserved). */
  async notifyFxExpired(records: FxTransferRecord[]): Promise<void> {
    const error = new FspiopError(FspiopCode.TRANSFER_EXPIRED).toErrorInformation();
    await this.produce(
      records.map((r) =>
        timeoutNotification(
          { transferId: r.commitRequestId, payerFsp: r.initiatingFsp, payeeFsp: r.counterPartyFsp },
          error,
          new Date(),
          'fxTransfers',
        ),
      ),
    );
  }

  /**
   * One partition's batch, in chunks of at most KAFKA_BATCH_MAX_MESSAGES: a chunk's offsets are
   * committed once its notifications are produced. A failure throws before the commit, as a
   * RetryBatch, so kafkajs delivers the chunk again. The commit is
   * not awaited: the partition's next batch need not wait a round trip to the group coordinator,
   * and commits of a KAFKA_COMMIT_INTERVAL_MS go out as one. Commits go out in order, so a later
   * one covers an earlier that failed; if none lands before a crash, the chunk is delivered again
   * (and answered the same).
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
    for (let start = 0; start < batch.messages.length; start += limit) {
      if (!isRunning() || isStale() || this.stopping) return;
      const chunk = batch.messages.slice(start, start + limit);
      try {
        await this.produce(await this.answer(topic, partition, chunk));
      } catch (error) {
        throw new RetryBatch(error);
      }
      const last = chunk[chunk.length - 1]!.offset;
      const offset = (BigInt(last) + 1n).toString();
      this.commits
        .add([{ offset: { topic, partition, offset }, messages: chunk.length }])
        .catch((error: unknown) => {
          this.log.warn(
            { err: error, topic, partition, offset },
            'Kafka offset commit failed; a later commit or a redelivery covers it',
          );
        });
      // Moves this consumer's own position on; the commit is what survives a restart.
      resolveOffset(last);
      await heartbeat();
    }
  }

  /** Resolves once the offset commits issued so far are sent (what stop waits for). */
  async settled(): Promise<void> {
    await this.commits.drained();
  }

  /**
   * The notifications answering a chunk of one partition, in the order of its messages' transfers.
   */
  private async answer(
    topic: string,
    partition: number,
    records: { offset: string; value: Buffer | null }[],
  ): Promise<MojaloopMessage[]> {
    const byTransfer = new Map<string, Work[]>();
    const skipped: MojaloopMessage[] = [];
    for (const record of records) {
      const origin = `${topic}:${partition}:${record.offset}`;
      try {
        const message = parseMessage(record.value);
        const transferId = transferIdOf(message);
        if (transferId === undefined) throw new MessageError('no transfer id');
        const items = byTransfer.get(transferId);
        if (items === undefined) byTransfer.set(transferId, [{ message, transferId, origin }]);
        else items.push({ message, transferId, origin });
      } catch (error) {
        const answer = this.malformed(record.value, error as Error, origin);
        if (answer !== undefined) skipped.push(...withEventIds([answer], origin));
      }
    }
    // Different transfers concurrently (so they share ledger batches), the messages of one in
    // order.
    const answers = await Promise.all(
      [...byTransfer].map(([transferId, items]) =>
        this.inOrder(transferId, () => this.handleAll(items)),
      ),
    );
    return [...skipped, ...answers.flat()];
  }

  private async handleAll(items: Work[]): Promise<MojaloopMessage[]> {
    const out: MojaloopMessage[] = [];
    for (const item of items) out.push(...withEventIds(await this.handle(item), item.origin));
    return out;
  }

  /**
   * Runs `work` after whatever is under way for the same transfer in a concurrent partition
   * batch (a fulfil on its topic after its prepare on another); a failure there fails this too,
   * so that both batches are delivered again rather than this one running out of order.
   */
  private inOrder<T>(transferId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(transferId);
    const run = previous === undefined ? work() : previous.then(work);
    this.chains.set(transferId, run);
    const forget = (): void => {
      if (this.chains.get(transferId) === run) this.chains.delete(transferId);
    };
    run.then(forget, forget);
    return run;
  }

  /**
   * Settlement's messages (src/settlement/notifications.ts), on the notification or the window
   * close topic.
   */
  async publish(
    topic: 'notification' | 'settlementClose',
    messages: MojaloopMessage[],
  ): Promise<void> {
    await this.produce(messages, this.config.topics[topic]);
  }

  /**
   * Produces notifications (acks from all in-sync replicas), joined with those of concurrent
   * batches in requests of at most KAFKA_PRODUCE_MAX_MESSAGES / KAFKA_PRODUCE_MAX_BYTES, in order.
   * Resolves once all are written; rejects if any request failed.
   */
  async produce(
    messages: readonly MojaloopMessage[],
    topic = this.config.topics.notification,
  ): Promise<void> {
    await this.notifications.add(
      messages.map((message) => ({ topic, key: message.id, value: JSON.stringify(message) })),
    );
  }

  private async sendNotifications(
    messages: { topic: string; key: string; value: string }[],
  ): Promise<void> {
    const byTopic = new Map<string, { key: string; value: string }[]>();
    for (const { topic, key, value } of messages) {
      const list = byTopic.get(topic);
      if (list === undefined) byTopic.set(topic, [{ key, value }]);
      else list.push({ key, value });
    }
    await this.producer.sendBatch({
      acks: -1,
      topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })),
    });
  }

  /**
   * The notifications answering one message. Infrastructure failures are thrown (the batch is
   * retried).
   */
  private async handle({ message, transferId, origin }: Work): Promise<MojaloopMessage[]> {
    const { type, action } = message.metadata.event;
    const source = header(message, 'fspiop-source') ?? message.from;
    try {
      if (type === 'prepare' && (action === 'prepare' || action === 'fx-prepare'))
        return await this.prepare(message, transferId, source, origin);
      if (type === 'fulfil' && FX_FULFIL_ACTIONS.includes(action))
        return await this.fx.fulfil(message, transferId, source, origin);
      if (type === 'get' && action === 'fx-get')
        return await this.fx.get(message, transferId, source);
      if (type === 'fulfil' && ['commit', 'reserve', 'reject', 'abort'].includes(action))
        return await this.fulfil(message, transferId, source, origin);
      if (type === 'get' && action === 'get') return await this.get(message, transferId, source);
      throw new MessageError(`unknown event ${type}/${action}`);
    } catch (error) {
      if (error instanceof MessageError)
        return this.refuse(
          message,
          transferId,
          source,
          new FspiopError(FspiopCode.MALFORMED_SYNTAX, error.message),
        );
      if (error instanceof FspiopError) return this.refuse(message, transferId, source, error);
      // Anything else (an outage, a full disk, a deadlock, a raw ledger client error, a fault of
      // ours) may have struck after the money moved: an error answer could contradict the ledger.
      // The batch fails uncommitted and its redelivery is answered as things then are. No cap on
      // the attempts: no answer given without the failing part is sure to be true, and a stalled
      // partition shows (consumer lag, kafkajs logging each failure) where a wrong one does not.
      throw error;
    }
  }

  private async prepare(
    message: MojaloopMessage,
    transferId: string,
    source: string,
    origin: string,
  ): Promise<MojaloopMessage[]> {
    const payload = decodePayload(message.content.payload);
    // As central-ledger: a prepare without a transferId is an fx prepare.
    if (message.metadata.event.action === 'fx-prepare' || !('transferId' in payload))
      return this.fx.prepare(message, payload, transferId, source, origin);
    const body = this.validated(this.validators.prepare, payload) as unknown as PrepareRequest;
    const result = await this.transfers.prepare(source, body, origin);
    if (!result.duplicate || result.redelivery) {
      // Forwarded to the payee as it came, context included (ml-api-adapter replays the original
      // bytes).
      return [
        notification(message, transferId, {
          action: 'prepare',
          from: body.payerFsp,
          to: body.payeeFsp,
          keepContext: true,
        }),
      ];
    }
    if (result.record.state === 'RECEIVED_PREPARE') return [];
    return [
      notification(message, transferId, {
        action: 'prepare-duplicate',
        from: HUB,
        to: source,
        payload: fulfilView(result.record),
        keepContext: true,
      }),
    ];
  }

  private async fulfil(
    message: MojaloopMessage,
    transferId: string,
    source: string,
    origin: string,
  ): Promise<MojaloopMessage[]> {
    const action = message.metadata.event.action;
    const destination = header(message, 'fspiop-destination');
    const payload = decodePayload(message.content.payload);
    let result;
    try {
      if (action === 'abort') {
        const body = this.validated(this.validators.error, payload) as {
          errorInformation: ErrorInformation;
        };
        result = await this.transfers.error(transferId, { source, destination, origin }, body);
      } else {
        const body = this.validated(this.validators.fulfil, payload) as unknown as FulfilRequest;
        result = await this.transfers.fulfil(transferId, { source, destination, origin }, body);
      }
    } catch (error) {
      if (!(error instanceof TransferAbortedError)) throw error;
      // The transfer was aborted: the payer learns it from the Hub, the payee that its fulfil
      // failed.
      const record = await this.transfers.recordOf(transferId);
      const conversion =
        record.dependsOn === undefined ? undefined : await this.fx.recordOf(record.dependsOn);
      return [
        ...(conversion === undefined ? [] : [conversionNotice(conversion)]),
        notification(message, transferId, {
          action: 'abort-validation',
          from: HUB,
          to: record.payerFsp,
          error: error.toErrorInformation(),
          keepContext: true,
        }),
        notification(message, transferId, {
          action: 'commit',
          from: HUB,
          to: source,
          error: error.toErrorInformation(),
          keepContext: true,
        }),
      ];
    }
    const { record } = result;
    // A dependent transfer committed or aborted its conversion with it: the FXP's PATCH first, as
    // central-ledger.
    const notice = result.conversion === undefined ? [] : [conversionNotice(result.conversion)];
    if (result.duplicate && !result.redelivery) {
      return [
        notification(message, transferId, {
          action: action === 'abort' ? 'abort-duplicate' : 'fulfil-duplicate',
          from: HUB,
          to: source,
          payload: fulfilView(record),
          keepContext: true,
        }),
      ];
    }
    if (action === 'reserve') {
      // API v1.1: the payer gets the final state, the payee a PATCH (ml-api-adapter makes both
      // calls from this one message).
      return [
        ...notice,
        notification(message, transferId, {
          action: 'reserve',
          from: record.payeeFsp,
          to: record.payerFsp,
          payload: fulfilView(record, 'commit'),
          keepContext: true,
        }),
      ];
    }
    return [
      ...notice,
      notification(message, transferId, {
        action,
        from: record.payeeFsp,
        to: record.payerFsp,
        keepContext: true,
      }),
    ];
  }

  private async get(
    message: MojaloopMessage,
    transferId: string,
    source: string,
  ): Promise<MojaloopMessage[]> {
    const record = await this.transfers.get(transferId, source);
    return [
      notification(message, transferId, {
        action: 'get',
        from: HUB,
        to: source,
        payload: fulfilView(record),
        keepContext: false,
      }),
    ];
  }

  /**
   * An error notification to whoever sent the message, from the Hub, under the action that
   * ml-api-adapter turns into a PUT to the sender's /error callback: `prepare` and `get` for their
   * topics, `commit` for anything on the fulfil topic, the *-duplicate actions for 3106.
   */
  private refuse(
    message: MojaloopMessage,
    transferId: string,
    source: string,
    error: FspiopError,
  ): MojaloopMessage[] {
    const { type, action } = message.metadata.event;
    this.log.info(
      { transferId, type, action, code: error.code, detail: error.message },
      'kafka message refused',
    );
    const family = type === 'get' ? 'get' : type === 'fulfil' ? 'fulfil' : 'prepare';
    const modified = error.code === FspiopCode.MODIFIED_REQUEST;
    // FX messages are answered under the fx- actions (an FXP's refused PUT: fx-commit, which
    // ml-api-adapter delivers, where central-ledger's fx-reserve is dropped).
    const fx =
      action.startsWith('fx-') || (family === 'prepare' && !('transferId' in safePayload(message)));
    const answer =
      family === 'get'
        ? 'get'
        : family === 'prepare'
          ? 'prepare'
          : !modified
            ? 'commit'
            : action.endsWith('abort')
              ? 'abort-duplicate'
              : 'fulfil-duplicate';
    return [
      notification(message, transferId, {
        action: `${fx ? 'fx-' : ''}${answer}`,
        from: HUB,
        to: source,
        error: error.toErrorInformation(),
        keepContext: family !== 'get',
      }),
    ];
  }

  /**
   * A message that could not be parsed: an error to its sender where one can be named, else logged
   * and skipped.
   */
  private malformed(
    value: Buffer | null,
    error: Error,
    origin: string,
  ): MojaloopMessage | undefined {
    let partial: Partial<MojaloopMessage> | undefined;
    try {
      partial = JSON.parse(value?.toString('utf8') ?? 'null') as Partial<MojaloopMessage>;
    } catch {
      partial = undefined;
    }
    const transferId =
      partial === undefined || partial === null ? undefined : transferIdOf(partial);
    const sender = partial?.content?.headers?.['fspiop-source'] ?? partial?.from;
    if (
      partial === undefined ||
      partial === null ||
      transferId === undefined ||
      typeof sender !== 'string'
    ) {
      this.log.warn(
        { origin, reason: error.message },
        'skipped a Kafka message no party can be told about',
      );
      return undefined;
    }
    const event = partial.metadata?.event;
    const incoming: MojaloopMessage = {
      id: transferId,
      from: sender,
      type: typeof partial.type === 'string' ? partial.type : 'application/json',
      content: {
        headers:
          typeof partial.content?.headers === 'object' && partial.content.headers !== null
            ? partial.content.headers
            : {},
        payload: undefined,
      },
      metadata: {
        event: {
          type: typeof event?.type === 'string' ? event.type : 'prepare',
          action: typeof event?.action === 'string' ? event.action : 'prepare',
          ...(typeof event?.id === 'string' ? { id: event.id } : {}),
        },
      },
    };
    this.log.warn({ origin, transferId, reason: error.message }, 'malformed Kafka message');
    return this.refuse(
      incoming,
      transferId,
      sender,
      new FspiopError(FspiopCode.MALFORMED_SYNTAX, error.message),
    )[0];
  }

  private validated(
    validate: ValidateFunction,
    payload: Record<string, unknown>,
  ): Record<string, unknown> {
    if (!validate(payload)) {
      const first = validate.errors?.[0];
      throw new MessageError(
        `payload ${first?.instancePath ?? ''} ${first?.message ?? 'is invalid'}`
          .replace(/\s+/g, ' ')
          .trim(),
      );
    }
    return payload;
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

/**
 * Gives the answers to the message at `origin` event ids derived from it: a redelivered message
 * is answered under the same ids, so a consumer can tell a repeated notification from a new one.
 */
function withEventIds(answers: MojaloopMessage[], origin: string): MojaloopMessage[] {
  answers.forEach((answer, index) => {
    answer.metadata.event.id = stableUuid(
      `${origin}:${index}:${answer.metadata.event.action}:${answer.to}`,
    );
  });
  return answers;
}

/** Each partition's highest offset: a commit names a partition once. */
function latestPerPartition(
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

/** The payload, or nothing where it cannot be read (a malformed message). */
function safePayload(message: MojaloopMessage): Record<string, unknown> {
  try {
    return decodePayload(message.content.payload);
  } catch {
    return { transferId: undefined };
  }
}

/** central-ledger's `toFulfil`: what PUT /transfers/{id} callbacks carry. */
function fulfilView(record: TransferRecord, at: 'now' | 'commit' = 'now'): Record<string, unknown> {
  const view = viewOf(record, at);
  return {
    completedTimestamp: view.completedTimestamp ?? record.createdAt,
    transferState: view.transferState,
    ...(view.fulfilment === undefined ? {} : { fulfilment: view.fulfilment }),
    ...(view.extensionList === undefined ? {} : { extensionList: view.extensionList }),
  };
}
