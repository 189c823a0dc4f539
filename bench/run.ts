/**
 * The benchmark: a throwaway three-replica TigerBeetle cluster, the built service as its own
 * process (production mode: node dist/src/main.js), complete two-phase FSPIOP transfers and the
 * /jmeter fulfil:true path at several concurrencies, the two ceilings measured in the same run
 * (a no-op Fastify process driven the same way, raw tigerbeetle-node batches against the same
 * cluster), then the books checked. bench/README.md explains every figure.
 *
 *   npx tsx bench/run.ts                 full run (~2-3 minutes)
 *   npx tsx bench/run.ts --quick         under a minute
 *   npx tsx bench/run.ts --profile       the service under --cpu-prof at 64 connections, summarised
 *   options: --build (force) --no-build  --service-dir DIR  --levels 1,16,64  --duration S  --replicas 3|1
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import { Books, REPO_DIR, RESULTS_DIR, buildIfStale, checkLines, failOnChecks, flags, freePort, gitDescription, gitLabel, ledgerChecks, machineDescription, onboard, paragraphs, positions, reconcile, runMain, serviceEnv, sleep, startProcess, stopProcess, transferChecks, writeResult, type Check, type Started } from './common';
import { measurePhase, type PhaseRecord, type Target } from './phases';
import { cpuSecondsOf, findPids } from './procstat';
import { formatSummary, summariseProfile } from './profile-summary';
import { replicaCostText } from './replica-cost';
import { ceilingTable, cpuPerTransfer, cpuPerTransferTable, htmlReport, latencyTable, mainTable, table, type PhaseReport } from './report';
import { measureTbCeiling, type TbCeiling } from './tb-ceiling';
import { CURRENCY, Workload, type Scenario } from './workload';

const BENCH_DIR = __dirname;

interface Options {
  quick: boolean;
  profile: boolean;
  build: boolean;
  forceBuild: boolean;
  serviceDir: string;
  levels: number[];
  jmeterLevels: number[];
  durationS: number;
  jmeterDurationS: number;
  noopDurationS: number;
  warmupS: number;
  profileDurationS: number;
  /** Seconds of no load, service connected, over which the replicas' idle burn is measured. */
  idleS: number;
  tbBatchPairs: number;
  /** 3 (production's shape) or 1: a third of the memory, no replication, for A/B runs on a crowded machine. */
  replicas: 1 | 3;
  participants: number;
  sampleGets: number;
}

function parseOptions(argv: string[]): Options {
  const { has, value } = flags(argv);
  const quick = has('--quick');
  const levels = value('--levels')?.split(',').map(Number) ?? (quick ? [1, 64] : [1, 16, 64, 256]);
  const duration = value('--duration') === undefined ? undefined : Number(value('--duration'));
  return {
    quick,
    profile: has('--profile'),
    build: !has('--no-build'),
    forceBuild: has('--build'),
    serviceDir: path.resolve(value('--service-dir') ?? REPO_DIR),
    levels,
    jmeterLevels: quick ? [64] : levels,
    durationS: duration ?? (quick ? 3 : 8),
    jmeterDurationS: duration ?? (quick ? 3 : 5),
    noopDurationS: duration ?? (quick ? 2 : 4),
    warmupS: quick ? 2 : 3,
    profileDurationS: duration ?? 15,
    idleS: quick ? 3 : 5,
    tbBatchPairs: quick ? 3 : 20,
    replicas: value('--replicas') === '1' ? 1 : 3,
    participants: 8,
    sampleGets: quick ? 200 : 1000,
  };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-logs-'));
  const log = (message: string): void => {
    process.stdout.write(`[${((Date.now() - startedAt.getTime()) / 1000).toFixed(1).padStart(6)} s] ${message}\n`);
  };
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    log('interrupted: stopping');
  });

  const warnings = buildIfStale(options.serviceDir, { build: options.build, force: options.forceBuild }, log);
  for (const w of warnings) log(`WARNING: ${w}`);
  const git = gitDescription(options.serviceDir);
  const mainJs = path.join(options.serviceDir, 'dist/src/main.js');
  if (!fs.existsSync(mainJs)) throw new Error(`${mainJs} missing: run npm run build`);

  let cluster: RunningCluster | undefined;
  let service: Started | undefined;
  let noop: Started | undefined;
  const phases: PhaseRecord[] = [];
  const checks: Check[] = [];
  let tb: TbCeiling | undefined;
  let profileSummaryText: string | undefined;
  let workload: Workload | undefined;
  const reconciliations: Record<string, unknown>[] = [];
  const profileWindowWall = { start: 0, end: 0, exit: 0 };
  let idleReplicaCores: number | undefined;

  try {
    log('starting a three-replica TigerBeetle cluster');
    cluster = await startCluster({ replicas: options.replicas });
    const tbPids = findPids('tigerbeetle', 'start', `--addresses=${cluster.addresses.join(',')}`);
    log(`cluster ${cluster.clusterId.toString(16).slice(0, 8)}… on ${cluster.addresses.join(',')} (replica pids ${tbPids.join(',')})`);

    const servicePort = await freePort();
    const profileDir = path.join(BENCH_DIR, 'profiles');
    const nodeArgs: string[] = [];
    if (options.profile) {
      fs.mkdirSync(profileDir, { recursive: true });
      nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=service-${stamp}.cpuprofile`);
    }
    const entry = [mainJs];
    const env = { ...serviceEnv(servicePort, cluster, path.join(logDir, 'data')), SERVICE_DIR: options.serviceDir };
    log(`starting the service: node ${[...nodeArgs, ...entry].join(' ')} (port ${servicePort})`);
    service = await startProcess('service', [...nodeArgs, ...entry], env, servicePort, path.join(logDir, 'service.log'), '/health');
    const serviceTarget: Target = { kind: 'service', base: service.base, pid: service.pid };

    const names = await onboard(service.base, `bench${Math.random().toString(16).slice(2, 6)}`, options.participants);
    const positionsBefore = await positions(service.base, names);
    log(`onboarded ${names.length} participants (${names[0]}…${names[names.length - 1]}) in ${CURRENCY}`);

    workload = new Workload(names, { conditionPool: 16_384, amountPool: 64 });
    const w = workload;

    const runPhase = async (label: string, target: Target, scenario: Scenario, connections: number, durationS: number, track: boolean): Promise<PhaseRecord> => {
      if (interrupted) throw new Error('interrupted');
      return measurePhase({ label, scenario, connections, durationS }, target, w, tbPids, track, log);
    };

    /** Transfers whose completion the load generator did not see, a moment after their phase: see common.reconcile. */
    const settle = async (label: string, settleMs: number): Promise<void> => {
      await sleep(settleMs);
      const { counts: found, failures } = await reconcile(service!.base, w, [...w.sent.values()].filter((t) => t.state !== 'committed'));
      const counts = { open: found.open, committedLate: found.committedLate, fulfilledNow: found.fulfilledNow, missing: found.neverArrived, failed: found.failed };
      reconciliations.push({ label, ...counts, failures: failures.slice(0, 10) });
      if (counts.open > 0) log(`reconciled after ${label}: ${JSON.stringify(counts)}${failures.length > 0 ? `\n    ${failures.slice(0, 5).join('\n    ')}` : ''}`);
    };

    // The replicas' own pace with nothing to do (timeouts, pings, the client's): shared out over
    // whatever transfers a phase completes, so on a machine where the service is the bottleneck
    // it is part of the measured replica CPU per transfer without scaling with the work.
    const idle0 = { cpu: cpuSecondsOf(tbPids), at: performance.now() };
    await sleep(options.idleS * 1000);
    idleReplicaCores = (cpuSecondsOf(tbPids) - idle0.cpu) / ((performance.now() - idle0.at) / 1000);
    log(`replicas idle (service connected, no load, ${options.idleS} s): ${idleReplicaCores.toFixed(3)} cores`);

    log(`warm-up: FSPIOP at 16 connections for ${options.warmupS} s (counted in the books, not in the table)`);
    const warmup = await runPhase('warm-up', serviceTarget, 'fspiop', 16, options.warmupS, true);
    await settle('warm-up', 300);

    let maxUnansweredAtTeardown = warmup.load.connections;
    if (options.profile) {
      profileWindowWall.start = Date.now();
      phases.push(await runPhase(`profile fspiop c=64`, serviceTarget, 'fspiop', 64, options.profileDurationS, true));
      profileWindowWall.end = Date.now();
      maxUnansweredAtTeardown += 64;
      await settle('profile', 300);
    } else {
      for (const c of options.levels) {
        phases.push(await runPhase(`fspiop c=${c}`, serviceTarget, 'fspiop', c, options.durationS, true));
        maxUnansweredAtTeardown += c;
        await settle(`fspiop c=${c}`, 300);
      }
      for (const c of options.jmeterLevels) {
        phases.push(await runPhase(`jmeter c=${c}`, serviceTarget, 'jmeter', c, options.jmeterDurationS, true));
        maxUnansweredAtTeardown += c;
        await settle(`jmeter c=${c}`, 300);
      }
    }
    // A second look at the transfers the service did not know a moment after their phase.
    await settle('final', 1000);

    // ---- books
    log('checking the books');
    const sent = [...w.sent.values()];
    const committed = sent.filter((t) => t.state === 'committed');
    const missing = sent.filter((t) => t.state === 'sent');
    const notCommitted = sent.filter((t) => t.state === 'reserved' || t.state === 'failed');
    checks.push({
      name: 'every transfer that reached the service is COMMITTED',
      pass: notCommitted.length === 0 && missing.length <= maxUnansweredAtTeardown,
      detail: `${sent.length} sent, ${committed.length} committed, ${notCommitted.length} not committed, ${missing.length} never reached the service (at most ${maxUnansweredAtTeardown} may: one per connection at each phase's end)`,
    });

    const books = new Books(options.sampleGets);
    for (const t of committed) books.add(t);
    checks.push(...(await transferChecks(service.base, names, positionsBefore, books)), ...(await ledgerChecks(names, cluster)));

    const serviceLoads = phases.map((p) => p.load).concat(warmup.load);
    const refused = serviceLoads.reduce((n, l) => n + l.errors + l.non2xx + l.unexpected, 0);
    checks.push({ name: 'no errors or non-2xx answers under load', pass: refused === 0, detail: `${refused} (${serviceLoads.map((l) => `${l.scenario}@${l.connections}: ${l.errors}/${l.non2xx}/${l.unexpected}`).join(', ')})` });

    if (!options.profile) {
      log(`measuring the raw TigerBeetle ceiling: ${options.tbBatchPairs} × (8,189 pending + 8,189 posts)`);
      tb = await measureTbCeiling(cluster.clusterId, cluster.addresses, options.tbBatchPairs);
      log(`raw TigerBeetle: ${tb.eventsPerS.toFixed(0)} events/s (${tb.serviceEquivalentTransfersPerS.toFixed(0)} service-equivalent transfers/s)`);
      checks.push({ name: 'raw TigerBeetle batches: every event created', pass: tb.failedEvents === 0, detail: tb.failedEvents === 0 ? `${tb.events} events` : `${tb.failedEvents} failed, first ${tb.firstFailure}` });
    }

    log('stopping the service');
    await stopProcess(service);
    profileWindowWall.exit = Date.now();
    service = undefined;

    if (options.profile) {
      const file = path.join(profileDir, `service-${stamp}.cpuprofile`);
      if (!fs.existsSync(file)) throw new Error(`no profile written at ${file}`);
      // Only the 64-connection phase: not start-up, onboarding, warm-up or the checks.
      const summary = summariseProfile(file, 30, {
        fromMsBeforeEnd: profileWindowWall.exit - profileWindowWall.start,
        toMsBeforeEnd: profileWindowWall.exit - profileWindowWall.end,
      });
      profileSummaryText = formatSummary(summary);
      fs.writeFileSync(file.replace(/\.cpuprofile$/, '-summary.txt'), `${profileSummaryText}\n`);
      fs.writeFileSync(file.replace(/\.cpuprofile$/, '-summary.json'), JSON.stringify(summary, null, 2));
      log(`profile written: ${path.relative(REPO_DIR, file)}`);
    } else {
      const noopPort = await freePort();
      log(`starting the no-op Fastify server (port ${noopPort})`);
      noop = await startProcess('noop', ['--import', 'tsx', path.join(BENCH_DIR, 'noop-server.ts')], { ...process.env, PORT: String(noopPort) }, noopPort, path.join(logDir, 'noop.log'), '/health');
      const noopTarget: Target = { kind: 'noop', base: noop.base, pid: noop.pid };
      await runPhase('no-op warm-up', noopTarget, 'fspiop', 16, 1, false);
      for (const c of options.levels) phases.push(await runPhase(`no-op fspiop c=${c}`, noopTarget, 'fspiop', c, options.noopDurationS, false));
      for (const c of options.jmeterLevels) phases.push(await runPhase(`no-op jmeter c=${c}`, noopTarget, 'jmeter', c, options.noopDurationS, false));
      await stopProcess(noop);
      noop = undefined;
    }
  } catch (error) {
    process.stderr.write(`service and no-op server logs kept in ${logDir}\n`);
    throw error;
  } finally {
    workload?.stop();
    if (service !== undefined) await stopProcess(service);
    if (noop !== undefined) await stopProcess(noop);
    fs.rmSync(path.join(logDir, 'data'), { recursive: true, force: true });
    if (cluster !== undefined) {
      log('stopping the cluster');
      await cluster.stop();
    }
  }

  // ---- report
  const cores = os.cpus().length;
  const reports: PhaseReport[] = phases.map((p) => {
    const transfersPerS = p.load.transfers / p.load.durationS;
    const requestsPerS = p.load.requests / p.load.durationS;
    const noopTwin = phases.find((q) => q.load.target === 'noop' && q.load.scenario === p.load.scenario && q.load.connections === p.load.connections);
    return {
      load: p.load,
      transfersPerS,
      requestsPerS,
      batch: p.batch,
      cpu: {
        serviceCores: (p.serviceCpuS ?? Number.NaN) / p.wallS,
        serviceCpuMsPerTransfer: p.load.target === 'service' && p.load.transfers > 0 && p.serviceCpuS !== undefined ? (p.serviceCpuS * 1000) / p.load.transfers : undefined,
        tigerbeetleCores: p.tigerbeetleCpuS / p.wallS,
        loadGeneratorCores: p.loadGeneratorCpuS / p.wallS,
      },
      cpuPerTransfer:
        p.load.transfers > 0 && p.serviceCpuS !== undefined
          ? cpuPerTransfer(p.load.transfers, cores, { target: p.serviceCpuS, tigerbeetle: p.tigerbeetleCpuS, loadGenerator: p.loadGeneratorCpuS, other: p.otherCpuS })
          : undefined,
      serviceRssPeakMiB: p.rssPeakMiB,
      serviceRssEndMiB: p.rssEndMiB,
      httpRatio: p.load.target === 'service' && noopTwin !== undefined ? requestsPerS / (noopTwin.load.requests / noopTwin.load.durationS) : undefined,
      ledgerRatio: p.load.target === 'service' && tb !== undefined ? transfersPerS / tb.serviceEquivalentTransfersPerS : undefined,
    };
  });
  const machineRows = phases.map((p) => [
    p.label,
    String(p.load.connections),
    (p.machineBusyS / p.wallS).toFixed(2),
    ((p.serviceCpuS ?? 0) / p.wallS).toFixed(2),
    ((p.serviceThreadsCpuS['main'] ?? 0) / p.wallS).toFixed(2),
    Object.entries(p.serviceThreadsCpuS)
      .filter(([name, seconds]) => name !== 'main' && seconds / p.wallS >= 0.01)
      .sort((a, b) => b[1] - a[1])
      .map(([name, seconds]) => `${name} ${(seconds / p.wallS).toFixed(2)}`)
      .join(', ') || '-',
    (p.tigerbeetleCpuS / p.wallS).toFixed(2),
    (p.loadGeneratorCpuS / p.wallS).toFixed(2),
    (p.otherCpuS / p.wallS).toFixed(2),
    (p.stealS / p.wallS).toFixed(2),
    p.otherProcesses.join(', ') || '-',
  ]);
  const c1 = reports.find((r) => r.load.scenario === 'fspiop' && r.load.target === 'service' && r.load.connections === 1);
  const text = paragraphs(
    `Benchmark ${startedAt.toISOString()} — ${options.profile ? 'profile' : options.quick ? 'quick' : 'full'} run, service ${gitLabel(git)}, node dist/src/main.js, ${cores} cores`,
    mainTable(reports),
    `Latency by request kind (ms) and where the CPU went (cores = CPU seconds per wall second):\n${latencyTable(reports)}`,
    table(['phase', 'conc', 'machine busy cores', 'target process', 'its main thread', 'its other threads', 'TB replicas', 'load generator', 'other processes', 'stolen by hypervisor', 'heaviest other processes (cores)'], machineRows),
    cpuPerTransferTable(reports, cores),
    replicaCostText(reports, idleReplicaCores),
    ceilingTable(tb),
    [
      c1 !== undefined && `Concurrency-1 prepare latency: p50 ${c1.load.latency.prepare.p50.toFixed(2)} ms, p99 ${c1.load.latency.prepare.p99.toFixed(2)} ms (fulfil p50 ${c1.load.latency.fulfil.p50.toFixed(2)} ms)`,
      reports.some((r) => r.load.target === 'service' && r.batch === undefined) &&
        'Ledger batch size: n/a — the service answered no GET /metrics with a ledger_batch_commands histogram.',
    ],
    checkLines(checks, warnings),
  );
  process.stdout.write(`\n${text}\n`);
  if (profileSummaryText !== undefined) process.stdout.write(`\n${profileSummaryText}\n`);

  const name = `${stamp}${options.profile ? '-profile' : options.quick ? '-quick' : ''}`;
  const jsonFile = writeResult(name, {
    startedAt, options, git, warnings, machine: machineDescription(),
    ledgerEnv: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('LEDGER_'))),
    tigerbeetleCeiling: tb, idleReplicaCores, phases: phases.map((p, i) => ({ ...p, report: reports[i] })), reconciliations, checks, text, profileSummary: profileSummaryText,
  });
  const htmlFile = path.join(RESULTS_DIR, `${name}.html`);
  if (!options.profile) fs.writeFileSync(htmlFile, htmlReport(`tb-central-ledger benchmark ${startedAt.toISOString()}`, reports, tb, text));
  process.stdout.write(`\nwrote ${path.relative(REPO_DIR, jsonFile)}${options.profile ? '' : ` and ${path.relative(REPO_DIR, htmlFile)}`}\n`);
  fs.rmSync(logDir, { recursive: true, force: true });
  failOnChecks(checks);
}

runMain(main);

