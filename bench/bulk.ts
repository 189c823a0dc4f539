/**
 * Bulk transfers against single transfers through the same Kafka path, in one run on one ledger
 * and one service process (issue 27, "Scale"):
 *
 *   1. a throwaway three-replica TigerBeetle cluster (--one-replica: one; --embedded: the
 *      service's embedded ledger instead), a throwaway Kafka broker and a FerretDB (the object
 *      store), through the tests' harnesses; fresh topics;
 *   2. the built service (node dist/src/main.js) in Kafka mode with the object store, so bulk
 *      transfers are on; 8 participants onboarded;
 *   3. single transfers: N prepares as ml-api-adapter writes them, each answered by its payee's
 *      fulfil (commit) — bench/kafka-load.ts's closed loop, --in-flight F at a time;
 *   4. bulks: the same N transfers' worth as bulks of --bulk-size (1,000), each between one pair
 *      of participants; the benchmark plays bulk-api-adapter (items written to the object store
 *      under the message id, then bulk-prepare; the payee's results, then bulk-commit) rather than
 *      running it (bench/bulk-load.ts), --bulks-in-flight B at a time; a bulk is done when the
 *      payer's final notice says COMPLETED, its results document telling what was committed;
 *   5. memory: --memory-bulks more bulks, the service's RSS read before and after each tenth;
 *   6. the books: positions moved by exactly the bigint sums of what was committed, a sample
 *      answering GET /transfers/{id} COMMITTED, nothing reserved, debits = credits.
 *
 * --profile: the service under --cpu-prof; its samples during the measured bulk phase summarised
 * (bench/profile-summary.ts) and printed, the profile kept under bench/profiles/.
 *
 * Printed for both: transfers/s, ledger requests per transfer (the service's
 * ledger_batch_commands_count from /metrics), service CPU per transfer (bench/procstat.ts) and
 * the ratio single/bulk. Between the two phases the service's CPU is read over IDLE_MS with nothing
 * sent: what it spends per second whatever the load, so a slower phase (the bulks, bound by the
 * object store here) pays more of it per transfer; per transfer above that floor is printed too.
 * A benchmark never fails on a time; it exits 1 if a check fails.
 *
 *   npx tsx bench/bulk.ts [--quick] [--transfers N] [--bulk-size S] [--in-flight F]
 *                         [--bulks-in-flight B] [--memory-bulks M] [--partitions P]
 *                         [--one-replica | --embedded] [--build | --no-build] [--profile]
 *
 * Writes bench/results/bulk-<timestamp>.json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Partitioners } from 'kafkajs';
import { MongoClient } from 'mongodb';
import { kafkaAvailable, startKafka, type RunningKafka } from '../test/support/kafka-broker';
import { ferretDbUnavailable, startFerretDb, type RunningFerretDb } from '../test/support/ferretdb';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import {
  REPO_DIR,
  serviceEnv,
  sleep,
  startProcess,
  stopProcess,
  tail,
  type Started,
} from '../test/support/service-process';
import { freePort } from '../test/support/net';
import { Books, onboard, positions, Workload } from '../test/support/workload';
import {
  buildIfStale,
  checkLines,
  failOnChecks,
  fixed,
  flags,
  gitDescription,
  gitLabel,
  ledgerChecks,
  machineDescription,
  paragraphs,
  progressLog,
  runMain,
  table,
  transferChecks,
  writeResult,
  type Check,
} from './common';
import {
  PayeeSimulator,
  benchKafka,
  buildKafkaTransfers,
  kafkaEnv,
  runKafkaPhase,
  type KafkaPhase,
  type Topics,
} from './kafka-load';
import { BulkSimulator, newBulk, runBulkPhase, type BenchBulk, type BulkPhase } from './bulk-load';
import { brokerPid, type CpuUse, type Pids } from './phases';
import { cpuSeconds, findPids } from './procstat';
import { formatSummary, summariseProfile } from './profile-summary';

interface Options {
  transfers: number;
  bulkSize: number;
  inFlight: number;
  bulksInFlight: number;
  memoryBulks: number;
  partitions: number;
  ledger: 'cluster' | 'one-replica' | 'embedded';
  build: boolean;
  forceBuild: boolean;
  participants: number;
  sampleGets: number;
  profile: boolean;
}

function parseOptions(argv: string[]): Options {
  const { has, number } = flags(argv);
  const quick = has('--quick');
  let ledger: Options['ledger'] = 'cluster';
  if (has('--embedded')) ledger = 'embedded';
  else if (has('--one-replica')) ledger = 'one-replica';
  return {
    transfers: number('--transfers', quick ? 2_000 : 10_000, true),
    bulkSize: number('--bulk-size', 1_000, true),
    inFlight: number('--in-flight', 64, true),
    bulksInFlight: number('--bulks-in-flight', 2, true),
    memoryBulks: number('--memory-bulks', quick ? 10 : 20),
    partitions: number('--partitions', 4, true),
    ledger,
    build: !has('--no-build'),
    forceBuild: has('--build'),
    participants: 8,
    sampleGets: 500,
    profile: has('--profile'),
  };
}

/** Bulks of `size` transfers, `count` transfers in all, the pairs of participants in turn. */
function buildBulks(workload: Workload, names: readonly string[], count: number, size: number) {
  const bulks: BenchBulk[] = [];
  for (let i = 0; i * size < count; i++) {
    const payer = i % names.length;
    const payee = (payer + 1 + (Math.floor(i / names.length) % (names.length - 1))) % names.length;
    const transfers = buildKafkaTransfers(workload, names, Math.min(size, count - i * size), {
      payer,
      payee,
    });
    bulks.push(newBulk(transfers));
  }
  return bulks;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const log = progressLog(startedAt.getTime());
  const why = kafkaAvailable() ?? ferretDbUnavailable();
  if (why !== undefined) throw new Error(`cannot run the bulk benchmark here: ${why}`);
  const warnings = buildIfStale(REPO_DIR, { build: options.build, force: options.forceBuild }, log);
  const git = gitDescription(REPO_DIR);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-bulk-'));
  let cluster: RunningCluster | undefined;
  let broker: RunningKafka | undefined;
  let ferret: RunningFerretDb | undefined;
  let service: Started | undefined;
  let mongo: MongoClient | undefined;
  let workload: Workload | undefined;
  const clients: { disconnect(): Promise<void> }[] = [];
  const checks: Check[] = [];
  let single: KafkaPhase | undefined;
  let bulk: BulkPhase | undefined;
  let memory: BulkPhase | undefined;
  let idle: number | undefined;
  const profileFile = path.join(REPO_DIR, 'bench', 'profiles', `service-bulk-${stamp}.cpuprofile`);
  let bulkWindow: { start: number; end: number } | undefined;
  let serviceExitAt = 0;
  const check = (name: string, pass: boolean, detail: string): void => {
    checks.push({ name, pass, detail });
    log(`${pass ? 'PASS' : 'FAIL'} ${name}: ${detail.split('\n')[0]}`);
  };

  try {
    log(`starting the ledger (${options.ledger}), a Kafka broker and FerretDB`);
    [cluster, broker, ferret] = await Promise.all([
      options.ledger === 'embedded'
        ? undefined
        : startCluster({ replicas: options.ledger === 'cluster' ? 3 : 1 }),
      startKafka(),
      startFerretDb(),
    ]);
    const tbPids =
      cluster === undefined
        ? []
        : findPids('tigerbeetle', 'start', `--addresses=${cluster.addresses.join(',')}`);
    const run = randomBytes(3).toString('hex');
    const topics: Topics & { bulkPrepare: string; bulkFulfil: string; bulkGet: string } = {
      prepare: `bench-${run}-prepare`,
      fulfil: `bench-${run}-fulfil`,
      get: `bench-${run}-get`,
      notification: `bench-${run}-notification`,
      bulkPrepare: `bench-${run}-bulk-prepare`,
      bulkFulfil: `bench-${run}-bulk-fulfil`,
      bulkGet: `bench-${run}-bulk-get`,
    };
    const kafka = await benchKafka(broker.brokers, run, Object.values(topics), options.partitions);

    const port = await freePort();
    const database = `bench_${run}`;
    const { TB_CLUSTER_ID, TB_ADDRESSES, ...common } = serviceEnv(
      port,
      cluster ?? { clusterId: 0n, addresses: [] },
      path.join(workDir, 'data'),
    );
    const ledgerEnv =
      cluster === undefined ? { LEDGER_BACKEND: 'embedded' } : { TB_CLUSTER_ID, TB_ADDRESSES };
    const env: NodeJS.ProcessEnv = {
      ...common,
      ...ledgerEnv,
      ...kafkaEnv(broker.brokers, run, topics),
      KAFKA_TOPIC_BULK_PREPARE: topics.bulkPrepare,
      KAFKA_TOPIC_BULK_FULFIL: topics.bulkFulfil,
      KAFKA_TOPIC_BULK_GET: topics.bulkGet,
      MONGODB_URL: ferret.url,
      MONGODB_DATABASE: database,
    };
    log(`starting the service (port ${port}, ${options.ledger} ledger, object store ${database})`);
    if (options.profile) fs.mkdirSync(path.dirname(profileFile), { recursive: true });
    const profileArgs = options.profile
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${path.dirname(profileFile)}`,
          `--cpu-prof-name=${path.basename(profileFile)}`,
        ]
      : [];
    service = await startProcess(
      'the service',
      [...profileArgs, path.join(REPO_DIR, 'dist/src/main.js')],
      env,
      port,
      path.join(workDir, 'service.log'),
      '/health',
    );
    const pids: Pids = {
      service: service.pid,
      broker: brokerPid(broker.brokers[0]!),
      tigerbeetle: tbPids,
    };
    const names = await onboard(service.base, `bulk${run}`, options.participants);
    const positions0 = await positions(service.base, names);
    workload = new Workload(names, { conditionPool: 16_384, amountPool: 64 });

    // ---- single transfers (bench/kafka-load.ts's closed loop)
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const payeeProducer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const payees = kafka.consumer({ groupId: `payees-${run}` });
    clients.push(payees, producer, payeeProducer);
    await Promise.all([producer.connect(), payeeProducer.connect()]);
    const batchBytes = 900 * 1024;
    const simulator = new PayeeSimulator(payees, payeeProducer, topics, batchBytes);
    await simulator.start(options.partitions);
    const offer = { rate: 0, inFlight: options.inFlight, batchBytes };
    const books = new Books(options.sampleGets);
    log('single transfers: warm-up of 500');
    const warmup = buildKafkaTransfers(workload, names, 500);
    await runKafkaPhase(
      'single warm-up',
      simulator,
      producer,
      topics,
      warmup,
      offer,
      undefined,
      service.base,
    );
    const singles = buildKafkaTransfers(workload, names, options.transfers);
    log(`single transfers: ${options.transfers}, ${options.inFlight} in flight`);
    single = await runKafkaPhase(
      'single',
      simulator,
      producer,
      topics,
      singles,
      offer,
      pids,
      service.base,
    );
    log(`single: ${single.committed} committed, ${single.transfersPerS.toFixed(0)} transfers/s`);
    for (const t of [...warmup, ...singles]) if (t.commits > 0) books.add(t.sent);
    check(
      'single: every transfer committed, no error notification',
      single.committed === single.transfers && simulator.errorNotes.length === 0,
      `${single.committed}/${single.transfers} committed; ${simulator.errorNotes.length} errors ${JSON.stringify(simulator.errorNotes.slice(0, 2))}`,
    );
    await Promise.all(clients.splice(0).map((c) => c.disconnect().catch(() => undefined)));
    idle = await idleCores(service.pid);
    log(`idle: the service took ${fixed(idle, 3)} cores over ${IDLE_MS / 1000} s, nothing sent`);

    // ---- bulks: the benchmark plays bulk-api-adapter and the payees
    mongo = await MongoClient.connect(ferret.url);
    const bulkProducer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const bulkPayees = kafka.consumer({ groupId: `bulk-payees-${run}` });
    clients.push(bulkPayees, bulkProducer);
    await bulkProducer.connect();
    const bulkSimulator = new BulkSimulator(bulkPayees, bulkProducer, mongo.db(database), topics);
    await bulkSimulator.start(options.partitions);
    log('bulks: warm-up of one bulk');
    const bulkWarmup = buildBulks(workload, names, options.bulkSize, options.bulkSize);
    const bulkOptions = { inFlight: options.bulksInFlight, pids: undefined, base: service.base };
    await runBulkPhase('bulk warm-up', bulkSimulator, bulkWarmup, bulkOptions);
    const bulks = buildBulks(workload, names, options.transfers, options.bulkSize);
    log(`bulks: ${bulks.length} of ≤ ${options.bulkSize}, ${options.bulksInFlight} in flight`);
    const bulkStart = Date.now();
    bulk = await runBulkPhase('bulk', bulkSimulator, bulks, { ...bulkOptions, pids });
    bulkWindow = { start: bulkStart, end: Date.now() };
    log(`bulk: ${bulk.committed} committed, ${bulk.transfersPerS.toFixed(0)} transfers/s`);
    const memoryBulks = buildBulks(
      workload,
      names,
      options.memoryBulks * options.bulkSize,
      options.bulkSize,
    );
    if (memoryBulks.length > 0) {
      log(`memory: ${memoryBulks.length} more bulks, the service's RSS after each tenth`);
      memory = await runBulkPhase('memory', bulkSimulator, memoryBulks, { ...bulkOptions, pids });
    }
    const allBulks = [...bulkWarmup, ...bulks, ...memoryBulks];
    for (const b of allBulks)
      if (b.committed === b.transfers.length) for (const t of b.transfers) books.add(t.sent);
    const badBulks = allBulks.filter(
      (b) => b.committed !== b.transfers.length || b.forwards !== 1 || b.finals !== 1,
    );
    check(
      'bulk: every bulk forwarded once, completed once, every transfer committed',
      badBulks.length === 0 && bulkSimulator.errors.length === 0,
      `${allBulks.length} bulks, ${badBulks.length} otherwise${badBulks.length > 0 ? ` (e.g. ${JSON.stringify({ ...badBulks[0]!, transfers: badBulks[0]!.transfers.length })})` : ''}; errors ${bulkSimulator.errors.slice(0, 3).join('; ') || 'none'}; ${bulkSimulator.foreign} notifications of no bulk skipped`,
    );
    for (const c of await transferChecks(service.base, names, positions0, books, ''))
      check(c.name, c.pass, c.detail);
    if (cluster !== undefined)
      for (const c of await ledgerChecks(names, cluster)) check(c.name, c.pass, c.detail);
  } catch (error) {
    if (service !== undefined)
      process.stderr.write(`service log tail:\n${tail(service.logFile)}\n`);
    throw error;
  } finally {
    workload?.stop();
    await Promise.all(clients.map((c) => c.disconnect().catch(() => undefined)));
    await mongo?.close();
    if (service !== undefined) await stopProcess(service);
    serviceExitAt = Date.now();
    await broker?.stop();
    await ferret?.stop();
    await cluster?.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
  }

  const text = report(
    startedAt,
    options,
    gitLabel(git),
    { single, bulk, memory, idle },
    checks,
    warnings,
  );
  process.stdout.write(`\n${text}\n`);
  if (options.profile && bulkWindow !== undefined) {
    // Only the measured bulk phase: not start-up, the single transfers, the warm-up or the checks.
    const summary = summariseProfile(profileFile, 30, {
      fromMsBeforeEnd: serviceExitAt - bulkWindow.start,
      toMsBeforeEnd: serviceExitAt - bulkWindow.end,
    });
    const summaryText = formatSummary(summary);
    fs.writeFileSync(profileFile.replace(/\.cpuprofile$/, '-summary.txt'), `${summaryText}\n`);
    process.stdout.write(`\n${summaryText}\n\nprofile: ${path.relative(REPO_DIR, profileFile)}\n`);
  }
  const file = writeResult(`bulk-${stamp}`, {
    startedAt,
    options,
    git,
    machine: machineDescription(),
    single,
    bulk,
    memory,
    idleServiceCores: idle,
    checks,
    text,
  });
  process.stdout.write(`\nwrote ${path.relative(REPO_DIR, file)}\n`);
  failOnChecks(checks, single !== undefined && bulk !== undefined);
}

type CpuPart = 'service' | 'broker' | 'tigerbeetle' | 'loadGenerator' | 'others';

/** How long the service's idle CPU is read, after a second to let the last phase's work end. */
const IDLE_MS = 5000;

/** The service's CPU (cores) over IDLE_MS with nothing sent. */
async function idleCores(pid: number): Promise<number | undefined> {
  await sleep(1000);
  const before = cpuSeconds(pid);
  await sleep(IDLE_MS);
  const after = cpuSeconds(pid);
  return before === undefined || after === undefined
    ? undefined
    : (after - before) / (IDLE_MS / 1000);
}

/** A phase's service CPU per transfer (ms) less what the service spends idle over its time. */
function serviceAboveIdle(
  phase: { cpu: CpuUse | undefined; committed: number },
  idle: number | undefined,
): number | undefined {
  const perTransfer = msPerTransfer(phase, 'service');
  if (perTransfer === undefined || idle === undefined) return undefined;
  return perTransfer - (idle * phase.cpu!.wallS * 1000) / phase.committed;
}

/** A process's (or group's) CPU in ms per committed transfer of a phase. */
function msPerTransfer(phase: { cpu: CpuUse | undefined; committed: number }, part: CpuPart) {
  const cores = phase.cpu?.[part];
  return cores === undefined ? undefined : (cores * phase.cpu!.wallS * 1000) / phase.committed;
}

function report(
  startedAt: Date,
  options: Options,
  label: string,
  phases: {
    single: KafkaPhase | undefined;
    bulk: BulkPhase | undefined;
    memory: BulkPhase | undefined;
    /** The service's CPU (cores) with nothing sent. */
    idle: number | undefined;
  },
  checks: readonly Check[],
  warnings: readonly string[],
): string {
  const { single: s, bulk: b, memory: m, idle } = phases;
  const rows: string[][] = [];
  const row = (metric: string, sv: number | undefined, bv: number | undefined, digits: number) => {
    const ratio = sv === undefined || bv === undefined ? undefined : sv / bv;
    rows.push([
      metric,
      fixed(sv, digits),
      fixed(bv, digits),
      ratio === undefined ? 'n/a' : `${ratio.toFixed(2)}×`,
    ]);
  };
  if (s !== undefined && b !== undefined) {
    rows.push([
      'load',
      `${s.transfers} prepares, ${options.inFlight} in flight`,
      `${b.bulks} bulks of ≤ ${options.bulkSize}, ${options.bulksInFlight} in flight`,
      '',
    ]);
    row('committed transfers', s.committed, b.committed, 0);
    row('wall time (s)', s.wallS, b.wallS, 2);
    row('latency p50 (ms): a transfer / a bulk', s.latency.complete.p50, b.latency.p50, 0);
    row('latency p99 (ms): a transfer / a bulk', s.latency.complete.p99, b.latency.p99, 0);
    row('transfers/s', s.transfersPerS, b.transfersPerS, 0);
    row(
      'ledger requests per transfer',
      s.ledger === undefined ? undefined : s.ledger.batches / s.committed,
      b.ledger === undefined ? undefined : b.ledger.batches / b.committed,
      4,
    );
    row('ledger commands per request (mean)', s.ledger?.mean, b.ledger?.mean, 1);
    const parts: [string, CpuPart][] = [
      ['service', 'service'],
      ['broker', 'broker'],
      ['TB replicas', 'tigerbeetle'],
      ['load generator', 'loadGenerator'],
      ['other processes (FerretDB…)', 'others'],
    ];
    for (const [name, part] of parts) {
      row(`${name} CPU per transfer (ms)`, msPerTransfer(s, part), msPerTransfer(b, part), 3);
      row(`${name} CPU (cores)`, s.cpu?.[part], b.cpu?.[part], 2);
    }
    row(
      `service CPU per transfer above idle (ms; idle ${fixed(idle, 3)} cores)`,
      serviceAboveIdle(s, idle),
      serviceAboveIdle(b, idle),
      3,
    );
  }
  const rss = (phase: BulkPhase | undefined): string =>
    phase === undefined
      ? 'n/a'
      : phase.rss.map((r) => `${r.bulks}: ${fixed(r.rssMiB, 0)}`).join(', ');
  return paragraphs(
    `Bulk vs single transfers over Kafka ${startedAt.toISOString()} — service ${label}, ledger ${options.ledger}, ${options.partitions} partition(s), ${os.cpus().length} cores`,
    table(['metric', 'single', 'bulk', 'single/bulk'], rows),
    [
      `Service RSS (MiB) after so many bulks — measured phase: ${rss(b)}; memory phase (${m?.bulks ?? 0} more bulks): ${rss(m)}`,
      b?.cpu !== undefined &&
        `Other processes during the bulk phase (FerretDB among them): ${b.cpu.heaviestOthers.join(', ') || '-'}`,
      m !== undefined &&
        `Memory phase: ${m.committed} transfers in ${m.bulks} bulks at ${m.transfersPerS.toFixed(0)} transfers/s`,
    ],
    checkLines(checks, warnings),
  );
}

runMain(main);
