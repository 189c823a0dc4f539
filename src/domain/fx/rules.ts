/**
 * The FX conversion's stateless rules: request shapes, ledger ids, central-ledger's prepare
 * checks (CL src/handlers/transfers/prepare.js, validator.js), states as the API shows them, and
 * the ledger reservation a conversion is.
 */
import { parseCondition } from '../shared/condition';
import { FspiopCode, fspiopError, validationError } from '../shared/errors';
import type { ErrorInformation } from '../../ports/metadata';
import { stableId } from '../shared/hashing';
import type { FxInternalState, FxTransferRecord, Participant } from '../../ports/metadata';
import { parseAmount, requireCurrency } from '../shared/money';
import {
  RECEIVED_FULFIL_DEPENDENT,
  TransferInternalState,
  apiStateOf,
  type TransferApiState,
} from '../../ports/states';
import {
  activeAccount,
  activeParticipant,
  internalStateOf,
  parseExpiration,
} from '../transfers/rules';
import type { LedgerTransferState, Reservation } from '../../ports/ledger';

export interface FxPrepareRequest {
  commitRequestId: string;
  determiningTransferId?: string;
  initiatingFsp: string;
  counterPartyFsp: string;
  sourceAmount: { amount: string; currency: string };
  targetAmount: { amount: string; currency: string };
  condition: string;
  expiration?: string;
  extensionList?: unknown;
}

export interface FxFulfilRequest {
  conversionState: 'RECEIVED' | 'RESERVED' | 'COMMITTED' | 'ABORTED';
  fulfilment?: string;
  completedTimestamp?: string;
  extensionList?: unknown;
}

/**
 * What PUT /fxTransfers/{id} callbacks, GET answers and duplicates carry (CL transform.js
 * toFulfil).
 */
export interface FxView {
  commitRequestId: string;
  conversionState: TransferApiState;
  completedTimestamp: string;
  fulfilment?: string;
  errorInformation?: ErrorInformation;
}

export { RECEIVED_FULFIL_DEPENDENT, isFinalFx } from '../../ports/states';

/**
 * The fx's ledger id: derived, never the commitRequestId's own bits, so an fx and a transfer can
 * share an id string.
 */
export function fxLedgerId(commitRequestId: string): bigint {
  return stableId(`fxTransfer:${commitRequestId}`);
}

/**
 * A conversion committed in a GROSS chain reads COMMITTED: central-settlement's gross handler
 * marks transfers SETTLED, never fxTransfers.
 */
export function conversionStateOf(state: FxInternalState): Exclude<TransferApiState, 'SETTLED'> {
  if (state === RECEIVED_FULFIL_DEPENDENT) return 'RESERVED';
  const api = apiStateOf(state);
  return api === 'SETTLED' ? 'COMMITTED' : api;
}

export function viewOfFx(record: FxTransferRecord): FxView {
  return {
    commitRequestId: record.commitRequestId,
    conversionState: conversionStateOf(record.state),
    completedTimestamp: record.completedTimestamp ?? record.createdAt,
    ...(record.fulfilment === undefined ? {} : { fulfilment: record.fulfilment }),
    ...(record.errorInformation === undefined ? {} : { errorInformation: record.errorInformation }),
  };
}

/** The initiating FSP's source-currency reservation for the FXP. */
export function sourceReservation(record: FxTransferRecord): Reservation {
  const currency = requireCurrency(record.sourceAmount.currency);
  return {
    id: fxLedgerId(record.commitRequestId),
    payer: record.initiatingFsp,
    payee: record.counterPartyFsp,
    currency: currency.code,
    amount: parseAmount(record.sourceAmount.amount, currency),
  };
}

export function notFound(commitRequestId: string): Error {
  return fspiopError(
    FspiopCode.TRANSFER_ID_NOT_FOUND,
    `Provided commitRequest ID ${commitRequestId} was not found on the server.`,
  );
}

/**
 * central-ledger's fx prepare checks, in its order (the first failure wins, 3100), plus what its
 * database insists on (an expiration, a determiningTransferId). Returns the expiration (ms).
 */
export function validateFxPrepare(
  source: string | undefined,
  request: FxPrepareRequest,
  found: { initiating: Participant | undefined; fxp: Participant | undefined; now: number },
): number {
  const { initiating, fxp, now } = found;
  if (source !== request.initiatingFsp)
    throw validationError('FSPIOP-Source header does not match the initiating FSP');
  const sourceCurrency = requireCurrency(request.sourceAmount.currency);
  const targetCurrency = requireCurrency(request.targetAmount.currency);
  parseAmount(request.sourceAmount.amount, sourceCurrency);
  parseAmount(request.targetAmount.amount, targetCurrency);
  activeParticipant(initiating, 'Payer', request.initiatingFsp);
  activeParticipant(fxp, 'Payee', request.counterPartyFsp);
  parseCondition(request.condition);
  if (request.expiration === undefined)
    throw validationError('Expiration is required for conditional transfer');
  const expiresAt = parseExpiration(request.expiration);
  if (expiresAt <= now) throw validationError('expiration date is in the past');
  if (request.initiatingFsp === request.counterPartyFsp)
    throw validationError('initiating FSP and counter party FSP must be different');
  activeAccount(fxp!, sourceCurrency.code, 'Payee');
  activeAccount(fxp!, targetCurrency.code, 'Payer');
  activeAccount(initiating!, sourceCurrency.code, 'Payer');
  // central-ledger cannot store an fx without one (fxWatchList.determiningTransferId NOT NULL) and
  // then sends nothing.
  if (request.determiningTransferId === undefined)
    throw validationError('determiningTransferId is required');
  return expiresAt;
}

/**
 * A conversion's state when the ledger's is `state`: voided, it was withdrawn (by the FXP, or with
 * its dependent transfer's abort), never rejected.
 */
export function conversionStateInLedger(
  state: LedgerTransferState,
): TransferInternalState | undefined {
  const internal = internalStateOf(state);
  return internal === TransferInternalState.ABORTED_REJECTED
    ? TransferInternalState.ABORTED_ERROR
    : internal;
}
