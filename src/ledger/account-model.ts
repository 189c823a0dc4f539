/**
 * The account model: how Mojaloop's positions, liquidity and limits live in TigerBeetle accounts,
 * and which transfers each ledger command becomes. docs/account-model.md walks through it
 * with balances.
 *
 * Per currency there are two TigerBeetle ledgers:
 *  - the money ledger (id = ISO 4217 numeric code) holds real value;
 *  - the limit ledger (id = numeric code + LIMIT_LEDGER_OFFSET) holds each participant's net
 *    debit cap headroom, a memo that moves in step with the money so the cap is enforced by
 *    TigerBeetle itself.
 *
 * Per participant and currency:
 *  - SETTLEMENT (money): its debit balance is the liquidity cover deposited; pending credits are
 *    funds out reserved.
 *  - POSITION (money, debits_must_not_exceed_credits): credits - debits = liquidity - position;
 *    pending debits = transfers prepared + funds out reserved. TigerBeetle refuses any debit that
 *    would take it below zero: that is the liquidity check (4001).
 *  - NDC (limit, debits_must_not_exceed_credits): credits - debits = net debit cap - position;
 *    pending debits = transfers prepared. The same refusal here is the limit check (4200).
 *  - DEBT (money) and NDC_DEBT (limit), credits_must_not_exceed_debits: the part of an admin
 *    debit that had no cover (an initial position above liquidity, a cap lowered below what is in
 *    use). Their debit balance is what the participant must earn back before it can send again.
 * Hub, per currency: HUB_RECONCILIATION and HUB_MULTILATERAL_SETTLEMENT (money) as Mojaloop has
 * them, and HUB_NDC (limit), the counterparty of every cap grant.
 *
 * A flagged account can never be overdrawn, so a debit without cover is booked on the DEBT
 * account instead, and every debit that must be covered (prepare, funds out) is preceded in its
 * chain by a sweep: a balancing transfer POSITION→DEBT (NDC→NDC_DEBT) that repays as much debt
 * as the account can, so no covered debit ever spends money that a debt still claims.
 *
 * A prepare is one linked chain (sweep, pending POSITION payer→payee, sweep, pending NDC
 * payer→payee), a commit posts both pending transfers, an abort voids both, and expiry is
 * TigerBeetle's own pending timeout: 4 events per prepare, 2 per fulfil, 0 for expiry.
 */
import { currencyByCode } from '../ports/currencies';
import { sha256High128 } from '../util/digest';

export const LIMIT_LEDGER_OFFSET = 1000;
/**
 * The window ledger (numeric code + this): settlement windows' accounts, a memo of who sent and
 * received what in each window.
 */
export const WINDOW_LEDGER_OFFSET = 2000;

/** Account codes: Mojaloop's ledgerAccountType ids where Mojaloop has the account. */
export const AccountCode = {
  POSITION: 1,
  SETTLEMENT: 2,
  HUB_RECONCILIATION: 3,
  HUB_MULTILATERAL_SETTLEMENT: 4,
  NDC: 100,
  HUB_NDC: 101,
  DEBT: 102,
  NDC_DEBT: 103,
  /**
   * A participant's account in one settlement window: debits − credits = its net (positive: net
   * sender).
   */
  WINDOW: 104,
  /**
   * A settlement window's gate in a currency: closed when the window closes, so no commit lands in
   * it after.
   */
  WINDOW_HUB: 105,
  /** The ledger's identity (IDENTITY_ACCOUNT_ID): its user_data_128 is the identity. */
  IDENTITY: 106,
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
  /** A commit's legs through its settlement window's accounts. */
  WINDOW: 9,
  /**
   * A GROSS commit settled at once: liquidity to the payee, the cap's headroom back to the payer.
   */
  GROSS: 10,
  /**
   * A settlement's decision (commit or abort, in user_data_32: SettlementDecisionCode), amount 0
   * between the hub's HUB_RECONCILIATION and HUB_MULTILATERAL_SETTLEMENT: one id per settlement,
   * so TigerBeetle lets one decision exist, never both.
   */
  SETTLEMENT_DECISION: 11,
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
/** Its ledger: no currency's (numeric codes below 1000, plus at most WINDOW_LEDGER_OFFSET). */
export const IDENTITY_LEDGER = 10_000;

/** The participant name the hub's own accounts are derived from. */
export const HUB = 'Hub';

export function ledgersOf(currency: string): { money: number; limit: number; window: number } {
  const known = currencyByCode(currency);
  if (known === undefined) throw new Error(`no ledger for unknown currency ${currency}`);
  return {
    money: known.numeric,
    limit: known.numeric + LIMIT_LEDGER_OFFSET,
    window: known.numeric + WINDOW_LEDGER_OFFSET,
  };
}

/**
 * A participant's account in settlement window `window` (the gate: participant HUB). Every commit
 * names three.
 */
export function windowAccountId(window: number, participant: string, currency: string): bigint {
  return (
    cachedId(window, currency, participant) ??
    remember(window, currency, participant, u128Of(`window:${window}:${participant}:${currency}`))
  );
}

/**
 * The closing transfer of a window's gate: one per (window, currency), so closing again is
 * `exists`.
 */
export function windowCloseId(window: number, currency: string): bigint {
  return u128Of(`window:${window}:${currency}:close`);
}

/** Account ids are derived, never stored: any instance computes the same id from the same names. */
export function accountId(participant: string, currency: string, role: AccountRole): bigint {
  return (
    cachedId(role, currency, participant) ??
    remember(role, currency, participant, u128Of(`account:${participant}:${currency}:${role}`))
  );
}

/**
 * Every prepare names four accounts and every commit three window accounts: their ids are worth
 * remembering rather than hashing again. Nested maps, so that a hit builds no key string.
 */
const MAX_CACHED_ACCOUNT_IDS = 100_000;
const accountIds = new Map<string | number, Map<string, Map<string, bigint>>>();
let cachedAccountIds = 0;

/** The id remembered under (kind: a role or a window, currency, participant). */
function cachedId(
  kind: string | number,
  currency: string,
  participant: string,
): bigint | undefined {
  return accountIds.get(kind)?.get(currency)?.get(participant);
}

function remember(
  kind: string | number,
  currency: string,
  participant: string,
  id: bigint,
): bigint {
  // Bounded by participants × currencies × (roles + open windows); cleared if ever flooded by
  // unknown names.
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
    | 'ndc'
    | 'post'
    | 'post-ndc'
    | 'void'
    | 'void-ndc'
    | 'sweep'
    | 'sweep-ndc'
    | 'gross'
    | 'gross-ndc',
): bigint {
  return u128Of(`transfer:${id.toString(16)}:${purpose}`);
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
