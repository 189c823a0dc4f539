/**
 * The account model: how Mojaloop's positions, liquidity and limits live in TigerBeetle accounts,
 * and which transfers each ledger command becomes. docs/account-model.md walks through it with
 * balances; docs/decisions/0008-three-event-model.md says why.
 *
 * Per currency there is one ledger (id = ISO 4217 numeric code). Per participant and currency:
 *  - SETTLEMENT: its debit balance is the liquidity cover deposited; pending credits are funds out
 *    reserved.
 *  - POSITION (debits_must_not_exceed_credits): credits - debits = liquidity - position;
 *    pending debits = transfers prepared + funds out reserved. TigerBeetle refuses any debit that
 *    would take it below zero: that is the liquidity check (4001).
 *  - CAP (credits_must_not_exceed_debits, history): debits - credits = net debit cap - position;
 *    pending credits = transfers prepared. TigerBeetle refuses any credit past its debits: that
 *    is the limit check (4200).
 *  - DEBT (credits_must_not_exceed_debits) and CAP_DEBT (debits_must_not_exceed_credits): the part
 *    of an admin debit that had no cover (an initial position above liquidity, a cap lowered below
 *    what is in use). What they hold is what the participant must earn back before it can send.
 * Hub, per currency: HUB_RECONCILIATION and HUB_MULTILATERAL_SETTLEMENT as Mojaloop has them, and
 * HUB_CAP, the counterparty of every cap grant.
 *
 * A prepare is one pending transfer POSITION(payer) -> CAP(payer): TigerBeetle checks its debit
 * side (liquidity) before its credit side (cap), prepared amounts included, which is
 * central-ledger's order. A commit posts it and moves the payee's side, CAP(payee) ->
 * POSITION(payee); an abort voids it; expiry is TigerBeetle's own pending timeout.
 *
 * A settlement window is what CAP's balance history says between two cuts (tigerbeetle-windows.ts):
 * a commit lands in the window its own timestamp falls in, with no event of its own for it.
 *
 * A flagged account can never be overdrawn, so a debit without cover is booked on the debt
 * account instead, and every debit that must be covered (prepare, funds out) is preceded in its
 * chain by a sweep: a balancing transfer POSITION->DEBT (CAP_DEBT->CAP) that repays as much debt
 * as the account can, so no covered debit ever spends money that a debt still claims.
 */
import { currencyByCode } from '../ports/currencies';
import { sha256High128 } from '../util/digest';

/** Account codes: Mojaloop's ledgerAccountType ids where Mojaloop has the account. */
export const AccountCode = {
  POSITION: 1,
  SETTLEMENT: 2,
  HUB_RECONCILIATION: 3,
  HUB_MULTILATERAL_SETTLEMENT: 4,
  DEBT: 102,
  /** The ledger's identity (IDENTITY_ACCOUNT_ID): its user_data_128 is the identity. */
  IDENTITY: 106,
  /** A participant's net debit cap headroom, on the money ledger (its debit balance). */
  CAP: 107,
  /** The counterparty of every cap grant. */
  HUB_CAP: 108,
  /** A participant's cap debt (its credit balance). */
  CAP_DEBT: 109,
  /** The ledger's model (MODEL_ACCOUNT_ID): its user_data_32 is the model's number. */
  MODEL: 110,
} as const;
export type AccountRole = keyof typeof AccountCode;

/** Transfer codes: what a transfer is, for audit and for finding the last closing transfer. */
export const TransferCode = {
  TRANSFER: 1,
  FUNDS_IN: 2,
  FUNDS_OUT: 3,
  NDC_ADJUST: 4,
  INITIAL_POSITION: 5,
  CLOSE: 6,
  /** A balancing repayment of debt before a covered debit (usually of amount 0). */
  SWEEP: 7,
  /** A settlement step's position change (PS_TRANSFERS_RESERVED, PS_TRANSFERS_COMMITTED, abort). */
  SETTLEMENT: 8,
  /**
   * A GROSS commit settled at once: the payer's CAP headroom back as liquidity to the payee, and
   * the payer's liquidity to the payee's.
   */
  GROSS: 10,
  /**
   * A settlement's decision (commit or abort, in user_data_32: SettlementDecisionCode), amount 0
   * between the hub's HUB_RECONCILIATION and HUB_MULTILATERAL_SETTLEMENT: one id per settlement,
   * so TigerBeetle lets one decision exist, never both.
   */
  SETTLEMENT_DECISION: 11,
  /**
   * Amount 0 from a participant's CAP, first in an admin move that names CAP: where CAP is closed
   * (a debtor's) it is refused instead of the move's own events, whose ids a refusal would burn.
   */
  CAP_GUARD: 12,
  /** A NET commit's receipt, CAP(payee) → POSITION(payee): a window moved (windowMoved). */
  RECEIPT: 13,
  /**
   * A settlement window's cut in a currency (user_data_64: the window), amount 0 between the hub's
   * HUB_RECONCILIATION and HUB_MULTILATERAL_SETTLEMENT: the commits saved before it and after the
   * cut before are the window's.
   */
  WINDOW_CUT: 14,
  /**
   * Pending, amount 0, between the hub's HUB_RECONCILIATION and HUB_MULTILATERAL_SETTLEMENT, under
   * debtorTryId(prepare): the prepare's plain chain was refused for a debtor's closed CAP (which
   * burnt its id), not for a reason of its own, so a retry goes the debtor's way — until a debtor's
   * chain of it is refused for a reason of its own, which voids it (debtorTryEndId).
   */
  DEBTOR_TRY: 15,
} as const;

/**
 * user_data_32 of a settlement's decision: a different one under the same id is
 * exists_with_different_user_data_32.
 */
export const SettlementDecisionCode = { commit: 1, abort: 2 } as const;

/**
 * The account whose user_data_128 is the ledger's identity (docs/decisions/0007). Derived ids are
 * sha256 digests: none is this small but with odds of 2^-124, so the id is reserved to it.
 */
export const IDENTITY_ACCOUNT_ID = 1n;
/** The account whose user_data_32 is the ledger's model (LEDGER_MODEL); its id reserved alike. */
export const MODEL_ACCOUNT_ID = 2n;
/**
 * Its ledger: no currency's (numeric codes are below 1000; before the 3-event model, window ledgers
 * took the codes plus 2000).
 */
export const IDENTITY_LEDGER = 10_000;

/** The participant name the hub's own accounts are derived from. */
export const HUB = 'Hub';

/** The ledger of a currency: its ISO 4217 numeric code. */
export function ledgerOf(currency: string): number {
  const known = currencyByCode(currency);
  if (known === undefined) throw new Error(`no ledger for unknown currency ${currency}`);
  return known.numeric;
}

/**
 * The cut of a settlement window in a currency: one per (window, currency), so again is `exists`.
 * Not the old model's closing transfer of the window's gate (`…:close`), which a migrated ledger
 * holds for the same windows.
 */
export function windowCutId(window: number, currency: string): bigint {
  return u128Of(`window:${window}:${currency}:cut`);
}

/**
 * A reservation's payee, in its pending transfer's user_data_64 (the pending names the payer's
 * accounts only): the low 64 bits of the payee's POSITION id. A prepare retried for another payee
 * is then TigerBeetle's exists_with_different_user_data_64, and the ledger alone tells whom a
 * reservation is for.
 */
export function payeeTag(payee: string, currency: string): bigint {
  return accountId(payee, currency, 'POSITION') & U64_MASK;
}

const U64_MASK = (1n << 64n) - 1n;

/** Account ids are derived, never stored: any instance computes the same id from the same names. */
export function accountId(participant: string, currency: string, role: AccountRole): bigint {
  return (
    cachedId(role, currency, participant) ??
    remember(role, currency, participant, u128Of(`account:${participant}:${currency}:${role}`))
  );
}

/**
 * Every prepare names two accounts and every commit four: their ids are worth remembering rather
 * than hashing again. Nested maps, so that a hit builds no key string.
 */
const MAX_CACHED_ACCOUNT_IDS = 100_000;
const accountIds = new Map<string, Map<string, Map<string, bigint>>>();
let cachedAccountIds = 0;

/** The id remembered under (role, currency, participant). */
function cachedId(kind: string, currency: string, participant: string): bigint | undefined {
  return accountIds.get(kind)?.get(currency)?.get(participant);
}

function remember(kind: string, currency: string, participant: string, id: bigint): bigint {
  // Bounded by participants × currencies × roles; cleared if ever flooded by unknown names.
  if (cachedAccountIds >= MAX_CACHED_ACCOUNT_IDS) {
    accountIds.clear();
    cachedAccountIds = 0;
  }
  let byCurrency = accountIds.get(kind);
  if (byCurrency === undefined) accountIds.set(kind, (byCurrency = new Map()));
  let byParticipant = byCurrency.get(currency);
  if (byParticipant === undefined) byCurrency.set(currency, (byParticipant = new Map()));
  byParticipant.set(participant, id);
  cachedAccountIds++;
  return id;
}

/**
 * Ids of the second leg of a transfer and of the post/void events: derived from the transfer id
 * so that a retried commit or abort is the same TigerBeetle event (idempotent), and a commit and
 * an abort of one transfer compete for the same pending transfer (exclusive).
 */
export function derivedTransferId(
  id: bigint,
  purpose:
    | 'post'
    | 'post-swept'
    | 'void'
    | 'sweep'
    | 'sweep-cap'
    | 'cap'
    | 'gross'
    | 'swept'
    | 'debtor-try'
    | 'debtor-try-end',
): bigint {
  return u128Of(`transfer:${id.toString(16)}:${purpose}`);
}

/**
 * The id a debtor's reservation is made under: its chain's first try, without the sweeps, was
 * refused for the debtor's closed CAP, and a refused id is refused for good
 * (docs/decisions/0008-three-event-model.md, proof 8).
 */
export function sweptReservationId(id: bigint): bigint {
  return derivedTransferId(id, 'swept');
}

/** The id of a prepare's DEBTOR_TRY record: one per prepare, whoever writes it. */
export function debtorTryId(id: bigint): bigint {
  return derivedTransferId(id, 'debtor-try');
}

/** The id of the void that ends a prepare's DEBTOR_TRY (its debtor's chain refused for good). */
export function debtorTryEndId(id: bigint): bigint {
  return derivedTransferId(id, 'debtor-try-end');
}

/**
 * A funds out commit's post: try `attempt` of it (a refused post's id is refused for good); the
 * first is the plain post.
 */
export function fundsOutPostId(id: bigint, attempt: number): bigint {
  return attempt === 0
    ? derivedTransferId(id, 'post')
    : u128Of(`transfer:${id.toString(16)}:post#${attempt}`);
}

const U128_MAX = (1n << 128n) - 1n;

function u128Of(text: string): bigint {
  const value = sha256High128(text);
  // 0 and 2^128-1 are reserved by TigerBeetle; sha256 landing there is a 2^-127 event.
  if (value === 0n || value === U128_MAX) throw new Error(`derived id of ${text} is reserved`);
  return value;
}
