/**
 * The linked chains of TigerBeetle transfers the ledger commands become (docs/account-model.md
 * explains each), built without touching the cluster.
 */
import {
  AccountFlags,
  TransferFlags,
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
  ledgersOf,
  type AccountRole,
} from './account-model';
import { account, transfer } from './tigerbeetle-records';
import { settlementLegKinds, settlementLegs, type Leg } from './tigerbeetle-settlement';
import type { CommitSettlement, LedgerCommand, Reservation } from '../ports/ledger';

/** What the events of one command stand for, to read their statuses back. */
export interface Chain {
  legs: Leg[];
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

/** The post (void) events of a reservation's two pending transfers, POSITION then NDC. */
function finishLegs(
  reservation: Reservation,
  post: boolean,
  reserved: ReservedAmounts,
): Transfer[] {
  const { money, limit } = ledgersOf(reservation.currency);
  // A void for less than the reservation is refused by TigerBeetle itself
  // (pending_transfer_has_different_amount).
  const amount = post ? postAmount(reservation, reserved) : reservation.amount;
  const flags = post ? TransferFlags.post_pending_transfer : TransferFlags.void_pending_transfer;
  return [
    transfer({
      id: derivedTransferId(reservation.id, post ? 'post' : 'void'),
      ledger: money,
      code: TransferCode.TRANSFER,
      debit: accountId(reservation.payer, reservation.currency, 'POSITION'),
      credit: accountId(reservation.payee, reservation.currency, 'POSITION'),
      amount,
      flags,
      pendingId: reservation.id,
    }),
    transfer({
      id: derivedTransferId(reservation.id, post ? 'post-ndc' : 'void-ndc'),
      ledger: limit,
      code: TransferCode.TRANSFER,
      debit: accountId(reservation.payer, reservation.currency, 'NDC'),
      credit: accountId(reservation.payee, reservation.currency, 'NDC'),
      amount,
      flags,
      pendingId: derivedTransferId(reservation.id, 'ndc'),
    }),
  ];
}

/**
 * The linked chain of TigerBeetle transfers one command becomes (account-model.ts explains each).
 */
export function transfersOf(
  command: Exclude<
    LedgerCommand,
    { kind: 'openHub' | 'openParticipant' | 'openWindow' | 'closeWindow' | 'setActive' }
  >,
  reserved: ReservedAmounts,
): { events: Transfer[]; chain: Chain } | 'noop' {
  const { money, limit } = ledgersOf(command.currency);
  switch (command.kind) {
    case 'prepare': {
      const reservations = [
        transfer({
          id: command.id,
          ledger: money,
          code: TransferCode.TRANSFER,
          debit: accountId(command.payer, command.currency, 'POSITION'),
          credit: accountId(command.payee, command.currency, 'POSITION'),
          amount: command.amount,
          flags: TransferFlags.pending,
        }),
        transfer({
          id: derivedTransferId(command.id, 'ndc'),
          ledger: limit,
          code: TransferCode.TRANSFER,
          debit: accountId(command.payer, command.currency, 'NDC'),
          credit: accountId(command.payee, command.currency, 'NDC'),
          amount: command.amount,
          flags: TransferFlags.pending,
        }),
      ];
      for (const reservation of reservations) {
        reservation.timeout = command.timeoutSeconds;
        reservation.user_data_128 = command.payloadHash;
      }
      const payer = { participant: command.payer, currency: command.currency };
      return chained(
        [
          sweep(derivedTransferId(command.id, 'sweep'), payer, 'position'),
          reservations[0]!,
          sweep(derivedTransferId(command.id, 'sweep-ndc'), payer, 'ndc'),
          reservations[1]!,
        ],
        ['position', 'position', 'ndc', 'ndc'],
        true,
      );
    }
    case 'commit':
    case 'abort': {
      const post = command.kind === 'commit';
      // A dependent transfer's FX conversion is finished first, in the same chain: both or neither;
      // a commit's settlement legs (window or GROSS) follow for each, in its own currency.
      const reservations: (Reservation & { settlement?: CommitSettlement })[] = [
        ...(command.linked === undefined ? [] : [command.linked]),
        command,
      ];
      const events: Transfer[] = [];
      const legs: Leg[] = [];
      for (const reservation of reservations) {
        events.push(...finishLegs(reservation, post, reserved));
        legs.push('position', 'ndc');
      }
      if (command.kind === 'commit') {
        for (const reservation of reservations) {
          if (reservation.settlement === undefined) continue;
          events.push(...settlementLegs(reservation, reservation.settlement));
          legs.push(...settlementLegKinds(reservation.settlement));
        }
      }
      const built = chained(events, legs);
      if (command.linked !== undefined)
        built.chain.linked = {
          ownAt: 2,
          finishedAs: post ? 'already_committed' : 'already_aborted',
        };
      return built;
    }
    case 'fundsIn':
      return chained(
        [
          transfer({
            id: command.id,
            ledger: money,
            code: TransferCode.FUNDS_IN,
            debit: participantAccount(command, 'SETTLEMENT'),
            credit: participantAccount(command, 'POSITION'),
            amount: command.amount,
          }),
        ],
        ['position'],
      );
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
          ['position', 'position'],
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
      return chained([transfer({ ...fundsOut, ...finish, pendingId: command.id })], ['position']);
    }
    case 'adjustNdc': {
      if (command.delta === 0n) return 'noop';
      const hubNdc = accountId(HUB, command.currency, 'HUB_NDC');
      if (command.delta > 0n)
        return chained(
          [
            transfer({
              id: command.id,
              ledger: limit,
              code: TransferCode.NDC_ADJUST,
              debit: hubNdc,
              credit: participantAccount(command, 'NDC'),
              amount: command.delta,
            }),
          ],
          ['ndc'],
        );
      // Lowering is never refused: what the NDC account cannot give back stays as NDC debt.
      return chained(
        uncoveredDebit({
          id: command.id,
          sweepId: derivedTransferId(command.id, 'sweep-ndc'),
          owner: command,
          leg: 'ndc',
          credit: hubNdc,
          amount: -command.delta,
          code: TransferCode.NDC_ADJUST,
        }),
        ['ndc', 'ndc'],
      );
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
      return chained([decision], ['position']);
    }
    case 'adjustPosition': {
      if (command.amount === 0n) return 'noop';
      const code =
        command.purpose === 'initial' ? TransferCode.INITIAL_POSITION : TransferCode.SETTLEMENT;
      const hubSettlement = accountId(HUB, command.currency, 'HUB_MULTILATERAL_SETTLEMENT');
      const hubNdc = accountId(HUB, command.currency, 'HUB_NDC');
      const ndcId = derivedTransferId(command.id, 'ndc');
      if (command.amount < 0n) {
        return chained(
          [
            transfer({
              id: command.id,
              ledger: money,
              code,
              debit: hubSettlement,
              credit: participantAccount(command, 'POSITION'),
              amount: -command.amount,
            }),
            transfer({
              id: ndcId,
              ledger: limit,
              code,
              debit: hubNdc,
              credit: participantAccount(command, 'NDC'),
              amount: -command.amount,
            }),
          ],
          ['position', 'ndc'],
        );
      }
      // As in central-ledger, a position owed from the start needs no liquidity or cap to cover it.
      return chained(
        [
          ...uncoveredDebit({
            id: command.id,
            sweepId: derivedTransferId(command.id, 'sweep'),
            owner: command,
            leg: 'position',
            credit: hubSettlement,
            amount: command.amount,
            code,
          }),
          ...uncoveredDebit({
            id: ndcId,
            sweepId: derivedTransferId(command.id, 'sweep-ndc'),
            owner: command,
            leg: 'ndc',
            credit: hubNdc,
            amount: command.amount,
            code,
          }),
        ],
        ['position', 'position', 'ndc', 'ndc'],
      );
    }
  }
}

export function openAccounts(
  command: Extract<LedgerCommand, { kind: 'openHub' | 'openParticipant' }>,
): Account[] {
  const { money, limit } = ledgersOf(command.currency);
  const owner = command.kind === 'openHub' ? HUB : command.participant;
  const roles: [AccountRole, number, number][] =
    command.kind === 'openHub'
      ? [
          ['HUB_RECONCILIATION', money, AccountFlags.none],
          ['HUB_MULTILATERAL_SETTLEMENT', money, AccountFlags.none],
          ['HUB_NDC', limit, AccountFlags.none],
        ]
      : [
          ['SETTLEMENT', money, AccountFlags.none],
          ['POSITION', money, AccountFlags.debits_must_not_exceed_credits],
          ['NDC', limit, AccountFlags.debits_must_not_exceed_credits],
          // A chain of their own: participants opened before debt accounts existed get them too.
          ['DEBT', money, AccountFlags.credits_must_not_exceed_debits],
          ['NDC_DEBT', limit, AccountFlags.credits_must_not_exceed_debits],
        ];
  return roles.map(([role, ledger, flags], i) =>
    account({
      id: accountId(owner, command.currency, role),
      ledger,
      code: AccountCode[role],
      flags: flags | (i < roles.length - 1 && role !== 'NDC' ? AccountFlags.linked : 0),
    }),
  );
}

/**
 * A balancing repayment of the participant's debt from its POSITION (NDC) account: as much as
 * the account can give and the debt claims, usually nothing. It opens every chain that debits
 * the account against its cover, so a debt is always repaid before new money is spent.
 */
function sweep(id: bigint, owner: { participant: string; currency: string }, leg: Leg): Transfer {
  const { money, limit } = ledgersOf(owner.currency);
  const [from, debt] =
    leg === 'position' ? (['POSITION', 'DEBT'] as const) : (['NDC', 'NDC_DEBT'] as const);
  return transfer({
    id,
    ledger: leg === 'position' ? money : limit,
    code: TransferCode.SWEEP,
    debit: participantAccount(owner, from),
    credit: participantAccount(owner, debt),
    amount: AMOUNT_MAX,
    flags: TransferFlags.balancing_debit | TransferFlags.balancing_credit,
  });
}

/**
 * A debit that must not be refused for want of cover: booked on the debt account, then swept,
 * so the POSITION (NDC) account gives what it has and the debt keeps the rest.
 */
function uncoveredDebit(debit: {
  id: bigint;
  sweepId: bigint;
  owner: { participant: string; currency: string };
  leg: Leg;
  /** The id of the account credited. */
  credit: bigint;
  amount: bigint;
  code: number;
}): Transfer[] {
  const { id, sweepId, owner, leg, credit, amount, code } = debit;
  const { money, limit } = ledgersOf(owner.currency);
  const debt = participantAccount(owner, leg === 'position' ? 'DEBT' : 'NDC_DEBT');
  return [
    transfer({ id, ledger: leg === 'position' ? money : limit, code, debit: debt, credit, amount }),
    sweep(sweepId, owner, leg),
  ];
}

export function chained(
  events: Transfer[],
  legs: Leg[],
  compareOnRetry = false,
): { events: Transfer[]; chain: Chain } {
  if (events.length !== legs.length)
    throw new Error(`a chain of ${events.length} events names ${legs.length} legs`);
  if (events.length > MAX_EVENTS_PER_COMMAND)
    throw new Error(`a command of ${events.length} events, over ${MAX_EVENTS_PER_COMMAND}`);
  for (let i = 0; i < events.length - 1; i++) events[i]!.flags |= TransferFlags.linked;
  return { events, chain: { legs, compareOnRetry } };
}

export function participantAccount(
  command: { participant: string; currency: string },
  role: AccountRole,
): bigint {
  return accountId(command.participant, command.currency, role);
}
