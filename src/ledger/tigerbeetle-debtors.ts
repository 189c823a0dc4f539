/**
 * Debtors' chains (docs/decisions/0008-three-event-model.md, "Debts", proofs 8–11). The chain
 * that books a debt closes the debtor's CAP, and every prepare and commit names a CAP, so a chain
 * built without the sweeps for a participant that owes is refused by the ledger itself, whoever
 * built it and however late it arrives. The adapter then sends the debtor's chain built here,
 * after one lookup of each closed CAP's closing transfer: it reopens CAP (a void, the one transfer
 * a closed account takes), does what the command does, repays what it can and closes CAP again —
 * but for a prepare, which is created only where its sweeps paid both debts and so leaves CAP open.
 */
import { TransferFlags, id as timeOrderedId, type Transfer } from 'tigerbeetle-node';
import {
  HUB,
  TransferCode,
  accountId,
  debtorTryEndId,
  debtorTryId,
  ledgerOf,
  sweptReservationId,
} from './account-model';
import {
  MAX_EVENTS_PER_DEBTOR_CHAIN,
  capClosing,
  capToHub,
  chained,
  participantAccount,
  pendingOf,
  sweep,
  type Chain,
} from './tigerbeetle-chains';
import { transfer } from './tigerbeetle-records';
import type { LedgerCommand } from '../ports/ledger';

/**
 * A participant's CAP found closed, and the closing transfer that closed it (undefined: open);
 * `active`: its POSITION is open (not deactivated), so its liquidity debt can be swept.
 */
export interface ClosedCap {
  participant: string;
  currency: string;
  closing: bigint | undefined;
  active: boolean;
}

type Built = { events: Transfer[]; chain: Chain };

/** The void of the closing transfer of a CAP: it opens CAP again. */
function capReopening(cap: ClosedCap & { closing: bigint }): Transfer {
  return capToHub(cap, {
    code: TransferCode.CLOSE,
    flags: TransferFlags.void_pending_transfer,
    pendingId: cap.closing,
  });
}

function reopenings(caps: readonly ClosedCap[]): Transfer[] {
  return caps.flatMap((cap) =>
    cap.closing === undefined ? [] : [capReopening({ ...cap, closing: cap.closing })],
  );
}

/**
 * The participant's sweeps, under new ids every try (a sweep refused for a CAP closed meanwhile
 * burns its id: the next try needs another): the cap's, and the liquidity's unless POSITION is
 * closed (deactivated), which would refuse the whole chain.
 */
function sweepsOf(cap: { participant: string; currency: string; active: boolean }): Transfer[] {
  return [
    ...(cap.active ? [sweep(timeOrderedId(), cap, 'position')] : []),
    sweep(timeOrderedId(), cap, 'cap'),
  ];
}

/**
 * A debtor's prepare: CAP reopened, both sweeps, the reservation under sweptReservationId (the
 * transfer id was burnt by the refusal of its first try).
 */
export function debtorPrepare(
  command: Extract<LedgerCommand, { kind: 'prepare' }>,
  cap: ClosedCap,
): Built {
  const events = [
    ...reopenings([cap]),
    ...sweepsOf({ ...cap, active: true }),
    pendingOf(command, sweptReservationId(command.id)),
  ];
  return chained(events);
}

/**
 * The record that a prepare's plain chain was refused for a debtor's closed CAP, written before its
 * debtor's chain is sent: the refusal burnt the transfer id as a refusal of the command's own would
 * have, and a retry (after a timeout, a stop, a chain contended in every round) must tell the two
 * apart — this one goes the debtor's way, the other stays refused. Pending (no timeout) while no
 * debtor's chain of the prepare has reached a verdict; voided (debtorTryEnd) once one was refused
 * for a reason of its own. Amount 0 between hub accounts, one id per prepare: a second writer's is
 * `exists`.
 */
export function debtorTry(command: Extract<LedgerCommand, { kind: 'prepare' }>): Transfer {
  return hubRecord(command, {
    id: debtorTryId(command.id),
    flags: TransferFlags.pending,
    pendingId: 0n,
  });
}

/** The void of a prepare's DEBTOR_TRY: its debtor's chain was refused for good. */
export function debtorTryEnd(command: Extract<LedgerCommand, { kind: 'prepare' }>): Transfer {
  return hubRecord(command, {
    id: debtorTryEndId(command.id),
    flags: TransferFlags.void_pending_transfer,
    pendingId: debtorTryId(command.id),
  });
}

function hubRecord(
  command: { currency: string },
  event: { id: bigint; flags: number; pendingId: bigint },
): Transfer {
  return transfer({
    ...event,
    ledger: ledgerOf(command.currency),
    code: TransferCode.DEBTOR_TRY,
    debit: accountId(HUB, command.currency, 'HUB_RECONCILIATION'),
    credit: accountId(HUB, command.currency, 'HUB_MULTILATERAL_SETTLEMENT'),
    amount: 0n,
  });
}

/**
 * Any other command naming a closed CAP: each reopened first; then the command's own events; then,
 * unless the command books a debt and closes CAP itself, each debtor swept and its CAP closed
 * again (a chain cannot branch on what the sweeps left).
 */
export function debtorWrapped(built: Built, caps: readonly ClosedCap[], booksDebt: boolean): Built {
  const before = reopenings(caps);
  const after = booksDebt ? [] : caps.flatMap((cap) => [...sweepsOf(cap), capClosing(cap)]);
  // Rechained: the command's last event is linked to what follows it now.
  const wrapped = chained(
    [...before, ...built.events, ...after],
    built.chain.compareOnRetry,
    MAX_EVENTS_PER_DEBTOR_CHAIN,
  );
  const { linked, done } = built.chain;
  if (linked !== undefined)
    wrapped.chain.linked = { ...linked, ownAt: linked.ownAt + before.length };
  if (done !== undefined) wrapped.chain.done = done;
  return wrapped;
}

/** The commands whose own chain books a debt and closes the participant's CAP. */
export function booksDebt(command: LedgerCommand): boolean {
  return (
    (command.kind === 'adjustNdc' && command.delta < 0n) ||
    (command.kind === 'adjustPosition' && command.amount > 0n)
  );
}

/**
 * The participants whose CAP a command's chain names, by CAP id: a prepare's payer, a commit's
 * parties (posts credit the payers', receipts debit the payees' or, GROSS, the payers'), an admin
 * move's participant. An abort names none that matters: voids pass closed accounts.
 */
export function capOwners(
  command: LedgerCommand,
): Map<bigint, { participant: string; currency: string }> {
  const owners: { participant: string; currency: string }[] = [];
  switch (command.kind) {
    case 'prepare':
      owners.push({ participant: command.payer, currency: command.currency });
      break;
    case 'commit':
      for (const r of command.linked === undefined ? [command] : [command.linked, command])
        owners.push(
          { participant: r.payer, currency: r.currency },
          { participant: r.payee, currency: r.currency },
        );
      break;
    case 'adjustNdc':
    case 'adjustPosition':
      owners.push({ participant: command.participant, currency: command.currency });
      break;
    default:
      break;
  }
  return new Map(owners.map((owner) => [participantAccount(owner, 'CAP'), owner]));
}
