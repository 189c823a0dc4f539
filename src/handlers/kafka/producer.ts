/**
 * The notification producer: what the service answers, on topic-notification-event (and
 * settlement's topics), in shared produce requests.
 */
import type { Kafka, Producer } from 'kafkajs';
import type { Config } from '../../config/config';
import { Coalescer } from './coalescer';
import type { MojaloopMessage } from './messages';

interface Outgoing {
  topic: string;
  key: string;
  value: string;
}

export class NotificationProducer {
  private readonly producer: Producer;
  private readonly outgoing: Coalescer<Outgoing>;

  constructor(limits: Config['kafka']['produce'], kafka: Pick<Kafka, 'producer'>) {
    // Idempotent: a retried send inside the producer never writes a notification twice.
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    // In UTF-8 bytes, as the broker counts them (a string's length counts UTF-16 units).
    this.outgoing = new Coalescer(
      { maxItems: limits.maxMessages, maxBytes: limits.maxBytes, lingerMs: limits.lingerMs },
      (m) => Buffer.byteLength(m.key) + Buffer.byteLength(m.value),
      (messages) => this.send(messages),
    );
  }

  connect(): Promise<void> {
    return this.producer.connect();
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
    await this.producer.sendBatch({
      acks: -1,
      topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })),
    });
  }
}
