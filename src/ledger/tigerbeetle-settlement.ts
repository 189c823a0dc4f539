/**
 * The TigerBeetle events of settlement (docs/settlement.md): a settlement window's accounts on
 * the window ledger, and the legs a commit gets — through its window's gate (NET) or settling it
 * at once (GROSS).
 */
import { AccountFlags, type Account, type Transfer, id as timeOrderedId } from 'tigerbeetle-node';
import {
  AccountCode,
  HUB,
  TransferCode,
  accountId,
  derivedTransferId,
  ledgersOf,
  windowAccountId,
} from './account-model';
import { account, transfer } from './tigerbeetle-records';
import type { CommitSettlement, Reservation } from '../ports/ledger';

/**
 * What an event's refusal means, to read it: a participant's or the hub's account (liquidity, cap,
 * a deactivation), or a settlement window's.
 */
export type Leg = 'account' | 'window';

/** The window legs of a NET commit, or the settling leg of a GROSS one (docs/settlement.md). */
export function settlementLegs(command: Reservation, settlement: CommitSettlement): Transfer[] {
  const { window: windowLedger, money } = ledgersOf(command.currency);
  if ('gross' in settlement) {
    // The payer's liquidity pays the payee's; the commit's receipt gave the payer's cap headroom
    // back (tigerbeetle-chains.ts receiptOf): both positions are where they were.
    return [
      transfer({
        id: derivedTransferId(command.id, 'gross'),
        ledger: money,
        code: TransferCode.GROSS,
        debit: accountId(command.payee, command.currency, 'SETTLEMENT'),
        credit: accountId(command.payer, command.currency, 'SETTLEMENT'),
        amount: command.amount,
      }),
    ];
  }
  // The legs' ids are new and time-ordered on every try, not derived: linked after the posts, they
  // are created only with them, so a retried commit fails at its post (`exists`) before a leg could
  // count twice, and nothing ever looks a leg up by id. Hashed ids land at random places in
  // TigerBeetle's id index; these append: the replicas' CPU per complete transfer fell ~15 % at
  // 64 commands per request (bench/README "Ids that need not be derived").
  const gate = windowAccountId(settlement.window, HUB, command.currency);
  return [
    transfer({
      id: timeOrderedId(),
      ledger: windowLedger,
      code: TransferCode.WINDOW,
      debit: windowAccountId(settlement.window, command.payer, command.currency),
      credit: gate,
      amount: command.amount,
    }),
    transfer({
      id: timeOrderedId(),
      ledger: windowLedger,
      code: TransferCode.WINDOW,
      debit: gate,
      credit: windowAccountId(settlement.window, command.payee, command.currency),
      amount: command.amount,
    }),
  ];
}

export function settlementLegKinds(settlement: CommitSettlement): Leg[] {
  return 'gross' in settlement ? ['account'] : ['window', 'window'];
}

/** Window 0 never exists: its gate is the account every window's closing transfer credits. */
export const WINDOW_ANCHOR = 0;

/**
 * A window's gate and its participants' accounts in a currency (not linked: each may exist
 * already).
 */
export function windowAccounts(
  window: number,
  currency: string,
  participants: readonly string[],
): Account[] {
  const ledger = ledgersOf(currency).window;
  return [HUB, ...participants].map((owner) =>
    account({
      id: windowAccountId(window, owner, currency),
      ledger,
      code: owner === HUB ? AccountCode.WINDOW_HUB : AccountCode.WINDOW,
      flags: AccountFlags.none,
      userData64: BigInt(window),
    }),
  );
}
