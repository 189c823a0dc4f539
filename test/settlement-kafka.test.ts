/**
 * Settlement's Kafka messages through a real broker (skipped loudly without Java/Maven): a
 * window close on topic-deferredsettlement-close (the service creates the topic), and
 * settlement-transfer-position-change notifications on topic-notification-event.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { buildService } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { kafkaAvailable, startKafka, type RunningKafka } from './support/kafka-broker';
import { Hub } from './support/settlement-hub';

const unavailable = kafkaAvailable();
let broker: RunningKafka | undefined;
before(async () => {
  if (unavailable !== undefined) {
    process.stderr.write(
      `\n*** SKIPPED: settlement's Kafka messages against a real broker: ${unavailable}. ***\n\n`,
    );
    return;
  }
  broker = await startKafka();
});
after(async () => {
  await broker?.stop();
});

test(
  "a close and the money steps reach the broker in central-settlement's topics and envelope",
  { timeout: 6 * 60_000 },
  async (t) => {
    if (broker === undefined) return t.skip('no Kafka broker');
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      KAFKA_ENABLED: 'true',
      KAFKA_BROKERS: broker.brokers.join(','),
      KAFKA_GROUP_ID: `ledger-${randomUUID()}`,
    });
    const service = await buildService(config, {
      ledger: new EmbeddedLedger(),
      store: new MemoryMetadataStore(),
    });
    const seen: { topic: string; value: any }[] = [];
    let collector: Consumer | undefined;
    try {
      await service.app.listen({ host: '127.0.0.1', port: 0 });
      // The service created both topics at start: a collector can read them from the beginning.
      collector = new Kafka({
        clientId: 'test',
        brokers: broker.brokers,
        logLevel: logLevel.NOTHING,
      }).consumer({ groupId: `collector-${randomUUID()}` });
      await collector.connect();
      await collector.subscribe({
        topics: ['topic-deferredsettlement-close', 'topic-notification-event'],
        fromBeginning: true,
      });
      await collector.run({
        eachMessage: async ({ topic, message }) =>
          void seen.push({ topic, value: JSON.parse(message.value!.toString()) }),
      });
      const hub = new Hub(`http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`);
      await hub.onboardHub();
      for (const short of ['A', 'B']) await hub.onboard(short, '1000', '1000');
      assert.equal((await hub.transfer('A', 'B', '300', 'commit')).status, 201);
      const w1 = await hub.openWindowId();
      assert.equal(
        (
          await hub.v2('POST', `/settlementWindows/${w1}`, {
            state: 'CLOSED',
            reason: 'end of day',
          })
        ).status,
        200,
      );
      const s1 = (
        await hub.v2('POST', '/settlements', {
          settlementModel: 'DEFERREDNETUSD',
          reason: 'r',
          settlementWindows: [{ id: w1 }],
        })
      ).body.id as number;
      for (const state of [
        'PS_TRANSFERS_RECORDED',
        'PS_TRANSFERS_RESERVED',
        'PS_TRANSFERS_COMMITTED',
        'SETTLED',
      ])
        await hub.settleAll(s1, state);

      const deadline = Date.now() + 60_000;
      const changes = (): any[] =>
        seen
          .filter((m) => m.value.metadata.event.action === 'settlement-transfer-position-change')
          .map((m) => m.value);
      while (
        (changes().length < 2 || !seen.some((m) => m.topic === 'topic-deferredsettlement-close')) &&
        Date.now() < deadline
      )
        await new Promise((resolve) => setTimeout(resolve, 100));
      const close = seen.find((m) => m.topic === 'topic-deferredsettlement-close')!.value;
      assert.deepEqual(
        [
          close.metadata.event.type,
          close.metadata.event.action,
          close.content.payload.settlementWindowId,
          close.content.payload.reason,
        ],
        ['deferredsettlement', 'close', w1, 'end of day'],
      );
      assert.ok(
        seen
          .filter((m) => m.value.metadata.event.action === 'settlement-transfer-position-change')
          .every((m) => m.topic === 'topic-notification-event'),
      );
      assert.deepEqual(
        changes().map((n) => [
          n.to,
          n.content.headers['FSPIOP-Source'],
          n.content.payload.currency,
          n.content.payload.value,
        ]),
        [
          [hub.name('B'), 'Hub', 'USD', 0],
          [hub.name('A'), 'Hub', 'USD', 0],
        ],
      );
    } finally {
      await collector?.disconnect();
      await service.close();
    }
  },
);
