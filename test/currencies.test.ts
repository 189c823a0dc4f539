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
    ['UYW', 927, 4],
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
    ['XCG', 532, 2],
    ['ZWG', 924, 2],
  ];
  for (const [code, numeric, scale] of expected) {
    assert.deepEqual(currencyByCode(code), { code, numeric, scale }, code);
  }
});

test('codes without ISO minor units get the Mojaloop maximum scale of 4', () => {
  const expected: Array<[code: string, numeric: number]> = [
    ['XTS', 963],
    ['XAU', 959],
    ['XAG', 961],
    ['XPT', 962],
    ['XPD', 964],
    ['XDR', 960],
    ['XBA', 955],
    ['XBB', 956],
    ['XBC', 957],
    ['XBD', 958],
    ['XSU', 994],
    ['XUA', 965],
  ];
  for (const [code, numeric] of expected) {
    assert.deepEqual(currencyByCode(code), { code, numeric, scale: 4 }, code);
  }
});

test('unknown, withdrawn, "no currency" and non-upper-case codes are not found', () => {
  // ANG and BGN were withdrawn (XCG now holds numeric 532; Bulgaria uses EUR).
  for (const code of [
    'XXX',
    'ANG',
    'BGN',
    'HRK',
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

test('the table covers ISO 4217 List One, well formed', () => {
  assert.equal(CURRENCIES.size, 177);
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
