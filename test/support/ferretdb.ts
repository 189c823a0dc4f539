/**
 * A throwaway FerretDB (a MongoDB-compatible server, on SQLite) for the bulk tests' object store:
 * a private directory, 127.0.0.1 and free ports. FerretDB is built from its Go module out of the
 * tree by scripts/build-ferretdb.sh (.ci/run runs it): FERRETDB_BIN, by default
 * /work/build/ferretdb/bin/ferretdb, else ~/.cache/ferretdb/bin/ferretdb. Without it the tests
 * using it skip, loudly.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { removeScratch, scratchDir, stopChild, track } from './leftovers';
import { freePorts } from './net';

const READY_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 5_000;

export interface RunningFerretDb {
  host: string;
  port: number;
  /** mongodb://127.0.0.1:port (no credentials: FerretDB's SQLite handler takes none). */
  url: string;
  stop(): Promise<void>;
}

/** The binary tests use, where it is. */
export function ferretDbBinary(): string | undefined {
  const candidates = [
    process.env['FERRETDB_BIN'],
    '/work/build/ferretdb/bin/ferretdb',
    path.join(os.homedir(), '.cache', 'ferretdb', 'bin', 'ferretdb'),
  ];
  return candidates.find((file) => file !== undefined && fs.existsSync(file));
}

/** Why FerretDB cannot run here, or undefined when it can. */
export function ferretDbUnavailable(): string | undefined {
  if (ferretDbBinary() !== undefined) return undefined;
  return 'no FerretDB binary (FERRETDB_BIN, /work/build/ferretdb/bin or ~/.cache/ferretdb/bin: build it with scripts/build-ferretdb.sh)';
}

/**
 * A FerretDB for the tests of one file (`what`), or undefined where it cannot run, said loudly:
 * the tests using it skip.
 */
export async function ferretDbForTests(what: string): Promise<RunningFerretDb | undefined> {
  const unavailable = ferretDbUnavailable();
  if (unavailable === undefined) return startFerretDb();
  process.stderr.write(`\n*** SKIPPED: ${what}: ${unavailable}. ***\n\n`);
  return undefined;
}

export async function startFerretDb(): Promise<RunningFerretDb> {
  const binary = ferretDbBinary();
  if (binary === undefined) throw new Error(ferretDbUnavailable());
  const dir = scratchDir('ferretdb-');
  const [port, debugPort] = (await freePorts(2)) as [number, number];
  const server: ChildProcess = spawn(
    binary,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${dir}/`,
      `--state-dir=${dir}`,
      `--listen-addr=127.0.0.1:${port}`,
      `--debug-addr=127.0.0.1:${debugPort}`,
      '--telemetry=disable',
      '--log-level=warn',
    ],
    { stdio: ['ignore', 'ignore', fs.openSync(path.join(dir, 'ferretdb.log'), 'a')] },
  );
  track(server);
  server.unref();
  await untilListening(port, server, path.join(dir, 'ferretdb.log'));
  return {
    host: '127.0.0.1',
    port,
    url: `mongodb://127.0.0.1:${port}`,
    async stop() {
      await stopChild(server, STOP_GRACE_MS);
      removeScratch(dir);
    },
  };
}

async function untilListening(port: number, server: ChildProcess, log: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (server.exitCode !== null || server.signalCode !== null)
      throw new Error(`FerretDB exited at start: ${fs.readFileSync(log, 'utf8').slice(-2000)}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('FerretDB did not start in time');
}
