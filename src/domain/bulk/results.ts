/**
 * What a bulk's members ended in and who is told of it. A member's result is always read from its
 * transfer (the ledger's word, through the transfer flow), never kept in the bulk's record: only
 * a refusal before the ledger is, since no transfer tells it.
 */
import type { BulkMember, BulkRecord } from '../../ports/bulk';
import type { ErrorInformation, TransferRecord } from '../../ports/metadata';
import { apiStateOf } from '../../ports/states';
import { FspiopCode, fspiopError } from '../shared/errors';
import type { BulkNotice, IndividualResult, NoticeCause } from './api';
import { bulkApiState, forwardedMembers, forwardedTransfer } from './rules';

/** Where a member stands: still open (reserved, or not yet prepared), or its final result. */
export type MemberOutcome =
  | { final: false; transferId: string }
  | { final: true; transferId: string; committed: boolean; result: IndividualResult };

/** An aborted transfer whose record lost the reason (repaired from the ledger after a crash). */
const ABORTED: ErrorInformation = {
  errorCode: FspiopCode.INTERNAL,
  errorDescription: 'Internal server error - the transfer was aborted',
};

/**
 * A member's outcome from its transfer's record (`undefined`: never prepared). `pastPreparing`:
 * the bulk is so far past its expiration that no prepare of it can still reserve (a member never
 * prepared then expired without ever holding money). A commit whose fulfilment a crash kept out of
 * the record stays open until the resumed fulfil writes it.
 */
export function memberOutcome(
  member: BulkMember,
  transfer: TransferRecord | undefined,
  pastPreparing: boolean,
): MemberOutcome {
  const { transferId } = member;
  if (member.refusal !== undefined) return failed(transferId, member.refusal);
  if (transfer === undefined)
    return pastPreparing
      ? failed(transferId, fspiopError(FspiopCode.TRANSFER_EXPIRED).toErrorInformation())
      : { final: false, transferId };
  const extensionList =
    transfer.extensionList === undefined ? {} : { extensionList: transfer.extensionList };
  switch (apiStateOf(transfer.state)) {
    case 'COMMITTED':
    case 'SETTLED':
      if (transfer.fulfilment === undefined) return { final: false, transferId };
      return {
        final: true,
        transferId,
        committed: true,
        result: { transferId, fulfilment: transfer.fulfilment, ...extensionList },
      };
    case 'ABORTED':
      return failed(transferId, transfer.errorInformation ?? ABORTED);
    default:
      return { final: false, transferId };
  }
}

function failed(transferId: string, errorInformation: ErrorInformation): MemberOutcome {
  return { final: true, transferId, committed: false, result: { transferId, errorInformation } };
}

/** A bulk's final state from all its results: COMPLETED if any transfer committed. */
export function finalState(outcomes: readonly MemberOutcome[]): 'COMPLETED' | 'REJECTED' {
  return outcomes.some((outcome) => outcome.final && outcome.committed) ? 'COMPLETED' : 'REJECTED';
}

/**
 * The final results a party is told: the payer every member's, the payee those it was given
 * (in the members' order). Members still open are left out.
 */
export function resultsFor(
  record: BulkRecord,
  outcomes: readonly MemberOutcome[],
  party: 'payer' | 'payee',
): IndividualResult[] {
  const listed = party === 'payer' ? record.members : forwardedMembers(record);
  const included = new Set(listed);
  return outcomes.flatMap((outcome, index) =>
    outcome.final && included.has(record.members[index]!) ? [outcome.result] : [],
  );
}

/** The payee's `POST /bulkTransfers`: the members the ledger holds. */
export function forwardNotice(record: BulkRecord): BulkNotice {
  return {
    kind: 'forward',
    to: record.payeeFsp,
    bulk: record,
    transfers: forwardedMembers(record).map(forwardedTransfer),
  };
}

/** A `PUT /bulkTransfers/{id}` to `party` with the bulk's state and its results for that party. */
export function stateNotice(
  record: BulkRecord,
  told: { party: 'payer' | 'payee'; cause: NoticeCause; outcomes: readonly MemberOutcome[] },
): BulkNotice {
  const { party, cause, outcomes } = told;
  return {
    kind: 'state',
    cause,
    to: party === 'payer' ? record.payerFsp : record.payeeFsp,
    bulk: record,
    bulkTransferState: bulkApiState(record.state),
    ...(record.completedTimestamp === undefined
      ? {}
      : { completedTimestamp: record.completedTimestamp }),
    results: resultsFor(record, outcomes, party),
  };
}

export function errorNotice(
  record: BulkRecord,
  told: { to: string; cause: NoticeCause; errorInformation: ErrorInformation },
): BulkNotice {
  return { kind: 'error', bulkTransferId: record.bulkTransferId, ...told };
}

/**
 * What the step that ended a bulk tells: a payee's `PUT …/error` that rejected it, an `error` to
 * both parties; a bulk whose every transfer was refused at prepare, its payer; any other end
 * (fulfil, expiry), a `state` to both.
 */
export function finalNotices(record: BulkRecord, outcomes: readonly MemberOutcome[]): BulkNotice[] {
  const { finishedBy, errorInformation } = record;
  if (finishedBy === 'prepare')
    return [stateNotice(record, { party: 'payer', cause: 'prepare', outcomes })];
  if (finishedBy === 'error' && record.state === 'REJECTED' && errorInformation !== undefined)
    return [record.payerFsp, record.payeeFsp].map((to) =>
      errorNotice(record, { to, cause: 'fulfil', errorInformation }),
    );
  const cause = finishedBy === 'expiry' ? 'expiry' : 'fulfil';
  return [
    stateNotice(record, { party: 'payer', cause, outcomes }),
    stateNotice(record, { party: 'payee', cause, outcomes }),
  ];
}
