/**
 * The Kafka side of bench/kafka.ts: prepares built like ml-api-adapter's, a payee simulator that
 * answers each forward with the payee's fulfil, and one measured phase — a burst, an open loop at
 * a rate, or a closed loop holding a fixed number of transfers in flight (as HTTP's connections).
 */
import { Kafka, logLevel } from 'kafkajs';
import type { Producer, Consumer, TopicPartitionOffsetAndMetadata } from 'kafkajs';
import { Coalescer } from '../src/handlers/kafka/coalescer';
import {
  fulfilMessage,
  prepareMessage,
  type TestTransfer,
} from '../test/support/mojaloop-messages';
import {
  cpuUse,
  batchDelta,
  batchMetrics,
  snapshot,
  type CpuUse,
  type LedgerBatches,
  type Pids,
} from './phases';
import { sleep } from '../test/support/service-process';
import { CURRENCY, type SentTransfer, type Workload } from '../test/support/workload';
import { summarise, type LatencySummary } from './load';

export interface KafkaTransfer {
  transfer: TestTransfer;
  /** The workload's transfer (payer, payee, amount, fulfilment), for the books. */
  sent: SentTransfer;
  prepareValue: string;
  fulfilValue: string;
  /** performance.now() when the producer request holding its prepare was issued. */
  producedAt: number;
  forwardAt: number;
  commitAt: number;
  forwards: number;
  commits: number;
  errors: number;
  fulfilsSent: number;
}

export interface Topics {
  prepare: string;
  fulfil: string;
  get: string;
  notification: string;
}

/**
 * A message the payee simulator produces; a prepare carries its transfer, stamped when its request
 * is issued.
 */
interface Outgoing {
  topic: string;
  key: string;
  value: string;
  transfer?: KafkaTransfer;
}

/**
 * How often the simulator commits its offsets: as a consumer like ml-api-adapter would, not after
 * every batch (each commit is a request the broker serves on the same cores as the service).
 */
const SIMULATOR_COMMIT_INTERVAL_MS = 1000;

/** The fields of a notification (test/support/mojaloop-messages.ts's shape) the payees read. */
interface Notification {
  id?: unknown;
  to?: unknown;
  metadata?: {
    event?: {
      action?: unknown;
      state?: { status?: unknown; code?: unknown; description?: unknown };
    };
  };
}

/** A client of the run's broker, its `topics` created fresh with `partitions` partitions each. */
export async function benchKafka(
  brokers: string[],
  run: string,
  topics: readonly string[],
  partitions: number,
): Promise<Kafka> {
  const kafka = new Kafka({ clientId: `bench-${run}`, brokers, logLevel: logLevel.ERROR });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })),
  });
  await admin.disconnect();
  return kafka;
}

/** The service's environment for Kafka mode on the run's broker and topics, a fresh group. */
export function kafkaEnv(brokers: string[], run: string, topics: Topics): NodeJS.ProcessEnv {
  return {
    KAFKA_ENABLED: 'true',
    KAFKA_BROKERS: brokers.join(','),
    KAFKA_CLIENT_ID: `ledger-${run}`,
    KAFKA_GROUP_ID: `ledger-${run}`,
    KAFKA_TOPIC_PREPARE: topics.prepare,
    KAFKA_TOPIC_FULFIL: topics.fulfil,
    KAFKA_TOPIC_GET: topics.get,
    KAFKA_TOPIC_NOTIFICATION: topics.notification,
    KAFKAJS_NO_PARTITIONER_WARNING: '1',
  };
}

/** Resolves once `consumer` (not yet connected) has joined its group. */
export function groupJoined(consumer: Consumer): Promise<void> {
  return new Promise<void>((resolve) => {
    const off = consumer.on(consumer.events.GROUP_JOIN, () => {
      off();
      resolve();
    });
  });
}

/**
 * Plays ml-api-adapter and every payee: reads the notification topic, and for each successful
 * prepare forwarded to a payee produces that payee's fulfil (COMMITTED) on the fulfil topic.
 * The fulfils and refill prepares of concurrent partition batches go out in shared produce
 * requests (one in flight, the rest together behind it), so that the load generator's own
 * requests do not swamp the broker that the service's path is measured through.
 */
export class PayeeSimulator {
  readonly byId = new Map<string, KafkaTransfer>();
  committed = 0;
  notifications = 0;
  /**
   * Fulfils the payees' producer wrote twice (kafkajs retries a send on "not the leader" and,
   * not idempotent, as ml-api-adapter's, may write it again), answered as duplicates.
   */
  fulfilDuplicates = 0;
  readonly errorNotes: {
    id: string;
    action: string;
    code: unknown;
    description: unknown;
    to: unknown;
  }[] = [];
  readonly unexpected: string[] = [];
  private onCommit: (() => void) | undefined;
  /**
   * A closed loop's source of work: given how many transfers just committed, the prepares to
   * produce in their place (with the fulfils of the same notification batch, in one go).
   */
  refill: ((committed: number) => KafkaTransfer[]) | undefined;
  private readonly outgoing: Coalescer<Outgoing>;
  /**
   * Each partition's next offset, committed every SIMULATOR_COMMIT_INTERVAL_MS (kafkajs's
   * autoCommit commits after every batch).
   */
  private readonly handled = new Map<string, TopicPartitionOffsetAndMetadata>();

  constructor(
    private readonly consumer: Consumer,
    producer: Producer,
    private readonly topics: Topics,
    batchBytes: number,
  ) {
    this.outgoing = new Coalescer<Outgoing>(
      { maxItems: 100_000, maxBytes: batchBytes, lingerMs: 0 },
      (m) => m.value.length,
      async (messages) => {
        const now = performance.now();
        const byTopic = new Map<string, { key: string; value: string }[]>();
        for (const { topic, key, value, transfer } of messages) {
          if (transfer !== undefined) transfer.producedAt = now;
          const list = byTopic.get(topic);
          if (list === undefined) byTopic.set(topic, [{ key, value }]);
          else list.push({ key, value });
        }
        await producer.sendBatch({
          topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })),
        });
      },
    );
  }

  async start(partitions: number): Promise<void> {
    const joined = groupJoined(this.consumer);
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topics.notification, fromBeginning: true });
    await this.consumer.run({
      partitionsConsumedConcurrently: partitions,
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        await this.batch(batch.messages);
        if (batch.messages.length > 0)
          this.handled.set(`${batch.topic}:${batch.partition}`, {
            topic: batch.topic,
            partition: batch.partition,
            offset: (BigInt(batch.lastOffset()) + 1n).toString(),
          });
      },
    });
    setInterval(() => {
      const offsets = [...this.handled.values()];
      this.handled.clear();
      // A failed commit only means a restarted simulator would read again: this one never restarts.
      if (offsets.length > 0) this.consumer.commitOffsets(offsets).catch(() => undefined);
    }, SIMULATOR_COMMIT_INTERVAL_MS).unref();
    await joined;
  }

  /**
   * Resolves when `count` transfers have their commit notification, or when nothing moved for
   * `stallMs`.
   */
  async waitForCommits(count: number, stallMs: number): Promise<boolean> {
    let last = this.committed;
    let lastChange = Date.now();
    while (this.committed < count) {
      await new Promise<void>((resolve) => {
        this.onCommit = resolve;
        setTimeout(resolve, 250);
      });
      this.onCommit = undefined;
      if (this.committed !== last) {
        last = this.committed;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > stallMs) {
        return false;
      }
    }
    return true;
  }

  private async batch(messages: { value: Buffer | null }[]): Promise<void> {
    const now = performance.now();
    const out: Outgoing[] = [];
    const committedBefore = this.committed;
    for (const message of messages) {
      this.notifications++;
      let note: Notification | null;
      try {
        note = JSON.parse(message.value?.toString('utf8') ?? 'null') as Notification | null;
      } catch {
        this.unexpected.push(`not JSON: ${message.value?.toString('utf8').slice(0, 100)}`);
        continue;
      }
      const id = String(note?.id);
      const action = String(note?.metadata?.event?.action);
      const status = note?.metadata?.event?.state?.status;
      const t = this.byId.get(id);
      if (status === 'error') {
        this.errorNotes.push({
          id,
          action,
          code: note?.metadata?.event?.state?.code,
          description: note?.metadata?.event?.state?.description,
          to: note?.to,
        });
        if (t !== undefined) t.errors++;
        continue;
      }
      if (t === undefined) {
        if (this.unexpected.length < 20)
          this.unexpected.push(`${action} for unknown transfer ${id}`);
        continue;
      }
      if (action === 'prepare' && status === 'success') {
        t.forwards++;
        if (t.forwards === 1) {
          t.forwardAt = now;
          out.push({ topic: this.topics.fulfil, key: id, value: t.fulfilValue });
          t.fulfilsSent++;
        }
      } else if (action === 'commit' && status === 'success') {
        t.commits++;
        if (t.commits === 1) {
          t.commitAt = now;
          this.committed++;
        }
      } else if (action === 'fulfil-duplicate' && status === 'success' && t.fulfilsSent === 1) {
        this.fulfilDuplicates++;
      } else if (this.unexpected.length < 20) {
        this.unexpected.push(`${action}/${status} for ${id}`);
      }
    }
    if (this.committed !== committedBefore) this.onCommit?.();
    const prepares =
      this.committed === committedBefore
        ? []
        : (this.refill?.(this.committed - committedBefore) ?? []);
    for (const t of prepares)
      out.push({
        topic: this.topics.prepare,
        key: t.transfer.transferId,
        value: t.prepareValue,
        transfer: t,
      });
    await this.outgoing.add(out);
  }
}

/** Messages (keyed by transfer id) in producer requests of at most `maxBytes` of values each. */
async function sendInChunks(
  producer: Producer,
  topic: string,
  messages: { key: string; value: string }[],
  maxBytes: number,
  onIssue?: (from: number, to: number) => void,
): Promise<void> {
  let start = 0;
  while (start < messages.length) {
    let bytes = 0;
    let end = start;
    while (
      end < messages.length &&
      (end === start || bytes + messages[end]!.value.length <= maxBytes)
    )
      bytes += messages[end++]!.value.length;
    onIssue?.(start, end);
    await producer.send({ topic, messages: messages.slice(start, end) });
    start = end;
  }
}

/** Prepares of `transfers`, each stamped with the time its producer request was issued. */
async function sendPrepares(
  producer: Producer,
  topic: string,
  transfers: readonly KafkaTransfer[],
  maxBytes: number,
): Promise<void> {
  const values = transfers.map((t) => ({ key: t.transfer.transferId, value: t.prepareValue }));
  await sendInChunks(producer, topic, values, maxBytes, (from, to) => {
    const now = performance.now();
    for (let i = from; i < to; i++) transfers[i]!.producedAt = now;
  });
}

/**
 * Builds `count` transfers with the HTTP workload's bodies (real ILP packet, real condition) as
 * ml-api-adapter messages; all between one `pair` of participants (indexes in `names`) if given
 * (a bulk's), else between pairs the workload draws.
 */
export function buildKafkaTransfers(
  workload: Workload,
  names: readonly string[],
  count: number,
  pair?: { payer: number; payee: number },
): KafkaTransfer[] {
  const expiration = new Date(Date.now() + 600_000).toISOString();
  const out: KafkaTransfer[] = [];
  for (let i = 0; i < count; i++) {
    const { transfer: t, condition, ilpPacket } = workload.next(false);
    if (pair !== undefined) Object.assign(t, pair);
    const payer = names[t.payer]!;
    const payee = names[t.payee]!;
    const body = {
      transferId: t.id,
      payerFsp: payer,
      payeeFsp: payee,
      amount: { amount: t.amountText, currency: CURRENCY },
      ilpPacket,
      condition,
      expiration,
    };
    const transfer: TestTransfer = {
      transferId: t.id,
      payer,
      payee,
      amount: t.amountText,
      currency: CURRENCY,
      fulfilment: t.fulfilment,
      condition,
      expiration,
      body,
    };
    out.push({
      transfer,
      sent: t,
      prepareValue: JSON.stringify(prepareMessage(transfer)),
      fulfilValue: JSON.stringify(fulfilMessage(transfer, 'commit')),
      producedAt: 0,
      forwardAt: 0,
      commitAt: 0,
      forwards: 0,
      commits: 0,
      errors: 0,
      fulfilsSent: 0,
    });
  }
  return out;
}

export interface KafkaPhase {
  label: string;
  transfers: number;
  committed: number;
  completed: boolean;
  wallS: number;
  produceS: number;
  transfersPerS: number;
  latency: { complete: LatencySummary; forward: LatencySummary; fulfilToCommit: LatencySummary };
  errorNotifications: number;
  cpu: CpuUse | undefined;
  ledger: LedgerBatches | undefined;
  prepareBytes: number;
  fulfilBytes: number;
}

/**
 * How a phase offers its prepares: all at once, at a rate (open loop), or a fixed number in flight
 * (closed loop).
 */
export interface Offer {
  /** Prepares per second; 0 = not an open loop. */
  rate: number;
  /** Transfers kept in flight (a new prepare for each commit seen); 0 = not a closed loop. */
  inFlight: number;
  /** Bytes of message values per producer request. */
  batchBytes: number;
}

export async function runKafkaPhase(
  label: string,
  simulator: PayeeSimulator,
  producer: Producer,
  topics: Topics,
  transfers: KafkaTransfer[],
  offer: Offer,
  pids: Pids | undefined,
  base: string,
): Promise<KafkaPhase> {
  for (const t of transfers) simulator.byId.set(t.transfer.transferId, t);
  const committed0 = simulator.committed;
  const errors0 = simulator.errorNotes.length;
  const metrics0 = await batchMetrics(base);
  const before = pids === undefined ? undefined : snapshot(pids);
  const started = performance.now();
  if (offer.inFlight > 0) {
    // Closed loop: as many transfers in flight as HTTP has connections; each commit seen lets the
    // next prepare go.
    let next = Math.min(offer.inFlight, transfers.length);
    simulator.refill = (committed) => {
      const from = next;
      next = Math.min(transfers.length, next + committed);
      return transfers.slice(from, next);
    };
    await sendPrepares(producer, topics.prepare, transfers.slice(0, next), offer.batchBytes);
  } else if (offer.rate > 0) {
    // Open loop: every 20 ms the prepares that are due by then.
    let sent = 0;
    while (sent < transfers.length) {
      const due = Math.min(
        transfers.length,
        Math.floor(((performance.now() - started) / 1000) * offer.rate) + 1,
      );
      if (due > sent) {
        await sendPrepares(producer, topics.prepare, transfers.slice(sent, due), offer.batchBytes);
        sent = due;
      }
      await sleep(20);
    }
  } else {
    await sendPrepares(producer, topics.prepare, transfers, offer.batchBytes);
  }
  const produceS = (performance.now() - started) / 1000;
  const completed = await simulator.waitForCommits(committed0 + transfers.length, 30_000);
  simulator.refill = undefined;
  const ended = transfers.reduce((max, t) => Math.max(max, t.commitAt), 0);
  const after = pids === undefined ? undefined : snapshot(pids);
  const metrics1 = await batchMetrics(base);
  const wallS = ((completed ? ended : performance.now()) - started) / 1000;
  const done = transfers.filter((t) => t.commits > 0);
  return {
    label,
    transfers: transfers.length,
    committed: done.length,
    completed,
    wallS,
    produceS,
    transfersPerS: done.length / wallS,
    latency: {
      complete: summarise(done.map((t) => t.commitAt - t.producedAt)),
      forward: summarise(
        transfers.filter((t) => t.forwards > 0).map((t) => t.forwardAt - t.producedAt),
      ),
      fulfilToCommit: summarise(done.map((t) => t.commitAt - t.forwardAt)),
    },
    errorNotifications: simulator.errorNotes.length - errors0,
    cpu: before === undefined || after === undefined ? undefined : cpuUse(before, after),
    ledger: batchDelta(metrics0, metrics1),
    prepareBytes: transfers.reduce((n, t) => n + t.prepareValue.length, 0) / transfers.length,
    fulfilBytes: transfers.reduce((n, t) => n + t.fulfilValue.length, 0) / transfers.length,
  };
}
