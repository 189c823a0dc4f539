import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mock, test } from 'node:test';
import { IdTable } from '../../src/ledger/id-table';
import { RecordIndex, type LinePosition } from '../../src/util/record-index';
import { RunWriter, SortedRun } from '../../src/util/sorted-run';
import { TieredTable } from '../../src/util/tiered-table';

/** A deterministic pseudo-random sequence (xorshift32), so a failure replays. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

function withDir(run: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'tiered-'));
  try {
    run(dir);
    // Run files are unlinked as soon as they are open: nothing is left behind, even while in use.
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const keyOf = (n: number): Uint32Array => new Uint32Array([n, n * 7 + 1, 0, n % 3]);

test('a tiered table answers as a Map does, across its hot tier, its runs and their merges', () => {
  for (const spilled of [true, false]) {
    withDir((dir) => {
      const table = new TieredTable(2, spilled ? { dir, name: 'test', hotEntries: 16 } : undefined);
      const model = new Map<number, [number, number]>();
      const next = random(42);
      for (let i = 0; i < 5000; i++) {
        // Keys from a range small enough that many are set again (newer values must win) and many
        // are asked for before they exist.
        const n = 1 + Math.floor(next() * 3000);
        if (next() < 0.6) {
          const values: [number, number] = [Math.floor(next() * 2 ** 32), i];
          table.set(keyOf(n), values);
          model.set(n, values);
        } else {
          const found = table.get(keyOf(n));
          assert.deepEqual(
            found === undefined ? undefined : [...found],
            model.get(n),
            `key ${n} after ${i} operations`,
          );
        }
      }
      for (let n = 1; n <= 3000; n++) {
        const found = table.get(keyOf(n));
        assert.deepEqual(found === undefined ? undefined : [...found], model.get(n));
      }
      assert.equal(table.size, model.size);
      // Runs double in size from newest to oldest: a handful for thousands of keys (one more while
      // a merge is under way).
      if (spilled)
        assert.ok(
          table.runCount >= 1 && table.runCount <= Math.log2(model.size / 16) + 3,
          `${table.runCount} runs`,
        );
      else assert.equal(table.runCount, 0);
      table.close();
    });
  }
});

test('rewriteValues hands every value once and keeps what the visitor wrote, runs merged into one', () => {
  withDir((dir) => {
    const table = new TieredTable(1, { dir, name: 'test', hotEntries: 8 });
    for (let n = 1; n <= 100; n++) table.set(keyOf(n), [n]);
    table.set(keyOf(5), [500]);
    let seen = 0;
    table.rewriteValues((values, count) => {
      seen = count;
      assert.deepEqual(
        [...values].sort((a, b) => a - b),
        [...Array.from({ length: 100 }, (_, i) => (i + 1 === 5 ? 500 : i + 1))].sort(
          (a, b) => a - b,
        ),
      );
      for (let i = 0; i < count; i++) values[i] = values[i]! * 2;
    });
    assert.equal(seen, 100);
    assert.equal(table.runCount, 1);
    for (let n = 1; n <= 100; n++)
      assert.deepEqual([...table.get(keyOf(n))!], [n === 5 ? 1000 : n * 2]);
    table.close();
  });
});

test('a sorted run refuses keys out of order or more entries than promised; its filter never misses a key it has', () => {
  withDir((dir) => {
    const entries = [1, 2, 2].map((n) => new Uint32Array([n, 0, 0, 0, n]));
    let i = 0;
    assert.throws(
      () =>
        SortedRun.write(join(dir, 'bad'), 5, 3, (into, at) =>
          i < entries.length ? (into.set(entries[i++]!, at), true) : false,
        ),
      /out of order/,
    );
    i = 0;
    assert.throws(
      () =>
        SortedRun.write(join(dir, 'bad'), 5, 1, (into, at) =>
          i < 2 ? (into.set(entries[i++]!, at), true) : false,
        ),
      /more/,
    );
    let n = 0;
    const run = SortedRun.write(join(dir, 'good'), 5, 1000, (into, at) =>
      n < 1000 ? (into.set([n * 2 + 1, 0, 0, 0, n], at), n++, true) : false,
    );
    const into = new Uint32Array(1);
    for (let k = 0; k < 1000; k++) {
      assert.ok(run.get([k * 2 + 1, 0, 0, 0], 0, into));
      assert.equal(into[0], k);
      assert.equal(run.get([k * 2 + 2, 0, 0, 0], 0, into), false);
    }
    run.close();
  });
});

test('the ledger id table keeps 128-bit ids whole and refuses id 0', () => {
  withDir((dir) => {
    const ids = new IdTable(2, { dir, name: 'ids', hotEntries: 4 });
    const big = (1n << 128n) - 1n;
    for (let n = 1n; n <= 50n; n++) ids.set(n << 64n, [Number(n), 1]);
    ids.set(big, [7, 8]);
    assert.deepEqual([...ids.get(big)!], [7, 8]);
    for (let n = 1n; n <= 50n; n++) assert.deepEqual([...ids.get(n << 64n)!], [Number(n), 1]);
    // Same low words, other high words: another id.
    assert.equal(ids.get(1n), undefined);
    assert.equal(ids.get(0n), undefined);
    assert.throws(() => ids.set(0n, [1, 1]), /out of range/);
    assert.equal(ids.size, 51);
    ids.close();
    // Its run files are gone: an answer now could only be wrong.
    assert.throws(() => ids.get(1n << 64n), /after it was closed/);
  });
});

test('a record index spilled to runs finds each key at its newest line, relocates in file order, and refuses a key isKey disowns', () => {
  withDir((dir) => {
    const index = new RecordIndex({ dir, name: 'lines', hotEntries: 8 });
    // A "file" of lines: the key each position holds.
    const lines = new Map<number, string>();
    const file = (key: string, offset: number): void => {
      lines.set(offset, key);
      index.set(key, { offset, length: 10 }, (at) => lines.get(at.offset) === key);
    };
    for (let n = 0; n < 200; n++) file(`t${n}`, n * 10);
    // Saved again later: the newer line wins.
    file('t3', 5_000_000_000);
    const read = (key: string) => (at: LinePosition) =>
      lines.get(at.offset) === key ? at.offset : undefined;
    assert.equal(index.find('t3', read('t3')), 5_000_000_000);
    assert.equal(index.find('t150', read('t150')), 1500);
    assert.equal(index.find('t999', read('t999')), undefined);
    assert.equal(index.size, 200);
    assert.throws(
      () => index.set('t7', { offset: 1, length: 1 }, () => false),
      /share a 128-bit hash/,
    );
    const visited: number[] = [];
    index.relocate((at) => {
      visited.push(at.offset);
      return at.offset + 1;
    });
    assert.deepEqual(
      visited,
      [...visited].sort((a, b) => a - b),
    );
    assert.equal(visited.length, 200);
    assert.deepEqual(
      index.find('t150', (at) => at.offset),
      1501,
    );
    assert.deepEqual(
      index.find('t3', (at) => at.offset),
      5_000_000_001,
    );
    index.close();
  });
});

test('a run the disk refuses leaves the entries in memory, answers exact, and is tried again later with a warning', async () => {
  const warnings: string[] = [];
  const listener = (warning: Error): void => void warnings.push(warning.message);
  process.on('warning', listener);
  try {
    const table = new TieredTable(1, {
      dir: join(tmpdir(), 'no-such-dir-for-tiered-runs', String(process.pid)),
      name: 'refused',
      hotEntries: 4,
    });
    for (let n = 1; n <= 10; n++) table.set(keyOf(n), [n]);
    for (let n = 1; n <= 10; n++) assert.deepEqual([...table.get(keyOf(n))!], [n]);
    assert.equal(table.size, 10);
    assert.equal(table.runCount, 0);
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    // At 4 entries, then again 4 entries later (8): not at every set.
    assert.equal(
      warnings.filter((w) => w.startsWith('refused: could not write')).length,
      2,
      warnings.join('\n'),
    );
    table.close();
  } finally {
    process.off('warning', listener);
  }
});

test('no set merges runs in one go: merges advance a slice a set and are done before the next spill', () => {
  withDir((dir) => {
    const hotEntries = 256;
    const keys = 40_000;
    const table = new TieredTable(1, { dir, name: 'paced', hotEntries });
    // Entries written to runs during each set: a spill writes the hot tier, a merge its slice.
    let written = 0;
    const original = RunWriter.prototype.add;
    const add = mock.method(RunWriter.prototype, 'add', function (this: RunWriter) {
      written++;
      original.call(this);
    });
    try {
      let mostBySet = 0;
      let spills = 0;
      let mergedEntries = 0;
      for (let n = 1; n <= keys; n++) {
        const runsBefore = table.runCount;
        written = 0;
        table.set(keyOf(n), [n]);
        if (n % hotEntries === 0) {
          // The spill writes exactly the hot tier: nothing of an earlier merge was left for it to
          // finish.
          spills++;
          assert.equal(written, hotEntries, `the spill at key ${n} wrote ${written} entries`);
          assert.equal(table.runCount, runsBefore + 1);
        } else {
          mostBySet = Math.max(mostBySet, written);
          mergedEntries += written;
        }
      }
      // Unpaced, the spill at 32,768 keys merged ~32,768 entries in one set.
      const bound = Math.max(64, Math.ceil((2 * keys) / hotEntries) + 1);
      assert.ok(mostBySet <= bound, `one set merged ${mostBySet} entries (bound ${bound})`);
      // The merges did happen: runs double from newest to oldest, each key in one place.
      assert.ok(mergedEntries > keys, `${mergedEntries} entries merged`);
      assert.equal(spills, Math.floor(keys / hotEntries));
      assert.ok(table.runCount <= Math.log2(keys / hotEntries) + 3, `${table.runCount} runs`);
      for (let n = 1; n <= keys; n += 97) assert.deepEqual([...table.get(keyOf(n))!], [n]);
      assert.equal(table.size, keys);
    } finally {
      add.mock.restore();
      table.close();
    }
  });
});

test('keys that share their leading bits are still spilled in key order', () => {
  withDir((dir) => {
    // The same top word for every key, and runs of equal second words: the packed sort's ties.
    const table = new TieredTable(1, { dir, name: 'ties', hotEntries: 512 });
    const tied = (n: number): Uint32Array =>
      new Uint32Array([(n * 2654435761) >>> 0, n >>> 3, 7, 0xdeadbeef]);
    for (let n = 1; n <= 2048; n++) table.set(tied(n), [n]);
    // SortedRun.write refuses keys out of order: the spills and merges above would have thrown.
    assert.equal(table.runCount >= 1, true);
    for (let n = 1; n <= 2048; n++) assert.deepEqual([...table.get(tied(n))!], [n]);
    table.close();
  });
});
