/**
 * What the benchmark scripts share beyond the workload (test/support/workload.ts) and the
 * service process (test/support/service-process.ts): the command line, building the service when
 * its sources changed, the git state and the machine for a report, one timed request on a
 * keep-alive agent, /metrics, the end-of-run books checks, the one table formatter, result files.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { TigerBeetleLedger } from '../src/ledger/tigerbeetle';
import type { RunningMariaDb } from '../test/support/mariadb';
import { REPO_DIR, call, pool } from '../test/support/service-process';
import { Books, CURRENCY, formatMinor, positions } from '../test/support/workload';

export const RESULTS_DIR = path.join(__dirname, 'results');

/**
 * A markdown table: the first two columns (names) left-aligned, the rest (figures) right-aligned.
 */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [
    line(header),
    `|${widths.map((w, i) => (i < 2 ? ':' : '-') + '-'.repeat(w) + (i < 2 ? '-' : ':')).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

const execFileAsync = promisify(execFile);

/**
 * One SQL statement through the `mariadb` client, without blocking the load generator: its rows,
 * columns split.
 */
export async function mariadbQuery(db: RunningMariaDb, sql: string): Promise<string[][]> {
  const login = ['-h127.0.0.1', `-P${db.port}`, `-u${db.user}`, `-p${db.password}`];
  const { stdout } = await execFileAsync('mariadb', [...login, '-N', '-e', sql]);
  return stdout
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\t'));
}

/** Server counters (SHOW GLOBAL STATUS) by name. */
export async function mariadbStatus(
  db: RunningMariaDb,
  names: readonly string[],
): Promise<Map<string, number>> {
  const rows = await mariadbQuery(
    db,
    `SHOW GLOBAL STATUS WHERE Variable_name IN (${names.map((n) => `'${n}'`).join(', ')})`,
  );
  return new Map(rows.map(([name, value]) => [name!, Number(value)]));
}

/** A figure with `digits` decimals, or n/a where there is none. */
export function fixed(value: number | undefined, digits = 0): string {
  return value === undefined || !Number.isFinite(value) ? 'n/a' : value.toFixed(digits);
}

/** Milliseconds: two decimals below 10, one below 100, none above. */
export function ms(value: number): string {
  return value.toFixed(Math.max(0, 2 - Math.floor(Math.log10(Math.max(value, 1)))));
}

/** A progress line: seconds since the run started, then the message. */
export function progressLog(startedAt: number): (message: string) => void {
  return (message) =>
    process.stdout.write(
      `[${((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)} s] ${message}\n`,
    );
}

/** A script's command line: `--flag`, `--flag value`, `--flag number`. */
export function flags(argv: readonly string[]): {
  has(flag: string): boolean;
  value(flag: string): string | undefined;
  number(flag: string, fallback: number, positive?: boolean): number;
} {
  const value = (flag: string): string | undefined => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  return {
    has: (flag) => argv.includes(flag),
    value,
    /** The flag's number (≥ 0, or > 0 when `positive`), the fallback when it is absent. */
    number: (flag, fallback, positive = false) => {
      const raw = value(flag);
      if (raw === undefined) return fallback;
      const n = Number(raw);
      if (!Number.isFinite(n) || n < 0 || (positive && n === 0))
        throw new Error(`${flag} ${raw}: not a ${positive ? 'positive' : 'non-negative'} number`);
      return n;
    },
  };
}

/**
 * Compiles the service (tsconfig.build.json: src only) when a source is newer than
 * dist/src/main.js, or always with `force`; returns warnings, logged as they are found.
 */
export function buildIfStale(
  serviceDir: string,
  options: { build: boolean; force: boolean },
  log: (message: string) => void,
): string[] {
  const main = path.join(serviceDir, 'dist/src/main.js');
  const built = fs.existsSync(main) ? fs.statSync(main).mtimeMs : 0;
  const newer = (file: string): boolean => fs.existsSync(file) && fs.statSync(file).mtimeMs > built;
  const walk = (dir: string): boolean =>
    fs.existsSync(dir) &&
    fs
      .readdirSync(dir, { withFileTypes: true })
      .some((e) =>
        e.isDirectory()
          ? walk(path.join(dir, e.name))
          : e.name.endsWith('.ts') && newer(path.join(dir, e.name)),
      );
  const stale =
    built === 0 ||
    walk(path.join(serviceDir, 'src')) ||
    ['tsconfig.json', 'tsconfig.build.json', 'package.json'].some((f) =>
      newer(path.join(serviceDir, f)),
    );
  if (!options.build || (!options.force && !stale)) {
    log(
      options.build
        ? 'dist/ is newer than every source file: not rebuilding (--build forces it)'
        : 'not building (--no-build)',
    );
    return [];
  }
  log(`building ${serviceDir} (tsc -p tsconfig.build.json)`);
  const started = Date.now();
  const tsc = [
    path.join(serviceDir, 'node_modules/typescript/bin/tsc'),
    path.join(REPO_DIR, 'node_modules/typescript/bin/tsc'),
  ].find((f) => fs.existsSync(f))!;
  const project = fs.existsSync(path.join(serviceDir, 'tsconfig.build.json'))
    ? 'tsconfig.build.json'
    : 'tsconfig.json';
  const result = spawnSync(process.execPath, [tsc, '-p', project], {
    cwd: serviceDir,
    encoding: 'utf8',
  });
  if (result.status === 0) return [];
  const errors = `${result.stdout}${result.stderr}`.trim().split('\n');
  // tsc still emits on type errors (work in progress elsewhere): go on if it did, and say so.
  if (!fs.existsSync(main) || fs.statSync(main).mtimeMs < started - 1000)
    throw new Error(`build failed:\n${errors.join('\n')}`);
  const warning = `build had type errors; dist was emitted anyway. First: ${errors[0]?.slice(0, 160)}`;
  log(`WARNING: ${warning}`);
  return [warning];
}

export interface GitDescription {
  head: string;
  /** `git status --porcelain` lines of src/ and package.json. */
  dirtyFiles: string[];
}

export function gitDescription(dir: string): GitDescription {
  const head =
    spawnSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: dir,
      encoding: 'utf8',
    }).stdout.trim() || 'unknown';
  const status = spawnSync('git', ['status', '--porcelain', '--', 'src', 'package.json'], {
    cwd: dir,
    encoding: 'utf8',
  }).stdout.trim();
  return { head, dirtyFiles: status === '' ? [] : status.split('\n').map((l) => l.trim()) };
}

/**
 * "abc1234" or "abc1234 + 2 uncommitted file(s) in src/package.json", for a report's first line.
 */
export function gitLabel(git: GitDescription): string {
  return `${git.head}${git.dirtyFiles.length > 0 ? ` + ${git.dirtyFiles.length} uncommitted file(s) in src/package.json` : ''}`;
}

/** An answer to sendOn, timed. */
export interface TimedAnswer {
  status: number;
  text: string;
  /**
   * From the request handed to the agent to the last byte of the answer (waiting for a free socket
   * included).
   */
  ms: number;
  /** From the request given a socket to the last byte: what the service and the network took. */
  wireMs: number;
}

/** One request on a keep-alive agent; status 0 = socket error or timeout (the text says which). */
export function sendOn(
  agent: http.Agent,
  port: number,
  method: string,
  urlPath: string,
  headers: Record<string, string>,
  body?: string,
): Promise<TimedAnswer> {
  return new Promise((resolve) => {
    const started = performance.now();
    let onSocket = started;
    let settled = false;
    const done = (partial: Omit<TimedAnswer, 'wireMs'>): void => {
      const answer = { ...partial, wireMs: performance.now() - onSocket };
      if (!settled) {
        settled = true;
        resolve(answer);
      }
    };
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        agent,
        headers:
          body === undefined
            ? headers
            : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          done({
            status: response.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
            ms: performance.now() - started,
          }),
        );
        response.on('error', (error) =>
          done({ status: 0, text: error.message, ms: performance.now() - started }),
        );
      },
    );
    request.once('socket', () => (onSocket = performance.now()));
    request.setTimeout(10_000, () => request.destroy(new Error('timeout after 10 s')));
    request.on('error', (error) =>
      done({ status: 0, text: error.message, ms: performance.now() - started }),
    );
    request.end(body);
  });
}

export interface MetricSample {
  name: string;
  /** Label name → value; {} for a sample without labels. */
  labels: Record<string, string>;
  value: number;
}

/**
 * GET /metrics (Prometheus text) as samples, comments left out; undefined when the service answers
 * none.
 */
export async function scrapeMetrics(base: string): Promise<MetricSample[] | undefined> {
  let text: string;
  try {
    const response = await fetch(`${base}/metrics`);
    if (!response.ok) return undefined;
    text = await response.text();
  } catch {
    return undefined;
  }
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    // Blank lines and # comments do not match.
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line.trim());
    if (match === null) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g))
      labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

/**
 * The end-of-run checks every benchmark makes of the ledger: no participant has anything left
 * reserved (read from the ledger itself: the API's reservedValue is 0 by definition, as in
 * central-ledger), and debits equal credits on both TigerBeetle ledgers of the currency.
 */
export async function ledgerChecks(
  names: readonly string[],
  cluster: { clusterId: bigint; addresses: string[] },
): Promise<Check[]> {
  const ledger = new TigerBeetleLedger({
    clusterId: cluster.clusterId,
    replicaAddresses: cluster.addresses,
  });
  try {
    const balances = await ledger.balances(
      names.map((participant) => ({ participant, currency: CURRENCY })),
    );
    const reservedLeft = names.flatMap((name, i) => {
      const balance = balances[i];
      if (balance === undefined) return [`${name}: no accounts`];
      return balance.reserved === 0n ? [] : [`${name}: ${formatMinor(balance.reserved)} reserved`];
    });
    const sums = await ledger.trialBalance(CURRENCY);
    return [
      {
        name: 'nothing left reserved (the ledger: no pending transfer of any participant)',
        pass: reservedLeft.length === 0,
        detail:
          reservedLeft.length === 0 ? `${names.length} participants` : reservedLeft.join('; '),
      },
      {
        name: `trial balance: debits = credits on the ${CURRENCY} ledger`,
        pass: sums.debits === sums.credits,
        detail: `ledger ${sums.ledger}: debits ${sums.debits} credits ${sums.credits}`,
      },
    ];
  } finally {
    await ledger.close();
  }
}

/**
 * The books of the committed transfers: a sample of them answers GET /transfers/{id} COMMITTED
 * with its fulfilment, and every participant's position moved by exactly Σ sent − Σ received.
 * `label` ("Kafka: ") goes before each check's name.
 */
export async function transferChecks(
  base: string,
  names: readonly string[],
  positionsBefore: Map<string, bigint>,
  books: Books,
  label = '',
): Promise<Check[]> {
  let sampleBad = 0;
  const sampleErrors: string[] = [];
  await pool(books.sample, 16, async (t) => {
    const got = await call(base, 'GET', `/transfers/${t.id}`, undefined, {
      'fspiop-source': names[t.payee]!,
    });
    if (
      got.status !== 200 ||
      got.body?.transferState !== 'COMMITTED' ||
      got.body?.fulfilment !== t.fulfilment
    ) {
      sampleBad++;
      if (sampleErrors.length < 3)
        sampleErrors.push(`${t.id}: ${got.status} ${got.text.slice(0, 160)}`);
    }
  });
  const positionsAfter = await positions(base, names);
  const positionRows: string[][] = [];
  let positionsOk = true;
  for (const [i, name] of names.entries()) {
    const moved = positionsAfter.get(name)! - positionsBefore.get(name)!;
    const want = books.expected.get(i) ?? 0n;
    if (moved !== want) positionsOk = false;
    positionRows.push([
      name,
      formatMinor(positionsBefore.get(name)!),
      formatMinor(positionsAfter.get(name)!),
      formatMinor(moved),
      formatMinor(want),
      moved === want ? 'ok' : 'MISMATCH',
    ]);
  }
  return [
    {
      name: `${label}GET /transfers/{id}: a sample of ${books.sample.length} is COMMITTED with its fulfilment`,
      pass: sampleBad === 0,
      detail: sampleBad === 0 ? 'all COMMITTED' : `${sampleBad} wrong: ${sampleErrors.join('; ')}`,
    },
    {
      name: `${label}positions moved by exactly the sums sent (per participant, bigint)`,
      pass: positionsOk,
      detail: `${books.committed} transfers, volume ${formatMinor(books.volume)} ${CURRENCY}\n${table(['participant', 'before', 'after', 'moved', 'expected', ''], positionRows)}`,
    },
  ];
}

/** The end of every printed report: the checks, then the run's warnings. */
export function checkLines(checks: readonly Check[], warnings: readonly string[]): string[] {
  return [
    'Books:',
    ...checks.map(
      (c) => `  ${c.pass ? 'PASS' : 'FAIL'}  ${c.name}: ${c.detail.replace(/\n/g, '\n        ')}`,
    ),
    ...(warnings.length > 0 ? ['', ...warnings.map((w) => `WARNING: ${w}`)] : []),
  ];
}

type Line = string | undefined | false;

/**
 * A printed report: its sections separated by one empty line. A section is a text (a line, a
 * table) or a list of lines printed together; absent (undefined, false) lines, and absent or
 * empty sections, are left out.
 */
export function paragraphs(...sections: (Line | readonly Line[])[]): string {
  return sections
    .map((s) =>
      Array.isArray(s)
        ? s.filter((l): l is string => typeof l === 'string').join('\n')
        : (s as Line),
    )
    .filter((s): s is string => typeof s === 'string' && s !== '')
    .join('\n\n');
}

/** The machine, as every result file records it. */
export function machineDescription(): {
  cpus: number;
  model: string | undefined;
  memGiB: number;
  node: string;
} {
  return {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    memGiB: os.totalmem() / 2 ** 30,
    node: process.version,
  };
}

/** Writes bench/results/<name>.json (bigints as strings) and returns its path. */
export function writeResult(name: string, value: unknown): string {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2),
  );
  return file;
}

/**
 * A FAIL line naming the failed checks, and exit code 1, when any failed or the run did not finish.
 */
export function failOnChecks(checks: readonly Check[], finished = true): void {
  const failed = checks.filter((c) => !c.pass);
  if (failed.length > 0 || !finished) {
    process.stdout.write(
      `\nFAIL: ${failed.map((c) => c.name).join('; ') || 'the run did not finish'}\n`,
    );
    process.exitCode = 1;
  }
}

/**
 * Runs a script's main and exits: with process.exitCode when it resolves (autocannon, kafkajs
 * and the ledger client may leave handles behind), with 1 and the stack when it throws.
 */
export function runMain(main: () => Promise<void>, what = 'benchmark'): void {
  main().then(
    () => process.exit(process.exitCode ?? 0),
    (error: unknown) => {
      process.stderr.write(
        `${what} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(1);
    },
  );
}
