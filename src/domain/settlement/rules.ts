/**
 * The settlement state machine as central-settlement's facade runs it (putById, abortById), and
 * the money of each step as ledger commands with ids derived from (settlement, account, step),
 * so a step repeated after a crash is `exists` in the ledger and moves money once.
 */
import { stableId } from '../shared/hashing';
import type {
  SettlementAccountRecord,
  SettlementRecord,
  SettlementState,
} from '../../ports/metadata';
import type { LedgerCommand, SettlementDecision } from '../../ports/ledger';

/** The account states in order; ABORTED stands outside. */
const ORDER: readonly SettlementState[] = [
  'PENDING_SETTLEMENT',
  'PS_TRANSFERS_RECORDED',
  'PS_TRANSFERS_RESERVED',
  'PS_TRANSFERS_COMMITTED',
  'SETTLED',
];

export const ACCOUNT_STATES: readonly SettlementState[] = ORDER;

/**
 * Why an account may not go to `target` now, or undefined: the next state of the account's,
 * while the settlement is in the account's state (SETTLED also from SETTLING), or the state it
 * has already (a re-statement: a new reason or reference, no money).
 */
export function transitionRefusal(
  settlement: SettlementState,
  account: SettlementState,
  target: SettlementState,
): string | undefined {
  if (target === account) return undefined;
  const next = ORDER[ORDER.indexOf(account) + 1];
  if (account === 'ABORTED' || next !== target) return 'State change not allowed';
  const from = target === 'SETTLED' ? ['PS_TRANSFERS_COMMITTED', 'SETTLING'] : [account];
  return from.includes(settlement) ? undefined : 'State change not allowed';
}

/** The settlement's state after its accounts changed (it only moves forward). */
export function settlementStateOf(
  current: SettlementState,
  accounts: readonly SettlementAccountRecord[],
): SettlementState {
  // Every window with content lists the accounts that moved (net 0 included): none only if
  // malformed.
  if (current === 'ABORTED' || accounts.length === 0) return current;
  const ranks = accounts.map((a) => ORDER.indexOf(a.state));
  const lowest = ORDER[Math.min(...ranks)]!;
  const someSettled = accounts.some((a) => a.state === 'SETTLED');
  const followed = lowest === 'PS_TRANSFERS_COMMITTED' && someSettled ? 'SETTLING' : lowest;
  const rank = (state: SettlementState): number =>
    state === 'SETTLING' ? 3.5 : ORDER.indexOf(state);
  return rank(followed) > rank(current) ? followed : current;
}

export type Step = 'reserve' | 'commit' | 'abort';

/** A step's position change for an account's net (positive: a net sender). */
const STEP_AMOUNT: Record<Step, (net: bigint) => bigint> = {
  reserve: (net) => (net < 0n ? -net : 0n),
  commit: (net) => (net > 0n ? -net : 0n),
  abort: (net) => (net < 0n ? net : 0n),
};

/**
 * The money of an account's step, if any. RESERVED raises a net recipient's position by |net|,
 * COMMITTED lowers a net sender's by net; an abort lowers a reserved recipient's back.
 */
export function stepCommand(
  settlement: SettlementRecord,
  account: SettlementAccountRecord,
  step: Step,
): Extract<LedgerCommand, { kind: 'adjustPosition' }> | undefined {
  const amount = STEP_AMOUNT[step](BigInt(account.netAmount));
  if (amount === 0n) return undefined;
  return {
    // The windows in the id too: settlement ids restart in a new metadata store, window ids never
    // (windows.ts start).
    kind: 'adjustPosition',
    id: stableId(
      `settlement:${settlement.id}:${settlement.windowIds.join(',')}:${account.participant}:${account.currency}:${account.accountId}:${step}`,
    ),
    participant: account.participant,
    currency: account.currency,
    amount,
    purpose: 'settlement',
  };
}

const STEP_OF: Partial<Record<SettlementState, Step>> = {
  PS_TRANSFERS_RESERVED: 'reserve',
  PS_TRANSFERS_COMMITTED: 'commit',
};

/** The step whose money a transition to `target` moves. */
export function stepOf(target: SettlementState): Step | undefined {
  return STEP_OF[target];
}

/**
 * The settlement's decision (commit or abort) as a ledger command, made before any commit step
 * or abort step of it: one id per settlement (derived as the steps' ids are, windows included),
 * booked in the first of its currencies by code (its accounts never change). Undefined: a
 * settlement of no account, which moves no money.
 */
export function decisionCommand(
  settlement: SettlementRecord,
  decision: SettlementDecision,
): Extract<LedgerCommand, { kind: 'decideSettlement' }> | undefined {
  const currency = settlement.accounts.map((a) => a.currency).sort()[0];
  if (currency === undefined) return undefined;
  return {
    kind: 'decideSettlement',
    id: stableId(`settlement:${settlement.id}:${settlement.windowIds.join(',')}:decision`),
    currency,
    decision,
  };
}
