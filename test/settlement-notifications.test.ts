/**
 * central-settlement's Kafka messages, as the service hands them to its publisher (the Kafka
 * transport in production): a window close on topic-deferredsettlement-close, and a
 * settlement-transfer-position-change notification to each DFSP whose position a step moved —
 * recipients at PS_TRANSFERS_RESERVED, senders at PS_TRANSFERS_COMMITTED, reserved recipients
 * at an abort — carrying the position after the step. Embedded ledger, over HTTP.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { buildService } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MemoryMetadataStore } from '../src/metadata/memory';
import type { MojaloopMessage } from '../src/handlers/kafka/messages';
import {
  positionChangeNotification,
  windowCloseMessage,
} from '../src/handlers/kafka/settlement-notifications';
import { Hub } from './support/settlement-hub';

test("the envelopes: central-settlement's topic names, event type/action, headers and payload", () => {
  const at = new Date('2026-11-23T10:00:00.000Z');
  const change = positionChangeNotification(
    { participant: 'dfsp1', currency: 'USD', position: -12345n },
    at,
  );
  assert.equal(change.from, 'Hub');
  assert.equal(change.to, 'dfsp1');
  assert.deepEqual(change.content.headers, {
    'Content-Type': 'application/json',
    Date: at.toISOString(),
    'FSPIOP-Source': 'Hub',
    'FSPIOP-Destination': 'dfsp1',
  });
  assert.deepEqual(change.content.payload, {
    currency: 'USD',
    value: -123.45,
    changedDate: at.toISOString(),
  });
  assert.deepEqual(
    [change.metadata.event.type, change.metadata.event.action, change.metadata.event.state?.status],
    ['notification', 'settlement-transfer-position-change', 'success'],
  );
  // An amount a double cannot hold exactly goes as its exact decimal text.
  assert.equal(
    (
      positionChangeNotification(
        { participant: 'd', currency: 'USD', position: 9007199254740993n },
        at,
      ).content.payload as { value: unknown }
    ).value,
    '90071992547409.93',
  );
  const close = windowCloseMessage(7, 'end of day', { 'content-type': 'application/json' }, at);
  assert.deepEqual(
    [close.from, close.to, close.metadata.event.type, close.metadata.event.action],
    ['Hub', 'Hub', 'deferredsettlement', 'close'],
  );
  assert.deepEqual(close.content.payload, {
    settlementWindowId: 7,
    reason: 'end of day',
    headers: { 'content-type': 'application/json' },
  });
});

test(
  'a close and every money step produce their messages, with the positions after the step',
  { timeout: 120_000 },
  async () => {
    const produced: { topic: string; message: MojaloopMessage }[] = [];
    const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
      ledger: new EmbeddedLedger(),
      store: new MemoryMetadataStore(),
      settlementPublisher: {
        publish: async (topic, messages) =>
          void produced.push(...messages.map((message) => ({ topic, message }))),
      },
    });
    await service.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const hub = new Hub(`http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`);
      await hub.onboardHub();
      for (const short of ['A', 'B', 'Z']) await hub.onboard(short, '1000', '1000');
      assert.equal((await hub.transfer('A', 'B', '300', 'commit')).status, 201);
      assert.equal((await hub.transfer('Z', 'A', '20', 'commit')).status, 201);
      assert.equal((await hub.transfer('A', 'Z', '20', 'commit')).status, 201);
      const positionChanges = (): [string, unknown][] =>
        produced.splice(0).map(({ topic, message }) => {
          assert.equal(topic, 'notification');
          assert.equal(message.metadata.event.action, 'settlement-transfer-position-change');
          return [message.to!, (message.content.payload as { value: unknown }).value];
        });

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
      assert.equal(produced.length, 1);
      const [close] = produced.splice(0);
      assert.equal(close!.topic, 'settlementClose');
      assert.deepEqual(
        [close!.message.metadata.event.type, close!.message.metadata.event.action],
        ['deferredsettlement', 'close'],
      );
      assert.deepEqual(
        { ...(close!.message.content.payload as object), headers: undefined },
        { settlementWindowId: w1, reason: 'end of day', headers: undefined },
      );

      // S1: RECORDED moves nothing; RESERVED tells the recipient B (-300 → 0); COMMITTED the sender
      // A (300 → 0); Z (net 0) never.
      const s1 = (
        await hub.v2('POST', '/settlements', {
          settlementModel: 'DEFERREDNETUSD',
          reason: 'r',
          settlementWindows: [{ id: w1 }],
        })
      ).body.id as number;
      await hub.settleAll(s1, 'PS_TRANSFERS_RECORDED');
      assert.deepEqual(positionChanges(), []);
      await hub.settleAll(s1, 'PS_TRANSFERS_RESERVED');
      assert.deepEqual(positionChanges(), [[hub.name('B'), 0]]);
      await hub.settleAll(s1, 'PS_TRANSFERS_COMMITTED');
      assert.deepEqual(positionChanges(), [[hub.name('A'), 0]]);
      await hub.settleAll(s1, 'SETTLED');
      assert.deepEqual(positionChanges(), []);

      // S2 reserved then aborted: the recipient is told at reserve and again when its position goes
      // back.
      assert.equal((await hub.transfer('B', 'A', '50', 'commit')).status, 201);
      const w2 = await hub.openWindowId();
      await hub.v2('POST', `/settlementWindows/${w2}`, { state: 'CLOSED', reason: 'again' });
      produced.splice(0);
      const s2 = (
        await hub.v2('POST', '/settlements', {
          settlementModel: 'DEFERREDNETUSD',
          reason: 'r',
          settlementWindows: [{ id: w2 }],
        })
      ).body.id as number;
      await hub.settleAll(s2, 'PS_TRANSFERS_RECORDED');
      await hub.settleAll(s2, 'PS_TRANSFERS_RESERVED');
      assert.deepEqual(positionChanges(), [[hub.name('A'), 0]]);
      assert.equal(
        (await hub.v2('PUT', `/settlements/${s2}`, { state: 'ABORTED', reason: 'wrong' })).status,
        200,
      );
      assert.deepEqual(positionChanges(), [[hub.name('A'), -50]]);
    } finally {
      await service.close();
    }
  },
);
