/**
 * Interledger crypto-conditions as Mojaloop uses them: the condition is base64url(sha256(p)) of
 * a 32-byte preimage p, and the fulfilment is base64url(p).
 */
import { hash } from 'node:crypto';
import { validationError } from './errors';

const BASE64URL_32_BYTES = /^[A-Za-z0-9_-]{43}$/;

function decode32(text: unknown, what: string): Buffer {
  if (typeof text !== 'string' || !BASE64URL_32_BYTES.test(text)) {
    throw validationError(`${what} must be base64url of 32 bytes`);
  }
  const bytes = Buffer.from(text, 'base64url');
  // 43 chars carry 258 bits: the last char's two spare bits must be zero for a canonical encoding.
  if (bytes.length !== 32 || bytes.toString('base64url') !== text)
    throw validationError(`${what} must be base64url of 32 bytes`);
  return bytes;
}

export function parseCondition(text: unknown): Buffer {
  return decode32(text, 'condition');
}

export function parseFulfilment(text: unknown): Buffer {
  return decode32(text, 'fulfilment');
}

export function conditionOf(fulfilment: Buffer): string {
  return hash('sha256', fulfilment, 'base64url');
}

/** True when the fulfilment's hash is the condition the payer prepared the transfer with. */
export function fulfils(fulfilment: unknown, condition: string): boolean {
  return conditionOf(parseFulfilment(fulfilment)) === condition;
}

/**
 * As `fulfils`, with a malformed fulfilment an invalid one (a payee's answer, not a request error).
 */
export function validFulfilment(fulfilment: unknown, condition: string): boolean {
  try {
    return fulfils(fulfilment, condition);
  } catch {
    return false;
  }
}
