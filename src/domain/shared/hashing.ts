/** Content hashes and ids derived from content, for duplicate detection and idempotent retries. */
import { hash, randomBytes } from 'node:crypto';
import { sha256High128 } from '../../util/digest';

/**
 * JSON with object keys sorted, so that a re-ordered retry hashes the same. Written by hand (no
 * entries/filter/map/join arrays): it runs twice per transfer on ~1 KB bodies, and its text is
 * persisted through the hash, so it must stay byte-identical to what it always was.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value === 'string') return quoted(value);
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) text += ',';
      // A hole stays empty, as Array.prototype.map and join left it.
      if (!(i in value)) continue;
      const item: unknown = value[i];
      text += item === undefined ? 'null' : canonicalJson(item);
    }
    return text + ']';
  }
  // Sorted by UTF-16 code unit, as a plain string comparison.
  const keys = Object.keys(value).sort();
  let text = '{';
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined) continue;
    text += `${text.length === 1 ? '' : ','}${quoted(key)}:${canonicalJson(item)}`;
  }
  return text + '}';
}

/** What JSON.stringify escapes in a string: control characters, quote, backslash, surrogates. */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const ESCAPED_IN_JSON = /[\u0000-\u001f"\\\ud800-\udfff]/;

/**
 * JSON.stringify of a string. Without a character it would escape, the string between quotes:
 * that copies nothing, where JSON.stringify copies the ~1 KB ILP packet before hashing copies it
 * again. Paired surrogates, which it leaves as they are (it escapes lone ones), take its path too.
 */
function quoted(text: string): string {
  return ESCAPED_IN_JSON.test(text) ? JSON.stringify(text) : `"${text}"`;
}

export function hashOf(value: unknown): string {
  // Encoded by the hash itself: through a Buffer it costs ~1.7× as much (a ~1 KB body, twice per
  // transfer).
  return hash('sha256', canonicalJson(value), 'base64url');
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
  // Clearing the top bit keeps it off TigerBeetle's reserved 2^128-1; setting bit 0 off 0.
  return (sha256High128(text) & ((1n << 127n) - 1n)) | 1n;
}
