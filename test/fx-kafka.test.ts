/**
 * Kafka drop-in mode for FX against a real broker: ml-api-adapter's fx envelopes in (fx-prepare,
 * fx-reserve, fx-abort, fx-get, and the dependent transfer's prepare and commit), central-ledger's
 * notifications out, as the shared reference (mojaloop-fx.md §3) lists them. Skipped loudly
 * without Java/Maven.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { FxClient, injecting, type Payment } from './support/fx-client';
import { kafkaAvailable, startKafka, type RunningKafka } from './support/kafka-broker';
import { fulfilMessage, fxMessage, newTransfer, prepareMessage } from './support/mojaloop-messages';

const unavailable = kafkaAvailable();
let broker: RunningKafka | undefined;
let producer: Producer | undefined;
let collector: Consumer | undefined;
let service: Service | undefined;
const seen: any[] = [];
const parties = FxClient.parties(randomBytes(3).toString('hex'));
const { A, B, F } = parties;
let client: FxClient;

before(async () => {
  if (unavailable !== undefined) {
    process.stderr.write(
      `\n*** SKIPPED: FX Kafka drop-in tests against a real broker: ${unavailable}. ***\n\n`,
    );
    return;
  }
  broker = await startKafka();
  const kafka = new Kafka({
    clientId: 'fx-test',
    brokers: broker.brokers,
    logLevel: logLevel.NOTHING,
  });
  producer = kafka.producer();
  await producer.connect();
  service = await buildService(
    loadConfig({
      LOG_LEVEL: 'silent',
      KAFKA_ENABLED: 'true',
      KAFKA_BROKERS: broker.brokers.join(','),
      KAFKA_GROUP_ID: `fx-${randomUUID()}`,
      EXPIRY_SWEEP_MS: '200',
    }),
    { ledger: new EmbeddedLedger(), store: new MemoryMetadataStore() },
  );
  collector = kafka.consumer({ groupId: `collector-${randomUUID()}` });
  await collector.connect();
  await collector.subscribe({ topic: 'topic-notification-event', fromBeginning: true });
  await collector.run({
    eachMessage: async ({ message }) => void seen.push(JSON.parse(message.value!.toString())),
  });
  client = new FxClient(injecting(service!.app), parties);
  await client.onboard();
});
after(async () => {
  await collector?.disconnect();
  await producer?.disconnect();
  await service?.close();
  await broker?.stop();
});

async function send(topic: 'prepare' | 'fulfil' | 'get', message: unknown): Promise<void> {
  await producer!.send({
    topic: `topic-transfer-${topic}`,
    messages: [{ value: JSON.stringify(message) }],
  });
}

async function notification(id: string, action: string): Promise<any> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const found = seen.find((n) => n.id === id && n.metadata.event.action === action);
    if (found !== undefined) return found;
    if (Date.now() > deadline)
      assert.fail(
        `no ${action} for ${id}; seen ${JSON.stringify(seen.filter((n) => n.id === id).map((n) => n.metadata.event.action))}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const fxPrepare = (p: Payment): any =>
  fxMessage('prepare', 'fx-prepare', p.commitRequestId, A, F, p.body);
const fxReserve = (p: Payment): any =>
  fxMessage('fulfil', 'fx-reserve', p.commitRequestId, F, A, {
    conversionState: 'RESERVED',
    fulfilment: p.fx.fulfilment,
    completedTimestamp: p.answeredAt,
  });

const fxAbort = (p: Payment): any =>
  fxMessage('fulfil', 'fx-abort', p.commitRequestId, F, A, {
    errorInformation: { errorCode: '5100', errorDescription: 'FXP withdraws' },
  });

test('the worked example through Kafka: fx-prepare, fx-reserve, the dependent prepare, commit with fx-notify (PATCH) to the FXP', async (t) => {
  if (broker === undefined) return t.skip(unavailable!);
  const p = client.payment();
  const prepare = fxPrepare(p);
  await send('prepare', prepare);
  const forward = await notification(p.commitRequestId, 'fx-prepare');
  assert.deepEqual(
    [forward.from, forward.to, forward.metadata.event.state.status],
    [A, F, 'success'],
  );
  assert.equal(forward.content.payload, prepare.content.payload, 'the FXP gets the body as sent');
  assert.deepEqual(forward.content.context, prepare.content.context);

  await send('fulfil', fxReserve(p));
  const reserved = await notification(p.commitRequestId, 'fx-reserve');
  assert.deepEqual([reserved.from, reserved.to], [F, A]);
  assert.deepEqual(await client.positions(), ['100', '0', '0', '0']);

  const transfer = { ...newTransfer(A, B, '265000', 'TZS'), transferId: p.transferId };
  transfer.body.transferId = p.transferId;
  await send('prepare', prepareMessage(transfer));
  await notification(p.transferId, 'prepare');
  assert.deepEqual(await client.positions(), ['100', '0', '265000', '0']);

  await send('fulfil', fulfilMessage(transfer, 'commit'));
  const patch = await notification(p.commitRequestId, 'fx-notify');
  assert.deepEqual(
    [patch.from, patch.to, patch.metadata.event.state.status],
    ['Hub', F, 'success'],
  );
  assert.equal(patch.content.payload.conversionState, 'COMMITTED', "the spec's PATCH body");
  assert.ok(typeof patch.content.payload.completedTimestamp === 'string');
  assert.deepEqual(
    patch.content.context,
    {},
    'no original payload: ml-api-adapter sends this body',
  );
  const commit = await notification(p.transferId, 'commit');
  assert.deepEqual([commit.from, commit.to], [B, A]);
  assert.deepEqual(await client.positions(), ['100', '-100', '265000', '-265000']);

  // Duplicates and GET.
  await send('prepare', fxPrepare(p));
  const duplicate = await notification(p.commitRequestId, 'fx-prepare-duplicate');
  assert.deepEqual(
    [duplicate.from, duplicate.to, duplicate.content.payload.conversionState],
    ['Hub', A, 'COMMITTED'],
  );
  await send('get', fxMessage('get', 'fx-get', p.commitRequestId, F, A, undefined));
  const got = await notification(p.commitRequestId, 'fx-get');
  assert.deepEqual([got.to, got.content.payload.conversionState], [F, 'COMMITTED']);
});

test("refusals and withdrawals: 4001 as an fx-prepare error to A, the FXP's fx-abort (isOriginalId), an unknown fx-get 3208", async (t) => {
  if (broker === undefined) return t.skip(unavailable!);
  const poor = client.payment('5000');
  await send('prepare', fxPrepare(poor));
  const refused = await notification(poor.commitRequestId, 'fx-prepare');
  assert.deepEqual(
    [refused.from, refused.to, refused.metadata.event.state.code],
    ['Hub', A, '4001'],
  );

  const p = client.payment();
  await send('prepare', fxPrepare(p));
  await notification(p.commitRequestId, 'fx-prepare');
  await send('fulfil', fxAbort(p));
  const aborted = await notification(p.commitRequestId, 'fx-abort');
  assert.deepEqual([aborted.from, aborted.to, aborted.content.context.isOriginalId], [F, A, true]);

  const unknown = randomUUID();
  await send('get', fxMessage('get', 'fx-get', unknown, A, F, undefined));
  const missing = await notification(unknown, 'fx-get');
  assert.deepEqual([missing.to, missing.metadata.event.state.code], [A, '3208']);
});

test("the FXP's fx-reject (conversionState ABORTED) is dropped, as central-ledger v19.14 drops it: no notification, the conversion still held for its fx-abort", async (t) => {
  if (broker === undefined) return t.skip(unavailable!);
  const p = client.payment();
  await send('prepare', fxPrepare(p));
  await notification(p.commitRequestId, 'fx-prepare');
  await send(
    'fulfil',
    fxMessage('fulfil', 'fx-reject', p.commitRequestId, F, A, {
      conversionState: 'ABORTED',
      completedTimestamp: p.answeredAt,
    }),
  );
  // Behind it on the same topic: answered once the reject was handled.
  await send('fulfil', fxAbort(p));
  const aborted = await notification(p.commitRequestId, 'fx-abort');
  assert.deepEqual(
    [aborted.from, aborted.to, aborted.metadata.event.state.status],
    [F, A, 'success'],
    'the withdrawal found the conversion still reserved',
  );
  assert.deepEqual(
    seen
      .filter((n) => n.id === p.commitRequestId)
      .map((n) => n.metadata.event.action)
      .sort(),
    ['fx-abort', 'fx-prepare'],
  );
});

test('an fx the FXP agreed to whose transfer never comes expires: one fx-timeout-reserved to A and F', async (t) => {
  if (broker === undefined) return t.skip(unavailable!);
  const p = client.payment('100', '265000', 1500);
  await send('prepare', fxPrepare(p));
  await notification(p.commitRequestId, 'fx-prepare');
  await send('fulfil', fxReserve(p));
  await notification(p.commitRequestId, 'fx-reserve');
  const expired = await notification(p.commitRequestId, 'fx-timeout-reserved');
  assert.deepEqual(
    [expired.from, expired.to, expired.metadata.event.state.code],
    ['Hub', A, '3303'],
  );
  assert.deepEqual(
    expired.content.context,
    { payer: A, payee: F },
    'ml-api-adapter tells both from the context',
  );
  assert.match(expired.content.headers['content-type'], /fxTransfers/);
  assert.deepEqual(
    await client.positions(),
    ['100', '-100', '265000', '-265000'],
    "A's reservation released",
  );
});
