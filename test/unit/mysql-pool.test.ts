/**
 * MYSQL_POOL_MAX bounds every connection an instance opens: the settlement and participant locks'
 * pool is carved out of it, never added to it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/config';
import { splitPool } from '../../src/metadata/mysql-turns';

test('the locks take a quarter of MYSQL_POOL_MAX, one to four, and the store the rest', () => {
  const cases: [number, { store: number; locks: number }][] = [
    [2, { store: 1, locks: 1 }],
    [7, { store: 6, locks: 1 }],
    [8, { store: 6, locks: 2 }],
    [10, { store: 8, locks: 2 }],
    [16, { store: 12, locks: 4 }],
    [200, { store: 196, locks: 4 }],
  ];
  for (const [poolMax, split] of cases) {
    assert.deepEqual(splitPool(poolMax), split, `MYSQL_POOL_MAX ${poolMax}`);
    assert.equal(split.store + split.locks, poolMax);
  }
  assert.throws(() => splitPool(1), /at least 2/);
});

test('MYSQL_POOL_MAX below 2 is refused with the variable named', () => {
  assert.throws(
    () => loadConfig({ MYSQL_POOL_MAX: '1' }),
    (error: Error) => /MYSQL_POOL_MAX/.test(error.message) && /2/.test(error.message),
  );
});
