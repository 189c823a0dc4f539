/**
 * Where records that live on disk are: a string key (a transfer id) → the position of the line
 * holding its record in a journal file. ~20 bytes a slot in typed arrays instead of a JS object
 * per record, so a million final transfers cost tens of MiB, not gigabytes. Keys are kept only as
 * a 64-bit hash: two keys may share it, so every hit is confirmed by its caller reading the line
 * and comparing the full key (`read` and `isKey` below); a lookup is therefore exact.
 */

/** Grow when more than this share of slots is taken (open addressing, linear probing). */
const MAX_LOAD = 0.7;
const INITIAL_SLOTS = 1024;

export interface LinePosition {
  offset: number;
  length: number;
}

export class RecordIndex {
  private slots = INITIAL_SLOTS;
  private hashHigh = new Uint32Array(INITIAL_SLOTS);
  private hashLow = new Uint32Array(INITIAL_SLOTS);
  private offsets = new Float64Array(INITIAL_SLOTS);
  /** 0: an empty slot (a journal line is never empty). */
  private lengths = new Uint32Array(INITIAL_SLOTS);
  private used = 0;

  get size(): number {
    return this.used;
  }

  /** The first record `read` finds for `key` among the lines filed under its hash. */
  find<T>(key: string, read: (position: LinePosition) => T | undefined): T | undefined {
    const [high, low] = hash64(key);
    for (let slot = this.home(low); this.lengths[slot] !== 0; slot = (slot + 1) & (this.slots - 1)) {
      if (this.hashHigh[slot] !== high || this.hashLow[slot] !== low) continue;
      const found = read({ offset: this.offsets[slot]!, length: this.lengths[slot]! });
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** Files `key` at `position`, in place of the line `isKey` recognises as the key's earlier one. */
  set(key: string, position: LinePosition, isKey: (position: LinePosition) => boolean): void {
    if (!(position.length > 0 && position.length < 2 ** 32 && Number.isSafeInteger(position.offset) && position.offset >= 0)) throw new Error(`bad line position ${position.offset}+${position.length}`);
    const [high, low] = hash64(key);
    let slot = this.home(low);
    for (; this.lengths[slot] !== 0; slot = (slot + 1) & (this.slots - 1)) {
      if (this.hashHigh[slot] === high && this.hashLow[slot] === low && isKey({ offset: this.offsets[slot]!, length: this.lengths[slot]! })) break;
    }
    if (this.lengths[slot] === 0) {
      if (this.used + 1 > this.slots * MAX_LOAD) {
        this.grow();
        return this.set(key, position, isKey);
      }
      this.used++;
      this.hashHigh[slot] = high;
      this.hashLow[slot] = low;
    }
    this.offsets[slot] = position.offset;
    this.lengths[slot] = position.length;
  }

  /** Every line's position, in file order: compaction copies them and says where each went. */
  relocate(move: (position: LinePosition) => number): void {
    const taken: number[] = [];
    for (let slot = 0; slot < this.slots; slot++) if (this.lengths[slot] !== 0) taken.push(slot);
    // File order: the copy reads the old file front to back.
    const order = Uint32Array.from(taken).sort((a, b) => this.offsets[a]! - this.offsets[b]!);
    for (const slot of order) this.offsets[slot] = move({ offset: this.offsets[slot]!, length: this.lengths[slot]! });
  }

  private home(low: number): number {
    return low & (this.slots - 1);
  }

  private grow(): void {
    const old = { slots: this.slots, hashHigh: this.hashHigh, hashLow: this.hashLow, offsets: this.offsets, lengths: this.lengths };
    this.slots *= 2;
    this.hashHigh = new Uint32Array(this.slots);
    this.hashLow = new Uint32Array(this.slots);
    this.offsets = new Float64Array(this.slots);
    this.lengths = new Uint32Array(this.slots);
    for (let from = 0; from < old.slots; from++) {
      if (old.lengths[from] === 0) continue;
      let slot = this.home(old.hashLow[from]!);
      while (this.lengths[slot] !== 0) slot = (slot + 1) & (this.slots - 1);
      this.hashHigh[slot] = old.hashHigh[from]!;
      this.hashLow[slot] = old.hashLow[from]!;
      this.offsets[slot] = old.offsets[from]!;
      this.lengths[slot] = old.lengths[from]!;
    }
  }
}

/** Two independent 32-bit string hashes (FNV-1a and a multiply-xorshift), each finalised by murmur3's mix. */
function hash64(key: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 13;
  }
  return [mix32(a), mix32(b ^ key.length)];
}

/** murmur3's 32-bit finaliser: every input bit moves every output bit. */
export function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
