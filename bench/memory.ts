/**
 * Memory against work: does the service's RSS stay flat as transfers complete? The built service
 * in production mode as its own process, on the embedded ledger (the default) with the embedded
 * metadata store (the default) or MariaDB; `--transfers` complete transfers are driven through
 * POST /jmeter/transfers/prepare with fulfil:true (one request per transfer, prepare and commit
 * in the service), as fast as `--connections` keep-alive connections go. The service's RSS (and
 * its high-water mark) is printed at each checkpoint, then RSS(last)/RSS(first checkpoint).
 * Afterwards a sample of the first transfers is read back (GET /transfers through the jmeter
 * route) and retried, to show that evicted final transfers still answer.
 *
 * --in-process drives the same transfers without HTTP: the service (embedded ledger and metadata,
 * journalled in a temporary DATA_DIR) is built in this process and called directly (prepare, then
 * commit, as /jmeter/transfers/prepare does), and this process's RSS is sampled. What is kept per
 * transfer lives in the ledger and the metadata store, never in the HTTP layer, so this measures
 * the same growth at 3–5× the rate on a 2-core box: 1M transfers in minutes.
 *
 *   npx tsx bench/memory.ts [--transfers 1000000] [--metadata embedded|mysql] [--connections 32]
 *     [--checkpoints 10000,100000,250000,500000,1000000] [--participants 8] [--no-build]
 * [--in-process]
 *     [--restart] (then stop the service, start it on the same DATA_DIR, time it, read back again)
 *     [--keep-data DIR] (copy the DATA_DIR there at the end, e.g. to profile a start on it)
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startMariaDb, type RunningMariaDb } from '../test/support/mariadb';
import {
  buildIfStale,
  flags,
  gitDescription,
  gitLabel,
  machineDescription,
  runMain,
  sendOn,
  type TimedAnswer,
  table,
} from './common';
import { allProcesses, cpuSeconds, findPids, memoryMiB, topConsumers } from './procstat';
import {
  REPO_DIR,
  serviceEnv,
  startProcess,
  stopProcess,
  type Started,
  mysqlEnv,
} from '../test/support/service-process';
import { freePort } from '../test/support/net';
import { onboard, Workload, type SentTransfer } from '../test/support/workload';

interface Options {
  transfers: number;
  metadata: 'embedded' | 'mysql';
  connections: number;
  checkpoints: number[];
  participants: number;
  build: boolean;
  inProcess: boolean;
  /** After the run: stop the service, start it again on the same DATA_DIR, and read back again. */
  restart: boolean;
  /** Where to copy the service's DATA_DIR at the end (HTTP mode), or undefined. */
  keepData: string | undefined;
}

function parseOptions(argv: string[]): Options {
  const { has, value, number } = flags(argv);
  const transfers = number('--transfers', 1_000_000, true);
  const metadata = value('--metadata') ?? 'embedded';
  if (metadata !== 'embedded' && metadata !== 'mysql')
    throw new Error('--metadata is embedded or mysql');
  const checkpoints = (value('--checkpoints') ?? '10000,100000,250000,500000,1000000')
    .split(',')
    .map(Number)
    .filter((n) => n > 0 && n <= transfers);
  if (!checkpoints.includes(transfers)) checkpoints.push(transfers);
  return {
    transfers,
    metadata,
    connections: number('--connections', 32, true),
    checkpoints: checkpoints.sort((a, b) => a - b),
    participants: number('--participants', 8, true),
    build: !has('--no-build'),
    inProcess: has('--in-process'),
    restart: has('--restart'),
    keepData: value('--keep-data'),
  };
}

interface Checkpoint {
  transfers: number;
  seconds: number;
  rssMiB: number;
  hwmMiB: number;
  mariadbRssMiB: number | undefined;
  /** CPU seconds of the service (in-process: of this process) since the first transfer. */
  cpuS: number;
}

const log = (message: string): void => console.log(`[memory] ${message}`);

function checkpointLine(c: Checkpoint): void {
  log(
    `${c.transfers} transfers in ${c.seconds.toFixed(0)} s (${(c.transfers / c.seconds).toFixed(0)}/s, ${cpuMs(c)} ms CPU each): RSS ${c.rssMiB.toFixed(0)} MiB, high-water ${c.hwmMiB.toFixed(0)} MiB`,
  );
}

function cpuMs(c: Checkpoint): string {
  return ((c.cpuS / c.transfers) * 1000).toFixed(3);
}

/** Taken when the run starts: the tree may change while it runs. */
const GIT_LABEL = gitLabel(gitDescription(REPO_DIR));

function printSummary(
  options: Options,
  checkpoints: readonly Checkpoint[],
  failed: number,
  readBack: string,
  others: string,
): void {
  const base = checkpoints[0]!;
  const last = checkpoints[checkpoints.length - 1]!;
  const machine = machineDescription();
  const how = options.inProcess ? 'in-process driver' : `${options.connections} HTTP connections`;
  console.log(
    `\nmemory against work: ${GIT_LABEL}, metadata ${options.metadata}, embedded ledger, ${how}, ${machine.cpus} cpus, node ${machine.node}`,
  );
  const mariadb = checkpoints.some((c) => c.mariadbRssMiB !== undefined);
  console.log(
    table(
      [
        'transfers',
        's',
        'transfers/s',
        'CPU ms/transfer',
        'RSS MiB',
        'RSS high-water MiB',
        ...(mariadb ? ['MariaDB RSS MiB'] : []),
      ],
      checkpoints.map((c) => [
        String(c.transfers),
        c.seconds.toFixed(0),
        (c.transfers / c.seconds).toFixed(0),
        cpuMs(c),
        c.rssMiB.toFixed(0),
        c.hwmMiB.toFixed(0),
        ...(mariadb ? [c.mariadbRssMiB?.toFixed(0) ?? ''] : []),
      ]),
    ),
  );
  console.log(
    `RSS(${last.transfers})/RSS(${base.transfers}) = ${(last.rssMiB / base.rssMiB).toFixed(2)} (target ≤ 2 at 1M/10k); failed transfers: ${failed}`,
  );
  console.log(`read back after the run: ${readBack}`);
  console.log(`other processes during the run: ${others || 'none'}`);
}

/**
 * `options.transfers` transfers through `one` (undefined: committed; else what went wrong) on
 * `options.connections` concurrent loops, memory sampled at each checkpoint.
 */
async function driveTransfers(
  options: Options,
  workload: Workload,
  one: (
    transfer: SentTransfer,
    condition: string,
    ilpPacket: string,
  ) => Promise<string | undefined>,
  memory: () => Omit<Checkpoint, 'transfers' | 'seconds' | 'cpuS'>,
  cpu: () => number,
): Promise<{ first: SentTransfer[]; checkpoints: Checkpoint[]; failed: number }> {
  const first: SentTransfer[] = [];
  const checkpoints: Checkpoint[] = [];
  let sent = 0;
  let done = 0;
  let failed = 0;
  const t0 = Date.now();
  const cpu0 = cpu();
  const loop = async (): Promise<void> => {
    while (sent < options.transfers) {
      sent++;
      const { transfer, condition, ilpPacket } = workload.next(false);
      if (first.length < 200) first.push(transfer);
      const problem = await one(transfer, condition, ilpPacket).catch(
        (error: unknown) => `failed: ${(error as Error).message}`,
      );
      if (problem !== undefined && failed++ < 5) log(`transfer ${transfer.id} ${problem}`);
      done++;
      if (done === options.checkpoints[checkpoints.length]) {
        const checkpoint = {
          transfers: done,
          seconds: (Date.now() - t0) / 1000,
          cpuS: cpu() - cpu0,
          ...memory(),
        };
        checkpoints.push(checkpoint);
        checkpointLine(checkpoint);
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, loop));
  return { first, checkpoints, failed };
}

/** The same transfers called into a service built in this process (see the header). */
async function inProcess(options: Options): Promise<void> {
  const { buildService } = await import('../src/app');
  const { loadConfig } = await import('../src/config/config');
  if (options.metadata !== 'embedded')
    throw new Error('--in-process runs the embedded metadata store only');
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memory-bench-'));
  const before = allProcesses();
  const startedAt = Date.now();
  const service = await buildService(
    loadConfig({
      LOG_LEVEL: 'silent',
      JMETER_ENABLED: 'true',
      LEDGER_BACKEND: 'embedded',
      MYSQL_ENABLED: 'false',
      DATA_DIR: path.join(workDir, 'data'),
    }),
  );
  try {
    const names = Array.from({ length: options.participants }, (_, i) => `memp${i}`);
    for (const name of names) {
      const answer = await service.app.inject({
        method: 'POST',
        url: '/jmeter/participants/create',
        payload: { name, currency: 'USD' },
      });
      if (answer.statusCode !== 200)
        throw new Error(`onboarding ${name}: ${answer.statusCode} ${answer.body}`);
    }
    const workload = new Workload(names, {
      conditionPool: 1024,
      amountPool: 1024,
      expirySeconds: 600,
    });
    const { first, checkpoints, failed } = await driveTransfers(
      options,
      workload,
      async (transfer, condition, ilpPacket) => {
        await service.transfers.prepare(
          names[transfer.payer]!,
          JSON.parse(workload.prepareBody(transfer, condition, ilpPacket, false)),
        );
        const committed = await service.transfers.commitTrusted(transfer.id, transfer.fulfilment);
        return committed.record.state === 'COMMITTED'
          ? undefined
          : `ended ${committed.record.state}`;
      },
      () => {
        // In this process the RSS can be told apart: V8's heap against typed arrays (the ledger's
        // and the store's tables).
        const usage = process.memoryUsage();
        log(
          `  V8 heap used ${(usage.heapUsed / 2 ** 20).toFixed(0)} MiB of ${(usage.heapTotal / 2 ** 20).toFixed(0)}, array buffers ${(usage.arrayBuffers / 2 ** 20).toFixed(0)} MiB`,
        );
        return {
          rssMiB: usage.rss / 2 ** 20,
          hwmMiB: memoryMiB(process.pid, 'VmHWM') ?? NaN,
          mariadbRssMiB: undefined,
        };
      },
      () => {
        const { user, system } = process.cpuUsage();
        return (user + system) / 1e6;
      },
    );
    let got = 0;
    let duplicates = 0;
    for (const t of first.slice(0, 50)) {
      const record = await service.transfers.get(t.id, names[t.payer]);
      if (record.state === 'COMMITTED') got++;
      const again = await service.transfers.commitTrusted(t.id, t.fulfilment);
      if (again.duplicate && again.record.state === 'COMMITTED') duplicates++;
    }
    const seconds = (Date.now() - startedAt) / 1000;
    printSummary(
      options,
      checkpoints,
      failed,
      `${got}/50 GET COMMITTED, ${duplicates}/50 repeated commits answered as duplicates`,
      topConsumers(before, allProcesses(), seconds, new Set([process.pid]), { limit: 6 }).join(
        ', ',
      ),
    );
  } finally {
    await service.close();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options.inProcess) return inProcess(options);
  buildIfStale(REPO_DIR, { build: options.build, force: false }, log);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memory-bench-'));
  const port = await freePort();
  let mariadb: RunningMariaDb | undefined;
  const env: NodeJS.ProcessEnv = {
    ...serviceEnv(port, { clusterId: 0n, addresses: [] }, path.join(workDir, 'data')),
    LEDGER_BACKEND: 'embedded',
    MYSQL_ENABLED: 'false',
  };
  if (options.metadata === 'mysql') {
    mariadb = await startMariaDb({ bufferPoolMiB: 256 });
    const database = await mariadb.createDatabase();
    Object.assign(env, mysqlEnv(mariadb, database));
  }
  const before = allProcesses();
  const startedAt = Date.now();
  let service: Started | undefined;
  const logFile = path.join(workDir, 'service.log');
  const start = (timeoutMs?: number): Promise<Started> =>
    startProcess('service', ['dist/src/main.js'], env, port, logFile, '/health', timeoutMs);
  try {
    service = await start();
    const names = await onboard(service.base, 'mem', options.participants);
    const workload = new Workload(names, {
      conditionPool: 1024,
      amountPool: 1024,
      expirySeconds: 600,
    });
    const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
    const pid = service.pid;
    const mariadbPid =
      mariadb === undefined ? undefined : findPids('mariadbd', `--port=${mariadb.port}`)[0];
    /** The first transfers' bodies, to send again after the run. */
    const bodies = new Map<string, string>();
    const { first, checkpoints, failed } = await driveTransfers(
      options,
      workload,
      async (transfer, condition, ilpPacket) => {
        const body = workload.prepareBody(transfer, condition, ilpPacket, true);
        if (bodies.size < 200) bodies.set(transfer.id, body);
        const answer = await post(agent, port, '/jmeter/transfers/prepare', body);
        return answer.status === 201 && answer.text.includes('"COMMITTED"')
          ? undefined
          : `answered ${answer.status} ${answer.text.slice(0, 200)}`;
      },
      () => ({
        rssMiB: memoryMiB(pid, 'VmRSS') ?? NaN,
        hwmMiB: memoryMiB(pid, 'VmHWM') ?? NaN,
        mariadbRssMiB: mariadbPid === undefined ? undefined : memoryMiB(mariadbPid, 'VmRSS'),
      }),
      () => cpuSeconds(pid) ?? NaN,
    );
    let readBack = await readBackFirst(agent, port, workload, bodies, first.slice(0, 50));
    agent.destroy();
    if (options.restart) {
      // Startup replays the ledger journal and compacts the metadata one: how long, and how much
      // memory at the most.
      await stopProcess(service);
      const restartedAt = Date.now();
      service = await start(30 * 60_000);
      const startS = (Date.now() - restartedAt) / 1000;
      const rss = `RSS ${memoryMiB(service.pid, 'VmRSS')?.toFixed(0)} MiB, high-water ${memoryMiB(service.pid, 'VmHWM')?.toFixed(0)} MiB`;
      const again = new http.Agent({ keepAlive: true, maxSockets: 4 });
      const size = (file: string): string =>
        fs.existsSync(path.join(workDir, 'data', file))
          ? `${(fs.statSync(path.join(workDir, 'data', file)).size / 2 ** 20).toFixed(0)} MiB`
          : 'no';
      readBack +=
        `\nrestarted on the same DATA_DIR (${size('metadata.journal')} metadata journal after compaction, ${size('ledger.journal')} ledger journal): ready in ${startS.toFixed(1)} s, ${rss}; ` +
        `read back: ${await readBackFirst(again, port, workload, bodies, first.slice(50, 100))}`;
      again.destroy();
    }
    const seconds = (Date.now() - startedAt) / 1000;
    printSummary(
      options,
      checkpoints,
      failed,
      readBack,
      topConsumers(before, allProcesses(), seconds, new Set([process.pid, pid]), { limit: 6 }).join(
        ', ',
      ),
    );
  } finally {
    if (service !== undefined) await stopProcess(service);
    await mariadb?.stop();
    if (options.keepData !== undefined)
      fs.cpSync(path.join(workDir, 'data'), options.keepData, { recursive: true });
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

/**
 * The first transfers of the run, long final: GET answers COMMITTED, the same prepare again is a
 * duplicate (200 COMMITTED), one with another condition 3106.
 */
async function readBackFirst(
  agent: http.Agent,
  port: number,
  workload: Workload,
  bodies: ReadonlyMap<string, string>,
  transfers: readonly SentTransfer[],
): Promise<string> {
  let got = 0;
  let duplicates = 0;
  let modified = 0;
  for (const t of transfers) {
    const name = workload.participants[t.payer]!;
    const view = await get(agent, port, `/jmeter/participants/${name}/transfers/${t.id}`);
    if (view.status === 200 && view.text.includes('"COMMITTED"')) got++;
    const same = await post(agent, port, '/jmeter/transfers/prepare', bodies.get(t.id)!);
    if (same.status === 200 && same.text.includes('"COMMITTED"')) duplicates++;
    const { condition, ilpPacket } = workload.next(false);
    const changed = await post(
      agent,
      port,
      '/jmeter/transfers/prepare',
      workload.prepareBody(t, condition, ilpPacket, true),
    );
    if (changed.text.includes('"3106"')) modified++;
  }
  return `${got}/${transfers.length} GET COMMITTED, ${duplicates}/${transfers.length} same prepare again a duplicate COMMITTED, ${modified}/${transfers.length} modified prepare 3106`;
}

function post(agent: http.Agent, port: number, url: string, body: string): Promise<TimedAnswer> {
  return sendOn(agent, port, 'POST', url, { 'content-type': 'application/json' }, body);
}

function get(agent: http.Agent, port: number, url: string): Promise<TimedAnswer> {
  return sendOn(agent, port, 'GET', url, {});
}

runMain(main, 'memory benchmark');
