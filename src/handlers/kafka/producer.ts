/**
 * The notification producer: what the service answers, on topic-notification-event (and
 * settlement's topics), in shared produce requests.
 */
import type { Kafka, Producer } from 'kafkajs';
import type { Config } from '../../config/config';
import { Coalescer } from './coalescer';
import type { MojaloopMessage } from './messages';

/**
 * What a broker answers an idempotent producer whose state it lost or no longer accepts (a broker
 * killed, its log cut back to before the producer's last sequence numbers): kafkajs retries none
 * of them and keeps its producer id and sequences, so every later send fails the same way until a
 * new producer (a new producer id) takes over.
 */
const PRODUCER_STATE_LOST = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
]);

interface Outgoing {
  topic: string;
  key: string;
  value: string;
}

export class NotificationProducer {
  private producer: Producer;
  /** The current producer's connect (a new one's, once the broker lost the state of the last). */
  private connected: Promise<void> | undefined;
  private readonly outgoing: Coalescer<Outgoing>;

  constructor(
    limits: Config['kafka']['produce'],
    private readonly kafka: Pick<Kafka, 'producer'>,
  ) {
    this.producer = this.newProducer();
    // In UTF-8 bytes, as the broker counts them (a string's length counts UTF-16 units).
    this.outgoing = new Coalescer(
      { maxItems: limits.maxMessages, maxBytes: limits.maxBytes, lingerMs: limits.lingerMs },
      (m) => Buffer.byteLength(m.key) + Buffer.byteLength(m.value),
      (messages) => this.send(messages),
    );
  }

  connect(): Promise<void> {
    this.connected = this.producer.connect();
    return this.connected;
  }

  disconnect(): Promise<void> {
    return this.producer.disconnect();
  }

  /**
   * Produces messages on `topic` (acks from all in-sync replicas), joined with those of
   * concurrent callers in requests of at most KAFKA_PRODUCE_MAX_MESSAGES /
   * KAFKA_PRODUCE_MAX_BYTES, in order. Resolves once all are written; rejects if any request
   * failed.
   */
  async produce(messages: readonly MojaloopMessage[], topic: string): Promise<void> {
    await this.outgoing.add(
      messages.map((message) => ({ topic, key: message.id, value: JSON.stringify(message) })),
    );
  }

  private async send(messages: Outgoing[]): Promise<void> {
    const byTopic = new Map<string, { key: string; value: string }[]>();
    for (const { topic, key, value } of messages) {
      const list = byTopic.get(topic);
      if (list === undefined) byTopic.set(topic, [{ key, value }]);
      else list.push({ key, value });
    }
    const producer = this.producer;
    try {
      // A new producer's connect that failed (the broker still away) is tried again here.
      await this.connected?.catch(() => (this.connected = producer.connect()));
      await producer.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })),
      });
    } catch (error) {
      // The send fails (the batch is delivered again); the next goes through a new producer.
      if (producer === this.producer && stateLost(error)) {
        this.producer = this.newProducer();
        this.connected = this.producer.connect();
        // Awaited by the next send, which tries again if it failed.
        this.connected.catch(() => undefined);
        void producer.disconnect().catch(() => undefined);
      }
      throw error;
    }
  }

  private newProducer(): Producer {
    // Idempotent: a retried send inside the producer never writes a notification twice.
    return this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  }
}

/** Whether `error`, or an error it wraps, is one of PRODUCER_STATE_LOST. */
function stateLost(error: unknown): boolean {
  for (let e = error as { type?: unknown; cause?: unknown } | undefined; e; e = e.cause as never)
    if (typeof e.type === 'string' && PRODUCER_STATE_LOST.has(e.type)) return true;
  return false;
}
