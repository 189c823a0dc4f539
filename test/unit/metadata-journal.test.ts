import assert from 'node:assert/strict';
import fs, { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mock, test } from 'node:test';
import type { TransferRecord } from '../../src/ports/metadata';
import { TransferInternalState } from '../../src/ports/states';
import { JournalMetadataStore } from '../../src/metadata/journal';
import { Journal } from '../../src/util/journal';
import { mulberry32 } from '../support/prng';

function prepared(transferId: string): TransferRecord {
  return {
    transferId,
    payerFsp: 'payer',
    payeeFsp: 'payee',
    amount: '10.50',
    currency: 'USD',
    condition: 'c'.repeat(43),
    ilpPacket: 'A'.repeat(1200),
    expiration: '2026-11-21T12:00:00.000Z',
    extensionList: { extension: [{ key: 'k', value: 'v' }] },
    payloadHash: 'h'.repeat(43),
    state: TransferInternalState.RESERVED,
    createdAt: '2026-11-21T11:00:00.000Z',
    prepareOrigin: 'topic:0:1',
  };
}

async function withDataDir(body: (dataDir: string) => Promise<void>): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'metadata-journal-'));
  try {
    await body(dataDir);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function reopened(dataDir: string, ids: string[]): Promise<(TransferRecord | undefined)[]> {
  const store = await JournalMetadataStore.open(dataDir);
  try {
    return await store.transfers(ids);
  } finally {
    await store.close();
  }
}

test("an open record's later save is journalled as the fields it changed; a final one is written whole and leaves memory", async () => {
  await withDataDir(async (dataDir) => {
    const store = await JournalMetadataStore.open(dataDir);
    const record = prepared('t1');
    await store.saveTransfers([record]);
    assert.equal((await store.openTransfers()).length, 1);
    const fulfilling = {
      ...record,
      state: TransferInternalState.RECEIVED_FULFIL,
      finishHash: 'error:x',
      errorInformation: { errorCode: '5000', errorDescription: 'payee error' },
    };
    await store.saveTransfers([fulfilling]);
    // A later save without a field removes it (errorInformation), with a new value for another.
    const { errorInformation: _, ...withoutError } = fulfilling;
    const timedOut = {
      ...withoutError,
      state: TransferInternalState.RESERVED_TIMEOUT,
      extensionList: { extension: [{ key: 'k2', value: 'v2' }] },
    };
    await store.saveTransfers([timedOut]);
    const final = { ...timedOut, state: TransferInternalState.EXPIRED_RESERVED };
    await store.saveTransfers([final]);
    assert.equal((await store.openTransfers()).length, 0);
    assert.deepEqual(await store.transfers(['t1']), [final], 'read back from disk');
    await store.close();

    const lines = readFileSync(join(dataDir, 'metadata.journal'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const changes = lines.filter((entry) => entry.op === 'transferChanges');
    assert.equal(changes.length, 2);
    assert.deepEqual(changes[0].changes[0], {
      transferId: 't1',
      set: {
        state: 'RECEIVED_FULFIL',
        finishHash: 'error:x',
        errorInformation: fulfilling.errorInformation,
      },
    });
    assert.deepEqual(changes[1].changes[0], {
      transferId: 't1',
      set: { state: 'RESERVED_TIMEOUT', extensionList: timedOut.extensionList },
      unset: ['errorInformation'],
    });
    assert.ok(
      JSON.stringify(changes[0]).length < JSON.stringify(record).length / 5,
      'a change is a fraction of the record',
    );
    assert.deepEqual(
      lines.filter((entry) => entry.op === 'finalTransfer'),
      [{ op: 'finalTransfer', record: final }],
    );

    assert.deepEqual(await reopened(dataDir, ['t1']), [final]);
    // Compacted: the final line alone, no snapshot copy of it.
    const compacted = readFileSync(join(dataDir, 'metadata.journal'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(
      compacted.map((entry) => entry.op),
      ['format', 'finalTransfer', 'snapshot'],
    );
    assert.deepEqual(compacted[2].snapshot.transfers, []);
    assert.deepEqual(await reopened(dataDir, ['t1', 't2']), [final, undefined]);
  });
});

test('random saves, some concurrent, replay to exactly what memory held (also after compaction)', async () => {
  await withDataDir(async (dataDir) => {
    const random = mulberry32(112026);
    const ids = Array.from({ length: 12 }, (_, i) => `transfer-${i}`);
    const states = [
      TransferInternalState.RESERVED,
      TransferInternalState.COMMITTED,
      TransferInternalState.ABORTED_REJECTED,
      TransferInternalState.EXPIRED_RESERVED,
    ];
    let store = await JournalMetadataStore.open(dataDir);
    for (let round = 0; round < 6; round++) {
      for (let step = 0; step < 40; step++) {
        // A group saved in one tick: the same transfer may appear in several concurrent saves.
        const group = Array.from({ length: 1 + Math.floor(random() * 3) }, () => {
          const id = ids[Math.floor(random() * ids.length)]!;
          const record: TransferRecord = {
            ...prepared(id),
            state: states[Math.floor(random() * states.length)]!,
          };
          if (random() < 0.5) record.fulfilment = `f${Math.floor(random() * 5)}`;
          if (random() < 0.3)
            record.errorInformation = { errorCode: '3100', errorDescription: `e${step}` };
          if (random() < 0.3) record.extensionList = undefined;
          return record;
        });
        await Promise.all(group.map((record) => store.saveTransfers([record])));
      }
      // As JSON: a member set to undefined in memory is absent on disk, whole record or change.
      const expected = JSON.parse(JSON.stringify(await store.transfers(ids)));
      await store.close();
      store = await JournalMetadataStore.open(dataDir);
      assert.deepEqual(
        JSON.parse(JSON.stringify(await store.transfers(ids))),
        expected,
        `round ${round}`,
      );
    }
    await store.close();
  });
});

test('a renumbered OPEN window is journalled: replayed and compacted, later windows number on from it', async () => {
  await withDataDir(async (dataDir) => {
    const store = await JournalMetadataStore.open(dataDir);
    const initial = await store.openSettlementWindow();
    assert.equal(initial.id, 1);
    const renumbered = await store.renumberOpenWindow(initial, 5);
    assert.deepEqual({ ...renumbered, version: 0 }, { ...initial, id: 5, version: 0 });
    assert.equal(
      await store.renumberOpenWindow(initial, 7),
      undefined,
      'a stale read renumbers nothing',
    );
    await store.close();
    for (const round of [1, 2]) {
      // Round 1 replays the renumbering itself, round 2 the snapshot the first reopen compacted.
      const again = await JournalMetadataStore.open(dataDir);
      try {
        if (round === 1) {
          assert.deepEqual(
            (await again.settlementWindows()).map((w) => [w.id, w.state]),
            [[5, 'OPEN']],
          );
          const open = await again.openSettlementWindow();
          const now = new Date().toISOString();
          const saved = await again.writeSettlement({
            windows: [
              { ...open, state: 'PROCESSING' },
              {
                id: 0,
                state: 'OPEN',
                reason: 'r',
                createdDate: now,
                changedDate: now,
                content: [],
                version: 0,
              },
            ],
          });
          assert.deepEqual(
            saved?.windows.map((w) => w.id),
            [5, 6],
          );
        } else {
          assert.deepEqual(
            (await again.settlementWindows()).map((w) => [w.id, w.state]),
            [
              [5, 'PROCESSING'],
              [6, 'OPEN'],
            ],
          );
        }
      } finally {
        await again.close();
      }
    }
  });
});

test('a journal of the first layout (every record in the snapshot) is migrated: final records leave memory, all still read', async () => {
  await withDataDir(async (dataDir) => {
    const open = prepared('open');
    const committedInSnapshot = {
      ...prepared('snap'),
      state: TransferInternalState.COMMITTED,
      fulfilment: 'f',
    };
    const committedLater = prepared('later');
    const funds = {
      transferId: 'funds-1',
      participant: 'payer',
      currency: 'USD',
      action: 'recordFundsIn' as const,
      amount: '5',
      state: 'COMMITTED' as const,
      payloadHash: 'p',
    };
    const firstLayout = [
      {
        op: 'snapshot',
        snapshot: {
          hubs: [],
          models: [],
          participants: [],
          funds: [funds],
          transfers: [open, committedInSnapshot],
          lastId: 7,
        },
      },
      { op: 'transfers', records: [committedLater] },
      {
        op: 'transferChanges',
        changes: [{ transferId: 'later', set: { state: 'ABORTED_REJECTED', finishHash: 'x' } }],
      },
    ];
    writeFileSync(
      join(dataDir, 'metadata.journal'),
      firstLayout.map((entry) => JSON.stringify(entry) + '\n').join(''),
    );
    const expected = [
      open,
      committedInSnapshot,
      { ...committedLater, state: TransferInternalState.ABORTED_REJECTED, finishHash: 'x' },
    ];
    const ids = ['open', 'snap', 'later'];
    assert.deepEqual(await reopened(dataDir, ids), expected);
    const lines = readFileSync(join(dataDir, 'metadata.journal'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.deepEqual(
      lines.map((entry) => entry.op),
      ['format', 'finalTransfer', 'finalTransfer', 'funds', 'snapshot'],
    );
    assert.deepEqual(lines[4].snapshot.transfers, [open]);
    const store = await JournalMetadataStore.open(dataDir);
    try {
      assert.deepEqual(await store.transfers(ids), expected);
      assert.deepEqual(await store.fundsRecord('funds-1'), funds);
      assert.equal(await store.nextId(), 8);
    } finally {
      await store.close();
    }
  });
});

test('a journal of a newer layout is refused, naming both versions', async () => {
  await withDataDir(async (dataDir) => {
    writeFileSync(
      join(dataDir, 'metadata.journal'),
      JSON.stringify({ op: 'format', format: 3 }) + '\n',
    );
    await assert.rejects(
      JournalMetadataStore.open(dataDir),
      /journal format 3, this version reads formats up to 2/,
    );
  });
});

test('a start compacts only once the journal grew by a quarter since the last compaction: a restart after little work rewrites nothing', async () => {
  await withDataDir(async (dataDir) => {
    const path = join(dataDir, 'metadata.journal');
    const ops = (): string[] =>
      readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).op);
    let store = await JournalMetadataStore.open(dataDir);
    // 40 transfers prepared and finished: each an open line, then its final line.
    for (let i = 0; i < 40; i++) {
      await store.saveTransfers([prepared(`t${i}`)]);
      await store.saveTransfers([
        { ...prepared(`t${i}`), state: TransferInternalState.COMMITTED, fulfilment: `f${i}` },
      ]);
    }
    await store.close();
    // Never compacted since these lines: the start compacts (the open lines go).
    store = await JournalMetadataStore.open(dataDir);
    await store.close();
    const compacted = readFileSync(path);
    assert.deepEqual(ops(), [
      'format',
      ...Array.from({ length: 40 }, () => 'finalTransfer'),
      'snapshot',
    ]);
    // A restart with nothing new, and one after a little work: the file is left as it is.
    store = await JournalMetadataStore.open(dataDir);
    await store.saveTransfers([prepared('late')]);
    await store.saveTransfers([
      { ...prepared('late'), state: TransferInternalState.COMMITTED, fulfilment: 'fl' },
    ]);
    await store.close();
    const grown = readFileSync(path);
    assert.ok(
      grown.subarray(0, compacted.length).equals(compacted),
      'nothing rewritten: the compacted file is still its start',
    );
    store = await JournalMetadataStore.open(dataDir);
    assert.deepEqual(readFileSync(path), grown, 'a start after little work rewrites nothing');
    assert.equal((await store.transfers(['t7', 'late'])).map((r) => r?.fulfilment).join(), 'f7,fl');
    // Past a quarter more: the next start compacts again.
    for (let i = 0; i < 15; i++) {
      await store.saveTransfers([prepared(`u${i}`)]);
      await store.saveTransfers([
        { ...prepared(`u${i}`), state: TransferInternalState.ABORTED_REJECTED },
      ]);
    }
    await store.close();
    store = await JournalMetadataStore.open(dataDir);
    try {
      assert.deepEqual(ops(), [
        'format',
        ...Array.from({ length: 56 }, () => 'finalTransfer'),
        'snapshot',
      ]);
      assert.deepEqual(
        (await store.transfers(['t0', 'late', 'u14'])).map((r) => r?.state),
        ['COMMITTED', 'COMMITTED', 'ABORTED_REJECTED'],
      );
    } finally {
      await store.close();
    }
  });
});

test('a save of more final records than one journal write takes is written whole and read back after a restart', async () => {
  await withDataDir(async (dataDir) => {
    let store = await JournalMetadataStore.open(dataDir);
    // A sweep after a restart may record thousands of expiries in one save: more than 8,192 lines.
    const ids = Array.from({ length: 8_300 }, (_, i) => `expired-${i}`);
    await store.saveTransfers(ids.map((id) => prepared(id)));
    await store.saveTransfers(
      ids.map((id) => ({ ...prepared(id), state: TransferInternalState.EXPIRED_RESERVED })),
    );
    assert.equal((await store.openTransfers()).length, 0);
    await store.close();
    store = await JournalMetadataStore.open(dataDir);
    try {
      const states = (await store.transfers(ids)).map((r) => r?.state);
      assert.deepEqual([...new Set(states)], ['EXPIRED_RESERVED']);
      assert.equal((await store.openTransfers()).length, 0, 'none comes back open');
    } finally {
      await store.close();
    }
  });
});

test('a write the disk cuts short (full) leaves no torn line inside the journal: later lines replay', async () => {
  await withDataDir(async (dataDir) => {
    const path = join(dataDir, 'torn.journal');
    const journal = Journal.open(path, { bigints: false });
    await journal.append([{ n: 1 }]);
    // The next write reaches the file half-way, then the disk is full.
    const appendFile = mock.method(
      fs,
      'appendFile',
      (fd: number, data: string, done: (error: Error | null) => void) => {
        fs.writeSync(fd, data.slice(0, Math.floor(data.length / 2)));
        done(Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }));
      },
    );
    try {
      await assert.rejects(journal.append([{ n: 2, pad: 'x'.repeat(100) }]), /ENOSPC/);
    } finally {
      appendFile.mock.restore();
    }
    const [third] = await journal.append([{ n: 3 }]);
    assert.deepEqual(journal.read(third!), { n: 3 });
    journal.close();
    const replayed: unknown[] = [];
    const reopened = Journal.open(path, { bigints: false });
    reopened.forEach((entry) => void replayed.push(entry));
    reopened.close();
    assert.deepEqual(replayed, [{ n: 1 }, { n: 3 }], 'the refused write left nothing behind');
  });
});
