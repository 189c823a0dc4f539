/**
 * /enums as central-ledger v19.14 seeds them (seeds/*.js, src/lib/enum.js): the same eleven keys.
 * Ids are the seeds' order, as a fresh central-ledger database numbers them.
 */
import {
  ENDPOINT_TYPES,
  LEDGER_ACCOUNT_TYPES,
  LEDGER_ENTRY_TYPES,
  TRANSFER_PARTICIPANT_ROLE_TYPES,
  numbered,
} from '../../ports/enumerations';

/** Transfer states and their API enumeration (seeds/transferState.js). */
const TRANSFER_STATES: Record<string, string> = {
  RECEIVED_PREPARE: 'RECEIVED',
  RESERVED: 'RESERVED',
  RECEIVED_FULFIL: 'RESERVED',
  RECEIVED_FULFIL_DEPENDENT: 'RESERVED',
  COMMITTED: 'COMMITTED',
  FAILED: 'ABORTED',
  RESERVED_TIMEOUT: 'RESERVED',
  RECEIVED_REJECT: 'RESERVED',
  ABORTED_REJECTED: 'ABORTED',
  RECEIVED_ERROR: 'RESERVED',
  ABORTED_ERROR: 'ABORTED',
  EXPIRED_PREPARED: 'ABORTED',
  EXPIRED_RESERVED: 'ABORTED',
  INVALID: 'ABORTED',
  SETTLED: 'SETTLED',
  RESERVED_FORWARDED: 'RESERVED',
};

const BULK_PROCESSING_STATES = [
  'RECEIVED',
  'RECEIVED_DUPLICATE',
  'RECEIVED_INVALID',
  'ACCEPTED',
  'PROCESSING',
  'FULFIL_DUPLICATE',
  'FULFIL_INVALID',
  'COMPLETED',
  'REJECTED',
  'EXPIRED',
  'ABORTING',
] as const;

/** Bulk transfer states and their API enumeration (seeds/bulkTransferState.js). */
const BULK_TRANSFER_STATES: Record<string, string> = {
  RECEIVED: 'RECEIVED',
  PENDING_PREPARE: 'PENDING',
  PENDING_INVALID: 'PENDING',
  ACCEPTED: 'ACCEPTED',
  PROCESSING: 'PROCESSING',
  PENDING_FULFIL: 'PROCESSING',
  EXPIRING: 'PROCESSING',
  COMPLETED: 'COMPLETED',
  EXPIRED: 'COMPLETED',
  REJECTED: 'REJECTED',
  INVALID: 'REJECTED',
  ABORTING: 'PROCESSING',
};

const byName = (names: readonly string[]): Record<string, string> =>
  Object.fromEntries(names.map((name) => [name, name]));

export const ENUMS = {
  endpointType: numbered(ENDPOINT_TYPES),
  hubParticipant: {
    participantId: 1,
    name: 'Hub',
    description: 'Hub Operator',
    isActive: 1,
    createdBy: 'seeds',
  },
  ledgerAccountType: numbered(LEDGER_ACCOUNT_TYPES),
  ledgerEntryType: numbered(LEDGER_ENTRY_TYPES),
  participantLimitType: { NET_DEBIT_CAP: 1 },
  transferParticipantRoleType: numbered(TRANSFER_PARTICIPANT_ROLE_TYPES),
  transferState: byName(Object.keys(TRANSFER_STATES)),
  transferStateEnum: TRANSFER_STATES,
  bulkProcessingState: numbered(BULK_PROCESSING_STATES),
  bulkTransferState: byName(Object.keys(BULK_TRANSFER_STATES)),
  bulkTransferStateEnum: BULK_TRANSFER_STATES,
};
