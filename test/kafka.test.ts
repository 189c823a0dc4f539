/**
 * Kafka drop-in mode against a real broker (KRaft, jars from Maven Central via kafka/pom.xml),
 * fed messages shaped exactly like ml-api-adapter's; skipped loudly without Java/Maven.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MemoryMetadataStore } from '../src/metadata/memory';
import {
  feedAndCollect,
  kafkaAvailable,
  startKafka,
  type RunningKafka,
  type SeenNotification,
} from './support/kafka-broker';
import { freePort } from './support/net';
import { onboard } from './support/onboard';
import {
  abortMessage,
  fulfilMessage,
  getMessage,
  newTransfer,
  prepareMessage,
  type TestTransfer,
} from './support/mojaloop-messages';

const unavailable = kafkaAvailable();
let broker: RunningKafka | undefined;
let producer: Producer | undefined;
const seen: SeenNotification[] = [];
let collector: Consumer | undefined;

before(async () => {
  if (unavailable !== undefined) {
    process.stderr.write(
      `\n*** SKIPPED: Kafka drop-in tests against a real broker: ${unavailable}. ***\n\n`,
    );
    return;
  }
  broker = await startKafka();
  ({ producer, collector } = await feedAndCollect(broker, 2, seen));
});
after(async () => {
  await collector?.disconnect();
  await producer?.disconnect();
  await broker?.stop();
});

async function send(topic: 'prepare' | 'fulfil' | 'get', ...messages: unknown[]): Promise<void> {
  await producer!.send({
    topic: `topic-transfer-${topic}`,
    messages: messages.map((m) => ({ value: typeof m === 'string' ? m : JSON.stringify(m) })),
  });
}

/** Waits for the notifications about a transfer with a given action, and returns them. */
async function notifications(
  transferId: string,
  action: string,
  count = 1,
  timeoutMs = 20_000,
): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = seen.filter(
      (n) => n.value.id === transferId && n.value.metadata.event.action === action,
    );
    if (found.length >= count) {
      for (const n of found) assert.equal(n.key, transferId, 'the Kafka key is the transfer id');
      return found.map((n) => n.value);
    }
    if (Date.now() > deadline)
      assert.fail(
        `no ${action} notification for ${transferId}; seen: ${JSON.stringify(seen.filter((n) => n.value.id === transferId).map((n) => n.value.metadata.event.action))}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function assertFromHub(n: any, to: string, action: string, code: string): void {
  assert.equal(n.from, 'Hub');
  assert.equal(n.to, to);
  assert.equal(n.type, 'application/json');
  assert.equal(n.metadata.event.type, 'notification');
  assert.equal(n.metadata.event.action, action);
  assert.deepEqual(n.metadata.event.state.status, 'error');
  assert.equal(n.metadata.event.state.code, code);
  assert.equal(n.content.headers['fspiop-source'], 'Hub');
  assert.equal(n.content.headers['fspiop-destination'], to);
  assert.equal(n.content.payload.errorInformation.errorCode, code);
}

describe('Kafka drop-in mode', () => {
  let service: Service;
  const run = randomBytes(3).toString('hex');
  const payer = `kpayer${run}`;
  const payee = `kpayee${run}`;
  const position = async (name: string): Promise<string> =>
    String(
      JSON.parse(
        (
          await service.app.inject({
            method: 'GET',
            url: `/participants/${name}/positions?currency=USD`,
          })
        ).body,
      ).value,
    );

  before(async () => {
    if (broker === undefined) return;
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      KAFKA_ENABLED: 'true',
      KAFKA_BROKERS: broker.brokers.join(','),
      KAFKA_GROUP_ID: `ledger-${run}`,
      EXPIRY_SWEEP_MS: '200',
    });
    service = await buildService(config, {
      ledger: new EmbeddedLedger(),
      store: new MemoryMetadataStore(),
    });
    await onboard((options) => service.app.inject(options), [payer, payee], '1000', 500);
  });
  after(async () => {
    await service?.close();
  });

  test('prepare is forwarded to the payee as it came; commit goes to the payer; the money moves once', async (t) => {
    if (broker === undefined) return t.skip(unavailable!);
    const transfer = newTransfer(payer, payee, '100');
    const prepare = prepareMessage(transfer);
    await send('prepare', prepare);
    const [forward] = await notifications(transfer.transferId, 'prepare');
    assert.equal(forward.from, payer);
    assert.equal(forward.to, payee);
    assert.equal(forward.metadata.event.type, 'notification');
    assert.deepEqual(forward.metadata.event.state, {
      status: 'success',
      code: 0,
      description: 'action successful',
    });
    assert.equal(forward.metadata.correlationId, transfer.transferId);
    assert.equal(
      forward.content.payload,
      prepare.content.payload,
      'the payload data-URI is passed on unchanged',
    );
    assert.deepEqual(
      forward.content.context,
      prepare.content.context,
      'content.context is passed through untouched',
    );
    assert.deepEqual(
      forward.content.headers,
      prepare.content.headers,
      'a forward keeps the DFSP headers',
    );

    const commit = fulfilMessage(transfer, 'commit');
    await send('fulfil', commit);
    const [committed] = await notifications(transfer.transferId, 'commit');
    assert.equal(committed.from, payee);
    assert.equal(committed.to, payer);
    assert.equal(committed.metadata.event.state.status, 'success');
    assert.equal(committed.content.payload, commit.content.payload);
    assert.deepEqual(committed.content.context, commit.content.context);
    assert.equal(await position(payer), '100');
    assert.equal(await position(payee), '-100');

    // The same messages from the DFSPs again: duplicates, answered from the Hub, no money moved.
    await send('prepare', prepareMessage(transfer));
    const [duplicate] = await notifications(transfer.transferId, 'prepare-duplicate');
    assert.equal(duplicate.from, 'Hub');
    assert.equal(duplicate.to, payer);
    assert.equal(duplicate.content.payload.transferState, 'COMMITTED');
    await send('fulfil', fulfilMessage(transfer, 'commit'));
    const [fulfilDuplicate] = await notifications(transfer.transferId, 'fulfil-duplicate');
    assert.equal(fulfilDuplicate.to, payee);
    assert.equal(await position(payer), '100');
  });

  test('reserve: the payer gets the final state and the payee its PATCH from the same notification', async (t) => {
    if (broker === undefined) return t.skip(unavailable!);
    const transfer = newTransfer(payer, payee, '5');
    await send('prepare', prepareMessage(transfer));
    await notifications(transfer.transferId, 'prepare');
    await send('fulfil', fulfilMessage(transfer, 'reserve'));
    const [reserved] = await notifications(transfer.transferId, 'reserve');
    assert.equal(reserved.from, payee);
    assert.equal(reserved.to, payer);
    assert.equal(reserved.content.payload.transferState, 'COMMITTED');
    assert.equal(reserved.content.payload.fulfilment, transfer.fulfilment);
    assert.ok(reserved.content.payload.completedTimestamp);
  });

  test('a reject changes nothing and tells nobody, as in central-ledger; an abort releases the reservation and tells the payer', async (t) => {
    if (broker === undefined) return t.skip(unavailable!);
    const rejected = newTransfer(payer, payee, '7');
    const aborted = newTransfer(payer, payee, '8');
    const positionBefore = await position(payer);
    await send('prepare', prepareMessage(rejected), prepareMessage(aborted));
    await notifications(rejected.transferId, 'prepare');
    await notifications(aborted.transferId, 'prepare');
    await send('fulfil', fulfilMessage(rejected, 'reject'), abortMessage(aborted));
    // One partition: the reject is handled before the abort sent after it.
    await send('fulfil', abortMessage(rejected));
    await notifications(rejected.transferId, 'abort');
    assert.deepEqual(
      seen
        .filter((n) => n.value.id === rejected.transferId)
        .map((n) => n.value.metadata.event.action),
      ['prepare', 'abort'],
      'the reject is answered by nobody',
    );
    const [abort] = await notifications(aborted.transferId, 'abort');
    assert.equal(abort.from, payee);
    assert.equal(abort.to, payer);
    assert.ok(
      abort.content.context.originalRequestPayload,
      'ml-api-adapter replays the payee error body from the context',
    );
    await send('fulfil', abortMessage(aborted));
    await notifications(aborted.transferId, 'abort-duplicate');
    assert.equal(
      await position(payer),
      positionBefore,
      "the rejected and the aborted transfer left the payer's position",
    );
  });

  test('prepare errors go from the Hub to the payer: 3100, 3106, 4001, 4200', async (t) => {
    if (broker === undefined) return t.skip(unavailable!);
    const wrongSource = newTransfer(payer, payee, '1');
    const liquidity = newTransfer(payer, payee, '950');
    const limit = newTransfer(payer, payee, '450');
    const modified = newTransfer(payer, payee, '2');
    await send(
      'prepare',
      prepareMessage(wrongSource, { source: payee }),
      prepareMessage(liquidity),
      prepareMessage(modified),
    );
    assertFromHub(
      (await notifications(wrongSource.transferId, 'prepare'))[0],
      payee,
      'prepare',
      '3100',
    );
    assertFromHub(
      (await notifications(liquidity.transferId, 'prepare'))[0],
      payer,
      'prepare',
      '4001',
    );
    await notifications(modified.transferId, 'prepare');
    await send(
      'prepare',
      prepareMessage(modified, {
        body: { ...modified.body, amount: { amount: '3', currency: 'USD' } },
      }),
    );
    assertFromHub(
      (await notifications(modified.transferId, 'prepare', 2))[1],
      payer,
      'prepare',
      '3106',
    );
    // The payer has 100 + 5 committed and 2 reserved of its 500 cap: 450 breaks the cap, not
    // liquidity.
    await send('prepare', prepareMessage(limit));
    assertFromHub((await notifications(limit.transferId, 'prepare'))[0], payer, 'prepare', '4200');
  });

  test('every fulfil failure reaches the right party: bad fulfilment, wrong source, not RESERVED, expired', async (t) => {
    if (broker === undefined) return t.skip(unavailable!);
    const bad = newTransfer(payer, payee, '1');
    const wrongSource = newTransfer(payer, payee, '1');
    const expiring = newTransfer(payer, payee, '1', 'USD', 1500);
    await send(
      'prepare',
      prepareMessage(bad),
      prepareMessage(wrongSource),
      prepareMessage(expiring),
    );
    for (const x of [bad, wrongSource, expiring]) await notifications(x.transferId, 'prepare');

    await send(
      'fulfil',
      fulfilMessage(bad, 'commit', { fulfilment: randomBytes(32).toString('base64url') }),
    );
    const [validation] = await notifications(bad.transferId, 'abort-validation');
    assert.equal(validation.to, payer);
    assert.equal(validation.content.payload.errorInformation.errorCode, '3100');
    assertFromHub((await notifications(bad.transferId, 'commit'))[0], payee, 'commit', '3100');
    await send('fulfil', fulfilMessage(bad, 'commit', { fulfilment: bad.fulfilment }));
    assertFromHub(
      (await notifications(bad.transferId, 'fulfil-duplicate'))[0],
      payee,
      'fulfil-duplicate',
      '3106',
    );

    await send('fulfil', fulfilMessage(wrongSource, 'commit', { source: 'intruder' }));
    assertFromHub(
      (await notifications(wrongSource.transferId, 'commit'))[0],
      'intruder',
      'commit',
      '3100',
    );

    await new Promise((resolve) => setTimeout(resolve, 2000));
    await send('fulfil', fulfilMessage(expiring, 'commit'));
    assertFromHub((await notifications(expiring.transferId, 'commit'))[0], payee, 'commit', '3303');
    const [timeout] = await notifications(expiring.transferId, 'timeout-reserved', 1, 10_000);
    assert.equal(timeout.from, 'Hub');
    assert.equal(timeout.to, payer);
    assert.deepEqual(
      timeout.content.context,
      { payer, payee },
      'ml-api-adapter tells both parties from the context',
    );
    assert.equal(timeout.metadata.event.state.code, '3303');

    await send('fulfil', fulfilMessage(bad, 'reserve', { fulfilment: bad.fulfilment }));
    assert.ok((await notifications(bad.transferId, 'fulfil-duplicate', 2)).length >= 2);
  });

  test("get answers a funds movement's state to its DFSP, as central-ledger its reconciliation transfer", async (t) => {
    if (broker === undefined) return t.skip(unavailable!);
    const accounts = JSON.parse(
      (await service.app.inject({ method: 'GET', url: `/participants/${payer}/accounts` })).body,
    );
    const account = accounts.find((a: any) => a.ledgerAccountType === 'SETTLEMENT').id;
    const funds = newTransfer(payer, payee, '1');
    const reserved = await service.app.inject({
      method: 'POST',
      url: `/participants/${payer}/accounts/${account}`,
      payload: {
        transferId: funds.transferId,
        externalReference: 'r',
        action: 'recordFundsOutPrepareReserve',
        reason: 'r',
        amount: { amount: '1', currency: 'USD' },
      },
    });
    assert.equal(reserved.statusCode, 202, reserved.body);
    await send('get', getMessage(funds, payer));
    const [got] = await notifications(funds.transferId, 'get');
    assert.equal(got.to, payer);
    assert.deepEqual(got.content.payload, { transferState: 'RESERVED' });
    // Another DFSP: not a party to it (central-ledger's 3000).
    await send('get', getMessage(funds, payee));
    assertFromHub((await notifications(funds.transferId, 'get', 2))[1], payee, 'get', '3000');
    const aborted = await service.app.inject({
      method: 'PUT',
      url: `/participants/${payer}/accounts/${account}/transfers/${funds.transferId}`,
      payload: { action: 'recordFundsOutAbort', reason: 'r', externalReference: 'r' },
    });
    assert.equal(aborted.statusCode, 202, aborted.body);
  });

  test('get answers the requester; an unknown id gets 3208', async (t) => {
    if (broker === undefined) return t.skip(unavailable!);
    const transfer = newTransfer(payer, payee, '1');
    await send('prepare', prepareMessage(transfer));
    await notifications(transfer.transferId, 'prepare');
    await send('get', getMessage(transfer, payee));
    const [got] = await notifications(transfer.transferId, 'get');
    assert.equal(got.from, 'Hub');
    assert.equal(got.to, payee);
    assert.equal(got.content.payload.transferState, 'RESERVED');
    assert.equal(got.content.context, undefined, 'get notifications carry no context');
    const unknown = newTransfer(payer, payee, '1');
    await send('get', getMessage(unknown, payer));
    assertFromHub((await notifications(unknown.transferId, 'get'))[0], payer, 'get', '3208');
  });

  test('malformed messages: an error where a party can be named, skipped otherwise, never stopping the consumer', async (t) => {
    if (broker === undefined) return t.skip(unavailable!);
    const badUri = newTransfer(payer, payee, '1');
    const message = prepareMessage(badUri);
    message.content.payload = 'data:application/json;base64,not-json!';
    const unknownAction = newTransfer(payer, payee, '1');
    const strange = prepareMessage(unknownAction);
    strange.metadata.event.action = 'teleport';
    const missingField = newTransfer(payer, payee, '1');
    const { condition: _dropped, ...withoutCondition } = missingField.body;
    void _dropped;
    await send(
      'prepare',
      '{not json',
      JSON.stringify({ nothing: true }),
      message,
      strange,
      prepareMessage(missingField, { body: withoutCondition }),
    );
    assertFromHub((await notifications(badUri.transferId, 'prepare'))[0], payer, 'prepare', '3101');
    assertFromHub(
      (await notifications(unknownAction.transferId, 'prepare'))[0],
      payer,
      'prepare',
      '3101',
    );
    assertFromHub(
      (await notifications(missingField.transferId, 'prepare'))[0],
      payer,
      'prepare',
      '3101',
    );
    const after = newTransfer(payer, payee, '1');
    await send('prepare', prepareMessage(after));
    assert.equal(
      (await notifications(after.transferId, 'prepare'))[0].to,
      payee,
      'the consumer goes on after bad messages',
    );
  });
});

describe('Kafka burst', () => {
  test(
    'a burst whose answers exceed the broker message size is answered in full, and /health stays truthful',
    { timeout: 120_000 },
    async (t) => {
      if (broker === undefined) return t.skip(unavailable!);
      const run = randomBytes(3).toString('hex');
      const [payer, payee] = [`bpayer${run}`, `bpayee${run}`];
      const topics = {
        prepare: `burst-prepare-${run}`,
        fulfil: `burst-fulfil-${run}`,
        get: `burst-get-${run}`,
        notification: `burst-notification-${run}`,
      };
      // One fetch of prepares (up to 1 MB a partition) is answered with more than the notification
      // topic takes in one record batch, unless the answers are produced in smaller requests.
      const kafka = new Kafka({
        clientId: 'burst',
        brokers: broker.brokers,
        logLevel: logLevel.NOTHING,
      });
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({
        topics: [
          { topic: topics.prepare, numPartitions: 1 },
          { topic: topics.fulfil, numPartitions: 1 },
          { topic: topics.get, numPartitions: 1 },
          {
            topic: topics.notification,
            numPartitions: 1,
            configEntries: [{ name: 'max.message.bytes', value: String(600 * 1024) }],
          },
        ],
      });
      await admin.disconnect();
      const seenHere: any[] = [];
      const watcher = kafka.consumer({ groupId: `burst-watch-${run}` });
      await watcher.connect();
      await watcher.subscribe({ topic: topics.notification, fromBeginning: true });
      await watcher.run({
        eachMessage: async ({ message }) =>
          void seenHere.push(JSON.parse(message.value!.toString())),
      });
      const config = loadConfig({
        LOG_LEVEL: 'silent',
        KAFKA_ENABLED: 'true',
        KAFKA_BROKERS: broker.brokers.join(','),
        KAFKA_GROUP_ID: `burst-${run}`,
        KAFKA_TOPIC_PREPARE: topics.prepare,
        KAFKA_TOPIC_FULFIL: topics.fulfil,
        KAFKA_TOPIC_GET: topics.get,
        KAFKA_TOPIC_NOTIFICATION: topics.notification,
      });
      const service = await buildService(config, {
        ledger: new EmbeddedLedger(),
        store: new MemoryMetadataStore(),
      });
      try {
        await onboard((options) => service.app.inject(options), [payer, payee], '100000', 100000);
        const transfers = Array.from({ length: 800 }, () => newTransfer(payer, payee, '1'));
        for (let i = 0; i < transfers.length; i += 200) {
          await producer!.send({
            topic: topics.prepare,
            messages: transfers
              .slice(i, i + 200)
              .map((x) => ({ value: JSON.stringify(prepareMessage(x)) })),
          });
        }
        const deadline = Date.now() + 60_000;
        while (seenHere.length < transfers.length && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 100));
        const forwarded = new Set(
          seenHere
            .filter((n) => n.metadata.event.action === 'prepare' && n.from === payer)
            .map((n) => n.id),
        );
        assert.equal(forwarded.size, transfers.length, 'every prepare of the burst was forwarded');
        const health = JSON.parse(
          (await service.app.inject({ method: 'GET', url: '/health' })).body,
        );
        assert.equal(
          health.services.find((s: { name: string }) => s.name === 'broker:kafka').status,
          'OK',
        );
      } finally {
        await service.close();
        await watcher.disconnect();
      }
    },
  );
});

describe('Kafka delivery across a crash', () => {
  test(
    'killed mid-batch and restarted: no lost notification, no doubled ledger effect',
    { timeout: 180_000 },
    async (t) => {
      if (broker === undefined) return t.skip(unavailable!);
      const { dataDir, run, port, env } = await childService('crash', broker);
      const kafka = new Kafka({
        clientId: 'crash-test',
        brokers: broker.brokers,
        logLevel: logLevel.NOTHING,
      });
      const admin = kafka.admin();
      await admin.connect();
      await admin.createTopics({
        topics: [
          env.KAFKA_TOPIC_PREPARE,
          env.KAFKA_TOPIC_FULFIL,
          env.KAFKA_TOPIC_GET,
          env.KAFKA_TOPIC_NOTIFICATION,
        ].map((topic) => ({ topic, numPartitions: 1 })),
      });
      await admin.disconnect();
      const notes: any[] = [];
      const byId = new Map<string, TestTransfer>();
      // Plays ml-api-adapter and the payee: each prepare forwarded to the payee comes back as its
      // fulfil. A forward delivered again (a prepare redelivered while still open) gets the same
      // fulfil again, as an idempotent payee sends it: a fresh one would differ in its timestamp
      // (3106).
      const fulfilSent = new Map<string, string>();
      const watcher = kafka.consumer({ groupId: `watch-${run}` });
      await watcher.connect();
      await watcher.subscribe({ topic: env.KAFKA_TOPIC_NOTIFICATION, fromBeginning: true });
      await watcher.run({
        eachBatch: async ({ batch }) => {
          const fulfils: string[] = [];
          for (const message of batch.messages) {
            const note = JSON.parse(message.value!.toString());
            notes.push(note);
            const transfer = byId.get(note.id);
            if (
              note.metadata.event.action === 'prepare' &&
              note.metadata.event.state.status === 'success' &&
              transfer !== undefined
            ) {
              if (!fulfilSent.has(note.id))
                fulfilSent.set(note.id, JSON.stringify(fulfilMessage(transfer, 'commit')));
              fulfils.push(fulfilSent.get(note.id)!);
            }
          }
          for (let i = 0; i < fulfils.length; i += 200)
            await producer!.send({
              topic: env.KAFKA_TOPIC_FULFIL,
              messages: fulfils.slice(i, i + 200).map((value) => ({ value })),
            });
        },
      });

      let child = await startService(env, port);
      try {
        const payer = `cpayer${run}`;
        const payee = `cpayee${run}`;
        await onboard((options) => inject(port, options), [payer, payee], '100000', 100000);
        const transfers: TestTransfer[] = Array.from({ length: 2000 }, () =>
          newTransfer(payer, payee, '1'),
        );
        for (const x of transfers) byId.set(x.transferId, x);
        // In requests under the broker's 1 MB limit.
        for (let i = 0; i < transfers.length; i += 200) {
          await producer!.send({
            topic: env.KAFKA_TOPIC_PREPARE,
            messages: transfers
              .slice(i, i + 200)
              .map((x) => ({ value: JSON.stringify(prepareMessage(x)) })),
          });
        }
        // Kill it while it is working through them.
        const deadline = Date.now() + 60_000;
        while (
          notes.filter((n) => n.metadata.event.action === 'commit').length === 0 &&
          Date.now() < deadline
        )
          await new Promise((resolve) => setTimeout(resolve, 5));
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
        const beforeRestart = notes.filter((n) => n.metadata.event.action === 'commit').length;
        assert.ok(
          beforeRestart < transfers.length,
          `killed mid-run (${beforeRestart} of ${transfers.length} committed)`,
        );
        t.diagnostic(`killed with ${beforeRestart} of ${transfers.length} commits notified`);

        const restartIndex = notes.length;
        child = await startService(env, port);
        const done = Date.now() + 90_000;
        const committed = (): Set<string> =>
          new Set(
            notes
              .filter(
                (n) =>
                  n.metadata.event.action === 'commit' &&
                  n.metadata.event.state.status === 'success',
              )
              .map((n) => n.id),
          );
        while (committed().size < transfers.length && Date.now() < done)
          await new Promise((resolve) => setTimeout(resolve, 100));
        const forwarded = new Set(
          notes
            .filter(
              (n) =>
                n.metadata.event.action === 'prepare' &&
                n.metadata.event.state.status === 'success',
            )
            .map((n) => n.id),
        );
        for (const x of transfers) {
          assert.ok(forwarded.has(x.transferId), `prepare notification for ${x.transferId}`);
          assert.ok(committed().has(x.transferId), `commit notification for ${x.transferId}`);
        }
        const errors = notes.filter((n) => n.metadata.event.state.status === 'error');
        for (const e of errors)
          t.diagnostic(
            JSON.stringify(
              notes
                .filter((n) => n.id === e.id)
                .map((n) => [
                  notes.indexOf(n),
                  n.metadata.event.action,
                  n.metadata.event.state.status,
                  n.from,
                  n.to,
                ]),
            ),
          );
        t.diagnostic(`restart at note ${restartIndex}`);
        assert.deepEqual(
          errors.map((n) => n.content.payload.errorInformation),
          [],
          'no transfer was refused on redelivery',
        );
        const positions = JSON.parse(
          (
            await inject(port, {
              method: 'GET',
              url: `/participants/${payer}/positions?currency=USD`,
            })
          ).body,
        );
        assert.equal(
          String(positions.value),
          String(transfers.length),
          'each transfer moved its 1 USD exactly once',
        );
      } finally {
        child.kill('SIGKILL');
        await watcher.disconnect();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
});

describe('Kafka: a bare broker, and an expiry told once across a crash', () => {
  test(
    'starts with none of its topics on the broker; a late fulfil gets 3303 and the expiry reaches payer and payee once, also when killed after telling',
    { timeout: 180_000 },
    async (t) => {
      if (broker === undefined) return t.skip(unavailable!);
      // Topics no one created: the service must create them (KAFKA_TOPIC_PARTITIONS) rather than
      // exit.
      const sweepMs = 3000;
      const { dataDir, run, port, env } = await childService('bare', broker, {
        KAFKA_TOPIC_PARTITIONS: '2',
        EXPIRY_SWEEP_MS: String(sweepMs),
      });
      let child = await startService({ ...env, FAULT_POINT: 'expiry.after-notify' }, port);
      const kafka = new Kafka({
        clientId: 'bare-test',
        brokers: broker.brokers,
        logLevel: logLevel.NOTHING,
      });
      const admin = kafka.admin();
      await admin.connect();
      const metadata = await admin.fetchTopicMetadata({
        topics: [env.KAFKA_TOPIC_PREPARE, env.KAFKA_TOPIC_NOTIFICATION],
      });
      await admin.disconnect();
      assert.deepEqual(
        metadata.topics.map((topic) => topic.partitions.length),
        [2, 2],
        'created with the configured partitions',
      );
      const notes: any[] = [];
      const watcher = kafka.consumer({ groupId: `watch-${run}` });
      await watcher.connect();
      await watcher.subscribe({ topic: env.KAFKA_TOPIC_NOTIFICATION, fromBeginning: true });
      await watcher.run({
        eachMessage: async ({ message }) => void notes.push(JSON.parse(message.value!.toString())),
      });
      const waitFor = async (what: string, found: () => boolean): Promise<void> => {
        const deadline = Date.now() + 60_000;
        while (!found()) {
          if (Date.now() > deadline)
            assert.fail(
              `no ${what}; seen: ${JSON.stringify(notes.map((n) => n.metadata.event.action))}`,
            );
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      };
      try {
        const [payer, payee] = [`bpayer${run}`, `bpayee${run}`];
        await onboard((options) => inject(port, options), [payer, payee], '1000', 1000);
        const transfer = newTransfer(payer, payee, '7', 'USD', 4_000);
        await producer!.send({
          topic: env.KAFKA_TOPIC_PREPARE,
          messages: [{ value: JSON.stringify(prepareMessage(transfer)) }],
        });
        await waitFor('prepare forward', () =>
          notes.some((n) => n.id === transfer.transferId && n.metadata.event.action === 'prepare'),
        );
        await new Promise((resolve) =>
          setTimeout(resolve, Math.max(0, Date.parse(transfer.expiration) + 100 - Date.now())),
        );
        await producer!.send({
          topic: env.KAFKA_TOPIC_FULFIL,
          messages: [{ value: JSON.stringify(fulfilMessage(transfer, 'commit')) }],
        });
        await waitFor('3303 to the payee', () =>
          notes.some(
            (n) =>
              n.id === transfer.transferId &&
              n.to === payee &&
              n.metadata.event.state.code === '3303',
          ),
        );
        // The sweep tells both parties, then the fault point kills the service before the expiry is
        // recorded.
        await new Promise((resolve) =>
          child.exitCode !== null || child.signalCode !== null
            ? resolve(undefined)
            : child.once('exit', resolve),
        );
        assert.equal(child.signalCode, 'SIGKILL');
        child = await startService(env, port);
        const timeouts = (): any[] =>
          notes.filter(
            (n) => n.id === transfer.transferId && n.metadata.event.action === 'timeout-reserved',
          );
        // Told before the kill, and again by the restarted sweep: the record did not say it was
        // told.
        await waitFor('the expiry told again after the restart', () => timeouts().length >= 2);
        await new Promise((resolve) => setTimeout(resolve, 2 * sweepMs));
        const told = timeouts();
        assert.equal(told.length, 2, 'recorded after the second telling: never told a third time');
        assert.equal(
          new Set(told.map((n) => n.metadata.event.id)).size,
          1,
          'the repeat is recognisably the same event',
        );
        for (const n of told) {
          assert.equal(n.to, payer);
          assert.deepEqual(
            n.content.context,
            { payer, payee },
            'ml-api-adapter tells both parties from one notification',
          );
          assert.equal(n.metadata.event.state.code, '3303');
        }
      } finally {
        child.kill('SIGKILL');
        await watcher.disconnect();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
});

/** The environment of a service run as a child process, on topics, group and data of its own. */
async function childService(
  prefix: string,
  running: RunningKafka,
  extra: Record<string, string> = {},
) {
  const dataDir = mkdtempSync(join(tmpdir(), `kafka-${prefix}-`));
  const run = randomBytes(3).toString('hex');
  const port = await freePort();
  const env = {
    ...process.env,
    LOG_LEVEL: 'warn',
    PORT: String(port),
    DATA_DIR: dataDir,
    KAFKA_ENABLED: 'true',
    KAFKA_BROKERS: running.brokers.join(','),
    KAFKA_GROUP_ID: `${prefix}-${run}`,
    KAFKA_TOPIC_PREPARE: `${prefix}-prepare-${run}`,
    KAFKA_TOPIC_FULFIL: `${prefix}-fulfil-${run}`,
    KAFKA_TOPIC_GET: `${prefix}-get-${run}`,
    KAFKA_TOPIC_NOTIFICATION: `${prefix}-notification-${run}`,
    ...extra,
  };
  return { dataDir, run, port, env };
}

async function inject(
  port: number,
  options: { method: 'POST' | 'GET'; url: string; payload?: object },
): Promise<{ statusCode: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${options.url}`, {
    method: options.method,
    headers: options.payload === undefined ? {} : { 'content-type': 'application/json' },
    ...(options.payload === undefined ? {} : { body: JSON.stringify(options.payload) }),
  });
  return { statusCode: response.status, body: await response.text() };
}

async function startService(env: NodeJS.ProcessEnv, port: number): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(__dirname, '..', 'src', 'main.ts')],
    { env, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) return child;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error('the service did not start');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
