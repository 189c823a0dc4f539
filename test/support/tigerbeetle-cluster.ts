// Test harness: runs a throwaway TigerBeetle cluster (real server binary) on
// 127.0.0.1 with free ports and a temp data dir, and tears it down again.
//
//   const bin = tigerbeetleBinary();            // undefined => skip the test
//   const cluster = await startCluster();       // 3 replicas, ready for clients
//   const formatted = await formatCluster();    // data files only: start() them later
//   createClient({ cluster_id: cluster.clusterId, replica_addresses: cluster.addresses })
//   await cluster.stop();
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, createClient } from 'tigerbeetle-node';
import { freePorts } from './net';
import type { ReplicaPlaces } from './netns';
import { liveDirs, stopChild, track } from './leftovers';

const execFileAsync = promisify(execFile);

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;

export interface RunningCluster {
  clusterId: bigint;
  addresses: string[];
  stop(): Promise<void>;
  /**
   * Sends `signal` to replica i (SIGKILL: a crash; SIGSTOP/SIGCONT: a hang); resolves once a killed
   * one has exited.
   */
  signal(replica: number, signal: 'SIGKILL' | 'SIGSTOP' | 'SIGCONT'): Promise<void>;
  /** Starts replica i again on its data file (after a SIGKILL). */
  restart(replica: number): void;
  /**
   * The replica primary in the latest view a replica logged it entered (view mod replica count;
   * view 0 until one did).
   */
  primary(): number;
}

/** $TIGERBEETLE_BIN if executable, else `tigerbeetle` found on PATH, else undefined. */
export function tigerbeetleBinary(): string | undefined {
  const candidates: string[] = [];
  const fromEnv = process.env['TIGERBEETLE_BIN'];
  if (fromEnv) candidates.push(fromEnv);
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir) candidates.push(path.join(dir, 'tigerbeetle'));
  }
  return candidates.find(isExecutableFile);
}

function isExecutableFile(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export interface ClusterOptions {
  replicas?: 1 | 3;
  cacheGrid?: string;
  /** Random by default; a configuration file may need one it can write as a JSON number. */
  clusterId?: bigint;
  /** How long the replicas may take to answer (READY_TIMEOUT_MS unless told). */
  readyTimeoutMs?: number;
  /**
   * Formatted anew under this cluster id at these addresses (another cluster's, stopped): a
   * cluster replaced under its clients. Default: a random id and free ports.
   */
  replacing?: { clusterId: bigint; addresses: string[] };
  /** Each replica in a network namespace of its own (netns.ts), not all on 127.0.0.1. */
  places?: ReplicaPlaces;
}

/** A cluster formatted but not started: its addresses are known, no replica listens yet. */
export interface FormattedCluster {
  clusterId: bigint;
  addresses: string[];
  /** Starts the replicas and resolves once the cluster answers clients. */
  start(): Promise<RunningCluster>;
  stop(): Promise<void>;
}

export async function startCluster(options: ClusterOptions = {}): Promise<RunningCluster> {
  return (await formatCluster(options)).start();
}

export async function formatCluster(options: ClusterOptions = {}): Promise<FormattedCluster> {
  const bin = tigerbeetleBinary();
  if (!bin) throw new Error('tigerbeetle binary not found: set TIGERBEETLE_BIN or put it on PATH');
  const replicaCount = options.replacing?.addresses.length ?? options.replicas ?? 3;
  // 256MiB instead of the 1GiB default: ~2.4 GB RSS per replica instead of ~3.2 GB.
  const cacheGrid = options.cacheGrid ?? '256MiB';

  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'tigerbeetle-test-'));
  liveDirs.add(dir);
  const clusterId = options.replacing?.clusterId ?? options.clusterId ?? randomClusterId();
  const addresses =
    options.replacing?.addresses ??
    (await freePorts(replicaCount)).map(
      (port, i) => `${options.places?.hosts[i] ?? '127.0.0.1'}:${port}`,
    );
  const children: ChildProcess[] = [];
  const logFiles: string[] = [];

  const stop = async (): Promise<void> => {
    await Promise.all(children.map((child) => stopChild(child, STOP_GRACE_MS)));
    await fs.promises.rm(dir, { recursive: true, force: true });
    liveDirs.delete(dir);
  };

  try {
    const dataFiles = addresses.map((_, i) => path.join(dir, `${clusterId}_${i}.tigerbeetle`));
    // Formatting is a fast (~50 ms) file allocation; do all replicas at once.
    await Promise.all(
      dataFiles.map((file, i) =>
        execFileAsync(bin, [
          'format',
          `--cluster=${clusterId}`,
          `--replica=${i}`,
          `--replica-count=${replicaCount}`,
          file,
        ]),
      ),
    );

    const launch = (i: number): ChildProcess => {
      const fd = fs.openSync(logFiles[i]!, 'a');
      try {
        const args = [
          'start',
          `--addresses=${addresses.join(',')}`,
          `--cache-grid=${cacheGrid}`,
          dataFiles[i]!,
        ];
        const namespace = options.places?.namespaces[i];
        // `ip netns exec` execs the replica itself: signals sent to the child reach it.
        const child =
          namespace === undefined
            ? spawn(bin, args, { stdio: ['ignore', fd, fd] })
            : spawn('ip', ['netns', 'exec', namespace, bin, ...args], {
                stdio: ['ignore', fd, fd],
              });
        // Unref'd: a test that forgets stop() still lets the process exit, and the
        // 'exit' handler then kills the replica. stop() re-refs while it waits.
        child.unref();
        return track(child);
      } finally {
        fs.closeSync(fd); // the child holds its own copy of the descriptor
      }
    };
    const start = async (): Promise<RunningCluster> => {
      try {
        for (const i of dataFiles.keys()) {
          logFiles.push(path.join(dir, `replica_${i}.log`));
          children.push(launch(i));
        }
        await waitUntilReady(clusterId, addresses, children, logFiles, options.readyTimeoutMs);
      } catch (error) {
        await stop();
        throw error;
      }
      return running;
    };
    const running: RunningCluster = {
      clusterId,
      addresses,
      stop,
      async signal(replica, signal) {
        const child = children[replica]!;
        const exited =
          signal === 'SIGKILL' && child.exitCode === null && child.signalCode === null
            ? new Promise((resolve) => child.once('exit', resolve))
            : undefined;
        child.kill(signal);
        await exited;
      },
      restart(replica) {
        children[replica] = launch(replica);
      },
      primary() {
        let view = 0;
        for (const file of logFiles)
          for (const [, entered] of fs
            .readFileSync(file, 'utf8')
            .matchAll(/transition_to_normal_from_\w+_status: view=(?:\d+\.\.)?(\d+)/g))
            view = Math.max(view, Number(entered));
        return view % addresses.length;
      },
    };
    return { clusterId, addresses, start, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

// A random non-zero u128 so that clients of concurrent test clusters can never
// talk to the wrong cluster (0 is also reserved by TigerBeetle for testing).
function randomClusterId(): bigint {
  for (;;) {
    const id = BigInt(`0x${randomBytes(16).toString('hex')}`);
    if (id !== 0n) return id;
  }
}

// Ready means a real client gets an answer, not merely that ports are open: the
// cluster must have elected a primary and opened its state machine.
async function waitUntilReady(
  clusterId: bigint,
  addresses: string[],
  children: ChildProcess[],
  logFiles: string[],
  timeoutMs = READY_TIMEOUT_MS,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  let client: Client | undefined;
  const cleanups: Array<() => void> = [];
  const failed = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(`TigerBeetle cluster not ready after ${timeoutMs} ms${logTails(logFiles)}`),
        ),
      timeoutMs,
    );
    // A replica that dies while starting (port taken, bad data file) fails fast.
    for (const [i, child] of children.entries()) {
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void =>
        reject(
          new Error(
            `TigerBeetle replica ${i} exited (${signal ?? code}) while starting${logTails(logFiles)}`,
          ),
        );
      const onError = (error: Error): void =>
        reject(new Error(`TigerBeetle replica ${i} failed to start: ${error.message}`));
      child.once('exit', onExit);
      child.once('error', onError);
      cleanups.push(() => {
        child.off('exit', onExit);
        child.off('error', onError);
      });
    }
  });
  try {
    // Connect the client only once every replica listens: a client started earlier
    // logs a ConnectionRefused warning to stderr on every reconnect attempt.
    await Promise.race([waitForPorts(addresses, () => settled), failed]);
    client = createClient({ cluster_id: clusterId, replica_addresses: addresses });
    const lookup = client.lookupAccounts([1n]);
    lookup.catch(() => undefined); // it rejects when the client is destroyed on failure
    await Promise.race([lookup, failed]);
  } finally {
    settled = true;
    clearTimeout(timer);
    for (const cleanup of cleanups) cleanup();
    client?.destroy();
  }
}

async function waitForPorts(addresses: string[], abandoned: () => boolean): Promise<void> {
  for (const address of addresses) {
    const colon = address.lastIndexOf(':');
    const [host, port] = [address.slice(0, colon), Number(address.slice(colon + 1))];
    while (!(await acceptsConnections(host, port))) {
      if (abandoned()) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

function acceptsConnections(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function logTails(logFiles: string[]): string {
  return logFiles
    .map((file, i) => {
      let text = '';
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch {
        // no log yet
      }
      return `\n--- replica ${i} (${file}) ---\n${text.split('\n').slice(-15).join('\n')}`;
    })
    .join('');
}
