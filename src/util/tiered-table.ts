/**
 * A map of 128-bit keys (4 words, never all zero) to a few 32-bit words, whose memory stays flat
 * however many keys it holds: the newest keys are in a hash table in memory (the hot tier); when
 * it holds `hotEntries`, they are written out as an immutable sorted run (util/sorted-run.ts: a
 * scratch file, its Bloom filter and block index in memory, ~1.4 bytes a key) and the hot tier
 * starts empty. Runs of similar size are merged (newest values win), so there are at most
 * log2(keys / hotEntries) + 1 of them (one more while a merge is under way). A lookup tries the hot
 * tier, then the runs newest first:
 * a key that is nowhere costs a few filter probes and no I/O (but for the filters' ~1% false
 * positives), one found in a run one block read (the file stays in the page cache, not in RSS).
 *
 * A merge is never done in one go while the table is in use (at a million keys that stalled the
 * caller for most of a second, and it grows with the keys): it is advanced a slice at a time by
 * later `set`s, paced to finish before the next spill — about keys ÷ hotEntries entries a set —
 * while lookups still read the two runs it is merging.
 *
 * Without `spill` the hot tier grows without bound (the in-memory ledger of tests). The runs
 * are a cache of what the owner rebuilds at start from its journal: nothing in them is durable.
 */
import { join } from 'node:path';
import { RunCursor, RunWriter, SortedRun, compareKeys, keyHash } from './sorted-run';

/** Grow when more than this share of slots is taken (open addressing, linear probing). */
const MAX_LOAD = 0.75;
const INITIAL_SLOTS = 1024;
/**
 * The least a set advances a merge by: small enough to cost microseconds, big enough to finish
 * early when sets are few.
 */
const MIN_MERGE_STEP = 64;

export interface SpillOptions {
  /** Where run files are created (and at once unlinked). */
  dir: string;
  /** Names the run files, for whoever lists the directory while one is being written. */
  name: string;
  /** Entries the hot tier holds before they are written to a run. */
  hotEntries: number;
}

/** The hot tier: open addressing over typed arrays, a zero key marks an empty slot. */
class HotTable {
  slots = INITIAL_SLOTS;
  keys = new Uint32Array(INITIAL_SLOTS * 4);
  values: Uint32Array;
  used = 0;

  constructor(private readonly words: number) {
    this.values = new Uint32Array(INITIAL_SLOTS * words);
  }

  /** The slot holding the key, or the empty slot where it would go. */
  slotOf(key: ArrayLike<number>, at: number): number {
    let slot = keyHash(key, at, 0) & (this.slots - 1);
    for (; !this.isEmpty(slot); slot = (slot + 1) & (this.slots - 1))
      if (compareKeys(this.keys, slot * 4, key, at) === 0) return slot;
    return slot;
  }

  isEmpty(slot: number): boolean {
    const at = slot * 4;
    return (this.keys[at]! | this.keys[at + 1]! | this.keys[at + 2]! | this.keys[at + 3]!) === 0;
  }

  set(key: ArrayLike<number>, at: number, values: ArrayLike<number>, valuesAt: number): void {
    let slot = this.slotOf(key, at);
    if (this.isEmpty(slot)) {
      if (this.used + 1 > this.slots * MAX_LOAD) {
        this.grow();
        slot = this.slotOf(key, at);
      }
      this.used++;
      for (let w = 0; w < 4; w++) this.keys[slot * 4 + w] = key[at + w]!;
    }
    for (let w = 0; w < this.words; w++) this.values[slot * this.words + w] = values[valuesAt + w]!;
  }

  /**
   * The taken slots in key order. Each slot is packed with its key's leading bits into one exact
   * double (a 53-bit integer: the key's top 53 − log2(slots) bits above the slot number), so the
   * engine's native numeric sort orders them; only slots whose keys share those bits (next to
   * never for random keys) are then compared whole. A spill of a full hot tier takes ~10 ms
   * where a comparison sort over every key took ~50.
   */
  sortedSlots(): Uint32Array {
    const keys = this.keys;
    const slotBits = Math.log2(this.slots);
    const prefixBits = 53 - slotBits;
    const packable = Number.isInteger(slotBits) && prefixBits >= 21 && prefixBits <= 43;
    if (!packable) throw new Error(`a hot tier of ${this.slots} slots cannot be sorted by packing`);
    const scale = 2 ** slotBits;
    const packed = new Float64Array(this.used);
    let n = 0;
    for (let slot = 0; slot < this.slots; slot++) {
      if (this.isEmpty(slot)) continue;
      const high = keys[slot * 4 + 3]!;
      const prefix =
        prefixBits > 32
          ? high * 2 ** (prefixBits - 32) + (keys[slot * 4 + 2]! >>> (64 - prefixBits))
          : high >>> (32 - prefixBits);
      packed[n++] = prefix * scale + slot;
    }
    packed.sort();
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = packed[i]! % scale;
    for (let first = 0; first < n; ) {
      const prefix = Math.floor(packed[first]! / scale);
      let end = first + 1;
      while (end < n && Math.floor(packed[end]! / scale) === prefix) end++;
      if (end - first > 1)
        order.subarray(first, end).sort((a, b) => compareKeys(keys, a * 4, keys, b * 4));
      first = end;
    }
    return order;
  }

  /** Empty, keeping its size: it fills up to the same limit again. */
  clear(): void {
    this.keys.fill(0);
    this.used = 0;
  }

  private grow(): void {
    const old = { slots: this.slots, keys: this.keys, values: this.values };
    this.slots *= 2;
    this.keys = new Uint32Array(this.slots * 4);
    this.values = new Uint32Array(this.slots * this.words);
    this.used = 0;
    for (let from = 0; from < old.slots; from++) {
      const at = from * 4;
      if ((old.keys[at]! | old.keys[at + 1]! | old.keys[at + 2]! | old.keys[at + 3]!) !== 0)
        this.set(old.keys, at, old.values, from * this.words);
    }
  }
}

/**
 * Two adjacent runs being merged into one (where both hold a key, the newer's values), a slice at a
 * time.
 */
class RunMerge {
  private readonly fromNewer: RunCursor;
  private readonly fromOlder: RunCursor;
  private readonly writer: RunWriter;
  /** Entries of the two runs not read yet. */
  remaining: number;

  constructor(
    readonly older: SortedRun,
    readonly newer: SortedRun,
    path: string,
    private readonly stride: number,
  ) {
    this.writer = new RunWriter(path, stride, newer.count + older.count);
    try {
      this.fromNewer = newer.cursor();
      this.fromOlder = older.cursor();
    } catch (error) {
      this.writer.abandon();
      throw error;
    }
    this.remaining = newer.count + older.count;
  }

  /** Writes up to `entries` more merged entries; true once both runs are read whole. */
  step(entries: number): boolean {
    const [a, b] = [this.fromNewer, this.fromOlder];
    for (let written = 0; written < entries && this.remaining > 0; written++) {
      if (a.at < 0 && b.at < 0)
        throw new Error(`a merge ran out of entries with ${this.remaining} still counted`);
      if (a.at < 0) this.take(b);
      else if (b.at < 0) this.take(a);
      else {
        const order = compareKeys(a.chunk, a.at, b.chunk, b.at);
        if (order === 0) {
          b.advance();
          this.remaining--;
        }
        this.take(order <= 0 ? a : b);
      }
    }
    return this.remaining === 0;
  }

  /** The merged run (once step said so). */
  finish(): SortedRun {
    if (this.remaining !== 0)
      throw new Error(`a merge finished with ${this.remaining} entries unread`);
    return this.writer.finish();
  }

  abandon(): void {
    this.writer.abandon();
  }

  private take(from: RunCursor): void {
    // Word by word: a subarray per merged entry is an allocation per entry, on the set path.
    const slot = this.writer.slot;
    const at = this.writer.slotAt;
    for (let w = 0; w < this.stride; w++) slot[at + w] = from.chunk[from.at + w]!;
    this.writer.add();
    from.advance();
    this.remaining--;
  }
}

export class TieredTable {
  private readonly hot: HotTable;
  /** Oldest first. */
  private runs: SortedRun[] = [];
  /** The merge of the two newest runs under way, if any (both stay in `runs` until it is done). */
  private merge: RunMerge | undefined;
  /**
   * Entries the merges this one leads to will read (an upper bound: duplicates are not known
   * ahead).
   */
  private laterMergeEntries = 0;
  /** A merge the disk refused: no other is started before the next spill. */
  private mergesHeld = false;
  private keys = 0;
  /**
   * The hot tier's size at which it is written out next: later than its limit after a write failed.
   */
  private spillAt: number;
  private nextRun = 0;
  private readonly scratch: Uint32Array;
  /**
   * Closed, its run files are gone (and their descriptors may be another file's): any use is a bug.
   */
  private closed = false;

  constructor(
    private readonly words: number,
    private readonly spill?: SpillOptions,
  ) {
    if (!positiveInteger(words))
      throw new Error(`a tiered table needs at least one value word, got ${words}`);
    if (spill !== undefined && !positiveInteger(spill.hotEntries))
      throw new Error(`hot entries must be a positive integer, got ${spill.hotEntries}`);
    this.hot = new HotTable(words);
    this.scratch = new Uint32Array(words);
    this.spillAt = spill?.hotEntries ?? Infinity;
  }

  /** Distinct keys held. */
  get size(): number {
    return this.keys;
  }

  /** Runs on disk (for tests and figures). */
  get runCount(): number {
    return this.runs.length;
  }

  /** The values kept for `key` (4 words), copied, or undefined. */
  get(key: Uint32Array): Uint32Array | undefined {
    this.assertOpen();
    const slot = this.hot.slotOf(key, 0);
    if (!this.hot.isEmpty(slot))
      return this.hot.values.slice(slot * this.words, (slot + 1) * this.words);
    const into = new Uint32Array(this.words);
    for (let r = this.runs.length - 1; r >= 0; r--)
      if (this.runs[r]!.get(key, 0, into)) return into;
    return undefined;
  }

  /** Keeps `values` for `key`, in place of what was kept for it. */
  set(key: Uint32Array, values: ArrayLike<number>): void {
    this.assertOpen();
    if ((key[0]! | key[1]! | key[2]! | key[3]!) === 0)
      throw new Error('a tiered table key is never zero');
    if (values.length !== this.words)
      throw new Error(`expected ${this.words} words, got ${values.length}`);
    if (
      this.hot.isEmpty(this.hot.slotOf(key, 0)) &&
      !this.runs.some((run) => run.get(key, 0, this.scratch))
    )
      this.keys++;
    this.hot.set(key, 0, values, 0);
    if (this.spill === undefined) return;
    if (this.hot.used >= this.spillAt) this.spillOrKeep(this.spill);
    else if (this.merge !== undefined) this.advanceMerge(this.spill);
  }

  /**
   * Every value, in one array (`size` × words, in key order on disk, in slot order in memory),
   * for `visit` to change in place; the changes are kept. With spill, the runs are merged into
   * one first (the hot tier written out too): the array is the only transient memory.
   */
  rewriteValues(visit: (values: Uint32Array, count: number) => void): void {
    this.assertOpen();
    if (this.spill === undefined) {
      const slots: number[] = [];
      for (let slot = 0; slot < this.hot.slots; slot++)
        if (!this.hot.isEmpty(slot)) slots.push(slot);
      const values = new Uint32Array(slots.length * this.words);
      slots.forEach((slot, i) =>
        values.set(
          this.hot.values.subarray(slot * this.words, (slot + 1) * this.words),
          i * this.words,
        ),
      );
      visit(values, slots.length);
      slots.forEach((slot, i) =>
        this.hot.values.set(
          values.subarray(i * this.words, (i + 1) * this.words),
          slot * this.words,
        ),
      );
      return;
    }
    if (this.hot.used > 0) this.spillHot(this.spill.dir, this.spill.name);
    this.mergesHeld = false;
    while (this.merge !== undefined || this.runs.length > 1) {
      this.merge ??= this.beginMerge(this.spill.dir, this.spill.name);
      this.completeMerge();
    }
    const run = this.runs[0];
    if (run === undefined) return visit(new Uint32Array(0), 0);
    if (run.count !== this.keys)
      throw new Error(`a merged run holds ${run.count} keys, the table counted ${this.keys}`);
    const values = new Uint32Array(run.count * this.words);
    const cursor = run.cursor();
    for (let i = 0; cursor.at >= 0; i++, cursor.advance())
      values.set(cursor.chunk.subarray(cursor.at + 4, cursor.at + 4 + this.words), i * this.words);
    visit(values, run.count);
    run.rewriteValues(values);
  }

  /**
   * Releases the run files. Without spill there is nothing to release: the table stays usable (an
   * in-memory ledger may serve a second service).
   */
  close(): void {
    if (this.spill === undefined || this.closed) return;
    this.closed = true;
    this.merge?.abandon();
    this.merge = undefined;
    for (const run of this.runs) run.close();
    this.runs = [];
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('a tiered table used after it was closed');
  }

  /**
   * Writes the hot tier out; if the disk refuses (full, gone), the entries stay in memory and
   * answers stay exact — only the memory bound is lost until a later try, another hot tier's
   * worth of entries on — so the caller (a ledger mid-chain) is never interrupted by a cache.
   */
  private spillOrKeep(spill: SpillOptions): void {
    try {
      this.spillHot(spill.dir, spill.name);
      this.spillAt = spill.hotEntries;
      this.mergesHeld = false;
      this.mergeIfDue(spill);
    } catch (error) {
      this.spillAt = this.hot.used + spill.hotEntries;
      process.emitWarning(
        `${spill.name}: could not write ${this.hot.used} entries to a run in ${spill.dir} (kept in memory, tried again at ${this.spillAt}): ${(error as Error).message}`,
        'TieredTableWarning',
      );
    }
  }

  /** Writes the hot tier out as the newest run (a merge still under way is finished first). */
  private spillHot(dir: string, name: string): void {
    // Paced to be done by now; if it is not (sets that overwrote hot keys, a refused merge), finish
    // it here.
    if (this.merge !== undefined) this.tryToCompleteMerge();
    const order = this.hot.sortedSlots();
    const stride = 4 + this.words;
    let i = 0;
    const run = SortedRun.write(this.runPath(dir, name), stride, order.length, (into, at) => {
      if (i === order.length) return false;
      const slot = order[i++]!;
      for (let w = 0; w < 4; w++) into[at + w] = this.hot.keys[slot * 4 + w]!;
      for (let w = 0; w < this.words; w++)
        into[at + 4 + w] = this.hot.values[slot * this.words + w]!;
      return true;
    });
    this.runs.push(run);
    this.hot.clear();
  }

  /**
   * Like a binary counter, runs double in size from newest to oldest: starts the merge that keeps
   * them so.
   */
  private mergeIfDue(spill: SpillOptions): void {
    if (this.merge !== undefined || this.mergesHeld || !mergeDue(this.runs.map((run) => run.count)))
      return;
    try {
      this.merge = this.beginMerge(spill.dir, spill.name);
    } catch (error) {
      this.holdMerges(error);
    }
  }

  /**
   * Advances the merge under way by its share of the work left before the next spill, and starts
   * the next one it leads to.
   */
  private advanceMerge(spill: SpillOptions): void {
    const merge = this.merge!;
    const setsLeft = Math.max(1, this.spillAt - this.hot.used);
    const entries = Math.max(
      MIN_MERGE_STEP,
      Math.ceil((merge.remaining + this.laterMergeEntries) / setsLeft),
    );
    try {
      if (!merge.step(entries)) return;
      this.completeMerge();
    } catch (error) {
      this.dropMerge();
      this.holdMerges(error);
      return;
    }
    this.mergeIfDue(spill);
  }

  /** The two newest runs, to be merged; what the merges after it will read is estimated now. */
  private beginMerge(dir: string, name: string): RunMerge {
    const counts = this.runs.map((run) => run.count);
    if (counts.length < 2) throw new Error(`a merge needs two runs, there are ${counts.length}`);
    const merge = new RunMerge(
      this.runs[this.runs.length - 2]!,
      this.runs[this.runs.length - 1]!,
      this.runPath(dir, name),
      4 + this.words,
    );
    counts.push(counts.pop()! + counts.pop()!);
    this.laterMergeEntries = 0;
    while (mergeDue(counts)) {
      const merged = counts.pop()! + counts.pop()!;
      this.laterMergeEntries += merged;
      counts.push(merged);
    }
    return merge;
  }

  /** Finishes the merge under way at once and puts its run in place of the two. */
  private completeMerge(): void {
    const merge = this.merge!;
    merge.step(Infinity);
    const merged = merge.finish();
    // Taken off the list only once merged: a failed merge leaves both runs in place.
    const at = this.runs.length - 2;
    if (this.runs[at] !== merge.older || this.runs[at + 1] !== merge.newer)
      throw new Error('a merge outlived the runs it merges');
    this.runs.splice(at, 2, merged);
    this.merge = undefined;
    merge.newer.close();
    merge.older.close();
  }

  /**
   * completeMerge, and if the disk refuses it, the two runs are kept unmerged (answers stay exact).
   */
  private tryToCompleteMerge(): void {
    try {
      this.completeMerge();
    } catch (error) {
      this.dropMerge();
      this.holdMerges(error);
    }
  }

  private dropMerge(): void {
    this.merge?.abandon();
    this.merge = undefined;
  }

  private holdMerges(error: unknown): void {
    this.mergesHeld = true;
    process.emitWarning(
      `${this.spill!.name}: could not merge runs in ${this.spill!.dir} (kept unmerged, tried again at the next spill): ${(error as Error).message}`,
      'TieredTableWarning',
    );
  }

  private runPath(dir: string, name: string): string {
    return join(dir, `${name}.${process.pid}.${this.nextRun++}.run`);
  }
}

/** Whether the newest run has grown to at least half the one before it (`counts` oldest first). */
function mergeDue(counts: readonly number[]): boolean {
  return counts.length >= 2 && counts[counts.length - 2]! < 2 * counts[counts.length - 1]!;
}

function positiveInteger(value: number): boolean {
  return Number.isInteger(value) && value >= 1;
}
