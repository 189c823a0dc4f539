/**
 * The embedded ledger's records of participants and reservations, and the checks its chain events
 * make on them: the refusals TigerBeetle's accounts and pending transfers would give.
 */
import { digest64 } from './id-table';
import type { LedgerRefusal } from '../ports/ledger';

export interface Book {
  active: boolean;
  liquidity: bigint;
  fundsOutReserved: bigint;
  position: bigint;
  reserved: bigint;
  netDebitCap: bigint;
}

export interface Reservation {
  kind: 'transfer' | 'fundsOut';
  payer: string;
  payee: string;
  currency: string;
  amount: bigint;
  /** Wall-clock ms after which the ledger treats the reservation as expired; undefined: never. */
  expiresAtMs: number | undefined;
  state: 'reserved' | 'committed' | 'aborted' | 'expired';
}

/**
 * What is kept of a reservation once it is no longer open: enough to refuse a later post or void as
 * before.
 */
export interface FinishedReservation {
  kind: Reservation['kind'];
  state: Exclude<Reservation['state'], 'reserved'>;
  /** digest64 of its terms (payer, payee, currency, amount). */
  terms: ArrayLike<number>;
  /**
   * When it was finished (ledger.ts finishedAt): epoch seconds, rounded up, so one word holds it
   * (until 2106).
   */
  finishedAtS: number;
}

/** Why an account of the participant cannot be debited or credited at all, if it cannot. */
export function accountRefusal(book: Book | undefined): LedgerRefusal | undefined {
  if (book === undefined) return 'not_found';
  return book.active ? undefined : 'inactive';
}

/**
 * The POSITION account's check: liquidity less position, reservations and funds out reserved
 * (4001). Negative where an initial position above liquidity left a debt: nothing then passes.
 */
export function liquidityRefusal(book: Book, amount: bigint): LedgerRefusal | undefined {
  return book.liquidity - book.position - book.reserved - book.fundsOutReserved < amount
    ? 'insufficient_liquidity'
    : undefined;
}

/**
 * The CAP account's check: the cap less position and reservations (4200); negative below the cap.
 */
export function limitRefusal(book: Book, amount: bigint): LedgerRefusal | undefined {
  return book.netDebitCap - book.position - book.reserved < amount ? 'limit_exceeded' : undefined;
}

/** Why a reservation cannot be posted or voided by `command`, if it cannot. */
export function resolvable(
  found: Reservation | FinishedReservation | undefined,
  kind: Reservation['kind'],
  command: Pick<Reservation, 'payer' | 'payee' | 'currency' | 'amount'>,
): LedgerRefusal | undefined {
  if (found === undefined || found.kind !== kind) return 'not_found';
  if ('terms' in found) {
    if (!sameDigest(found.terms, terms(command))) return 'invalid';
  } else if (
    found.payer !== command.payer ||
    found.payee !== command.payee ||
    found.currency !== command.currency ||
    found.amount !== command.amount
  )
    return 'invalid';
  if (found.state === 'committed') return 'already_committed';
  if (found.state === 'aborted') return 'already_aborted';
  if (found.state === 'expired') return 'expired';
  return undefined;
}

/** Whether the words kept (digest64 first) are those of `text`. */
export function sameDigest(words: ArrayLike<number>, text: string): boolean {
  const [high, low] = digest64(text);
  return words[0] === high && words[1] === low;
}

export function terms(
  reservation: Pick<Reservation, 'payer' | 'payee' | 'currency' | 'amount'>,
): string {
  return signature(reservation.payer, reservation.payee, reservation.currency, reservation.amount);
}

export function signature(...parts: (string | number | bigint | boolean)[]): string {
  return parts.map(String).join('\u0000');
}
