import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { FspiopError } from '../../src/domain/shared/errors';
import type { MetadataStore } from '../../src/ports/metadata';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { JournaledLedger } from '../../src/ledger/journaled';
import type { Ledger } from '../../src/ports/ledger';
import { JournalMetadataStore } from '../../src/metadata/journal';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { newTransfer, type TestTransfer } from '../support/mojaloop-messages';

/**
 * The journalled store moves final transfers (and funds records) out of memory onto disk. What
 * the service answers about them must not change: the same requests against the all-in-memory
 * store and against the journalled one — before and after a restart — get the same answers.
 */
const [PAYER, PAYEE] = ['evictionpayer', 'evictionpayee'];

async function started(ledger: Ledger, store: MetadataStore): Promise<Service> {
  return buildService(loadConfig({ LOG_LEVEL: 'silent', JMETER_ENABLED: 'true' }), {
    ledger,
    store,
  });
}

/** A committed and an aborted transfer between two onboarded participants. */
async function finished(
  service: Service,
): Promise<{ committed: TestTransfer; aborted: TestTransfer }> {
  for (const name of [PAYER, PAYEE]) {
    const created = await service.app.inject({
      method: 'POST',
      url: '/jmeter/participants/create',
      payload: { name, currency: 'USD' },
    });
    assert.equal(created.statusCode, 200, created.body);
  }
  const committed = newTransfer(PAYER, PAYEE, '12.34');
  await service.transfers.prepare(PAYER, committed.body as never);
  await service.transfers.fulfil(
    committed.transferId,
    { source: PAYEE, destination: PAYER },
    {
      transferState: 'COMMITTED',
      fulfilment: committed.fulfilment,
    },
  );
  const aborted = newTransfer(PAYER, PAYEE, '5');
  await service.transfers.prepare(PAYER, aborted.body as never);
  await service.transfers.error(
    aborted.transferId,
    { source: PAYEE, destination: PAYER },
    {
      errorInformation: { errorCode: '5100', errorDescription: 'payee rejected' },
    },
  );
  return { committed, aborted };
}

/** Every way a final transfer is asked about again, each answer reduced to what a client sees. */
async function answers(
  service: Service,
  { committed, aborted }: { committed: TestTransfer; aborted: TestTransfer },
): Promise<unknown[]> {
  const outcome = async (
    request: Promise<{
      record: { state: string; amount: string; fulfilment?: string };
      duplicate?: boolean;
    }>,
  ): Promise<unknown> => {
    try {
      const { record, duplicate } = await request;
      return {
        state: record.state,
        amount: record.amount,
        withoutFulfilment: record.fulfilment === undefined,
        duplicate,
      };
    } catch (error) {
      return error instanceof FspiopError ? { code: error.code } : { thrown: String(error) };
    }
  };
  const transfers = service.transfers;
  const get = (id: string, who: string): Promise<{ record: { state: string; amount: string } }> =>
    transfers.get(id, who).then((record) => ({ record }));
  return [
    await outcome(get(committed.transferId, PAYER)),
    await outcome(get(aborted.transferId, PAYEE)),
    await outcome(get(committed.transferId, 'someoneelse')),
    await outcome(transfers.prepare(PAYER, committed.body as never)),
    await outcome(
      transfers.prepare(PAYER, {
        ...committed.body,
        amount: { amount: '99', currency: 'USD' },
      } as never),
    ),
    await outcome(
      transfers.fulfil(
        committed.transferId,
        { source: PAYEE, destination: PAYER },
        {
          transferState: 'COMMITTED',
          fulfilment: committed.fulfilment,
        },
      ),
    ),
    await outcome(
      transfers.fulfil(
        committed.transferId,
        { source: PAYEE, destination: PAYER },
        { transferState: 'ABORTED' },
      ),
    ),
    await outcome(transfers.prepare(PAYER, aborted.body as never)),
    await outcome(
      transfers.error(
        aborted.transferId,
        { source: PAYEE, destination: PAYER },
        {
          errorInformation: { errorCode: '5100', errorDescription: 'payee rejected' },
        },
      ),
    ),
    await outcome(
      transfers.fulfil(
        aborted.transferId,
        { source: PAYEE, destination: PAYER },
        {
          transferState: 'COMMITTED',
          fulfilment: aborted.fulfilment,
        },
      ),
    ),
  ];
}

test('final transfers evicted to disk answer GET, duplicate and modified prepares, and repeated fulfils as when in memory, also after a restart', async () => {
  const inMemory = await started(new EmbeddedLedger(), new MemoryMetadataStore());
  let expected: unknown[];
  try {
    expected = await answers(inMemory, await finished(inMemory));
  } finally {
    await inMemory.close();
  }
  assert.ok(
    expected.some((answer) => (answer as { code?: string }).code === '3106'),
    'a modified prepare is among the requests',
  );

  const dataDir = mkdtempSync(join(tmpdir(), 'final-eviction-'));
  // One entry in memory per id table: every id, finished reservation and final line is read back
  // from a run on disk.
  const hotEntries = 1;
  try {
    const store = await JournalMetadataStore.open(dataDir, hotEntries);
    let service = await started(await JournaledLedger.open(dataDir, hotEntries), store);
    let transfers: { committed: TestTransfer; aborted: TestTransfer };
    try {
      transfers = await finished(service);
      const held = (store as unknown as { memory: MemoryMetadataStore }).memory.held.bind(
        (store as unknown as { memory: MemoryMetadataStore }).memory,
      );
      assert.equal(
        held(transfers.committed.transferId).transfer,
        undefined,
        'the committed transfer left memory',
      );
      assert.equal(
        held(transfers.aborted.transferId).transfer,
        undefined,
        'the aborted transfer left memory',
      );
      assert.deepEqual(await answers(service, transfers), expected);
    } finally {
      await service.close();
    }
    const reopened = await JournalMetadataStore.open(dataDir, hotEntries);
    service = await started(await JournaledLedger.open(dataDir, hotEntries), reopened);
    try {
      assert.deepEqual(await answers(service, transfers), expected, 'after a restart');
      // The load-test liquidity (a funds-in, final at once) is on disk too.
      assert.equal(
        (reopened as unknown as { lines: { fundsLines: { size: number } } }).lines.fundsLines.size,
        2,
      );
    } finally {
      await service.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
