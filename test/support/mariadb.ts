/**
 * A throwaway MariaDB server for tests (Debian's mariadb-server): a private data directory,
 * 127.0.0.1 and a free port, an `app` user for TCP. Tests that need it skip loudly where the
 * package is not installed (.ci/run installs it).
 */
import knexFactory, { type Knex } from 'knex';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { stopChild, track } from './leftovers';
import { freePort } from './net';

export interface RunningMariaDb {
  port: number;
  user: string;
  password: string;
  /** Stops the server (data kept) — for outage tests. */
  pause(): Promise<void>;
  /** Kills the server with SIGKILL (a crash: InnoDB recovers its data at the next start). */
  crash(): Promise<void>;
  /**
   * SIGSTOP (a hung server: connections are accepted by the kernel and wait, unanswered) or
   * SIGCONT.
   */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void;
  /** Starts it again on the same port and data (no-op while it runs). */
  resume(): Promise<void>;
  /** Creates an empty database and returns its name. */
  createDatabase(): Promise<string>;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 10_000;

/** Why MariaDB cannot run here, or undefined when it can. */
export function mariaDbUnavailable(): string | undefined {
  for (const tool of ['mariadbd', 'mysql_install_db', 'mariadb']) {
    if (spawnSync('sh', ['-c', `command -v ${tool} || test -x /usr/sbin/${tool}`]).status !== 0)
      return `${tool} not installed (apt-get install mariadb-server)`;
  }
  return undefined;
}

function binary(tool: string): string {
  return spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0 ? tool : `/usr/sbin/${tool}`;
}

/**
 * A MariaDB for the tests of one file: started before them, stopped after. `current()` is
 * undefined where it cannot run (said loudly once, naming `what`): the tests using it skip.
 */
export function useMariaDb(what: string): { current(): RunningMariaDb | undefined } {
  let server: RunningMariaDb | undefined;
  before(async () => {
    const unavailable = mariaDbUnavailable();
    if (unavailable !== undefined) {
      process.stderr.write(`\n*** SKIPPED: ${what}: ${unavailable}. ***\n\n`);
      return;
    }
    server = await startMariaDb();
  });
  after(async () => {
    await server?.stop();
  });
  return { current: () => server };
}

/**
 * @param bufferPoolMiB InnoDB's page cache: small for tests; a long benchmark needs its table to
 * fit.
 */
export async function startMariaDb(
  options: { bufferPoolMiB?: number } = {},
): Promise<RunningMariaDb> {
  const bufferPoolMiB = options.bufferPoolMiB ?? 64;
  const dir = mkdtempSync(join(tmpdir(), 'mariadb-'));
  const dataDir = join(dir, 'data');
  const socket = join(dir, 'sock');
  const port = await freePort();
  // As root the server runs as root on this private directory (no chown to a system user needed).
  const user = `--user=${process.getuid?.() === 0 ? 'root' : (process.env.USER ?? 'mysql')}`;
  const install = spawnSync(
    binary('mysql_install_db'),
    [user, `--datadir=${dataDir}`, '--auth-root-authentication-method=normal', '--skip-test-db'],
    { encoding: 'utf8' },
  );
  if (install.status !== 0) throw new Error(`mysql_install_db failed: ${install.stderr}`);
  let server: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    if (server !== undefined && server.exitCode === null && server.signalCode === null) return;
    server = spawn(
      binary('mariadbd'),
      [
        '--no-defaults',
        user,
        `--datadir=${dataDir}`,
        '--bind-address=127.0.0.1',
        `--port=${port}`,
        `--socket=${socket}`,
        `--pid-file=${join(dir, 'pid')}`,
        `--log-error=${join(dir, 'err.log')}`,
        '--character-set-server=utf8mb4',
        `--innodb-buffer-pool-size=${bufferPoolMiB}M`,
        '--max-connections=500',
      ],
      { stdio: 'ignore' },
    );
    track(server);
    // Unref'd, as the other harnesses' servers: a test file whose setup failed before it could
    // call stop() must still exit (its 'exit' handler then kills the server). A ref'd server kept
    // such a file's process alive until CI's time ran out. stop() re-refs while it waits.
    server.unref();
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (
        spawnSync(binary('mariadb'), [`--socket=${socket}`, '-uroot', '-e', 'SELECT 1']).status ===
        0
      )
        return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('MariaDB did not start in time');
  };
  const sql = (statement: string): void => {
    const result = spawnSync(binary('mariadb'), [`--socket=${socket}`, '-uroot', '-e', statement], {
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new Error(`${statement}: ${result.stderr}`);
  };
  const halt = async (): Promise<void> => {
    if (server !== undefined) await stopChild(server, STOP_GRACE_MS);
  };

  const crash = async (): Promise<void> => {
    if (server === undefined || server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    server.kill('SIGKILL');
    await exited;
  };

  await start();
  const password = 'app-password';
  sql(
    `CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY '${password}'; CREATE USER 'app'@'localhost' IDENTIFIED BY '${password}'; GRANT ALL ON *.* TO 'app'@'127.0.0.1'; GRANT ALL ON *.* TO 'app'@'localhost';`,
  );
  let databases = 0;
  return {
    port,
    user: 'app',
    password,
    pause: halt,
    crash,
    signal: (signal) => void server?.kill(signal),
    resume: start,
    async createDatabase() {
      const name = `ledger_${process.pid}_${++databases}`;
      sql(`CREATE DATABASE ${name}`);
      return name;
    },
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A connection pool of the tests' own on `database`, as the `app` user (for reads and locks). */
export function knexOn(db: RunningMariaDb, database: string): Knex {
  return knexFactory({
    client: 'mysql2',
    connection: {
      host: '127.0.0.1',
      port: db.port,
      user: db.user,
      password: db.password,
      database,
    },
  });
}
