/**
 * Bulk transfers end to end: DFSPs' requests to a real bulk-api-adapter v17.2.6, which writes
 * the items to the object store (FerretDB) and the requests to a real Kafka broker; the service
 * in Kafka mode consumes them and answers on topic-notification-event, and bulk-api-adapter's
 * notification handler calls the DFSPs back. Skips loudly without Java/Maven (Kafka), FerretDB or
 * bulk-api-adapter.
 *
 * First the edge alone, over a scripted bulk flow: bulk-api-adapter reads what the edge writes
 * (the payee's POST with its individualTransfers, the final PUTs with individualTransferResults,
 * PUT …/error, the GET's answer). Then the bulk flow itself (src/domain/bulk/service.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import { buildService, type BulkFlowParts, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import type { BulkApi, BulkDelivery, BulkNotice, ForwardedTransfer } from '../src/domain/bulk/api';
import type { BulkRecord } from '../src/ports/bulk';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger } from '../src/ports/ledger';
import { MemoryMetadataStore } from '../src/metadata/memory';
import {
  bulkApiAdapterUnavailable,
  bulkEndpoints,
  bulkHeaders,
  startBulkApiAdapter,
} from './support/bulk-api-adapter';
import { ferretDbUnavailable, startFerretDb, type RunningFerretDb } from './support/ferretdb';
import { kafkaAvailable, startKafka, type RunningKafka } from './support/kafka-broker';
import { scratchDir } from './support/leftovers';
import { Dfsps } from './support/ml-api-adapter';
import { newTransfer, type TestTransfer } from './support/mojaloop-messages';
import { freePort } from './support/net';
import { onboard } from './support/onboard';
import {
  call,
  sleep,
  startProcess,
  stopProcess,
  until,
  type Started,
} from './support/service-process';
import { useRealCluster } from './support/real-cluster';

const WHAT = 'bulk transfers behind a real bulk-api-adapter';
const CALLBACK_WITHIN_MS = 60_000;
const unavailable = kafkaAvailable() ?? ferretDbUnavailable() ?? bulkApiAdapterUnavailable();

let broker: RunningKafka | undefined;
let ferret: RunningFerretDb | undefined;
const dfsps = new Dfsps();
let callbacks = '';
const workDir = scratchDir('bulk-kafka-');

before(async () => {
  if (unavailable !== undefined) {
    process.stderr.write(`\n*** SKIPPED: ${WHAT}: ${unavailable}. ***\n\n`);
    return;
  }
  [broker, ferret, callbacks] = await Promise.all([startKafka(), startFerretDb(), dfsps.start()]);
});

after(async () => {
  await dfsps.stop();
  await ferret?.stop();
  await broker?.stop();
});

/** A POST /bulkTransfers body of transfers of `amounts`, and the transfers (their fulfilments). */
function newBulk(payer: string, payee: string, amounts: string[], expiresInMs = 600_000) {
  const transfers = amounts.map((amount) => newTransfer(payer, payee, amount, 'USD', expiresInMs));
  const body = {
    bulkTransferId: randomUUID(),
    bulkQuoteId: randomUUID(),
    payerFsp: payer,
    payeeFsp: payee,
    expiration: transfers[0]!.expiration,
    individualTransfers: transfers.map((t: TestTransfer) => ({
      transferId: t.transferId,
      transferAmount: { amount: t.amount, currency: t.currency },
      ilpPacket: t.body['ilpPacket'],
      condition: t.condition,
    })),
  };
  return { body, transfers };
}

/** What `dfsp` received about bulk `id` by `method` on `path` (the id written `{id}`). */
function received(dfsp: string, id: string, method: string, path: string) {
  return dfsps.received
    .filter((c) => c.dfsp === dfsp && c.method === method)
    .filter((c) => c.path.includes(id) || c.body?.bulkTransferId === id)
    .filter((c) => c.path.replace(id, '{id}') === path);
}

/**
 * Each of `dfsps` told of an unknown bulk through bulk-api-adapter (its GET answered with an
 * error callback): bulk-api-adapter has read and cached their callback endpoints.
 */
async function notifiedBefore(base: string, dfsps: readonly string[]): Promise<void> {
  for (const dfsp of dfsps) {
    const unknown = randomUUID();
    await call(base, 'GET', `/bulkTransfers/${unknown}`, undefined, bulkHeaders(dfsp));
    await until(
      `${dfsp}'s endpoints read by bulk-api-adapter`,
      async () => nonEmpty(received(dfsp, unknown, 'PUT', '/bulkTransfers/{id}/error')),
      CALLBACK_WITHIN_MS,
    );
  }
}

/** The payee's PUT /bulkTransfers/{id} with these results, through bulk-api-adapter. */
function putResults(
  base: string,
  parties: { payee: string; payer: string },
  id: string,
  results: Record<string, unknown>[],
) {
  return call(
    base,
    'PUT',
    `/bulkTransfers/${id}`,
    {
      bulkTransferState: 'COMPLETED',
      completedTimestamp: new Date().toISOString(),
      individualTransferResults: results,
    },
    bulkHeaders(parties.payee, parties.payer),
  );
}

/**
 * A bulk flow that answers as told: the payee gets every item forwarded, a PUT ends the bulk
 * COMPLETED with the payee's results, a PUT …/error ends it with that error, a GET tells the
 * state. Only what the edge needs of it, to check bulk-api-adapter reads the edge's answers.
 */
function scriptedFlow({ stores }: BulkFlowParts): BulkApi {
  const bulks = new Map<string, BulkRecord>();
  const record = (id: string): BulkRecord => {
    const found = bulks.get(id);
    if (found === undefined) throw new Error(`unknown bulk ${id}`);
    return found;
  };
  const final = (bulk: BulkRecord, results: Record<string, unknown>[]): BulkNotice[] =>
    [bulk.payerFsp, bulk.payeeFsp].map((to) => ({
      kind: 'state',
      cause: 'fulfil',
      to,
      bulk,
      bulkTransferState: 'COMPLETED',
      completedTimestamp: new Date().toISOString(),
      results: results.map((r) => ({
        transferId: String(r['transferId']),
        fulfilment: String(r['fulfilment']),
      })),
    }));
  return {
    async prepare(delivery: BulkDelivery, body) {
      const items = await stores.individualTransfers(delivery.messageId);
      const bulk: BulkRecord = {
        ...body,
        prepareHash: body.hash,
        prepareMessageId: delivery.messageId,
        state: 'ACCEPTED',
        members: [],
        headers: delivery.headers,
        createdAt: new Date().toISOString(),
        version: 1,
      };
      bulks.set(body.bulkTransferId, bulk);
      const transfers = items.map((item) => item as unknown as ForwardedTransfer);
      return [{ kind: 'forward', to: body.payeeFsp, bulk, transfers }];
    },
    async fulfil(delivery, body) {
      // bulk-api-adapter answers the payee before its saves land.
      const results = await until(
        'the payee’s results in the object store',
        async () => {
          const found = await stores.individualTransferFulfils(delivery.messageId);
          return found.length === body.count ? found : undefined;
        },
        10_000,
      );
      return final(record(body.bulkTransferId), results);
    },
    async error(_delivery, body) {
      const bulk = record(body.bulkTransferId);
      return [bulk.payerFsp, bulk.payeeFsp].map((to) => ({
        kind: 'error',
        cause: 'fulfil',
        to,
        bulkTransferId: bulk.bulkTransferId,
        errorInformation: body.errorInformation,
      }));
    },
    async get(bulkTransferId, requester) {
      const bulk = record(bulkTransferId);
      return [
        { kind: 'state', cause: 'get', to: requester, bulk, bulkTransferState: 'PROCESSING' },
      ];
    },
    async withoutMembers(records) {
      return [...records];
    },
    async finishExpired() {
      return [];
    },
  };
}

/** The service and a bulk-api-adapter in front of it. */
interface Hub {
  adapter: Started;
  /** A new payer and payee, `liquidity` each, their bulk callbacks registered. */
  parties(liquidity?: string): Promise<[string, string]>;
  /** A participant's POSITION balance (reservations included), as the admin API reports it. */
  position(name: string): Promise<string>;
  /**
   * A service process: kill -9 (unless its fault point killed it already), then the same again
   * (same port, data, group), without a fault point.
   */
  crashAndRestart(): Promise<void>;
  /** Resolves once the service process is dead (its fault point reached). */
  died(): Promise<void>;
  stop(): Promise<void>;
}

let hubs = 0;

/**
 * The service in this process over `ledger` (with its own bulk flow, if given), or, without a
 * ledger, as a process of its own on the embedded ledger (one that can be killed).
 */
async function startHub(options: {
  ledger?: () => Ledger;
  bulkFlow?: (parts: BulkFlowParts) => BulkApi;
  /** The service process's FAULT_POINT until its first restart. */
  faultPoint?: string;
}): Promise<Hub> {
  const run = `${randomUUID().slice(0, 6)}${(hubs += 1)}`;
  const port = await freePort();
  const env = {
    LOG_LEVEL: 'warn',
    PORT: String(port),
    KAFKA_ENABLED: 'true',
    KAFKA_BROKERS: broker!.brokers.join(','),
    KAFKA_GROUP_ID: `ledger-${run}`,
    MONGODB_URL: ferret!.url,
    MONGODB_DATABASE: `mlos_${run}`,
    EXPIRY_SWEEP_MS: '200',
    // A killed member holds its partitions until its session expires: with the default 30 s,
    // half of a callback's wait after a kill -9 went on that alone (30 s measured, twice).
    KAFKA_SESSION_TIMEOUT_MS: '10000',
  };
  let service: Service | undefined;
  let child: Started | undefined;
  let exited: Promise<void> | undefined;
  const childEnv = { ...process.env, ...env, LEDGER_BACKEND: 'embedded', DATA_DIR: workDir + run };
  const startChild = async (faultPoint?: string): Promise<void> => {
    child = await startProcess(
      'service',
      SERVICE_ARGS,
      { ...childEnv, ...(faultPoint === undefined ? {} : { FAULT_POINT: faultPoint }) },
      port,
      `${workDir}/service-${run}.log`,
      '/health',
    );
    const started = child.child;
    exited = new Promise((resolve) => started.once('exit', () => resolve()));
  };
  // The group would read the bulks of the hubs before from the beginning: the first answer
  // would reach the fault point before this hub's bulk does.
  if (options.faultPoint !== undefined) await skipEarlierBulks(env.KAFKA_GROUP_ID);
  if (options.ledger === undefined) await startChild(options.faultPoint);
  else {
    service = await buildService(loadConfig(env), {
      ledger: options.ledger(),
      store: new MemoryMetadataStore(),
      ...(options.bulkFlow === undefined ? {} : { bulkFlow: options.bulkFlow }),
    });
    await service.app.listen({ host: '127.0.0.1', port });
  }
  const base = `http://127.0.0.1:${port}`;
  const inject = async (request: { method: 'GET' | 'POST'; url: string; payload?: object }) => {
    const answer = await call(base, request.method, request.url, request.payload);
    return { statusCode: answer.status, body: answer.text };
  };
  let pairs = 0;
  const adapter = await startBulkApiAdapter({
    centralLedger: base,
    brokers: broker!.brokers,
    mongo: { host: ferret!.host, port: ferret!.port, database: `mlos_${run}` },
    port: await freePort(),
    workDir,
    logDir: workDir,
  });
  return {
    adapter,
    async parties(liquidity = '1000000') {
      pairs += 1;
      const names: [string, string] = [`bpayer${run}${pairs}`, `bpayee${run}${pairs}`];
      await onboard(inject, names, liquidity, 1_000_000);
      for (const dfsp of names)
        for (const endpoint of bulkEndpoints(callbacks, dfsp)) {
          const url = `/participants/${dfsp}/endpoints`;
          const added = await inject({ method: 'POST', url, payload: endpoint });
          assert.equal(added.statusCode, 201, added.body);
        }
      return names;
    },
    async position(name) {
      const accounts = JSON.parse(
        (await inject({ method: 'GET', url: `/participants/${name}/accounts` })).body,
      );
      const account = accounts.find(
        (a: { ledgerAccountType: string }) => a.ledgerAccountType === 'POSITION',
      );
      return String(account.value);
    },
    async crashAndRestart() {
      if (child === undefined) throw new Error('the service runs in this process');
      child.child.kill('SIGKILL');
      await exited;
      await startChild();
    },
    async died() {
      let dead = false;
      void exited!.then(() => (dead = true));
      await until('the service’s death at its fault point', async () => dead || undefined, 60_000);
    },
    async stop() {
      await stopProcess(adapter);
      await service?.close();
      if (child !== undefined) await stopProcess(child);
    },
  };
}

const SERVICE_ARGS = ['--import', 'tsx', join(__dirname, '..', 'src', 'main.ts')];

describe(`${WHAT}: the Kafka edge over a scripted flow`, () => {
  let hub: Hub | undefined;
  let payer = '';
  let payee = '';

  before(async () => {
    if (broker === undefined || ferret === undefined) return;
    hub = await startHub({ ledger: () => new EmbeddedLedger(), bulkFlow: scriptedFlow });
    [payer, payee] = await hub.parties('1000');
  });

  after(async () => {
    await hub?.stop();
  });

  test('the payee’s POST, the final PUTs with their results, a GET’s answer, PUT …/error', async (t) => {
    if (hub === undefined) return t.skip(unavailable ?? 'not started');
    const base = hub.adapter.base;
    const { body, transfers } = newBulk(payer, payee, ['300', '400']);
    const id = body.bulkTransferId;
    const posted = await call(base, 'POST', '/bulkTransfers', body, bulkHeaders(payer, payee));
    assert.equal(posted.status, 202, posted.text);
    const [forwarded] = await until(
      'the payee’s POST /bulkTransfers',
      async () => nonEmpty(received(payee, id, 'POST', '/bulkTransfers')),
      CALLBACK_WITHIN_MS,
    );
    assert.equal(forwarded!.headers['fspiop-source'], 'Hub');
    assert.equal(forwarded!.headers['fspiop-destination'], payee);
    assert.equal(forwarded!.body.bulkQuoteId, body.bulkQuoteId);
    assert.deepEqual(
      forwarded!.body.individualTransfers.map((x: { transferId: string }) => x.transferId).sort(),
      transfers.map((x) => x.transferId).sort(),
    );

    const results = transfers.map((x) => ({ transferId: x.transferId, fulfilment: x.fulfilment }));
    const put = await putResults(base, { payee, payer }, id, results);
    assert.equal(put.status, 200, put.text);
    for (const dfsp of [payer, payee]) {
      const [final] = await until(
        `${dfsp}'s PUT /bulkTransfers/{id}`,
        async () => nonEmpty(received(dfsp, id, 'PUT', '/bulkTransfers/{id}')),
        CALLBACK_WITHIN_MS,
      );
      assert.equal(final!.body.bulkTransferState, 'COMPLETED');
      assert.deepEqual(
        final!.body.individualTransferResults
          .map((r: { transferId: string; fulfilment: string }) => [r.transferId, r.fulfilment])
          .sort(),
        results.map((r) => [r.transferId, r.fulfilment]).sort(),
      );
    }

    const got = await call(base, 'GET', `/bulkTransfers/${id}`, undefined, bulkHeaders(payer));
    assert.equal(got.status, 202, got.text);
    await until(
      'the GET’s answer',
      async () => (received(payer, id, 'PUT', '/bulkTransfers/{id}').length > 1 ? true : undefined),
      CALLBACK_WITHIN_MS,
    );
    const answer = received(payer, id, 'PUT', '/bulkTransfers/{id}')[1]!;
    assert.equal(answer.body.bulkTransferState, 'PROCESSING');

    const other = newBulk(payer, payee, ['1']);
    const otherId = other.body.bulkTransferId;
    await call(base, 'POST', '/bulkTransfers', other.body, bulkHeaders(payer, payee));
    await until(
      'the second bulk forwarded',
      async () => nonEmpty(received(payee, otherId, 'POST', '/bulkTransfers')),
      CALLBACK_WITHIN_MS,
    );
    const errorInformation = { errorCode: '5100', errorDescription: 'payee refused the bulk' };
    const refused = await call(
      base,
      'PUT',
      `/bulkTransfers/${otherId}/error`,
      { errorInformation },
      bulkHeaders(payee, payer),
    );
    assert.equal(refused.status, 200, refused.text);
    for (const dfsp of [payer, payee]) {
      const [error] = await until(
        `${dfsp}'s PUT /bulkTransfers/{id}/error`,
        async () => nonEmpty(received(dfsp, otherId, 'PUT', '/bulkTransfers/{id}/error')),
        CALLBACK_WITHIN_MS,
      );
      assert.deepEqual(error!.body, { errorInformation });
    }
    // Every callback once.
    for (const dfsp of [payer, payee]) {
      assert.equal(received(dfsp, id, 'PUT', '/bulkTransfers/{id}').length, dfsp === payer ? 2 : 1);
      assert.equal(received(dfsp, otherId, 'PUT', '/bulkTransfers/{id}/error').length, 1);
    }
    assert.equal(received(payee, id, 'POST', '/bulkTransfers').length, 1);
  });
});

function nonEmpty<T>(list: T[]): T[] | undefined {
  return list.length === 0 ? undefined : list;
}

const cluster = useRealCluster('bulk transfers behind bulk-api-adapter');

realFlowSuite('embedded ledger', () => () => new EmbeddedLedger());
realFlowSuite('three-replica TigerBeetle cluster', () =>
  cluster.current() === undefined ? undefined : () => cluster.ledger(),
);

/** Each transfer's line of a callback: its fulfilment, or its error code. */
function linesOf(callback: { body: any }): Record<string, string> {
  const lines: Record<string, string> = {};
  for (const result of callback.body.individualTransferResults ?? [])
    lines[result.transferId] = result.fulfilment ?? result.errorInformation?.errorCode;
  return lines;
}

function realFlowSuite(label: string, ledger: () => (() => Ledger) | undefined): void {
  describe(`${WHAT}: the bulk flow (${label})`, () => {
    let hub: Hub | undefined;
    before(async () => {
      const chosen = ledger();
      if (broker === undefined || ferret === undefined || chosen === undefined) return;
      hub = await startHub({ ledger: chosen });
    });
    after(async () => {
      await hub?.stop();
    });

    const request = async (
      method: string,
      url: string,
      headers: Record<string, string>,
      body?: unknown,
    ): Promise<void> => {
      const answer = await call(hub!.adapter.base, method, url, body, headers);
      assert.equal(answer.status, method === 'PUT' ? 200 : 202, `${method} ${url}: ${answer.text}`);
    };
    const prepare = async (
      payer: string,
      payee: string,
      amounts: string[],
      expiresInMs?: number,
    ) => {
      const bulk = newBulk(payer, payee, amounts, expiresInMs);
      await request('POST', '/bulkTransfers', bulkHeaders(payer, payee), bulk.body);
      return { ...bulk, id: bulk.body.bulkTransferId };
    };
    const put = async (
      payee: string,
      payer: string,
      id: string,
      results: Record<string, unknown>[],
    ): Promise<void> => {
      const answer = await putResults(hub!.adapter.base, { payee, payer }, id, results);
      assert.equal(answer.status, 200, answer.text);
    };
    /** The `nth` callback `dfsp` got about bulk `id` on `path`, waited for. */
    const callback = async (dfsp: string, id: string, method: string, path: string, nth = 1) => {
      const found = await until(
        `${dfsp}'s ${method} ${path} #${nth}`,
        async () => {
          const got = received(dfsp, id, method, path);
          return got.length >= nth ? got[nth - 1] : undefined;
        },
        CALLBACK_WITHIN_MS,
      );
      return found!;
    };
    /** Waits for each party's final PUT: COMPLETED, with these lines. */
    const toldCompleted = async (
      parties: string[],
      id: string,
      lines: Record<string, string>,
    ): Promise<void> => {
      for (const dfsp of parties) {
        const final = await callback(dfsp, id, 'PUT', '/bulkTransfers/{id}');
        assert.equal(final.body.bulkTransferState, 'COMPLETED');
        assert.deepEqual(linesOf(final), lines);
      }
    };
    const forwardedIds = async (payee: string, id: string): Promise<string[]> =>
      (await callback(payee, id, 'POST', '/bulkTransfers')).body.individualTransfers.map(
        (x: { transferId: string }) => x.transferId,
      );
    const fulfilled = (x: TestTransfer) => ({ transferId: x.transferId, fulfilment: x.fulfilment });
    const byId = (transfers: TestTransfer[], id: string): TestTransfer =>
      transfers.find((x) => x.transferId === id)!;
    /** Waits a moment, then asserts each callback about `id` came once. */
    const everyCallbackOnce = async (id: string): Promise<void> => {
      await sleep(2_000);
      const seen = dfsps.received
        .filter((c) => c.path.includes(id) || c.body?.bulkTransferId === id)
        .map((c) => `${c.dfsp} ${c.method} ${c.path}`);
      const counts = new Map<string, number>();
      for (const key of seen) counts.set(key, (counts.get(key) ?? 0) + 1);
      // A GET's answer is a PUT of its own: the tests that GET count those themselves.
      for (const [key, count] of counts) assert.equal(count, 1, `${key}: ${count} times`);
    };

    test("the reference's worked example, with its fixed outcome", async (t) => {
      if (hub === undefined) return t.skip(unavailable ?? 'no cluster');
      const [a, b] = await hub.parties('1000');
      const bulk = await prepare(a, b, ['300', '400', '500']);
      const forwarded = await forwardedIds(b, bulk.id);
      // bulk-api-adapter saves the items in parallel: which one the liquidity refuses is the
      // object store's order, not the request's (the reference's §13).
      assert.equal(forwarded.length, 2);
      const [first, second] = forwarded.map((id) => byId(bulk.transfers, id)) as [
        TestTransfer,
        TestTransfer,
      ];
      const refused = bulk.transfers.find((x) => !forwarded.includes(x.transferId))!;
      assert.equal(received(a, bulk.id, 'PUT', '/bulkTransfers/{id}').length, 0);
      const reserved = Number(first.amount) + Number(second.amount);
      assert.deepEqual([await hub.position(a), await hub.position(b)], [String(reserved), '0']);
      await put(b, a, bulk.id, [
        fulfilled(first),
        {
          transferId: second.transferId,
          errorInformation: { errorCode: '5100', errorDescription: 'payee refused' },
        },
      ]);
      const toPayer = await callback(a, bulk.id, 'PUT', '/bulkTransfers/{id}');
      const toPayee = await callback(b, bulk.id, 'PUT', '/bulkTransfers/{id}');
      assert.equal(toPayer.body.bulkTransferState, 'COMPLETED');
      assert.deepEqual(linesOf(toPayer), {
        [first.transferId]: first.fulfilment,
        [second.transferId]: '5100',
        [refused.transferId]: '4001',
      });
      assert.equal(toPayee.body.bulkTransferState, 'COMPLETED');
      assert.deepEqual(linesOf(toPayee), {
        [first.transferId]: first.fulfilment,
        [second.transferId]: '5100',
      });
      assert.deepEqual(
        [await hub.position(a), await hub.position(b)],
        [first.amount, `-${first.amount}`],
      );
      await everyCallbackOnce(bulk.id);
    });

    test('all committed', async (t) => {
      if (hub === undefined) return t.skip(unavailable ?? 'no cluster');
      const [a, b] = await hub.parties();
      const bulk = await prepare(a, b, ['10', '20', '30.5']);
      assert.equal((await forwardedIds(b, bulk.id)).length, 3);
      await put(b, a, bulk.id, bulk.transfers.map(fulfilled));
      const all = Object.fromEntries(bulk.transfers.map((x) => [x.transferId, x.fulfilment]));
      await toldCompleted([a, b], bulk.id, all);
      assert.deepEqual([await hub.position(a), await hub.position(b)], ['60.5', '-60.5']);
      await everyCallbackOnce(bulk.id);
    });

    test('all refused at prepare: the payer told at once, the payee never', async (t) => {
      if (hub === undefined) return t.skip(unavailable ?? 'no cluster');
      const [a, b] = await hub.parties('100');
      const bulk = await prepare(a, b, ['300', '400']);
      const final = await callback(a, bulk.id, 'PUT', '/bulkTransfers/{id}');
      assert.equal(final.body.bulkTransferState, 'REJECTED');
      assert.deepEqual(
        linesOf(final),
        Object.fromEntries(bulk.transfers.map((x) => [x.transferId, '4001'])),
      );
      await everyCallbackOnce(bulk.id);
      assert.equal(received(b, bulk.id, 'POST', '/bulkTransfers').length, 0);
      assert.deepEqual([await hub.position(a), await hub.position(b)], ['0', '0']);
    });

    test("the payee's PUT …/error: every transfer aborted, both told", async (t) => {
      if (hub === undefined) return t.skip(unavailable ?? 'no cluster');
      const [a, b] = await hub.parties();
      const bulk = await prepare(a, b, ['1', '2']);
      await forwardedIds(b, bulk.id);
      assert.equal(await hub.position(a), '3');
      const errorInformation = { errorCode: '5101', errorDescription: 'payee rejected' };
      await request('PUT', `/bulkTransfers/${bulk.id}/error`, bulkHeaders(b, a), {
        errorInformation,
      });
      for (const dfsp of [a, b]) {
        const error = await callback(dfsp, bulk.id, 'PUT', '/bulkTransfers/{id}/error');
        assert.equal(error.body.errorInformation.errorCode, '5101');
      }
      assert.deepEqual([await hub.position(a), await hub.position(b)], ['0', '0']);
      await everyCallbackOnce(bulk.id);
    });

    test('a payee leaving transfers out: they expire with the bulk, both told', async (t) => {
      if (hub === undefined) return t.skip(unavailable ?? 'no cluster');
      const [a, b] = await hub.parties();
      const bulk = await prepare(a, b, ['5', '7'], 8_000);
      await forwardedIds(b, bulk.id);
      const [five, seven] = bulk.transfers as [TestTransfer, TestTransfer];
      await put(b, a, bulk.id, [fulfilled(five)]);
      // Nothing told while a member is still open.
      await sleep(Date.parse(bulk.body.expiration) - Date.now() - 1_000);
      assert.equal(received(a, bulk.id, 'PUT', '/bulkTransfers/{id}').length, 0);
      assert.equal(await hub.position(b), '-5');
      const results = { [five.transferId]: five.fulfilment, [seven.transferId]: '3303' };
      await toldCompleted([a, b], bulk.id, results);
      assert.deepEqual([await hub.position(a), await hub.position(b)], ['5', '-5']);
      await everyCallbackOnce(bulk.id);
    });

    test('a wrong fulfilment aborts its transfer only; the bulk completes', async (t) => {
      if (hub === undefined) return t.skip(unavailable ?? 'no cluster');
      const [a, b] = await hub.parties();
      const bulk = await prepare(a, b, ['11', '13']);
      await forwardedIds(b, bulk.id);
      const [eleven, thirteen] = bulk.transfers as [TestTransfer, TestTransfer];
      await put(b, a, bulk.id, [
        { transferId: eleven.transferId, fulfilment: thirteen.fulfilment },
        fulfilled(thirteen),
      ]);
      const final = await callback(a, bulk.id, 'PUT', '/bulkTransfers/{id}');
      assert.equal(final.body.bulkTransferState, 'COMPLETED');
      assert.deepEqual(linesOf(final), {
        [eleven.transferId]: '3100',
        [thirteen.transferId]: thirteen.fulfilment,
      });
      assert.deepEqual([await hub.position(a), await hub.position(b)], ['13', '-13']);
      await everyCallbackOnce(bulk.id);
    });

    test('duplicates: the same POST told the outcome, a modified one 3106', async (t) => {
      if (hub === undefined) return t.skip(unavailable ?? 'no cluster');
      const [a, b] = await hub.parties();
      const bulk = await prepare(a, b, ['3']);
      await forwardedIds(b, bulk.id);
      await put(b, a, bulk.id, bulk.transfers.map(fulfilled));
      await callback(a, bulk.id, 'PUT', '/bulkTransfers/{id}');
      await request('POST', '/bulkTransfers', bulkHeaders(a, b), bulk.body);
      const again = await callback(a, bulk.id, 'PUT', '/bulkTransfers/{id}', 2);
      assert.equal(again.body.bulkTransferState, 'COMPLETED');
      assert.deepEqual(linesOf(again), {
        [bulk.transfers[0]!.transferId]: bulk.transfers[0]!.fulfilment,
      });
      const modified = { ...bulk.body, bulkQuoteId: randomUUID() };
      await request('POST', '/bulkTransfers', bulkHeaders(a, b), modified);
      const refused = await callback(a, bulk.id, 'PUT', '/bulkTransfers/{id}/error');
      assert.equal(refused.body.errorInformation.errorCode, '3106');
      assert.deepEqual([await hub.position(a), await hub.position(b)], ['3', '-3']);
      assert.equal(received(b, bulk.id, 'POST', '/bulkTransfers').length, 1);
    });

    test('GET by the payer, the payee and a third party', async (t) => {
      if (hub === undefined) return t.skip(unavailable ?? 'no cluster');
      const [a, b] = await hub.parties('100');
      const [c] = await hub.parties();
      const bulk = await prepare(a, b, ['30', '90']);
      await forwardedIds(b, bulk.id);
      const [thirty, ninety] = bulk.transfers as [TestTransfer, TestTransfer];
      const get = (dfsp: string) => request('GET', `/bulkTransfers/${bulk.id}`, bulkHeaders(dfsp));
      await get(a);
      const byPayer = await callback(a, bulk.id, 'PUT', '/bulkTransfers/{id}');
      assert.equal(byPayer.body.bulkTransferState, 'ACCEPTED');
      assert.deepEqual(linesOf(byPayer), { [ninety.transferId]: '4001' });
      await get(b);
      const byPayee = await callback(b, bulk.id, 'PUT', '/bulkTransfers/{id}');
      assert.equal(byPayee.body.bulkTransferState, 'ACCEPTED');
      assert.deepEqual(linesOf(byPayee), {});
      await get(c!);
      const byOther = await callback(c!, bulk.id, 'PUT', '/bulkTransfers/{id}/error');
      assert.equal(byOther.body.errorInformation.errorCode, '3000');
      await put(b, a, bulk.id, [fulfilled(thirty)]);
      await callback(a, bulk.id, 'PUT', '/bulkTransfers/{id}', 2);
      await get(b);
      const after = await callback(b, bulk.id, 'PUT', '/bulkTransfers/{id}', 3);
      assert.equal(after.body.bulkTransferState, 'COMPLETED');
      assert.deepEqual(linesOf(after), { [thirty.transferId]: thirty.fulfilment });
      assert.deepEqual([await hub.position(a), await hub.position(b)], ['30', '-30']);
    });
  });
}

describe(`${WHAT}: kill -9 of the service during a bulk (embedded ledger)`, () => {
  let hub: Hub | undefined;
  before(async () => {
    if (broker === undefined || ferret === undefined) return;
    hub = await startHub({});
  });
  after(async () => {
    await hub?.stop();
  });

  test('killed while it prepares and while it commits: nothing lost, doubled or stranded', async (t) => {
    if (hub === undefined) return t.skip(unavailable ?? 'not started');
    const [a, b] = await hub.parties();
    const bulk = newBulk(
      a,
      b,
      Array.from({ length: 300 }, () => '1'),
    );
    const id = bulk.body.bulkTransferId;
    const base = hub.adapter.base;
    // bulk-api-adapter reads a party's callback endpoints from the hub the first time it notifies
    // it, then from its cache (180 s), and drops a notification whose lookup fails: it does not
    // retry. A kill landing after the commits' notification reached Kafka, while bulk-api-adapter
    // handles it, would lose the payer's final PUT to the hub's restart (seen: 1 run in 5). Both
    // parties are told once first, as a running hub's DFSPs have been (docs/bulk.md, "Delivery").
    await notifiedBefore(base, [a, b]);
    const posted = await call(base, 'POST', '/bulkTransfers', bulk.body, bulkHeaders(a, b));
    assert.equal(posted.status, 202, posted.text);
    // Killed once the ledger holds some of it (or, failing that, at once).
    await until(
      'the first reservations',
      async () => ((await hub!.position(a)) === '0' ? undefined : true),
      30_000,
    ).catch(() => undefined);
    const forwardedBeforeKill = received(b, id, 'POST', '/bulkTransfers').length;
    t.diagnostic(`payer's position at the first kill: ${await hub.position(a)}`);
    const killedAt = Date.now();
    await hub.crashAndRestart();
    const [forward] = await until(
      'the payee’s POST after the restart',
      async () => nonEmpty(received(b, id, 'POST', '/bulkTransfers')),
      CALLBACK_WITHIN_MS,
    );
    t.diagnostic(`the payee's POST came ${Date.now() - killedAt} ms after the kill`);
    assert.equal(forward!.body.individualTransfers.length, 300);
    assert.equal(await hub.position(a), '300');
    await fulfilAll(base, { payee: b, payer: a }, bulk);
    await until(
      'the first commits',
      async () => ((await hub!.position(b)) === '0' ? undefined : true),
      30_000,
    ).catch(() => undefined);
    t.diagnostic(`payee's position at the second kill: ${await hub.position(b)}`);
    await hub.crashAndRestart();
    for (const dfsp of [a, b]) {
      const [final] = await until(
        `${dfsp}'s final PUT after the restart`,
        async () => nonEmpty(received(dfsp, id, 'PUT', '/bulkTransfers/{id}')),
        CALLBACK_WITHIN_MS,
      );
      assert.equal(final!.body.bulkTransferState, 'COMPLETED');
      assert.equal(
        Object.values(linesOf(final!)).filter((line) => line.length > 4).length,
        300,
        'every transfer fulfilled',
      );
    }
    assert.deepEqual([await hub.position(a), await hub.position(b)], ['300', '-300']);
    await sleep(3_000);
    // Every callback once: a kill after a chunk's answers were produced, before its transaction
    // committed them with its offsets, leaves them aborted, unread by bulk-api-adapter.
    assertEachCallbackOnce(id, { payee: b, payer: a });
    t.diagnostic(`forwarded before the first kill: ${forwardedBeforeKill}`);
    assert.equal(received(a, id, 'PUT', '/bulkTransfers/{id}/error').length, 0);
  });
});

describe(`${WHAT}: killed between a chunk's answers and their commit`, () => {
  let hub: Hub | undefined;
  before(async () => {
    if (broker === undefined || ferret === undefined) return;
    hub = await startHub({ faultPoint: 'bulk-answers.before-commit' });
  });
  after(async () => {
    await hub?.stop();
  });

  test('the answers left uncommitted are never read: one callback each', async (t) => {
    if (hub === undefined) return t.skip(unavailable ?? 'not started');
    const [a, b] = await hub.parties();
    const bulk = newBulk(a, b, ['2', '3']);
    const id = bulk.body.bulkTransferId;
    const base = hub.adapter.base;
    const posted = await call(base, 'POST', '/bulkTransfers', bulk.body, bulkHeaders(a, b));
    assert.equal(posted.status, 202, posted.text);
    // The payee's POST produced in the transaction, its offset sent with it, then the kill.
    await hub.died();
    await hub.crashAndRestart();
    await until(
      'the payee’s POST after the restart',
      async () => nonEmpty(received(b, id, 'POST', '/bulkTransfers')),
      CALLBACK_WITHIN_MS,
    );
    // Both copies are on the topic; a read_committed reader sees the committed one only.
    assert.deepEqual(
      [await forwardsOnTopic(id, b, true), await forwardsOnTopic(id, b, false)],
      [2, 1],
    );
    await fulfilAll(base, { payee: b, payer: a }, bulk);
    for (const dfsp of [a, b])
      await until(
        `${dfsp}'s final PUT`,
        async () => nonEmpty(received(dfsp, id, 'PUT', '/bulkTransfers/{id}')),
        CALLBACK_WITHIN_MS,
      );
    await sleep(2_000);
    assertEachCallbackOnce(id, { payee: b, payer: a });
    assert.deepEqual([await hub.position(a), await hub.position(b)], ['5', '-5']);
  });
});

/** The payee's PUT fulfilling every transfer of `bulk`, through bulk-api-adapter. */
async function fulfilAll(
  base: string,
  parties: { payee: string; payer: string },
  bulk: ReturnType<typeof newBulk>,
): Promise<void> {
  const results = bulk.transfers.map((x) => ({
    transferId: x.transferId,
    fulfilment: x.fulfilment,
  }));
  const put = await putResults(base, parties, bulk.body.bulkTransferId, results);
  assert.equal(put.status, 200, put.text);
}

/** One copy of each callback of bulk `id` fulfilled: the payee's POST, both parties' PUT. */
function assertEachCallbackOnce(id: string, { payee, payer }: { payee: string; payer: string }) {
  for (const [dfsp, method, path] of [
    [payee, 'POST', '/bulkTransfers'],
    [payer, 'PUT', '/bulkTransfers/{id}'],
    [payee, 'PUT', '/bulkTransfers/{id}'],
  ] as const) {
    const copies = received(dfsp, id, method, path).length;
    const to = dfsp === payer ? 'payer' : 'payee';
    assert.equal(copies, 1, `${method} ${path} to the ${to}: ${copies} copies`);
  }
}

/** Consumer group `groupId` set to start at the end of the bulk topics. */
async function skipEarlierBulks(groupId: string): Promise<void> {
  const admin = new Kafka({ brokers: broker!.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const topics = ['topic-bulk-prepare', 'topic-bulk-fulfil', 'topic-bulk-get'];
    await admin.createTopics({ topics: topics.map((topic) => ({ topic })) });
    // Set explicitly: kafkajs's resetOffsets to the latest commits -1, which reads as no offset.
    for (const topic of topics) {
      const ends = await admin.fetchTopicOffsets(topic);
      const partitions = ends.map(({ partition, high }) => ({ partition, offset: high }));
      await admin.setOffsets({ groupId, topic, partitions });
    }
  } finally {
    await admin.disconnect();
  }
}

/**
 * How many notifications on topic-notification-event forward bulk `id` to `payee`: all written
 * (`readUncommitted`), or those a read_committed reader such as bulk-api-adapter gets.
 */
async function forwardsOnTopic(id: string, payee: string, readUncommitted: boolean) {
  const kafka = new Kafka({ brokers: broker!.brokers, logLevel: logLevel.NOTHING });
  const reader = kafka.consumer({ groupId: `reader-${randomUUID()}`, readUncommitted });
  let count = 0;
  await reader.connect();
  try {
    await reader.subscribe({ topic: 'topic-notification-event', fromBeginning: true });
    await reader.run({
      eachMessage: async ({ message }) => {
        const value = message.value?.toString() ?? '';
        if (value.includes(id) && JSON.parse(value).to === payee) count += 1;
      },
    });
    await sleep(5_000);
  } finally {
    await reader.disconnect();
  }
  return count;
}
