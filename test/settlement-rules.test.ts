/**
 * The settlement state machine as central-settlement's facade runs it, and the money of each
 * step: which transitions an account may make, how the settlement follows, and which position
 * change (with a deterministic id) each step moves.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type {
  SettlementAccountRecord,
  SettlementRecord,
  SettlementState,
} from '../src/ports/metadata';
import { settlementStateOf, stepCommand, transitionRefusal } from '../src/domain/settlement/rules';

const account = (state: SettlementState, netAmount = '100'): SettlementAccountRecord => ({
  participant: 'a',
  participantId: 1,
  accountId: 7,
  currency: 'USD',
  netAmount,
  state,
  reason: 'r',
  createdDate: '',
  changedDate: '',
});

test('an account moves one step at a time, while the settlement is where the account is; a re-statement is allowed', () => {
  assert.equal(
    transitionRefusal('PENDING_SETTLEMENT', 'PENDING_SETTLEMENT', 'PS_TRANSFERS_RECORDED'),
    undefined,
  );
  assert.equal(
    transitionRefusal('PENDING_SETTLEMENT', 'PS_TRANSFERS_RECORDED', 'PS_TRANSFERS_RESERVED'),
    'State change not allowed',
    'not before every account is recorded',
  );
  assert.equal(
    transitionRefusal('PS_TRANSFERS_RECORDED', 'PS_TRANSFERS_RECORDED', 'PS_TRANSFERS_RESERVED'),
    undefined,
  );
  assert.equal(
    transitionRefusal('PS_TRANSFERS_RECORDED', 'PS_TRANSFERS_RECORDED', 'PS_TRANSFERS_COMMITTED'),
    'State change not allowed',
    'no skipping',
  );
  assert.equal(
    transitionRefusal('PS_TRANSFERS_RESERVED', 'PS_TRANSFERS_RESERVED', 'PS_TRANSFERS_COMMITTED'),
    undefined,
  );
  assert.equal(
    transitionRefusal('PS_TRANSFERS_COMMITTED', 'PS_TRANSFERS_COMMITTED', 'SETTLED'),
    undefined,
  );
  assert.equal(transitionRefusal('SETTLING', 'PS_TRANSFERS_COMMITTED', 'SETTLED'), undefined);
  assert.equal(transitionRefusal('SETTLING', 'SETTLED', 'SETTLED'), undefined, 're-statement');
  assert.equal(
    transitionRefusal('PS_TRANSFERS_RESERVED', 'PS_TRANSFERS_RESERVED', 'PS_TRANSFERS_RECORDED'),
    'State change not allowed',
    'never backwards',
  );
  assert.equal(
    transitionRefusal('ABORTED', 'ABORTED', 'PS_TRANSFERS_RECORDED'),
    'State change not allowed',
  );
});

test('the settlement follows its slowest account; SETTLING while some are settled and some committed', () => {
  assert.equal(
    settlementStateOf('PENDING_SETTLEMENT', [
      account('PS_TRANSFERS_RECORDED'),
      account('PENDING_SETTLEMENT'),
    ]),
    'PENDING_SETTLEMENT',
  );
  assert.equal(
    settlementStateOf('PENDING_SETTLEMENT', [
      account('PS_TRANSFERS_RECORDED'),
      account('PS_TRANSFERS_RECORDED'),
    ]),
    'PS_TRANSFERS_RECORDED',
  );
  assert.equal(
    settlementStateOf('PS_TRANSFERS_COMMITTED', [
      account('SETTLED'),
      account('PS_TRANSFERS_COMMITTED'),
    ]),
    'SETTLING',
  );
  assert.equal(settlementStateOf('SETTLING', [account('SETTLED'), account('SETTLED')]), 'SETTLED');
  assert.equal(settlementStateOf('ABORTED', [account('SETTLED')]), 'ABORTED');
  assert.equal(settlementStateOf('PENDING_SETTLEMENT', []), 'PENDING_SETTLEMENT');
});

test('money per step: a recipient rises at reserve, a sender falls at commit, an abort undoes a reserve; ids derived', () => {
  const settlement = { id: 5, windowIds: [3] } as SettlementRecord;
  const recipient = account('PS_TRANSFERS_RECORDED', '-700');
  const sender = account('PS_TRANSFERS_RESERVED', '350');
  assert.equal(stepCommand(settlement, sender, 'reserve'), undefined);
  assert.equal(stepCommand(settlement, recipient, 'commit'), undefined);
  const reserve = stepCommand(settlement, recipient, 'reserve');
  assert.deepEqual(
    { ...reserve, id: undefined },
    {
      kind: 'adjustPosition',
      id: undefined,
      participant: 'a',
      currency: 'USD',
      amount: 700n,
      purpose: 'settlement',
    },
  );
  assert.equal((stepCommand(settlement, sender, 'commit') as { amount: bigint }).amount, -350n);
  assert.equal((stepCommand(settlement, recipient, 'abort') as { amount: bigint }).amount, -700n);
  assert.equal(stepCommand(settlement, sender, 'abort'), undefined);
  assert.equal(
    (stepCommand(settlement, recipient, 'reserve') as { id: bigint }).id,
    (reserve as { id: bigint }).id,
    'the same step, the same id: a repeat is `exists`',
  );
  assert.notEqual(
    (stepCommand({ ...settlement, id: 6 }, recipient, 'reserve') as { id: bigint }).id,
    (reserve as { id: bigint }).id,
  );
  // A new metadata store numbers settlements from 1 again, its windows never: another step id.
  assert.notEqual(
    (
      stepCommand(
        { ...settlement, windowIds: [settlement.windowIds[0]! + 100] },
        recipient,
        'reserve',
      ) as { id: bigint }
    ).id,
    (reserve as { id: bigint }).id,
  );
});
