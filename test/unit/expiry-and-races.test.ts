/**
 * The expiry sweep and the races around it, on a clock the test moves: a fulfil or error that
 * comes after the expiration but before the sweep leaves the transfer to the sweep, which tells
 * payer and payee once; identical prepares refused at once get the same refusal; a fulfil that
 * waits behind another of its transfer is answered within the ledger timeout.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config';
import { FspiopError } from '../../src/domain/errors';
import type { TransferRecord } from '../../src/domain/metadata';
import { TransferService } from '../../src/domain/transfers';
import { BatchingLedger } from '../../src/ledger/batching';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import type { Ledger } from '../../src/ledger/ledger';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { newTransfer } from '../support/mojaloop-messages';

const [PAYER, PAYEE] = ['expirypayer', 'expirypayee'];

async function onboarded(ledger: Ledger, store: MemoryMetadataStore): Promise<Service> {
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent', JMETER_ENABLED: 'true' }), { ledger, store });
  for (const name of [PAYER, PAYEE]) {
    const created = await service.app.inject({ method: 'POST', url: '/jmeter/participants/create', payload: { name, currency: 'USD' } });
    assert.equal(created.statusCode, 200, created.body);
  }
  return service;
}

const codeOf = (error: unknown): string | undefined => (error instanceof FspiopError ? error.code : undefined);

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
    // ledger releases it 0.5 s after the expiration, and a request in between finds it still reserved there.
    clock = expiresAt - 59_500;
    await transfers.prepare(PAYER, late.body as never);
    clock = expiresAt + 100;
    await assert.rejects(transfers.fulfil(late.transferId, PAYEE, PAYER, { transferState: 'COMMITTED', fulfilment: late.fulfilment }), (e) => codeOf(e) === '3303');
    await assert.rejects(transfers.error(late.transferId, PAYEE, PAYER, { errorInformation: { errorCode: '5100', errorDescription: 'late' } }), (e) => codeOf(e) === '3303');
    assert.equal((await transfers.recordOf(late.transferId)).state, 'RESERVED', 'left for the sweep, which notifies');

    const told: TransferRecord[][] = [];
    const notify = async (expired: TransferRecord[]): Promise<void> => void told.push(expired);
    assert.deepEqual(await transfers.expireDue(notify), [], 'not yet released by the ledger: nothing told');
    clock = expiresAt + 600;
    assert.equal((await transfers.get(late.transferId, PAYER)).state, 'EXPIRED_RESERVED', 'GET reports what the ledger did');
    await transfers.expireDue(notify);
    await transfers.expireDue(notify);
    assert.deepEqual(told.map((batch) => batch.map((r) => [r.transferId, r.payerFsp, r.payeeFsp, r.state])), [[[late.transferId, PAYER, PAYEE, 'EXPIRED_RESERVED']]]);
    assert.equal((await store.transfers([late.transferId]))[0]!.state, 'EXPIRED_RESERVED');
    await assert.rejects(transfers.fulfil(late.transferId, PAYEE, PAYER, { transferState: 'COMMITTED', fulfilment: late.fulfilment }), (e) => codeOf(e) === '3303');
  } finally {
    await service.close();
  }
});

test('identical prepares the ledger refuses, sent at once, all get the same refusal', async () => {
  const service = await onboarded(new EmbeddedLedger(), new MemoryMetadataStore());
  try {
    const refused = newTransfer(PAYER, PAYEE, '2000000000');
    const answers = await Promise.allSettled([1, 2, 3].map(() => service.transfers.prepare(PAYER, refused.body as never)));
    assert.deepEqual(answers.map((a) => (a.status === 'rejected' ? codeOf(a.reason) : 'fulfilled')), ['4001', '4001', '4001']);
  } finally {
    await service.close();
  }
});

test('a fulfil waiting behind another of its transfer is answered within the ledger timeout (2003), not after both waits', async () => {
  const TIMEOUT_MS = 2_000;
  const inner = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  const service = await onboarded(inner, store);
  // A ledger that never answers a commit, as with two replicas of three down.
  const hanging: Ledger = {
    name: 'embedded',
    execute: (commands) => (commands.some((c) => c.kind === 'commit') ? new Promise(() => {}) : inner.execute(commands)),
    balances: (refs) => inner.balances(refs),
    hubBalances: (refs) => inner.hubBalances(refs),
    transferStates: (ids) => inner.transferStates(ids),
    windowNets: (window, refs) => inner.windowNets(window, refs),
    windowVolumes: (window, currencies) => inner.windowVolumes(window, currencies),
    latestWindow: () => inner.latestWindow(),
    close: async () => {},
  };
  const ledger = new BatchingLedger(hanging, { maxBatchCommands: 100, maxInFlight: 4, lingerMs: 0, maxQueuedCommands: 1000, timeoutMs: TIMEOUT_MS });
  const transfers = new TransferService(store, ledger, { requestTimeoutMs: TIMEOUT_MS });
  try {
    const transfer = newTransfer(PAYER, PAYEE, '3');
    await transfers.prepare(PAYER, transfer.body as never);
    const fulfil = async (): Promise<{ code: string | undefined; ms: number }> => {
      const started = performance.now();
      const error = await transfers.fulfil(transfer.transferId, PAYEE, PAYER, { transferState: 'COMMITTED', fulfilment: transfer.fulfilment }).then(() => undefined, (e: unknown) => e);
      return { code: error === undefined ? 'answered' : ((error as Error).name === 'LedgerUnavailableError' ? '2003' : String(error)), ms: performance.now() - started };
    };
    const first = fulfil();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const retry = await fulfil();
    assert.equal((await first).code, '2003');
    assert.equal(retry.code, '2003');
    // Without the bound the retry waits for the first (~1.9 s) and then for its own commit (2 s).
    assert.ok(retry.ms < TIMEOUT_MS * 1.5, `the retry was answered after ${Math.round(retry.ms)} ms`);
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
    const first = new TransferService(store, ledger, { now: () => clock, fault: (point) => { if (point === 'prepare.after-ledger') throw new Error('killed'); } });
    await assert.rejects(first.prepare(PAYER, transfer.body as never), /killed/);
    // The client retries after the expiration: a new prepare would be refused (3100), this one is that transfer.
    clock = Date.parse(transfer.expiration) + 5_000;
    const restarted = new TransferService(store, ledger, { now: () => clock });
    const retried = await restarted.prepare(PAYER, transfer.body as never);
    assert.equal(retried.duplicate, true);
    assert.equal(retried.record.state, 'EXPIRED_RESERVED', 'the ledger released it by itself');
    assert.equal((await store.transfers([transfer.transferId]))[0]?.state, 'EXPIRED_RESERVED', 'the metadata is repaired');
    const modified = { ...(transfer.body as Record<string, unknown>), ilpPacket: 'AQ' };
    await assert.rejects(restarted.prepare(PAYER, modified as never), (e) => codeOf(e) === '3106');
    const stranger = newTransfer(PAYER, PAYEE, '7', 'USD', 10_000);
    await assert.rejects(restarted.prepare(PAYER, stranger.body as never), (e) => codeOf(e) === '3100', 'an id the ledger does not know: the validation error');
  } finally {
    await service.close();
  }
});
