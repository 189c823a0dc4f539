import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';

import {
  conditionOf,
  fulfils,
  parseCondition,
  parseFulfilment,
} from '../../src/domain/shared/condition';
import { FspiopError } from '../../src/domain/shared/errors';

const PREIMAGE = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
const FULFILMENT = PREIMAGE.toString('base64url');
const CONDITION = createHash('sha256').update(PREIMAGE).digest('base64url');

function assertRefused(fn: () => unknown, what: 'condition' | 'fulfilment', label: string): void {
  assert.throws(
    fn,
    (error: unknown) => {
      assert.ok(error instanceof FspiopError, label);
      assert.equal(error.code, '3100', label);
      assert.ok(error.message.includes(what), error.message);
      return true;
    },
    label,
  );
}

test('parseCondition and parseFulfilment decode 43-char base64url into 32 bytes', () => {
  assert.equal(FULFILMENT.length, 43);
  assert.deepEqual(parseFulfilment(FULFILMENT), PREIMAGE);
  assert.deepEqual(parseCondition(CONDITION), createHash('sha256').update(PREIMAGE).digest());
  // Both URL-safe characters decode.
  const urlSafe = Buffer.alloc(32, 0xff).toString('base64url');
  assert.match(urlSafe, /_/);
  assert.deepEqual(parseCondition(urlSafe), Buffer.alloc(32, 0xff));
  const dashes = Buffer.alloc(32, 0xfb).toString('base64url');
  assert.match(dashes, /-/);
  assert.deepEqual(parseFulfilment(dashes), Buffer.alloc(32, 0xfb));
});

test('a last character with non-zero spare bits is refused as non-canonical', () => {
  // 43 chars carry 258 bits; the last char of a canonical encoding is one of the 16 with the low
  // two bits clear.
  const zero = Buffer.alloc(32).toString('base64url');
  assert.equal(zero, 'A'.repeat(43));
  assert.deepEqual(parseCondition(zero), Buffer.alloc(32));
  for (const last of ['B', 'C', 'D', 'F', 'z', '_', '-', '1']) {
    const text = 'A'.repeat(42) + last;
    assert.equal(Buffer.from(text, 'base64url').length, 32, 'Buffer decodes it leniently');
    assertRefused(() => parseCondition(text), 'condition', text);
    assertRefused(() => parseFulfilment(text), 'fulfilment', text);
  }
  for (const last of [
    'A',
    'E',
    'I',
    'M',
    'Q',
    'U',
    'Y',
    'c',
    'g',
    'k',
    'o',
    's',
    'w',
    '0',
    '4',
    '8',
  ]) {
    assert.equal(parseCondition('A'.repeat(42) + last).length, 32, last);
  }
});

test('wrong length, padding, standard base64 characters and non-strings are refused', () => {
  const bad = [
    FULFILMENT.slice(0, 42),
    FULFILMENT + 'A',
    FULFILMENT + '=',
    Buffer.alloc(32, 0xff).toString('base64'), // '/' and padding
    Buffer.alloc(32, 0xfb).toString('base64').slice(0, 43), // '+'
    '',
    ' ' + FULFILMENT.slice(1),
    FULFILMENT.slice(0, 42) + '.',
    Buffer.alloc(48).toString('base64url'),
  ];
  for (const text of bad) {
    assertRefused(() => parseCondition(text), 'condition', JSON.stringify(text));
    assertRefused(() => parseFulfilment(text), 'fulfilment', JSON.stringify(text));
  }
  for (const value of [undefined, null, 43, PREIMAGE, { toString: () => FULFILMENT }]) {
    assertRefused(() => parseCondition(value), 'condition', String(value));
    assertRefused(() => parseFulfilment(value), 'fulfilment', String(value));
  }
});

test('conditionOf is base64url(sha256(preimage))', () => {
  assert.equal(conditionOf(PREIMAGE), CONDITION);
  for (let i = 0; i < 20; i++) {
    const preimage = randomBytes(32);
    const expected = createHash('sha256').update(preimage).digest('base64url');
    assert.equal(conditionOf(preimage), expected);
    assert.equal(conditionOf(preimage).length, 43);
  }
});

test('fulfils is true exactly when sha256 of the fulfilment is the condition', () => {
  assert.equal(fulfils(FULFILMENT, CONDITION), true);
  const other = randomBytes(32);
  assert.equal(fulfils(other.toString('base64url'), CONDITION), false);
  assert.equal(fulfils(FULFILMENT, conditionOf(other)), false);
  // The condition as the fulfilment, or swapped, does not fulfil.
  assert.equal(fulfils(CONDITION, FULFILMENT), false);
  // A malformed fulfilment is a validation error, not a mere mismatch.
  assertRefused(() => fulfils(FULFILMENT + '=', CONDITION), 'fulfilment', 'padded');
});
