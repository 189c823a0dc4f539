import { test } from 'node:test';
import assert from 'node:assert/strict';

import { currencyByCode, type Currency } from '../../src/ports/currencies';
import { FspiopError } from '../../src/domain/shared/errors';
import {
  formatAmount,
  MAX_AMOUNT_DIGITS,
  parseAmount,
  parseSignedAmount,
  requireCurrency,
} from '../../src/domain/shared/money';
import { mulberry32 } from '../support/prng';

function currency(code: string): Currency {
  const found = currencyByCode(code);
  assert.ok(found, code);
  return found;
}

const USD = currency('USD');
const JPY = currency('JPY');
const KWD = currency('KWD');
const CLF = currency('CLF');

function assertValidationError(fn: () => unknown, label: string): void {
  assert.throws(
    fn,
    (error: unknown) => {
      assert.ok(
        error instanceof FspiopError,
        `${label}: expected FspiopError, got ${String(error)}`,
      );
      assert.equal(error.code, '3100', label);
      return true;
    },
    label,
  );
}

/** A random bigint with 1..maxDigits decimal digits (no leading zero). */
function randomMinor(next: () => number, maxDigits: number): bigint {
  const digits = 1 + Math.floor(next() * maxDigits);
  let text = String(1 + Math.floor(next() * 9));
  for (let i = 1; i < digits; i++) text += String(Math.floor(next() * 10));
  return BigInt(text);
}

test('parseAmount scales by the currency minor units', () => {
  const cases: Array<[string, Currency, bigint]> = [
    ['1', USD, 100n],
    ['10.5', USD, 1050n],
    ['10.05', USD, 1005n],
    ['0.01', USD, 1n],
    ['123', JPY, 123n],
    ['1', KWD, 1000n],
    ['1.234', KWD, 1234n],
    ['0.001', KWD, 1n],
    ['1', CLF, 10000n],
    ['0.0001', CLF, 1n],
    ['12.3456', CLF, 123456n],
  ];
  for (const [text, cur, expected] of cases)
    assert.equal(parseAmount(text, cur), expected, `${text} ${cur.code}`);
});

test('parseAmount accepts trailing zeros beyond the scale because they change no value', () => {
  assert.equal(parseAmount('10.500', USD), 1050n);
  assert.equal(parseAmount('10.00000', USD), 1000n);
  assert.equal(parseAmount('7.0', JPY), 7n);
  assert.equal(parseAmount('7.000', JPY), 7n);
  assert.equal(parseAmount('1.23400', KWD), 1234n);
  assert.equal(parseAmount('0.00010', CLF), 1n);
});

test('parseAmount refuses significant decimals beyond the scale rather than rounding', () => {
  assertValidationError(() => parseAmount('10.001', USD), '10.001 USD');
  assertValidationError(() => parseAmount('0.5', JPY), '0.5 JPY');
  assertValidationError(() => parseAmount('1.0001', KWD), '1.0001 KWD');
  assertValidationError(() => parseAmount('1.00001', CLF), '1.00001 CLF');
  assertValidationError(() => parseAmount('10.0010', USD), '10.0010 USD');
});

test('parseAmount allows at most 18 digits before the decimal point, as FSPIOP Amount does', () => {
  assert.equal(MAX_AMOUNT_DIGITS, 18);
  assert.equal(parseAmount('999999999999999999', JPY), 999_999_999_999_999_999n);
  assert.equal(parseAmount('999999999999999999.99', USD), 99_999_999_999_999_999_999n);
  assert.equal(parseAmount('999999999999999999.9999', CLF), 9_999_999_999_999_999_999_999n);
  assertValidationError(() => parseAmount('1000000000000000000', JPY), '19 digits JPY');
  assertValidationError(() => parseAmount('1000000000000000000.5', USD), '19 digits USD');
});

test('parseAmount refuses zero unless allowZero', () => {
  for (const zero of ['0', '0.0', '0.00', '0.000000']) {
    assertValidationError(() => parseAmount(zero, USD), zero);
    assertValidationError(() => parseAmount(zero, USD, { allowZero: false }), zero);
    assert.equal(parseAmount(zero, USD, { allowZero: true }), 0n, zero);
  }
  assert.equal(parseAmount('0.01', USD, { allowZero: true }), 1n);
});

test('parseAmount refuses anything but a plain non-negative decimal string', () => {
  const bad = [
    '-1',
    '-0.5',
    '1e3',
    '1E3',
    '1.5e2',
    'NaN',
    'Infinity',
    '-Infinity',
    '+1',
    '01',
    '00',
    '00.5',
    '.5',
    '5.',
    '',
    ' ',
    ' 1',
    '1 ',
    '1\n',
    '\t1',
    '1 000',
    '1,5',
    '0x10',
    '1_000',
    '١',
    '1..2',
    '1.2.3',
    'abc',
  ];
  for (const text of bad) assertValidationError(() => parseAmount(text, USD), JSON.stringify(text));
  const notStrings: unknown[] = [1, null, undefined, {}, ['1'], true];
  for (const value of notStrings)
    assertValidationError(() => parseAmount(value as string, USD), String(value));
});

test('parseSignedAmount accepts a leading minus and zero', () => {
  assert.equal(parseSignedAmount('-1', USD), -100n);
  assert.equal(parseSignedAmount('-10.5', USD), -1050n);
  assert.equal(parseSignedAmount('10.5', USD), 1050n);
  assert.equal(parseSignedAmount('0', USD), 0n);
  assert.equal(parseSignedAmount('-0', USD), 0n);
  assert.equal(parseSignedAmount('-7', JPY), -7n);
  for (const text of ['--1', '-', '+1', '-+1', '- 1', '-1e3', '-.5', '-01', '-0.001']) {
    assertValidationError(() => parseSignedAmount(text, USD), JSON.stringify(text));
  }
  assertValidationError(() => parseSignedAmount(5 as unknown as string, USD), 'number');
});

test('formatAmount gives the shortest exact decimal', () => {
  const cases: Array<[bigint, Currency, string]> = [
    [0n, USD, '0'],
    [1n, USD, '0.01'],
    [10n, USD, '0.1'],
    [100n, USD, '1'],
    [1050n, USD, '10.5'],
    [1005n, USD, '10.05'],
    [-1n, USD, '-0.01'],
    [-1050n, USD, '-10.5'],
    [-300n, USD, '-3'],
    [0n, JPY, '0'],
    [7n, JPY, '7'],
    [-7n, JPY, '-7'],
    [1000n, JPY, '1000'],
    [1n, KWD, '0.001'],
    [1230n, KWD, '1.23'],
    [1n, CLF, '0.0001'],
    [123456n, CLF, '12.3456'],
    [999_999_999_999_999_999n, USD, '9999999999999999.99'],
  ];
  for (const [minor, cur, expected] of cases)
    assert.equal(formatAmount(minor, cur), expected, `${minor} ${cur.code}`);
});

test('formatAmount and parseAmount round trip (seeded random minor units)', () => {
  const next = mulberry32(0x5eed);
  for (const cur of [USD, JPY, KWD, CLF, currency('EUR'), currency('XAU')]) {
    for (let i = 0; i < 500; i++) {
      const minor = randomMinor(next, MAX_AMOUNT_DIGITS);
      const text = formatAmount(minor, cur);
      assert.equal(parseAmount(text, cur), minor, `${cur.code} ${minor} -> ${text}`);
      assert.equal(parseSignedAmount(text, cur), minor, `${cur.code} ${minor} -> ${text}`);
      assert.equal(
        parseSignedAmount(formatAmount(-minor, cur), cur),
        -minor,
        `${cur.code} -${minor}`,
      );
      // Formatting is canonical: it never carries a trailing zero in the fraction.
      assert.doesNotMatch(text, /\.\d*0$/, text);
    }
  }
});

test('parseAmount then formatAmount normalises trailing zeros', () => {
  assert.equal(formatAmount(parseAmount('10.500', USD), USD), '10.5');
  assert.equal(formatAmount(parseAmount('3.0', JPY), JPY), '3');
  assert.equal(formatAmount(parseSignedAmount('-0.0', USD), USD), '0');
});

test('requireCurrency returns the currency or a 3100 validation error', () => {
  assert.deepEqual(requireCurrency('USD'), { code: 'USD', numeric: 840, scale: 2 });
  assert.deepEqual(requireCurrency('JPY'), { code: 'JPY', numeric: 392, scale: 0 });
  for (const code of ['XCG', 'usd', '', 'US', 'USDT']) {
    assert.throws(
      () => requireCurrency(code),
      (error: unknown) => {
        assert.ok(error instanceof FspiopError);
        assert.equal(error.code, '3100');
        assert.equal(error.httpStatus, 400);
        assert.ok(error.message.includes(JSON.stringify(code)), error.message);
        return true;
      },
      code,
    );
  }
});
