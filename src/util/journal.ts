/**
 * An append-only journal file of JSON lines: what the embedded stores use to survive a restart.
 * Appends of concurrent callers are grouped (one write and one fdatasync per group, through a
 * BatchQueue), and an append resolves only once it is on disk. A torn last line — a crash in the
 * middle of a write — is cut off on opening, which is safe because its callers were never
 * answered.
 */
import { appendFile, closeSync, existsSync, fdatasync, fdatasyncSync, mkdirSync, openSync, readFileSync, renameSync, truncateSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { BatchQueue } from './batch-queue';

/** Lines per grouped write; far below what one write(2) takes. */
const MAX_LINES_PER_WRITE = 8192;

export interface JournalOptions {
  /** Entries hold bigints (written as {"$bigint": "…"}); leave off where they never do. */
  bigints: boolean;
  /** Bound on an append's wait for the disk. */
  timeoutMs?: number;
}

export class JournalError extends Error {
  override name = 'JournalError';
}

export class Journal {
  private fd: number;
  private readonly queue: BatchQueue<string, void>;

  /** A replacer only where entries hold bigints: it costs a call per value of every entry. */
  private readonly replacer: typeof replace | undefined;

  private constructor(private readonly path: string, options: JournalOptions) {
    this.replacer = options.bigints ? replace : undefined;
    const timeoutMs = options.timeoutMs ?? 10_000;
    this.fd = openSync(path, 'a');
    this.queue = new BatchQueue((lines) => this.write(lines), { maxBatch: MAX_LINES_PER_WRITE, maxInFlight: 1, lingerMs: 0, maxQueued: 1_000_000, timeoutMs }, (reason) => new JournalError(`journal ${path}: ${reason}`));
  }

  /** Opens (creating) the journal and returns it with the entries already in it. */
  static open(path: string, options: JournalOptions): { journal: Journal; entries: unknown[] } {
    mkdirSync(dirname(path), { recursive: true });
    const entries: unknown[] = [];
    if (existsSync(path)) {
      const text = readFileSync(path, 'utf8');
      // Only whole lines count: a line without its newline was being written when the process died.
      const complete = text.slice(0, text.lastIndexOf('\n') + 1);
      complete.split('\n').forEach((line, index) => {
        if (line.length === 0) return;
        try {
          entries.push(JSON.parse(line, revive));
        } catch (error) {
          throw new JournalError(`journal ${path} is corrupt at line ${index + 1}: ${(error as Error).message}`);
        }
      });
      // Cut the torn tail off, so that new entries start on a line of their own.
      if (complete.length < text.length) truncateSync(path, Buffer.byteLength(complete));
    }
    return { journal: new Journal(path, options), entries };
  }

  append(entries: readonly unknown[]): Promise<void[]> {
    return this.queue.submit(entries.map((entry) => JSON.stringify(entry, this.replacer)));
  }

  /** Replaces the whole journal by `entries` (compaction), atomically by rename. */
  rewrite(entries: readonly unknown[]): void {
    const temporary = `${this.path}.compact`;
    const fd = openSync(temporary, 'w');
    try {
      writeSync(fd, entries.map((entry) => JSON.stringify(entry, this.replacer) + '\n').join(''));
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.path);
    closeSync(this.fd);
    this.fd = openSync(this.path, 'a');
  }

  close(): void {
    this.queue.close();
    closeSync(this.fd);
  }

  private async write(lines: string[]): Promise<void[]> {
    const fd = this.fd;
    await new Promise<void>((resolve, reject) => appendFile(fd, lines.join('\n') + '\n', (error) => (error === null ? resolve() : reject(error))));
    await new Promise<void>((resolve, reject) => fdatasync(fd, (error) => (error === null ? resolve() : reject(error))));
    return lines.map(() => undefined);
  }
}

/** bigint survives JSON as {"$bigint": "<decimal>"}. */
function replace(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? { $bigint: value.toString() } : value;
}

function revive(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && '$bigint' in value && Object.keys(value).length === 1) {
    return BigInt((value as { $bigint: string }).$bigint);
  }
  return value;
}
