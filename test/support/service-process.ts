/**
 * A service (or any node script) as a child process of a test or a benchmark: started with its
 * output in a log file and waited for until it answers, never outliving the run; its environment
 * on a TigerBeetle cluster; plain HTTP calls against it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { stopChild, track } from './leftovers';
import type { RunningMariaDb } from './mariadb';

export const REPO_DIR = path.resolve(__dirname, '..', '..');

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));
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
  port: number;
  logFile: string;
  /** Set when the process has exited: how, and when. */
  exit?: { code: number | null; signal: NodeJS.Signals | null; at: Date };
}

/**
 * Starts `node args…` in `cwd` (the repository unless told) with its output in logFile, and waits
 * until GET readyPath answers 2xx.
 */
export async function startProcess(
  label: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  port: number,
  logFile: string,
  readyPath: string,
  timeoutMs = 60_000,
  cwd = REPO_DIR,
): Promise<Started> {
  const fd = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  // Killed if the benchmark itself dies.
  track(child);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${label} exited while starting:\n${tail(logFile)}`);
    try {
      if ((await fetch(`${base}${readyPath}`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`${label} not ready after ${timeoutMs / 1000} s:\n${tail(logFile)}`);
    await sleep(100);
  }
  const started: Started = { child, pid: child.pid!, base, port, logFile };
  child.once('exit', (code, signal) => (started.exit = { code, signal, at: new Date() }));
  return started;
}

export async function stopProcess(started: Started): Promise<void> {
  await stopChild(started.child, 15_000);
}

/**
 * The service's environment in every benchmark: production mode on 127.0.0.1:port, the given
 * TigerBeetle cluster, the /jmeter endpoints on, warnings only, and a DATA_DIR of the run's own
 * (the embedded stores journal there: never the repository's ./.data).
 */
export function serviceEnv(
  port: number,
  cluster: { clusterId: bigint; addresses: string[] },
  dataDir: string,
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    LEDGER_BACKEND: 'tigerbeetle',
    TB_CLUSTER_ID: cluster.clusterId.toString(),
    TB_ADDRESSES: cluster.addresses.join(','),
    JMETER_ENABLED: 'true',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
  };
}

/** The service's environment for its metadata in `database` on a MariaDB of the tests' own. */
export function mysqlEnv(db: RunningMariaDb, database: string): NodeJS.ProcessEnv {
  return {
    MYSQL_ENABLED: 'true',
    MYSQL_HOST: '127.0.0.1',
    MYSQL_PORT: String(db.port),
    MYSQL_USER: db.user,
    MYSQL_PASSWORD: db.password,
    MYSQL_DATABASE: database,
  };
}

export interface Answer {
  status: number;
  body: any;
  text: string;
}

export async function call(
  base: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
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
export async function pool<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/** Probes every 200 ms until it finds something; throws once `timeoutMs` has passed. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what} not within ${timeoutMs} ms`);
    await sleep(200);
  }
}
