/**
 * FinalWrites during a long store outage: what waits for the next sweep is bounded; past the
 * bound the oldest refusals go first (a retry of one meets the ledger's failed_before), told
 * expiries last (one lost is told again after a restart), and what is dropped is logged.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FinalWrites, MAX_UNWRITTEN_FINALS } from '../../src/domain/open-records/expiry-sweep';

interface Written {
  id: string;
}

/** A store whose writes fail until `up`, and what it took once up. */
function outage(): {
  up: boolean;
  saved: Written[];
  save: (records: readonly Written[]) => Promise<void>;
} {
  const store = {
    up: false,
    saved: [] as Written[],
    save: async (records: readonly Written[]) => {
      if (!store.up) throw new Error('metadata write timed out');
      store.saved.push(...records);
    },
  };
  return store;
}

const ids = (prefix: string, count: number): Written[] =>
  Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i}` }));

test('past the bound the oldest refusals are dropped first, told expiries kept, and the drops logged', async () => {
  const store = outage();
  const logged: { fields: Record<string, unknown>; message: string }[] = [];
  const writes = new FinalWrites<Written>(
    store.save,
    (r) => r.id,
    (fields, message) => logged.push({ fields, message }),
  );
  await assert.rejects(writes.write(ids('expiry', 10)));
  for (const record of ids('refusal', MAX_UNWRITTEN_FINALS)) await writes.writeRefusal(record);
  store.up = true;
  await writes.write();
  assert.equal(store.saved.length, MAX_UNWRITTEN_FINALS);
  const saved = new Set(store.saved.map((r) => r.id));
  for (const expiry of ids('expiry', 10)) assert.ok(saved.has(expiry.id), `${expiry.id} kept`);
  for (const dropped of ids('refusal', 10))
    assert.ok(!saved.has(dropped.id), `${dropped.id}, among the oldest refusals, dropped`);
  assert.ok(saved.has(`refusal${MAX_UNWRITTEN_FINALS - 1}`));
  assert.deepEqual(
    logged.flatMap((l) => l.fields.refusals as string[]),
    ids('refusal', 10).map((r) => r.id),
  );
  assert.ok(logged.every((l) => (l.fields.expiries as string[]).length === 0));
});

test('only told expiries past the bound: the oldest are dropped, logged as expiries', async () => {
  const store = outage();
  const logged: Record<string, unknown>[] = [];
  const writes = new FinalWrites<Written>(
    store.save,
    (r) => r.id,
    (fields) => logged.push(fields),
  );
  await assert.rejects(writes.write(ids('old', 5)));
  await assert.rejects(writes.write(ids('new', MAX_UNWRITTEN_FINALS)));
  store.up = true;
  await writes.write();
  assert.equal(store.saved.length, MAX_UNWRITTEN_FINALS);
  assert.ok(!store.saved.some((r) => r.id.startsWith('old')));
  assert.deepEqual(logged, [{ refusals: [], expiries: ids('old', 5).map((r) => r.id) }]);
});

test('within the bound nothing is dropped: all are written by the next write', async () => {
  const store = outage();
  const writes = new FinalWrites<Written>(store.save, (r) => r.id);
  await writes.writeRefusal({ id: 'refused' });
  await assert.rejects(writes.write([{ id: 'expired' }]));
  store.up = true;
  await writes.write();
  assert.deepEqual(store.saved.map((r) => r.id).sort(), ['expired', 'refused']);
});
