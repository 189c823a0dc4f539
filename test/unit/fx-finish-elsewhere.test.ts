/**
 * The FXP's withdrawal of a conversion (PUT /fxTransfers/{id}/error, or a PUT with conversionState
 * ABORTED) resent to another instance while the first's record is between the ledger and the
 * store (Kafka mode: ml-api-adapter produces without a key). Two FxServices, each with its
 * TransferService, on one store and one ledger; A's store holds back A's final record of the
 * conversion, B's says it is shared (a write may land `writeTimeoutMs` after it was asked, as
 * MySQL's). B finds the withdrawal in the ledger — by reading its state, or as `exists` on its own
 * abort — and no record of it: it waits for A's and is then a duplicate (3106 with another body),
 * not a second withdrawal told again; only once A's write can no longer land does it record it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import type { ErrorInformation } from '../../src/ports/metadata';
import { canonicalTransferId, transferIdToU128 } from '../../src/domain/shared/ids';
import { isFinalFx } from '../../src/ports/states';
import { fxLedgerId } from '../../src/domain/fx/rules';
import { fxInstance } from '../support/fx-hub';
import { FxService, type FxResult } from '../../src/domain/fx/service';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { deferred, type Deferred } from '../support/deferred';
import {
  A_WHILE_MS,
  REQUEST_TIMEOUT_MS,
  WRITE_TIMEOUT_MS,
  codeOf,
  holdingWrites,
  pause,
  sharedView,
} from '../support/held-writes';
import { FxClient, injecting, type Payment } from '../support/fx-client';
import { replacing } from '../support/replacing-ledger';

interface Instances {
  service: Service;
  c: FxClient;
  a: FxService;
  b: FxService;
  store: MemoryMetadataStore;
  /** A's final records of these conversions reach the store only when `write` settles. */
  held: Set<string>;
  reached: Deferred<void>;
  write: Deferred<void>;
  /** B's aborts under these ledger ids reach the ledger only when `ledgerRelease` settles. */
  ledgerHeld: Set<bigint>;
  ledgerReached: Deferred<void>;
  ledgerRelease: Deferred<void>;
}

/**
 * With `sharedStore` false, B's store is one of its own (no writeTimeoutMs), as the memory and
 * journal stores are.
 */
async function instances(sharedStore = true): Promise<Instances> {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  const c = new FxClient(injecting(service.app), FxClient.parties('elsewhere'));
  await c.onboard();
  const held = new Set<string>();
  const {
    view: slowFinals,
    reached,
    write,
  } = holdingWrites(
    store,
    'saveFxTransfers',
    (r) => held.has(r.commitRequestId) && isFinalFx(r.state),
  );
  const shared = sharedStore ? sharedView(store) : store;
  const ledgerHeld = new Set<bigint>();
  const [ledgerReached, ledgerRelease] = [deferred(), deferred()];
  const slowAborts = replacing(ledger, {
    execute: async (commands) => {
      if (commands.some((command) => command.kind === 'abort' && ledgerHeld.has(command.id))) {
        ledgerReached.resolve();
        await ledgerRelease.promise;
      }
      return ledger.execute(commands);
    },
  });
  return {
    service,
    c,
    store,
    held,
    reached,
    write,
    ledgerHeld,
    ledgerReached,
    ledgerRelease,
    a: fxInstance(slowFinals, ledger).fx,
    b: fxInstance(shared, slowAborts, { requestTimeoutMs: REQUEST_TIMEOUT_MS }).fx,
  };
}

/** The FXP's withdrawal, as it may be sent to either instance. */
type Withdrawal = (fx: FxService, i: Instances, p: Payment) => Promise<FxResult>;
const withdrawal =
  (
    errorInformation: ErrorInformation = { errorCode: '5100', errorDescription: 'FXP withdraws' },
  ): Withdrawal =>
  (fx, i, p) =>
    fx.error(
      p.commitRequestId,
      { source: i.c.parties.F, destination: i.c.parties.A },
      { errorInformation },
    );
/**
 * A conversion (with its dependent transfer prepared, if `dependent`) that A withdraws, its record
 * held on its way to the store, and B's resend of the withdrawal (`resent`, A's unless given),
 * which has not answered a while later. With `bFirst`, B asks the ledger after A's void (`exists`);
 * else B reads the conversion after it, finding it aborted in the ledger.
 */
async function crossing(
  i: Instances,
  first: Withdrawal,
  options: { resent?: Withdrawal; dependent?: boolean; bFirst?: boolean } = {},
): Promise<{ p: Payment; done: Promise<FxResult>; retry: Promise<FxResult>; started: number }> {
  const p = i.c.payment();
  assert.equal((await i.c.fxPrepare(p)).status, 201);
  if (options.dependent === true) {
    assert.equal((await i.c.fxAnswer(p)).status, 200);
    assert.equal((await i.c.prepare(p)).status, 201);
  }
  i.held.add(canonicalTransferId(p.commitRequestId));
  const resend = (): Promise<FxResult> => (options.resent ?? first)(i.b, i, p);
  let retry: Promise<FxResult> | undefined;
  if (options.bFirst === true) {
    i.ledgerHeld.add(
      options.dependent === true
        ? transferIdToU128(canonicalTransferId(p.transferId))
        : fxLedgerId(canonicalTransferId(p.commitRequestId)),
    );
    retry = resend();
    await i.ledgerReached.promise;
  }
  const done = first(i.a, i, p);
  await i.reached.promise;
  i.ledgerRelease.resolve();
  const started = performance.now();
  retry ??= resend();
  let answered = false;
  retry.then(
    () => (answered = true),
    () => (answered = true),
  );
  await pause(A_WHILE_MS);
  assert.equal(answered, false, "B answered while A's record could still land");
  return { p, done, retry, started };
}

for (const bFirst of [false, true]) {
  test(`the FXP's PUT …/error resent to B while A's record is on its way (B ${bFirst ? 'at the ledger after A' : 'reading after A'}): B waits and is a duplicate`, async () => {
    const i = await instances();
    try {
      const { done, retry } = await crossing(i, withdrawal(), { bFirst });
      i.write.resolve();
      assert.equal((await done).duplicate, false);
      const answer = await retry;
      assert.equal(answer.duplicate, true, 'B tells nobody again');
      assert.equal(answer.record.state, 'ABORTED_ERROR');
    } finally {
      await i.service.close();
    }
  });
}

for (const bFirst of [false, true]) {
  test(`a withdrawal with its dependent transfer prepared, resent to B (B ${bFirst ? 'at the ledger after A' : 'reading after A'}): B waits and is a duplicate`, async () => {
    const i = await instances();
    try {
      const { p, done, retry } = await crossing(i, withdrawal(), { dependent: true, bFirst });
      i.write.resolve();
      assert.equal(
        (await done).transfer?.record.state,
        'ABORTED_ERROR',
        'A aborted the transfer with the conversion',
      );
      assert.equal((await retry).duplicate, true, 'B tells nobody again');
      assert.equal((await i.c.transferGet(p)).body.transferState, 'ABORTED');
      assert.deepEqual(await i.c.positions(), ['0', '0', '0', '0'], 'every reservation released');
    } finally {
      await i.service.close();
    }
  });
}

test("a withdrawal resent to B with another error while A's record is on its way: 3106 once A's record lands", async () => {
  const i = await instances();
  try {
    const { p, done, retry } = await crossing(i, withdrawal(), {
      resent: withdrawal({ errorCode: '5101', errorDescription: 'another reason' }),
    });
    i.write.resolve();
    assert.equal((await done).duplicate, false);
    await assert.rejects(retry, (e) => codeOf(e) === '3106');
    assert.equal(
      (await i.store.fxTransfers([canonicalTransferId(p.commitRequestId)]))[0]!.errorInformation
        ?.errorCode,
      '5100',
      "A's record stands",
    );
  } finally {
    await i.service.close();
  }
});

test("A's write of its withdrawal fails: B records it, but only once A's write could no longer land", async () => {
  const i = await instances();
  try {
    const { p, done, retry, started } = await crossing(i, withdrawal());
    i.write.reject(new Error('metadata store unavailable'));
    await assert.rejects(done, /unavailable/);
    const answer = await retry;
    const waitedMs = performance.now() - started;
    assert.equal(answer.duplicate, false, 'the withdrawal whose record was lost is recorded now');
    const [stored] = await i.store.fxTransfers([canonicalTransferId(p.commitRequestId)]);
    assert.equal(stored!.finishHash, answer.record.finishHash);
    assert.equal(stored!.errorInformation?.errorCode, '5100');
    // From the ledger's void (whole seconds, rounded up, in the embedded ledger), A's ledger
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

test('on a store no other instance writes (no writeTimeoutMs), a withdrawal found in the ledger unrecorded is recorded at once', async () => {
  const i = await instances(false);
  try {
    const p = i.c.payment();
    assert.equal((await i.c.fxPrepare(p)).status, 201);
    i.held.add(canonicalTransferId(p.commitRequestId));
    const done = withdrawal()(i.a, i, p);
    await i.reached.promise;
    const started = performance.now();
    assert.equal((await withdrawal()(i.b, i, p)).duplicate, false);
    assert.ok(performance.now() - started < A_WHILE_MS, 'no wait');
    i.write.resolve();
    await done;
  } finally {
    await i.service.close();
  }
});
