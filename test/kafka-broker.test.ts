/**
 * Smoke test of the real Kafka broker harness (test/support/kafka-broker.ts): start a
 * single-node KRaft broker, produce 1,000 messages and consume them in a consumer group
 * with kafkajs, stop it. Skips loudly where java (or mvn, before the jars are downloaded)
 * is missing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import { kafkaAvailable, startKafka } from './support/kafka-broker';

const MESSAGES = 1_000;
const PARTITIONS = 3;

test(
  'a real Kafka broker carries 1,000 messages from a kafkajs producer to a consumer group',
  { timeout: 6 * 60_000 },
  async (t) => {
    const why = kafkaAvailable();
    if (why !== undefined) {
      process.stderr.write(`\n*** SKIPPED: the real Kafka broker smoke test: ${why}. ***\n\n`);
      t.skip(why);
      return;
    }

    const broker = await startKafka();
    const kafka = new Kafka({
      clientId: 'kafka-broker-test',
      brokers: broker.brokers,
      logLevel: logLevel.ERROR,
    });
    const admin = kafka.admin();
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const consumer = kafka.consumer({ groupId: 'kafka-broker-test-group' });
    try {
      const topic = 'smoke-test';
      await admin.connect();
      await admin.createTopics({
        topics: [{ topic, numPartitions: PARTITIONS }],
        waitForLeaders: true,
      });

      await producer.connect();
      const sent = Array.from({ length: MESSAGES }, (_, i) => ({
        key: `key-${i % 10}`,
        value: JSON.stringify({ i }),
      }));
      for (let i = 0; i < sent.length; i += 100) {
        await producer.send({ topic, acks: -1, messages: sent.slice(i, i + 100) });
      }

      const received: Array<{ key: string; i: number; partition: number }> = [];
      let allReceived: () => void = () => undefined;
      const done = new Promise<void>((resolve) => {
        allReceived = resolve;
      });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          const value = JSON.parse(message.value?.toString() ?? 'null') as { i: number };
          received.push({ key: message.key?.toString() ?? '', i: value.i, partition });
          if (received.length === MESSAGES) allReceived();
        },
      });
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          done,
          new Promise((_, reject) => {
            timer = setTimeout(
              () =>
                reject(
                  new Error(`only ${received.length}/${MESSAGES} messages consumed after 60 s`),
                ),
              60_000,
            );
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }

      // Each message exactly once, every partition used, and per key in production order.
      assert.deepEqual(
        received.map((m) => m.i).sort((a, b) => a - b),
        sent.map((_, i) => i),
      );
      assert.equal(new Set(received.map((m) => m.partition)).size, PARTITIONS);
      const byKey = new Map<string, number[]>();
      for (const m of received) byKey.set(m.key, [...(byKey.get(m.key) ?? []), m.i]);
      for (const [key, order] of byKey)
        assert.deepEqual(
          order,
          [...order].sort((a, b) => a - b),
          `order of ${key}`,
        );
    } finally {
      await consumer.disconnect().catch(() => undefined);
      await producer.disconnect().catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
      await broker.stop();
    }
  },
);
