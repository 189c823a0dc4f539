/**
 * The expiry sweep and the races around it, on a clock the test moves: a fulfil or error that
 * comes after the expiration but before the sweep leaves the transfer to the sweep, which tells
 * payer and payee once; identical prepares refused at once get the same refusal; a fulfil that
 * waits behind another of its transfer, and a request that asks the ledger twice, are answered
 * within the ledger timeout.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { FspiopError } from '../../src/domain/shared/errors';
import type { FxTransferRecord, TransferRecord } from '../../src/ports/metadata';
import { TransferService } from '../../src/domain/transfers/service';
import { BatchingLedger } from '../../src/ledger/batching';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import type { Ledger } from '../../src/ports/ledger';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { deferred, settle } from '../support/deferred';
import { FxClient, injecting } from '../support/fx-client';
import { fxHub, fxInstance } from '../support/fx-hub';
import { newTransfer } from '../support/mojaloop-messages';
import { replacing } from '../support/replacing-ledger';

const [PAYER, PAYEE] = ['expirypayer', 'expirypayee'];

async function onboarded(ledger: Ledger, store: MemoryMetadataStore): Promise<Service> {
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
  return service;
}

/** The ledger, counting the transfers whose state it is asked for. */
function countingStateQuestions(inner: Ledger): { ledger: Ledger; asked: () => number } {
  let asked = 0;
  const ledger = replacing(inner, {
    transferStates: (ids, deadline) => ((asked += ids.length), inner.transferStates(ids, deadline)),
  });
  return { ledger, asked: () => asked };
}

const codeOf = (error: unknown): string | undefined =>
  error instanceof FspiopError ? error.code : undefined;

test('a fulfil or error after the expiration but before the sweep: 3303, and the sweep tells payer and payee exactly once', async () => {
  let clock = Date.now();
  const ledger = new EmbeddedLedger(() => clock);
  const store = new MemoryMetadataStore();
  const service = await onboarded(ledger, store);
  const transfers = new TransferService(store, ledger, { now: () => clock });
  try {
    const late = newTransfer(PAYER, PAYEE, '5', 'USD', 60_000);
    const expiresAt = Date.parse(late.expiration);
    // Accepted 59.5 s before its expiration: the ledger's timeout is whole seconds (60), so the
    // ledger releases it 0.5 s after the expiration, and a request in between finds it still
    // reserved there.
    clock = expiresAt - 59_500;
    await transfers.prepare(PAYER, late.body as never);
    clock = expiresAt + 100;
    await assert.rejects(
      transfers.fulfil(
        late.transferId,
        { source: PAYEE, destination: PAYER },
        {
          transferState: 'COMMITTED',
          fulfilment: late.fulfilment,
        },
      ),
      (e) => codeOf(e) === '3303',
    );
    await assert.rejects(
      transfers.error(
        late.transferId,
        { source: PAYEE, destination: PAYER },
        {
          errorInformation: { errorCode: '5100', errorDescription: 'late' },
        },
      ),
      (e) => codeOf(e) === '3303',
    );
    assert.equal(
      (await transfers.recordOf(late.transferId)).state,
      'RESERVED',
      'left for the sweep, which notifies',
    );

    const told: TransferRecord[][] = [];
    const notify = async (expired: TransferRecord[]): Promise<void> => void told.push(expired);
    assert.deepEqual(
      await transfers.expireDue(notify),
      [],
      'not yet released by the ledger: nothing told',
    );
    clock = expiresAt + 600;
    assert.equal(
      (await transfers.get(late.transferId, PAYER)).state,
      'EXPIRED_RESERVED',
      'GET reports what the ledger did',
    );
    await transfers.expireDue(notify);
    await transfers.expireDue(notify);
    assert.deepEqual(
      told.map((batch) => batch.map((r) => [r.transferId, r.payerFsp, r.payeeFsp, r.state])),
      [[[late.transferId, PAYER, PAYEE, 'EXPIRED_RESERVED']]],
    );
    assert.equal((await store.transfers([late.transferId]))[0]!.state, 'EXPIRED_RESERVED');
    await assert.rejects(
      transfers.fulfil(
        late.transferId,
        { source: PAYEE, destination: PAYER },
        {
          transferState: 'COMMITTED',
          fulfilment: late.fulfilment,
        },
      ),
      (e) => codeOf(e) === '3303',
    );
  } finally {
    await service.close();
  }
});

test('identical prepares the ledger refuses, sent at once, all get the same refusal', async () => {
  const service = await onboarded(new EmbeddedLedger(), new MemoryMetadataStore());
  try {
    const refused = newTransfer(PAYER, PAYEE, '2000000000');
    const answers = await Promise.allSettled(
      [1, 2, 3].map(() => service.transfers.prepare(PAYER, refused.body as never)),
    );
    assert.deepEqual(
      answers.map((a) => (a.status === 'rejected' ? codeOf(a.reason) : 'fulfilled')),
      ['4001', '4001', '4001'],
    );
  } finally {
    await service.close();
  }
});

/** Transfers on `ledger` batched, each request bounded by `timeoutMs` as LEDGER_TIMEOUT_MS does. */
function boundedTransfers(
  store: MemoryMetadataStore,
  ledger: Ledger,
  timeoutMs: number,
): TransferService {
  const batching = new BatchingLedger(ledger, {
    maxBatchCommands: 100,
    maxInFlight: 4,
    lingerMs: 0,
    maxQueuedCommands: 1000,
    timeoutMs,
  });
  return new TransferService(store, batching, { requestTimeoutMs: timeoutMs });
}

test('a fulfil waiting behind another of its transfer is answered within the ledger timeout (2003), not after both waits', async () => {
  const TIMEOUT_MS = 2_000;
  const inner = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  const service = await onboarded(inner, store);
  // A ledger that never answers a commit, as with two replicas of three down.
  const hanging = replacing(inner, {
    execute: (commands) =>
      commands.some((c) => c.kind === 'commit') ? new Promise(() => {}) : inner.execute(commands),
  });
  const transfers = boundedTransfers(store, hanging, TIMEOUT_MS);
  try {
    const transfer = newTransfer(PAYER, PAYEE, '3');
    await transfers.prepare(PAYER, transfer.body as never);
    const fulfil = async (): Promise<{ code: string | undefined; ms: number }> => {
      const started = performance.now();
      const error = await transfers
        .fulfil(
          transfer.transferId,
          { source: PAYEE, destination: PAYER },
          {
            transferState: 'COMMITTED',
            fulfilment: transfer.fulfilment,
          },
        )
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      return {
        code:
          error === undefined
            ? 'answered'
            : (error as Error).name === 'LedgerUnavailableError'
              ? '2003'
              : String(error),
        ms: performance.now() - started,
      };
    };
    const first = fulfil();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const retry = await fulfil();
    assert.equal((await first).code, '2003');
    assert.equal(retry.code, '2003');
    // Without the bound the retry waits for the first (~1.9 s) and then for its own commit (2 s).
    assert.ok(
      retry.ms < TIMEOUT_MS * 1.5,
      `the retry was answered after ${Math.round(retry.ms)} ms`,
    );
  } finally {
    await service.close();
  }
});

test('a request that asks the ledger twice is answered within the ledger timeout of its start (2003), not one per call', async () => {
  const TIMEOUT_MS = 2_000;
  // The first call answered late, the second never: without one bound for both, ~3.8 s.
  const FIRST_ANSWER_MS = 1_800;
  const inner = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  const service = await onboarded(inner, store);
  const late: Ledger = replacing(inner, {
    execute: async (commands) => {
      await new Promise((resolve) => setTimeout(resolve, FIRST_ANSWER_MS));
      return inner.execute(commands);
    },
    transferStates: () => new Promise(() => {}),
  });
  const transfers = boundedTransfers(store, late, TIMEOUT_MS);
  /** An instance that stops at `point`, after its ledger call and before its metadata write. */
  const crashingAt = (point: string): TransferService =>
    new TransferService(store, inner, {
      fault: (at) => {
        if (at === point) throw new Error('killed');
      },
    });
  const answered = async (call: () => Promise<unknown>): Promise<{ code: string; ms: number }> => {
    const started = performance.now();
    const error = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    const code =
      (error as Error | undefined)?.name === 'LedgerUnavailableError' ? '2003' : String(error);
    return { code, ms: performance.now() - started };
  };
  try {
    // A prepare retried after a crash lost its record: `exists` in the ledger, then its state.
    const prepared = newTransfer(PAYER, PAYEE, '3');
    await assert.rejects(
      crashingAt('prepare.after-ledger').prepare(PAYER, prepared.body as never),
      /killed/,
    );
    // A fulfil retried likewise: `exists`, then whether it settled.
    const fulfilled = newTransfer(PAYER, PAYEE, '4');
    await service.transfers.prepare(PAYER, fulfilled.body as never);
    const delivery = { source: PAYEE, destination: PAYER };
    const fulfil = { transferState: 'COMMITTED' as const, fulfilment: fulfilled.fulfilment };
    await assert.rejects(
      crashingAt('fulfil.after-ledger').fulfil(fulfilled.transferId, delivery, fulfil),
      /killed/,
    );
    const answers = await Promise.all([
      answered(() => transfers.prepare(PAYER, prepared.body as never)),
      answered(() => transfers.fulfil(fulfilled.transferId, delivery, fulfil)),
    ]);
    for (const { code, ms } of answers) {
      assert.equal(code, '2003');
      // At the bound (a timer may fire a few ms early); the upper one catches a bound per call.
      assert.ok(
        ms >= TIMEOUT_MS - 50 && ms < TIMEOUT_MS * 1.4,
        `answered after ${Math.round(ms)} ms`,
      );
    }
  } finally {
    await service.close();
  }
});

test('a prepare retried after its expiration, whose metadata a crash lost, is the transfer the ledger holds', async () => {
  let clock = Date.now();
  const ledger = new EmbeddedLedger(() => clock);
  const store = new MemoryMetadataStore();
  const service = await onboarded(ledger, store);
  try {
    const transfer = newTransfer(PAYER, PAYEE, '7', 'USD', 10_000);
    // The first instance wrote the ledger and died before the metadata: only the ledger has it.
    const first = new TransferService(store, ledger, {
      now: () => clock,
      fault: (point) => {
        if (point === 'prepare.after-ledger') throw new Error('killed');
      },
    });
    await assert.rejects(first.prepare(PAYER, transfer.body as never), /killed/);
    // The client retries after the expiration: a new prepare would be refused (3100), this one is
    // that transfer.
    clock = Date.parse(transfer.expiration) + 5_000;
    const restarted = new TransferService(store, ledger, { now: () => clock });
    const retried = await restarted.prepare(PAYER, transfer.body as never);
    assert.equal(retried.duplicate, true);
    assert.equal(retried.record.state, 'EXPIRED_RESERVED', 'the ledger released it by itself');
    assert.equal(
      (await store.transfers([transfer.transferId]))[0]?.state,
      'EXPIRED_RESERVED',
      'the metadata is repaired',
    );
    const modified = { ...(transfer.body as Record<string, unknown>), ilpPacket: 'AQ' };
    await assert.rejects(restarted.prepare(PAYER, modified as never), (e) => codeOf(e) === '3106');
    const stranger = newTransfer(PAYER, PAYEE, '7', 'USD', 10_000);
    await assert.rejects(
      restarted.prepare(PAYER, stranger.body as never),
      (e) => codeOf(e) === '3100',
      'an id the ledger does not know: the validation error',
    );
  } finally {
    await service.close();
  }
});

test('a reservation finished by another instance leaves this one within seconds, not at its expiration; one still open is asked about again only later', async () => {
  let clock = Date.now();
  const ledger = new EmbeddedLedger(() => clock);
  const store = new MemoryMetadataStore();
  const service = await onboarded(ledger, store);
  // Two instances on one ledger and one store; A counts its questions to the ledger.
  const counting = countingStateQuestions(ledger);
  const a = new TransferService(store, counting.ledger, { now: () => clock });
  const b = new TransferService(store, ledger, { now: () => clock });
  // B commits but dies before its metadata: only the ledger knows that one is finished.
  const crashing = new TransferService(store, ledger, {
    now: () => clock,
    fault: (point) => {
      if (point === 'fulfil.after-ledger') throw new Error('killed');
    },
  });
  try {
    const crossing = newTransfer(PAYER, PAYEE, '4', 'USD', 120_000);
    const lost = newTransfer(PAYER, PAYEE, '6', 'USD', 120_000);
    const waiting = newTransfer(PAYER, PAYEE, '8', 'USD', 120_000);
    for (const t of [crossing, lost, waiting]) await a.prepare(PAYER, t.body as never);
    await b.fulfil(
      crossing.transferId,
      { source: PAYEE, destination: PAYER },
      {
        transferState: 'COMMITTED',
        fulfilment: crossing.fulfilment,
        completedTimestamp: new Date(clock).toISOString(),
      },
    );
    await assert.rejects(
      crashing.fulfil(
        lost.transferId,
        { source: PAYEE, destination: PAYER },
        {
          transferState: 'COMMITTED',
          fulfilment: lost.fulfilment,
        },
      ),
      /killed/,
    );
    const finishedByB = (await store.transfers([crossing.transferId]))[0]!;
    assert.equal(finishedByB.fulfilment, crossing.fulfilment);

    // A sweep within the first seconds asks nothing: a reservation is that young.
    assert.deepEqual(await a.expireDue(), []);
    assert.equal(counting.asked(), 0);
    clock += 5_000;
    assert.deepEqual(await a.expireDue(), [], 'nothing expired: two were finished, one is open');
    assert.equal(counting.asked(), 3, 'the three watched for 5 s asked about once');
    // Let go of: B's record kept as B wrote it (with its fulfilment); the lost finish recorded as
    // the ledger has it.
    assert.deepEqual((await store.transfers([crossing.transferId]))[0], finishedByB);
    assert.equal((await store.transfers([lost.transferId]))[0]!.state, 'COMMITTED');
    // A answers from the store now, as B would (a final record: the ledger is not asked).
    assert.equal((await a.get(crossing.transferId, PAYER)).fulfilment, crossing.fulfilment);
    // The open one is asked about again only after another 5 s.
    clock += 1_000;
    await a.expireDue();
    assert.equal(counting.asked(), 3, 'asked 1 s ago: not again yet');
    clock += 4_000;
    await a.expireDue();
    assert.equal(counting.asked(), 4, 'the open one asked about again');
    // And A still fulfils it.
    const committed = await a.fulfil(
      waiting.transferId,
      { source: PAYEE, destination: PAYER },
      {
        transferState: 'COMMITTED',
        fulfilment: waiting.fulfilment,
      },
    );
    assert.equal(committed.record.state, 'COMMITTED');
  } finally {
    await service.close();
  }
});

test('an FX conversion another instance finished leaves this one within seconds; one still open is asked about again only later', async () => {
  let clock = Date.now();
  const ledger = new EmbeddedLedger(() => clock);
  const store = new MemoryMetadataStore();
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  const parties = FxClient.parties('recheck');
  const client = new FxClient(injecting(service.app), parties);
  const { A, B, F } = parties;
  // Two instances on one ledger and one store; A counts its questions to the ledger.
  const counting = countingStateQuestions(ledger);
  const { fx: a } = fxInstance(store, counting.ledger, { now: () => clock });
  const { transfers: bTransfers, fx: b } = fxInstance(store, ledger, { now: () => clock });
  try {
    await client.onboard();
    const [crossing, waiting] = [client.payment(), client.payment()];
    for (const p of [crossing, waiting])
      assert.equal((await a.prepare(A, p.body as never)).record.state, 'RESERVED');
    // The FXP's answer, the dependent transfer and its commit all go to B.
    await b.fulfil(
      crossing.commitRequestId,
      { source: F, destination: A },
      {
        conversionState: 'RESERVED',
        fulfilment: crossing.fx.fulfilment,
        completedTimestamp: crossing.answeredAt,
      },
    );
    const transfer = newTransfer(A, B, '265000', 'TZS', 60_000);
    await bTransfers.prepare(A, {
      ...transfer.body,
      transferId: crossing.transferId,
      condition: crossing.transfer.condition,
    } as never);
    await bTransfers.fulfil(
      crossing.transferId,
      { source: B, destination: A },
      {
        transferState: 'COMMITTED',
        fulfilment: crossing.transfer.fulfilment,
      },
    );
    const finishedByB = (await store.fxTransfers([crossing.commitRequestId]))[0]!;
    assert.equal(finishedByB.state, 'COMMITTED');

    assert.deepEqual(await a.expireDue(), []);
    assert.equal(counting.asked(), 0, 'a conversion that young is not asked about');
    clock += 5_000;
    assert.deepEqual(await a.expireDue(), []);
    assert.equal(counting.asked(), 2, 'both watched for 5 s asked about once');
    assert.deepEqual(
      (await store.fxTransfers([crossing.commitRequestId]))[0],
      finishedByB,
      "B's record kept as B wrote it",
    );
    clock += 5_000;
    await a.expireDue();
    assert.equal(counting.asked(), 3, 'the finished one let go of; the open one asked about again');
    // A answers for the one let go of from the store.
    assert.equal((await a.get(crossing.commitRequestId, A)).state, 'COMMITTED');
    assert.equal(counting.asked(), 3, 'a final record: the ledger is not asked');
    // And the open one still expires through A's sweep, told once.
    clock += 120_000;
    const expired = await a.expireDue();
    assert.deepEqual(
      expired.map((r) => [r.commitRequestId, r.state]),
      [[waiting.commitRequestId, 'EXPIRED_RESERVED']],
    );
  } finally {
    await service.close();
  }
});

/** A notification that holds its sweep until released, recording the ids it was asked to tell. */
/**
 * Two sweeps of one service, the second started while the first is still telling (its notify held
 * open): the second is skipped, and `expected` is told exactly once, by the first.
 */
async function assertOverlappingSweepSkipped<R>(
  expireDue: (notify: (expired: R[]) => Promise<void>) => Promise<R[]>,
  idOf: (record: R) => string,
  expected: string,
): Promise<void> {
  const gate = deferred();
  const told: string[] = [];
  const notify = async (expired: R[]): Promise<void> => {
    told.push(...expired.map(idOf));
    await gate.promise;
  };
  const first = expireDue(notify);
  const overlapping = expireDue(notify);
  gate.resolve();
  assert.deepEqual((await first).map(idOf), [expected]);
  assert.deepEqual(await overlapping, [], 'skipped');
  assert.deepEqual(told, [expected]);
}

test('a sweep that starts while the previous one is still telling is skipped: payer and payee are told once', async () => {
  let clock = Date.now();
  const ledger = new EmbeddedLedger(() => clock);
  const store = new MemoryMetadataStore();
  const service = await onboarded(ledger, store);
  const transfers = new TransferService(store, ledger, { now: () => clock });
  try {
    const transfer = newTransfer(PAYER, PAYEE, '5', 'USD', 10_000);
    await transfers.prepare(PAYER, transfer.body as never);
    clock = Date.parse(transfer.expiration) + 1_000;
    await assertOverlappingSweepSkipped(
      (notify) => transfers.expireDue(notify),
      (r: TransferRecord) => r.transferId,
      transfer.transferId,
    );
  } finally {
    await service.close();
  }
});

test('an FX sweep that starts while the previous one is still telling is skipped: the conversion is told once', async () => {
  const { clock, service, parties, client, fx } = await fxHub(new MemoryMetadataStore(), 'overlap');
  try {
    const payment = client.payment();
    await fx.prepare(parties.A, payment.body as never);
    clock.now += 120_000;
    await assertOverlappingSweepSkipped(
      (notify) => fx.expireDue(notify),
      (r: FxTransferRecord) => r.commitRequestId,
      payment.commitRequestId,
    );
  } finally {
    await service.close();
  }
});

test("a GET's repair during a fulfil at the ledger waits for it: the fulfil's record stands, and its retry is a duplicate, not a second commit", async () => {
  const store = new (class extends MemoryMetadataStore {
    /**
     * Set: the next read of transfers answers what it read only once this settles (a read in flight
     * meanwhile).
     */
    lateRead: Promise<void> | undefined;
    override async transfers(ids: readonly string[]): Promise<(TransferRecord | undefined)[]> {
      const read = await super.transfers(ids);
      const late = this.lateRead;
      this.lateRead = undefined;
      await late;
      return read;
    }
  })();
  const ledger = new (class extends EmbeddedLedger {
    /** Set: a commit, once applied, is answered only when this settles. */
    commitAnswer: Promise<void> | undefined;
    override async execute(
      commands: Parameters<Ledger['execute']>[0],
    ): ReturnType<Ledger['execute']> {
      const outcomes = await super.execute(commands);
      if (commands.some((c) => c.kind === 'commit')) await this.commitAnswer;
      return outcomes;
    }
  })();
  const service = await onboarded(ledger, store);
  const transfers = new TransferService(store, ledger);
  try {
    const transfer = newTransfer(PAYER, PAYEE, '4');
    await transfers.prepare(PAYER, transfer.body as never);
    const body = { transferState: 'COMMITTED' as const, fulfilment: transfer.fulfilment };
    const [commitAnswer, readAnswer] = [deferred(), deferred()];
    ledger.commitAnswer = commitAnswer.promise;
    const first = transfers.fulfil(
      transfer.transferId,
      { source: PAYEE, destination: PAYER },
      body,
    );
    await settle();
    // The ledger has the commit, the store not yet: the GET finds a finish to repair.
    store.lateRead = readAnswer.promise;
    const get = transfers.get(transfer.transferId, PAYER);
    await settle();
    commitAnswer.resolve();
    assert.equal((await first).duplicate, false);
    readAnswer.resolve();
    assert.equal((await get).fulfilment, transfer.fulfilment);
    const [stored] = await store.transfers([transfer.transferId]);
    assert.equal(stored?.fulfilment, transfer.fulfilment);
    assert.ok(stored?.finishHash?.startsWith('fulfil:'));
    assert.equal(
      (await transfers.fulfil(transfer.transferId, { source: PAYEE, destination: PAYER }, body))
        .duplicate,
      true,
    );
  } finally {
    await service.close();
  }
});
