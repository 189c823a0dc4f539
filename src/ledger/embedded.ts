/**
 * The embedded ledger: an in-process model of the same money operations, kept to TigerBeetle's
 * semantics as the TigerBeetle adapter meets them (idempotency by id, ids poisoned by a refusal,
 * the order of checks, reservations that expire by themselves). It is what the service runs on
 * when no cluster is configured, and the oracle the differential test holds TigerBeetle against.
 *
 * It keeps the model's figures directly (liquidity, position, reserved, cap) rather than
 * emulating accounts, so that the differential test compares two independent derivations. Its
 * events mirror the TigerBeetle chains' ids (sweeps included) only so that ids are poisoned alike.
 */
import {
  derivedTransferId,
  fundsOutPostId,
  sweptReservationId,
  windowCutId,
} from './account-model';
import { IdTable, digest64 } from './id-table';
import {
  accountRefusal,
  limitRefusal,
  liquidityRefusal,
  resolvable,
  sameDigest,
  signature,
  terms,
  type Book,
  type FinishedReservation,
  type Reservation,
} from './embedded-records';
import type { SpillOptions } from '../util/tiered-table';
import {
  LEDGER_MODEL,
  OK,
  refused,
  type AccountRef,
  type HubAccountRef,
  type Ledger,
  type LedgerCommand,
  type LedgerOutcome,
  type LedgerRefusal,
  type LedgerTransferState,
  type ParticipantBalance,
  type Reservation as LedgerReservation,
  type WindowNet,
} from '../ports/ledger';

/** A reservation a commit finishes, and whether it settles at once (GROSS). */
type SettledReservation = LedgerReservation & { gross?: boolean };

const FINISHED_STATES = ['committed', 'aborted', 'expired'] as const;
/**
 * Added to a finished reservation's state code (1 + its index in FINISHED_STATES) for a funds out.
 */
const FUNDS_OUT = 4;

/**
 * An event of a chain: its id, its check, and whether its id could begin another command (so must
 * be remembered). No id: TigerBeetle's event takes a new one every try (a receipt), so its
 * refusal poisons nothing.
 */
interface ChainEvent {
  id?: bigint;
  check: () => LedgerRefusal | undefined;
  /**
   * Remembered although not the first event: the command's own id (or its sweep), which another
   * command may start with, and a GROSS commit's leg, by which transferStates tells SETTLED.
   */
  reusable?: true;
  /**
   * What the event is remembered by, where not the whole command: a reservation's finish, by that
   * reservation's terms.
   */
  terms?: string;
}

/**
 * Refusals TigerBeetle records against the event's id for good (exceeds_credits, account not
 * found, account closed); a reservation that expired, or was already posted or voided, leaves
 * the id free (measured on 0.17.9, docs/account-model.md).
 */
const POISONING: ReadonlySet<LedgerRefusal> = new Set<LedgerRefusal>([
  'insufficient_liquidity',
  'limit_exceeded',
  'inactive',
  'not_found',
]);

/** The one word a poisoned id keeps (a table entry needs one): its presence is what counts. */
const POISONED = [1];

export class EmbeddedLedger implements Ledger {
  readonly name = 'embedded' as const;
  private readonly hubs = new Set<string>();
  /**
   * HUB_MULTILATERAL_SETTLEMENT per currency (debits less credits): the counterparty of initial
   * positions.
   */
  private readonly hubMultilateral = new Map<string, bigint>();
  private readonly books = new Map<string, Book>();
  /**
   * The ids a successful command used that another command may start with — its first event's,
   * and its own id or sweep where they come later — with a digest of what it did: a retry is
   * `exists`, anything else `modified`. Other events' ids (sweep-cap, cap, receipts…) are
   * derived with purposes no command starts with, or new every try, so they are not kept: memory
   * stays flat.
   */
  private readonly applied: IdTable;
  /**
   * The ids of events refused for good (POISONING): a refused prepare adds one, so they live in a
   * table that spills too.
   */
  private readonly poisoned: IdTable;
  /** Open reservations; once posted, voided or expired they move to `finished`. */
  private readonly reservations = new Map<bigint, Reservation>();
  /** Finished reservations: [kind and state code, terms digest (2 words), finishedAtS]. */
  private readonly finished: IdTable;
  /** Reservations with a timeout, in insertion order; expired lazily before every operation. */
  private readonly expiring = new Set<bigint>();
  /**
   * Per currency, participants' nets of the NET commits since the currency's latest window cut:
   * the window not yet cut there.
   */
  private readonly uncutNets = new Map<string, Map<string, WindowNet>>();
  /** Participants' nets per (window, participant, currency), moved there by the window's cut. */
  private readonly cutNets = new Map<string, WindowNet>();
  /** Windows cut per (window, currency): whether a NET commit landed in the window there. */
  private readonly cuts = new Map<string, boolean>();
  /** The window cut last, in any currency. */
  private latestCut: number | undefined;
  /** Currencies with a GROSS commit since their latest window cut. */
  private readonly grossSinceCut = new Set<string>();
  /**
   * Participants' CAPs the ledger holds closed (bookKey): a debt was booked, and no prepare of
   * theirs has since been created (docs/decisions/0008-three-event-model.md, "Debts").
   */
  private readonly capsClosed = new Set<string>();
  /** Ledger.identity: recorded once. */
  private recordedIdentity: bigint | undefined;

  /**
   * With `spill` ({ dir, hotEntries }), the ids (used and poisoned) and finished reservations
   * beyond `hotEntries` of each live in sorted runs on disk (a cache: a journalled ledger rebuilds
   * them at start), so memory does not grow with the transfers made; without, all stay in memory.
   */
  constructor(
    private readonly now: () => number = Date.now,
    spill?: Omit<SpillOptions, 'name'>,
  ) {
    this.applied = new IdTable(
      2,
      spill === undefined ? undefined : { ...spill, name: 'ledger-applied' },
    );
    this.finished = new IdTable(
      4,
      spill === undefined ? undefined : { ...spill, name: 'ledger-finished' },
    );
    this.poisoned = new IdTable(
      1,
      spill === undefined ? undefined : { ...spill, name: 'ledger-poisoned' },
    );
  }

  async execute(commands: readonly LedgerCommand[]): Promise<LedgerOutcome[]> {
    return this.executeNow(commands);
  }

  /** execute, at once (no await): a journal replay applies its entries in one synchronous pass. */
  executeNow(commands: readonly LedgerCommand[]): LedgerOutcome[] {
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

  async hubBalances(refs: readonly HubAccountRef[]): Promise<bigint[]> {
    return refs.map((ref) =>
      ref.type === 'HUB_MULTILATERAL_SETTLEMENT'
        ? (this.hubMultilateral.get(ref.currency) ?? 0n)
        : 0n,
    );
  }

  async transferStates(ids: readonly bigint[]): Promise<LedgerTransferState[]> {
    this.expireDue();
    return ids.map((transferId) => {
      const id = this.reservationIdOf(transferId);
      const reservation = this.reservation(id);
      if (reservation === undefined || reservation.kind !== 'transfer') return 'unknown';
      return reservation.state === 'committed' &&
        this.applied.get(derivedTransferId(id, 'gross')) !== undefined
        ? 'settled'
        : reservation.state;
    });
  }

  async finishedAt(ids: readonly bigint[]): Promise<(number | undefined)[]> {
    return ids.map((id) => {
      const found = this.reservation(this.reservationIdOf(id));
      // Open reservations (expired or not) are in `reservations`; an expiry is no one's finish.
      const finishedTransfer =
        found !== undefined &&
        'terms' in found &&
        found.kind === 'transfer' &&
        found.state !== 'expired';
      return finishedTransfer ? found.finishedAtS * 1000 : undefined;
    });
  }

  /**
   * An applied adjustPosition keeps its id (its first event's) among `applied`; a refused one does
   * not.
   */
  async positionsAdjusted(ids: readonly bigint[]): Promise<boolean[]> {
    return ids.map((id) => this.applied.get(id) !== undefined);
  }

  async windowNets(window: number, refs: readonly AccountRef[]): Promise<WindowNet[]> {
    return refs.map((ref) => ({ ...(this.netOf(window, ref) ?? { net: 0n, volume: 0n }) }));
  }

  private netOf(window: number, ref: AccountRef): WindowNet | undefined {
    if (this.cuts.has(cutKey(window, ref.currency)))
      return this.cutNets.get(windowKey(window, ref.participant, ref.currency));
    if (this.closedWithout(window)) return undefined;
    return this.uncutNets.get(ref.currency)?.get(ref.participant);
  }

  async windowMoved(window: number, currencies: readonly string[]): Promise<boolean[]> {
    return currencies.map(
      (currency) =>
        this.cuts.get(cutKey(window, currency)) ??
        (!this.closedWithout(window) && (this.uncutNets.get(currency)?.size ?? 0) > 0),
    );
  }

  /**
   * A window not cut in a currency holds nothing there once it is cut in another (the currency came
   * after its close); else it is the one not yet cut.
   */
  private closedWithout(window: number): boolean {
    return this.latestCut !== undefined && window <= this.latestCut;
  }

  async grossSinceWindowClose(currencies: readonly string[]): Promise<boolean[]> {
    return currencies.map((currency) => this.grossSinceCut.has(currency));
  }

  async latestCutWindow(): Promise<number | undefined> {
    return this.latestCut;
  }

  async identity(): Promise<bigint | undefined> {
    return this.recordedIdentity;
  }

  async recordIdentity(identity: bigint): Promise<bigint> {
    return this.recordIdentityNow(identity);
  }

  /** recordIdentity, at once (no await): for a journal replay. */
  recordIdentityNow(identity: bigint): bigint {
    this.recordedIdentity ??= identity;
    return this.recordedIdentity;
  }

  /** Always this version's: a journal written under another is refused (journaled.ts). */
  async ledgerModel(): Promise<number> {
    return LEDGER_MODEL;
  }

  async recordLedgerModel(): Promise<number> {
    return LEDGER_MODEL;
  }

  async hubsOpened(currencies: readonly string[]): Promise<boolean[]> {
    return currencies.map((currency) => this.hubs.has(currency));
  }

  async close(): Promise<void> {
    this.applied.close();
    this.finished.close();
    this.poisoned.close();
  }

  private apply(command: LedgerCommand): LedgerOutcome {
    switch (command.kind) {
      case 'openHub':
        if (this.hubs.has(command.currency)) return refused('exists');
        this.hubs.add(command.currency);
        return OK;
      case 'openParticipant': {
        const key = bookKey(command.participant, command.currency);
        if (this.books.has(key)) return refused('exists');
        this.books.set(key, {
          active: true,
          liquidity: 0n,
          fundsOutReserved: 0n,
          position: 0n,
          reserved: 0n,
          netDebitCap: 0n,
        });
        return OK;
      }
      case 'prepare': {
        const payer = this.openBook(command.payer, command.currency);
        const what = signature(
          command.payer,
          command.payee,
          command.currency,
          command.amount,
          command.payloadHash,
        );
        const swept = sweptReservationId(command.id);
        const reserve = (id: bigint) => (): void => {
          payer!.reserved += command.amount;
          this.reservations.set(id, {
            kind: 'transfer',
            payer: command.payer,
            payee: command.payee,
            currency: command.currency,
            amount: command.amount,
            expiresAtMs: this.now() + command.timeoutSeconds * 1000,
            state: 'reserved',
          });
          this.expiring.add(id);
          // Created only where its sweeps paid both debts: CAP stays open (decision 0008).
          this.capsClosed.delete(bookKey(command.payer, command.currency));
        };
        // A debtor's prepare was refused first under the transfer id, which that burnt, and made
        // its reservation under another: a retry is told by that one.
        const made = this.applied.get(swept);
        if (made !== undefined && this.poisoned.get(command.id) !== undefined)
          return refused(sameDigest(made, what) ? 'exists' : 'modified');
        const debtor =
          payer !== undefined &&
          payer.active &&
          this.capsClosed.has(bookKey(command.payer, command.currency)) &&
          this.applied.get(command.id) === undefined &&
          this.poisoned.get(command.id) === undefined;
        // One event, the pending POSITION → CAP of the payer: its accounts, its liquidity, its cap.
        const check = (): LedgerRefusal | undefined =>
          accountRefusal(payer) ??
          liquidityRefusal(payer!, command.amount) ??
          limitRefusal(payer!, command.amount);
        if (!debtor)
          return this.chain(what, [{ id: command.id, check, reusable: true }], reserve(command.id));
        // The debtor's CAP is closed: its first try burns the transfer id, its chain sweeps first.
        this.poisoned.set(command.id, POISONED);
        return this.chain(what, [{ id: swept, check, reusable: true }], reserve(swept));
      }
      case 'commit':
      case 'abort': {
        const post = command.kind === 'commit';
        // A dependent transfer's FX conversion first, in the same chain: both or neither.
        // Each under the id it was made with: a debtor's took another.
        const reservations: SettledReservation[] = [
          ...(command.linked === undefined ? [] : [command.linked]),
          command,
        ].map((r) => ({ ...r, id: this.reservationIdOf(r.id) }));
        const finishes = reservations.map((reservation) => ({
          reservation,
          found: this.reservation(reservation.id),
          payer: this.openBook(reservation.payer, reservation.currency),
          payee: this.openBook(reservation.payee, reservation.currency),
        }));
        const ownFinish = derivedTransferId(
          this.reservationIdOf(command.id),
          post ? 'post' : 'void',
        );
        const events = finishes.flatMap(({ reservation, found, payer, payee }): ChainEvent[] => [
          // Voids pass closed accounts; posts do not.
          {
            id: derivedTransferId(reservation.id, post ? 'post' : 'void'),
            check: () =>
              resolvable(found, 'transfer', reservation) ??
              (post ? accountRefusal(payer) : undefined),
            // Each finish is remembered by its own reservation: a linked conversion's, finished
            // here, is a retry of a later finish of the conversion alone, and the reverse.
            reusable: true,
            terms: terms(reservation),
          },
          // A commit's receipt credits the payee's POSITION: a new id every try.
          ...(post ? [{ check: () => accountRefusal(payee) }] : []),
        ]);
        // A GROSS commit's settling legs for each reservation, in its own currency, after every
        // post: the TigerBeetle chain's order, so the same event refuses first.
        if (command.kind === 'commit')
          events.push(...reservations.flatMap((reservation) => this.settlementEvents(reservation)));
        // A retry is told by the command's own finish: where only its linked conversion's was
        // made (finished alone, or with another transfer), the conversion's check refuses it as
        // that left it (already_committed, already_aborted), as TigerBeetle answers.
        return this.chain(
          terms(command),
          events,
          () => {
            for (const { reservation, found, payer, payee } of finishes) {
              // Resolvable: still open.
              const open = found as Reservation;
              payer!.reserved -= open.amount;
              if (post) {
                payer!.position += open.amount;
                payee!.position -= open.amount;
              }
              this.retire(reservation.id, open, post ? 'committed' : 'aborted');
            }
            if (command.kind === 'commit')
              for (const { reservation, payer, payee } of finishes)
                this.settle(reservation, payer!, payee!);
          },
          events.find((event) => event.id === ownFinish),
        );
      }
      case 'fundsIn': {
        const book = this.openBook(command.participant, command.currency);
        return this.chain(
          signature('in', command.participant, command.currency, command.amount),
          [{ id: command.id, check: () => accountRefusal(book) }],
          () => {
            book!.liquidity += command.amount;
          },
        );
      }
      case 'fundsOutReserve': {
        const book = this.openBook(command.participant, command.currency);
        return this.chain(
          signature('out', command.participant, command.currency, command.amount),
          [
            { id: derivedTransferId(command.id, 'sweep'), check: () => accountRefusal(book) },
            {
              id: command.id,
              check: () => liquidityRefusal(book!, command.amount),
              reusable: true,
            },
          ],
          () => {
            book!.fundsOutReserved += command.amount;
            this.reservations.set(command.id, {
              kind: 'fundsOut',
              payer: command.participant,
              payee: command.participant,
              currency: command.currency,
              amount: command.amount,
              expiresAtMs: undefined,
              state: 'reserved',
            });
          },
        );
      }
      case 'fundsOutCommit':
      case 'fundsOutAbort': {
        const post = command.kind === 'fundsOutCommit';
        const found = this.reservation(command.id);
        const book = this.openBook(command.participant, command.currency);
        return this.chain(
          signature('out', command.participant, command.currency, command.amount),
          [
            {
              id:
                command.kind === 'fundsOutCommit'
                  ? fundsOutPostId(command.id, command.attempt ?? 0)
                  : derivedTransferId(command.id, 'void'),
              check: () =>
                resolvable(found, 'fundsOut', {
                  payer: command.participant,
                  payee: command.participant,
                  currency: command.currency,
                  amount: command.amount,
                }) ?? (post && !book!.active ? 'inactive' : undefined),
            },
          ],
          () => {
            // Resolvable: still open.
            const open = found as Reservation;
            book!.fundsOutReserved -= open.amount;
            if (post) book!.liquidity -= open.amount;
            this.retire(command.id, open, post ? 'committed' : 'aborted');
          },
        );
      }
      case 'adjustNdc': {
        if (command.delta === 0n) return OK;
        const book = this.openBook(command.participant, command.currency);
        // Never refused for want of headroom: a cap below what is in use only stops new debits.
        return this.chain(
          signature('ndc', command.participant, command.currency, command.delta),
          [
            {
              id: command.id,
              check: () =>
                book === undefined || !this.hubs.has(command.currency) ? 'not_found' : undefined,
            },
          ],
          () => {
            book!.netDebitCap += command.delta;
            this.capMoved(command, command.delta < 0n);
          },
        );
      }
      case 'closeWindow':
        // The NET commits since the currency's previous cut become this window's.
        return this.chain(
          signature('cut', command.window, command.currency),
          [
            {
              id: windowCutId(command.window, command.currency),
              check: () => (this.hubs.has(command.currency) ? undefined : 'not_found'),
            },
          ],
          () => {
            const nets = this.uncutNets.get(command.currency) ?? new Map<string, WindowNet>();
            for (const [participant, net] of nets)
              this.cutNets.set(windowKey(command.window, participant, command.currency), net);
            this.cuts.set(cutKey(command.window, command.currency), nets.size > 0);
            this.uncutNets.delete(command.currency);
            this.latestCut = command.window;
            this.grossSinceCut.delete(command.currency);
          },
        );
      case 'decideSettlement':
        // One id per settlement: the same decision again is `exists`, the other `modified`, as
        // TigerBeetle answers (exists_with_different_user_data_32); it moves nothing.
        return this.chain(
          signature('decision', command.currency, command.decision),
          [
            {
              id: command.id,
              check: () => (this.hubs.has(command.currency) ? undefined : 'not_found'),
            },
          ],
          () => undefined,
        );
      case 'adjustPosition': {
        if (command.amount === 0n) return OK;
        const book = this.openBook(command.participant, command.currency);
        // As in central-ledger, a position owed from the start needs no liquidity or cap to cover
        // it.
        return this.chain(
          signature('initial', command.participant, command.currency, command.amount),
          command.amount > 0n
            ? [
                // Booked on the debt account first; the sweep then meets the POSITION account.
                {
                  id: command.id,
                  check: () =>
                    book === undefined || !this.hubs.has(command.currency)
                      ? 'not_found'
                      : undefined,
                },
                {
                  id: derivedTransferId(command.id, 'sweep'),
                  check: () => accountRefusal(book),
                  reusable: true,
                },
              ]
            : [
                {
                  id: command.id,
                  check: () =>
                    !this.hubs.has(command.currency) ? 'not_found' : accountRefusal(book),
                },
              ],
          () => {
            book!.position += command.amount;
            this.hubMultilateral.set(
              command.currency,
              (this.hubMultilateral.get(command.currency) ?? 0n) - command.amount,
            );
            this.capMoved(command, command.amount > 0n);
          },
        );
      }
      case 'setActive': {
        const book = this.openBook(command.participant, command.currency);
        if (book !== undefined && book.active === command.active) return OK;
        return this.chain(
          signature('active', command.participant, command.currency, command.active),
          [{ id: command.id, check: () => (book === undefined ? 'not_found' : undefined) }],
          () => {
            book!.active = command.active;
          },
        );
      }
    }
  }

  /**
   * Applies a command the way TigerBeetle applies its linked chain of events: a retry of the
   * same command is `exists` and a different command under a used id `modified`; then each
   * event in turn is refused if its id was refused before, or if its check fails, which
   * poisons that event's id (and only that one) for good; only when every event passes does
   * the change happen. `key`: the event whose id tells a retry, the first unless given.
   */
  private chain(
    what: string,
    events: ChainEvent[],
    change: () => void,
    key: ChainEvent = events[0]!,
  ): LedgerOutcome {
    if (key.id === undefined)
      throw new Error(`a chain's key event must have an id that is derived (${what})`);
    const seen = this.applied.get(key.id);
    if (seen !== undefined)
      return refused(sameDigest(seen, key.terms ?? what) ? 'exists' : 'modified');
    for (const event of events) {
      // Another command's id on a later event (a prepare under a funds in's id): TigerBeetle finds
      // it existing with other fields. The same terms go on: a linked conversion finished before.
      const other =
        event === key || event.id === undefined ? undefined : this.applied.get(event.id);
      if (other !== undefined && !sameDigest(other, event.terms ?? what))
        return refused('modified');
      if (event.id !== undefined && this.poisoned.get(event.id) !== undefined)
        return refused('failed_before');
      const refusal = event.check();
      if (refusal !== undefined) {
        if (event.id !== undefined && POISONING.has(refusal)) this.poisoned.set(event.id, POISONED);
        return refused(refusal);
      }
    }
    change();
    events.forEach((event, i) => {
      if (event.id !== undefined && (i === 0 || event.reusable === true))
        this.applied.set(event.id, digest64(event.terms ?? what));
    });
    return OK;
  }

  /**
   * After an admin move of a participant's cap or position: one that books a debt, or meets a
   * closed CAP, leaves CAP closed where a debt is left after its sweeps or the participant is
   * deactivated, open where none is (the TigerBeetle adapter reopens it then); any other leaves it
   * as it was.
   */
  private capMoved(owner: { participant: string; currency: string }, booksDebt: boolean): void {
    const key = bookKey(owner.participant, owner.currency);
    if (!booksDebt && !this.capsClosed.has(key)) return;
    const book = this.books.get(key)!;
    // Deactivated: its liquidity debt cannot be swept, its CAP is left closed.
    if (!book.active) {
      this.capsClosed.add(key);
      return;
    }
    const owes =
      book.liquidity - book.position - book.reserved - book.fundsOutReserved < 0n ||
      book.netDebitCap - book.position - book.reserved < 0n;
    if (owes) this.capsClosed.add(key);
    else this.capsClosed.delete(key);
  }

  /** The id a transfer's reservation was made under: its own, or a debtor's. */
  private reservationIdOf(transferId: bigint): bigint {
    if (this.reservation(transferId) !== undefined) return transferId;
    const swept = sweptReservationId(transferId);
    return this.reservation(swept) !== undefined ? swept : transferId;
  }

  /** The reservation under `id`, open or finished. */
  private reservation(id: bigint): Reservation | FinishedReservation | undefined {
    const open = this.reservations.get(id);
    if (open !== undefined) return open;
    const finished = this.finished.get(id);
    if (finished === undefined) return undefined;
    const code = finished[0]!;
    return {
      kind: code > FUNDS_OUT ? 'fundsOut' : 'transfer',
      state: FINISHED_STATES[(code % FUNDS_OUT) - 1]!,
      terms: finished.subarray(1, 3),
      finishedAtS: finished[3]!,
    };
  }

  /**
   * A reservation posted, voided or expired leaves memory but for its id, state, terms and when.
   */
  private retire(id: bigint, reservation: Reservation, state: FinishedReservation['state']): void {
    const code =
      1 + FINISHED_STATES.indexOf(state) + (reservation.kind === 'fundsOut' ? FUNDS_OUT : 0);
    this.finished.set(id, [code, ...digest64(terms(reservation)), Math.ceil(this.now() / 1000)]);
    this.reservations.delete(id);
    this.expiring.delete(id);
  }

  /** A GROSS commit's settling leg (no check: the post just credited what it debits). */
  private settlementEvents(command: SettledReservation): ChainEvent[] {
    if (command.gross !== true) return [];
    return [{ id: derivedTransferId(command.id, 'gross'), check: () => undefined, reusable: true }];
  }

  /**
   * A GROSS commit settles at once: liquidity moves, positions are back where they were before
   * the prepare. A NET one lands in the window not yet cut in its currency.
   */
  private settle(command: SettledReservation, payer: Book, payee: Book): void {
    if (command.gross === true) {
      payer.liquidity -= command.amount;
      payer.position -= command.amount;
      payee.liquidity += command.amount;
      payee.position += command.amount;
      this.grossSinceCut.add(command.currency);
      return;
    }
    let nets = this.uncutNets.get(command.currency);
    if (nets === undefined) this.uncutNets.set(command.currency, (nets = new Map()));
    const add = (participant: string, delta: bigint): void => {
      let net = nets.get(participant);
      if (net === undefined) nets.set(participant, (net = { net: 0n, volume: 0n }));
      net.net += delta;
      net.volume += command.amount;
    };
    add(command.payer, command.amount);
    add(command.payee, -command.amount);
  }

  private openBook(participant: string, currency: string): Book | undefined {
    return this.books.get(bookKey(participant, currency));
  }

  /**
   * Releases every reservation whose timeout has passed, as the TigerBeetle cluster does by itself.
   */
  private expireDue(): void {
    const now = this.now();
    for (const id of this.expiring) {
      const reservation = this.reservations.get(id)!;
      if (reservation.expiresAtMs === undefined || reservation.expiresAtMs > now) continue;
      this.openBook(reservation.payer, reservation.currency)!.reserved -= reservation.amount;
      this.retire(id, reservation, 'expired');
    }
  }
}

function bookKey(participant: string, currency: string): string {
  return `${participant}\u0000${currency}`;
}

/** A participant's key in a settlement window's nets. */
function windowKey(window: number, participant: string, currency: string): string {
  return `${window}\u0000${participant}\u0000${currency}`;
}

/** A window's cut's key in a currency. */
function cutKey(window: number, currency: string): string {
  return `${window}\u0000${currency}`;
}
