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
import { after, before, describe, test } from 'node:test';
import { buildService, type BulkFlowParts, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import type { BulkApi, BulkDelivery, BulkNotice, ForwardedTransfer } from '../src/domain/bulk/api';
import type { BulkRecord } from '../src/ports/bulk';
import { EmbeddedLedger } from '../src/ledger/embedded';
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
import { call, stopProcess, until, type Started } from './support/service-process';

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

describe(`${WHAT}: the Kafka edge over a scripted flow`, () => {
  let service: Service | undefined;
  let adapter: Started | undefined;
  const [payer, payee] = ['bulkpayer', 'bulkpayee'];

  before(async () => {
    if (broker === undefined || ferret === undefined) return;
    const run = randomUUID().slice(0, 8);
    const config = loadConfig({
      LOG_LEVEL: 'warn',
      PORT: String(await freePort()),
      KAFKA_ENABLED: 'true',
      KAFKA_BROKERS: broker.brokers.join(','),
      KAFKA_GROUP_ID: `ledger-${run}`,
      MONGODB_URL: ferret.url,
      MONGODB_DATABASE: `mlos_${run}`,
    });
    service = await buildService(config, {
      ledger: new EmbeddedLedger(),
      store: new MemoryMetadataStore(),
      bulkFlow: scriptedFlow,
    });
    await service.app.listen({ host: '127.0.0.1', port: config.http.port });
    await onboard((options) => service!.app.inject(options), [payer, payee], '1000', 1000);
    for (const dfsp of [payer, payee])
      for (const endpoint of bulkEndpoints(callbacks, dfsp))
        assert.equal(
          (
            await service.app.inject({
              method: 'POST',
              url: `/participants/${dfsp}/endpoints`,
              payload: endpoint,
            })
          ).statusCode,
          201,
        );
    adapter = await startBulkApiAdapter({
      centralLedger: `http://127.0.0.1:${config.http.port}`,
      brokers: broker.brokers,
      mongo: { host: ferret.host, port: ferret.port, database: `mlos_${run}` },
      port: await freePort(),
      workDir,
      logDir: workDir,
    });
  });

  after(async () => {
    if (adapter !== undefined) await stopProcess(adapter);
    await service?.close();
  });

  test('the payee’s POST, the final PUTs with their results, a GET’s answer, PUT …/error', async (t) => {
    if (adapter === undefined) return t.skip(unavailable ?? 'not started');
    const base = adapter.base;
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
    const put = await call(
      base,
      'PUT',
      `/bulkTransfers/${id}`,
      {
        bulkTransferState: 'COMPLETED',
        completedTimestamp: new Date().toISOString(),
        individualTransferResults: results,
      },
      bulkHeaders(payee, payer),
    );
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
