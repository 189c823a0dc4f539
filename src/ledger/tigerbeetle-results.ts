/**
 * TigerBeetle's result statuses read back as ledger outcomes: which event of a linked chain
 * failed it, and what its status means.
 */
import { CreateAccountStatus, CreateTransferStatus } from 'tigerbeetle-node';
import { OK, refused, type LedgerOutcome, type LedgerRefusal } from '../ports/ledger';

/**
 * Created, or already there (a retry, or debt accounts added to a participant opened before them).
 */
export function accountOutcome(statuses: CreateAccountStatus[]): LedgerOutcome {
  if (statuses.every((s) => s === CreateAccountStatus.created)) return OK;
  // A chain that met an existing account reports `exists` for it and linked_event_failed for the
  // rest.
  const causes = statuses.filter((s) => s !== CreateAccountStatus.linked_event_failed);
  if (causes.every((s) => s === CreateAccountStatus.created || s === CreateAccountStatus.exists))
    return refused('exists');
  const cause = statuses.find(
    (s) =>
      s !== CreateAccountStatus.linked_event_failed &&
      s !== CreateAccountStatus.created &&
      s !== CreateAccountStatus.exists,
  );
  return refused(
    cause !== undefined && CreateAccountStatus[cause]?.startsWith('exists_with_different')
      ? 'modified'
      : 'invalid',
  );
}

export function transferOutcome(statuses: CreateTransferStatus[]): LedgerOutcome {
  if (statuses.every((s) => s === CreateTransferStatus.created)) return OK;
  const index = statuses.findIndex((s) => s !== CreateTransferStatus.linked_event_failed);
  const cause = statuses[index]!;
  if (cause === CreateTransferStatus.exists) return refused('exists');
  return refused(refusalOf(cause));
}

/** The event that failed a chain; the others of a failed chain answer linked_event_failed. */
export function causeOf(statuses: CreateTransferStatus[]): CreateTransferStatus | undefined {
  return statuses.find(
    (s) => s !== CreateTransferStatus.linked_event_failed && s !== CreateTransferStatus.created,
  );
}

function refusalOf(status: CreateTransferStatus): LedgerRefusal {
  switch (status) {
    // A debit past a POSITION's credits is the liquidity check; a credit past a CAP's debits the
    // cap's (no other flagged account meets either but through a balancing transfer).
    case CreateTransferStatus.exceeds_credits:
      return 'insufficient_liquidity';
    case CreateTransferStatus.exceeds_debits:
      return 'limit_exceeded';
    case CreateTransferStatus.id_already_failed:
      return 'failed_before';
    case CreateTransferStatus.debit_account_already_closed:
    case CreateTransferStatus.credit_account_already_closed:
      return 'inactive';
    case CreateTransferStatus.debit_account_not_found:
    case CreateTransferStatus.credit_account_not_found:
    case CreateTransferStatus.pending_transfer_not_found:
      return 'not_found';
    case CreateTransferStatus.pending_transfer_already_posted:
      return 'already_committed';
    case CreateTransferStatus.pending_transfer_already_voided:
      return 'already_aborted';
    case CreateTransferStatus.pending_transfer_expired:
      return 'expired';
    default:
      // Anything else means the command itself was wrong: refused alone, never failing its batch.
      return CreateTransferStatus[status]?.startsWith('exists_with_different')
        ? 'modified'
        : 'invalid';
  }
}
