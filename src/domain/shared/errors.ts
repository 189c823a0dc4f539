/**
 * The FSPIOP error catalogue this service answers with, and the HTTP status each code class maps
 * to (central-services-error-handling): 1xxx → 503, 2xxx → 500, 3xxx/4xxx/5xxx/6xxx → 400, except
 * the codes that library gives a status of their own (2002 → 501, 2003 → 503, 3002 → 404).
 */
import type { ErrorInformation } from '../../ports/metadata';

export const FspiopCode = {
  INTERNAL: '2001',
  NOT_IMPLEMENTED: '2002',
  SERVICE_UNAVAILABLE: '2003',
  GENERIC_CLIENT: '3000',
  UNKNOWN_URI: '3002',
  ADD_PARTY_INFO: '3003',
  VALIDATION: '3100',
  MALFORMED_SYNTAX: '3101',
  MISSING_ELEMENT: '3102',
  TOO_LARGE_PAYLOAD: '3104',
  MODIFIED_REQUEST: '3106',
  ID_NOT_FOUND: '3200',
  PAYER_FSP_ID_NOT_FOUND: '3202',
  PAYEE_FSP_ID_NOT_FOUND: '3203',
  TRANSFER_ID_NOT_FOUND: '3208',
  BULK_TRANSFER_ID_NOT_FOUND: '3210',
  TRANSFER_EXPIRED: '3303',
  PAYER_INSUFFICIENT_LIQUIDITY: '4001',
  PAYER_LIMIT_ERROR: '4200',
  GENERIC_SETTLEMENT: '6000',
} as const;
export type FspiopCode = (typeof FspiopCode)[keyof typeof FspiopCode];

const DESCRIPTIONS: Record<FspiopCode, string> = {
  '2001': 'Internal server error',
  '2002': 'Not implemented',
  '2003': 'Service currently unavailable',
  '3000': 'Generic client error',
  '3002': 'Unknown URI',
  '3003': 'Add Party information error',
  '3100': 'Generic validation error',
  '3101': 'Malformed syntax',
  '3102': 'Missing mandatory element',
  '3104': 'Too large payload',
  '3106': 'Modified request',
  '3200': 'Generic ID not found',
  '3202': 'Payer FSP ID not found',
  '3203': 'Payee FSP ID not found',
  '3208': 'Transfer ID not found',
  '3210': 'Bulk transfer ID not found',
  '3303': 'Transfer expired',
  '4001': 'Payer FSP insufficient liquidity',
  '4200': 'Payer limit error',
  '6000': 'Generic Settlement Error',
};

/** An error that is part of the API contract: it always carries an FSPIOP code. */
export class FspiopError extends Error {
  readonly code: FspiopCode;
  readonly detail: string | undefined;

  constructor(code: FspiopCode, detail?: string) {
    super(detail === undefined ? DESCRIPTIONS[code] : `${DESCRIPTIONS[code]} - ${detail}`);
    this.name = 'FspiopError';
    this.code = code;
    this.detail = detail;
  }

  get httpStatus(): number {
    return httpStatusOf(this.code);
  }

  toErrorInformation(): ErrorInformation {
    return { errorCode: this.code, errorDescription: this.message };
  }

  toApiBody(): { errorInformation: ErrorInformation } {
    return { errorInformation: this.toErrorInformation() };
  }
}

/**
 * A refusal that also aborted the transfer (an invalid fulfilment): the payer must learn of it too.
 */
export class TransferAbortedError extends FspiopError {
  constructor(detail: string) {
    super(FspiopCode.VALIDATION, detail);
    this.name = 'TransferAbortedError';
  }
}

const OWN_STATUS: Partial<Record<string, number>> = { '2002': 501, '2003': 503, '3002': 404 };

export function httpStatusOf(code: string): number {
  const own = OWN_STATUS[code];
  if (own !== undefined) return own;
  switch (code[0]) {
    case '1':
      return 503;
    case '2':
      return 500;
    default:
      return 400;
  }
}

export function fspiopError(code: FspiopCode, detail?: string): FspiopError {
  return new FspiopError(code, detail);
}

export const validationError = (detail: string): FspiopError =>
  new FspiopError(FspiopCode.VALIDATION, detail);
