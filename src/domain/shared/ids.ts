/**
 * Transfer ids: Mojaloop sends UUIDs (v1–v7 in practice) or ULIDs. Either is exactly 128 bits,
 * so it maps 1:1 onto a TigerBeetle u128 id, and back for display.
 */
import { validationError } from './errors';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-7][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const U128_MAX = (1n << 128n) - 1n;

/** The u128 behind a UUID or ULID; 0 and 2^128-1 are refused because TigerBeetle reserves them. */
export function transferIdToU128(text: string): bigint {
  let value: bigint;
  if (UUID_PATTERN.test(text)) {
    // The pattern fixed where the four hyphens are: slices, not a global replace, on every request.
    value = BigInt(
      `0x${text.slice(0, 8)}${text.slice(9, 13)}${text.slice(14, 18)}${text.slice(19, 23)}${text.slice(24)}`,
    );
  } else if (ULID_PATTERN.test(text)) {
    value = 0n;
    for (const ch of text.toUpperCase()) value = (value << 5n) | BigInt(CROCKFORD.indexOf(ch));
  } else {
    throw validationError(`id ${JSON.stringify(text)} is neither a UUID nor a ULID`);
  }
  if (value === 0n || value === U128_MAX) throw validationError(`id ${text} is reserved`);
  return value;
}

/** Lower-cases UUIDs and upper-cases ULIDs so that equal ids compare equal as strings. */
export function canonicalTransferId(text: string): string {
  return UUID_PATTERN.test(text) ? text.toLowerCase() : text.toUpperCase();
}
