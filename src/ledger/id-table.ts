/**
 * A set of 128-bit ledger ids, each with a few 32-bit words: what the embedded ledger remembers of
 * every id it used (idempotency) and of every finished reservation. Keys are kept whole, so
 * lookups are exact. Held in a TieredTable: the newest ids in typed arrays in memory, older ones
 * in sorted runs on disk (with `spill`), so memory stays flat however many transfers were made.
 * Id 0 is never a key (TigerBeetle refuses id 0 too).
 */
import { sha256WordsLE } from '../util/digest';
import { TieredTable, type SpillOptions } from '../util/tiered-table';

const WORD = 0xffffffffn;

export class IdTable {
  private readonly table: TieredTable;
  private readonly key = new Uint32Array(4);

  constructor(words: number, spill?: SpillOptions) {
    this.table = new TieredTable(words, spill);
  }

  get size(): number {
    return this.table.size;
  }

  /** The words kept for `id` (a copy), or undefined. */
  get(id: bigint): Uint32Array | undefined {
    return inRange(id) ? this.table.get(this.keyOf(id)) : undefined;
  }

  set(id: bigint, words: ArrayLike<number>): void {
    this.table.set(this.keyOf(id), words);
  }

  close(): void {
    this.table.close();
  }

  private keyOf(id: bigint): Uint32Array {
    if (!inRange(id)) throw new Error(`ledger id out of range: ${id}`);
    this.key[0] = Number(id & WORD);
    this.key[1] = Number((id >> 32n) & WORD);
    this.key[2] = Number((id >> 64n) & WORD);
    this.key[3] = Number((id >> 96n) & WORD);
    return this.key;
  }
}
function inRange(id: bigint): boolean {
  return id > 0n && id <= (1n << 128n) - 1n;
}

/** digest64's words, read at once into the pair it returns: one array for every call. */
const DIGEST64_WORDS = new Uint32Array(2);

/**
 * 64 bits of SHA-256 of `text`: what the table keeps of a command's signature (to tell a retry,
 * `exists`, from another command under the same id, `modified`) and of a reservation's terms. A
 * collision needs ~2^32 chosen texts, and a client would only fool itself with one.
 */
export function digest64(text: string): [number, number] {
  const [low, high] = sha256WordsLE(text, DIGEST64_WORDS);
  return [low!, high!];
}
