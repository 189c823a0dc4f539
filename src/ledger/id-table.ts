/**
 * A set of 128-bit ledger ids, each with a few 32-bit words: what the embedded ledger remembers of
 * every id it used (idempotency) and of every finished reservation, at 16 bytes of key plus the
 * words per slot in typed arrays instead of a bigint, a string and a Map entry per id. Keys are
 * kept whole, so lookups are exact. Id 0 marks an empty slot (TigerBeetle refuses id 0 too).
 */
import { hash } from 'node:crypto';
import { mix32 } from '../util/record-index';

/** Grow when more than this share of slots is taken (open addressing, linear probing). */
const MAX_LOAD = 0.75;
const INITIAL_SLOTS = 1024;
const WORD = 0xffffffffn;

export class IdTable {
  private slots = INITIAL_SLOTS;
  private keys = new Uint32Array(INITIAL_SLOTS * 4);
  private values: Uint32Array;
  private used = 0;

  constructor(private readonly words: number) {
    this.values = new Uint32Array(INITIAL_SLOTS * words);
  }

  get size(): number {
    return this.used;
  }

  /** The words kept for `id`, or undefined. */
  get(id: bigint): Uint32Array | undefined {
    const slot = this.slotOf(id);
    return this.isEmpty(slot) ? undefined : this.values.subarray(slot * this.words, (slot + 1) * this.words);
  }

  set(id: bigint, words: ArrayLike<number>): void {
    if (id <= 0n || id > (1n << 128n) - 1n) throw new Error(`ledger id out of range: ${id}`);
    if (words.length !== this.words) throw new Error(`expected ${this.words} words, got ${words.length}`);
    let slot = this.slotOf(id);
    if (this.isEmpty(slot)) {
      if (this.used + 1 > this.slots * MAX_LOAD) {
        this.grow();
        slot = this.slotOf(id);
      }
      this.used++;
      for (let w = 0; w < 4; w++) this.keys[slot * 4 + w] = Number((id >> BigInt(32 * w)) & WORD);
    }
    this.values.set(words, slot * this.words);
  }

  /** The slot holding `id`, or the empty slot where it would go. */
  private slotOf(id: bigint): number {
    return this.slotOfWords(Number(id & WORD), Number((id >> 32n) & WORD), Number((id >> 64n) & WORD), Number((id >> 96n) & WORD));
  }

  private slotOfWords(k0: number, k1: number, k2: number, k3: number): number {
    let slot = mix32(k0 ^ Math.imul(k1, 0x9e3779b1) ^ Math.imul(k2, 0x85ebca77) ^ Math.imul(k3, 0xc2b2ae3d)) & (this.slots - 1);
    for (; !this.isEmpty(slot); slot = (slot + 1) & (this.slots - 1)) {
      const at = slot * 4;
      if (this.keys[at] === k0 && this.keys[at + 1] === k1 && this.keys[at + 2] === k2 && this.keys[at + 3] === k3) return slot;
    }
    return slot;
  }

  private isEmpty(slot: number): boolean {
    const at = slot * 4;
    return this.keys[at] === 0 && this.keys[at + 1] === 0 && this.keys[at + 2] === 0 && this.keys[at + 3] === 0;
  }

  private grow(): void {
    const old = { slots: this.slots, keys: this.keys, values: this.values };
    this.slots *= 2;
    this.keys = new Uint32Array(this.slots * 4);
    this.values = new Uint32Array(this.slots * this.words);
    for (let from = 0; from < old.slots; from++) {
      const key = old.keys.subarray(from * 4, from * 4 + 4);
      if (key[0] === 0 && key[1] === 0 && key[2] === 0 && key[3] === 0) continue;
      const slot = this.slotOfWords(key[0]!, key[1]!, key[2]!, key[3]!);
      this.keys.set(key, slot * 4);
      this.values.set(old.values.subarray(from * this.words, (from + 1) * this.words), slot * this.words);
    }
  }
}

/**
 * 64 bits of SHA-256 of `text`: what the table keeps of a command's signature (to tell a retry,
 * `exists`, from another command under the same id, `modified`) and of a reservation's terms. A
 * collision needs ~2^32 chosen texts, and a client would only fool itself with one.
 */
export function digest64(text: string): [number, number] {
  const digest = hash('sha256', text, 'buffer');
  return [digest.readUInt32LE(0), digest.readUInt32LE(4)];
}
