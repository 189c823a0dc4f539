/**
 * The bulk flow (src/domain/bulk) over a real TransferService, on the embedded ledger and on a
 * three-replica TigerBeetle cluster (run it under the heavy lock): the reference's worked example
 * with its fixed outcome, the ends a bulk can have, duplicates, GET, a crash mid-step and its
 * redelivery, and the ledger requests a bulk of 1,000 costs. Balances are read through the admin
 * API (the POSITION account, reservations included, as central-ledger reports it).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import type {
  BulkDelivery,
  BulkNotice,
  BulkPrepareBody,
  IndividualResult,
} from '../src/domain/bulk/api';
import { BulkService } from '../src/domain/bulk/service';
import { FspiopError } from '../src/domain/shared/errors';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MemoryMetadataStore } from '../src/metadata/memory';
import type { Ledger } from '../src/ports/ledger';
import { MemoryBulkObjects, MemoryBulkStore } from './support/bulk-memory';
import { newTransfer, type TestTransfer } from './support/mojaloop-messages';
import { onboard } from './support/onboard';
import { useRealCluster } from './support/real-cluster';
import { replacing } from './support/replacing-ledger';

interface Backend {
  ledger(): Ledger;
  /** How long past an expiration the ledger may take to release a reservation. */
  expiryGraceMs: number;
}

const cluster = useRealCluster('the bulk flow');

bulkFlowSuite('embedded ledger', () => ({ ledger: () => new EmbeddedLedger(), expiryGraceMs: 0 }));
bulkFlowSuite('three-replica TigerBeetle cluster', () =>
  cluster.current() === undefined
    ? undefined
    : { ledger: () => cluster.ledger(), expiryGraceMs: 3000 },
);

/**
 * A metadata store that answers slowly for some transfer ids (the FX lookup every prepare makes):
 * their checks finish after those of the members listed behind them.
 */
class SlowedMetadataStore extends MemoryMetadataStore {
  readonly slowed = new Set<string>();

  override async fxTransfersDetermining(
    ids: readonly string[],
  ): ReturnType<MemoryMetadataStore['fxTransfersDetermining']> {
    if (ids.some((id) => this.slowed.has(id))) await sleep(SLOWED_MS);
    return super.fxTransfersDetermining(ids);
  }
}
const SLOWED_MS = 100;

/** The ledger's requests that carry commands, counted. */
function counted(inner: Ledger): { ledger: Ledger; requests: () => number } {
  let requests = 0;
  const ledger = replacing(inner, {
    execute: (commands, deadline) => {
      requests += 1;
      return inner.execute(commands, deadline);
    },
  });
  return { ledger, requests: () => requests };
}

/** A notice as the tests compare it. */
function brief(notice: BulkNotice): unknown {
  switch (notice.kind) {
    case 'forward':
      return { kind: 'forward', to: notice.to, ids: notice.transfers.map((t) => t.transferId) };
    case 'state':
      return {
        kind: 'state',
        cause: notice.cause,
        to: notice.to,
        state: notice.bulkTransferState,
        ...(notice.results === undefined ? {} : { results: notice.results.map(resultOf) }),
      };
    case 'error':
      return {
        kind: 'error',
        cause: notice.cause,
        to: notice.to,
        code: notice.errorInformation.errorCode,
      };
  }
}

/** A `state` notice as brief() gives it. */
function stated(cause: string, to: string, state: string, results: string[][]): unknown {
  return { kind: 'state', cause, to, state, results };
}

function resultOf(result: IndividualResult): [string, string] {
  return 'fulfilment' in result
    ? [result.transferId, result.fulfilment]
    : [result.transferId, result.errorInformation.errorCode];
}

function bulkFlowSuite(label: string, backend: () => Backend | undefined): void {
  describe(`bulk flow (${label})`, () => {
    let service: Service;
    let requests: () => number;
    let store: MemoryBulkStore;
    let objects: MemoryBulkObjects;
    let bulks: BulkService;
    let metadata: SlowedMetadataStore;
    let expiryGraceMs = 0;
    let offset = 0;
    const run = randomBytes(3).toString('hex');
    let pairs = 0;

    before(async () => {
      const chosen = backend();
      if (chosen === undefined) return;
      expiryGraceMs = chosen.expiryGraceMs;
      const ledger = counted(chosen.ledger());
      requests = ledger.requests;
      metadata = new SlowedMetadataStore();
      service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
        ledger: ledger.ledger,
        store: metadata,
      });
      store = new MemoryBulkStore();
      objects = new MemoryBulkObjects();
      bulks = new BulkService({
        transfers: service.transfers,
        store,
        objects,
        participant: (name) => metadata.participant(name),
        hubName: 'Hub',
      });
    });
    after(async () => {
      await service?.close();
    });

    const skip = (): boolean => backend() === undefined;

    /**
     * A new payer and payee with `liquidity` each. The net debit cap is ample: a transfer beyond
     * the liquidity is refused 4001 (beyond the cap it would be 4200, central-ledger's
     * PAYER_LIMIT_ERROR).
     */
    const parties = async (liquidity = '1000000'): Promise<[string, string]> => {
      pairs += 1;
      const names: [string, string] = [`bpayer${run}${pairs}`, `bpayee${run}${pairs}`];
      await onboard((options) => service.app.inject(options), names, liquidity, 1_000_000);
      return names;
    };

    const position = async (name: string): Promise<string> => {
      const accounts = JSON.parse(
        (await service.app.inject({ method: 'GET', url: `/participants/${name}/accounts` })).body,
      );
      return String(
        accounts.find((a: { ledgerAccountType: string }) => a.ledgerAccountType === 'POSITION')
          .value,
      );
    };

    const delivery = (source: string, destination: string): BulkDelivery => {
      offset += 1;
      return {
        source,
        destination,
        messageId: randomUUID(),
        origin: `topic-bulk:0:${offset}`,
        headers: { 'fspiop-source': source, 'fspiop-destination': destination },
      };
    };

    interface Bulk {
      body: BulkPrepareBody;
      transfers: TestTransfer[];
      prepared: BulkDelivery;
    }

    /** A bulk of these amounts, its items in the object store under a new message. */
    const newBulk = (
      payer: string,
      payee: string,
      amounts: string[],
      expiresInMs = 600_000,
    ): Bulk => {
      const transfers = amounts.map((amount) => newTransfer(payer, payee, amount));
      const prepared = delivery(payer, payee);
      objects.putTransfers(
        prepared.messageId,
        transfers.map((t) => ({
          transferId: t.transferId,
          transferAmount: { amount: t.amount, currency: t.currency },
          ilpPacket: t.body['ilpPacket'],
          condition: t.condition,
        })),
      );
      const body: BulkPrepareBody = {
        bulkTransferId: randomUUID(),
        bulkQuoteId: randomUUID(),
        payerFsp: payer,
        payeeFsp: payee,
        expiration: new Date(Date.now() + expiresInMs).toISOString(),
        hash: randomUUID(),
      };
      return { body, transfers, prepared };
    };

    /** The payee's PUT with these results, saved in the object store as bulk-api-adapter does. */
    const answer = (
      bulk: Bulk,
      results: Record<string, unknown>[],
    ): { delivery: BulkDelivery; body: Parameters<BulkService['fulfil']>[1] } => {
      const answered = delivery(bulk.body.payeeFsp, bulk.body.payerFsp);
      for (const result of results) objects.putFulfil(answered.messageId, result);
      return {
        delivery: answered,
        body: {
          bulkTransferId: bulk.body.bulkTransferId,
          bulkTransferState: 'COMPLETED',
          completedTimestamp: new Date().toISOString(),
          count: results.length,
          hash: randomUUID(),
        },
      };
    };
    const fulfilled = (t: TestTransfer): Record<string, unknown> => ({
      transferId: t.transferId,
      fulfilment: t.fulfilment,
    });
    const refused = (t: TestTransfer, errorCode: string): Record<string, unknown> => ({
      transferId: t.transferId,
      errorInformation: { errorCode, errorDescription: 'refused by the payee' },
    });
    const ids = (bulk: Bulk): string[] => bulk.transfers.map((t) => t.transferId);
    const code =
      (expected: string) =>
      (error: unknown): boolean =>
        error instanceof FspiopError && error.code === expected;

    test("the reference's worked example, with its fixed outcome", async (t) => {
      if (skip()) return t.skip('no cluster');
      // The reference's A has a cap of 1000; the ledger refuses a breach of the cap 4200, so here
      // A's liquidity is 1000, which gives T3 the reference's 4001.
      const [a, b] = await parties('1000');
      const bulk = newBulk(a, b, ['300', '400', '500']);
      const [t1, t2, t3] = bulk.transfers as [TestTransfer, TestTransfer, TestTransfer];
      assert.deepEqual((await bulks.prepare(bulk.prepared, bulk.body)).map(brief), [
        { kind: 'forward', to: b, ids: [t1.transferId, t2.transferId] },
      ]);
      assert.deepEqual([await position(a), await position(b)], ['700', '0']);
      const put = answer(bulk, [fulfilled(t1), refused(t2, '5100')]);
      assert.deepEqual((await bulks.fulfil(put.delivery, put.body)).map(brief), [
        stated('fulfil', a, 'COMPLETED', [
          [t1.transferId, t1.fulfilment],
          [t2.transferId, '5100'],
          [t3.transferId, '4001'],
        ]),
        stated('fulfil', b, 'COMPLETED', [
          [t1.transferId, t1.fulfilment],
          [t2.transferId, '5100'],
        ]),
      ]);
      assert.deepEqual([await position(a), await position(b)], ['300', '-300']);
      assert.equal((await store.bulk(bulk.body.bulkTransferId))?.state, 'COMPLETED');
    });

    test('all committed', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(a, b, ['10', '20', '30.5']);
      assert.deepEqual((await bulks.prepare(bulk.prepared, bulk.body)).map(brief), [
        { kind: 'forward', to: b, ids: ids(bulk) },
      ]);
      const put = answer(bulk, bulk.transfers.map(fulfilled));
      const notices = await bulks.fulfil(put.delivery, put.body);
      const all = bulk.transfers.map((transfer) => [transfer.transferId, transfer.fulfilment]);
      assert.deepEqual(notices.map(brief), [
        stated('fulfil', a, 'COMPLETED', all),
        stated('fulfil', b, 'COMPLETED', all),
      ]);
      assert.deepEqual([await position(a), await position(b)], ['60.5', '-60.5']);
    });

    test("results bulk-api-adapter saves late are waited for (its PUT's count)", async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(a, b, ['2', '3']);
      const [t1, t2] = bulk.transfers as [TestTransfer, TestTransfer];
      await bulks.prepare(bulk.prepared, bulk.body);
      const put = answer(bulk, [fulfilled(t1)]);
      const late = setTimeout(() => objects.putFulfil(put.delivery.messageId, fulfilled(t2)), 300);
      try {
        const notices = await bulks.fulfil(put.delivery, { ...put.body, count: 2 });
        assert.deepEqual(
          notices.map(brief)[0],
          stated('fulfil', a, 'COMPLETED', [
            [t1.transferId, t1.fulfilment],
            [t2.transferId, t2.fulfilment],
          ]),
        );
      } finally {
        clearTimeout(late);
      }
      assert.deepEqual([await position(a), await position(b)], ['5', '-5']);
    });

    test('all refused at prepare: REJECTED at once, the payer told every error', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties('100');
      const bulk = newBulk(a, b, ['300', '400']);
      assert.deepEqual((await bulks.prepare(bulk.prepared, bulk.body)).map(brief), [
        stated(
          'prepare',
          a,
          'REJECTED',
          ids(bulk).map((id) => [id, '4001']),
        ),
      ]);
      assert.equal((await store.bulk(bulk.body.bulkTransferId))?.state, 'REJECTED');
      assert.deepEqual([await position(a), await position(b)], ['0', '0']);
      // The same message again (a crash before its notices went out): told again.
      assert.deepEqual((await bulks.prepare(bulk.prepared, bulk.body)).map(brief), [
        stated(
          'prepare',
          a,
          'REJECTED',
          ids(bulk).map((id) => [id, '4001']),
        ),
      ]);
    });

    test("members are reserved in the bulk's order, whichever's checks finish first", async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties('100');
      const bulk = newBulk(a, b, ['30', '90']);
      const [thirty, ninety] = bulk.transfers as [TestTransfer, TestTransfer];
      metadata.slowed.add(thirty.transferId);
      assert.deepEqual((await bulks.prepare(bulk.prepared, bulk.body)).map(brief), [
        { kind: 'forward', to: b, ids: [thirty.transferId] },
      ]);
      assert.equal(await position(a), '30');
      const put = answer(bulk, [fulfilled(thirty)]);
      assert.deepEqual(
        (await bulks.fulfil(put.delivery, put.body)).map(brief)[0],
        stated('fulfil', a, 'COMPLETED', [
          [thirty.transferId, thirty.fulfilment],
          [ninety.transferId, '4001'],
        ]),
      );
    });

    test('partly refused at prepare: a bad condition and the liquidity refuse their own only', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties('100');
      const bulk = newBulk(a, b, ['40', '50', '70']);
      const items = await objects.individualTransfers(bulk.prepared.messageId);
      items[0]!['condition'] = 'not-a-condition';
      objects.putTransfers(bulk.prepared.messageId, items);
      const [t1, t2, t3] = bulk.transfers as [TestTransfer, TestTransfer, TestTransfer];
      assert.deepEqual((await bulks.prepare(bulk.prepared, bulk.body)).map(brief), [
        { kind: 'forward', to: b, ids: [t2.transferId] },
      ]);
      const put = answer(bulk, [fulfilled(t2)]);
      assert.deepEqual(
        (await bulks.fulfil(put.delivery, put.body)).map(brief)[0],
        stated('fulfil', a, 'COMPLETED', [
          [t1.transferId, '3100'],
          [t2.transferId, t2.fulfilment],
          [t3.transferId, '4001'],
        ]),
      );
      assert.deepEqual([await position(a), await position(b)], ['50', '-50']);
    });

    test("the payee's PUT …/error aborts every transfer; both told the error", async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(a, b, ['1', '2']);
      await bulks.prepare(bulk.prepared, bulk.body);
      assert.equal(await position(a), '3');
      const errorInformation = { errorCode: '5101', errorDescription: 'payee rejected' };
      const notices = await bulks.error(delivery(b, a), {
        bulkTransferId: bulk.body.bulkTransferId,
        errorInformation,
        hash: randomUUID(),
      });
      assert.deepEqual(notices.map(brief), [
        { kind: 'error', cause: 'fulfil', to: a, code: '5101' },
        { kind: 'error', cause: 'fulfil', to: b, code: '5101' },
      ]);
      assert.deepEqual([await position(a), await position(b)], ['0', '0']);
      const [got] = await bulks.get(bulk.body.bulkTransferId, a);
      assert.deepEqual(
        brief(got!),
        stated(
          'get',
          a,
          'REJECTED',
          ids(bulk).map((id) => [id, '5101']),
        ),
      );
    });

    test('a payee leaving transfers out: they expire with the bulk, both told', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(a, b, ['5', '7'], 2500);
      const [t1, t2] = bulk.transfers as [TestTransfer, TestTransfer];
      await bulks.prepare(bulk.prepared, bulk.body);
      const put = answer(bulk, [fulfilled(t1)]);
      assert.deepEqual(await bulks.fulfil(put.delivery, put.body), []);
      assert.equal((await store.bulk(bulk.body.bulkTransferId))?.state, 'PENDING_FULFIL');
      // Not expired yet: nothing to finish.
      assert.deepEqual(await bulks.finishExpired(), []);
      await waitUntil(Date.parse(bulk.body.expiration) + 200);
      // Told before recorded: killed once in between, the next pass tells again.
      let notices: BulkNotice[] = [];
      let tellings = 0;
      const notify = async (told: BulkNotice[]): Promise<void> => {
        tellings += 1;
        if (tellings === 1) throw new Error('killed');
        notices = told;
      };
      const deadline = Date.now() + expiryGraceMs + 10_000;
      while (notices.length === 0 && Date.now() < deadline) {
        await bulks.finishExpired(notify).catch((error: unknown) => {
          if (!String(error).includes('killed')) throw error;
        });
        if (notices.length === 0) await waitUntil(Date.now() + 200);
      }
      assert.equal(tellings, 2);
      const results = [
        [t1.transferId, t1.fulfilment],
        [t2.transferId, '3303'],
      ];
      assert.deepEqual(notices.map(brief), [
        stated('expiry', a, 'COMPLETED', results),
        stated('expiry', b, 'COMPLETED', results),
      ]);
      assert.deepEqual([await position(a), await position(b)], ['5', '-5']);
      // The expiry sweep's own report of t2 is the bulk's: no single-transfer notice.
      assert.deepEqual(
        await bulks.withoutMembers([{ transferId: t2.transferId }, { transferId: 'other' }]),
        [{ transferId: 'other' }],
      );
      assert.deepEqual(await bulks.finishExpired(notify), []);
      assert.equal(tellings, 2);
    });

    test('a wrong fulfilment aborts its transfer only; the bulk completes', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(a, b, ['11', '13']);
      const [t1, t2] = bulk.transfers as [TestTransfer, TestTransfer];
      await bulks.prepare(bulk.prepared, bulk.body);
      const put = answer(bulk, [{ ...fulfilled(t1), fulfilment: t2.fulfilment }, fulfilled(t2)]);
      assert.deepEqual(
        (await bulks.fulfil(put.delivery, put.body)).map(brief)[0],
        stated('fulfil', a, 'COMPLETED', [
          [t1.transferId, '3100'],
          [t2.transferId, t2.fulfilment],
        ]),
      );
      assert.deepEqual([await position(a), await position(b)], ['13', '-13']);
    });

    test('duplicate bulks: same hash told the outcome once final, another hash 3106', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(a, b, ['3']);
      await bulks.prepare(bulk.prepared, bulk.body);
      // A resend while open: nothing (its answer is on its way).
      assert.deepEqual(await bulks.prepare(delivery(a, b), bulk.body), []);
      await assert.rejects(
        bulks.prepare(delivery(a, b), { ...bulk.body, hash: randomUUID() }),
        code('3106'),
      );
      const put = answer(bulk, bulk.transfers.map(fulfilled));
      await bulks.fulfil(put.delivery, put.body);
      assert.deepEqual((await bulks.prepare(delivery(a, b), bulk.body)).map(brief), [
        stated(
          'duplicate',
          a,
          'COMPLETED',
          bulk.transfers.map((transfer) => [transfer.transferId, transfer.fulfilment]),
        ),
      ]);
      // The payee's PUT again: nothing; another PUT: 3106.
      assert.deepEqual(await bulks.fulfil(delivery(b, a), put.body), []);
      await assert.rejects(
        bulks.fulfil(delivery(b, a), { ...put.body, hash: randomUUID() }),
        code('3106'),
      );
      assert.deepEqual([await position(a), await position(b)], ['3', '-3']);
    });

    test('a duplicate individual transfer id is refused for that transfer', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const single = newTransfer(a, b, '100');
      await service.transfers.prepare(a, single.body as never);
      const first = newBulk(a, b, ['1', '2']);
      await bulks.prepare(first.prepared, first.body);
      const bulk = newBulk(a, b, ['4', '8']);
      const items = await objects.individualTransfers(bulk.prepared.messageId);
      const [own, repeated] = bulk.transfers as [TestTransfer, TestTransfer];
      objects.putTransfers(bulk.prepared.messageId, [
        ...items,
        { ...items[0], transferId: single.transferId },
        { ...items[0], transferId: first.transfers[0]!.transferId },
        { ...items[1], transferId: own.transferId },
      ]);
      assert.deepEqual((await bulks.prepare(bulk.prepared, bulk.body)).map(brief), [
        { kind: 'forward', to: b, ids: ids(bulk) },
      ]);
      const put = answer(bulk, bulk.transfers.map(fulfilled));
      assert.deepEqual(
        (await bulks.fulfil(put.delivery, put.body)).map(brief)[0],
        stated('fulfil', a, 'COMPLETED', [
          [own.transferId, own.fulfilment],
          [repeated.transferId, repeated.fulfilment],
          [single.transferId, '3106'],
          [first.transfers[0]!.transferId, '3106'],
          [own.transferId, '3100'],
        ]),
      );
      // 100 + 1 + 2 still reserved, 12 committed.
      assert.deepEqual([await position(a), await position(b)], ['115', '-12']);
      // The single transfer's expiry is its own, not the bulk's that named its id.
      assert.deepEqual(await bulks.withoutMembers([{ transferId: single.transferId }]), [
        { transferId: single.transferId },
      ]);
      // Nor does the bulk claim either transfer whose id it was refused: the first bulk keeps its.
      const taken = [single.transferId, first.transfers[0]!.transferId];
      assert.deepEqual(
        await store.bulksOf(taken),
        new Map([[first.transfers[0]!.transferId, first.body.bulkTransferId]]),
      );
    });

    test('GET by the payer, the payee, a third party, no participant; an unknown bulk', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties('100');
      const [c] = await parties();
      const bulk = newBulk(a, b, ['30', '90']);
      const [t1, t2] = bulk.transfers as [TestTransfer, TestTransfer];
      await bulks.prepare(bulk.prepared, bulk.body);
      const id = bulk.body.bulkTransferId;
      assert.deepEqual((await bulks.get(id, a)).map(brief), [
        stated('get', a, 'ACCEPTED', [[t2.transferId, '4001']]),
      ]);
      assert.deepEqual((await bulks.get(id, b)).map(brief), [stated('get', b, 'ACCEPTED', [])]);
      await assert.rejects(bulks.get(id, c), code('3000'));
      assert.deepEqual(await bulks.get(id, 'nosuchfsp'), []);
      await assert.rejects(bulks.get(randomUUID(), a), code('3210'));
      const put = answer(bulk, [fulfilled(t1)]);
      await bulks.fulfil(put.delivery, put.body);
      assert.deepEqual((await bulks.get(id, b)).map(brief), [
        stated('get', b, 'COMPLETED', [[t1.transferId, t1.fulfilment]]),
      ]);
    });

    test('refused whole: wrong source, unknown payee, a fulfil by another than the payee', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const wrongSource = newBulk(a, b, ['1']);
      assert.deepEqual(
        (await bulks.prepare({ ...wrongSource.prepared, source: b }, wrongSource.body)).map(brief),
        [{ kind: 'error', cause: 'prepare', to: b, code: '3100' }],
      );
      assert.equal((await store.bulk(wrongSource.body.bulkTransferId))?.state, 'INVALID');
      const unknownPayee = newBulk(a, 'nosuchfsp', ['1']);
      assert.deepEqual((await bulks.prepare(unknownPayee.prepared, unknownPayee.body)).map(brief), [
        { kind: 'error', cause: 'prepare', to: a, code: '3203' },
      ]);
      const bulk = newBulk(a, b, ['2']);
      await bulks.prepare(bulk.prepared, bulk.body);
      const put = answer(bulk, bulk.transfers.map(fulfilled));
      await assert.rejects(bulks.fulfil({ ...put.delivery, source: a }, put.body), code('3100'));
      await assert.rejects(
        bulks.fulfil(put.delivery, { ...put.body, bulkTransferId: randomUUID() }),
        code('3210'),
      );
      // Nothing aborted by the wrong sender: the payee's own PUT still commits.
      assert.equal((await bulks.fulfil(put.delivery, put.body)).length, 2);
      assert.deepEqual([await position(a), await position(b)], ['2', '-2']);
    });

    test("a payee's PUT failing central-ledger's checks aborts the bulk; both told", async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(a, b, ['7']);
      await bulks.prepare(bulk.prepared, bulk.body);
      const put = answer(bulk, bulk.transfers.map(fulfilled));
      const future = new Date(Date.now() + 60_000).toISOString();
      const notices = await bulks.fulfil(put.delivery, { ...put.body, completedTimestamp: future });
      assert.deepEqual(notices.map(brief), [
        { kind: 'error', cause: 'fulfil', to: a, code: '3100' },
        { kind: 'error', cause: 'fulfil', to: b, code: '3100' },
      ]);
      assert.equal((await store.bulk(bulk.body.bulkTransferId))?.state, 'REJECTED');
      assert.deepEqual([await position(a), await position(b)], ['0', '0']);
    });

    test('a crash mid-step: the redelivered message resumes, same notices, nothing doubled', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(a, b, ['6', '9']);
      const [t1, t2] = bulk.transfers as [TestTransfer, TestTransfer];
      const crashOnce = (): void => {
        store.beforeSave = async () => {
          store.beforeSave = undefined;
          throw new Error('killed');
        };
      };
      // Killed after the ledger reserved every member, before the bulk was saved ACCEPTED.
      crashOnce();
      await assert.rejects(bulks.prepare(bulk.prepared, bulk.body), /killed/);
      assert.equal(await position(a), '15');
      const forward = [{ kind: 'forward', to: b, ids: ids(bulk) }];
      assert.deepEqual((await bulks.prepare(bulk.prepared, bulk.body)).map(brief), forward);
      // Killed after its notices were made, before they went out: the same again.
      assert.deepEqual((await bulks.prepare(bulk.prepared, bulk.body)).map(brief), forward);
      assert.equal(await position(a), '15');
      const put = answer(bulk, [fulfilled(t1), refused(t2, '5100')]);
      // Killed after every result went to the ledger, before the bulk was saved final.
      const before = requests();
      store.beforeSave = async (record) => {
        if (record.state === 'PROCESSING') return;
        store.beforeSave = undefined;
        throw new Error('killed');
      };
      await assert.rejects(bulks.fulfil(put.delivery, put.body), /killed/);
      assert.ok(requests() > before);
      const results = [
        [t1.transferId, t1.fulfilment],
        [t2.transferId, '5100'],
      ];
      const final = [
        stated('fulfil', a, 'COMPLETED', results),
        stated('fulfil', b, 'COMPLETED', results),
      ];
      assert.deepEqual((await bulks.fulfil(put.delivery, put.body)).map(brief), final);
      assert.deepEqual((await bulks.fulfil(put.delivery, put.body)).map(brief), final);
      // The prepare's message once more, after the bulk ended: its forward is not sent again.
      assert.deepEqual(await bulks.prepare(bulk.prepared, bulk.body), []);
      assert.deepEqual([await position(a), await position(b)], ['6', '-6']);
    });

    test('a save that comes second (another process saved first) redoes its step', async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(a, b, ['4', '5']);
      // The same message twice at once: one after the other here, the second resuming.
      const twice = await Promise.all([
        bulks.prepare(bulk.prepared, bulk.body),
        bulks.prepare(bulk.prepared, bulk.body),
      ]);
      assert.deepEqual(
        twice.map((notices) => notices.map(brief)),
        [
          [{ kind: 'forward', to: b, ids: ids(bulk) }],
          [{ kind: 'forward', to: b, ids: ids(bulk) }],
        ],
      );
      const conflicts = store.conflicts;
      store.beforeSave = async (record) => {
        if (record.state === 'PROCESSING') return;
        store.beforeSave = undefined;
        const stored = (await store.bulk(record.bulkTransferId))!;
        assert.ok(await store.save({ ...stored, version: stored.version + 1 }));
      };
      const put = answer(bulk, bulk.transfers.map(fulfilled));
      const all = bulk.transfers.map((transfer) => [transfer.transferId, transfer.fulfilment]);
      assert.deepEqual((await bulks.fulfil(put.delivery, put.body)).map(brief), [
        stated('fulfil', a, 'COMPLETED', all),
        stated('fulfil', b, 'COMPLETED', all),
      ]);
      assert.equal(store.conflicts, conflicts + 1);
      assert.deepEqual([await position(a), await position(b)], ['9', '-9']);
    });

    test("a bulk of 1,000: its reservations and commits in a handful of the ledger's requests", async (t) => {
      if (skip()) return t.skip('no cluster');
      const [a, b] = await parties();
      const bulk = newBulk(
        a,
        b,
        Array.from({ length: 1000 }, () => '1'),
      );
      let before = requests();
      const [forward] = await bulks.prepare(bulk.prepared, bulk.body);
      const prepareRequests = requests() - before;
      assert.equal(forward?.kind === 'forward' && forward.transfers.length, 1000);
      before = requests();
      const put = answer(bulk, bulk.transfers.map(fulfilled));
      const notices = await bulks.fulfil(put.delivery, put.body);
      const fulfilRequests = requests() - before;
      assert.equal(notices[0]?.kind === 'state' && notices[0].bulkTransferState, 'COMPLETED');
      process.stderr.write(
        `bulk of 1,000 (${label}): ${prepareRequests} ledger requests to prepare, ${fulfilRequests} to commit\n`,
      );
      assert.ok(prepareRequests <= 10, `${prepareRequests} requests to prepare`);
      assert.ok(fulfilRequests <= 10, `${fulfilRequests} requests to commit`);
      assert.deepEqual([await position(a), await position(b)], ['1000', '-1000']);
    });
  });
}

async function waitUntil(atMs: number): Promise<void> {
  const ms = atMs - Date.now();
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
}
