import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  apiStateOf,
  isFinal,
  TransferInternalState,
  type TransferApiState,
} from '../../src/ports/states';

const EXPECTED: Record<TransferInternalState, { api: TransferApiState; final: boolean }> = {
  RECEIVED_PREPARE: { api: 'RECEIVED', final: false },
  RESERVED: { api: 'RESERVED', final: false },
  RECEIVED_FULFIL: { api: 'RESERVED', final: false },
  RESERVED_TIMEOUT: { api: 'RESERVED', final: false },
  COMMITTED: { api: 'COMMITTED', final: true },
  SETTLED: { api: 'SETTLED', final: true },
  ABORTED_REJECTED: { api: 'ABORTED', final: true },
  ABORTED_ERROR: { api: 'ABORTED', final: true },
  EXPIRED_PREPARED: { api: 'ABORTED', final: true },
  EXPIRED_RESERVED: { api: 'ABORTED', final: true },
  INVALID: { api: 'ABORTED', final: true },
};

test('the internal states are exactly the eleven central-ledger records', () => {
  assert.deepEqual(Object.keys(TransferInternalState).sort(), Object.keys(EXPECTED).sort());
  for (const [key, value] of Object.entries(TransferInternalState)) assert.equal(key, value);
});

test('apiStateOf maps every internal state to its FSPIOP state', () => {
  for (const state of Object.values(TransferInternalState))
    assert.equal(apiStateOf(state), EXPECTED[state].api, state);
});

test('isFinal is true exactly for the COMMITTED and ABORTED states', () => {
  for (const state of Object.values(TransferInternalState))
    assert.equal(isFinal(state), EXPECTED[state].final, state);
  assert.deepEqual(
    Object.values(TransferInternalState)
      .filter((s) => !isFinal(s))
      .sort(),
    ['RECEIVED_FULFIL', 'RECEIVED_PREPARE', 'RESERVED', 'RESERVED_TIMEOUT'],
  );
});
