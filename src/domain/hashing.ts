/** Content hashes and ids derived from content, for duplicate detection and idempotent retries. */
import { hash, randomBytes } from 'node:crypto';

/** JSON with object keys sorted, so that a re-ordered retry hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function sha256(value: unknown): Buffer {
  return hash('sha256', canonicalJson(value), 'buffer');
}

export function hashOf(value: unknown): string {
  return sha256(value).toString('base64url');
}

/** The first 128 bits of a base64url sha256, as stored in a ledger transfer's user_data_128. */
export function hashToU128(hash: string): bigint {
  const bytes = Buffer.from(hash, 'base64url');
  return (bytes.readBigUInt64BE(0) << 64n) | bytes.readBigUInt64BE(8);
}

/** A fresh ledger id for a one-off admin command (never 0). */
export function randomId(): bigint {
  const bytes = randomBytes(16);
  return (bytes.readBigUInt64BE(0) << 64n) | bytes.readBigUInt64BE(8) | 1n;
}

/** An id derived from a text, so that the same one-time operation always carries the same id. */
export function stableId(text: string): bigint {
  const digest = hash('sha256', text, 'buffer');
  // Clearing the top bit keeps it off TigerBeetle's reserved 2^128-1; setting bit 0 off 0.
  return (((digest.readBigUInt64BE(0) << 64n) | digest.readBigUInt64BE(8)) & ((1n << 127n) - 1n)) | 1n;
}
