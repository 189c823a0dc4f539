import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { plainDecimal } from '../../src/domain/shared/money';
import {
  JsonNumber,
  decimalText,
  parseExactJson,
  stringifyExact,
} from '../../src/handlers/http/exact-json';
import { JournaledLedger } from '../../src/ledger/journaled';

test('parseExactJson keeps each number literal as written, wherever it stands', () => {
  const body = parseExactJson(
    '{"a": 100.12345678901234567890, "b": {"c": [1, 2.50, "3.0"]}, "s": " -3 ", "e": -1.5e2, "t": "said \\"7\\", 8"}',
  ) as {
    a: number;
    b: { c: unknown[] };
    s: string;
    e: number;
    t: string;
  };
  assert.equal(typeof body.a, 'number', 'the parsed value is still a number for schemas');
  assert.equal(decimalText(body, 'a'), '100.12345678901234567890');
  assert.equal(decimalText(body.b.c, '1'), '2.50');
  assert.equal(decimalText(body.b.c, '2'), '3.0', 'a numeric string is taken as written');
  assert.equal(decimalText(body, 's'), '-3');
  assert.equal(decimalText(body, 'e'), '-1.5e2');
  assert.equal(body.t, 'said "7", 8', 'digits inside strings are left alone');
  assert.throws(() => parseExactJson('{"a": 01}'), SyntaxError);
  assert.throws(() => parseExactJson('{"a": 1.}'), SyntaxError);
});

test('decimalText of a number not parsed exactly falls back to its shortest text', () => {
  assert.equal(decimalText({ v: 0.1 }, 'v'), '0.1');
});

test('stringifyExact writes decimal text as number literals, exactly', () => {
  const json = stringifyExact([
    { value: new JsonNumber('123456789012345678.1234'), other: 'x' },
    { value: new JsonNumber('-0.5') },
  ]);
  assert.equal(json, '[{"value":123456789012345678.1234,"other":"x"},{"value":-0.5}]');
  assert.equal(stringifyExact({ plain: 1 }), '{"plain":1}');
  assert.throws(() => new JsonNumber('1e3'));
});

test('plainDecimal: what Joi number() takes, written out exactly; undefined beyond a safe whole part', () => {
  const cases: [string, string | undefined][] = [
    ['100', '100'],
    ['100.50', '100.5'],
    ['-1.5e2', '-150'],
    ['1e-3', '0.001'],
    ['+5', '5'],
    [' 7 ', '7'],
    ['-0', '0'],
    ['00012.3400', '12.34'],
    ['9007199254740991.5', '9007199254740991.5'],
    ['9007199254740992', undefined],
    ['1e20', undefined],
    ['abc', undefined],
    ['', undefined],
    ['0x10', undefined],
  ];
  for (const [text, expected] of cases)
    assert.equal(plainDecimal(text), expected, JSON.stringify(text));
});

test('an embedded ledger journal of an earlier account model is refused, not replayed under new rules', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'journal-model-'));
  writeFileSync(
    join(dir, 'ledger.journal'),
    `${JSON.stringify({ atMs: 1, commands: [{ kind: 'openHub', currency: 'USD' }] })}\n`,
  );
  await assert.rejects(JournaledLedger.open(dir), /ledger model 1/);
});
