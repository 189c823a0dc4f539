/**
 * TigerBeetle accounts and transfers from their named parts, every other field zero: the account
 * model (account-model.ts) says which parts each command's records get. And accounts read back by
 * id, however many.
 */
import { TransferFlags, type Account, type Client, type Transfer } from 'tigerbeetle-node';
import { TIGERBEETLE_MAX_BATCH } from '../ports/ledger';

/** A transfer's parts by name: the two account ids of one type cannot change places unseen. */
export interface TransferParts {
  id: bigint;
  ledger: number;
  code: number;
  /** The id of the account debited. */
  debit: bigint;
  /** The id of the account credited. */
  credit: bigint;
  amount: bigint;
  /** Default: none (chained adds `linked`). */
  flags?: number;
  /** The pending transfer a post or void finishes. */
  pendingId?: bigint;
}

export function transfer(parts: TransferParts): Transfer {
  return {
    id: parts.id,
    debit_account_id: parts.debit,
    credit_account_id: parts.credit,
    amount: parts.amount,
    pending_id: parts.pendingId ?? 0n,
    user_data_128: 0n,
    user_data_64: 0n,
    user_data_32: 0,
    timeout: 0,
    ledger: parts.ledger,
    code: parts.code,
    flags: parts.flags ?? TransferFlags.none,
    timestamp: 0n,
  };
}

/** An account's parts by name. */
export interface AccountParts {
  id: bigint;
  ledger: number;
  code: number;
  flags: number;
  /** The identity account's identity (default 0). */
  userData128?: bigint;
  /** The model account's model (default 0). */
  userData32?: number;
}

export function account(parts: AccountParts): Account {
  return {
    id: parts.id,
    debits_pending: 0n,
    debits_posted: 0n,
    credits_pending: 0n,
    credits_posted: 0n,
    user_data_128: parts.userData128 ?? 0n,
    user_data_64: 0n,
    user_data_32: parts.userData32 ?? 0,
    reserved: 0,
    ledger: parts.ledger,
    code: parts.code,
    flags: parts.flags,
    timestamp: 0n,
  };
}

/** Accounts by id, in TigerBeetle's largest lookups; undefined where there is none. */
export async function lookupAccountsById(
  client: Client,
  ids: readonly bigint[],
): Promise<(Account | undefined)[]> {
  const found = new Map<bigint, Account>();
  for (let i = 0; i < ids.length; i += TIGERBEETLE_MAX_BATCH) {
    for (const account of await client.lookupAccounts(ids.slice(i, i + TIGERBEETLE_MAX_BATCH)))
      found.set(account.id, account);
  }
  return ids.map((id) => found.get(id));
}
