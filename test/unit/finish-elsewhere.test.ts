/**
 * A finish retried on another instance while the first attempt is between the ledger and the
 * store (Kafka mode: ml-api-adapter produces without a key, so a resent fulfil can reach any
 * instance). Two TransferServices on one store and one ledger; A's store holds back the write of
 * its finish, B's says it is shared (a write may land `writeTimeoutMs` after it was asked,
 * as MySQL's). B's retry finds the ledger's `exists` and no record yet: it waits for A's record
 * and is then a duplicate (3106 with another body), not a second finish that tells payer and
 * payee again; only once A's write can no longer land does it record the finish as lost.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import {
  TransferService,
  type FulfilRequest,
  type TransferResult,
} from '../../src/domain/transfers/service';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import type { Deferred } from '../support/deferred';
import {
  A_WHILE_MS,
  REQUEST_TIMEOUT_MS,
  WRITE_TIMEOUT_MS,
  codeOf,
  holdingWrites,
  pause,
  sharedView,
} from '../support/held-writes';
import { newTransfer, type TestTransfer } from '../support/mojaloop-messages';

const [PAYER, PAYEE] = ['elsewherepayer', 'elsewherepayee'];

interface Instances {
  service: Service;
  a: TransferService;
  b: TransferService;
  store: MemoryMetadataStore;
  /** A's finishes of these transfers reach the store only when `write` settles. */
  held: Set<string>;
  reached: Deferred<void>;
  write: Deferred<void>;
}

/**
 * With `crashing`, A dies between the ledger and the store, and both run on its clock (the test
 * moves it).
 */
async function instances(crashing?: { clock: () => number }): Promise<Instances> {
  const clock = crashing?.clock;
  const ledger = new EmbeddedLedger(clock);
  const store = new MemoryMetadataStore();
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent', JMETER_ENABLED: 'true' }), {
    ledger,
    store,
  });
  for (const name of [PAYER, PAYEE]) {
    const created = await service.app.inject({
      method: 'POST',
      url: '/jmeter/participants/create',
      payload: { name, currency: 'USD' },
    });
    assert.equal(created.statusCode, 200, created.body);
  }
  const held = new Set<string>();
  const {
    view: slowFinishes,
    reached,
    write,
  } = holdingWrites(
    store,
    'saveTransfers',
    (r) => held.has(r.transferId) && r.finishHash !== undefined,
  );
  const shared = sharedView(store);
  const now = clock === undefined ? {} : { now: clock };
  return {
    service,
    store,
    held,
    reached,
    write,
    a: new TransferService(slowFinishes, ledger, {
      ...now,
      fault: (point) => {
        if (point === 'fulfil.after-ledger' && crashing !== undefined) throw new Error('killed');
      },
    }),
    b: new TransferService(shared, ledger, { ...now, requestTimeoutMs: REQUEST_TIMEOUT_MS }),
  };
}

type Body = (t: TestTransfer) => FulfilRequest;

/**
 * A's finish of a new transfer, held on its way to the store, and B's retry of it (with `retried`,
 * A's body unless given), which has not answered a while later: A's write is still due.
 */
async function crossing(
  i: Instances,
  body: Body,
  retried: Body = body,
): Promise<{
  t: TestTransfer;
  first: Promise<TransferResult>;
  retry: Promise<TransferResult>;
  started: number;
}> {
  const t = newTransfer(PAYER, PAYEE, '5');
  await i.a.prepare(PAYER, t.body as never);
  i.held.add(t.transferId);
  const first = i.a.fulfil(t.transferId, { source: PAYEE, destination: PAYER }, body(t));
  await i.reached.promise;
  const started = performance.now();
  let answered = false;
  const retry = i.b.fulfil(t.transferId, { source: PAYEE, destination: PAYER }, retried(t));
  retry.then(
    () => (answered = true),
    () => (answered = true),
  );
  await pause(A_WHILE_MS);
  assert.equal(answered, false, "B answered while A's record could still land");
  return { t, first, retry, started };
}

const commit =
  (completedTimestamp?: string): Body =>
  (t) => ({
    transferState: 'COMMITTED',
    fulfilment: t.fulfilment,
    ...(completedTimestamp === undefined ? {} : { completedTimestamp }),
  });

test("a commit retried on B while A's record is on its way: B waits for it and is a duplicate, A the finish", async () => {
  const i = await instances();
  try {
    const { first, retry } = await crossing(i, commit(new Date().toISOString()));
    i.write.resolve();
    assert.equal((await first).duplicate, false);
    const answer = await retry;
    assert.equal(answer.duplicate, true, 'B tells nobody again');
    assert.equal(answer.record.state, 'COMMITTED');
  } finally {
    await i.service.close();
  }
});

test("a fulfil retried on B with another body while A's record is on its way: 3106 once A's record lands", async () => {
  const i = await instances();
  try {
    const { t, first, retry } = await crossing(
      i,
      commit('2024-01-01T00:00:00.000Z'),
      commit('2024-01-01T00:00:01.000Z'),
    );
    i.write.resolve();
    assert.equal((await first).duplicate, false);
    await assert.rejects(retry, (e) => codeOf(e) === '3106');
    assert.equal(
      (await i.store.transfers([t.transferId]))[0]!.completedTimestamp,
      '2024-01-01T00:00:00.000Z',
      "A's record stands",
    );
  } finally {
    await i.service.close();
  }
});

test("A's write of its fulfil fails: B records the finish, but only once A's write could no longer land", async () => {
  const i = await instances();
  try {
    const { t, first, retry, started } = await crossing(i, commit());
    i.write.reject(new Error('metadata store unavailable'));
    await assert.rejects(first, /unavailable/);
    const answer = await retry;
    const waitedMs = performance.now() - started;
    assert.equal(answer.duplicate, false, 'the finish whose record was lost is recorded now');
    assert.equal(
      (await i.store.transfers([t.transferId]))[0]!.finishHash,
      answer.record.finishHash,
    );
    // From the ledger's post (whole seconds, rounded up, in the embedded ledger), A's ledger
    // timeout and the write's bound, and a poll.
    assert.ok(
      waitedMs >= REQUEST_TIMEOUT_MS + WRITE_TIMEOUT_MS - 50 &&
        waitedMs < 1000 + REQUEST_TIMEOUT_MS + WRITE_TIMEOUT_MS + 500,
      `B waited ${Math.round(waitedMs)} ms`,
    );
  } finally {
    await i.service.close();
  }
});

test("a retry that comes long after the ledger's post (a crash lost A's record) does not wait", async () => {
  let clock = Date.now();
  const { service, a, b } = await instances({ clock: () => clock });
  try {
    const t = newTransfer(PAYER, PAYEE, '8');
    await a.prepare(PAYER, t.body as never);
    await assert.rejects(
      a.fulfil(t.transferId, { source: PAYEE, destination: PAYER }, commit()(t)),
      /killed/,
    );
    clock += 60_000;
    const started = performance.now();
    const answer = await b.fulfil(t.transferId, { source: PAYEE, destination: PAYER }, commit()(t));
    assert.equal(answer.duplicate, false);
    assert.ok(performance.now() - started < WRITE_TIMEOUT_MS / 2, 'no wait');
  } finally {
    await service.close();
  }
});
