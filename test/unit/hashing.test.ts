import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import {
  canonicalJson,
  hashOf,
  hashToU128,
  randomId,
  stableId,
} from '../../src/domain/shared/hashing';

test('canonicalJson sorts object keys at every depth', () => {
  assert.equal(canonicalJson({ b: 1, a: 2 }), '{"a":2,"b":1}');
  assert.equal(canonicalJson({ a: 2, b: 1 }), canonicalJson({ b: 1, a: 2 }));
  const one = {
    transferId: 'x',
    amount: { currency: 'USD', amount: '1' },
    list: [{ z: 1, y: [3, { d: 4, c: 5 }] }],
    n: null,
  };
  const two = {
    n: null,
    list: [{ y: [3, { c: 5, d: 4 }], z: 1 }],
    amount: { amount: '1', currency: 'USD' },
    transferId: 'x',
  };
  assert.equal(canonicalJson(one), canonicalJson(two));
  assert.equal(
    canonicalJson(one),
    '{"amount":{"amount":"1","currency":"USD"},"list":[{"y":[3,{"c":5,"d":4}],"z":1}],"n":null,"transferId":"x"}',
  );
  // Sorting is by code unit, as a plain string comparison.
  assert.equal(
    canonicalJson({ b: 0, B: 0, a: 0, _: 0, '10': 0, '9': 0 }),
    '{"10":0,"9":0,"B":0,"_":0,"a":0,"b":0}',
  );
});

test('canonicalJson keeps array order and is valid JSON equal to the input', () => {
  assert.notEqual(canonicalJson([1, 2]), canonicalJson([2, 1]));
  const value = { z: [1, 'two', [3, [4]], { y: true, x: false }], a: 'é"\\\n', e: [], o: {} };
  const text = canonicalJson(value);
  assert.deepEqual(JSON.parse(text), value);
  assert.equal(canonicalJson('s'), '"s"');
  assert.equal(canonicalJson(1.5), '1.5');
  assert.equal(canonicalJson(null), 'null');
  assert.equal(canonicalJson(true), 'true');
});

test('canonicalJson writes every string, value or key, as JSON.stringify does', () => {
  const texts = [
    '',
    'plain',
    'quote " and backslash \\',
    'controls \u0000\u0001\b\t\n\f\r\u001f, not \u007f or \u2028\u2029',
    'paired surrogates \ud83d\ude00',
    'lone high \ud800 end',
    'lone low \udfff end',
    '\udbff',
    'é'.repeat(600),
    'AYIBgQAAAAAAAASw'.repeat(60),
  ];
  for (const text of texts) {
    assert.equal(canonicalJson(text), JSON.stringify(text));
    assert.equal(
      canonicalJson({ [text]: text }),
      `{${JSON.stringify(text)}:${JSON.stringify(text)}}`,
    );
  }
});

test('canonicalJson drops undefined object members', () => {
  assert.equal(canonicalJson({ a: 1, b: undefined }), '{"a":1}');
  assert.equal(canonicalJson({ a: 1, b: undefined }), canonicalJson({ a: 1 }));
  assert.equal(canonicalJson({ nested: { x: undefined, y: 2 } }), '{"nested":{"y":2}}');
  // null is a value, not an absence.
  assert.notEqual(canonicalJson({ a: 1, b: null }), canonicalJson({ a: 1 }));
});

/**
 * The canonical form as first written (entries, sorted, joined): hashes persisted since must keep
 * matching.
 */
function firstCanonicalJson(value: unknown): string {
  if (Array.isArray(value))
    return `[${value.map((item) => (item === undefined ? 'null' : firstCanonicalJson(item))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${firstCanonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

test('canonicalJson is byte for byte the form hashes were first persisted with', () => {
  let seed = 42;
  const random = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  const keys = ['transferId', 'amount', 'a', 'B', '_', '10', '9', 'é', '"q"', 'z\\n', ''];
  const leaves: unknown[] = [
    '',
    'x',
    'é"\\\n\u2028',
    0,
    -1.5,
    1e21,
    12.34,
    true,
    false,
    null,
    undefined,
  ];
  const valueOf = (depth: number): unknown => {
    const pick = random(depth > 3 ? 2 : 4);
    if (pick === 2) return Array.from({ length: random(4) }, () => valueOf(depth + 1));
    if (pick === 3)
      return Object.fromEntries(
        Array.from({ length: random(6) }, () => [keys[random(keys.length)]!, valueOf(depth + 1)]),
      );
    return leaves[random(leaves.length)];
  };
  for (let i = 0; i < 2000; i++) {
    const value = valueOf(0);
    assert.equal(canonicalJson(value), firstCanonicalJson(value));
  }
  const prepare = {
    transferId: 'b51ec534-ee48-4575-b6a9-ead2955b8069',
    payerFsp: 'p1',
    payeeFsp: 'p2',
    amount: { amount: '12.34', currency: 'USD' },
    ilpPacket: 'AYIBgQAAAAAAAASw',
    condition: 'c',
    expiration: '2026-11-23T18:00:00.000Z',
    extensionList: { extension: [{ key: 'k', value: 'v' }] },
  };
  assert.equal(canonicalJson(prepare), firstCanonicalJson(prepare));
  // eslint-disable-next-line no-sparse-arrays -- a hole is the case under test
  const sparse = [1, , 3];
  assert.equal(canonicalJson(sparse), firstCanonicalJson(sparse));
});

test('hashOf is base64url sha256 of the canonical JSON, stable under key order', () => {
  const value = { b: [1, { d: 2, c: 3 }], a: 'x' };
  const expected = createHash('sha256').update(canonicalJson(value)).digest('base64url');
  assert.equal(hashOf(value), expected);
  assert.equal(hashOf(value), hashOf({ a: 'x', b: [1, { c: 3, d: 2 }] }));
  assert.notEqual(hashOf(value), hashOf({ a: 'y', b: [1, { c: 3, d: 2 }] }));
  assert.equal(hashOf(value).length, 43);
  assert.deepEqual(
    Buffer.from(hashOf(value), 'base64url'),
    createHash('sha256').update(canonicalJson(value)).digest(),
  );
});

test('hashToU128 is the first 16 bytes of the hash, big-endian', () => {
  for (const value of [{ a: 1 }, 'x', [1, 2, 3], { transferId: 'abc', amount: '10.5' }]) {
    const hash = hashOf(value);
    const first16 = Buffer.from(hash, 'base64url').subarray(0, 16);
    assert.equal(hashToU128(hash), BigInt('0x' + first16.toString('hex')));
  }
  const allOnes = Buffer.alloc(32, 0xff).toString('base64url');
  assert.equal(hashToU128(allOnes), (1n << 128n) - 1n);
  const ramp = Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('base64url');
  assert.equal(hashToU128(ramp), 0x000102030405060708090a0b0c0d0e0fn);
});

test('stableId is deterministic, non-zero, below 2^127 and derived from sha256 of the text', () => {
  const seen = new Set<bigint>();
  for (let i = 0; i < 1000; i++) {
    const text = `funds-in:${i}`;
    const id = stableId(text);
    assert.equal(stableId(text), id);
    assert.ok(id > 0n && id < 1n << 127n, `${text}: ${id}`);
    assert.equal(id & 1n, 1n);
    const digest = createHash('sha256').update(text).digest().subarray(0, 16);
    const expected = (BigInt('0x' + digest.toString('hex')) & ((1n << 127n) - 1n)) | 1n;
    assert.equal(id, expected);
    seen.add(id);
  }
  assert.equal(seen.size, 1000);
  assert.notEqual(stableId('a'), stableId('b'));
  assert.ok(stableId('') > 0n);
});

test('randomId is non-zero, within u128 and different across calls', () => {
  const seen = new Set<bigint>();
  for (let i = 0; i < 1000; i++) {
    const id = randomId();
    assert.ok(id > 0n && id < 1n << 128n);
    seen.add(id);
  }
  assert.equal(seen.size, 1000);
});
