/**
 * Kafka drop-in throughput, with the HTTP figure beside it, in one run on one cluster and one
 * service process:
 *
 *   1. a throwaway three-replica TigerBeetle cluster (--one-replica: one, where memory is short)
 *      and a throwaway Kafka broker (KRaft, jars from kafka/pom.xml), fresh topics with
 *      --partitions partitions each;
 *   2. the built service (node dist/src/main.js) with KAFKA_ENABLED=true on those topics, a fresh
 *      consumer group, LEDGER_BACKEND=tigerbeetle, JMETER_ENABLED=true, LOG_LEVEL=warn;
 *   3. 8 participants onboarded through POST /jmeter/participants/create;
 *   4. Kafka: N prepare messages (built exactly like ml-api-adapter's, test/support/
 *      mojaloop-messages.ts, with the HTTP benchmark's bodies: real ILP packets, real
 *      conditions) produced in requests under 1 MB — by default F at a time, the next as each
 *      commit is seen (bench/kafka-load.ts); a payee simulator consumes the notification topic
 *      and answers each successful prepare forward with the payee's fulfil (commit); the clock
 *      runs from the first prepare produced until the N-th commit notification is seen;
 *   5. books of the Kafka phase: one forward and ≥ 1 commit per transfer, no error notification,
 *      a sample answering GET /transfers/{id} COMMITTED, positions moved by exactly the bigint
 * sums;
 *   6. HTTP: complete transfers (POST /transfers, then the payee's PUT /transfers/{id}) with
 *      autocannon at C (64) connections for 10 s, against the same service; its books;
 *   7. nothing left reserved, debits = credits on the USD ledgers; everything stopped.
 *
 *   npx tsx bench/kafka.ts [--transfers N] [--partitions P] [--http-seconds S] [--connections C]
 *                          [--in-flight F | --rate R | --burst] [--warmup N] [--batch-kib K]
 *                          [--service-dir DIR] [--one-replica] [--build | --no-build] [--profile]
 *
 * By default the Kafka phase is a closed loop with as many transfers in flight as HTTP has
 * connections (--in-flight F to choose another number): the two paths compared at the same
 * concurrency. --rate R produces the prepares at R per second (open loop), --burst all at once.
 * --service-dir DIR runs the service built in another checkout (a baseline: `main`), driven by
 * this checkout's benchmark. --profile runs the service under --cpu-prof and summarises the Kafka
 * and the HTTP phase apart (bench/profiles/).
 * Writes bench/results/kafka-<timestamp>.json. Exits 1 if any check fails.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Partitioners, type RequestEvent } from 'kafkajs';
import { kafkaAvailable, startKafka, type RunningKafka } from '../test/support/kafka-broker';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import {
  buildIfStale,
  checkLines,
  failOnChecks,
  flags,
  gitDescription,
  gitLabel,
  ledgerChecks,
  machineDescription,
  paragraphs,
  runMain,
  transferChecks,
  writeResult,
  type Check,
  table,
  progressLog,
  fixed,
} from './common';
import {
  PayeeSimulator,
  benchKafka,
  buildKafkaTransfers,
  kafkaEnv,
  runKafkaPhase,
  type KafkaPhase,
  type Offer,
  type Topics,
} from './kafka-load';
import { brokerPid, runHttpPhase, type CpuUse, type HttpPhase, type Pids } from './phases';
import { findPids } from './procstat';
import { formatSummary, summariseProfile, type ProfileSummary } from './profile-summary';
import { Books, onboard, positions, reconcile, CURRENCY, Workload } from '../test/support/workload';
import {
  REPO_DIR,
  call,
  serviceEnv,
  sleep,
  startProcess,
  stopProcess,
  tail,
  type Started,
} from '../test/support/service-process';
import { freePort } from '../test/support/net';

interface Options extends Offer {
  /** The checkout whose dist/src/main.js is measured. */
  serviceDir: string;
  transfers: number;
  partitions: number;
  httpSeconds: number;
  connections: number;
  warmup: number;
  build: boolean;
  forceBuild: boolean;
  /** TigerBeetle replicas: 3, or 1 where memory is short (a replica holds ~2.4 GB). */
  replicas: 1 | 3;
  participants: number;
  /** Committed transfers of each phase asked for with GET /transfers/{id}. */
  sampleGets: number;
  /** The service under --cpu-prof; the Kafka and HTTP phases summarised apart. */
  profile: boolean;
}

function parseOptions(argv: string[]): Options {
  const { has, number, value } = flags(argv);
  const connections = number('--connections', 64);
  const rate = number('--rate', 0);
  return {
    serviceDir: path.resolve(value('--service-dir') ?? REPO_DIR),
    transfers: number('--transfers', 20_000),
    partitions: number('--partitions', 4),
    httpSeconds: number('--http-seconds', 10),
    connections,
    warmup: number('--warmup', 500),
    rate,
    inFlight: rate > 0 || has('--burst') ? 0 : number('--in-flight', connections),
    // The broker takes 1 MB per record batch.
    batchBytes: number('--batch-kib', 900) * 1024,
    build: !has('--no-build'),
    forceBuild: has('--build'),
    replicas: has('--one-replica') ? 1 : 3,
    participants: 8,
    sampleGets: 1000,
    profile: has('--profile'),
  };
}

/** How the Kafka phase offered its prepares, in words. */
function offered(options: Offer): string {
  if (options.inFlight > 0) return `${options.inFlight} in flight`;
  return options.rate > 0 ? `at ${options.rate}/s` : 'all at once';
}

// ---------------------------------------------------------------------------------------------
// The run

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const log = progressLog(startedAt.getTime());
  const why = kafkaAvailable();
  if (why !== undefined) throw new Error(`no Kafka broker can be started here: ${why}`);
  const build = { build: options.build, force: options.forceBuild };
  const warnings = buildIfStale(options.serviceDir, build, log);
  const git = gitDescription(options.serviceDir);

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
  let loadRequests: Record<string, number> | undefined;
  let loadRequestsPerTransfer: Record<string, number> | undefined;
  const profileDir = path.join(REPO_DIR, 'bench', 'profiles');
  /** Wall clock (Date.now()) of each measured phase, for the profile's windows. */
  const profileWindows: { kafka?: [number, number]; http?: [number, number] } = {};
  const profileSummaries: {
    phase: 'kafka' | 'http';
    transfers: number;
    summary: ProfileSummary;
  }[] = [];
  process.once('SIGINT', () => {
    interrupted = true;
    log('interrupted: stopping after this step');
  });
  const check = (name: string, pass: boolean, detail: string): void => {
    checks.push({ name, pass, detail });
    log(`${pass ? 'PASS' : 'FAIL'} ${name}: ${detail.split('\n')[0]}`);
  };

  try {
    log(`starting a ${options.replicas}-replica TigerBeetle cluster and a Kafka broker`);
    [cluster, broker] = await Promise.all([
      startCluster({ replicas: options.replicas }),
      startKafka(),
    ]);
    const tbPids = findPids('tigerbeetle', 'start', `--addresses=${cluster.addresses.join(',')}`);
    brokerPidFound = brokerPid(broker.brokers[0]!);
    log(
      `cluster on ${cluster.addresses.join(',')} (pids ${tbPids.join(',')}); broker ${broker.brokers[0]} (pid ${brokerPidFound ?? 'not found'})`,
    );

    const run = randomBytes(3).toString('hex');
    const topics: Topics = {
      prepare: `bench-${run}-prepare`,
      fulfil: `bench-${run}-fulfil`,
      get: `bench-${run}-get`,
      notification: `bench-${run}-notification`,
    };
    const kafka = await benchKafka(broker.brokers, run, Object.values(topics), options.partitions);
    log(`topics ${Object.values(topics).join(', ')}: ${options.partitions} partition(s) each`);

    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...serviceEnv(port, cluster, path.join(workDir, 'data')),
      ...kafkaEnv(broker.brokers, run, topics),
    };
    log(`starting the service: node dist/src/main.js (port ${port}, KAFKA_GROUP_ID ledger-${run})`);
    const nodeArgs = options.profile
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${profileDir}`,
          `--cpu-prof-name=kafka-service-${stamp}.cpuprofile`,
        ]
      : [];
    if (options.profile) fs.mkdirSync(profileDir, { recursive: true });
    service = await startProcess(
      'the service',
      [...nodeArgs, path.join(options.serviceDir, 'dist/src/main.js')],
      env,
      port,
      path.join(workDir, 'service.log'),
      '/health',
    );
    const pids: Pids = { service: service.pid, broker: brokerPidFound, tigerbeetle: tbPids };

    const names = await onboard(service.base, `bench${run}`, options.participants);
    const positions0 = await positions(service.base, names);
    log(
      `onboarded ${names.length} participants (${names[0]}…${names[names.length - 1]}) in ${CURRENCY}`,
    );

    workload = new Workload(names, { conditionPool: 16_384, amountPool: 64 });

    // ---- Kafka
    const prepareProducer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const payeeProducer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    const consumer = kafka.consumer({ groupId: `payees-${run}` });
    clients.push(consumer, prepareProducer, payeeProducer);
    // The load generator's broker requests by kind (the broker serves these besides the service's).
    const countRequest = ({ payload }: RequestEvent): void => {
      if (loadRequests !== undefined)
        loadRequests[payload.apiName] = (loadRequests[payload.apiName] ?? 0) + 1;
    };
    consumer.on(consumer.events.REQUEST, countRequest);
    for (const producer of [prepareProducer, payeeProducer])
      producer.on(producer.events.REQUEST, countRequest);
    await Promise.all([prepareProducer.connect(), payeeProducer.connect()]);
    const simulator = new PayeeSimulator(consumer, payeeProducer, topics, options.batchBytes);
    await simulator.start(options.partitions);
    log('payee simulator joined its group');

    const warmupTransfers = buildKafkaTransfers(workload, names, options.warmup);
    log(`Kafka warm-up: ${options.warmup} transfers (in the books, not in the table)`);
    const warmup = await runKafkaPhase(
      'kafka warm-up',
      simulator,
      prepareProducer,
      topics,
      warmupTransfers,
      options,
      undefined,
      service.base,
    );
    log(
      `Kafka warm-up: ${warmup.committed}/${warmup.transfers} committed in ${warmup.wallS.toFixed(1)} s`,
    );
    if (!warmup.completed)
      throw new Error(
        `Kafka warm-up stalled: ${warmup.committed}/${warmup.transfers} committed; errors ${JSON.stringify(simulator.errorNotes.slice(0, 3))}\n${tail(service.logFile)}`,
      );
    if (interrupted) throw new Error('interrupted');

    log(`building ${options.transfers} prepare and fulfil messages`);
    const measured = buildKafkaTransfers(workload, names, options.transfers);
    sizes = {
      prepare: measured.reduce((n, t) => n + t.prepareValue.length, 0) / measured.length,
      fulfil: measured.reduce((n, t) => n + t.fulfilValue.length, 0) / measured.length,
    };
    log(
      `Kafka: ${options.transfers} transfers (${sizes.prepare.toFixed(0)} B per prepare, ${sizes.fulfil.toFixed(0)} B per fulfil), ${offered(options)}, producer requests ≤ ${(options.batchBytes / 1024).toFixed(0)} KiB`,
    );
    const kafkaStart = Date.now();
    loadRequests = {};
    const kafkaPhase = await runKafkaPhase(
      `kafka p=${options.partitions}`,
      simulator,
      prepareProducer,
      topics,
      measured,
      options,
      pids,
      service.base,
    );
    profileWindows.kafka = [kafkaStart, Date.now()];
    loadRequestsPerTransfer = Object.fromEntries(
      Object.entries(loadRequests).map(([api, n]) => [api, n / kafkaPhase.committed]),
    );
    loadRequests = undefined;
    kafkaPhases.push(kafkaPhase);
    log(
      `Kafka: ${kafkaPhase.committed}/${kafkaPhase.transfers} committed in ${kafkaPhase.wallS.toFixed(2)} s = ${kafkaPhase.transfersPerS.toFixed(0)} transfers/s ` +
        `(produced in ${kafkaPhase.produceS.toFixed(2)} s); p50 ${kafkaPhase.latency.complete.p50.toFixed(0)} ms, p99 ${kafkaPhase.latency.complete.p99.toFixed(0)} ms; service ${kafkaPhase.cpu?.service.toFixed(2)} cores, broker ${kafkaPhase.cpu?.broker?.toFixed(2)}, replicas ${kafkaPhase.cpu?.tigerbeetle.toFixed(2)}, load generator ${kafkaPhase.cpu?.loadGenerator.toFixed(2)}`,
    );
    const health = await call(service.base, 'GET', '/health');
    healthAfterKafka = `${health.status} ${health.text.slice(0, 300)}`;
    log(`GET /health after the Kafka phase: ${healthAfterKafka}`);
    if (!kafkaPhase.completed)
      log(
        `Kafka phase stalled (nothing committed for 30 s); service log tail:\n${tail(service.logFile, 15)}`,
      );
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
    check(
      'Kafka: every transfer ≥ 1 commit notification',
      noCommit.length === 0,
      `${kafkaAll.length - noCommit.length} with a commit, ${noCommit.length} without, ${multiCommit.length} with more than one`,
    );
    check(
      'Kafka: no error notification, nothing unexpected',
      simulator.errorNotes.length === 0 && simulator.unexpected.length === 0,
      `${simulator.errorNotes.length} errors${simulator.errorNotes.length > 0 ? ` e.g. ${JSON.stringify(simulator.errorNotes.slice(0, 3))}` : ''}; ${simulator.unexpected.length} unexpected${simulator.unexpected.length > 0 ? ` e.g. ${simulator.unexpected.slice(0, 3).join('; ')}` : ''}; ${simulator.notifications} notifications read (${simulator.fulfilDuplicates} fulfil-duplicate answers to fulfils the payees' producer wrote twice)`,
    );
    const kafkaBooks = new Books(options.sampleGets);
    for (const t of kafkaAll) if (t.commits > 0) kafkaBooks.add(t.sent);
    for (const c of await transferChecks(service.base, names, positions0, kafkaBooks, 'Kafka: '))
      check(c.name, c.pass, c.detail);
    const positions1 = await positions(service.base, names);

    await Promise.all(clients.splice(0).map((c) => c.disconnect().catch(() => undefined)));
    if (interrupted) throw new Error('interrupted');

    // ---- HTTP against the same service and cluster
    log(`HTTP warm-up: 16 connections for 2 s (in the books, not in the table)`);
    const w = workload;
    await runHttpPhase('http warm-up', service.base, w, 16, 2, undefined);
    log(
      `HTTP: complete FSPIOP transfers at ${options.connections} connections for ${options.httpSeconds} s`,
    );
    const httpStart = Date.now();
    const httpPhase = await runHttpPhase(
      `http c=${options.connections}`,
      service.base,
      w,
      options.connections,
      options.httpSeconds,
      pids,
    );
    profileWindows.http = [httpStart, Date.now()];
    httpPhases.push(httpPhase);
    log(
      `HTTP: ${httpPhase.transfersPerS.toFixed(0)} transfers/s, per transfer p50 ${httpPhase.latency.complete.p50.toFixed(1)} ms p99 ${httpPhase.latency.complete.p99.toFixed(1)} ms; errors ${httpPhase.errors}, non-2xx ${httpPhase.non2xx}, unexpected ${httpPhase.unexpected}` +
        (httpPhase.errorSamples.length > 0
          ? `\n    e.g. ${httpPhase.errorSamples.join('\n    e.g. ')}`
          : ''),
    );

    // Transfers in flight when autocannon closed its connections: finish those still RESERVED.
    await sleep(500);
    const { counts, failures } = await reconcile(
      service.base,
      w,
      [...w.sent.values()].filter((t) => t.state !== 'committed'),
    );
    reconciliations.push({ label: 'http', ...counts, failures: failures.slice(0, 10) });
    if (counts.open > 0)
      log(`reconciled the HTTP transfers whose end was not seen: ${JSON.stringify(counts)}`);

    const sent = [...w.sent.values()];
    const httpCommitted = sent.filter((t) => t.state === 'committed');
    check(
      'HTTP: every transfer that reached the service is COMMITTED, no errors or non-2xx',
      counts.failed === 0 &&
        counts.neverArrived <= 16 + options.connections &&
        httpPhase.errors + httpPhase.non2xx + httpPhase.unexpected === 0,
      `${sent.length} sent (warm-up included), ${httpCommitted.length} committed, ${counts.neverArrived} never reached the service (≤ 1 per connection may), ${counts.failed} failed; ${httpPhase.errors}/${httpPhase.non2xx}/${httpPhase.unexpected} errors/non-2xx/unexpected`,
    );
    const httpBooks = new Books(options.sampleGets);
    for (const t of httpCommitted) httpBooks.add(t);
    for (const c of await transferChecks(service.base, names, positions1, httpBooks, 'HTTP: '))
      check(c.name, c.pass, c.detail);

    for (const c of await ledgerChecks(names, cluster)) check(c.name, c.pass, c.detail);
    const serviceLog = fs.readFileSync(service.logFile, 'utf8').split('\n');
    // pino's errors, and kafkajs's consumer crashes (its own JSON lines, "level":"ERROR"; its other
    // ERROR lines are retried).
    const serviceErrors = serviceLog.filter(
      (l) => /"level":(50|60)/.test(l) || /"level":"ERROR".*\[Consumer\] Crash/.test(l),
    );
    serviceWarnings = serviceLog.filter((l) => /"level":(40|"WARN"|"ERROR")/.test(l));
    check(
      'service log: no error lines, no consumer crash',
      serviceErrors.length === 0,
      serviceErrors.length === 0
        ? `none (${serviceWarnings.length} warnings)`
        : `${serviceErrors.length}, first ${serviceErrors[0]!.slice(0, 300)}`,
    );
  } catch (error) {
    if (service !== undefined)
      process.stderr.write(`service log tail:\n${tail(service.logFile)}\n`);
    throw error;
  } finally {
    workload?.stop();
    await Promise.all(clients.map((c) => c.disconnect().catch(() => undefined)));
    if (service !== undefined) {
      log('stopping the service');
      await stopProcess(service);
      if (options.profile)
        summariseProfiles(
          path.join(profileDir, `kafka-service-${stamp}.cpuprofile`),
          Date.now(),
          profileWindows,
          kafkaPhases[0]?.committed,
          httpPhases[0]?.transfers,
          profileSummaries,
          log,
        );
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
  const ratio = (a: number | undefined, b: number | undefined): string =>
    a === undefined || b === undefined || !Number.isFinite(a / b)
      ? 'n/a'
      : `${(a / b).toFixed(2)}×`;
  const breakdown = (cpu: CpuUse): string =>
    Object.entries(cpu.machineBreakdown)
      .filter(([name, cores]) => name !== 'idle' && cores >= 0.005)
      .map(([name, cores]) => `${name} ${cores.toFixed(2)}`)
      .join(', ');
  const rows: string[][] = [];
  if (k !== undefined && h !== undefined) {
    const row = (
      metric: string,
      unit: string,
      kv: number | undefined,
      hv: number | undefined,
      digits: number,
      withRatio = true,
    ): void => {
      rows.push([
        metric,
        unit,
        fixed(kv, digits),
        fixed(hv, digits),
        withRatio ? ratio(kv, hv) : '',
      ]);
    };
    rows.push([
      'load',
      '',
      `${k.transfers} prepares, ${offered(options)}, ${options.partitions} partition(s)`,
      `${h.connections} connections, ${h.durationS} s`,
      '',
    ]);
    row('complete transfers', '', k.committed, h.transfers, 0, false);
    row('wall time', 's', k.wallS, h.durationS, 2, false);
    row('throughput', 'transfers/s', k.transfersPerS, h.transfersPerS, 0);
    row('latency per transfer p50', 'ms', k.latency.complete.p50, h.latency.complete.p50, 1);
    row('latency per transfer p99', 'ms', k.latency.complete.p99, h.latency.complete.p99, 1);
    row('latency per transfer max', 'ms', k.latency.complete.max, h.latency.complete.max, 1);
    rows.push([
      'errors',
      '',
      `${k.errorNotifications} error notifications`,
      `${h.errors} errors, ${h.non2xx + h.unexpected} non-2xx/unexpected`,
      '',
    ]);
    row('service CPU', 'cores', k.cpu?.service, h.cpu?.service, 2);
    row('  of which main thread', 'cores', k.cpu?.serviceMain, h.cpu?.serviceMain, 2);
    row(
      'service CPU per transfer',
      'ms',
      k.cpu === undefined ? undefined : (k.cpu.service * k.cpu.wallS * 1000) / k.committed,
      h.cpu === undefined ? undefined : (h.cpu.service * h.cpu.wallS * 1000) / h.transfers,
      3,
    );
    row('ledger commands per TB request', 'mean', k.ledger?.mean, h.ledger?.mean, 1);
    row(
      'ledger requests',
      'per s',
      k.ledger === undefined ? undefined : k.ledger.batches / k.wallS,
      h.ledger === undefined ? undefined : h.ledger.batches / h.durationS,
      0,
    );
    row(
      'ledger request round trip',
      'mean ms',
      k.ledger?.meanLatencyMs,
      h.ledger?.meanLatencyMs,
      1,
    );
    row('Kafka broker CPU', 'cores', k.cpu?.broker, h.cpu?.broker, 2, false);
    row('TB replicas CPU', 'cores', k.cpu?.tigerbeetle, h.cpu?.tigerbeetle, 2);
    row('load generator CPU', 'cores', k.cpu?.loadGenerator, h.cpu?.loadGenerator, 2);
    row('whole machine busy', 'cores', k.cpu?.machine, h.cpu?.machine, 2, false);
    row('other processes', 'cores', k.cpu?.others, h.cpu?.others, 2, false);
    row('stolen by hypervisor', 'cores', k.cpu?.steal, h.cpu?.steal, 2, false);
    row('service peak RSS', 'MiB', k.cpu?.serviceRssPeakMiB, h.cpu?.serviceRssPeakMiB, 0, false);
  }
  const text = paragraphs(
    `Kafka vs HTTP ${startedAt.toISOString()} — service ${gitLabel(git)}, node dist/src/main.js, TigerBeetle ${options.replicas} replica(s), ${os.cpus().length} cores`,
    table(['metric', 'unit', 'Kafka', 'HTTP (FSPIOP POST+PUT)', 'Kafka/HTTP'], rows),
    [
      k !== undefined &&
        `Kafka detail: produced in ${k.produceS.toFixed(2)} s; prepare produced → forward seen p50 ${k.latency.forward.p50.toFixed(1)} / p99 ${k.latency.forward.p99.toFixed(1)} ms; forward seen → commit seen p50 ${k.latency.fulfilToCommit.p50.toFixed(1)} / p99 ${k.latency.fulfilToCommit.p99.toFixed(1)} ms; ${sizes?.prepare.toFixed(0)} B per prepare message, ${sizes?.fulfil.toFixed(0)} B per fulfil; the load generator's broker requests per transfer: ${
          Object.entries(loadRequestsPerTransfer ?? {})
            .map(([api, n]) => `${api} ${n.toFixed(3)}`)
            .join(', ') || 'n/a'
        }`,
      h !== undefined &&
        `HTTP detail: per request prepare p50 ${h.latency.prepare.p50.toFixed(1)} / p99 ${h.latency.prepare.p99.toFixed(1)} ms, fulfil p50 ${h.latency.fulfil.p50.toFixed(1)} / p99 ${h.latency.fulfil.p99.toFixed(1)} ms`,
      k?.cpu !== undefined &&
        `Other processes during Kafka: ${k.cpu.heaviestOthers.join(', ') || '-'}; machine by /proc/stat column (cores): ${breakdown(k.cpu)}; ${k.cpu.forks} processes started on the machine meanwhile`,
      h?.cpu !== undefined &&
        `Other processes during HTTP: ${h.cpu.heaviestOthers.join(', ') || '-'}; machine by /proc/stat column (cores): ${breakdown(h.cpu)}; ${h.cpu.forks} processes started on the machine meanwhile`,
      k !== undefined &&
        options.rate === 0 &&
        options.inFlight === 0 &&
        'Kafka latency: all prepares are produced at once, so its percentiles are mostly the queue of the burst; --rate R gives a service time.',
    ],
    serviceWarnings.length > 0 &&
      `Service log: ${serviceWarnings.length} warning or kafkajs ERROR line(s):\n  ${serviceWarnings
        .slice(0, 5)
        .map((l) => l.slice(0, 300))
        .join('\n  ')}`,
    checkLines(checks, warnings),
    profileSummaries.length > 0 &&
      profileSummaries.map(
        ({ phase, transfers, summary }) =>
          `${phase} phase: main thread busy ${summary.busyMs.toFixed(0)} ms = ${(summary.busyMs / transfers).toFixed(3)} ms per transfer (${transfers}); top categories per transfer: ${summary.byCategory
            .filter((r) => r.name !== 'idle')
            .slice(0, 12)
            .map((r) => `${r.name} ${(r.ms / transfers).toFixed(3)}`)
            .join('; ')}`,
      ),
  );
  process.stdout.write(`\n${text}\n`);
  const file = writeResult(`kafka-${stamp}`, {
    startedAt,
    options,
    git,
    warnings,
    machine: machineDescription(),
    brokerPid: brokerPidFound,
    messageBytes: sizes,
    serviceWarnings: serviceWarnings.slice(0, 20),
    serviceWarningCount: serviceWarnings.length,
    healthAfterKafka,
    loadRequestsPerTransfer,
    kafka: kafkaPhases,
    http: httpPhases,
    reconciliations,
    checks,
    text,
  });
  process.stdout.write(`\nwrote ${path.relative(REPO_DIR, file)}\n`);
  failOnChecks(checks, kafkaPhases.length > 0 && httpPhases.length > 0);
}

/**
 * The service's profile cut into the Kafka and the HTTP phase (start-up, warm-ups and checks left
 * out), each summarised beside the profile; both phases' busy time per transfer goes into the
 * report.
 */
function summariseProfiles(
  file: string,
  exitAt: number,
  windows: { kafka?: [number, number]; http?: [number, number] },
  kafkaTransfers: number | undefined,
  httpTransfers: number | undefined,
  out: { phase: 'kafka' | 'http'; transfers: number; summary: ProfileSummary }[],
  log: (message: string) => void,
): void {
  if (!fs.existsSync(file)) {
    log(`WARNING: no profile written at ${file}`);
    return;
  }
  for (const [phase, transfers] of [
    ['kafka', kafkaTransfers],
    ['http', httpTransfers],
  ] as const) {
    const window = windows[phase];
    if (window === undefined || transfers === undefined || transfers === 0) continue;
    const summary = summariseProfile(file, 40, {
      fromMsBeforeEnd: exitAt - window[0],
      toMsBeforeEnd: exitAt - window[1],
    });
    const summaryFile = file.replace(/\.cpuprofile$/, `-${phase}.txt`);
    fs.writeFileSync(summaryFile, `${formatSummary(summary)}\n`);
    out.push({ phase, transfers, summary });
    log(`profile of the ${phase} phase: ${path.relative(REPO_DIR, summaryFile)}`);
  }
}

runMain(main);
