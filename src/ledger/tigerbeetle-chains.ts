/**
 * The linked chains of TigerBeetle transfers the ledger commands become (docs/account-model.md
 * explains each), built without touching the cluster.
 */
import {
  AccountFlags,
  TransferFlags,
  id as timeOrderedId,
  type Account,
  type CreateTransferStatus,
  type Transfer,
} from 'tigerbeetle-node';
import { MAX_EVENTS_PER_COMMAND } from '../ports/ledger';
import {
  AccountCode,
  HUB,
  SettlementDecisionCode,
  TransferCode,
  accountId,
  derivedTransferId,
  fundsOutPostId,
  ledgerOf,
  payeeTag,
  windowCutId,
  type AccountRole,
} from './account-model';
import { account, transfer } from './tigerbeetle-records';
import type { LedgerCommand, Reservation } from '../ports/ledger';

/** What the events of one command mean, to read their statuses back. */
export interface Chain {
  /**
   * A retried prepare or funds out reserve: its chain opens with a balancing sweep (whose
   * recorded amount is what it actually moved; a prepare's relative timeout is recomputed too),
   * so TigerBeetle's first reported difference, or a plain `exists` of the sweep, says nothing
   * about the reservation: compare.
   */
  compareOnRetry: boolean;
  /**
   * A dependent transfer's commit or abort: its own post (void) is the event at `ownAt`, after
   * its FX conversion's. An `exists` tells a retry only where the own one exists; the
   * conversion's alone means another command finished the conversion, leaving it `finishedAs`.
   */
  linked?: { ownAt: number; finishedAs: 'already_committed' | 'already_aborted' };
  /**
   * The status of a failed event that means the command's end state holds already: a
   * deactivation meeting a closed account, a reactivation a voided closing transfer. OK.
   */
  done?: CreateTransferStatus;
}

/** The largest amount a balancing transfer may move: it moves what the balances allow. */
export const AMOUNT_MAX = (1n << 128n) - 1n;

/**
 * The amounts of the pending transfers posts are about to name (by pending id, as the cluster
 * stored them): TigerBeetle posts less than a reservation as a partial post, releasing the rest,
 * so a post is only sent for its amount once that is known to be the reservation's.
 */
export type ReservedAmounts = ReadonlyMap<bigint, bigint>;

/**
 * The reservations a command posts whose amounts are looked up first (see postAmount): a funds
 * out's, an admin command that can afford the round trip. A transfer commit's is not: its amount
 * is the prepare's record's, which the ledger confirmed (a prepare retried with another amount is
 * `modified`), and a lookup before every batch of commits would cost each a round trip through
 * the replicas, on the hot path; the amount of a commit is the caller's to get right
 * (LedgerCommand 'commit').
 */
export function postedReservations(command: LedgerCommand): bigint[] {
  return command.kind === 'fundsOutCommit' ? [command.id] : [];
}

/**
 * What a post sends: the amount named, where it is the reservation's (or the reservation is not
 * there: TigerBeetle answers not_found). Another amount is sent as more than any reservation
 * holds, so TigerBeetle refuses it (exceeds_pending_transfer_amount: `invalid`, as the embedded
 * ledger answers) in its own order of checks: a post already made is still `exists`/`modified`.
 */
function postAmount(
  reservation: { id: bigint; amount: bigint },
  reserved: ReservedAmounts,
): bigint {
  const stored = reserved.get(reservation.id);
  return stored === undefined || stored === reservation.amount
    ? reservation.amount
    : AMOUNT_MAX - 1n;
}

/**
 * How a reservation is finished where the plain way was refused for good: made by a debtor's
 * chain (under sweptReservationId), and posted under the debtor's post id (`postSwept`: the plain
 * one was burnt by a refusal for the payer's closed CAP). By transfer id.
 */
export type FinishForms = ReadonlyMap<bigint, { reservation: bigint; postSwept: boolean }>;

/** The post (void) of a reservation's pending transfer, POSITION(payer) → CAP(payer). */
function finishEvent(
  reservation: Reservation,
  post: boolean,
  reserved: ReservedAmounts,
  postSwept: boolean,
): Transfer {
  // A void for less than the reservation is refused by TigerBeetle itself
  // (pending_transfer_has_different_amount).
  const postId = postSwept ? 'post-swept' : 'post';
  return transfer({
    id: derivedTransferId(reservation.id, post ? postId : 'void'),
    ledger: ledgerOf(reservation.currency),
    code: TransferCode.TRANSFER,
    debit: accountId(reservation.payer, reservation.currency, 'POSITION'),
    credit: accountId(reservation.payer, reservation.currency, 'CAP'),
    amount: post ? postAmount(reservation, reserved) : reservation.amount,
    flags: post ? TransferFlags.post_pending_transfer : TransferFlags.void_pending_transfer,
    pendingId: reservation.id,
  });
}

/**
 * What a commit gives the payee: its POSITION credited (liquidity it may spend) and a CAP's
 * headroom back — the payee's own (RECEIPT), or under a GROSS model the payer's (GROSS: the
 * payer's liquidity pays at once, grossLeg).
 *
 * Its id is new and time-ordered on every try, not derived: linked after the post, it is created
 * only with it, so a retried commit fails at its post (`exists`) before a receipt could count
 * twice, and nothing ever looks a receipt up by id. Hashed ids land at random places in
 * TigerBeetle's id index; these append: the replicas' CPU per complete transfer fell ~15 % at 64
 * commands per request (bench/README "Ids that need not be derived").
 */
function receiptOf(reservation: Reservation, gross: boolean): Transfer {
  const { payer, payee, currency } = reservation;
  return transfer({
    id: timeOrderedId(),
    ledger: ledgerOf(currency),
    code: gross ? TransferCode.GROSS : TransferCode.RECEIPT,
    debit: accountId(gross ? payer : payee, currency, 'CAP'),
    credit: accountId(payee, currency, 'POSITION'),
    amount: reservation.amount,
  });
}

/**
 * A GROSS commit's settling leg: the payer's liquidity pays the payee's (the receipt gave the
 * payer's cap headroom back), so both positions are where they were. Derived from the reservation,
 * so that transferStates tells `settled` by it.
 */
function grossLeg(reservation: Reservation): Transfer {
  const { payer, payee, currency } = reservation;
  return transfer({
    id: derivedTransferId(reservation.id, 'gross'),
    ledger: ledgerOf(currency),
    code: TransferCode.GROSS,
    debit: accountId(payee, currency, 'SETTLEMENT'),
    credit: accountId(payer, currency, 'SETTLEMENT'),
    amount: reservation.amount,
  });
}

/**
 * The linked chain of TigerBeetle transfers one command becomes (account-model.ts explains each).
 */
export function transfersOf(
  command: Exclude<LedgerCommand, { kind: 'openHub' | 'openParticipant' | 'setActive' }>,
  reserved: ReservedAmounts,
  /** Reservations to finish otherwise than plainly (FinishForms). */
  forms?: FinishForms,
): { events: Transfer[]; chain: Chain } | 'noop' {
  const money = ledgerOf(command.currency);
  switch (command.kind) {
    case 'prepare':
      // One event: a debtor's CAP is closed, so the ledger refuses it for a participant that owes
      // and the adapter sends the debtor's chain instead (tigerbeetle-debtors.ts).
      return chained([pendingOf(command, command.id)], true);
    case 'commit':
    case 'abort': {
      const post = command.kind === 'commit';
      // A dependent transfer's FX conversion is finished first, in the same chain: both or neither;
      // a GROSS commit's settling legs follow for each, in its own currency.
      const reservations: (Reservation & { gross?: boolean })[] = [
        ...(command.linked === undefined ? [] : [command.linked]),
        command,
      ];
      const events: Transfer[] = [];
      // Each under the id it was made with (a debtor's took another), so that its GROSS leg's
      // id, derived from it, is found with it.
      const finishing = reservations.map((plain) => ({
        ...plain,
        id: forms?.get(plain.id)?.reservation ?? plain.id,
        postSwept: forms?.get(plain.id)?.postSwept ?? false,
      }));
      for (const reservation of finishing) {
        events.push(finishEvent(reservation, post, reserved, reservation.postSwept));
        if (post) events.push(receiptOf(reservation, reservation.gross === true));
      }
      if (post) events.push(...finishing.filter((r) => r.gross === true).map(grossLeg));
      const built = chained(events);
      if (command.linked !== undefined)
        built.chain.linked = {
          ownAt: post ? 2 : 1,
          finishedAs: post ? 'already_committed' : 'already_aborted',
        };
      return built;
    }
    case 'fundsIn':
      return chained([
        transfer({
          id: command.id,
          ledger: money,
          code: TransferCode.FUNDS_IN,
          debit: participantAccount(command, 'SETTLEMENT'),
          credit: participantAccount(command, 'POSITION'),
          amount: command.amount,
        }),
      ]);
    case 'fundsOutReserve':
    case 'fundsOutCommit':
    case 'fundsOutAbort': {
      // The parts every funds out event shares: POSITION to SETTLEMENT.
      const fundsOut = {
        ledger: money,
        code: TransferCode.FUNDS_OUT,
        debit: participantAccount(command, 'POSITION'),
        credit: participantAccount(command, 'SETTLEMENT'),
      };
      if (command.kind === 'fundsOutReserve') {
        const reservation = transfer({
          ...fundsOut,
          id: command.id,
          amount: command.amount,
          flags: TransferFlags.pending,
        });
        return chained(
          [sweep(derivedTransferId(command.id, 'sweep'), command, 'position'), reservation],
          true,
        );
      }
      const finish =
        command.kind === 'fundsOutCommit'
          ? {
              id: fundsOutPostId(command.id, command.attempt ?? 0),
              amount: postAmount(command, reserved),
              flags: TransferFlags.post_pending_transfer,
            }
          : {
              id: derivedTransferId(command.id, 'void'),
              amount: command.amount,
              flags: TransferFlags.void_pending_transfer,
            };
      return chained([transfer({ ...fundsOut, ...finish, pendingId: command.id })]);
    }
    case 'adjustNdc': {
      if (command.delta === 0n) return 'noop';
      if (command.delta > 0n)
        return chained([
          capGuard(command),
          transfer({
            id: command.id,
            ledger: money,
            code: TransferCode.NDC_ADJUST,
            debit: participantAccount(command, 'CAP'),
            credit: accountId(HUB, command.currency, 'HUB_CAP'),
            amount: command.delta,
          }),
        ]);
      // Lowering is never refused: what CAP cannot give back stays as cap debt, and CAP closes.
      return chained([
        capGuard(command),
        ...uncoveredDebit({
          id: command.id,
          sweepId: derivedTransferId(command.id, 'sweep-cap'),
          owner: command,
          side: 'cap',
          amount: -command.delta,
          code: TransferCode.NDC_ADJUST,
        }),
        capClosing(command),
      ]);
    }
    case 'closeWindow': {
      // Amount 0: it moves nothing; its timestamp divides the windows (tigerbeetle-windows.ts).
      const cut = transfer({
        id: windowCutId(command.window, command.currency),
        ledger: money,
        code: TransferCode.WINDOW_CUT,
        debit: accountId(HUB, command.currency, 'HUB_RECONCILIATION'),
        credit: accountId(HUB, command.currency, 'HUB_MULTILATERAL_SETTLEMENT'),
        amount: 0n,
      });
      cut.user_data_64 = BigInt(command.window);
      return chained([cut]);
    }
    case 'decideSettlement': {
      // Amount 0 (allowed since TigerBeetle 0.16): it moves nothing, its id and user_data_32 are
      // the decision.
      const decision = transfer({
        id: command.id,
        ledger: money,
        code: TransferCode.SETTLEMENT_DECISION,
        debit: accountId(HUB, command.currency, 'HUB_RECONCILIATION'),
        credit: accountId(HUB, command.currency, 'HUB_MULTILATERAL_SETTLEMENT'),
        amount: 0n,
      });
      decision.user_data_32 = SettlementDecisionCode[command.decision];
      return chained([decision]);
    }
    case 'adjustPosition': {
      if (command.amount === 0n) return 'noop';
      const code =
        command.purpose === 'initial' ? TransferCode.INITIAL_POSITION : TransferCode.SETTLEMENT;
      const capId = derivedTransferId(command.id, 'cap');
      if (command.amount < 0n) {
        return chained([
          capGuard(command),
          transfer({
            id: command.id,
            ledger: money,
            code,
            debit: accountId(HUB, command.currency, 'HUB_MULTILATERAL_SETTLEMENT'),
            credit: participantAccount(command, 'POSITION'),
            amount: -command.amount,
          }),
          transfer({
            id: capId,
            ledger: money,
            code,
            debit: participantAccount(command, 'CAP'),
            credit: accountId(HUB, command.currency, 'HUB_CAP'),
            amount: -command.amount,
          }),
        ]);
      }
      // As in central-ledger, a position owed from the start needs no liquidity or cap to cover it;
      // CAP closes, as after every booking of a debt (the adapter reopens it where none was left).
      const booking = { owner: command, amount: command.amount, code };
      return chained([
        capGuard(command),
        ...uncoveredDebit({
          ...booking,
          id: command.id,
          sweepId: derivedTransferId(command.id, 'sweep'),
          side: 'position',
        }),
        ...uncoveredDebit({
          ...booking,
          id: capId,
          sweepId: derivedTransferId(command.id, 'sweep-cap'),
          side: 'cap',
        }),
        capClosing(command),
      ]);
    }
  }
}

export function openAccounts(
  command: Extract<LedgerCommand, { kind: 'openHub' | 'openParticipant' }>,
): Account[] {
  const money = ledgerOf(command.currency);
  const owner = command.kind === 'openHub' ? HUB : command.participant;
  const roles: [AccountRole, number][] =
    command.kind === 'openHub'
      ? [
          ['HUB_RECONCILIATION', AccountFlags.none],
          ['HUB_MULTILATERAL_SETTLEMENT', AccountFlags.none],
          ['HUB_CAP', AccountFlags.none],
        ]
      : [
          ['SETTLEMENT', AccountFlags.none],
          ['POSITION', AccountFlags.debits_must_not_exceed_credits],
          // Its balance history gives the settlement windows' nets.
          ['CAP', AccountFlags.credits_must_not_exceed_debits | AccountFlags.history],
          ['DEBT', AccountFlags.credits_must_not_exceed_debits],
          ['CAP_DEBT', AccountFlags.debits_must_not_exceed_credits],
        ];
  return roles.map(([role, flags], i) =>
    account({
      id: accountId(owner, command.currency, role),
      ledger: money,
      code: AccountCode[role],
      flags: flags | (i < roles.length - 1 ? AccountFlags.linked : 0),
    }),
  );
}

/**
 * A reservation: the pending POSITION(payer) → CAP(payer) under `id` (the transfer id, or a
 * debtor's: sweptReservationId), its payee tagged in user_data_64.
 */
export function pendingOf(
  command: Extract<LedgerCommand, { kind: 'prepare' }>,
  id: bigint,
): Transfer {
  const reservation = transfer({
    id,
    ledger: ledgerOf(command.currency),
    code: TransferCode.TRANSFER,
    debit: accountId(command.payer, command.currency, 'POSITION'),
    credit: accountId(command.payer, command.currency, 'CAP'),
    amount: command.amount,
    flags: TransferFlags.pending,
  });
  reservation.timeout = command.timeoutSeconds;
  reservation.user_data_128 = command.payloadHash;
  reservation.user_data_64 = payeeTag(command.payee, command.currency);
  return reservation;
}

/**
 * An event of amount 0 from the participant's CAP to the hub's, under a new id every try: the
 * closing of CAP, its reopening (the closing's void) and the guard of admin moves.
 */
export function capToHub(
  owner: { participant: string; currency: string },
  event: { code: number; flags?: number; pendingId?: bigint },
): Transfer {
  return transfer({
    id: timeOrderedId(),
    ledger: ledgerOf(owner.currency),
    debit: participantAccount(owner, 'CAP'),
    credit: accountId(HUB, owner.currency, 'HUB_CAP'),
    amount: 0n,
    ...event,
  });
}

/**
 * Closes the participant's CAP: a pending closing transfer, which only its void undoes. It is
 * found by its code (tigerbeetle-debtors.ts).
 */
export function capClosing(owner: { participant: string; currency: string }): Transfer {
  return capToHub(owner, {
    code: TransferCode.CLOSE,
    flags: TransferFlags.pending | TransferFlags.closing_debit,
  });
}

/** TransferCode.CAP_GUARD's event: a new id every try, so its refusal burns nothing needed. */
function capGuard(owner: { participant: string; currency: string }): Transfer {
  return capToHub(owner, { code: TransferCode.CAP_GUARD });
}

/** Which debt: the liquidity's (POSITION, DEBT) or the cap's (CAP, CAP_DEBT). */
export type DebtSide = 'position' | 'cap';

/**
 * A balancing repayment of the participant's debt from its POSITION (CAP) account: as much as
 * the account can give and the debt claims, usually nothing. It opens every chain that debits
 * the account against its cover, so a debt is always repaid before new money is spent.
 */
export function sweep(
  id: bigint,
  owner: { participant: string; currency: string },
  side: DebtSide,
): Transfer {
  const [debit, credit] =
    side === 'position' ? (['POSITION', 'DEBT'] as const) : (['CAP_DEBT', 'CAP'] as const);
  return transfer({
    id,
    ledger: ledgerOf(owner.currency),
    code: TransferCode.SWEEP,
    debit: participantAccount(owner, debit),
    credit: participantAccount(owner, credit),
    amount: AMOUNT_MAX,
    flags: TransferFlags.balancing_debit | TransferFlags.balancing_credit,
  });
}

/**
 * A debit that must not be refused for want of cover: booked on the debt account against the
 * hub's (DEBT → HUB_MULTILATERAL_SETTLEMENT, HUB_CAP → CAP_DEBT), then swept, so the POSITION
 * (CAP) account gives what it has and the debt keeps the rest.
 */
function uncoveredDebit(debit: {
  id: bigint;
  sweepId: bigint;
  owner: { participant: string; currency: string };
  side: DebtSide;
  amount: bigint;
  code: number;
}): Transfer[] {
  const { id, sweepId, owner, side, amount, code } = debit;
  const [debtor, hub] =
    side === 'position'
      ? [
          participantAccount(owner, 'DEBT'),
          accountId(HUB, owner.currency, 'HUB_MULTILATERAL_SETTLEMENT'),
        ]
      : [participantAccount(owner, 'CAP_DEBT'), accountId(HUB, owner.currency, 'HUB_CAP')];
  const booked =
    side === 'position' ? { debit: debtor, credit: hub } : { debit: hub, credit: debtor };
  return [
    transfer({ id, ledger: ledgerOf(owner.currency), code, ...booked, amount }),
    sweep(sweepId, owner, side),
  ];
}

/**
 * The most events a debtor's chain may hold (tigerbeetle-debtors.ts): a command's, and for each
 * of at most four parties a reopening, two sweeps and a closing.
 */
export const MAX_EVENTS_PER_DEBTOR_CHAIN = MAX_EVENTS_PER_COMMAND + 4 * 4;

export function chained(
  events: Transfer[],
  compareOnRetry = false,
  maxEvents = MAX_EVENTS_PER_COMMAND,
): { events: Transfer[]; chain: Chain } {
  if (events.length > maxEvents)
    throw new Error(`a command of ${events.length} events, over ${maxEvents}`);
  for (let i = 0; i < events.length - 1; i++) events[i]!.flags |= TransferFlags.linked;
  return { events, chain: { compareOnRetry } };
}

export function participantAccount(
  command: { participant: string; currency: string },
  role: AccountRole,
): bigint {
  return accountId(command.participant, command.currency, role);
}
