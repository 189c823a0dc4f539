/**
 * Where the TigerBeetle adapter cuts a batch so that each command sees the ones before it
 * (segmentsOf): never on the hot path, which must stay one request.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LedgerCommand } from '../../src/ports/ledger';
import { segmentsOf } from '../../src/ledger/tigerbeetle';

const currency = 'USD';
const prepare = (id: bigint): LedgerCommand => ({
  kind: 'prepare',
  id,
  payer: 'a',
  payee: 'b',
  currency,
  amount: 1n,
  timeoutSeconds: 30,
  payloadHash: 1n,
});
const reservation = (id: bigint) => ({ id, payer: 'a', payee: 'b', currency, amount: 1n });

test('prepares, commits and aborts are one segment, however many', () => {
  const batch: LedgerCommand[] = [];
  for (let i = 1n; i <= 300n; i++)
    batch.push(
      prepare(i),
      { kind: 'commit', ...reservation(i + 1000n) },
      { kind: 'abort', ...reservation(i + 2000n) },
    );
  assert.deepEqual(segmentsOf(batch), [batch.length]);
});

test('the batch is cut before a lookup, before accounts opened after a transfer, before a funds out commit after its reserve, never at a window cut', () => {
  const open: LedgerCommand = { kind: 'openParticipant', participant: 'c', currency };
  const setActive: LedgerCommand = {
    kind: 'setActive',
    id: 9n,
    participant: 'a',
    currency,
    active: false,
  };
  assert.deepEqual(
    segmentsOf([open, open, prepare(1n), prepare(2n)]),
    [4],
    'accounts before transfers: one request',
  );
  assert.deepEqual(segmentsOf([prepare(1n), open, prepare(2n)]), [1, 3]);
  const cut = (c: string): LedgerCommand => ({ kind: 'closeWindow', window: 1, currency: c });
  assert.deepEqual(
    segmentsOf([setActive, setActive, prepare(1n), cut(currency), cut('EUR')]),
    [1, 5],
    "a close's cuts go with the transfers before them, every currency's in one request",
  );
  const out = { participant: 'a', currency, amount: 5n };
  assert.deepEqual(
    segmentsOf([
      { kind: 'fundsOutReserve', id: 1n, ...out },
      { kind: 'fundsOutCommit', id: 2n, ...out },
      { kind: 'fundsOutCommit', id: 1n, ...out },
    ]),
    [2, 3],
  );
  assert.deepEqual(segmentsOf([]), [0]);
});
