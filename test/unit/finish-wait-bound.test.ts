/**
 * The bound on a request's wait for another instance's record (TransferServiceOptions.finishWaitMs,
 * open-records/finish-elsewhere.ts): two TransferServices (FxServices) on one store and one ledger,
 * A's finishes held on their way to the store, B's store shared with a long write bound, so that
 * A's record may land for seconds. B answers within its bound, undecided (FinishPendingError:
 * 2003, a Kafka chunk handed over again), having written nothing; asked again it is a duplicate
 * once A's record is there, or the finish itself once A's record can no longer land — never both.
 * A conversion's withdrawal shares one bound between its dependent transfer's abort and its own
 * void.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { FinishPendingError } from '../../src/domain/open-records/finish-elsewhere';
import { canonicalTransferId, transferIdToU128 } from '../../src/domain/shared/ids';
import type { FxService } from '../../src/domain/fx/service';
import {
  TransferService,
  type FulfilRequest,
  type TransferResult,
} from '../../src/domain/transfers/service';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { MetadataUnavailableError } from '../../src/ports/metadata';
import { isFinalFx } from '../../src/ports/states';
import { deferred } from '../support/deferred';
import { FxClient, injecting } from '../support/fx-client';
import { fxInstance } from '../support/fx-hub';
import { holdingWrites, pause, sharedView, REQUEST_TIMEOUT_MS } from '../support/held-writes';
import { newTransfer, type TestTransfer } from '../support/mojaloop-messages';
import { onboard } from '../support/onboard';
import { replacing } from '../support/replacing-ledger';

const [PAYER, PAYEE] = ['boundpayer', 'boundpayee'];
/** B's store: A's write may land this long after it was asked (MySQL's default is 20 s). */
const LONG_WRITE_TIMEOUT_MS = 3000;
/** B's bound on its waits for A's records. */
const BOUND_MS = 400;
/**
 * The same for the withdrawal's two waits: long enough that the two waits each with a bound of
 * its own (its first wait's 3/4 plus a whole bound) stay apart from one shared bound by more than
 * a loaded machine's delays.
 */
const SHARED_BOUND_MS = 1200;
/** What a loaded machine may add to an answer's time. */
const SLACK_MS = 400;

const pending = (error: unknown): boolean =>
  error instanceof FinishPendingError && error instanceof MetadataUnavailableError;

/** How long `request` took to settle, and how. */
async function timed<T>(
  request: () => Promise<T>,
): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = performance.now();
  try {
    const value = await request();
    return { ms: performance.now() - started, value };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

interface TransferInstances {
  service: Service;
  store: MemoryMetadataStore;
  a: TransferService;
  b: TransferService;
  held: ReturnType<typeof holdingWrites>;
}

async function transferInstances(): Promise<TransferInstances> {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  await onboard((o) => service.app.inject(o), [PAYER, PAYEE], '100000', 100000);
  const held = holdingWrites(store, 'saveTransfers', (r) => r.finishHash !== undefined);
  return {
    service,
    store,
    held,
    a: new TransferService(held.view, ledger),
    b: new TransferService(sharedView(store, LONG_WRITE_TIMEOUT_MS), ledger, {
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      finishWaitMs: BOUND_MS,
    }),
  };
}

/** A's commit of a new transfer, its record held on the way to the store; and B's resend. */
async function heldCommit(
  i: TransferInstances,
  amount: string,
): Promise<{
  t: TestTransfer;
  first: Promise<TransferResult>;
  resend: () => Promise<TransferResult>;
}> {
  const t = newTransfer(PAYER, PAYEE, amount);
  await i.a.prepare(PAYER, t.body as never);
  const body: FulfilRequest = { transferState: 'COMMITTED', fulfilment: t.fulfilment };
  const first = i.a.fulfil(t.transferId, { source: PAYEE, destination: PAYER }, body);
  await i.held.reached.promise;
  const resend = (): Promise<TransferResult> =>
    i.b.fulfil(t.transferId, { source: PAYEE, destination: PAYER }, body);
  return { t, first, resend };
}

test("B's retry of a commit whose record A still writes: undecided within B's bound, writing nothing; asked again once A's record landed, a duplicate", async () => {
  const i = await transferInstances();
  try {
    const { t, first, resend: retry } = await heldCommit(i, '5');
    const undecided = await timed(retry);
    assert.ok(pending(undecided.error), `undecided (2003): ${String(undecided.error)}`);
    assert.ok(
      undecided.ms >= BOUND_MS - 150 && undecided.ms < BOUND_MS + 500,
      `B answered after ${Math.round(undecided.ms)} ms, its bound ${BOUND_MS} ms`,
    );
    assert.equal(
      (await i.store.transfers([t.transferId]))[0]!.finishHash,
      undefined,
      'B recorded nothing',
    );
    i.held.write.resolve();
    assert.equal((await first).duplicate, false);
    const again = await retry();
    assert.equal(again.duplicate, true, 'asked again: B tells nobody again');
    assert.equal(again.record.state, 'COMMITTED');
  } finally {
    await i.service.close();
  }
});

test("A's write is lost: B, asked again and again, is undecided until A's write can no longer land, then records the finish once", async () => {
  const i = await transferInstances();
  try {
    const { t, first, resend } = await heldCommit(i, '6');
    const started = performance.now();
    i.held.write.reject(new Error('metadata store unavailable'));
    await assert.rejects(first, /unavailable/);
    let undecided = 0;
    let answer: TransferResult | undefined;
    while (answer === undefined) {
      const attempt = await timed(resend);
      assert.ok(attempt.ms < BOUND_MS + 500, `one attempt took ${Math.round(attempt.ms)} ms`);
      if (attempt.error === undefined) answer = attempt.value;
      else {
        assert.ok(pending(attempt.error), String(attempt.error));
        undecided++;
      }
    }
    const waitedMs = performance.now() - started;
    assert.equal(answer.duplicate, false, 'the finish whose record was lost is recorded now');
    assert.ok(undecided >= 2, `undecided ${undecided} times first`);
    assert.ok(
      waitedMs >= REQUEST_TIMEOUT_MS + LONG_WRITE_TIMEOUT_MS - 100,
      `decided after ${Math.round(waitedMs)} ms, not before A's write could no longer land`,
    );
    const [stored] = await i.store.transfers([t.transferId]);
    assert.equal(stored!.finishHash, answer.record.finishHash);
    const repeat = await resend();
    assert.equal(repeat.duplicate, true, 'recorded once');
  } finally {
    await i.service.close();
  }
});

test("a withdrawal with its dependent transfer: the transfer's wait and the conversion's share B's one bound", async () => {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  try {
    const c = new FxClient(injecting(service.app), FxClient.parties('bound'));
    await c.onboard();
    const p = c.payment();
    assert.equal((await c.fxPrepare(p)).status, 201);
    assert.equal((await c.fxAnswer(p)).status, 200);
    assert.equal((await c.prepare(p)).status, 201);
    const [transferId, commitRequestId] = [p.transferId, p.commitRequestId].map(
      canonicalTransferId,
    ) as [string, string];
    // A's record of the dependent transfer's abort, then of the conversion's, both held.
    const transferHeld = holdingWrites(
      store,
      'saveTransfers',
      (r) => r.transferId === transferId && r.finishHash !== undefined,
    );
    const conversionHeld = holdingWrites(
      transferHeld.view,
      'saveFxTransfers',
      (r) => r.commitRequestId === commitRequestId && isFinalFx(r.state),
    );
    // B reads the conversion still open, and asks the ledger only after A's abort of the chain.
    const [bAtLedger, bGoes] = [deferred(), deferred()];
    const afterA = replacing(ledger, {
      execute: async (commands) => {
        if (commands.some((c) => c.kind === 'abort' && c.id === transferIdToU128(transferId))) {
          bAtLedger.resolve();
          await bGoes.promise;
        }
        return ledger.execute(commands);
      },
    });
    const a: FxService = fxInstance(conversionHeld.view, ledger).fx;
    const b: FxService = fxInstance(sharedView(store, LONG_WRITE_TIMEOUT_MS), afterA, {
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      finishWaitMs: SHARED_BOUND_MS,
    }).fx;
    const withdraw = (fx: FxService): Promise<unknown> =>
      fx.error(
        p.commitRequestId,
        { source: c.parties.F, destination: c.parties.A },
        { errorInformation: { errorCode: '5100', errorDescription: 'FXP withdraws' } },
      );
    const started = performance.now();
    const resent = timed(() => withdraw(b));
    await bAtLedger.promise;
    const first = withdraw(a);
    await transferHeld.reached.promise;
    bGoes.resolve();
    // B waits for A's record of the transfer; it lands well within B's bound, and B goes on to
    // the conversion's void and waits for A's record of that, which stays held.
    await pause((SHARED_BOUND_MS * 3) / 4);
    transferHeld.write.resolve();
    await conversionHeld.reached.promise;
    const undecided = await resent;
    assert.ok(pending(undecided.error), `undecided: ${String(undecided.error)}`);
    const sinceStart = performance.now() - started;
    assert.ok(
      sinceStart < SHARED_BOUND_MS + SLACK_MS,
      `B answered ${Math.round(sinceStart)} ms after it was asked: both waits within one bound`,
    );
    conversionHeld.write.resolve();
    await first;
  } finally {
    await service.close();
  }
});
