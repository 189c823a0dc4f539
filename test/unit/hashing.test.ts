import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import { canonicalJson, hashOf, hashToU128, randomId, sha256, stableId } from '../../src/domain/hashing';

test('canonicalJson sorts object keys at every depth', () => {
  assert.equal(canonicalJson({ b: 1, a: 2 }), '{"a":2,"b":1}');
  assert.equal(canonicalJson({ a: 2, b: 1 }), canonicalJson({ b: 1, a: 2 }));
  const one = { transferId: 'x', amount: { currency: 'USD', amount: '1' }, list: [{ z: 1, y: [3, { d: 4, c: 5 }] }], n: null };
  const two = { n: null, list: [{ y: [3, { c: 5, d: 4 }], z: 1 }], amount: { amount: '1', currency: 'USD' }, transferId: 'x' };
  assert.equal(canonicalJson(one), canonicalJson(two));
  assert.equal(canonicalJson(one), '{"amount":{"amount":"1","currency":"USD"},"list":[{"y":[3,{"c":5,"d":4}],"z":1}],"n":null,"transferId":"x"}');
  // Sorting is by code unit, as a plain string comparison.
  assert.equal(canonicalJson({ b: 0, B: 0, a: 0, _: 0, '10': 0, '9': 0 }), '{"10":0,"9":0,"B":0,"_":0,"a":0,"b":0}');
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

test('canonicalJson drops undefined object members', () => {
  assert.equal(canonicalJson({ a: 1, b: undefined }), '{"a":1}');
  assert.equal(canonicalJson({ a: 1, b: undefined }), canonicalJson({ a: 1 }));
  assert.equal(canonicalJson({ nested: { x: undefined, y: 2 } }), '{"nested":{"y":2}}');
  // null is a value, not an absence.
  assert.notEqual(canonicalJson({ a: 1, b: null }), canonicalJson({ a: 1 }));
});

test('hashOf is base64url sha256 of the canonical JSON, stable under key order', () => {
  const value = { b: [1, { d: 2, c: 3 }], a: 'x' };
  const expected = createHash('sha256').update(canonicalJson(value)).digest('base64url');
  assert.equal(hashOf(value), expected);
  assert.equal(hashOf(value), hashOf({ a: 'x', b: [1, { c: 3, d: 2 }] }));
  assert.notEqual(hashOf(value), hashOf({ a: 'y', b: [1, { c: 3, d: 2 }] }));
  assert.equal(hashOf(value).length, 43);
  assert.deepEqual(sha256(value), Buffer.from(expected, 'base64url'));
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
