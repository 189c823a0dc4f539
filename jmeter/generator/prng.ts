/**
 * The generator's only source of randomness: xoshiro128** (Blackman and Vigna), 128 bits of
 * state seeded from SHA-256 of the seed text. Same seed, same sequence, on any machine and Node
 * version; no Math.random, no clock. Not cryptographic, and need not be: fulfilments here only
 * have to be distinct, not secret.
 */
import { createHash } from 'node:crypto';

export class Prng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: string) {
    const digest = createHash('sha256').update(`jmeter-generator:${seed}`).digest();
    this.s0 = digest.readUInt32BE(0);
    this.s1 = digest.readUInt32BE(4);
    this.s2 = digest.readUInt32BE(8);
    this.s3 = digest.readUInt32BE(12);
    // xoshiro must not start from the all-zero state (a 2^-128 event, guarded anyway).
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** The next 32 random bits as an unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  bytes(length: number): Buffer {
    const out = Buffer.alloc(length);
    for (let i = 0; i < length; i += 4) {
      const word = this.nextUint32();
      for (let j = 0; j < 4 && i + j < length; j++) out[i + j] = (word >>> (24 - 8 * j)) & 0xff;
    }
    return out;
  }

  /** Uniform in [0, bound) for 0 < bound ≤ 2^32, without modulo bias. */
  below(bound: number): number {
    if (!Number.isInteger(bound) || bound <= 0 || bound > 2 ** 32)
      throw new RangeError(`bound ${bound} is not in 1..2^32`);
    const limit = 2 ** 32 - (2 ** 32 % bound);
    for (;;) {
      const value = this.nextUint32();
      if (value < limit) return value % bound;
    }
  }

  /** Uniform in [0, bound) for any positive bigint bound (rejection sampling on whole bits). */
  bigBelow(bound: bigint): bigint {
    if (bound <= 0n) throw new RangeError(`bound ${bound} must be positive`);
    const bits = (bound - 1n).toString(2).length;
    const words = Math.ceil(bits / 32);
    const mask = (1n << BigInt(bits)) - 1n;
    for (;;) {
      let value = 0n;
      for (let i = 0; i < words; i++) value = (value << 32n) | BigInt(this.nextUint32());
      value &= mask;
      if (value < bound) return value;
    }
  }

  hex(digits: number): string {
    return this.bytes(Math.ceil(digits / 2))
      .toString('hex')
      .slice(0, digits);
  }

  /** A version-4 UUID (122 random bits), lower case. */
  uuidV4(): string {
    const b = this.bytes(16);
    b[6] = (b[6]! & 0x0f) | 0x40;
    b[8] = (b[8]! & 0x3f) | 0x80;
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  /** Fisher–Yates shuffle in place. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.below(i + 1);
      [items[i], items[j]] = [items[j]!, items[i]!];
    }
    return items;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
