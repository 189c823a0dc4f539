/**
 * What a process runs of the service (Config['roles']): central-ledger's handler command line read
 * into roles, the routes each role serves, a consumer per consumer group over the topics consumed,
 * and a process that does not sweep handing its due records over instead of keeping them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kafka } from 'kafkajs';
import { buildService } from '../../src/app';
import { loadConfig, type Config } from '../../src/config/config';
import { TransferService } from '../../src/domain/transfers/service';
import { handlerProcess } from '../../src/handlers/command-line';
import { KafkaTransport } from '../../src/handlers/kafka/transport';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import type { Ledger } from '../../src/ports/ledger';
import { newTransfer } from '../support/mojaloop-messages';
import { onboard } from '../support/onboard';

const [PAYER, PAYEE] = ['rolespayer', 'rolespayee'];

test("central-ledger's handler command line: any combination of flags, the others refused", () => {
  assert.deepEqual(handlerProcess(['handler', '--prepare'], 'central-ledger'), {
    roles: { api: false, settlementApi: false, consume: ['prepare'], expirySweep: false },
    notes: [],
  });
  const combined = handlerProcess(
    ['h', '--get', '--timeout', '--fulfil', '--position', '--prepare', '--get'],
    'central-ledger',
  );
  assert.deepEqual(combined.roles, {
    api: false,
    settlementApi: false,
    consume: ['get', 'fulfil', 'prepare'],
    expirySweep: true,
  });
  assert.deepEqual(combined.notes, [
    '--position: nothing of its own to do here (positions move in the ledger with each prepare and fulfil)',
  ]);
  const positions = handlerProcess(['handler', '--positionbatch', '--admin'], 'central-ledger');
  assert.deepEqual(positions.roles.consume, []);
  assert.equal(positions.roles.expirySweep, false);
  assert.equal(positions.notes.length, 2);
  // The bulk handlers consume bulk-api-adapter's topics; bulk-processing has nothing of its own.
  const bulk = handlerProcess(
    ['handler', '--bulkprepare', '--bulkfulfil', '--bulkget', '--bulkprocessing'],
    'central-ledger',
  );
  assert.deepEqual(bulk.roles.consume, ['bulkPrepare', 'bulkFulfil', 'bulkGet']);
  assert.equal(bulk.notes.length, 1);
  assert.match(bulk.notes[0]!, /--bulkprocessing: nothing of its own to do here/);
  assert.throws(() => handlerProcess([], 'central-ledger'), /no command: .*\nusage: /);
  assert.throws(() => handlerProcess(['--prepare'], 'central-ledger'), /--prepare: .*\nusage: /);
  assert.throws(
    () => handlerProcess(['handler', '--prepare', '--positions'], 'central-ledger'),
    /--positions: not a central-ledger handler command line\nusage: .*\[--prepare\]/,
  );
  // central-settlement's handlers: accepted, nothing consumed here; central-ledger's refused.
  const settlement = handlerProcess(
    ['h', '--deferredSettlement', '--grossSettlement', '--rules'],
    'central-settlement',
  );
  assert.deepEqual(settlement.roles, {
    api: false,
    settlementApi: false,
    consume: [],
    expirySweep: false,
  });
  assert.equal(settlement.notes.length, 3);
  assert.throws(() => handlerProcess(['h', '--prepare'], 'central-settlement'), /usage: /);
  assert.throws(() => handlerProcess(['h', '--rules'], 'central-ledger'), /usage: /);
});

test('the routes of each role: /health, /live and /metrics always; the API and /v2 as asked', async () => {
  const served = async (roles: Config['roles']): Promise<Record<string, number>> => {
    const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }, { roles }), {
      ledger: new EmbeddedLedger(),
      store: new MemoryMetadataStore(),
    });
    try {
      const status: Record<string, number> = {};
      for (const url of [
        '/health',
        '/live',
        '/metrics',
        '/participants',
        '/transfers/00000000-0000-4000-8000-000000000000',
        '/v2/health',
        '/v2/settlementWindows?state=OPEN',
      ])
        status[url] = (await service.app.inject({ method: 'GET', url })).statusCode;
      return status;
    } finally {
      await service.close();
    }
  };
  const handler = { api: false, settlementApi: false, consume: [], expirySweep: true };
  assert.deepEqual(await served(handler), {
    '/health': 200,
    '/live': 200,
    '/metrics': 200,
    '/participants': 404,
    '/transfers/00000000-0000-4000-8000-000000000000': 404,
    '/v2/health': 404,
    '/v2/settlementWindows?state=OPEN': 404,
  });
  assert.deepEqual(await served({ ...handler, settlementApi: true }), {
    '/health': 200,
    '/live': 200,
    '/metrics': 200,
    '/participants': 404,
    '/transfers/00000000-0000-4000-8000-000000000000': 404,
    '/v2/health': 200,
    '/v2/settlementWindows?state=OPEN': 200,
  });
  const api = await served({ ...handler, api: true, settlementApi: true });
  assert.equal(api['/participants'], 200);
  // A GET needs FSPIOP headers: refused as a request, not as an unknown route (404).
  assert.notEqual(api['/transfers/00000000-0000-4000-8000-000000000000'], 404);
});

test('a consumer per consumer group, over the topics this process consumes', () => {
  const asked: { groupId: string }[] = [];
  const kafka = {
    consumer: (options: { groupId: string }) => {
      asked.push(options);
      return { events: {}, on: () => undefined };
    },
    producer: () => ({}),
    admin: () => ({}),
  } as unknown as Kafka;
  const consumersOf = (config: Config['kafka'], consume: Config['roles']['consume']): unknown =>
    (
      new KafkaTransport({
        config,
        consume,
        transfers: undefined as never,
        fx: undefined as never,
        log: undefined as never,
        instance: 'test',
        kafka,
      }) as any
    ).consumers.map((c: any) => c.topics);
  const { kafka: shared } = loadConfig({});
  assert.deepEqual(consumersOf(shared, ['prepare', 'fulfil', 'get']), [
    ['topic-transfer-prepare', 'topic-transfer-fulfil', 'topic-transfer-get'],
  ]);
  assert.deepEqual(asked.splice(0), [{ groupId: 'central-ledger' }].map(withFetchOptions));
  const own = loadConfig(
    {},
    {
      kafka: {
        consumers: {
          prepare: { groupId: 'cl-group-transfer-prepare', clientId: 'cl-con-transfer-prepare' },
          fulfil: { groupId: 'cl-group-transfer-fulfil', clientId: 'cl-con-transfer-fulfil' },
        },
      },
    },
  ).kafka;
  assert.deepEqual(consumersOf(own, ['get', 'prepare']), [
    ['topic-transfer-get'],
    ['topic-transfer-prepare'],
  ]);
  assert.deepEqual(
    asked.splice(0).map((options) => options.groupId),
    ['central-ledger', 'cl-group-transfer-prepare'],
  );
  assert.deepEqual(consumersOf(own, []), [], 'an API process only produces');
  assert.deepEqual(asked, []);

  function withFetchOptions(options: { groupId: string }): unknown {
    const { consume } = shared;
    return {
      ...options,
      maxBytesPerPartition: consume.fetchMaxBytesPerPartition,
      maxBytes: consume.fetchMaxBytes,
      minBytes: consume.fetchMinBytes,
      maxWaitTimeInMs: consume.fetchMaxWaitMs,
      sessionTimeout: shared.sessionTimeoutMs,
      heartbeatInterval: shared.heartbeatIntervalMs,
    };
  }
});

/** The ledger, counting the transfers whose state it is asked for. */
function counting(ledger: EmbeddedLedger): Ledger & { asked: number } {
  const wrapped = Object.create(ledger) as Ledger & { asked: number };
  wrapped.asked = 0;
  wrapped.transferStates = (ids) => ((wrapped.asked += ids.length), ledger.transferStates(ids));
  return wrapped;
}

test('a process that does not sweep keeps what is in flight only: finished ones let go of, due ones handed over untold', async () => {
  let clock = Date.now();
  const ledger = new EmbeddedLedger(() => clock);
  const store = new MemoryMetadataStore();
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  await onboard((options) => service.app.inject(options), [PAYER, PAYEE], '100000', 100000);
  // A prepares and does not sweep; B fulfils; the sweeper tells the expiries.
  const asking = counting(ledger);
  const a = new TransferService(store, asking, { now: () => clock });
  const b = new TransferService(store, ledger, { now: () => clock });
  const watched = (id: string): boolean => (a as any).open.get(id) !== undefined;
  try {
    const crossing = newTransfer(PAYER, PAYEE, '4', 'USD', 120_000);
    const expiring = newTransfer(PAYER, PAYEE, '6', 'USD', 10_000);
    for (const t of [crossing, expiring]) await a.prepare(PAYER, t.body as never);
    await b.fulfil(
      crossing.transferId,
      { source: PAYEE, destination: PAYER },
      { transferState: 'COMMITTED', fulfilment: crossing.fulfilment },
    );
    await a.handOverDue();
    assert.equal(asking.asked, 0, 'young reservations: nothing asked');
    clock += 5_000;
    await a.handOverDue();
    assert.equal(asking.asked, 2, 'each watched for 5 s asked about once');
    assert.equal(watched(crossing.transferId), false, 'finished elsewhere: let go of');
    assert.equal(watched(expiring.transferId), true, 'still open: kept');
    clock = Date.parse(expiring.expiration) + 1_500;
    await a.handOverDue();
    assert.equal(watched(expiring.transferId), false, 'due: handed over');
    assert.equal(asking.asked, 2, 'without asking the ledger: the sweeper reads it');
    assert.equal((await store.transfers([expiring.transferId]))[0]!.state, 'RESERVED', 'untold');
    // The sweeping process finds it in the store and tells it.
    const sweeper = new TransferService(store, ledger, { now: () => clock });
    await sweeper.loadOpen();
    const told = await sweeper.expireDue();
    assert.deepEqual(
      told.map((r) => r.transferId),
      [expiring.transferId],
    );
  } finally {
    await service.close();
  }
});

test('a transactional producer per group consuming bulk topics, none with KAFKA_BULK_EXACTLY_ONCE off', () => {
  const producers: { transactionalId?: string }[] = [];
  const kafka = {
    consumer: () => ({ events: {}, on: () => undefined }),
    producer: (options: { transactionalId?: string } = {}) => {
      producers.push(options);
      return {};
    },
    admin: () => ({}),
  } as unknown as Kafka;
  const transactionalIds = (env: Record<string, string>): (string | undefined)[] => {
    producers.splice(0);
    new KafkaTransport({
      config: loadConfig(env).kafka,
      consume: ['prepare', 'bulkPrepare', 'bulkFulfil'],
      transfers: undefined as never,
      fx: undefined as never,
      bulk: { api: undefined as never, results: undefined as never },
      log: undefined as never,
      instance: 'ledger-0',
      kafka,
    });
    return producers.map((options) => options.transactionalId).filter((id) => id !== undefined);
  };
  assert.deepEqual(transactionalIds({}), ['ledger-0-central-ledger']);
  assert.deepEqual(transactionalIds({ KAFKA_BULK_EXACTLY_ONCE: 'false' }), []);
});
