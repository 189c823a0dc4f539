/**
 * TransferService.prepareLine and fulfilLine (a bulk's members): each member answered as
 * prepare() and fulfil() answer it alone, those that are not plain new reservations or plain
 * commits going those calls' own way, and a request of the same id meanwhile waiting its turn.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { FspiopError } from '../../src/domain/shared/errors';
import {
  TransferService,
  type PrepareRequest,
  type TransferResult,
} from '../../src/domain/transfers/service';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { TransferInternalState } from '../../src/ports/states';
import { newTransfer } from '../support/mojaloop-messages';
import { onboard } from '../support/onboard';

const [PAYER, PAYEE] = ['linepayer', 'linepayee'];
const ORIGIN = 'bulk-prepare:line';

async function onboarded(): Promise<{ service: Service; transfers: TransferService }> {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
    ledger,
    store,
  });
  await onboard((options) => service.app.inject(options), [PAYER, PAYEE], '1000', 100_000);
  return { service, transfers: new TransferService(store, ledger) };
}

type Transfer = ReturnType<typeof newTransfer>;

/** The transfer's prepare request. */
const bodyOf = (transfer: Transfer): PrepareRequest => transfer.body as unknown as PrepareRequest;

/** A line's answers, briefly: the state and whether a duplicate, or the refusal's code. */
function brief(answers: readonly (TransferResult | FspiopError)[]): string[] {
  return answers.map((answer) =>
    answer instanceof FspiopError
      ? answer.code
      : `${answer.record.state}${answer.duplicate ? ' duplicate' : ''}`,
  );
}

test('a line of prepares: each answered as prepare() answers it alone', async () => {
  const { service, transfers } = await onboarded();
  try {
    const [fresh, repeated, taken, same] = ['1', '2', '3', '4'].map((amount) =>
      newTransfer(PAYER, PAYEE, amount),
    ) as [Transfer, Transfer, Transfer, Transfer];
    const tooMuch = newTransfer(PAYER, PAYEE, '5000');
    // A single transfer holds `taken`'s id with another amount.
    await transfers.prepare(PAYER, { ...bodyOf(taken), amount: { amount: '9', currency: 'USD' } });
    const answers = await transfers.prepareLine(
      PAYER,
      [
        bodyOf(fresh),
        bodyOf(repeated),
        bodyOf(repeated),
        bodyOf(taken),
        { ...bodyOf(same), payeeFsp: PAYER },
        bodyOf(tooMuch),
      ],
      ORIGIN,
    );
    assert.deepEqual(brief(answers), [
      TransferInternalState.RESERVED,
      TransferInternalState.RESERVED,
      // The same id again in the line waited for the first: its duplicate.
      `${TransferInternalState.RESERVED} duplicate`,
      '3106',
      '3100',
      '4001',
    ]);
    assert.equal((answers[0] as TransferResult).record.prepareOrigin, ORIGIN);
    // The line again (a resumed prepare): each a duplicate of its own prepare.
    const again = await transfers.prepareLine(PAYER, [bodyOf(fresh), bodyOf(repeated)], ORIGIN);
    assert.deepEqual(brief(again), [
      `${TransferInternalState.RESERVED} duplicate`,
      `${TransferInternalState.RESERVED} duplicate`,
    ]);
    assert.equal((await transfers.get(fresh.transferId, PAYER)).state, 'RESERVED');
  } finally {
    await service.close();
  }
});

test('a line of commits: plain ones together, any other as fulfil() answers it', async () => {
  const { service, transfers } = await onboarded();
  try {
    const [good, wrong, repeated] = ['5', '6', '7'].map((amount) =>
      newTransfer(PAYER, PAYEE, amount),
    ) as [Transfer, Transfer, Transfer];
    await transfers.prepareLine(PAYER, [bodyOf(good), bodyOf(wrong), bodyOf(repeated)], ORIGIN);
    const delivery = { source: PAYEE, destination: PAYER, origin: 'bulk-answer:line' };
    const commit = (transfer: Transfer, fulfilment = transfer.fulfilment) => ({
      transferId: transfer.transferId,
      request: { transferState: 'COMMITTED' as const, fulfilment },
    });
    // `repeated` committed alone first; a single fulfil of `good` arriving during the line waits
    // for it and is its duplicate.
    await transfers.fulfil(repeated.transferId, delivery, commit(repeated).request);
    const line = transfers.fulfilLine(delivery, [
      commit(good),
      commit(wrong, good.fulfilment),
      commit(repeated),
      // A payee's results naming `good` twice: the second waits for the line, a duplicate.
      commit(good),
    ]);
    const single = transfers.fulfil(
      good.transferId,
      { source: PAYEE, destination: PAYER },
      {
        transferState: 'COMMITTED',
        fulfilment: good.fulfilment,
      },
    );
    assert.deepEqual(brief(await line), [
      TransferInternalState.COMMITTED,
      // A wrong fulfilment aborts its transfer, as fulfil() does (3100).
      '3100',
      `${TransferInternalState.COMMITTED} duplicate`,
      `${TransferInternalState.COMMITTED} duplicate`,
    ]);
    const alone = await single;
    assert.equal(alone.duplicate, true);
    assert.equal(alone.record.fulfilment, good.fulfilment);
    assert.equal((await transfers.get(wrong.transferId, PAYER)).state, 'ABORTED_REJECTED');
    assert.equal((await transfers.get(good.transferId, PAYER)).finishOrigin, delivery.origin);
  } finally {
    await service.close();
  }
});
