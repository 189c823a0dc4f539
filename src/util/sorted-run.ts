/**
 * An immutable file of fixed-size entries — a 128-bit key (4 words) and `words` 32-bit values —
 * sorted by key, with what finds an entry without reading the file for nothing: a Bloom filter
 * (10 bits a key, ~1% false positives: a key that is not there costs no I/O 99 times in 100)
 * and the first key of every block of BLOCK_ENTRIES (a lookup that passes the filter reads one
 * block). In memory: ~1.4 bytes an entry. The file is a scratch file: unlinked as soon as it is
 * open, so it never outlives the process (what it holds is rebuilt from a journal at start).
 */
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';

/** Entries a lookup reads at once: ~3 KiB. */
const BLOCK_ENTRIES = 128;
/** Entries a sequential reader or writer buffers. */
const CHUNK_ENTRIES = 8192;
const BLOOM_BITS_PER_KEY = 10;
const BLOOM_HASHES = 7;

/** The order of keys: words 3, 2, 1, 0 as unsigned numbers. */
export function compareKeys(
  a: ArrayLike<number>,
  at: number,
  b: ArrayLike<number>,
  bt: number,
): number {
  for (let w = 3; w >= 0; w--) {
    const d = a[at + w]! - b[bt + w]!;
    if (d !== 0) return d;
  }
  return 0;
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

/** A 32-bit hash of a key's 4 words (at `at` in `words`), `seed` giving independent ones. */
export function keyHash(words: ArrayLike<number>, at: number, seed: number): number {
  return mix32(
    seed ^
      words[at]! ^
      Math.imul(words[at + 1]!, 0x9e3779b1) ^
      Math.imul(words[at + 2]!, 0x85ebca77) ^
      Math.imul(words[at + 3]!, 0xc2b2ae3d),
  );
}

class Bloom {
  private readonly bits: Uint32Array;
  private readonly size: number;

  constructor(keys: number) {
    this.size = Math.max(64, Math.ceil((keys * BLOOM_BITS_PER_KEY) / 32) * 32);
    this.bits = new Uint32Array(this.size / 32);
  }

  add(key: ArrayLike<number>, at: number): void {
    const h1 = keyHash(key, at, 0);
    const h2 = keyHash(key, at, 0x5bd1e995) | 1;
    for (let i = 0; i < BLOOM_HASHES; i++) {
      const bit = ((h1 + Math.imul(i, h2)) >>> 0) % this.size;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
  }

  mayHave(key: ArrayLike<number>, at: number): boolean {
    const h1 = keyHash(key, at, 0);
    const h2 = keyHash(key, at, 0x5bd1e995) | 1;
    for (let i = 0; i < BLOOM_HASHES; i++) {
      const bit = ((h1 + Math.imul(i, h2)) >>> 0) % this.size;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

/** What a run is made of (RunWriter.finish): its file, its filter and its fences. */
interface RunParts {
  fd: number;
  /** Words per entry: the key's 4 and the values. */
  stride: number;
  count: number;
  bloom: Bloom;
  /** The first key of each block, 4 words each. */
  fences: Uint32Array;
}

export class SortedRun {
  private readonly block: Uint32Array;
  private readonly fd: number;
  private readonly stride: number;
  readonly count: number;
  private readonly bloom: Bloom;
  private readonly fences: Uint32Array;

  private constructor(parts: RunParts) {
    this.fd = parts.fd;
    this.stride = parts.stride;
    this.count = parts.count;
    this.bloom = parts.bloom;
    this.fences = parts.fences;
    this.block = new Uint32Array(BLOCK_ENTRIES * parts.stride);
  }

  /**
   * Writes the entries `next` yields, in strictly increasing key order (at most `expected`), to a
   * new scratch file `path`; `next` fills `into` at `at` and says whether it did.
   */
  static write(
    path: string,
    stride: number,
    expected: number,
    next: (into: Uint32Array, at: number) => boolean,
  ): SortedRun {
    const writer = new RunWriter(path, stride, expected);
    try {
      while (next(writer.slot, writer.slotAt)) writer.add();
      return writer.finish();
    } catch (error) {
      writer.abandon();
      throw error;
    }
  }

  /** A run built from parts (RunWriter.finish). */
  static of(parts: RunParts): SortedRun {
    return new SortedRun(parts);
  }

  /** The values of the entry keyed `key[at..at+4]` copied into `into`, if the run has it. */
  get(key: ArrayLike<number>, at: number, into: Uint32Array): boolean {
    if (this.count === 0 || !this.bloom.mayHave(key, at)) return false;
    // The last block whose first key is not above the key.
    let low = 0;
    let high = this.fences.length / 4 - 1;
    if (compareKeys(this.fences, 0, key, at) > 0) return false;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if (compareKeys(this.fences, mid * 4, key, at) <= 0) low = mid;
      else high = mid - 1;
    }
    const entries = Math.min(BLOCK_ENTRIES, this.count - low * BLOCK_ENTRIES);
    this.readEntries(low * BLOCK_ENTRIES, entries, this.block);
    let first = 0;
    let last = entries - 1;
    while (first <= last) {
      const mid = (first + last) >>> 1;
      const order = compareKeys(this.block, mid * this.stride, key, at);
      if (order === 0) {
        into.set(this.block.subarray(mid * this.stride + 4, (mid + 1) * this.stride));
        return true;
      }
      if (order < 0) first = mid + 1;
      else last = mid - 1;
    }
    return false;
  }

  /** A reader of the entries in key order, CHUNK_ENTRIES at a time. */
  cursor(): RunCursor {
    return new RunCursor(this, this.stride);
  }

  /** Reads `entries` entries from entry `first` into `into`. */
  readEntries(first: number, entries: number, into: Uint32Array): void {
    const bytes = new Uint8Array(into.buffer, into.byteOffset, entries * this.stride * 4);
    for (let done = 0; done < bytes.length; ) {
      const read = readSync(
        this.fd,
        bytes,
        done,
        bytes.length - done,
        first * this.stride * 4 + done,
      );
      if (read === 0) throw new Error('a sorted run file is shorter than its entries');
      done += read;
    }
  }

  /**
   * Overwrites the values of every entry, in key order, with `values` (`count` × the values'
   * words): keys, filter and fences stay.
   */
  rewriteValues(values: Uint32Array): void {
    const words = this.stride - 4;
    if (values.length !== this.count * words)
      throw new Error(`expected ${this.count * words} values, got ${values.length}`);
    const chunk = new Uint32Array(CHUNK_ENTRIES * this.stride);
    for (let first = 0; first < this.count; first += CHUNK_ENTRIES) {
      const entries = Math.min(CHUNK_ENTRIES, this.count - first);
      this.readEntries(first, entries, chunk);
      for (let i = 0; i < entries; i++)
        chunk.set(
          values.subarray((first + i) * words, (first + i + 1) * words),
          i * this.stride + 4,
        );
      const bytes = new Uint8Array(chunk.buffer, 0, entries * this.stride * 4);
      for (let done = 0; done < bytes.length; )
        done += writeSync(
          this.fd,
          bytes,
          done,
          bytes.length - done,
          first * this.stride * 4 + done,
        );
    }
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * Writes a sorted run an entry at a time, so that a long write (a merge) can be spread over many
 * calls: the caller fills `slot` at `slotAt` with the next entry (in strictly increasing key
 * order, at most `expected` of them) and calls `add`; `finish` gives the run, `abandon` drops it.
 */
export class RunWriter {
  private readonly fd: number;
  private readonly bloom: Bloom;
  private readonly fences: Uint32Array;
  private readonly chunk: Uint32Array;
  private readonly lastKey = new Uint32Array(4);
  private count = 0;
  private buffered = 0;
  private fileBytes = 0;
  private done = false;

  constructor(
    path: string,
    private readonly stride: number,
    private readonly expected: number,
  ) {
    this.fd = openSync(path, 'w+');
    try {
      unlinkSync(path);
    } catch (error) {
      closeSync(this.fd);
      throw error;
    }
    this.bloom = new Bloom(expected);
    this.fences = new Uint32Array(Math.ceil(expected / BLOCK_ENTRIES) * 4);
    this.chunk = new Uint32Array(CHUNK_ENTRIES * stride);
  }

  /** Where the next entry goes: `slot` at `slotAt` (stride words). */
  get slot(): Uint32Array {
    return this.chunk;
  }

  get slotAt(): number {
    return this.buffered * this.stride;
  }

  /** Takes the entry written at `slot`/`slotAt`. */
  add(): void {
    const at = this.buffered * this.stride;
    const chunk = this.chunk;
    if (this.count >= this.expected)
      throw new Error(`a sorted run was promised ${this.expected} entries and given more`);
    if (this.count > 0 && compareKeys(this.lastKey, 0, chunk, at) >= 0)
      throw new Error('sorted run entries out of order');
    // Word by word: a subarray per entry is an allocation per entry.
    for (let w = 0; w < 4; w++) this.lastKey[w] = chunk[at + w]!;
    if (this.count % BLOCK_ENTRIES === 0)
      for (let w = 0; w < 4; w++)
        this.fences[(this.count / BLOCK_ENTRIES) * 4 + w] = chunk[at + w]!;
    this.bloom.add(chunk, at);
    this.count++;
    this.buffered++;
    if (this.buffered === CHUNK_ENTRIES) this.flush();
  }

  /** The run written, readable at once; the writer is spent. */
  finish(): SortedRun {
    if (this.buffered > 0) this.flush();
    this.done = true;
    return SortedRun.of({
      fd: this.fd,
      stride: this.stride,
      count: this.count,
      bloom: this.bloom,
      fences: this.fences.slice(0, Math.ceil(this.count / BLOCK_ENTRIES) * 4),
    });
  }

  /** Drops what was written (its file is already unlinked: closing it frees the space). */
  abandon(): void {
    if (this.done) return;
    this.done = true;
    closeSync(this.fd);
  }

  private flush(): void {
    const bytes = new Uint8Array(this.chunk.buffer, 0, this.buffered * this.stride * 4);
    for (let done = 0; done < bytes.length; )
      done += writeSync(this.fd, bytes, done, bytes.length - done, this.fileBytes + done);
    this.fileBytes += bytes.length;
    this.buffered = 0;
  }
}

/**
 * Entries of a run in key order: `at` is the current entry's place in `chunk`, or -1 past the end.
 */
export class RunCursor {
  readonly chunk: Uint32Array;
  at = -1;
  private next = 0;
  private end = 0;

  constructor(
    private readonly run: SortedRun,
    private readonly stride: number,
  ) {
    this.chunk = new Uint32Array(CHUNK_ENTRIES * stride);
    this.advance();
  }

  advance(): void {
    if (this.at >= 0 && this.at + this.stride < this.end * this.stride) {
      this.at += this.stride;
      return;
    }
    if (this.next >= this.run.count) {
      this.at = -1;
      return;
    }
    this.end = Math.min(CHUNK_ENTRIES, this.run.count - this.next);
    this.run.readEntries(this.next, this.end, this.chunk);
    this.next += this.end;
    this.at = 0;
  }
}
