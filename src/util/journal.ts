/**
 * An append-only journal file of JSON lines: what the embedded stores use to survive a restart.
 * Appends of concurrent callers are grouped (one write and one fdatasync per group, through a
 * BatchQueue), and an append resolves only once it is on disk, with where each line landed so
 * that a store may later read that line back instead of keeping its record in memory. A torn
 * last line — a crash in the middle of a write — is cut off on opening, which is safe because its
 * callers were never answered. The file is read line by line (never whole), so its size is not
 * bounded by memory.
 */
import {
  appendFile,
  closeSync,
  existsSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { BatchQueue } from './batch-queue';
import type { LinePosition } from './record-index';

/** Lines per grouped write; far below what one write(2) takes. */
const MAX_LINES_PER_WRITE = 8192;
/** Bytes read or written per system call when the whole file is walked (replay, compaction). */
const CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;

export interface JournalOptions {
  /** Entries hold bigints (written as {"$bigint": "…"}); leave off where they never do. */
  bigints: boolean;
  /** Bound on an append's wait for the disk. */
  timeoutMs?: number;
}

/** What compaction writes the new file with: entries, and lines copied from the old file. */
export interface JournalWriter {
  write(entry: unknown): LinePosition;
  /** Copies the old file's line at `from`; returns its offset in the new file. */
  copy(from: LinePosition): number;
}

export class JournalError extends Error {
  override name = 'JournalError';
}

export class Journal {
  private fd: number;
  /** For reading lines back (pread): appends go through `fd`, opened O_APPEND. */
  private readFd: number;
  /** The file's length: where the next line lands. */
  private size: number;
  private readonly queue: BatchQueue<string, LinePosition>;

  /** A replacer only where entries hold bigints: it costs a call per value of every entry. */
  private readonly replacer: typeof replace | undefined;

  private constructor(
    private readonly path: string,
    options: JournalOptions,
  ) {
    this.replacer = options.bigints ? replace : undefined;
    const timeoutMs = options.timeoutMs ?? 10_000;
    this.fd = openSync(path, 'a');
    this.readFd = openSync(path, 'r');
    this.size = fstatSync(this.fd).size;
    this.queue = new BatchQueue(
      (lines) => this.write(lines),
      {
        maxBatch: MAX_LINES_PER_WRITE,
        maxInFlight: 1,
        lingerMs: 0,
        maxQueued: 1_000_000,
        timeoutMs,
      },
      (reason) => new JournalError(`journal ${path}: ${reason}`),
    );
  }

  /** Opens (creating) the journal, its torn last line cut off; read what it holds with forEach. */
  static open(path: string, options: JournalOptions): Journal {
    mkdirSync(dirname(path), { recursive: true });
    const created = !existsSync(path);
    const fd = openSync(path, 'a+');
    // A new file's name must reach the disk before its first line is answered as durable.
    if (created) syncDirectory(dirname(path));
    try {
      // Only whole lines count: a line without its newline was being written when the process died.
      const complete = endOfLastLine(fd, fstatSync(fd).size);
      // Cut the torn tail off, so that new entries start on a line of their own.
      if (complete < fstatSync(fd).size) ftruncateSync(fd, complete);
    } finally {
      closeSync(fd);
    }
    return new Journal(path, options);
  }

  /** The file's length in bytes. */
  get bytes(): number {
    return this.size;
  }

  /** Every entry in the file, in order, with its line's position; one chunk in memory at a time. */
  forEach(visit: (entry: unknown, position: LinePosition) => void): void {
    let lineNumber = 0;
    forEachLine(this.readFd, this.size, (bytes, offset) => {
      lineNumber++;
      if (bytes.length === 0) return;
      let entry: unknown;
      try {
        entry = revive(JSON.parse(bytes.toString('utf8')));
      } catch (error) {
        throw new JournalError(
          `journal ${this.path} is corrupt at line ${lineNumber}: ${(error as Error).message}`,
        );
      }
      visit(entry, { offset, length: bytes.length });
    });
  }

  /** The entry on the line at `position` (one that append, forEach or rewrite gave). */
  read(position: LinePosition): unknown {
    return revive(JSON.parse(this.lineAt(position).toString('utf8')));
  }

  /** The bytes of the line at `position`, without its line end. */
  private lineAt(position: LinePosition): Buffer {
    const bytes = Buffer.allocUnsafe(position.length);
    for (let done = 0; done < position.length; ) {
      const read = readSync(
        this.readFd,
        bytes,
        done,
        position.length - done,
        position.offset + done,
      );
      if (read === 0)
        throw new JournalError(
          `journal ${this.path}: line at ${position.offset} runs past the end of the file`,
        );
      done += read;
    }
    return bytes;
  }

  /**
   * Appends the entries (one line each); resolves once they are on disk, with their lines'
   * positions.
   */
  append(entries: readonly unknown[]): Promise<LinePosition[]> {
    const lines = entries.map((entry) => JSON.stringify(entry, this.replacer));
    if (lines.length <= MAX_LINES_PER_WRITE) return this.queue.submit(lines);
    // More lines than one write takes (a sweep recording thousands of expiries at once): submitted
    // together, in order, in writes of at most MAX_LINES_PER_WRITE; all on disk, or the call fails.
    const parts: Promise<LinePosition[]>[] = [];
    for (let i = 0; i < lines.length; i += MAX_LINES_PER_WRITE)
      parts.push(this.queue.submit(lines.slice(i, i + MAX_LINES_PER_WRITE)));
    return Promise.all(parts).then((positions) => positions.flat());
  }

  /**
   * Replaces the whole journal by what `produce` writes (compaction), atomically by rename. Lines
   * copied from the old file keep their bytes; `produce` must not append meanwhile.
   */
  rewrite(produce: (writer: JournalWriter) => void): void {
    const temporary = `${this.path}.compact`;
    const fd = openSync(temporary, 'w');
    let size = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const flush = (): void => {
      const bytes = Buffer.concat(pending, pendingBytes);
      for (let done = 0; done < bytes.length; )
        done += writeSync(fd, bytes, done, bytes.length - done);
      pending = [];
      pendingBytes = 0;
    };
    const add = (line: Buffer): number => {
      const offset = size;
      pending.push(line, LINE_END);
      pendingBytes += line.length + 1;
      size += line.length + 1;
      if (pendingBytes >= CHUNK_BYTES) flush();
      return offset;
    };
    try {
      produce({
        write: (entry) => {
          const line = Buffer.from(JSON.stringify(entry, this.replacer), 'utf8');
          return { offset: add(line), length: line.length };
        },
        copy: (from) => add(this.lineAt(from)),
      });
      flush();
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.path);
    // The rename is durable only once the directory is: a power loss could otherwise bring back the
    // old file.
    syncDirectory(dirname(this.path));
    closeSync(this.fd);
    closeSync(this.readFd);
    this.fd = openSync(this.path, 'a');
    this.readFd = openSync(this.path, 'r');
    this.size = size;
  }

  close(): void {
    this.queue.close();
    closeSync(this.fd);
    closeSync(this.readFd);
  }

  private async write(lines: string[]): Promise<LinePosition[]> {
    const fd = this.fd;
    const start = this.size;
    // The batch turned into bytes once, each line's length read off its newline: JSON text has no
    // newline but those ending lines (it escapes them inside strings).
    const bytes = Buffer.from(lines.join('\n') + '\n', 'utf8');
    const positions: LinePosition[] = [];
    for (let from = 0; from < bytes.length; ) {
      const end = bytes.indexOf(NEWLINE, from);
      positions.push({ offset: start + from, length: end - from });
      from = end + 1;
    }
    const offset = start + bytes.length;
    try {
      await new Promise<void>((resolve, reject) =>
        appendFile(fd, bytes, (error) => (error === null ? resolve() : reject(error))),
      );
      this.size = offset;
      await new Promise<void>((resolve, reject) =>
        fdatasync(fd, (error) => (error === null ? resolve() : reject(error))),
      );
    } catch (error) {
      // Part of the batch may have reached the file (a full disk): cut it off, so that no torn line
      // is left inside the journal for the next batch to be glued to (a replay would refuse it). If
      // even that fails, later lines land after whatever is there.
      try {
        ftruncateSync(fd, start);
        this.size = start;
      } catch {
        this.size = fstatSync(fd).size;
      }
      throw error;
    }
    return positions;
  }
}

const LINE_END = Buffer.from('\n');

/** fsync of a directory: makes a file created or renamed in it survive a power loss. */
function syncDirectory(directory: string): void {
  const fd = openSync(directory, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The length of the file up to and including its last newline. */
function endOfLastLine(fd: number, size: number): number {
  const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(size, 1)));
  for (let end = size; end > 0; ) {
    const start = Math.max(0, end - chunk.length);
    const read = readSync(fd, chunk, 0, end - start, start);
    const last = chunk.subarray(0, read).lastIndexOf(NEWLINE);
    if (last >= 0) return start + last + 1;
    end = start;
  }
  return 0;
}

/**
 * Calls `visit` with each newline-terminated line of the first `size` bytes (without its newline).
 */
function forEachLine(
  fd: number,
  size: number,
  visit: (line: Buffer, offset: number) => void,
): void {
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  /** The start of a line that runs past the chunk read so far. */
  let carry: Buffer[] = [];
  let lineStart = 0;
  for (let position = 0; position < size; ) {
    const read = readSync(fd, chunk, 0, Math.min(chunk.length, size - position), position);
    if (read === 0) break;
    let from = 0;
    for (
      let end = chunk.indexOf(NEWLINE, 0);
      end >= 0 && end < read;
      end = chunk.indexOf(NEWLINE, from)
    ) {
      const piece = chunk.subarray(from, end);
      visit(carry.length === 0 ? piece : Buffer.concat([...carry, piece]), lineStart);
      carry = [];
      lineStart = position + end + 1;
      from = end + 1;
    }
    if (from < read) carry.push(Buffer.from(chunk.subarray(from, read)));
    position += read;
  }
}

/** bigint survives JSON as {"$bigint": "<decimal>"}. */
function replace(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? { $bigint: value.toString() } : value;
}

/**
 * Turns every {"$bigint": "<decimal>"} in a parsed entry back into a bigint, in place. A walk
 * after a plain JSON.parse rather than a reviver: V8 parses ~3× faster without one (a replay at
 * start parses every line of both journals). Only a replaced value is assigned back.
 */
function revive(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const revived = revive(value[i]);
      if (revived !== value[i]) value[i] = revived;
    }
    return value;
  }
  const record = value as Record<string, unknown>;
  if ('$bigint' in record && onlyBigint(record)) return BigInt(record.$bigint as string);
  for (const key in record) {
    const revived = revive(record[key]);
    if (revived !== record[key]) record[key] = revived;
  }
  return record;
}

/** No key but `$bigint` (a loop, not Object.keys: no array per record). */
function onlyBigint(record: Record<string, unknown>): boolean {
  for (const key in record) if (key !== '$bigint') return false;
  return true;
}
