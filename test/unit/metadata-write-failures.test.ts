/**
 * Metadata writes that fail (a MySQL timeout: 2003) after the ledger has moved the money: the
 * retry, the next sweep or another instance must still find the record the ledger implies, and
 * nobody is told an expiry twice.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { FspiopError } from '../../src/domain/shared/errors';
import type { FxTransferRecord, TransferRecord } from '../../src/ports/metadata';
import { TransferService } from '../../src/domain/transfers/service';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { FxClient, injecting } from '../support/fx-client';
import { fxHub, fxInstance } from '../support/fx-hub';
import { newTransfer } from '../support/mojaloop-messages';
import { onboard } from '../support/onboard';

const [PAYER, PAYEE] = ['writefailpayer', 'writefailpayee'];

/** The memory store, whose next writes of transfers or conversions time out, as MySQL's may. */
class FailingStore extends MemoryMetadataStore {
  failTransferWrites = 0;
  failFxWrites = 0;

  override async saveTransfers(records: readonly TransferRecord[]): Promise<void> {
    if (this.failTransferWrites > 0) {
      this.failTransferWrites -= 1;
      throw new Error('metadata write timed out');
    }
    return super.saveTransfers(records);
  }

  override async saveFxTransfers(records: readonly FxTransferRecord[]): Promise<void> {
    if (this.failFxWrites > 0) {
      this.failFxWrites -= 1;
      throw new Error('metadata write timed out');
    }
    return super.saveFxTransfers(records);
  }
}

async function started(ledger: EmbeddedLedger, store: FailingStore): Promise<Service> {
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  await onboard((options) => service.app.inject(options), [PAYER, PAYEE], '1000', 10_000);
  return service;
}

const stored = async (store: FailingStore, transferId: string): Promise<string | undefined> =>
  (await store.transfers([transferId]))[0]?.state;

test('a prepare whose metadata write failed is written by its retry: another instance finishes it', async () => {
  const ledger = new EmbeddedLedger();
  const store = new FailingStore();
  const service = await started(ledger, store);
  const [a, b] = [new TransferService(store, ledger), new TransferService(store, ledger)];
  try {
    const transfer = newTransfer(PAYER, PAYEE, '5');
    store.failTransferWrites = 1;
    await assert.rejects(a.prepare(PAYER, transfer.body as never), /timed out/);
    assert.equal((await a.prepare(PAYER, transfer.body as never)).record.state, 'RESERVED');
    assert.equal(await stored(store, transfer.transferId), 'RESERVED', 'written by the retry');
    const committed = await b.fulfil(
      transfer.transferId,
      { source: PAYEE, destination: PAYER },
      {
        transferState: 'COMMITTED',
        fulfilment: transfer.fulfilment,
      },
    );
    assert.equal(committed.record.state, 'COMMITTED');
  } finally {
    await service.close();
  }
});

test("an FX prepare, and the FXP's answer, whose metadata write failed are written by their retries", async () => {
  const ledger = new EmbeddedLedger();
  const store = new FailingStore();
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  const parties = FxClient.parties('writefail');
  const client = new FxClient(injecting(service.app), parties);
  const { A, B, F } = parties;
  const { fx: a } = fxInstance(store, ledger);
  const { transfers: bTransfers } = fxInstance(store, ledger);
  try {
    await client.onboard();
    const payment = client.payment();
    const storedFx = async (): Promise<string | undefined> =>
      (await store.fxTransfers([payment.commitRequestId]))[0]?.state;
    store.failFxWrites = 1;
    await assert.rejects(a.prepare(A, payment.body as never), /timed out/);
    assert.equal((await a.prepare(A, payment.body as never)).record.state, 'RESERVED');
    assert.equal(await storedFx(), 'RESERVED', 'the prepare written by its retry');

    const answer = {
      conversionState: 'RESERVED' as const,
      fulfilment: payment.fx.fulfilment,
      completedTimestamp: payment.answeredAt,
    };
    store.failFxWrites = 1;
    await assert.rejects(
      a.fulfil(payment.commitRequestId, { source: F, destination: A }, answer),
      /timed out/,
    );
    await a.fulfil(payment.commitRequestId, { source: F, destination: A }, answer);
    assert.equal(
      await storedFx(),
      'RECEIVED_FULFIL_DEPENDENT',
      "the FXP's answer written by its retry",
    );
    // So the dependent transfer is accepted by another instance too.
    const transfer = newTransfer(A, B, '265000', 'TZS', 60_000);
    const prepared = await bTransfers.prepare(A, {
      ...transfer.body,
      transferId: payment.transferId,
      condition: payment.transfer.condition,
    } as never);
    assert.equal(prepared.record.state, 'RESERVED');
  } finally {
    await service.close();
  }
});

test('an expiry told whose record failed to be written is recorded by the next sweep, not told again', async () => {
  let clock = Date.now();
  const ledger = new EmbeddedLedger(() => clock);
  const store = new FailingStore();
  const service = await started(ledger, store);
  const transfers = new TransferService(store, ledger, { now: () => clock });
  try {
    const transfer = newTransfer(PAYER, PAYEE, '5', 'USD', 10_000);
    await transfers.prepare(PAYER, transfer.body as never);
    clock = Date.parse(transfer.expiration) + 1_000;
    const told: string[] = [];
    const notify = async (expired: TransferRecord[]): Promise<void> =>
      void told.push(...expired.map((r) => r.transferId));
    store.failTransferWrites = 1;
    await assert.rejects(transfers.expireDue(notify), /timed out/);
    assert.equal(await stored(store, transfer.transferId), 'RESERVED');
    await transfers.expireDue(notify);
    assert.equal(
      await stored(store, transfer.transferId),
      'EXPIRED_RESERVED',
      'recorded by the next sweep',
    );
    await transfers.expireDue(notify);
    assert.deepEqual(told, [transfer.transferId], 'told once');
  } finally {
    await service.close();
  }
});

test('an FX expiry told whose record failed to be written is recorded by the next sweep, not told again', async () => {
  const store = new FailingStore();
  const { clock, service, parties, client, fx } = await fxHub(store, 'toldfail');
  try {
    const payment = client.payment();
    await fx.prepare(parties.A, payment.body as never);
    clock.now += 120_000;
    const told: string[] = [];
    const notify = async (expired: FxTransferRecord[]): Promise<void> =>
      void told.push(...expired.map((r) => r.commitRequestId));
    store.failFxWrites = 1;
    await assert.rejects(fx.expireDue(notify), /timed out/);
    await fx.expireDue(notify);
    assert.equal(
      (await store.fxTransfers([payment.commitRequestId]))[0]?.state,
      'EXPIRED_RESERVED',
      'recorded by the next sweep',
    );
    await fx.expireDue(notify);
    assert.deepEqual(told, [payment.commitRequestId], 'told once');
  } finally {
    await service.close();
  }
});

test('a refusal (4001) whose record failed to be written is still answered, and its record written by the next sweep', async () => {
  const ledger = new EmbeddedLedger();
  const store = new FailingStore();
  const service = await started(ledger, store);
  const transfers = new TransferService(store, ledger);
  try {
    const refused = newTransfer(PAYER, PAYEE, '2000000');
    const origin = 'topic-transfer-prepare:0:1';
    const liquidity = (error: unknown): boolean =>
      error instanceof FspiopError && error.code === '4001';
    store.failTransferWrites = 1;
    await assert.rejects(
      transfers.prepare(PAYER, refused.body as never, origin),
      liquidity,
      'the ledger refused it: 4001, not 2003',
    );
    await transfers.expireDue();
    assert.equal(
      await stored(store, refused.transferId),
      'ABORTED_REJECTED',
      'written by the next sweep',
    );
    await assert.rejects(
      transfers.prepare(PAYER, refused.body as never, origin),
      liquidity,
      'the same message again: the same refusal, not 3100',
    );
  } finally {
    await service.close();
  }
});

test('an FX refusal (4001) whose record failed to be written is still answered, and its record written by the next sweep', async () => {
  const store = new FailingStore();
  const { service, parties, client, fx } = await fxHub(store, 'refusalfail');
  try {
    const refused = client.payment('5000');
    const origin = 'topic-fx-prepare:0:1';
    const liquidity = (error: unknown): boolean =>
      error instanceof FspiopError && error.code === '4001';
    store.failFxWrites = 1;
    await assert.rejects(
      fx.prepare(parties.A, refused.body as never, origin),
      liquidity,
      'the ledger refused it: 4001, not 2003',
    );
    await fx.expireDue();
    assert.equal(
      (await store.fxTransfers([refused.commitRequestId]))[0]?.state,
      'ABORTED_REJECTED',
      'written by the next sweep',
    );
    await assert.rejects(
      fx.prepare(parties.A, refused.body as never, origin),
      liquidity,
      'the same message again: the same refusal, not 3100',
    );
  } finally {
    await service.close();
  }
});
