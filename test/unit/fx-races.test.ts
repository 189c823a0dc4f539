/**
 * FX requests that cross each other, in process on the embedded ledger: the FXP withdrawing while
 * the dependent transfer's prepare is between the ledger and the store (here on "another
 * instance": a second TransferService and FxService on the same store and ledger); two
 * conversions for one transfer prepared at once; a GET repairing from the ledger while the FXP's
 * withdrawal is being recorded.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { TransferAbortedError } from '../../src/domain/shared/errors';
import { canonicalTransferId, transferIdToU128 } from '../../src/domain/shared/ids';
import type { MetadataStore } from '../../src/ports/metadata';
import { TransferInternalState } from '../../src/ports/states';
import { fxLedgerId } from '../../src/domain/fx/rules';
import { fxInstance } from '../support/fx-hub';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import type { Ledger } from '../../src/ports/ledger';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { deferred } from '../support/deferred';
import { holdingWrites } from '../support/held-writes';
import { FxClient, injecting } from '../support/fx-client';
import { replacing } from '../support/replacing-ledger';

async function onboarded(
  ledger: Ledger,
  store: MetadataStore,
): Promise<{ service: Service; c: FxClient }> {
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
  const c = new FxClient(injecting(service.app), FxClient.parties('race'));
  await c.onboard();
  return { service, c };
}

test('the FXP withdraws while the dependent prepare is on its way to the store: the fulfil voids the transfer and tells the payer', async () => {
  const ledger = new EmbeddedLedger();
  const shared = new MemoryMetadataStore();
  // This instance's store holds back the save of one transfer until the withdrawal is done.
  const held = new Set<string>();
  const {
    view: gated,
    reached,
    write: release,
  } = holdingWrites(shared, 'saveTransfers', (r) => held.has(r.transferId));
  const { service, c } = await onboarded(ledger, gated);
  const { fx: other } = fxInstance(shared, ledger);
  try {
    const p = c.payment();
    assert.equal((await c.fxPrepare(p)).status, 201);
    assert.equal((await c.fxAnswer(p)).status, 200);
    held.add(p.transferId);
    const preparing = c.prepare(p);
    await reached.promise;
    const withdrawn = await other.error(
      p.commitRequestId,
      { source: c.parties.F, destination: c.parties.A },
      {
        errorInformation: { errorCode: '5100', errorDescription: 'FXP withdraws' },
      },
    );
    assert.equal(withdrawn.record.state, TransferInternalState.ABORTED_ERROR);
    assert.equal(withdrawn.transfer, undefined, 'the withdrawal could not see the transfer');
    release.resolve();
    assert.equal((await preparing).status, 201);
    assert.deepEqual(
      await c.positions(),
      ['0', '0', '265000', '0'],
      "the transfer holds the FXP's TZS",
    );

    const fulfil = { transferState: 'COMMITTED' as const, fulfilment: p.transfer.fulfilment };
    // TransferAbortedError: the payee's fulfil failed and the payer is told (Kafka:
    // abort-validation).
    await assert.rejects(
      service.transfers.fulfil(
        p.transferId,
        { source: c.parties.B, destination: c.parties.A, origin: 'fulfil/0/7' },
        fulfil,
      ),
      TransferAbortedError,
    );
    assert.deepEqual(await ledger.transferStates([transferIdToU128(p.transferId)]), ['aborted']);
    assert.deepEqual(await c.positions(), ['0', '0', '0', '0'], 'every reservation released');
    const [stored] = await shared.transfers([p.transferId]);
    assert.equal(stored?.state, TransferInternalState.ABORTED_REJECTED);
    assert.equal(stored?.errorInformation?.errorCode, '3100');
    assert.equal((await c.transferGet(p)).body.transferState, 'ABORTED');
    // The same message again is answered as the first time.
    await assert.rejects(
      service.transfers.fulfil(
        p.transferId,
        { source: c.parties.B, destination: c.parties.A, origin: 'fulfil/0/7' },
        fulfil,
      ),
      TransferAbortedError,
    );
  } finally {
    await service.close();
  }
});

test('two conversions for one determining transfer prepared at once: one is accepted, the other refused 3100', async () => {
  const { service, c } = await onboarded(new EmbeddedLedger(), new MemoryMetadataStore());
  try {
    const first = c.payment('10', '26500');
    const second = c.payment('10', '26500');
    second.body = { ...second.body, determiningTransferId: first.transferId };
    const answers = await Promise.all([c.fxPrepare(first), c.fxPrepare(second)]);
    assert.deepEqual(
      answers.map((a) => a.status).sort(),
      [201, 400],
      JSON.stringify(answers.map((a) => a.body)),
    );
    assert.equal(answers.find((a) => a.status === 400)!.body.errorInformation.errorCode, '3100');
    assert.deepEqual(await c.positions(), ['10', '0', '0', '0'], 'one conversion reserved');
  } finally {
    await service.close();
  }
});

test("a GET that finds the FXP's withdrawal in the ledger before its record is written keeps that record: its error stays, a changed retry is 3106", async () => {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  // The GET's look at the ledger is held until the withdrawal has been recorded; it then reads the
  // abort.
  let held: bigint | undefined;
  const [reached, release] = [deferred(), deferred()];
  const slowed = replacing(ledger, {
    transferStates: async (ids) => {
      if (held !== undefined && ids.includes(held)) {
        held = undefined;
        reached.resolve();
        await release.promise;
      }
      return ledger.transferStates(ids);
    },
  });
  const { service, c } = await onboarded(slowed, store);
  try {
    const p = c.payment();
    assert.equal((await c.fxPrepare(p)).status, 201);
    held = fxLedgerId(p.commitRequestId);
    const getting = c.fxGet(p);
    await reached.promise;
    assert.equal((await c.fxError(p)).status, 200);
    release.resolve();
    const got = await getting;
    assert.equal(got.status, 200);
    assert.equal(got.body.conversionState, 'ABORTED');

    const [stored] = await store.fxTransfers([canonicalTransferId(p.commitRequestId)]);
    assert.equal(stored?.state, TransferInternalState.ABORTED_ERROR);
    assert.equal(stored?.errorInformation?.errorCode, '5100', "the withdrawal's error is kept");
    assert.match(stored?.finishHash ?? '', /^error:/, "the withdrawal's finish is kept");
    // The withdrawal's record stands: another error for it is a modified request, not recorded
    // anew.
    await assert.rejects(
      service.fx.error(
        p.commitRequestId,
        { source: c.parties.F, destination: c.parties.A },
        {
          errorInformation: { errorCode: '5101', errorDescription: 'another reason' },
        },
      ),
      (error: { code?: string }) => error.code === '3106',
    );
    assert.deepEqual(await c.positions(), ['0', '0', '0', '0'], 'nothing reserved');
  } finally {
    await service.close();
  }
});
