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
    const k0 = Number(id & WORD);
    const k1 = Number((id >> 32n) & WORD);
    const k2 = Number((id >> 64n) & WORD);
    const k3 = Number((id >> 96n) & WORD);
    let slot = this.slotOfWords(k0, k1, k2, k3);
    if (this.isEmpty(slot)) {
      if (this.used + 1 > this.slots * MAX_LOAD) {
        this.grow();
        slot = this.slotOfWords(k0, k1, k2, k3);
      }
      this.used++;
      this.keys[slot * 4] = k0;
      this.keys[slot * 4 + 1] = k1;
      this.keys[slot * 4 + 2] = k2;
      this.keys[slot * 4 + 3] = k3;
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
    // Plain loops, no views: a grow of millions of slots must not stall the event loop for long.
    for (let from = 0; from < old.slots; from++) {
      const at = from * 4;
      const k0 = old.keys[at]!;
      const k1 = old.keys[at + 1]!;
      const k2 = old.keys[at + 2]!;
      const k3 = old.keys[at + 3]!;
      if ((k0 | k1 | k2 | k3) === 0) continue;
      const slot = this.slotOfWords(k0, k1, k2, k3);
      this.keys[slot * 4] = k0;
      this.keys[slot * 4 + 1] = k1;
      this.keys[slot * 4 + 2] = k2;
      this.keys[slot * 4 + 3] = k3;
      for (let w = 0; w < this.words; w++) this.values[slot * this.words + w] = old.values[from * this.words + w]!;
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
