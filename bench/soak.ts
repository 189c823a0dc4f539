/**
 * Soak test (issue 5's stability target: "a 10-minute run at 70 % of peak: no errors, RSS flat —
 * no growth beyond 10 % after warm-up"). A throwaway three-replica TigerBeetle cluster, MariaDB
 * for the metadata (or the embedded store), the built service in production mode as its own
 * process; the peak of complete two-phase FSPIOP transfers is measured for 20 s at 64 connections
 * (autocannon, bench/workload.ts), then a paced open loop sends 70 % of that transfer rate for the
 * given minutes while the service's RSS, heap (GET /metrics) and CPU are sampled every 10 s.
 * Afterwards the books are checked. bench/README.md ("Soak") explains the figures.
 *
 *   npx tsx bench/soak.ts [--minutes 10] [--metadata mysql|embedded]
 *   options: --ratio 0.7 | --rate N (transfers/s)  --peak-seconds 20  --peak-connections 64  --participants 16
 *            --sample-seconds 10  --warmup-minutes 1  --max-in-flight 1024  --sockets 256  --buffer-pool-mib 1024
 *            --cache-grid 256MiB
 *            --no-build | --build  --no-wait
 *            --heap-snapshots (V8 heap snapshots of the service at the end of warm-up and at the
 *            end, compared by constructor; each one pauses the service for a few seconds)
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startMariaDb, type RunningMariaDb } from '../test/support/mariadb';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import { Books, REPO_DIR, buildIfStale, checkLines, failOnChecks, flags, freePort, gitDescription, gitLabel, ledgerChecks, machineDescription, onboard, positions, reconcile, runMain, scrapeMetrics, serviceEnv, sleep, sendOn, startProcess, stopProcess, tail, transferChecks, writeResult, type Check, type Started, type TimedAnswer } from './common';
import { cpuBetween, cpuSnapshot, findPids, memoryMiB } from './procstat';
import { table } from './report';
import { CURRENCY, Workload, drive, summarise, type LatencySummary, type LoadResult, type SentTransfer } from './workload';

const OTHER_BENCHMARKS = 'bench/(run|kafka).ts';

interface Options {
  minutes: number;
  metadata: 'mysql' | 'embedded';
  ratio: number;
  /** A fixed paced rate (transfers/s) instead of ratio × peak: for A/B runs at the same load. */
  rate: number | undefined;
  peakSeconds: number;
  peakConnections: number;
  peakWarmupSeconds: number;
  participants: number;
  sampleSeconds: number;
  warmupMinutes: number;
  maxSockets: number;
  maxInFlight: number;
  /** The replicas' grid cache (tigerbeetle start --cache-grid). */
  cacheGrid: string;
  /** MariaDB's InnoDB buffer pool: a production-like size, so that the table of 10 minutes of transfers stays in memory. */
  bufferPoolMiB: number;
  sampleGets: number;
  build: boolean;
  forceBuild: boolean;
  wait: boolean;
  heapSnapshots: boolean;
}

function parseOptions(argv: string[]): Options {
  const { has, value, number } = flags(argv);
  const num = (flag: string, fallback: number): number => number(flag, fallback, true);
  const metadata = value('--metadata') ?? 'mysql';
  if (metadata !== 'mysql' && metadata !== 'embedded') throw new Error(`--metadata ${metadata}: mysql or embedded`);
  return {
    minutes: num('--minutes', 10),
    metadata,
    ratio: num('--ratio', 0.7),
    rate: value('--rate') === undefined ? undefined : num('--rate', 0),
    peakSeconds: num('--peak-seconds', 20),
    peakConnections: num('--peak-connections', 64),
    peakWarmupSeconds: 5,
    participants: num('--participants', 16),
    sampleSeconds: num('--sample-seconds', 10),
    warmupMinutes: num('--warmup-minutes', 1),
    maxSockets: num('--sockets', 256),
    maxInFlight: num('--max-in-flight', 1024),
    bufferPoolMiB: num('--buffer-pool-mib', 1024),
    cacheGrid: value('--cache-grid') ?? '256MiB',
    sampleGets: 1000,
    build: !has('--no-build'),
    forceBuild: has('--build'),
    wait: !has('--no-wait'),
    heapSnapshots: has('--heap-snapshots'),
  };
}

const execFileAsync = promisify(execFile);

// ---------------------------------------------------------------------------------------------
// Processes

function otherBenchmarks(): string[] {
  const found = spawnSync('pgrep', ['-af', OTHER_BENCHMARKS], { encoding: 'utf8' }).stdout.trim();
  return found === '' ? [] : found.split('\n');
}

/** The service's own memory figures from GET /metrics (prom-client default metrics). */
interface ServiceMetrics {
  residentBytes?: number;
  heapUsedBytes?: number;
  heapTotalBytes?: number;
  externalBytes?: number;
  /** V8 heap spaces (used bytes): old, new, code, large_object... */
  heapSpacesUsed: Record<string, number>;
  activeHandles?: number;
  /** Number of label sets of http_request_duration_seconds (one histogram per method/route/status). */
  requestLabelSets: number;
  /** Sample lines of the whole exposition (comments not counted): grows if some metric gains label sets. */
  lines: number;
  /** Cumulative: HTTP requests and their seconds (all routes), ledger batches, their commands and seconds. */
  httpCount: number;
  httpSeconds: number;
  /** Per route ("POST /transfers", "PUT /transfers/:id"): requests and seconds. */
  routes: Record<string, { count: number; seconds: number }>;
  ledgerBatches?: number;
  ledgerCommands?: number;
  ledgerSeconds?: number;
}

async function serviceMetrics(base: string): Promise<ServiceMetrics | undefined> {
  const samples = await scrapeMetrics(base);
  if (samples === undefined) return undefined;
  const result: ServiceMetrics = { heapSpacesUsed: {}, requestLabelSets: 0, lines: samples.length, httpCount: 0, httpSeconds: 0, routes: {} };
  for (const { name, labels, value } of samples) {
    if (name === 'moja_cl_process_resident_memory_bytes') result.residentBytes = value;
    else if (name === 'moja_cl_nodejs_heap_size_used_bytes') result.heapUsedBytes = value;
    else if (name === 'moja_cl_nodejs_heap_size_total_bytes') result.heapTotalBytes = value;
    else if (name === 'moja_cl_nodejs_external_memory_bytes') result.externalBytes = value;
    else if (name === 'moja_cl_nodejs_active_handles_total') result.activeHandles = value;
    else if (name === 'moja_cl_nodejs_heap_space_size_used_bytes') {
      const space = labels['space'];
      if (space !== undefined) result.heapSpacesUsed[space] = value;
    } else if (name === 'http_request_duration_seconds_count' || name === 'http_request_duration_seconds_sum') {
      const entry = (result.routes[`${labels['method']} ${labels['route']}`] ??= { count: 0, seconds: 0 });
      if (name === 'http_request_duration_seconds_count') {
        result.requestLabelSets++;
        result.httpCount += value;
        entry.count += value;
      } else {
        result.httpSeconds += value;
        entry.seconds += value;
      }
    }
    else if (name === 'ledger_batch_commands_count') result.ledgerBatches = value;
    else if (name === 'ledger_batch_commands_sum') result.ledgerCommands = value;
    else if (name === 'ledger_batch_duration_seconds_sum') result.ledgerSeconds = value;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Heap snapshots (--heap-snapshots): the service runs with --heapsnapshot-signal=SIGUSR2.

/** Self size and count per constructor (objects, closures, native) or per node type (strings, code, arrays...). */
function summariseSnapshot(file: string): Map<string, { count: number; bytes: number }> {
  const snapshot = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const types = snapshot.snapshot.meta.node_types[0];
  const byKey = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < snapshot.nodes.length; i += width) {
    const type = types[snapshot.nodes[i + typeAt]!]!;
    const key = type === 'object' || type === 'closure' || type === 'native' ? `${type} ${snapshot.strings[snapshot.nodes[i + nameAt]!]}` : `(${type})`;
    const entry = byKey.get(key) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += snapshot.nodes[i + sizeAt]!;
    byKey.set(key, entry);
  }
  return byKey;
}

async function takeHeapSnapshot(service: Started, dir: string): Promise<string> {
  const before = new Set(fs.readdirSync(dir));
  process.kill(service.pid, 'SIGUSR2');
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error('no heap snapshot after 120 s');
    await sleep(500);
    const fresh = fs.readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (fresh.length === 0) continue;
    // The service writes it synchronously on its main thread: once /health answers, it is complete.
    try {
      if ((await fetch(`${service.base}/health`)).ok) return path.join(dir, fresh[0]!);
    } catch {
      // still writing
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The run

interface Sample {
  /** Seconds since the soak phase began. */
  t: number;
  transfersDone: number;
  rssMiB: number | undefined;
  hwmMiB: number | undefined;
  heapUsedMiB: number | undefined;
  heapTotalMiB: number | undefined;
  externalMiB: number | undefined;
  heapSpacesUsedMiB: Record<string, number>;
  activeHandles: number | undefined;
  requestLabelSets: number | undefined;
  metricsLines: number | undefined;
  /** Over the last interval: cores (CPU seconds per wall second). */
  serviceCores: number;
  serviceMainThreadCores: number;
  replicaCores: number;
  mariadbCores: number;
  loadGeneratorCores: number;
  machineBusyCores: number;
  stealCores: number;
  /** Machine busy minus the service, replicas, MariaDB and the load generator. */
  otherCores: number;
  mariadbRssMiB: number | undefined;
  /** Over the last interval, from the service's /metrics: mean request time inside the service, ledger batches. */
  serviceMeanMs: number | undefined;
  servicePrepareMs: number | undefined;
  serviceFulfilMs: number | undefined;
  /** MariaDB, per second over the interval: InnoDB pages read from disk (buffer pool misses), fsyncs. */
  dbDiskReadsPerS: number | undefined;
  dbFsyncsPerS: number | undefined;
  ledgerBatchesPerS: number | undefined;
  ledgerCommandsPerBatch: number | undefined;
  ledgerBatchMs: number | undefined;
  inFlightTransfers: number;
  /** Transfers due by the schedule but not yet started (the load generator falling behind). */
  backlog: number;
  otherProcesses: string[];
}

interface MinuteStats {
  minute: number;
  transfers: number;
  requests: number;
  errors: number;
  non2xx: number;
  unexpected: number;
  latencies: number[];
  wireLatencies: number[];
  errorSamples: string[];
}

interface MinuteReport {
  minute: number;
  transfers: number;
  transfersPerS: number;
  requestsPerS: number;
  errors: number;
  non2xx: number;
  unexpected: number;
  latency: LatencySummary;
  wireLatency: LatencySummary;
  rssEndMiB: number | undefined;
  rssMinMiB: number | undefined;
  rssMedianMiB: number | undefined;
  rssMaxMiB: number | undefined;
  heapUsedEndMiB: number | undefined;
  serviceCores: number;
  machineBusyCores: number;
  stealCores: number;
  otherCores: number;
  maxInFlight: number;
  errorSamples: string[];
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const t0 = Date.now();
  const log = (message: string): void => {
    process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(7)} s] ${message}\n`);
  };
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    log('interrupted: stopping the load (books and report follow)');
  });

  if (options.wait) {
    // Other engineers run benchmarks back to back: wait for three quiet polls in a row (20 s).
    const deadline = Date.now() + 15 * 60_000;
    for (let quiet = 0; quiet < 3; ) {
      const others = otherBenchmarks();
      quiet = others.length === 0 ? quiet + 1 : 0;
      if (quiet === 3) break;
      if (Date.now() > deadline) throw new Error(`another benchmark still runs after 15 min:\n${others.join('\n')}`);
      if (others.length > 0) log(`waiting for another benchmark to finish (pgrep -f '${OTHER_BENCHMARKS}'): ${others[0]}`);
      await sleep(10_000);
      if (interrupted) throw new Error('interrupted');
    }
  }
  const warnings: string[] = [];
  if (options.build) warnings.push(...buildIfStale(REPO_DIR, { build: true, force: options.forceBuild }, log));
  for (const w of warnings) log(`WARNING: ${w}`);
  const mainJs = path.join(REPO_DIR, 'dist/src/main.js');
  if (!fs.existsSync(mainJs)) throw new Error(`${mainJs} missing: run npm run build`);
  const git = gitDescription(REPO_DIR);

  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-soak-'));
  const heapDir = path.join(workDir, 'heap');
  let cluster: RunningCluster | undefined;
  let mariadb: RunningMariaDb | undefined;
  let service: Started | undefined;
  let workload: Workload | undefined;
  let agent: http.Agent | undefined;
  const checks: Check[] = [];
  const samples: Sample[] = [];
  const minutes: MinuteReport[] = [];
  const heapDiff: { key: string; countA: number; countB: number; bytesA: number; bytesB: number }[] = [];
  let peak: LoadResult | undefined;
  let peakWarmup: LoadResult | undefined;
  let targetRate = 0;
  let soakWallS = 0;
  let soakTransfers = 0;
  let maxBacklog = 0;
  let mysqlRows: string | undefined;
  let keepLogs = false;
  const reconciliations: Record<string, unknown>[] = [];
  const books = new Books(options.sampleGets);

  try {
    log('starting a three-replica TigerBeetle cluster');
    cluster = await startCluster({ replicas: 3, cacheGrid: options.cacheGrid });
    const tbPids = findPids('tigerbeetle', 'start', `--addresses=${cluster.addresses.join(',')}`);
    log(`cluster on ${cluster.addresses.join(',')} (replica pids ${tbPids.join(',')})`);

    const servicePort = await freePort();
    const env: NodeJS.ProcessEnv = { ...serviceEnv(servicePort, cluster, path.join(workDir, 'data')), MYSQL_ENABLED: 'false' };
    let mariadbPids: number[] = [];
    let database = '';
    if (options.metadata === 'mysql') {
      log('starting MariaDB');
      mariadb = await startMariaDb({ bufferPoolMiB: options.bufferPoolMiB });
      database = await mariadb.createDatabase();
      mariadbPids = findPids('mariadbd', `--port=${mariadb.port}`);
      Object.assign(env, {
        MYSQL_ENABLED: 'true', MYSQL_HOST: '127.0.0.1', MYSQL_PORT: String(mariadb.port), MYSQL_USER: mariadb.user, MYSQL_PASSWORD: mariadb.password, MYSQL_DATABASE: database,
      });
      log(`MariaDB on 127.0.0.1:${mariadb.port}, database ${database} (pid ${mariadbPids.join(',')})`);
    }
    const nodeArgs: string[] = [];
    if (options.heapSnapshots) {
      fs.mkdirSync(heapDir, { recursive: true });
      nodeArgs.push('--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${heapDir}`);
    }
    log(`starting the service: node ${[...nodeArgs, 'dist/src/main.js'].join(' ')} (port ${servicePort}, metadata ${options.metadata})`);
    service = await startProcess('service', [...nodeArgs, mainJs], env, servicePort, path.join(workDir, 'service.log'), '/health');
    const svc = service;

    const names = await onboard(svc.base, `soak${Math.random().toString(16).slice(2, 6)}`, options.participants);
    const positionsBefore = await positions(svc.base, names);
    log(`onboarded ${names.length} participants (${names[0]}…${names[names.length - 1]}), net debit cap and liquidity 1e9 ${CURRENCY} each`);

    // Amounts 1.00–500.00, payer and payee uniform over all ordered pairs: every pair goes both
    // ways, so each position is a zero-drift random walk (~±10^5 after 10^6 transfers), far inside 1e9.
    workload = new Workload(names, { conditionPool: 16_384, amountPool: 64 });
    const w = workload;
    /** Transfers whose completion the load generator did not see: see common.reconcile. */
    const settle = async (label: string, open: SentTransfer[]): Promise<void> => {
      const { counts, failures } = await reconcile(svc.base, w, open);
      for (const t of open) if (t.state === 'committed') books.add(t);
      reconciliations.push({ label, ...counts, failures: failures.slice(0, 10) });
      if (counts.open > 0) log(`reconciled ${label}: ${JSON.stringify(counts)}`);
    };
    /** Folds the transfers autocannon tracked into the books, reconciles the rest, forgets them all. */
    const settleTracked = async (label: string): Promise<void> => {
      await sleep(300);
      const open: SentTransfer[] = [];
      for (const t of w.sent.values()) {
        if (t.state === 'committed') books.add(t);
        else open.push(t);
      }
      w.sent.clear();
      await settle(label, open);
    };

    // ---- peak
    log(`peak warm-up: ${options.peakWarmupSeconds} s at 16 connections`);
    peakWarmup = await drive({ url: svc.base, scenario: 'fspiop', target: 'service', connections: 16, durationS: options.peakWarmupSeconds, workload: w, track: true });
    await settleTracked('peak warm-up');
    log(`peak: ${options.peakSeconds} s of complete transfers at ${options.peakConnections} connections`);
    peak = await drive({ url: svc.base, scenario: 'fspiop', target: 'service', connections: options.peakConnections, durationS: options.peakSeconds, workload: w, track: true });
    await settleTracked('peak');
    const peakRate = peak.transfers / peak.durationS;
    targetRate = options.rate ?? peakRate * options.ratio;
    log(
      `peak: ${peakRate.toFixed(0)} transfers/s (${(peak.requests / peak.durationS).toFixed(0)} req/s), p50 ${peak.latency.all.p50.toFixed(2)} ms, p99 ${peak.latency.all.p99.toFixed(2)} ms, ` +
        `errors ${peak.errors}, non-2xx ${peak.non2xx}, unexpected ${peak.unexpected}`,
    );
    if (peakRate <= 0) throw new Error('no transfer completed during the peak phase');
    log(`soak: ${options.minutes} min at ${options.rate === undefined ? `${(options.ratio * 100).toFixed(0)} % of peak` : 'a fixed rate'} = ${targetRate.toFixed(1)} transfers/s (${(2 * targetRate).toFixed(0)} req/s), paced, sampling every ${options.sampleSeconds} s`);

    // ---- soak: a paced open loop. Transfers start on schedule (rate × elapsed), whatever the
    // answers' latency; each is POST /transfers then, on 201 RESERVED, the payee's PUT. Latency
    // is measured from the moment the request is handed to the agent (so waiting for a free
    // socket counts); at most `maxSockets` requests are on the wire at once, and at most
    // `maxInFlight` transfers are started and unfinished: beyond that the schedule falls behind
    // (the backlog column) rather than queueing without bound in the load generator.
    agent = new http.Agent({ keepAlive: true, maxSockets: options.maxSockets, maxFreeSockets: options.maxSockets });
    const ag = agent;
    const durationS = options.minutes * 60;
    const minuteStats: MinuteStats[] = [];
    const statsAt = (elapsedS: number): MinuteStats => {
      const minute = Math.min(Math.floor(elapsedS / 60), Math.ceil(durationS / 60) - 1);
      while (minuteStats.length <= minute) minuteStats.push({ minute: minuteStats.length + 1, transfers: 0, requests: 0, errors: 0, non2xx: 0, unexpected: 0, latencies: [], wireLatencies: [], errorSamples: [] });
      return minuteStats[minute]!;
    };
    const soakOpen: SentTransfer[] = [];
    let inFlight = 0;
    let started = 0;
    const soakStart = performance.now();
    const elapsed = (): number => (performance.now() - soakStart) / 1000;
    const note = (answer: TimedAnswer, okStatus: number, okState: string): boolean => {
      const m = statsAt(elapsed());
      m.requests++;
      m.latencies.push(answer.ms);
      m.wireLatencies.push(answer.wireMs);
      if (answer.status === okStatus && answer.text.includes(`"${okState}"`)) return true;
      if (answer.status === 0) m.errors++;
      else if (answer.status >= 200 && answer.status < 300) m.unexpected++;
      else m.non2xx++;
      if (m.errorSamples.length < 5) m.errorSamples.push(`${answer.status} ${answer.text.slice(0, 300)}`);
      return false;
    };
    const oneTransfer = async (): Promise<void> => {
      const { transfer: t, condition, ilpPacket } = w.next(false);
      const payer = names[t.payer]!;
      const payee = names[t.payee]!;
      inFlight++;
      try {
        const prepared = await sendOn(ag, svc.port, 'POST', '/transfers', w.headers(payer, payee), w.prepareBody(t, condition, ilpPacket, false));
        if (!note(prepared, 201, 'RESERVED')) {
          soakOpen.push(t);
          return;
        }
        t.state = 'reserved';
        const fulfilled = await sendOn(ag, svc.port, 'PUT', `/transfers/${t.id}`, w.headers(payee, payer), w.fulfilBody(t));
        if (!note(fulfilled, 200, 'COMMITTED')) {
          soakOpen.push(t);
          return;
        }
        t.state = 'committed';
        statsAt(elapsed()).transfers++;
        soakTransfers++;
        books.add(t);
      } finally {
        inFlight--;
      }
    };
    const inFlightWork = new Set<Promise<void>>();
    const loopDone = new Promise<void>((resolve) => {
      const tick = (): void => {
        const now = elapsed();
        if (now >= durationS || interrupted || svc.exit !== undefined) return resolve();
        const due = Math.floor(now * targetRate);
        while (started < due && inFlight < options.maxInFlight) {
          started++;
          const work = oneTransfer();
          inFlightWork.add(work);
          void work.finally(() => inFlightWork.delete(work));
        }
        setTimeout(tick, 2);
      };
      tick();
    });

    /** InnoDB counters of MariaDB (SHOW GLOBAL STATUS), without blocking the load generator. */
    const dbStatus = async (): Promise<Map<string, number> | undefined> => {
      if (mariadb === undefined) return undefined;
      try {
        const { stdout } = await execFileAsync('mariadb', ['-h127.0.0.1', `-P${mariadb.port}`, `-u${mariadb.user}`, `-p${mariadb.password}`, '-N', '-e',
          "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_reads', 'Innodb_data_fsyncs')"]);
        return new Map(stdout.trim().split('\n').map((line) => line.split('\t')).map(([k, v]) => [k!, Number(v)]));
      } catch {
        return undefined;
      }
    };
    // Sampler: every sampleSeconds, the service's RSS, heap and CPU, and the machine's.
    const sampleState = {
      cpu: cpuSnapshot({ target: svc.pid, tigerbeetle: tbPids, extra: { mariadb: mariadbPids } }),
      metrics: await serviceMetrics(svc.base),
      db0: await dbStatus(),
    };
    const takeSample = async (): Promise<Sample> => {
      const [metrics, dbCounters] = await Promise.all([serviceMetrics(svc.base), dbStatus()]);
      const now = elapsed();
      const cpuNow = cpuSnapshot(sampleState.cpu.pids);
      const cpu = cpuBetween(sampleState.cpu, cpuNow);
      const interval = Math.max(0.001, cpu.wallS);
      const m0 = sampleState.metrics;
      const delta = (f: (m: ServiceMetrics) => number | undefined): number | undefined => {
        const a = m0 === undefined ? undefined : f(m0);
        const b = metrics === undefined ? undefined : f(metrics);
        return a === undefined || b === undefined ? undefined : b - a;
      };
      const ratio = (a: number | undefined, b: number | undefined, scale = 1): number | undefined => (a === undefined || b === undefined || b <= 0 ? undefined : (a / b) * scale);
      const dbDelta = (key: string): number | undefined => {
        const a = sampleState.db0?.get(key);
        const b = dbCounters?.get(key);
        return a === undefined || b === undefined ? undefined : (b - a) / interval;
      };
      const mib = (bytes: number | undefined): number | undefined => (bytes === undefined ? undefined : bytes / 2 ** 20);
      const sample: Sample = {
        t: Number(now.toFixed(1)),
        transfersDone: soakTransfers,
        rssMiB: memoryMiB(svc.pid, 'VmRSS'),
        hwmMiB: memoryMiB(svc.pid, 'VmHWM'),
        heapUsedMiB: mib(metrics?.heapUsedBytes),
        heapTotalMiB: mib(metrics?.heapTotalBytes),
        externalMiB: mib(metrics?.externalBytes),
        heapSpacesUsedMiB: Object.fromEntries(Object.entries(metrics?.heapSpacesUsed ?? {}).map(([k, v]) => [k, Number((v / 2 ** 20).toFixed(2))])),
        activeHandles: metrics?.activeHandles,
        requestLabelSets: metrics?.requestLabelSets,
        metricsLines: metrics?.lines,
        serviceCores: (cpu.target ?? 0) / interval,
        serviceMainThreadCores: (cpu.targetThreads['main'] ?? 0) / interval,
        replicaCores: cpu.tigerbeetle / interval,
        mariadbCores: (cpu.extra['mariadb'] ?? 0) / interval,
        loadGeneratorCores: cpu.loadGenerator / interval,
        machineBusyCores: cpu.machineBusy / interval,
        stealCores: cpu.steal / interval,
        otherCores: cpu.others / interval,
        mariadbRssMiB: mariadbPids.length > 0 ? memoryMiB(mariadbPids[0]!, 'VmRSS') : undefined,
        serviceMeanMs: ratio(delta((m) => m.httpSeconds), delta((m) => m.httpCount), 1000),
        servicePrepareMs: ratio(delta((m) => m.routes['POST /transfers']?.seconds), delta((m) => m.routes['POST /transfers']?.count), 1000),
        serviceFulfilMs: ratio(delta((m) => m.routes['PUT /transfers/:id']?.seconds), delta((m) => m.routes['PUT /transfers/:id']?.count), 1000),
        dbDiskReadsPerS: dbDelta('Innodb_buffer_pool_reads'),
        dbFsyncsPerS: dbDelta('Innodb_data_fsyncs'),
        ledgerBatchesPerS: ratio(delta((m) => m.ledgerBatches), interval),
        ledgerCommandsPerBatch: ratio(delta((m) => m.ledgerCommands), delta((m) => m.ledgerBatches)),
        ledgerBatchMs: ratio(delta((m) => m.ledgerSeconds), delta((m) => m.ledgerBatches), 1000),
        inFlightTransfers: inFlight,
        backlog: Math.max(0, Math.floor(now * targetRate) - started),
        otherProcesses: cpu.heaviestOthers,
      };
      Object.assign(sampleState, { cpu: cpuNow, metrics: metrics ?? sampleState.metrics, db0: dbCounters ?? sampleState.db0 });
      return sample;
    };
    let snapshotA: string | undefined;
    const sampler = (async (): Promise<void> => {
      for (let k = 1; ; k++) {
        const due = k * options.sampleSeconds;
        if (due > durationS + 0.5) return;
        const wait = due * 1000 - (performance.now() - soakStart);
        if (wait > 0) await sleep(wait);
        if (interrupted || svc.exit !== undefined) return;
        const sample = await takeSample();
        samples.push(sample);
        maxBacklog = Math.max(maxBacklog, sample.backlog);
        if (k === 1 || k % Math.max(1, Math.round(60 / options.sampleSeconds)) === 0) {
          log(
            `t=${sample.t.toFixed(0)} s: ${soakTransfers} transfers, RSS ${sample.rssMiB?.toFixed(1)} MiB, heap used ${sample.heapUsedMiB?.toFixed(1)} MiB, ` +
              `service ${sample.serviceCores.toFixed(2)} cores, machine ${sample.machineBusyCores.toFixed(2)}, in flight ${sample.inFlightTransfers}, backlog ${sample.backlog}`,
          );
        }
        if (options.heapSnapshots && snapshotA === undefined && sample.t >= options.warmupMinutes * 60 - 0.5) {
          log('heap snapshot A (end of warm-up): the service pauses while it writes it');
          snapshotA = await takeHeapSnapshot(svc, heapDir);
        }
      }
    })();

    await loopDone;
    soakWallS = elapsed();
    if (svc.exit !== undefined) {
      throw new Error(
        `the service exited during the soak at ${svc.exit.at.toISOString()} (t=${((svc.exit.at.getTime() - (Date.now() - elapsed() * 1000)) / 1000).toFixed(0)} s; ` +
          `code ${svc.exit.code}, signal ${svc.exit.signal}; with LOG_LEVEL=warn a SIGTERM/SIGINT shutdown logs nothing) after ${soakTransfers} soak transfers; ` +
          `last sample: ${JSON.stringify(samples.at(-1))}\n${tail(svc.logFile)}`,
      );
    }
    await sampler;
    log(`soak load finished after ${soakWallS.toFixed(1)} s: ${started} transfers started, waiting for ${inFlightWork.size} in flight`);
    await Promise.all([...inFlightWork]);
    // The state once the last answers are in (unless the last periodic sample was just taken).
    if (elapsed() - (samples.at(-1)?.t ?? 0) > 2) samples.push(await takeSample());
    await settle('soak', soakOpen);

    for (const m of minuteStats) {
      const spanS = Math.min(60, durationS - (m.minute - 1) * 60, soakWallS - (m.minute - 1) * 60);
      const last = [...samples].reverse().find((s) => s.t <= m.minute * 60 + 0.5 && s.t > (m.minute - 1) * 60);
      const inMinute = samples.filter((s) => s.t > (m.minute - 1) * 60 && s.t <= m.minute * 60 + 0.5);
      const mean = (f: (s: Sample) => number): number => (inMinute.length === 0 ? Number.NaN : inMinute.reduce((n, s) => n + f(s), 0) / inMinute.length);
      minutes.push({
        minute: m.minute,
        transfers: m.transfers,
        transfersPerS: m.transfers / Math.max(1, spanS),
        requestsPerS: m.requests / Math.max(1, spanS),
        errors: m.errors,
        non2xx: m.non2xx,
        unexpected: m.unexpected,
        latency: summarise(m.latencies),
        wireLatency: summarise(m.wireLatencies),
        rssEndMiB: last?.rssMiB,
        ...((): { rssMinMiB: number | undefined; rssMedianMiB: number | undefined; rssMaxMiB: number | undefined } => {
          const rss = inMinute.map((s) => s.rssMiB).filter((v): v is number => v !== undefined);
          return { rssMinMiB: rss.length === 0 ? undefined : Math.min(...rss), rssMedianMiB: median(rss), rssMaxMiB: rss.length === 0 ? undefined : Math.max(...rss) };
        })(),
        heapUsedEndMiB: last?.heapUsedMiB,
        serviceCores: mean((s) => s.serviceCores),
        machineBusyCores: mean((s) => s.machineBusyCores),
        stealCores: mean((s) => s.stealCores),
        otherCores: mean((s) => s.otherCores),
        maxInFlight: Math.max(0, ...inMinute.map((s) => s.inFlightTransfers)),
        errorSamples: m.errorSamples,
      });
      m.latencies = [];
      m.wireLatencies = [];
    }

    if (options.heapSnapshots) {
      log('heap snapshot B (end)');
      const snapshotB = await takeHeapSnapshot(svc, heapDir);
      if (snapshotA !== undefined) {
        const a = summariseSnapshot(snapshotA);
        const b = summariseSnapshot(snapshotB);
        for (const key of new Set([...a.keys(), ...b.keys()])) {
          const x = a.get(key) ?? { count: 0, bytes: 0 };
          const y = b.get(key) ?? { count: 0, bytes: 0 };
          heapDiff.push({ key, countA: x.count, countB: y.count, bytesA: x.bytes, bytesB: y.bytes });
        }
        heapDiff.sort((p, q) => q.bytesB - q.bytesA - (p.bytesB - p.bytesA));
        heapDiff.splice(0, heapDiff.length, ...heapDiff.filter((d) => Math.abs(d.bytesB - d.bytesA) >= 1024).slice(0, 20));
        log(`heap snapshots kept in ${heapDir}`);
        keepLogs = true;
      }
    }

    // ---- books
    log('checking the books');
    const neverArrived = reconciliations.reduce((n, r) => n + Number(r['neverArrived'] ?? 0), 0);
    const failed = reconciliations.reduce((n, r) => n + Number(r['failed'] ?? 0), 0);
    checks.push({
      name: 'every transfer that reached the service is COMMITTED',
      pass: failed === 0 && neverArrived <= options.peakConnections + 16,
      detail: `${books.committed} committed (peak phases and soak), ${failed} not committed, ${neverArrived} never reached the service (autocannon closing its connections at the end of a peak phase)`,
    });
    checks.push(...(await transferChecks(svc.base, names, positionsBefore, books)), ...(await ledgerChecks(names, cluster)));
    const refused = minutes.reduce((n, m) => n + m.errors + m.non2xx + m.unexpected, 0);
    const peakRefused = [peakWarmup, peak].reduce((n, l) => n + l.errors + l.non2xx + l.unexpected, 0);
    checks.push({
      name: 'no errors or non-2xx answers (soak and peak)',
      pass: refused + peakRefused === 0,
      detail: `soak ${refused} (errors ${minutes.reduce((n, m) => n + m.errors, 0)}, non-2xx ${minutes.reduce((n, m) => n + m.non2xx, 0)}, unexpected 2xx ${minutes.reduce((n, m) => n + m.unexpected, 0)}), peak ${peakRefused}` +
        (refused > 0 ? `; e.g. ${minutes.flatMap((m) => m.errorSamples).slice(0, 3).join(' | ')}` : ''),
    });
    if (mariadb !== undefined) {
      const result = spawnSync('mariadb', ['-h127.0.0.1', `-P${mariadb.port}`, `-u${mariadb.user}`, `-p${mariadb.password}`, '-N', '-e', `SELECT state, COUNT(*) FROM ${database}.transfers GROUP BY state`], { encoding: 'utf8' });
      mysqlRows = result.status === 0 ? result.stdout.trim().replace(/\t/g, ' ').replace(/\n/g, ', ') : `(query failed: ${result.stderr.trim().slice(0, 200)})`;
    }

    log('stopping the service');
    await stopProcess(svc);
    service = undefined;
  } catch (error) {
    keepLogs = true;
    process.stderr.write(`service log and data kept in ${workDir}\n`);
    throw error;
  } finally {
    workload?.stop();
    agent?.destroy();
    if (service !== undefined) await stopProcess(service);
    if (mariadb !== undefined) {
      log('stopping MariaDB');
      await mariadb.stop();
    }
    if (cluster !== undefined) {
      log('stopping the cluster');
      await cluster.stop();
    }
    if (!keepLogs) fs.rmSync(workDir, { recursive: true, force: true });
    else fs.rmSync(path.join(workDir, 'data'), { recursive: true, force: true });
  }

  // ---- report
  const fixed = (v: number | undefined, d = 0): string => (v === undefined || !Number.isFinite(v) ? 'n/a' : v.toFixed(d));
  const ms = (v: number): string => (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
  const minuteTable = table(
    ['minute', 'transfers', 'transfers/s', 'req/s', 'err/non2xx', 'p50 ms', 'p99 ms', 'max ms', 'wire p50', 'wire p99', 'RSS MiB min/median/max', 'heap used MiB (end)', 'service cores', 'machine busy', 'others', 'stolen', 'max in flight'],
    minutes.map((m) => [
      String(m.minute), String(m.transfers), fixed(m.transfersPerS), fixed(m.requestsPerS), `${m.errors}/${m.non2xx + m.unexpected}`,
      ms(m.latency.p50), ms(m.latency.p99), ms(m.latency.max), ms(m.wireLatency.p50), ms(m.wireLatency.p99),
      `${fixed(m.rssMinMiB)}/${fixed(m.rssMedianMiB)}/${fixed(m.rssMaxMiB)}`, fixed(m.heapUsedEndMiB, 1),
      fixed(m.serviceCores, 2), fixed(m.machineBusyCores, 2), fixed(m.otherCores, 2), fixed(m.stealCores, 2), String(m.maxInFlight),
    ]),
  );
  // RSS and the heap saw-tooth with garbage collection (±20 % between two samples 10 s apart):
  // levels are the median of a minute's samples, the warm-up's last minute against the run's last.
  const warmupS = options.warmupMinutes * 60;
  const totalS = Math.min(options.minutes * 60, soakWallS || options.minutes * 60);
  const warmWindow = samples.filter((s) => s.t > warmupS - 60 + 0.5 && s.t <= warmupS + 0.5);
  const endWindow = samples.filter((s) => s.t > Math.max(warmupS + 0.5, totalS - 60 + 0.5));
  const warm = warmWindow.at(-1) ?? samples[0];
  const end = samples.at(-1);
  const after = samples.filter((s) => warm !== undefined && s.t >= warm.t);
  const level = (window: Sample[], f: (s: Sample) => number | undefined): number | undefined => median(window.map(f).filter((v): v is number => v !== undefined));
  const rssWarm = level(warmWindow, (s) => s.rssMiB);
  const rssEnd = level(endWindow, (s) => s.rssMiB);
  const rssMax = Math.max(...samples.map((s) => s.rssMiB ?? 0));
  const hwm = end?.hwmMiB;
  const growth = rssWarm === undefined || rssEnd === undefined ? Number.NaN : rssEnd / rssWarm - 1;
  const sampleGrowth = warm?.rssMiB !== undefined && end?.rssMiB !== undefined ? end.rssMiB / warm.rssMiB - 1 : Number.NaN;
  const maxGrowth = rssWarm === undefined ? Number.NaN : Math.max(...after.map((s) => s.rssMiB ?? 0)) / rssWarm - 1;
  const slope = (f: (s: Sample) => number | undefined): number => {
    // MiB per minute after warm-up (least squares).
    const points = after.map((s) => [s.t / 60, f(s)] as const).filter((p): p is readonly [number, number] => p[1] !== undefined);
    if (points.length < 2) return Number.NaN;
    const mx = points.reduce((n, p) => n + p[0], 0) / points.length;
    const my = points.reduce((n, p) => n + p[1], 0) / points.length;
    const sxx = points.reduce((n, p) => n + (p[0] - mx) ** 2, 0);
    return sxx === 0 ? Number.NaN : points.reduce((n, p) => n + (p[0] - mx) * (p[1] - my), 0) / sxx;
  };
  // Transfers between the middles of the two windows, for MiB per 1,000 transfers.
  const transfersBetween = (level(endWindow, (s) => s.transfersDone) ?? 0) - (level(warmWindow, (s) => s.transfersDone) ?? 0);
  const memoryRow = (label: string, f: (s: Sample) => number | undefined): string[] => {
    const a = level(warmWindow, f);
    const b = level(endWindow, f);
    return [
      label, fixed(a, 1), fixed(warm === undefined ? undefined : f(warm), 1), fixed(b, 1), fixed(end === undefined ? undefined : f(end), 1),
      fixed(Math.max(...samples.map((s) => f(s) ?? 0)), 1), fixed(slope(f), 2),
      fixed(a === undefined || b === undefined || transfersBetween <= 0 ? undefined : ((b - a) / transfersBetween) * 1000, 3),
    ];
  };
  const memoryRows = [
    memoryRow('RSS (VmRSS)', (s) => s.rssMiB),
    memoryRow('V8 heap used', (s) => s.heapUsedMiB),
    memoryRow('V8 heap total', (s) => s.heapTotalMiB),
    memoryRow('external (+ array buffers)', (s) => s.externalMiB),
    ...Object.keys(end?.heapSpacesUsedMiB ?? {})
      .filter((space) => samples.some((s) => (s.heapSpacesUsedMiB[space] ?? 0) >= 0.5))
      .map((space) => memoryRow(`  heap space ${space}`, (s) => s.heapSpacesUsedMiB[space])),
    ...(options.metadata === 'mysql' ? [memoryRow('MariaDB RSS', (s) => s.mariadbRssMiB)] : []),
  ];
  const memoryTable = table(
    ['MiB', 'warm-up minute median', `sample t=${fixed(warm?.t)} s`, 'last minute median', `sample t=${fixed(end?.t)} s`, 'max', 'slope after warm-up MiB/min', 'MiB per 1,000 transfers (medians)'],
    memoryRows,
  );
  const sampleTable = table(
    ['t s', 'transfers', 'RSS MiB', 'heap used', 'heap total', 'external', 'svc cores', 'main thr', 'replicas', 'mariadb', 'loadgen', 'machine', 'others', 'stolen', 'svc ms', 'prepare ms', 'fulfil ms', 'ledger cmds/batch', 'ledger batch ms', ...(options.metadata === 'mysql' ? ['db disk reads/s', 'db fsyncs/s'] : []), 'in flight', 'backlog', 'label sets', 'heaviest others'],
    samples.map((s) => [
      fixed(s.t), String(s.transfersDone), fixed(s.rssMiB, 1), fixed(s.heapUsedMiB, 1), fixed(s.heapTotalMiB, 1), fixed(s.externalMiB, 1), fixed(s.serviceCores, 2), fixed(s.serviceMainThreadCores, 2),
      fixed(s.replicaCores, 2), fixed(s.mariadbCores, 2), fixed(s.loadGeneratorCores, 2), fixed(s.machineBusyCores, 2), fixed(s.otherCores, 2), fixed(s.stealCores, 2),
      fixed(s.serviceMeanMs, 1), fixed(s.servicePrepareMs, 1), fixed(s.serviceFulfilMs, 1), fixed(s.ledgerCommandsPerBatch, 1), fixed(s.ledgerBatchMs, 1),
      ...(options.metadata === 'mysql' ? [fixed(s.dbDiskReadsPerS), fixed(s.dbFsyncsPerS)] : []),
      String(s.inFlightTransfers), String(s.backlog), fixed(s.requestLabelSets), s.otherProcesses.join(', ') || '-',
    ]),
  );
  const rssFlat = Number.isFinite(growth) && growth <= 0.1;
  const rssSummary =
    `warm-up minute median ${fixed(rssWarm, 1)} MiB → last minute median ${fixed(rssEnd, 1)} MiB: ${growth >= 0 ? '+' : ''}${fixed(growth * 100, 1)} %; ` +
    `single samples ${fixed(warm?.rssMiB, 1)} MiB (t=${fixed(warm?.t)} s) → ${fixed(end?.rssMiB, 1)} MiB (t=${fixed(end?.t)} s): ${sampleGrowth >= 0 ? '+' : ''}${fixed(sampleGrowth * 100, 1)} %; ` +
    `largest sample after warm-up ${fixed(maxGrowth * 100, 1)} % above the warm-up median; trend ${fixed(slope((s) => s.rssMiB), 2)} MiB/min`;
  if (options.metadata === 'mysql') checks.push({ name: 'RSS flat: no growth beyond 10 % after warm-up (minute medians)', pass: rssFlat, detail: rssSummary });
  const peakRate = peak === undefined ? Number.NaN : peak.transfers / peak.durationS;
  const soakRate = soakWallS > 0 ? soakTransfers / soakWallS : Number.NaN;
  checks.push({
    name: `the load held the target rate (≥ 98 % of ${fixed(targetRate, 1)} transfers/s)`,
    pass: soakRate >= 0.98 * targetRate,
    detail: `${fixed(soakRate, 1)} transfers/s achieved; the schedule's largest backlog ${maxBacklog} transfers (the service falling behind, or the load generator starved of CPU)`,
  });
  const text = [
    `Soak ${startedAt.toISOString()} — ${options.minutes} min, metadata ${options.metadata}, service ${gitLabel(git)}, node dist/src/main.js, ${os.cpus().length} cores`,
    '',
    `Peak (fspiop, ${options.peakConnections} connections, ${options.peakSeconds} s): ${fixed(peakRate)} transfers/s, p50 ${fixed(peak?.latency.all.p50, 2)} ms, p99 ${fixed(peak?.latency.all.p99, 2)} ms, errors/non-2xx ${peak?.errors ?? 'n/a'}/${peak === undefined ? 'n/a' : peak.non2xx + peak.unexpected}`,
    `Soak target ${options.rate === undefined ? `${(options.ratio * 100).toFixed(0)} %` : 'fixed rate'}: ${fixed(targetRate, 1)} transfers/s (${fixed(2 * targetRate)} req/s, paced); achieved ${fixed(soakRate, 1)} transfers/s, ${soakTransfers} complete transfers in ${fixed(soakWallS, 1)} s; load generator's largest backlog ${maxBacklog}`,
    '',
    minuteTable,
    '',
    `Memory of the service (warm-up = the first ${options.warmupMinutes} min of the soak; ${transfersBetween} transfers between the two windows' middles):`,
    memoryTable,
    `RSS: ${rssSummary}; max sampled ${fixed(rssMax, 1)} MiB, peak RSS since start (VmHWM, incl. the peak phase) ${fixed(hwm, 1)} MiB` +
      `${options.metadata === 'mysql' ? ` — target (≤ 10 %): ${rssFlat ? 'MET' : 'NOT MET'}` : ' — the embedded store keeps every transfer in memory by design'}`,
    `prom-client: ${fixed(end?.requestLabelSets)} http_request_duration_seconds label sets at the end (${fixed(warm?.requestLabelSets)} at warm-up), ${fixed(end?.metricsLines)} exposition lines (${fixed(warm?.metricsLines)})`,
    ...(mysqlRows === undefined ? [] : [`MariaDB transfers rows by state: ${mysqlRows}`]),
    ...(heapDiff.length === 0
      ? []
      : [
          '',
          'Heap snapshots, end of warm-up → end: largest growth by constructor (self size)',
          table(
            ['constructor / type', 'count A', 'count B', 'MiB A', 'MiB B', 'Δ MiB'],
            heapDiff.map((d) => [d.key.slice(0, 60), String(d.countA), String(d.countB), (d.bytesA / 2 ** 20).toFixed(2), (d.bytesB / 2 ** 20).toFixed(2), ((d.bytesB - d.bytesA) / 2 ** 20).toFixed(2)]),
          ),
        ]),
    '',
    `Samples every ${options.sampleSeconds} s (cores = CPU seconds per wall second; label sets = http_request_duration_seconds label sets):`,
    sampleTable,
    '',
    ...checkLines(checks, warnings),
  ].join('\n');
  process.stdout.write(`\n${text}\n`);

  const file = writeResult(`soak-${stamp}${options.metadata === 'embedded' ? '-embedded' : ''}`, {
    startedAt, options, git, warnings, machine: machineDescription(),
    peak: peak === undefined ? undefined : { ...peak, transfersPerS: peakRate }, peakWarmup,
    soak: { targetTransfersPerS: targetRate, achievedTransfersPerS: soakRate, transfers: soakTransfers, wallS: soakWallS, maxBacklog },
    memory: {
      warmupEnd: warm, end, rssGrowth: growth, rssMaxGrowthAfterWarmup: maxGrowth, rssMaxMiB: rssMax, vmHwmMiB: hwm, rssSlopeMiBPerMin: slope((s) => s.rssMiB),
      rssWarmupMedianMiB: rssWarm, rssLastMinuteMedianMiB: rssEnd, rssSampleGrowth: sampleGrowth, transfersBetweenWindows: transfersBetween,
      table: memoryRows,
    },
    minutes, samples, heapDiff, mysqlRows, reconciliations, checks, text,
  });
  process.stdout.write(`\nwrote ${path.relative(REPO_DIR, file)}\n`);
  failOnChecks(checks);
}

function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}


runMain(main, 'soak');
