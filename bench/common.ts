/**
 * What every benchmark script shares: child processes that never outlive the run, building the
 * service when its sources changed, and small HTTP helpers against it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { TigerBeetleLedger } from '../src/ledger/tigerbeetle';
import { freePort } from '../test/support/net';
import { CURRENCY, parseMinor } from './workload';

export { freePort };

export const REPO_DIR = path.resolve(__dirname, '..');

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Every child still running, killed if the benchmark itself dies. */
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export function tail(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export interface Started {
  child: ChildProcess;
  pid: number;
  base: string;
  logFile: string;
}

/** Starts `node args…` with its output in logFile, and waits until GET readyPath answers 2xx. */
export async function startProcess(label: string, args: string[], env: NodeJS.ProcessEnv, port: number, logFile: string, readyPath: string, timeoutMs = 60_000): Promise<Started> {
  const fd = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, args, { cwd: REPO_DIR, env, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  children.add(child);
  child.once('exit', () => children.delete(child));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${label} exited while starting:\n${tail(logFile)}`);
    try {
      if ((await fetch(`${base}${readyPath}`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${label} not ready after ${timeoutMs / 1000} s:\n${tail(logFile)}`);
    await sleep(100);
  }
  return { child, pid: child.pid!, base, logFile };
}

export async function stopProcess(started: Started): Promise<void> {
  const { child } = started;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Compiles the service (tsconfig.build.json: src only) when a source is newer than
 * dist/src/main.js, or always with `force`; returns warnings.
 */
export function buildIfStale(serviceDir: string, options: { build: boolean; force: boolean }, log: (message: string) => void): string[] {
  const main = path.join(serviceDir, 'dist/src/main.js');
  const built = fs.existsSync(main) ? fs.statSync(main).mtimeMs : 0;
  const newer = (file: string): boolean => fs.existsSync(file) && fs.statSync(file).mtimeMs > built;
  const walk = (dir: string): boolean =>
    fs.existsSync(dir) && fs.readdirSync(dir, { withFileTypes: true }).some((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.ts') && newer(path.join(dir, e.name))));
  const stale = built === 0 || walk(path.join(serviceDir, 'src')) || ['tsconfig.json', 'tsconfig.build.json', 'package.json'].some((f) => newer(path.join(serviceDir, f)));
  if (!options.build || (!options.force && !stale)) {
    log(options.build ? 'dist/ is newer than every source file: not rebuilding (--build forces it)' : 'not building (--no-build)');
    return [];
  }
  log(`building ${serviceDir} (tsc -p tsconfig.build.json)`);
  const started = Date.now();
  const tsc = [path.join(serviceDir, 'node_modules/typescript/bin/tsc'), path.join(REPO_DIR, 'node_modules/typescript/bin/tsc')].find((f) => fs.existsSync(f))!;
  const project = fs.existsSync(path.join(serviceDir, 'tsconfig.build.json')) ? 'tsconfig.build.json' : 'tsconfig.json';
  const result = spawnSync(process.execPath, [tsc, '-p', project], { cwd: serviceDir, encoding: 'utf8' });
  if (result.status === 0) return [];
  const errors = `${result.stdout}${result.stderr}`.trim().split('\n');
  // tsc still emits on type errors (work in progress elsewhere): go on if it did, and say so.
  if (!fs.existsSync(main) || fs.statSync(main).mtimeMs < started - 1000) throw new Error(`build failed:\n${errors.join('\n')}`);
  return [`build had type errors; dist was emitted anyway. First: ${errors[0]?.slice(0, 160)}`];
}

export function gitDescription(dir: string): { head: string; dirtyFiles: string[] } {
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' }).stdout.trim() || 'unknown';
  const status = spawnSync('git', ['status', '--porcelain', '--', 'src', 'package.json'], { cwd: dir, encoding: 'utf8' }).stdout.trim();
  return { head, dirtyFiles: status === '' ? [] : status.split('\n').map((l) => l.trim()) };
}

export interface Answer {
  status: number;
  body: any;
  text: string;
}

export async function call(base: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${base}${url}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, body: parsed, text };
}

/** Runs `work` over items with at most `limit` at a time. */
export async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** Each participant's position in the benchmark currency, in minor units. */
export async function positions(base: string, names: readonly string[]): Promise<Map<string, bigint>> {
  const result = new Map<string, bigint>();
  for (const name of names) {
    const answer = await call(base, 'GET', `/participants/${name}/positions?currency=${CURRENCY}`);
    if (answer.status !== 200 || typeof answer.body?.value !== 'string') throw new Error(`positions of ${name}: ${answer.status} ${answer.text}`);
    result.set(name, parseMinor(answer.body.value));
  }
  return result;
}

export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

/**
 * The end-of-run checks every benchmark makes of the ledger: no participant has anything left
 * reserved, and debits equal credits on both TigerBeetle ledgers of the currency.
 */
export async function ledgerChecks(base: string, names: readonly string[], cluster: { clusterId: bigint; addresses: string[] }): Promise<Check[]> {
  const reservedLeft: string[] = [];
  for (const name of names) {
    const accounts = await call(base, 'GET', `/participants/${name}/accounts`);
    const position = (accounts.body as any[] | undefined)?.find((a) => a.ledgerAccountType === 'POSITION' && a.currency === CURRENCY);
    if (position === undefined || parseMinor(String(position.reservedValue)) !== 0n) reservedLeft.push(`${name}: ${position?.reservedValue ?? accounts.text}`);
  }
  const ledger = new TigerBeetleLedger({ clusterId: cluster.clusterId, replicaAddresses: cluster.addresses });
  try {
    const sums = await ledger.trialBalances(CURRENCY);
    return [
      { name: 'nothing left reserved (POSITION reservedValue = 0)', pass: reservedLeft.length === 0, detail: reservedLeft.length === 0 ? `${names.length} participants` : reservedLeft.join('; ') },
      {
        name: `trial balance: debits = credits on the ${CURRENCY} ledgers`,
        pass: sums.every((s) => s.debits === s.credits),
        detail: sums.map((s) => `ledger ${s.ledger}: debits ${s.debits} credits ${s.credits}`).join('; '),
      },
    ];
  } finally {
    await ledger.close();
  }
}
