/**
 * The JSON central-settlement answers, built from the records: windows keyed `settlementWindowId`
 * (as its code, not its Swagger), settlements with their windows and accounts, and every amount
 * a JSON number written exactly from the bigint (handlers/exact-json.ts).
 */
import { requireCurrency, formatAmount } from '../../domain/shared/money';
import type {
  SettlementAccountRecord,
  SettlementRecord,
  SettlementWindowRecord,
} from '../../ports/metadata';
import { JsonNumber } from './exact-json';

export function windowView(window: SettlementWindowRecord): object {
  return {
    settlementWindowId: window.id,
    state: window.state,
    reason: window.reason,
    createdDate: window.createdDate,
    changedDate: window.changedDate,
    content: window.content.map((c) => ({
      id: c.id,
      state: c.state,
      ledgerAccountType: c.ledgerAccountType,
      currencyId: c.currency,
      createdDate: c.createdDate,
      changedDate: c.changedDate,
      settlementId: c.settlementId,
    })),
  };
}

/** A window as a settlement shows it: only the content of that settlement. */
function windowInSettlement(window: SettlementWindowRecord, settlementId: number): object {
  return {
    id: window.id,
    state: window.state,
    reason: window.reason,
    createdDate: window.createdDate,
    changedDate: window.changedDate,
    content: window.content
      .filter((c) => c.settlementId === settlementId || c.settlementId === null)
      .map((c) => ({
        id: c.id,
        state: c.state,
        ledgerAccountType: c.ledgerAccountType,
        currencyId: c.currency,
        createdDate: c.createdDate,
        changedDate: c.changedDate,
      })),
  };
}

export function accountView(account: SettlementAccountRecord, detail: 'full' | 'change'): object {
  return {
    id: account.accountId,
    state: account.state,
    reason: account.reason,
    ...(account.externalReference === undefined
      ? {}
      : { externalReference: account.externalReference }),
    ...(detail === 'change' ? { createdDate: account.changedDate } : {}),
    netSettlementAmount: {
      amount: new JsonNumber(
        formatAmount(BigInt(account.netAmount), requireCurrency(account.currency)),
      ),
      currency: account.currency,
    },
  };
}

/** Accounts grouped per participant, in the settlement's order. */
export function participantsView(accounts: readonly SettlementAccountRecord[]): object[] {
  const byParticipant = new Map<number, object[]>();
  for (const account of accounts) {
    const list = byParticipant.get(account.participantId) ?? [];
    list.push(accountView(account, 'full'));
    byParticipant.set(account.participantId, list);
  }
  return [...byParticipant].map(([id, list]) => ({ id, accounts: list }));
}

/** A settlement's windows, each with only that settlement's content. */
export function settlementWindowsView(
  settlementId: number,
  windows: readonly SettlementWindowRecord[],
): object[] {
  return windows.map((w) => windowInSettlement(w, settlementId));
}

export function settlementView(
  settlement: SettlementRecord,
  windows: readonly SettlementWindowRecord[],
  accounts: readonly SettlementAccountRecord[] = settlement.accounts,
): object {
  return {
    id: settlement.id,
    state: settlement.state,
    reason: settlement.reason,
    createdDate: settlement.createdDate,
    changedDate: settlement.changedDate,
    settlementWindows: settlementWindowsView(settlement.id, windows),
    participants: participantsView(accounts),
  };
}
