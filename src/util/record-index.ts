/**
 * Where records that live on disk are: a string key (a transfer id) → the position of the line
 * holding its record in a journal file. Held in a TieredTable keyed by 128 bits of SHA-256 of the
 * key: the newest entries in memory, older ones in sorted runs on disk (with `spill`), so memory
 * stays flat however many final records there are. The caller confirms every hit by reading the
 * line and comparing the full key (`read` and `isKey` below), and a second key under the same
 * 128-bit hash (never seen: ~2^64 keys make one likely) is refused loudly, never confused.
 */
import { sha256WordsLE } from './digest';
import { TieredTable, type SpillOptions } from './tiered-table';

export interface LinePosition {
  offset: number;
  length: number;
}

const WORD = 2 ** 32;

export class RecordIndex {
  /** Per key: offset (low word, high word), length. */
  private readonly table: TieredTable;

  constructor(spill?: SpillOptions) {
    this.table = new TieredTable(3, spill);
  }

  get size(): number {
    return this.table.size;
  }

  /** The record `read` finds on the line filed under `key` (undefined if none, or not its line). */
  find<T>(key: string, read: (position: LinePosition) => T | undefined): T | undefined {
    const at = this.table.get(keyOf(key));
    return at === undefined ? undefined : read(positionOf(at));
  }

  /**
   * Files `key` at `position`, in place of its earlier line (which `isKey` must recognise as the
   * key's).
   */
  set(key: string, position: LinePosition, isKey: (position: LinePosition) => boolean): void {
    const storable =
      position.length > 0 && position.length < WORD && offsetStorable(position.offset);
    if (!storable) throw new Error(`bad line position ${position.offset}+${position.length}`);
    const hashed = keyOf(key);
    const earlier = this.table.get(hashed);
    if (earlier !== undefined && !isKey(positionOf(earlier)))
      throw new Error(
        `two record keys share a 128-bit hash (${key} and the record at ${earlier[0]! + earlier[1]! * WORD})`,
      );
    this.table.set(hashed, [
      position.offset % WORD,
      Math.floor(position.offset / WORD),
      position.length,
    ]);
  }

  /** Every line's position, in file order: compaction copies them and says where each went. */
  relocate(move: (position: LinePosition) => number): void {
    this.table.rewriteValues((values, count) => {
      const offsets = new Float64Array(count);
      for (let i = 0; i < count; i++) offsets[i] = values[i * 3]! + values[i * 3 + 1]! * WORD;
      // File order: the copy reads the old file front to back.
      const order = new Uint32Array(count);
      for (let i = 0; i < count; i++) order[i] = i;
      order.sort((a, b) => offsets[a]! - offsets[b]!);
      for (const i of order) {
        const offset = move({ offset: offsets[i]!, length: values[i * 3 + 2]! });
        if (!offsetStorable(offset)) throw new Error(`bad relocated offset ${offset}`);
        values[i * 3] = offset % WORD;
        values[i * 3 + 1] = Math.floor(offset / WORD);
      }
    });
  }

  close(): void {
    this.table.close();
  }
}

function keyOf(key: string): Uint32Array {
  return sha256WordsLE(key, new Uint32Array(4));
}

function positionOf(at: Uint32Array): LinePosition {
  return { offset: at[0]! + at[1]! * WORD, length: at[2]! };
}

/** An offset the table can hold exactly: a whole number of bytes, at most 2^53. */
function offsetStorable(offset: number): boolean {
  return Number.isSafeInteger(offset) && offset >= 0;
}
