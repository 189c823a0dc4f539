import { test } from 'node:test';
import assert from 'node:assert/strict';

import { FspiopError } from '../../src/domain/shared/errors';
import { canonicalTransferId, transferIdToU128 } from '../../src/domain/shared/ids';

/** Crockford base32 digit value by arithmetic on the letter, skipping I, L, O and U. */
function crockfordDigit(ch: string): number {
  const c = ch.toUpperCase();
  if (c >= '0' && c <= '9') return c.charCodeAt(0) - 48;
  const skipped = ['I', 'L', 'O', 'U'].filter((s) => s < c).length;
  if (['I', 'L', 'O', 'U'].includes(c)) throw new Error(`not crockford: ${ch}`);
  return c.charCodeAt(0) - 65 + 10 - skipped;
}

/**
 * Independent ULID decoding: 26 five-bit groups as a binary string, minus the 2 spare leading bits.
 */
function ulidToBigInt(ulid: string): bigint {
  const bits = [...ulid].map((ch) => crockfordDigit(ch).toString(2).padStart(5, '0')).join('');
  assert.equal(bits.length, 130);
  assert.equal(bits.slice(0, 2), '00');
  return BigInt('0b' + bits.slice(2));
}

function assertRefused(text: string): void {
  assert.throws(
    () => transferIdToU128(text),
    (error: unknown) => error instanceof FspiopError && error.code === '3100',
    text,
  );
}

const V1 = 'c232ab00-9414-11ec-b3c8-9f6bdeced846';
const V4 = '9b2e7c41-1e9f-4c2a-8d3b-5f6a7e8c9d0a';
const V7 = '018f4e2a-7b3c-7d4e-9f5a-6b7c8d9e0f1a';

test('UUID versions 1 to 7 with the RFC 4122 variant are transfer ids', () => {
  for (const id of [
    V1,
    V4,
    V7,
    '9b2e7c41-1e9f-2c2a-8d3b-5f6a7e8c9d0a',
    '9b2e7c41-1e9f-3c2a-ad3b-5f6a7e8c9d0a',
    '9b2e7c41-1e9f-5c2a-bd3b-5f6a7e8c9d0a',
    '9b2e7c41-1e9f-6c2a-9d3b-5f6a7e8c9d0a',
  ]) {
    assert.equal(transferIdToU128(id), BigInt('0x' + id.split('-').join('')), id);
  }
});

test('UUID versions 0 and 8 and above, and other variants, are refused', () => {
  assertRefused('9b2e7c41-1e9f-0c2a-8d3b-5f6a7e8c9d0a'); // v0
  assertRefused('9b2e7c41-1e9f-8c2a-8d3b-5f6a7e8c9d0a'); // v8
  assertRefused('9b2e7c41-1e9f-fc2a-8d3b-5f6a7e8c9d0a'); // vF
  for (const variant of ['0', '7', 'c', 'd', 'e', 'f'])
    assertRefused(`9b2e7c41-1e9f-4c2a-${variant}d3b-5f6a7e8c9d0a`);
});

test('nil and max UUIDs are refused', () => {
  assertRefused('00000000-0000-0000-0000-000000000000');
  assertRefused('ffffffff-ffff-ffff-ffff-ffffffffffff');
  assertRefused('FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF');
});

test('malformed UUIDs are refused', () => {
  for (const id of [
    '9b2e7c411e9f4c2a8d3b5f6a7e8c9d0a', // no dashes
    '{9b2e7c41-1e9f-4c2a-8d3b-5f6a7e8c9d0a}',
    '9b2e7c41-1e9f-4c2a-8d3b-5f6a7e8c9d0',
    '9b2e7c41-1e9f-4c2a-8d3b-5f6a7e8c9d0a0',
    '9b2e7c41-1e9f-4c2a-8d3b-5f6a7e8c9d0g',
    ' 9b2e7c41-1e9f-4c2a-8d3b-5f6a7e8c9d0a',
    '9b2e7c41-1e9f-4c2a-8d3b-5f6a7e8c9d0a\n',
    '',
  ])
    assertRefused(id);
});

test('UUIDs are case-insensitive and canonically lower case', () => {
  const upper = V4.toUpperCase();
  assert.equal(transferIdToU128(upper), transferIdToU128(V4));
  assert.equal(canonicalTransferId(upper), V4);
  assert.equal(canonicalTransferId('9B2E7C41-1e9f-4C2A-8d3b-5F6A7E8C9D0A'), V4);
  assert.equal(canonicalTransferId(V4), V4);
});

test('a ULID maps to the u128 its Crockford base32 digits spell', () => {
  const ulid = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
  assert.equal(transferIdToU128(ulid), ulidToBigInt(ulid));
  // The ULID spec's example: ulid(1469918176385) is 01ARYZ6S41TSV4RRFFQ69G5FAV, so the top 48 bits
  // are that time.
  const specExample = '01ARYZ6S41TSV4RRFFQ69G5FAV';
  assert.equal(transferIdToU128(specExample), ulidToBigInt(specExample));
  assert.equal(transferIdToU128(specExample) >> 80n, 1469918176385n);
  // Same random part, different time: the low 80 bits agree.
  const low80 = (1n << 80n) - 1n;
  assert.equal(transferIdToU128(ulid) & low80, transferIdToU128(specExample) & low80);
});

test('ULIDs are case-insensitive and canonically upper case', () => {
  const ulid = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
  const lower = ulid.toLowerCase();
  assert.equal(transferIdToU128(lower), transferIdToU128(ulid));
  assert.equal(canonicalTransferId(lower), ulid);
  assert.equal(canonicalTransferId('01arZ3NDEKtsv4RRFFQ69G5FAV'), ulid);
});

test('ULID extremes: first char above 7 overflows 128 bits, all zeros and all ones are reserved', () => {
  assert.equal(transferIdToU128('7ZZZZZZZZZZZZZZZZZZZZZZZZY'), (1n << 128n) - 2n);
  assert.equal(transferIdToU128('00000000000000000000000001'), 1n);
  assertRefused('8ZZZZZZZZZZZZZZZZZZZZZZZZZ');
  assertRefused('80000000000000000000000000');
  assertRefused('Z0000000000000000000000000');
  // All zeros and all ones match the ULID syntax but are TigerBeetle's reserved ids.
  for (const reserved of [
    '00000000000000000000000000',
    '7ZZZZZZZZZZZZZZZZZZZZZZZZZ',
    '7zzzzzzzzzzzzzzzzzzzzzzzzz',
  ]) {
    assert.throws(
      () => transferIdToU128(reserved),
      (error: unknown) =>
        error instanceof FspiopError && error.code === '3100' && /reserved/.test(error.message),
      reserved,
    );
  }
});

test('ULIDs with letters outside Crockford base32 or the wrong length are refused', () => {
  for (const id of [
    '01ARZ3NDEKTSV4RRFFQ69G5FAI',
    '01ARZ3NDEKTSV4RRFFQ69G5FAL',
    '01ARZ3NDEKTSV4RRFFQ69G5FAO',
    '01ARZ3NDEKTSV4RRFFQ69G5FAU',
    '01ARZ3NDEKTSV4RRFFQ69G5FA',
    '01ARZ3NDEKTSV4RRFFQ69G5FAVV',
    '01ARZ3NDEKTSV4RRFFQ69G5FA-',
  ]) {
    assertRefused(id);
  }
});
