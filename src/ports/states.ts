/**
 * Transfer states: the internal states central-ledger records, and the four the FSPIOP API shows.
 */
export const TransferInternalState = {
  RECEIVED_PREPARE: 'RECEIVED_PREPARE',
  RESERVED: 'RESERVED',
  RECEIVED_FULFIL: 'RECEIVED_FULFIL',
  RESERVED_TIMEOUT: 'RESERVED_TIMEOUT',
  COMMITTED: 'COMMITTED',
  /**
   * Committed under a GROSS (or IMMEDIATE) settlement model: settled in the commit's own ledger
   * chain.
   */
  SETTLED: 'SETTLED',
  ABORTED_REJECTED: 'ABORTED_REJECTED',
  ABORTED_ERROR: 'ABORTED_ERROR',
  EXPIRED_PREPARED: 'EXPIRED_PREPARED',
  EXPIRED_RESERVED: 'EXPIRED_RESERVED',
  INVALID: 'INVALID',
} as const;
export type TransferInternalState =
  (typeof TransferInternalState)[keyof typeof TransferInternalState];

/**
 * SETTLED is no FSPIOP state, yet central-ledger answers it: its GET carries the
 * transferState table's `enumeration`, which is SETTLED for SETTLED (seeds/transferState.js).
 */
export type TransferApiState = 'RECEIVED' | 'RESERVED' | 'COMMITTED' | 'SETTLED' | 'ABORTED';

const API_STATE: Record<TransferInternalState, TransferApiState> = {
  RECEIVED_PREPARE: 'RECEIVED',
  RESERVED: 'RESERVED',
  RECEIVED_FULFIL: 'RESERVED',
  RESERVED_TIMEOUT: 'RESERVED',
  COMMITTED: 'COMMITTED',
  SETTLED: 'SETTLED',
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
  return api === 'COMMITTED' || api === 'SETTLED' || api === 'ABORTED';
}

/**
 * An fx whose FXP answered (RESERVED or COMMITTED): its money waits for the dependent transfer
 * (src/fx).
 */
export const RECEIVED_FULFIL_DEPENDENT = 'RECEIVED_FULFIL_DEPENDENT';

/**
 * An fx is final once it never changes again; RESERVED and RECEIVED_FULFIL_DEPENDENT still hold the
 * initiating FSP's money.
 */
export function isFinalFx(
  state: TransferInternalState | typeof RECEIVED_FULFIL_DEPENDENT,
): boolean {
  return state !== RECEIVED_FULFIL_DEPENDENT && isFinal(state);
}
