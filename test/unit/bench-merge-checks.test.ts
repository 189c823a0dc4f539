// bench/run.ts checks the books on each phase's cluster and prints them as one list: a check
// must FAIL there if it failed on any cluster, and a failed one must keep its whole detail.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { mergeChecks } from '../../bench/run-cluster';

const positions = (
  pass: boolean,
  transfers: number,
): { name: string; pass: boolean; detail: string } => ({
  name: 'positions moved by exactly the sums sent',
  pass,
  detail: `${transfers} transfers, volume 1.00 USD\n| participant | moved |\n| p0 | ${pass ? 'ok' : 'MISMATCH'} |`,
});

test('one cluster: its checks as they are, tables included', () => {
  const checks = [
    positions(true, 10),
    { name: 'nothing left reserved', pass: true, detail: '8 participants' },
  ];
  assert.deepEqual(mergeChecks([{ label: 'fspiop c=64', checks }]), checks);
});

test('several clusters: PASS only where every cluster passed, a line per cluster, a failure in full', () => {
  const merged = mergeChecks([
    {
      label: 'fspiop c=1',
      checks: [
        positions(true, 10),
        { name: 'nothing left reserved', pass: true, detail: '8 participants' },
      ],
    },
    {
      label: 'fspiop c=64',
      checks: [
        positions(false, 20),
        { name: 'nothing left reserved', pass: true, detail: '8 participants' },
      ],
    },
  ]);
  assert.deepEqual(
    merged.map((c) => [c.name, c.pass]),
    [
      ['positions moved by exactly the sums sent', false],
      ['nothing left reserved', true],
    ],
  );
  assert.equal(
    merged[0]!.detail,
    `fspiop c=1: 10 transfers, volume 1.00 USD\nfspiop c=64: ${positions(false, 20).detail}`,
  );
  assert.equal(merged[1]!.detail, '8 participants (every cluster)');
});

test('a check some clusters did not make names the ones that did', () => {
  const sample = (n: number): { name: string; pass: boolean; detail: string } => ({
    name: `a sample of ${n} is COMMITTED`,
    pass: true,
    detail: 'all COMMITTED',
  });
  const merged = mergeChecks([
    { label: 'fspiop c=1', checks: [sample(150)] },
    { label: 'fspiop c=64', checks: [sample(200)] },
    { label: 'jmeter c=64', checks: [sample(200)] },
  ]);
  assert.deepEqual(
    merged.map((c) => [c.name, c.pass, c.detail]),
    [
      ['a sample of 150 is COMMITTED', true, 'all COMMITTED (fspiop c=1)'],
      ['a sample of 200 is COMMITTED', true, 'all COMMITTED (fspiop c=64, jmeter c=64)'],
    ],
  );
});
