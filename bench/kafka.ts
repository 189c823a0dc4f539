/**
 * Kafka drop-in throughput, with the HTTP figure beside it, in one run on one cluster and one
 * service process:
 *
 *   1. a throwaway three-replica TigerBeetle cluster and a throwaway Kafka broker (KRaft, jars
 *      from kafka/pom.xml), fresh topics with --partitions partitions each;
 *   2. the built service (node dist/src/main.js) with KAFKA_ENABLED=true on those topics, a fresh
 *      consumer group, LEDGER_BACKEND=tigerbeetle, JMETER_ENABLED=true, LOG_LEVEL=warn;
 *   3. 8 participants onboarded through POST /jmeter/participants/create;
 *   4. Kafka: N prepare messages (built exactly like ml-api-adapter's, test/support/
 *      mojaloop-messages.ts, with the HTTP benchmark's bodies: real ILP packets, real
 *      conditions) produced in requests under 1 MB; a payee simulator consumes the notification
 *      topic and answers each successful prepare forward with the payee's fulfil (commit); the
 *      clock runs from the first prepare produced until the N-th commit notification is seen;
 *   5. books of the Kafka phase: one forward and ≥ 1 commit per transfer, no error notification,
 *      a sample answering GET /transfers/{id} COMMITTED, positions moved by exactly the bigint sums;
 *   6. HTTP: complete transfers (POST /transfers, then the payee's PUT /transfers/{id}) with
 *      autocannon at 64 connections for 10 s, against the same service; its books;
 *   7. nothing left reserved, debits = credits on the USD ledgers; everything stopped.
 *
 *   npx tsx bench/kafka.ts [--transfers N] [--partitions P] [--http-seconds S] [--connections C]
 *                          [--warmup N] [--rate R] [--batch-kib K] [--build | --no-build]
 *
 * --rate R produces the prepares at R per second (open loop) instead of all at once, which makes
 * the latency figures a service time rather than the queueing of a burst.
 * Writes bench/results/kafka-<timestamp>.json. Exits 1 if any check fails.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kafka, Partitioners, logLevel, type Consumer, type Producer } from 'kafkajs';
import { kafkaAvailable, startKafka, type RunningKafka } from '../test/support/kafka-broker';
import { fulfilMessage, prepareMessage, type TestTransfer } from '../test/support/mojaloop-messages';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import { Books, REPO_DIR, buildIfStale, call, checkLines, failOnChecks, flags, freePort, gitDescription, gitLabel, ledgerChecks, machineDescription, onboard, paragraphs, positions, reconcile, runMain, scrapeMetrics, serviceEnv, sleep, startProcess, stopProcess, tail, transferChecks, writeResult, type Check, type Started } from './common';
import { cpuBetween, cpuSnapshot, findPids, memoryMiB, type CpuSnapshot } from './procstat';
import { table } from './report';
import { CURRENCY, Workload, drive, summarise, type LatencySummary, type SentTransfer } from './workload';


interface Options {
  transfers: number;
  partitions: number;
  httpSeconds: number;
  connections: number;
  warmup: number;
  /** Prepares per second; 0 = all at once. */
  rate: number;
  /** Bytes of message values per producer request (the broker takes 1 MB per record batch). */
  batchBytes: number;
  build: boolean;
  forceBuild: boolean;
  participants: number;
  /** Committed transfers of each phase asked for with GET /transfers/{id}. */
  sampleGets: number;
}

function parseOptions(argv: string[]): Options {
  const { has, number } = flags(argv);
  return {
    transfers: number('--transfers', 20_000),
    partitions: number('--partitions', 4),
    httpSeconds: number('--http-seconds', 10),
    connections: number('--connections', 64),
    warmup: number('--warmup', 500),
    rate: number('--rate', 0),
    batchBytes: number('--batch-kib', 900) * 1024,
    build: !has('--no-build'),
    forceBuild: has('--build'),
    participants: 8,
    sampleGets: 1000,
  };
}

// ---------------------------------------------------------------------------------------------
// Processes (as bench/run.ts)

/** The broker JVM listening on `hostPort` (its server.properties names the listener). */
function brokerPid(hostPort: string): number | undefined {
  for (const pid of findPids('kafka.Kafka')) {
    try {
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const properties = args.find((a) => a.endsWith('server.properties'));
      if (properties !== undefined && fs.readFileSync(properties, 'utf8').includes(`PLAINTEXT://${hostPort}\n`)) return pid;
      if (properties !== undefined && fs.readFileSync(properties, 'utf8').includes(`PLAINTEXT://${hostPort},`)) return pid;
    } catch {
      // gone
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers


/** The ledger batcher's counters from GET /metrics (src/handlers/metrics.ts), if there. */
async function ledgerMetrics(base: string): Promise<{ batches: number; commands: number; seconds: number } | undefined> {
  const samples = await scrapeMetrics(base);
  const value = (name: string): number | undefined => samples?.find((s) => s.name === name && Object.keys(s.labels).length === 0)?.value;
  const batches = value('ledger_batch_commands_count');
  const commands = value('ledger_batch_commands_sum');
  const seconds = value('ledger_batch_duration_seconds_sum');
  return batches === undefined || commands === undefined ? undefined : { batches, commands, seconds: seconds ?? Number.NaN };
}

interface LedgerBatches {
  batches: number;
  meanCommands: number;
  meanMs: number;
}

function ledgerBetween(a: { batches: number; commands: number; seconds: number } | undefined, b: { batches: number; commands: number; seconds: number } | undefined): LedgerBatches | undefined {
  if (a === undefined || b === undefined || b.batches <= a.batches) return undefined;
  const batches = b.batches - a.batches;
  return { batches, meanCommands: (b.commands - a.commands) / batches, meanMs: ((b.seconds - a.seconds) * 1000) / batches };
}

// ---------------------------------------------------------------------------------------------
// CPU accounting per phase

interface Pids {
  service: number;
  broker: number | undefined;
  tigerbeetle: number[];
}

function snapshot(pids: Pids): CpuSnapshot {
  return cpuSnapshot({ target: pids.service, tigerbeetle: pids.tigerbeetle, extra: { broker: pids.broker === undefined ? [] : [pids.broker] } });
}

interface CpuUse {
  wallS: number;
  /** Cores = CPU seconds per wall second. */
  service: number;
  serviceMain: number;
  broker: number | undefined;
  tigerbeetle: number;
  loadGenerator: number;
  machine: number;
  others: number;
  steal: number;
  heaviestOthers: string[];
  /** Cores by /proc/stat column: where the machine's busy time went (irq + softirq belong to no process). */
  machineBreakdown: Record<string, number>;
  /** Processes started on the machine during the phase (their CPU is lost if they also ended in it). */
  forks: number;
  /** Every process (kernel threads too) that used ≥ 0.005 cores, ours included. */
  allConsumers: string[];
  serviceRssPeakMiB: number | undefined;
}

/** A phase's CPU in cores, from the snapshots at its ends. */
function cpuUse(before: CpuSnapshot, after: CpuSnapshot): CpuUse {
  const used = cpuBetween(before, after);
  const cores = (seconds: number): number => seconds / used.wallS;
  const service = before.pids.target;
  return {
    wallS: used.wallS,
    service: cores(used.target ?? Number.NaN),
    serviceMain: cores(used.targetThreads['main'] ?? 0),
    broker: (before.pids.extra?.['broker'] ?? []).length === 0 ? undefined : cores(used.extra['broker'] ?? 0),
    tigerbeetle: cores(used.tigerbeetle),
    loadGenerator: cores(used.loadGenerator),
    machine: cores(used.machineBusy),
    others: cores(used.others),
    steal: cores(used.steal),
    heaviestOthers: used.heaviestOthers,
    machineBreakdown: Object.fromEntries(Object.entries(used.machineColumns).map(([name, seconds]) => [name, Number(cores(seconds).toFixed(3))])),
    forks: used.forks,
    allConsumers: used.allConsumers,
    serviceRssPeakMiB: memoryMiB(service, 'VmHWM'),
  };
}

// ---------------------------------------------------------------------------------------------
// Kafka: the producer of prepares and the payee simulator

interface KafkaTransfer {
  transfer: TestTransfer;
  /** The workload's transfer (payer, payee, amount, fulfilment), for the books. */
  sent: SentTransfer;
  prepareValue: string;
  fulfilValue: string;
  /** performance.now() when the producer request holding its prepare was issued. */
  producedAt: number;
  forwardAt: number;
  commitAt: number;
  forwards: number;
  commits: number;
  errors: number;
  fulfilsSent: number;
}

interface Topics {
  prepare: string;
  fulfil: string;
  get: string;
  notification: string;
}

/**
 * Plays ml-api-adapter and every payee: reads the notification topic, and for each successful
 * prepare forwarded to a payee produces that payee's fulfil (COMMITTED) on the fulfil topic.
 */
class PayeeSimulator {
  readonly byId = new Map<string, KafkaTransfer>();
  committed = 0;
  notifications = 0;
  readonly errorNotes: { id: string; action: string; code: unknown; description: unknown; to: unknown }[] = [];
  readonly unexpected: string[] = [];
  private onCommit: (() => void) | undefined;

  constructor(
    private readonly consumer: Consumer,
    private readonly producer: Producer,
    private readonly topics: Topics,
    private readonly batchBytes: number,
  ) {}

  async start(partitions: number): Promise<void> {
    const joined = new Promise<void>((resolve) => {
      const off = this.consumer.on(this.consumer.events.GROUP_JOIN, () => {
        off();
        resolve();
      });
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topics.notification, fromBeginning: true });
    await this.consumer.run({ partitionsConsumedConcurrently: partitions, eachBatch: async ({ batch }) => this.batch(batch.messages) });
    await joined;
  }

  /** Resolves when `count` transfers have their commit notification, or when nothing moved for `stallMs`. */
  async waitForCommits(count: number, stallMs: number): Promise<boolean> {
    let last = this.committed;
    let lastChange = Date.now();
    while (this.committed < count) {
      await new Promise<void>((resolve) => {
        this.onCommit = resolve;
        setTimeout(resolve, 250);
      });
      this.onCommit = undefined;
      if (this.committed !== last) {
        last = this.committed;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > stallMs) {
        return false;
      }
    }
    return true;
  }

  private async batch(messages: { value: Buffer | null }[]): Promise<void> {
    const now = performance.now();
    const fulfils: { key: string; value: string }[] = [];
    const committedBefore = this.committed;
    for (const message of messages) {
      this.notifications++;
      let note: any;
      try {
        note = JSON.parse(message.value?.toString('utf8') ?? 'null');
      } catch {
        this.unexpected.push(`not JSON: ${message.value?.toString('utf8').slice(0, 100)}`);
        continue;
      }
      const id = String(note?.id);
      const action = String(note?.metadata?.event?.action);
      const status = note?.metadata?.event?.state?.status;
      const t = this.byId.get(id);
      if (status === 'error') {
        this.errorNotes.push({ id, action, code: note.metadata.event.state.code, description: note.metadata.event.state.description, to: note.to });
        if (t !== undefined) t.errors++;
        continue;
      }
      if (t === undefined) {
        if (this.unexpected.length < 20) this.unexpected.push(`${action} for unknown transfer ${id}`);
        continue;
      }
      if (action === 'prepare' && status === 'success') {
        t.forwards++;
        if (t.forwards === 1) {
          t.forwardAt = now;
          fulfils.push({ key: id, value: t.fulfilValue });
          t.fulfilsSent++;
        }
      } else if (action === 'commit' && status === 'success') {
        t.commits++;
        if (t.commits === 1) {
          t.commitAt = now;
          this.committed++;
        }
      } else if (this.unexpected.length < 20) {
        this.unexpected.push(`${action}/${status} for ${id}`);
      }
    }
    if (this.committed !== committedBefore) this.onCommit?.();
    await sendInChunks(this.producer, this.topics.fulfil, fulfils, this.batchBytes);
  }
}

/** Messages (keyed by transfer id) in producer requests of at most `maxBytes` of values each. */
async function sendInChunks(producer: Producer, topic: string, messages: { key: string; value: string }[], maxBytes: number, onIssue?: (from: number, to: number) => void): Promise<void> {
  let start = 0;
  while (start < messages.length) {
    let bytes = 0;
    let end = start;
    while (end < messages.length && (end === start || bytes + messages[end]!.value.length <= maxBytes)) bytes += messages[end++]!.value.length;
    onIssue?.(start, end);
    await producer.send({ topic, messages: messages.slice(start, end) });
    start = end;
  }
}

/** Builds `count` transfers with the HTTP workload's bodies (real ILP packet, real condition) as ml-api-adapter messages. */
function buildKafkaTransfers(workload: Workload, names: readonly string[], count: number): KafkaTransfer[] {
  const expiration = new Date(Date.now() + 600_000).toISOString();
  const out: KafkaTransfer[] = [];
  for (let i = 0; i < count; i++) {
    const { transfer: t, condition, ilpPacket } = workload.next(false);
    const payer = names[t.payer]!;
    const payee = names[t.payee]!;
    const body = { transferId: t.id, payerFsp: payer, payeeFsp: payee, amount: { amount: t.amountText, currency: CURRENCY }, ilpPacket, condition, expiration };
    const transfer: TestTransfer = { transferId: t.id, payer, payee, amount: t.amountText, currency: CURRENCY, fulfilment: t.fulfilment, condition, expiration, body };
    out.push({
      transfer, sent: t,
      prepareValue: JSON.stringify(prepareMessage(transfer)),
      fulfilValue: JSON.stringify(fulfilMessage(transfer, 'commit')),
      producedAt: 0, forwardAt: 0, commitAt: 0, forwards: 0, commits: 0, errors: 0, fulfilsSent: 0,
    });
  }
  return out;
}

interface KafkaPhase {
  label: string;
  transfers: number;
  committed: number;
  completed: boolean;
  wallS: number;
  produceS: number;
  transfersPerS: number;
  latency: { complete: LatencySummary; forward: LatencySummary; fulfilToCommit: LatencySummary };
  errorNotifications: number;
  cpu: CpuUse | undefined;
  ledger: LedgerBatches | undefined;
  prepareBytes: number;
  fulfilBytes: number;
}

async function runKafkaPhase(
  label: string,
  simulator: PayeeSimulator,
  producer: Producer,
  topics: Topics,
  transfers: KafkaTransfer[],
  options: Options,
  pids: Pids | undefined,
  base: string,
): Promise<KafkaPhase> {
  for (const t of transfers) simulator.byId.set(t.transfer.transferId, t);
  const committed0 = simulator.committed;
  const errors0 = simulator.errorNotes.length;
  const metrics0 = await ledgerMetrics(base);
  const before = pids === undefined ? undefined : snapshot(pids);
  const started = performance.now();
  const values = transfers.map((t) => ({ key: t.transfer.transferId, value: t.prepareValue }));
  const stamp = (from: number, to: number): void => {
    const now = performance.now();
    for (let i = from; i < to; i++) transfers[i]!.producedAt = now;
  };
  if (options.rate > 0) {
    // Open loop: every 20 ms the prepares that are due by then.
    let sent = 0;
    while (sent < values.length) {
      const due = Math.min(values.length, Math.floor(((performance.now() - started) / 1000) * options.rate) + 1);
      if (due > sent) {
        const offset = sent;
        await sendInChunks(producer, topics.prepare, values.slice(sent, due), options.batchBytes, (from, to) => stamp(offset + from, offset + to));
        sent = due;
      }
      await sleep(20);
    }
  } else {
    await sendInChunks(producer, topics.prepare, values, options.batchBytes, stamp);
  }
  const produceS = (performance.now() - started) / 1000;
  const completed = await simulator.waitForCommits(committed0 + transfers.length, 30_000);
  const ended = transfers.reduce((max, t) => Math.max(max, t.commitAt), 0);
  const after = pids === undefined ? undefined : snapshot(pids);
  const metrics1 = await ledgerMetrics(base);
  const wallS = ((completed ? ended : performance.now()) - started) / 1000;
  const done = transfers.filter((t) => t.commits > 0);
  return {
    label,
    transfers: transfers.length,
    committed: done.length,
    completed,
    wallS,
    produceS,
    transfersPerS: done.length / wallS,
    latency: {
      complete: summarise(done.map((t) => t.commitAt - t.producedAt)),
      forward: summarise(transfers.filter((t) => t.forwards > 0).map((t) => t.forwardAt - t.producedAt)),
      fulfilToCommit: summarise(done.map((t) => t.commitAt - t.forwardAt)),
    },
    errorNotifications: simulator.errorNotes.length - errors0,
    cpu: before === undefined || after === undefined ? undefined : cpuUse(before, after),
    ledger: ledgerBetween(metrics0, metrics1),
    prepareBytes: values.reduce((n, v) => n + v.value.length, 0) / values.length,
    fulfilBytes: transfers.reduce((n, t) => n + t.fulfilValue.length, 0) / transfers.length,
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP: complete FSPIOP transfers with autocannon, with a latency per transfer

interface HttpPhase {
  label: string;
  connections: number;
  durationS: number;
  requests: number;
  transfers: number;
  transfersPerS: number;
  errors: number;
  non2xx: number;
  unexpected: number;
  latency: { complete: LatencySummary; prepare: LatencySummary; fulfil: LatencySummary };
  errorSamples: string[];
  cpu: CpuUse | undefined;
  ledger: LedgerBatches | undefined;
}

async function runHttpPhase(label: string, base: string, workload: Workload, connections: number, durationS: number, pids: Pids | undefined): Promise<HttpPhase> {
  const metrics0 = await ledgerMetrics(base);
  const before = pids === undefined ? undefined : snapshot(pids);
  const result = await drive({ url: base, scenario: 'fspiop', target: 'service', connections, durationS, workload, track: true });
  const { scenario: _scenario, target: _target, timeouts: _timeouts, statusCodes: _codes, latency, ...counts } = result;
  const load = { ...counts, latency: { complete: latency.complete, prepare: latency.prepare, fulfil: latency.fulfil } };
  const after = pids === undefined ? undefined : snapshot(pids);
  const metrics1 = await ledgerMetrics(base);
  return { label, ...load, transfersPerS: load.transfers / load.durationS, cpu: before === undefined || after === undefined ? undefined : cpuUse(before, after), ledger: ledgerBetween(metrics0, metrics1) };
}

// ---------------------------------------------------------------------------------------------
// The run

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const log = (message: string): void => {
    process.stdout.write(`[${((Date.now() - startedAt.getTime()) / 1000).toFixed(1).padStart(6)} s] ${message}\n`);
  };
  const why = kafkaAvailable();
  if (why !== undefined) throw new Error(`no Kafka broker can be started here: ${why}`);
  const warnings = buildIfStale(REPO_DIR, { build: options.build, force: options.forceBuild }, log);
  for (const w of warnings) log(`WARNING: ${w}`);
  const git = gitDescription(REPO_DIR);

  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-kafka-'));
  let cluster: RunningCluster | undefined;
  let broker: RunningKafka | undefined;
  let service: Started | undefined;
  const clients: { disconnect(): Promise<void> }[] = [];
  let workload: Workload | undefined;
  const checks: Check[] = [];
  const kafkaPhases: KafkaPhase[] = [];
  const httpPhases: HttpPhase[] = [];
  const reconciliations: Record<string, unknown>[] = [];
  let brokerPidFound: number | undefined;
  let sizes: { prepare: number; fulfil: number } | undefined;
  let serviceWarnings: string[] = [];
  let healthAfterKafka: string | undefined;
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    log('interrupted: stopping after this step');
  });
  const check = (name: string, pass: boolean, detail: string): void => {
    checks.push({ name, pass, detail });
    log(`${pass ? 'PASS' : 'FAIL'} ${name}: ${detail.split('\n')[0]}`);
  };

  try {
    log('starting a three-replica TigerBeetle cluster and a Kafka broker');
    [cluster, broker] = await Promise.all([startCluster({ replicas: 3 }), startKafka()]);
    const tbPids = findPids('tigerbeetle', 'start', `--addresses=${cluster.addresses.join(',')}`);
    brokerPidFound = brokerPid(broker.brokers[0]!);
    log(`cluster on ${cluster.addresses.join(',')} (pids ${tbPids.join(',')}); broker ${broker.brokers[0]} (pid ${brokerPidFound ?? 'not found'})`);

    const run = randomBytes(3).toString('hex');
    const topics: Topics = { prepare: `bench-${run}-prepare`, fulfil: `bench-${run}-fulfil`, get: `bench-${run}-get`, notification: `bench-${run}-notification` };
    const kafka = new Kafka({ clientId: `bench-${run}`, brokers: broker.brokers, logLevel: logLevel.ERROR });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: Object.values(topics).map((topic) => ({ topic, numPartitions: options.partitions, replicationFactor: 1 })) });
    await admin.disconnect();
    log(`topics ${Object.values(topics).join(', ')}: ${options.partitions} partition(s) each`);

    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...serviceEnv(port, cluster, path.join(workDir, 'data')),
      KAFKA_ENABLED: 'true',
      KAFKA_BROKERS: broker.brokers.join(','),
      KAFKA_CLIENT_ID: `ledger-${run}`,
      KAFKA_GROUP_ID: `ledger-${run}`,
      KAFKA_TOPIC_PREPARE: topics.prepare,
      KAFKA_TOPIC_FULFIL: topics.fulfil,
      KAFKA_TOPIC_GET: topics.get,
      KAFKA_TOPIC_NOTIFICATION: topics.notification,
      KAFKAJS_NO_PARTITIONER_WARNING: '1',
    };
    log(`starting the service: node dist/src/main.js (port ${port}, KAFKA_GROUP_ID ledger-${run})`);
    service = await startProcess('the service', [path.join(REPO_DIR, 'dist/src/main.js')], env, port, path.join(workDir, 'service.log'), '/health');
    const pids: Pids = { service: service.pid, broker: brokerPidFound, tigerbeetle: tbPids };

    const names = await onboard(service.base, `bench${run}`, options.participants);
    const positions0 = await positions(service.base, names);
    log(`onboarded ${names.length} participants (${names[0]}…${names[names.length - 1]}) in ${CURRENCY}`);

    workload = new Workload(names, { conditionPool: 16_384, amountPool: 64 });

    // ---- Kafka
    const prepareProducer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const payeeProducer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const consumer = kafka.consumer({ groupId: `payees-${run}` });
    clients.push(consumer, prepareProducer, payeeProducer);
    await Promise.all([prepareProducer.connect(), payeeProducer.connect()]);
    const simulator = new PayeeSimulator(consumer, payeeProducer, topics, options.batchBytes);
    await simulator.start(options.partitions);
    log('payee simulator joined its group');

    const warmupTransfers = buildKafkaTransfers(workload, names, options.warmup);
    log(`Kafka warm-up: ${options.warmup} transfers (in the books, not in the table)`);
    const warmup = await runKafkaPhase('kafka warm-up', simulator, prepareProducer, topics, warmupTransfers, options, undefined, service.base);
    log(`Kafka warm-up: ${warmup.committed}/${warmup.transfers} committed in ${warmup.wallS.toFixed(1)} s`);
    if (!warmup.completed) throw new Error(`Kafka warm-up stalled: ${warmup.committed}/${warmup.transfers} committed; errors ${JSON.stringify(simulator.errorNotes.slice(0, 3))}\n${tail(service.logFile)}`);
    if (interrupted) throw new Error('interrupted');

    log(`building ${options.transfers} prepare and fulfil messages`);
    const measured = buildKafkaTransfers(workload, names, options.transfers);
    sizes = { prepare: measured.reduce((n, t) => n + t.prepareValue.length, 0) / measured.length, fulfil: measured.reduce((n, t) => n + t.fulfilValue.length, 0) / measured.length };
    log(`Kafka: ${options.transfers} transfers (${sizes.prepare.toFixed(0)} B per prepare, ${sizes.fulfil.toFixed(0)} B per fulfil), ${options.rate > 0 ? `${options.rate}/s` : 'all at once'}, producer requests ≤ ${(options.batchBytes / 1024).toFixed(0)} KiB`);
    const kafkaPhase = await runKafkaPhase(`kafka p=${options.partitions}`, simulator, prepareProducer, topics, measured, options, pids, service.base);
    kafkaPhases.push(kafkaPhase);
    log(
      `Kafka: ${kafkaPhase.committed}/${kafkaPhase.transfers} committed in ${kafkaPhase.wallS.toFixed(2)} s = ${kafkaPhase.transfersPerS.toFixed(0)} transfers/s ` +
        `(produced in ${kafkaPhase.produceS.toFixed(2)} s); p50 ${kafkaPhase.latency.complete.p50.toFixed(0)} ms, p99 ${kafkaPhase.latency.complete.p99.toFixed(0)} ms; service ${kafkaPhase.cpu?.service.toFixed(2)} cores, broker ${kafkaPhase.cpu?.broker?.toFixed(2)}, replicas ${kafkaPhase.cpu?.tigerbeetle.toFixed(2)}, load generator ${kafkaPhase.cpu?.loadGenerator.toFixed(2)}`,
    );
    const health = await call(service.base, 'GET', '/health');
    healthAfterKafka = `${health.status} ${health.text.slice(0, 300)}`;
    log(`GET /health after the Kafka phase: ${healthAfterKafka}`);
    if (!kafkaPhase.completed) log(`Kafka phase stalled (nothing committed for 30 s); service log tail:\n${tail(service.logFile, 15)}`);
    // Late duplicates (a redelivered batch) would show within a moment.
    await sleep(1500);

    const kafkaAll = [...warmupTransfers, ...measured];
    const badForward = kafkaAll.filter((t) => t.forwards !== 1);
    const noCommit = kafkaAll.filter((t) => t.commits < 1);
    const multiCommit = kafkaAll.filter((t) => t.commits > 1);
    check(
      'Kafka: every transfer exactly one successful prepare forward',
      badForward.length === 0,
      `${kafkaAll.length} transfers (${warmupTransfers.length} warm-up), ${badForward.length} with ≠ 1 forward${badForward.length > 0 ? ` (e.g. ${badForward[0]!.transfer.transferId}: ${badForward[0]!.forwards})` : ''}`,
    );
    check('Kafka: every transfer ≥ 1 commit notification', noCommit.length === 0, `${kafkaAll.length - noCommit.length} with a commit, ${noCommit.length} without, ${multiCommit.length} with more than one`);
    check(
      'Kafka: no error notification, nothing unexpected',
      simulator.errorNotes.length === 0 && simulator.unexpected.length === 0,
      `${simulator.errorNotes.length} errors${simulator.errorNotes.length > 0 ? ` e.g. ${JSON.stringify(simulator.errorNotes.slice(0, 3))}` : ''}; ${simulator.unexpected.length} unexpected${simulator.unexpected.length > 0 ? ` e.g. ${simulator.unexpected.slice(0, 3).join('; ')}` : ''}; ${simulator.notifications} notifications read`,
    );
    const kafkaBooks = new Books(options.sampleGets);
    for (const t of kafkaAll) if (t.commits > 0) kafkaBooks.add(t.sent);
    for (const c of await transferChecks(service.base, names, positions0, kafkaBooks, 'Kafka: ')) check(c.name, c.pass, c.detail);
    const positions1 = await positions(service.base, names);

    await Promise.all(clients.splice(0).map((c) => c.disconnect().catch(() => undefined)));
    if (interrupted) throw new Error('interrupted');

    // ---- HTTP against the same service and cluster
    log(`HTTP warm-up: 16 connections for 2 s (in the books, not in the table)`);
    const w = workload;
    await runHttpPhase('http warm-up', service.base, w, 16, 2, undefined);
    log(`HTTP: complete FSPIOP transfers at ${options.connections} connections for ${options.httpSeconds} s`);
    const httpPhase = await runHttpPhase(`http c=${options.connections}`, service.base, w, options.connections, options.httpSeconds, pids);
    httpPhases.push(httpPhase);
    log(
      `HTTP: ${httpPhase.transfersPerS.toFixed(0)} transfers/s, per transfer p50 ${httpPhase.latency.complete.p50.toFixed(1)} ms p99 ${httpPhase.latency.complete.p99.toFixed(1)} ms; errors ${httpPhase.errors}, non-2xx ${httpPhase.non2xx}, unexpected ${httpPhase.unexpected}` +
        (httpPhase.errorSamples.length > 0 ? `\n    e.g. ${httpPhase.errorSamples.join('\n    e.g. ')}` : ''),
    );

    // Transfers in flight when autocannon closed its connections: finish those still RESERVED.
    await sleep(500);
    const { counts, failures } = await reconcile(service.base, w, [...w.sent.values()].filter((t) => t.state !== 'committed'));
    reconciliations.push({ label: 'http', ...counts, failures: failures.slice(0, 10) });
    if (counts.open > 0) log(`reconciled the HTTP transfers whose end was not seen: ${JSON.stringify(counts)}`);

    const sent = [...w.sent.values()];
    const httpCommitted = sent.filter((t) => t.state === 'committed');
    check(
      'HTTP: every transfer that reached the service is COMMITTED, no errors or non-2xx',
      counts.failed === 0 && counts.neverArrived <= 16 + options.connections && httpPhase.errors + httpPhase.non2xx + httpPhase.unexpected === 0,
      `${sent.length} sent (warm-up included), ${httpCommitted.length} committed, ${counts.neverArrived} never reached the service (≤ 1 per connection may), ${counts.failed} failed; ${httpPhase.errors}/${httpPhase.non2xx}/${httpPhase.unexpected} errors/non-2xx/unexpected`,
    );
    const httpBooks = new Books(options.sampleGets);
    for (const t of httpCommitted) httpBooks.add(t);
    for (const c of await transferChecks(service.base, names, positions1, httpBooks, 'HTTP: ')) check(c.name, c.pass, c.detail);

    for (const c of await ledgerChecks(names, cluster)) check(c.name, c.pass, c.detail);
    const serviceLog = fs.readFileSync(service.logFile, 'utf8').split('\n');
    // pino's errors, and kafkajs's consumer crashes (its own JSON lines, "level":"ERROR"; its other ERROR lines are retried).
    const serviceErrors = serviceLog.filter((l) => /"level":(50|60)/.test(l) || /"level":"ERROR".*\[Consumer\] Crash/.test(l));
    serviceWarnings = serviceLog.filter((l) => /"level":(40|"WARN"|"ERROR")/.test(l));
    check('service log: no error lines, no consumer crash', serviceErrors.length === 0, serviceErrors.length === 0 ? `none (${serviceWarnings.length} warnings)` : `${serviceErrors.length}, first ${serviceErrors[0]!.slice(0, 300)}`);
  } catch (error) {
    if (service !== undefined) process.stderr.write(`service log tail:\n${tail(service.logFile)}\n`);
    throw error;
  } finally {
    workload?.stop();
    await Promise.all(clients.map((c) => c.disconnect().catch(() => undefined)));
    if (service !== undefined) {
      log('stopping the service');
      await stopProcess(service);
    }
    if (broker !== undefined) {
      log('stopping the broker');
      await broker.stop();
    }
    if (cluster !== undefined) {
      log('stopping the cluster');
      await cluster.stop();
    }
    fs.rmSync(workDir, { recursive: true, force: true });
  }

  // ---- report
  const k = kafkaPhases[0];
  const h = httpPhases[0];
  const f = (n: number | undefined, digits = 0): string => (n === undefined || !Number.isFinite(n) ? 'n/a' : n.toFixed(digits));
  const ratio = (a: number | undefined, b: number | undefined): string => (a === undefined || b === undefined || !Number.isFinite(a / b) ? 'n/a' : `${(a / b).toFixed(2)}×`);
  const breakdown = (cpu: CpuUse): string =>
    Object.entries(cpu.machineBreakdown)
      .filter(([name, cores]) => name !== 'idle' && cores >= 0.005)
      .map(([name, cores]) => `${name} ${cores.toFixed(2)}`)
      .join(', ');
  const rows: string[][] = [];
  if (k !== undefined && h !== undefined) {
    const row = (metric: string, unit: string, kv: number | undefined, hv: number | undefined, digits: number, withRatio = true): void => {
      rows.push([metric, unit, f(kv, digits), f(hv, digits), withRatio ? ratio(kv, hv) : '']);
    };
    rows.push(['load', '', `${k.transfers} prepares produced ${options.rate > 0 ? `at ${options.rate}/s` : 'at once'}, ${options.partitions} partition(s)`, `${h.connections} connections, ${h.durationS} s`, '']);
    row('complete transfers', '', k.committed, h.transfers, 0, false);
    row('wall time', 's', k.wallS, h.durationS, 2, false);
    row('throughput', 'transfers/s', k.transfersPerS, h.transfersPerS, 0);
    row('latency per transfer p50', 'ms', k.latency.complete.p50, h.latency.complete.p50, 1);
    row('latency per transfer p99', 'ms', k.latency.complete.p99, h.latency.complete.p99, 1);
    row('latency per transfer max', 'ms', k.latency.complete.max, h.latency.complete.max, 1);
    rows.push(['errors', '', `${k.errorNotifications} error notifications`, `${h.errors} errors, ${h.non2xx + h.unexpected} non-2xx/unexpected`, '']);
    row('service CPU', 'cores', k.cpu?.service, h.cpu?.service, 2);
    row('  of which main thread', 'cores', k.cpu?.serviceMain, h.cpu?.serviceMain, 2);
    row('service CPU per transfer', 'ms', k.cpu === undefined ? undefined : (k.cpu.service * k.cpu.wallS * 1000) / k.committed, h.cpu === undefined ? undefined : (h.cpu.service * h.cpu.wallS * 1000) / h.transfers, 3);
    row('ledger commands per TB request', 'mean', k.ledger?.meanCommands, h.ledger?.meanCommands, 1);
    row('ledger requests', 'per s', k.ledger === undefined ? undefined : k.ledger.batches / k.wallS, h.ledger === undefined ? undefined : h.ledger.batches / h.durationS, 0);
    row('ledger request round trip', 'mean ms', k.ledger?.meanMs, h.ledger?.meanMs, 1);
    row('Kafka broker CPU', 'cores', k.cpu?.broker, h.cpu?.broker, 2, false);
    row('TB replicas CPU', 'cores', k.cpu?.tigerbeetle, h.cpu?.tigerbeetle, 2);
    row('load generator CPU', 'cores', k.cpu?.loadGenerator, h.cpu?.loadGenerator, 2);
    row('whole machine busy', 'cores', k.cpu?.machine, h.cpu?.machine, 2, false);
    row('other processes', 'cores', k.cpu?.others, h.cpu?.others, 2, false);
    row('stolen by hypervisor', 'cores', k.cpu?.steal, h.cpu?.steal, 2, false);
    row('service peak RSS', 'MiB', k.cpu?.serviceRssPeakMiB, h.cpu?.serviceRssPeakMiB, 0, false);
  }
  const text = paragraphs(
    `Kafka vs HTTP ${startedAt.toISOString()} — service ${gitLabel(git)}, node dist/src/main.js, TigerBeetle 3 replicas, ${os.cpus().length} cores`,
    table(['metric', 'unit', 'Kafka', 'HTTP (FSPIOP POST+PUT)', 'Kafka/HTTP'], rows),
    [
      k !== undefined &&
        `Kafka detail: produced in ${k.produceS.toFixed(2)} s; prepare produced → forward seen p50 ${k.latency.forward.p50.toFixed(1)} / p99 ${k.latency.forward.p99.toFixed(1)} ms; forward seen → commit seen p50 ${k.latency.fulfilToCommit.p50.toFixed(1)} / p99 ${k.latency.fulfilToCommit.p99.toFixed(1)} ms; ${sizes?.prepare.toFixed(0)} B per prepare message, ${sizes?.fulfil.toFixed(0)} B per fulfil`,
      h !== undefined && `HTTP detail: per request prepare p50 ${h.latency.prepare.p50.toFixed(1)} / p99 ${h.latency.prepare.p99.toFixed(1)} ms, fulfil p50 ${h.latency.fulfil.p50.toFixed(1)} / p99 ${h.latency.fulfil.p99.toFixed(1)} ms`,
      k?.cpu !== undefined && `Other processes during Kafka: ${k.cpu.heaviestOthers.join(', ') || '-'}; machine by /proc/stat column (cores): ${breakdown(k.cpu)}; ${k.cpu.forks} processes started on the machine meanwhile`,
      h?.cpu !== undefined && `Other processes during HTTP: ${h.cpu.heaviestOthers.join(', ') || '-'}; machine by /proc/stat column (cores): ${breakdown(h.cpu)}; ${h.cpu.forks} processes started on the machine meanwhile`,
      k !== undefined && options.rate === 0 && 'Kafka latency: all prepares are produced at once, so its percentiles are mostly the queue of the burst; --rate R gives a service time.',
    ],
    serviceWarnings.length > 0 && `Service log: ${serviceWarnings.length} warning or kafkajs ERROR line(s):\n  ${serviceWarnings.slice(0, 5).map((l) => l.slice(0, 300)).join('\n  ')}`,
    checkLines(checks, warnings),
  );
  process.stdout.write(`\n${text}\n`);
  const file = writeResult(`kafka-${stamp}`, {
    startedAt, options, git, warnings,
    machine: machineDescription(),
    brokerPid: brokerPidFound, messageBytes: sizes, serviceWarnings: serviceWarnings.slice(0, 20), serviceWarningCount: serviceWarnings.length, healthAfterKafka, kafka: kafkaPhases, http: httpPhases, reconciliations, checks, text,
  });
  process.stdout.write(`\nwrote ${path.relative(REPO_DIR, file)}\n`);
  failOnChecks(checks, kafkaPhases.length > 0 && httpPhases.length > 0);
}

runMain(main);
