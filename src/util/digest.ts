/**
 * SHA-256 digests read as numbers, for ids and keys derived from text. The digest comes as a
 * string (hex or latin1), never as a Buffer: reading a Buffer's words costs twice the hashing
 * itself on the short texts these take (a per-transfer cost: several ids per transfer).
 */
import { hash } from 'node:crypto';

/** The digest's first 128 bits, big-endian, as an unsigned bigint. */
export function sha256High128(text: string): bigint {
  return BigInt(`0x${hash('sha256', text, 'hex').slice(0, 32)}`);
}

/** The digest's first `into.length` 32-bit words, each read little-endian, written into `into`. */
export function sha256WordsLE<Words extends Uint32Array>(text: string, into: Words): Words {
  // 'binary' (latin1): one character per digest byte.
  const bytes = hash('sha256', text, 'binary');
  for (let word = 0; word < into.length; word++) {
    const at = word * 4;
    into[word] =
      bytes.charCodeAt(at) |
      (bytes.charCodeAt(at + 1) << 8) |
      (bytes.charCodeAt(at + 2) << 16) |
      (bytes.charCodeAt(at + 3) << 24);
  }
  return into;
}
