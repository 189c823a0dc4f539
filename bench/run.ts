/**
 * The benchmark: the built service as its own process (production mode: node dist/src/main.js)
 * on a throwaway three-replica TigerBeetle cluster, complete two-phase FSPIOP transfers and the
 * /jmeter fulfil:true path at several concurrencies — each phase on a new cluster with a new
 * service (bench/run-cluster.ts), its books checked there — and the two ceilings measured in the
 * same run (a no-op Fastify process driven the same way, raw tigerbeetle-node batches on a
 * cluster of their own). bench/README.md explains every figure.
 *
 *   npx tsx bench/run.ts                 full run (~3-4 minutes)
 *   npx tsx bench/run.ts --quick         about a minute
 *   npx tsx bench/run.ts --profile       the service under --cpu-prof at 64 connections, summarised
 *   options: --build (force) --no-build  --service-dir DIR  --levels 1,16,64  --duration S
 * --replicas 3|1  --node-options A,B (node flags for the service, e.g. --max-semi-space-size=32)
 *            --shared-cluster (every phase on one cluster, as before: later phases pay earlier
 * ones' compaction)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  RESULTS_DIR,
  buildIfStale,
  checkLines,
  failOnChecks,
  flags,
  gitDescription,
  gitLabel,
  machineDescription,
  paragraphs,
  runMain,
  writeResult,
  type Check,
  table,
  progressLog,
} from './common';
import { measurePhase, type PhaseRecord, type PhaseSpec, type Target } from './phases';
import { formatSummary, summariseProfile } from './profile-summary';
import {
  ceilingTable,
  cpuPerTransfer,
  cpuPerTransferTable,
  htmlReport,
  latencyTable,
  mainTable,
  type PhaseReport,
} from './report';
import {
  mergeChecks,
  runOnCluster,
  withCluster,
  type ClusterRun,
  type ClusterSetup,
} from './run-cluster';
import { measureTbCeiling, type TbCeiling } from './tb-ceiling';
import { REPO_DIR, startProcess, stopProcess, type Started } from '../test/support/service-process';
import { freePort } from '../test/support/net';
import { Workload } from '../test/support/workload';
import { type Scenario } from './load';

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
  tbBatchPairs: number;
  /**
   * 3 (production's shape) or 1: a third of the memory, no replication, for A/B runs on a crowded
   * machine.
   */
  replicas: 1 | 3;
  /**
   * Every measured phase on one cluster and one service (the old arrangement), instead of a new
   * pair per phase.
   */
  sharedCluster: boolean;
  participants: number;
  sampleGets: number;
  /** Node's own flags for the service process (before main.js), beside --cpu-prof's. */
  nodeOptions: string[];
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
    tbBatchPairs: quick ? 3 : 20,
    replicas: value('--replicas') === '1' ? 1 : 3,
    sharedCluster: has('--shared-cluster'),
    participants: 8,
    sampleGets: quick ? 200 : 1000,
    nodeOptions: value('--node-options')?.split(',') ?? [],
  };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-logs-'));
  const log = progressLog(startedAt.getTime());
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    log('interrupted: stopping');
  });

  const build = { build: options.build, force: options.forceBuild };
  const warnings = buildIfStale(options.serviceDir, build, log);
  const git = gitDescription(options.serviceDir);
  const mainJs = path.join(options.serviceDir, 'dist/src/main.js');
  if (!fs.existsSync(mainJs)) throw new Error(`${mainJs} missing: run npm run build`);

  let noop: Started | undefined;
  const runs: ClusterRun[] = [];
  const phases: PhaseRecord[] = [];
  const checks: Check[] = [];
  let tb: TbCeiling | undefined;
  let profileSummaryText: string | undefined;

  try {
    const profileDir = path.join(BENCH_DIR, 'profiles');
    const nodeArgs: string[] = [...options.nodeOptions];
    if (options.profile) {
      fs.mkdirSync(profileDir, { recursive: true });
      nodeArgs.push(
        '--cpu-prof',
        `--cpu-prof-dir=${profileDir}`,
        `--cpu-prof-name=service-${stamp}.cpuprofile`,
      );
    }
    const specs: PhaseSpec[] = options.profile
      ? [
          {
            label: 'profile fspiop c=64',
            scenario: 'fspiop',
            connections: 64,
            durationS: options.profileDurationS,
          },
        ]
      : [
          ...options.levels.map(
            (c): PhaseSpec => ({
              label: `fspiop c=${c}`,
              scenario: 'fspiop',
              connections: c,
              durationS: options.durationS,
            }),
          ),
          ...options.jmeterLevels.map(
            (c): PhaseSpec => ({
              label: `jmeter c=${c}`,
              scenario: 'jmeter',
              connections: c,
              durationS: options.jmeterDurationS,
            }),
          ),
        ];
    // A cluster (and a service) per measured phase, so that no phase's replica CPU carries the
    // compaction of another's writes (run-cluster.ts); --shared-cluster: one for all, as before.
    const groups = options.sharedCluster ? [specs] : specs.map((spec) => [spec]);
    const setup: ClusterSetup = {
      replicas: options.replicas,
      mainJs,
      serviceDir: options.serviceDir,
      nodeArgs,
      participantPrefix: `bench${Math.random().toString(16).slice(2, 6)}`,
      participants: options.participants,
      sampleGets: options.sampleGets,
      warmupS: options.warmupS,
      logDir,
    };
    for (const [i, group] of groups.entries())
      runs.push(await runOnCluster(i, group, setup, log, () => interrupted));
    phases.push(...runs.flatMap((r) => r.phases));

    checks.push(...mergeChecks(runs));
    const serviceLoads = runs.flatMap((r) => [r.warmup.load, ...r.phases.map((p) => p.load)]);
    const refused = serviceLoads.reduce((n, l) => n + l.errors + l.non2xx + l.unexpected, 0);
    checks.push({
      name: 'no errors or non-2xx answers under load',
      pass: refused === 0,
      detail: `${refused} (${serviceLoads.map((l) => `${l.scenario}@${l.connections}: ${l.errors}/${l.non2xx}/${l.unexpected}`).join(', ')})`,
    });

    if (options.profile) {
      const file = path.join(profileDir, `service-${stamp}.cpuprofile`);
      if (!fs.existsSync(file)) throw new Error(`no profile written at ${file}`);
      // Only the 64-connection phase: not start-up, onboarding, warm-up or the checks.
      const [run] = runs;
      const window = run!.phases[0]!.wallClock;
      const summary = summariseProfile(file, 30, {
        fromMsBeforeEnd: run!.serviceExitAt - window.start,
        toMsBeforeEnd: run!.serviceExitAt - window.end,
      });
      profileSummaryText = formatSummary(summary);
      fs.writeFileSync(file.replace(/\.cpuprofile$/, '-summary.txt'), `${profileSummaryText}\n`);
      fs.writeFileSync(
        file.replace(/\.cpuprofile$/, '-summary.json'),
        JSON.stringify(summary, null, 2),
      );
      log(`profile written: ${path.relative(REPO_DIR, file)}`);
    } else {
      // A cluster of its own too: raw batches on a cluster the service phases wrote to would pay
      // their compaction.
      log(
        `measuring the raw TigerBeetle ceiling on a new cluster: ${options.tbBatchPairs} × (8,189 pending + 8,189 posts)`,
      );
      tb = await withCluster({ replicas: options.replicas }, (cluster) =>
        measureTbCeiling(cluster.clusterId, cluster.addresses, options.tbBatchPairs),
      );
      log(
        `raw TigerBeetle: ${tb.eventsPerS.toFixed(0)} events/s (${tb.serviceEquivalentTransfersPerS.toFixed(0)} service-equivalent transfers/s)`,
      );
      checks.push({
        name: 'raw TigerBeetle batches: every event created',
        pass: tb.failedEvents === 0,
        detail:
          tb.failedEvents === 0
            ? `${tb.events} events`
            : `${tb.failedEvents} failed, first ${tb.firstFailure}`,
      });

      const noopPort = await freePort();
      log(`starting the no-op Fastify server (port ${noopPort}; no cluster is up)`);
      noop = await startProcess(
        'noop',
        ['--import', 'tsx', path.join(BENCH_DIR, 'noop-server.ts')],
        { ...process.env, PORT: String(noopPort) },
        noopPort,
        path.join(logDir, 'noop.log'),
        '/health',
      );
      const noopTarget: Target = { kind: 'noop', base: noop.base, pid: noop.pid };
      // Its own workload (the clusters' are stopped) with the same names, so the same body sizes;
      // nothing is tracked.
      const noopWorkload = new Workload(runs[0]!.names, { conditionPool: 16_384, amountPool: 64 });
      try {
        const noopPhase = (
          label: string,
          scenario: Scenario,
          c: number,
          durationS: number,
        ): Promise<PhaseRecord> =>
          measurePhase(
            { label, scenario, connections: c, durationS },
            noopTarget,
            noopWorkload,
            [],
            false,
            log,
          );
        await noopPhase('no-op warm-up', 'fspiop', 16, 1);
        for (const c of options.levels)
          phases.push(await noopPhase(`no-op fspiop c=${c}`, 'fspiop', c, options.noopDurationS));
        for (const c of options.jmeterLevels)
          phases.push(await noopPhase(`no-op jmeter c=${c}`, 'jmeter', c, options.noopDurationS));
      } finally {
        noopWorkload.stop();
      }
      await stopProcess(noop);
      noop = undefined;
    }
  } catch (error) {
    process.stderr.write(`service and no-op server logs kept in ${logDir}\n`);
    throw error;
  } finally {
    if (noop !== undefined) await stopProcess(noop);
  }

  // ---- report
  const cores = os.cpus().length;
  const reports: PhaseReport[] = phases.map((p) => {
    const transfersPerS = p.load.transfers / p.load.durationS;
    const requestsPerS = p.load.requests / p.load.durationS;
    const noopTwin = phases.find(
      (q) =>
        q.load.target === 'noop' &&
        q.load.scenario === p.load.scenario &&
        q.load.connections === p.load.connections,
    );
    return {
      load: p.load,
      transfersPerS,
      requestsPerS,
      batch: p.batch,
      cpu: {
        serviceCores: (p.serviceCpuS ?? Number.NaN) / p.wallS,
        serviceCpuMsPerTransfer:
          p.load.target === 'service' && p.load.transfers > 0 && p.serviceCpuS !== undefined
            ? (p.serviceCpuS * 1000) / p.load.transfers
            : undefined,
        tigerbeetleCores: p.tigerbeetleCpuS / p.wallS,
        loadGeneratorCores: p.loadGeneratorCpuS / p.wallS,
      },
      cpuPerTransfer:
        p.load.transfers > 0 && p.serviceCpuS !== undefined
          ? cpuPerTransfer(p.load.transfers, cores, {
              target: p.serviceCpuS,
              tigerbeetle: p.tigerbeetleCpuS,
              loadGenerator: p.loadGeneratorCpuS,
              other: p.otherCpuS,
            })
          : undefined,
      serviceRssPeakMiB: p.rssPeakMiB,
      serviceRssEndMiB: p.rssEndMiB,
      httpRatio:
        p.load.target === 'service' && noopTwin !== undefined
          ? requestsPerS / (noopTwin.load.requests / noopTwin.load.durationS)
          : undefined,
      ledgerRatio:
        p.load.target === 'service' && tb !== undefined
          ? transfersPerS / tb.serviceEquivalentTransfersPerS
          : undefined,
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
  const c1 = reports.find(
    (r) => r.load.scenario === 'fspiop' && r.load.target === 'service' && r.load.connections === 1,
  );
  const kind = (options.profile && 'profile') || (options.quick && 'quick') || 'full';
  const text = paragraphs(
    `Benchmark ${startedAt.toISOString()} — ${kind} run, service ${gitLabel(git)}, node dist/src/main.js, ${cores} cores, ` +
      (runs.length === 1
        ? 'one cluster and one service for every phase'
        : `a new cluster and service for each of the ${runs.length} phases (started and onboarded in ${runs.map((r) => r.startS.toFixed(1)).join('/')} s)`),
    mainTable(reports),
    `Latency by request kind (ms) and where the CPU went (cores = CPU seconds per wall second):\n${latencyTable(reports)}`,
    table(
      [
        'phase',
        'conc',
        'machine busy cores',
        'target process',
        'its main thread',
        'its other threads',
        'TB replicas',
        'load generator',
        'other processes',
        'stolen by hypervisor',
        'heaviest other processes (cores)',
      ],
      machineRows,
    ),
    cpuPerTransferTable(reports, cores),
    ceilingTable(tb),
    [
      c1 !== undefined &&
        `Concurrency-1 prepare latency: p50 ${c1.load.latency.prepare.p50.toFixed(2)} ms, p99 ${c1.load.latency.prepare.p99.toFixed(2)} ms (fulfil p50 ${c1.load.latency.fulfil.p50.toFixed(2)} ms)`,
      reports.some((r) => r.load.target === 'service' && r.batch === undefined) &&
        'Ledger batch size: n/a — the service answered no GET /metrics with a ledger_batch_commands histogram.',
    ],
    checkLines(checks, warnings),
  );
  process.stdout.write(`\n${text}\n`);
  if (profileSummaryText !== undefined) process.stdout.write(`\n${profileSummaryText}\n`);

  const name = kind === 'full' ? stamp : `${stamp}-${kind}`;
  const jsonFile = writeResult(name, {
    startedAt,
    options,
    git,
    warnings,
    machine: machineDescription(),
    ledgerEnv: Object.fromEntries(
      Object.entries(process.env).filter(([k]) => k.startsWith('LEDGER_')),
    ),
    tigerbeetleCeiling: tb,
    clusters: runs.map((r) => ({
      index: r.index,
      phases: r.phases.map((p) => p.label),
      startS: r.startS,
    })),
    phases: phases.map((p, i) => ({ ...p, report: reports[i] })),
    reconciliations: runs.flatMap((r) => r.reconciliations),
    checks,
    text,
    profileSummary: profileSummaryText,
  });
  const htmlFile = path.join(RESULTS_DIR, `${name}.html`);
  if (!options.profile)
    fs.writeFileSync(
      htmlFile,
      htmlReport(`tb-central-ledger benchmark ${startedAt.toISOString()}`, reports, tb, text),
    );
  process.stdout.write(
    `\nwrote ${path.relative(REPO_DIR, jsonFile)}${options.profile ? '' : ` and ${path.relative(REPO_DIR, htmlFile)}`}\n`,
  );
  fs.rmSync(logDir, { recursive: true, force: true });
  failOnChecks(checks);
}

runMain(main);
