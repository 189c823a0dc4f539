import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CURRENCIES, currencyByCode } from '../src/ports/currencies';

test('known currencies have their ISO 4217 numeric code and scale', () => {
  const expected: Array<[code: string, numeric: number, scale: number]> = [
    ['USD', 840, 2],
    ['EUR', 978, 2],
    ['JPY', 392, 0],
    ['KWD', 414, 3],
    ['BHD', 48, 3],
    ['CLF', 990, 4],
    ['XOF', 952, 0],
    ['XAF', 950, 0],
    ['TZS', 834, 2],
    ['KES', 404, 2],
    ['UGX', 800, 0],
    ['RWF', 646, 0],
    ['ZMW', 967, 2],
    ['MWK', 454, 2],
    ['GHS', 936, 2],
    ['NGN', 566, 2],
    ['INR', 356, 2],
    ['PHP', 608, 2],
    ['ALL', 8, 2],
    // central-ledger's seed gives BYN 4 places.
    ['BYN', 933, 4],
  ];
  for (const [code, numeric, scale] of expected) {
    assert.deepEqual(currencyByCode(code), { code, numeric, scale }, code);
  }
});

test("central-ledger's seeded codes ISO has withdrawn or never numbered are found", () => {
  const expected: Array<[code: string, numeric: number, scale: number]> = [
    // XXX is the Testing Toolkit's own currency.
    ['XXX', 999, 4],
    ['XTS', 963, 4],
    ['XAU', 959, 4],
    ['XDR', 960, 4],
    // Withdrawn: the numeric they last held.
    ['BGN', 975, 2],
    ['ANG', 532, 2],
    ['HRK', 191, 2],
    ['ZWL', 932, 2],
    ['ZWD', 716, 4],
    ['AFA', 4, 4],
    // Never numbered by ISO 4217: their territory's ISO 3166 numeric, or 1..3.
    ['GGP', 831, 4],
    ['JEP', 832, 4],
    ['IMP', 833, 4],
    ['TVD', 798, 4],
    ['SPL', 1, 4],
    ['XFO', 2, 4],
    ['XFU', 3, 4],
  ];
  for (const [code, numeric, scale] of expected) {
    assert.deepEqual(currencyByCode(code), { code, numeric, scale }, code);
  }
});

test("codes central-ledger's seed lacks and non-upper-case codes are not found", () => {
  // ISO codes newer than the seed (XCG, ZWG, SLE, ...) are refused as central-ledger refuses them.
  for (const code of [
    'XCG',
    'ZWG',
    'SLE',
    'MRU',
    'UYW',
    'XBA',
    'ABC',
    '',
    'usd',
    'Usd',
    ' USD',
    'USD ',
    'USDT',
  ]) {
    assert.equal(currencyByCode(code), undefined, JSON.stringify(code));
  }
});

test("the table is central-ledger v19.14's seed, well formed", () => {
  assert.equal(CURRENCIES.size, 191);
  for (const [key, currency] of CURRENCIES) {
    assert.equal(key, currency.code);
    assert.match(currency.code, /^[A-Z]{3}$/);
    assert.ok(
      Number.isInteger(currency.numeric) && currency.numeric >= 1 && currency.numeric <= 999,
      key,
    );
    assert.ok(Number.isInteger(currency.scale) && currency.scale >= 0 && currency.scale <= 4, key);
    assert.ok(Object.isFrozen(currency), key);
  }
});

test('numeric codes are unique, since each is a TigerBeetle ledger id', () => {
  const numerics = new Set([...CURRENCIES.values()].map((currency) => currency.numeric));
  assert.equal(numerics.size, CURRENCIES.size);
});
