/**
 * Transfer states: the internal states central-ledger records, and the four the FSPIOP API shows.
 */
export const TransferInternalState = {
  RECEIVED_PREPARE: 'RECEIVED_PREPARE',
  RESERVED: 'RESERVED',
  RECEIVED_FULFIL: 'RECEIVED_FULFIL',
  RESERVED_TIMEOUT: 'RESERVED_TIMEOUT',
  COMMITTED: 'COMMITTED',
  ABORTED_REJECTED: 'ABORTED_REJECTED',
  ABORTED_ERROR: 'ABORTED_ERROR',
  EXPIRED_PREPARED: 'EXPIRED_PREPARED',
  EXPIRED_RESERVED: 'EXPIRED_RESERVED',
  INVALID: 'INVALID',
} as const;
export type TransferInternalState = (typeof TransferInternalState)[keyof typeof TransferInternalState];

export type TransferApiState = 'RECEIVED' | 'RESERVED' | 'COMMITTED' | 'ABORTED';

const API_STATE: Record<TransferInternalState, TransferApiState> = {
  RECEIVED_PREPARE: 'RECEIVED',
  RESERVED: 'RESERVED',
  RECEIVED_FULFIL: 'RESERVED',
  RESERVED_TIMEOUT: 'RESERVED',
  COMMITTED: 'COMMITTED',
  ABORTED_REJECTED: 'ABORTED',
  ABORTED_ERROR: 'ABORTED',
  EXPIRED_PREPARED: 'ABORTED',
  EXPIRED_RESERVED: 'ABORTED',
  INVALID: 'ABORTED',
};

export function apiStateOf(state: TransferInternalState): TransferApiState {
  return API_STATE[state];
}

/** Final states never change again; a RESERVED transfer may still commit, abort or expire. */
export function isFinal(state: TransferInternalState): boolean {
  const api = API_STATE[state];
  return api === 'COMMITTED' || api === 'ABORTED';
}
