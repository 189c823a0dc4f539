/**
 * The embedded ledger: an in-process model of the same money operations, kept to TigerBeetle's
 * semantics as the TigerBeetle adapter meets them (idempotency by id, ids poisoned by a refusal,
 * the order of checks, reservations that expire by themselves). It is what the service runs on
 * when no cluster is configured, and the oracle the differential test holds TigerBeetle against.
 *
 * It keeps the model's figures directly (liquidity, position, reserved, cap) rather than
 * emulating accounts, so that the differential test compares two independent derivations.
 */
import { derivedTransferId } from './account-model';
import {
  OK,
  refused,
  type AccountRef,
  type Ledger,
  type LedgerCommand,
  type LedgerOutcome,
  type LedgerRefusal,
  type LedgerTransferState,
  type ParticipantBalance,
} from './ledger';

interface Book {
  active: boolean;
  liquidity: bigint;
  fundsOutReserved: bigint;
  position: bigint;
  reserved: bigint;
  netDebitCap: bigint;
}

interface Reservation {
  kind: 'transfer' | 'fundsOut';
  payer: string;
  payee: string;
  currency: string;
  amount: bigint;
  /** Wall-clock ms after which the ledger treats the reservation as expired; undefined: never. */
  expiresAtMs: number | undefined;
  state: 'reserved' | 'committed' | 'aborted' | 'expired';
}

/** Refusals that depend on state rather than on the command: TigerBeetle never lets such an id succeed later. */
const POISONING: ReadonlySet<LedgerRefusal> = new Set<LedgerRefusal>(['insufficient_liquidity', 'limit_exceeded', 'inactive', 'not_found', 'expired']);

export class EmbeddedLedger implements Ledger {
  readonly name = 'embedded' as const;
  private readonly hubs = new Set<string>();
  private readonly books = new Map<string, Book>();
  /** Every id a successful command used, with what it did: a retry is `exists`, anything else `modified`. */
  private readonly applied = new Map<bigint, string>();
  private readonly poisoned = new Set<bigint>();
  private readonly reservations = new Map<bigint, Reservation>();
  /** Reservations with a timeout, in insertion order; expired lazily before every operation. */
  private readonly expiring = new Set<bigint>();

  constructor(private readonly now: () => number = Date.now) {}

  async execute(commands: readonly LedgerCommand[]): Promise<LedgerOutcome[]> {
    this.expireDue();
    return commands.map((command) => this.apply(command));
  }

  async balances(refs: readonly AccountRef[]): Promise<(ParticipantBalance | undefined)[]> {
    this.expireDue();
    return refs.map((ref) => {
      const book = this.books.get(bookKey(ref.participant, ref.currency));
      return book === undefined ? undefined : { ...book };
    });
  }

  async transferStates(ids: readonly bigint[]): Promise<LedgerTransferState[]> {
    this.expireDue();
    return ids.map((id) => {
      const reservation = this.reservations.get(id);
      return reservation === undefined || reservation.kind !== 'transfer' ? 'unknown' : reservation.state;
    });
  }

  async close(): Promise<void> {}

  private apply(command: LedgerCommand): LedgerOutcome {
    switch (command.kind) {
      case 'openHub':
        if (this.hubs.has(command.currency)) return refused('exists');
        this.hubs.add(command.currency);
        return OK;
      case 'openParticipant': {
        const key = bookKey(command.participant, command.currency);
        if (this.books.has(key)) return refused('exists');
        this.books.set(key, { active: true, liquidity: 0n, fundsOutReserved: 0n, position: 0n, reserved: 0n, netDebitCap: 0n });
        return OK;
      }
      case 'prepare':
        return this.once([command.id, derivedTransferId(command.id, 'ndc')], signature(command.payer, command.payee, command.currency, command.amount, command.payloadHash), () => {
          const payer = this.openBook(command.payer, command.currency);
          const payee = this.openBook(command.payee, command.currency);
          if (payer === undefined || payee === undefined) return 'not_found';
          if (!payer.active || !payee.active) return 'inactive';
          const refusal = headroomRefusal(payer, command.amount);
          if (refusal !== undefined) return refusal;
          payer.reserved += command.amount;
          this.reservations.set(command.id, {
            kind: 'transfer', payer: command.payer, payee: command.payee, currency: command.currency, amount: command.amount,
            expiresAtMs: this.now() + command.timeoutSeconds * 1000, state: 'reserved',
          });
          this.expiring.add(command.id);
          return undefined;
        });
      case 'commit':
      case 'abort': {
        const post = command.kind === 'commit';
        const ids = [derivedTransferId(command.id, post ? 'post' : 'void'), derivedTransferId(command.id, post ? 'post-ndc' : 'void-ndc')];
        return this.once(ids, signature(command.payer, command.payee, command.currency, command.amount), () => {
          const found = this.resolvable(command.id, 'transfer');
          if (typeof found === 'string') return found;
          const payer = this.openBook(command.payer, command.currency)!;
          const payee = this.openBook(command.payee, command.currency)!;
          if (post && (!payer.active || !payee.active)) return 'inactive';
          payer.reserved -= found.amount;
          if (post) {
            payer.position += found.amount;
            payee.position -= found.amount;
          }
          found.state = post ? 'committed' : 'aborted';
          this.expiring.delete(command.id);
          return undefined;
        });
      }
      case 'fundsIn':
        return this.once([command.id], signature('in', command.participant, command.currency, command.amount), () => {
          const book = this.openBook(command.participant, command.currency);
          if (book === undefined) return 'not_found';
          if (!book.active) return 'inactive';
          book.liquidity += command.amount;
          return undefined;
        });
      case 'fundsOutReserve':
        return this.once([command.id], signature('out', command.participant, command.currency, command.amount), () => {
          const book = this.openBook(command.participant, command.currency);
          if (book === undefined) return 'not_found';
          if (!book.active) return 'inactive';
          if (liquidityHeadroom(book) < command.amount) return 'insufficient_liquidity';
          book.fundsOutReserved += command.amount;
          this.reservations.set(command.id, {
            kind: 'fundsOut', payer: command.participant, payee: command.participant, currency: command.currency,
            amount: command.amount, expiresAtMs: undefined, state: 'reserved',
          });
          return undefined;
        });
      case 'fundsOutCommit':
      case 'fundsOutAbort': {
        const post = command.kind === 'fundsOutCommit';
        return this.once([derivedTransferId(command.id, post ? 'post' : 'void')], signature('out', command.participant, command.currency, command.amount), () => {
          const found = this.resolvable(command.id, 'fundsOut');
          if (typeof found === 'string') return found;
          const book = this.openBook(command.participant, command.currency)!;
          if (post && !book.active) return 'inactive';
          book.fundsOutReserved -= found.amount;
          if (post) book.liquidity -= found.amount;
          found.state = post ? 'committed' : 'aborted';
          return undefined;
        });
      }
      case 'adjustNdc':
        if (command.delta === 0n) return OK;
        return this.once([command.id], signature('ndc', command.participant, command.currency, command.delta), () => {
          const book = this.openBook(command.participant, command.currency);
          if (book === undefined || !this.hubs.has(command.currency)) return 'not_found';
          if (command.delta < 0n && book.netDebitCap - book.position - book.reserved < -command.delta) return 'limit_exceeded';
          book.netDebitCap += command.delta;
          return undefined;
        });
      case 'initialPosition':
        if (command.amount === 0n) return OK;
        return this.once([command.id, derivedTransferId(command.id, 'ndc')], signature('initial', command.participant, command.currency, command.amount), () => {
          const book = this.openBook(command.participant, command.currency);
          if (book === undefined || !this.hubs.has(command.currency)) return 'not_found';
          if (!book.active) return 'inactive';
          if (command.amount > 0n) {
            const refusal = headroomRefusal(book, command.amount);
            if (refusal !== undefined) return refusal;
          }
          book.position += command.amount;
          return undefined;
        });
      case 'setActive': {
        const book = this.openBook(command.participant, command.currency);
        if (book === undefined) return this.once([command.id], signature('active', command.participant, command.currency), () => 'not_found');
        if (book.active === command.active) return OK;
        return this.once([command.id], signature('active', command.participant, command.currency, command.active), () => {
          book.active = command.active;
          return undefined;
        });
      }
    }
  }

  /**
   * Runs `change` once per id set: a retry of the same command is `exists`, a different command
   * under a used id is `modified`, and an id refused before stays refused.
   */
  private once(ids: bigint[], what: string, change: () => LedgerRefusal | undefined): LedgerOutcome {
    const primary = ids[0]!;
    const seen = this.applied.get(primary);
    if (seen !== undefined) return refused(seen === what ? 'exists' : 'modified');
    if (this.poisoned.has(primary)) return refused('failed_before');
    const refusal = change();
    if (refusal !== undefined) {
      if (POISONING.has(refusal)) this.poisoned.add(primary);
      return refused(refusal);
    }
    for (const id of ids) this.applied.set(id, what);
    return OK;
  }

  private resolvable(id: bigint, kind: Reservation['kind']): Reservation | LedgerRefusal {
    const found = this.reservations.get(id);
    if (found === undefined || found.kind !== kind) return 'not_found';
    if (found.state === 'committed') return 'already_committed';
    if (found.state === 'aborted') return 'already_aborted';
    if (found.state === 'expired') return 'expired';
    return found;
  }

  private openBook(participant: string, currency: string): Book | undefined {
    return this.books.get(bookKey(participant, currency));
  }

  /** Releases every reservation whose timeout has passed, as the TigerBeetle cluster does by itself. */
  private expireDue(): void {
    const now = this.now();
    for (const id of this.expiring) {
      const reservation = this.reservations.get(id)!;
      if (reservation.expiresAtMs === undefined || reservation.expiresAtMs > now) continue;
      this.openBook(reservation.payer, reservation.currency)!.reserved -= reservation.amount;
      reservation.state = 'expired';
      this.expiring.delete(id);
    }
  }
}

/** What stops a debit of `amount`: liquidity first (4001), then the net debit cap (4200). */
function headroomRefusal(book: Book, amount: bigint): LedgerRefusal | undefined {
  if (liquidityHeadroom(book) < amount) return 'insufficient_liquidity';
  if (book.netDebitCap - book.position - book.reserved < amount) return 'limit_exceeded';
  return undefined;
}

function liquidityHeadroom(book: Book): bigint {
  return book.liquidity - book.position - book.reserved - book.fundsOutReserved;
}

function bookKey(participant: string, currency: string): string {
  return `${participant}\u0000${currency}`;
}

function signature(...parts: (string | bigint | boolean)[]): string {
  return parts.map(String).join('\u0000');
}
