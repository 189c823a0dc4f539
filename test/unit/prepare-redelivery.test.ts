import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { FspiopError } from '../../src/domain/shared/errors';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { newTransfer } from '../support/mojaloop-messages';

/**
 * A prepare delivered again in the same message (Kafka, after a crash) is answered as the first
 * time while its transfer is open; once its payee finished it, as a plain duplicate, so that the
 * payee is not asked to fulfil it twice. A refusal at prepare is answered again as that refusal.
 */
test('a redelivered prepare: first answer while open, plain duplicate once finished, the refusal again if refused', async () => {
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent', JMETER_ENABLED: 'true' }), {
    ledger: new EmbeddedLedger(),
    store: new MemoryMetadataStore(),
  });
  try {
    const [payer, payee] = ['redeliverypayer', 'redeliverypayee'];
    for (const name of [payer, payee]) {
      const created = await service.app.inject({
        method: 'POST',
        url: '/jmeter/participants/create',
        payload: { name, currency: 'USD' },
      });
      assert.equal(created.statusCode, 200, created.body);
    }
    const transfers = service.transfers;

    const committed = newTransfer(payer, payee, '5');
    const origin = 'topic-transfer-prepare:0:7';
    assert.deepEqual(pick(await transfers.prepare(payer, committed.body as never, origin)), {
      duplicate: false,
      redelivery: false,
      state: 'RESERVED',
    });
    assert.deepEqual(pick(await transfers.prepare(payer, committed.body as never, origin)), {
      duplicate: true,
      redelivery: true,
      state: 'RESERVED',
    });
    assert.deepEqual(
      pick(await transfers.prepare(payer, committed.body as never, 'topic-transfer-prepare:0:9')),
      { duplicate: true, redelivery: false, state: 'RESERVED' },
    );
    await transfers.fulfil(
      committed.transferId,
      { source: payee, destination: payer, origin: 'topic-transfer-fulfil:0:3' },
      { transferState: 'COMMITTED', fulfilment: committed.fulfilment },
    );
    assert.deepEqual(pick(await transfers.prepare(payer, committed.body as never, origin)), {
      duplicate: true,
      redelivery: false,
      state: 'COMMITTED',
    });

    // Aborted by its payee for an invalid fulfilment: that error belongs to the fulfil, not to the
    // prepare.
    const aborted = newTransfer(payer, payee, '6');
    await transfers.prepare(payer, aborted.body as never, origin + '1');
    await assert.rejects(
      transfers.fulfil(
        aborted.transferId,
        { source: payee, destination: payer, origin: 'topic-transfer-fulfil:0:4' },
        { transferState: 'COMMITTED', fulfilment: committed.fulfilment },
      ),
    );
    assert.deepEqual(pick(await transfers.prepare(payer, aborted.body as never, origin + '1')), {
      duplicate: true,
      redelivery: false,
      state: 'ABORTED_REJECTED',
    });

    // Refused by the ledger at prepare (4001): the same message again gets the same refusal.
    const refused = newTransfer(payer, payee, '2000000000');
    const refusal = (error: unknown): boolean =>
      error instanceof FspiopError && error.code === '4001';
    await assert.rejects(transfers.prepare(payer, refused.body as never, origin + '2'), refusal);
    await assert.rejects(transfers.prepare(payer, refused.body as never, origin + '2'), refusal);
  } finally {
    await service.close();
  }
});

function pick(result: { duplicate: boolean; redelivery: boolean; record: { state: string } }): {
  duplicate: boolean;
  redelivery: boolean;
  state: string;
} {
  return { duplicate: result.duplicate, redelivery: result.redelivery, state: result.record.state };
}
