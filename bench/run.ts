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
 *   options: --build (force) --no-build  --batch-stats  --service-dir DIR  --levels 1,16,64  --duration S
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import { REPO_DIR, buildIfStale, call, freePort, gitDescription, pool, positions, sleep, startProcess, stopProcess, type Started, ledgerChecks, type Check } from './common';
import { allProcesses, cpuSeconds, cpuSecondsOf, findPids, machineCpuSeconds, memoryMiB, selfCpuSeconds, threadCpuSeconds, topConsumers } from './procstat';
import { formatSummary, summariseProfile } from './profile-summary';
import { ceilingTable, htmlReport, latencyTable, mainTable, table, type PhaseReport } from './report';
import { measureTbCeiling, type TbCeiling } from './tb-ceiling';
import { CURRENCY, Workload, drive, formatMinor, type LoadResult, type Scenario } from './workload';

const BENCH_DIR = __dirname;

interface Options {
  quick: boolean;
  profile: boolean;
  build: boolean;
  forceBuild: boolean;
  batchStats: boolean;
  serviceDir: string;
  levels: number[];
  jmeterLevels: number[];
  durationS: number;
  jmeterDurationS: number;
  noopDurationS: number;
  warmupS: number;
  profileDurationS: number;
  tbBatchPairs: number;
  participants: number;
  sampleGets: number;
}

function parseOptions(argv: string[]): Options {
  const has = (flag: string): boolean => argv.includes(flag);
  const value = (flag: string): string | undefined => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const quick = has('--quick');
  const levels = value('--levels')?.split(',').map(Number) ?? (quick ? [1, 64] : [1, 16, 64, 256]);
  const duration = value('--duration') === undefined ? undefined : Number(value('--duration'));
  return {
    quick,
    profile: has('--profile'),
    build: !has('--no-build'),
    forceBuild: has('--build'),
    batchStats: has('--batch-stats'),
    serviceDir: path.resolve(value('--service-dir') ?? REPO_DIR),
    levels,
    jmeterLevels: quick ? [64] : levels,
    durationS: duration ?? (quick ? 3 : 8),
    jmeterDurationS: duration ?? (quick ? 3 : 5),
    noopDurationS: duration ?? (quick ? 2 : 4),
    warmupS: quick ? 2 : 3,
    profileDurationS: duration ?? 15,
    tbBatchPairs: quick ? 3 : 20,
    participants: 8,
    sampleGets: quick ? 200 : 1000,
  };
}

// ---------------------------------------------------------------------------------------------
// Processes


// ---------------------------------------------------------------------------------------------
// HTTP helpers


interface BatchMetrics {
  batches: number;
  commands: number;
  /** Largest batch since start, when the service has a gauge for it. */
  max: number | undefined;
  /** Cumulative histogram buckets of commands per batch (upper bound → count), when it has one. */
  buckets: Map<number, number>;
  latencyMsTotal: number | undefined;
}

/**
 * The ledger batcher's counters from GET /metrics (Prometheus text), if the service has them:
 * the service's own histogram `ledger_batch_commands` (+ `ledger_batch_duration_seconds`), or the
 * counters of bench/service-with-stats.ts.
 */
async function batchMetrics(base: string): Promise<BatchMetrics | undefined> {
  let text: string;
  try {
    const response = await fetch(`${base}/metrics`);
    if (!response.ok) return undefined;
    text = await response.text();
  } catch {
    return undefined;
  }
  const values = new Map<string, number>();
  const buckets = new Map<number, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-0-9.eE+]+|NaN|\+Inf)$/.exec(line.trim());
    if (match === null) continue;
    const [, name, labels, raw] = match as unknown as [string, string, string | undefined, string];
    const value = Number(raw);
    if (name === 'ledger_batch_commands_bucket' || name === 'ledger_batch_size_bucket') {
      const le = /le="([^"]+)"/.exec(labels ?? '')?.[1];
      if (le !== undefined) buckets.set(le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), value);
      continue;
    }
    if (labels === undefined) values.set(name, value);
  }
  const first = (...names: string[]): number | undefined => names.map((n) => values.get(n)).find((v) => v !== undefined);
  const batches = first('ledger_batches_total', 'ledger_batch_commands_count', 'ledger_batch_size_count');
  const commands = first('ledger_batch_commands_total', 'ledger_batch_commands_sum', 'ledger_batch_size_sum');
  if (batches === undefined || commands === undefined) return undefined;
  const seconds = first('ledger_batch_duration_seconds_sum', 'ledger_batch_seconds_sum');
  return {
    batches,
    commands,
    max: first('ledger_batch_commands_max', 'ledger_batch_size_max', 'ledger_batch_max_commands'),
    buckets,
    latencyMsTotal: first('ledger_batch_latency_ms_total') ?? (seconds === undefined ? undefined : seconds * 1000),
  };
}

/** Mean and largest batch between two scrapes; the largest is a bucket bound ("≤ 64") when only a histogram exists. */
function batchDelta(before: BatchMetrics, after: BatchMetrics): { mean: number; max: number; maxIsBound: boolean; batches: number; meanLatencyMs: number | undefined } | undefined {
  const batches = after.batches - before.batches;
  if (batches <= 0) return undefined;
  let max = after.max;
  let maxIsBound = false;
  if (max === undefined) {
    // The smallest bucket that holds every batch of the phase.
    const bounds = [...after.buckets.keys()].sort((a, b) => a - b);
    max = bounds.find((le) => (after.buckets.get(le) ?? 0) - (before.buckets.get(le) ?? 0) >= batches) ?? Number.NaN;
    maxIsBound = true;
  }
  return {
    mean: (after.commands - before.commands) / batches,
    max,
    maxIsBound,
    batches,
    meanLatencyMs: after.latencyMsTotal === undefined || before.latencyMsTotal === undefined ? undefined : (after.latencyMsTotal - before.latencyMsTotal) / batches,
  };
}

// ---------------------------------------------------------------------------------------------
// The run

interface Target {
  kind: 'service' | 'noop';
  base: string;
  pid: number;
}

interface PhaseRecord {
  label: string;
  load: LoadResult;
  wallS: number;
  serviceCpuS: number | undefined;
  /** The target's CPU seconds by thread: main (JS), tigerbeetle client, libuv pool, V8 GC helpers... */
  serviceThreadsCpuS: Record<string, number>;
  tigerbeetleCpuS: number;
  loadGeneratorCpuS: number;
  machineBusyS: number;
  /** CPU time the hypervisor took from this VM during the phase (all cores). */
  stealS: number;
  /** The heaviest processes that are not ours during the phase. */
  otherProcesses: string[];
  rssPeakMiB: number | undefined;
  rssEndMiB: number | undefined;
  batch: { mean: number; max: number; maxIsBound: boolean; batches: number; meanLatencyMs: number | undefined } | undefined;
  loadavg: number[];
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

  try {
    log('starting a three-replica TigerBeetle cluster');
    cluster = await startCluster({ replicas: 3 });
    const tbPids = findPids('tigerbeetle', 'start', `--addresses=${cluster.addresses.join(',')}`);
    log(`cluster ${cluster.clusterId.toString(16).slice(0, 8)}… on ${cluster.addresses.join(',')} (replica pids ${tbPids.join(',')})`);

    const servicePort = await freePort();
    const profileDir = path.join(BENCH_DIR, 'profiles');
    const nodeArgs: string[] = [];
    if (options.profile) {
      fs.mkdirSync(profileDir, { recursive: true });
      nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=service-${stamp}.cpuprofile`);
    }
    const entry = options.batchStats ? ['--import', 'tsx', path.join(BENCH_DIR, 'service-with-stats.ts')] : [mainJs];
    const serviceEnv: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(servicePort),
      LEDGER_BACKEND: 'tigerbeetle',
      TB_CLUSTER_ID: cluster.clusterId.toString(),
      TB_ADDRESSES: cluster.addresses.join(','),
      JMETER_ENABLED: 'true',
      LOG_LEVEL: 'warn',
      // Embedded stores journal to DATA_DIR: a fresh one per run, never the repository's ./.data.
      DATA_DIR: path.join(logDir, 'data'),
      SERVICE_DIR: options.serviceDir,
    };
    log(`starting the service: node ${[...nodeArgs, ...entry].join(' ')} (port ${servicePort})`);
    service = await startProcess('service', [...nodeArgs, ...entry], serviceEnv, servicePort, path.join(logDir, 'service.log'), '/health');
    const serviceTarget: Target = { kind: 'service', base: service.base, pid: service.pid };

    // Onboarding: the /jmeter endpoint gives each participant hub accounts, a settlement model,
    // a net debit cap of 1e9 and liquidity of 1e9.
    const run = Math.random().toString(16).slice(2, 6);
    const names = Array.from({ length: options.participants }, (_, i) => `bench${run}p${i}`);
    for (const name of names) {
      const answer = await call(service.base, 'POST', '/jmeter/participants/create', { name, currency: CURRENCY });
      if (answer.status !== 200 || answer.body?.newlyCreated !== true) throw new Error(`onboarding ${name} failed: ${answer.status} ${answer.text}`);
    }
    const positionsBefore = await positions(service.base, names);
    log(`onboarded ${names.length} participants (${names[0]}…${names[names.length - 1]}) in ${CURRENCY}`);

    workload = new Workload(names, { conditionPool: 16_384, amountPool: 64 });
    const w = workload;

    const runPhase = async (label: string, target: Target, scenario: Scenario, connections: number, durationS: number, track: boolean): Promise<PhaseRecord> => {
      if (interrupted) throw new Error('interrupted');
      const serviceCpu0 = cpuSeconds(target.pid);
      const threads0 = threadCpuSeconds(target.pid);
      const tbCpu0 = cpuSecondsOf(tbPids);
      const self0 = selfCpuSeconds();
      const machine0 = machineCpuSeconds();
      const metrics0 = target.kind === 'service' ? await batchMetrics(target.base) : undefined;
      const processes0 = allProcesses();
      const started = performance.now();
      const load = await drive({ url: target.base, scenario, target: target.kind, connections, durationS, workload: w, track });
      const wallS = (performance.now() - started) / 1000;
      const processes1 = allProcesses();
      const serviceCpu1 = cpuSeconds(target.pid);
      const threads1 = threadCpuSeconds(target.pid);
      const serviceThreadsCpuS: Record<string, number> = {};
      for (const [name, seconds] of threads1) serviceThreadsCpuS[name] = Number((seconds - (threads0.get(name) ?? 0)).toFixed(2));
      const metrics1 = target.kind === 'service' ? await batchMetrics(target.base) : undefined;
      const record: PhaseRecord = {
        label,
        load,
        wallS,
        serviceCpuS: serviceCpu0 === undefined || serviceCpu1 === undefined ? undefined : serviceCpu1 - serviceCpu0,
        serviceThreadsCpuS,
        tigerbeetleCpuS: cpuSecondsOf(tbPids) - tbCpu0,
        loadGeneratorCpuS: selfCpuSeconds() - self0,
        ...((): { machineBusyS: number; stealS: number } => {
          const machine1 = machineCpuSeconds();
          return { machineBusyS: machine1.busy - machine0.busy, stealS: machine1.steal - machine0.steal };
        })(),
        otherProcesses: topConsumers(processes0, processes1, wallS, new Set([target.pid, process.pid, process.ppid, ...tbPids])),
        rssPeakMiB: memoryMiB(target.pid, 'VmHWM'),
        rssEndMiB: memoryMiB(target.pid, 'VmRSS'),
        batch: metrics0 !== undefined && metrics1 !== undefined ? batchDelta(metrics0, metrics1) : undefined,
        loadavg: os.loadavg(),
      };
      log(
        `${label}: ${(load.transfers / load.durationS).toFixed(0)} transfers/s, ${(load.requests / load.durationS).toFixed(0)} req/s, ` +
          `p50 ${load.latency.all.p50.toFixed(2)} ms, p99 ${load.latency.all.p99.toFixed(2)} ms, errors ${load.errors}, non-2xx ${load.non2xx}, unexpected ${load.unexpected}` +
          (load.errorSamples.length > 0 ? `\n    e.g. ${load.errorSamples.join('\n    e.g. ')}` : ''),
      );
      return record;
    };

    /**
     * Transfers whose completion the load generator did not see (in flight at the end of a phase,
     * or refused): ask the service, finish those still RESERVED, and classify the rest.
     */
    const reconcile = async (label: string, settleMs: number): Promise<void> => {
      await sleep(settleMs);
      const open = [...w.sent.values()].filter((t) => t.state !== 'committed');
      const counts = { open: open.length, committedLate: 0, fulfilledNow: 0, missing: 0, failed: 0 };
      const failures: string[] = [];
      await pool(open, 16, async (t) => {
        const payer = names[t.payer]!;
        const payee = names[t.payee]!;
        const got = await call(service!.base, 'GET', `/transfers/${t.id}`, undefined, { 'fspiop-source': payer });
        if (got.status === 200 && got.body?.transferState === 'COMMITTED') {
          t.state = 'committed';
          counts.committedLate++;
        } else if (got.status === 200 && got.body?.transferState === 'RESERVED') {
          const done = await call(service!.base, 'PUT', `/transfers/${t.id}`, w.fulfilBody(t), {
            ...w.headers(payee, payer),
          });
          if (done.status === 200 && done.body?.transferState === 'COMMITTED') {
            t.state = 'committed';
            counts.fulfilledNow++;
          } else {
            t.state = 'failed';
            counts.failed++;
            failures.push(`${t.id}: fulfil after the phase answered ${done.status} ${done.text.slice(0, 200)}`);
          }
        } else if (got.status === 400 && got.body?.errorInformation?.errorCode === '3208') {
          // Never reached the service (written as the load generator closed its connections).
          t.state = 'sent';
          counts.missing++;
        } else {
          t.state = 'failed';
          counts.failed++;
          failures.push(`${t.id}: ${got.status} ${got.text.slice(0, 200)}`);
        }
      });
      reconciliations.push({ label, ...counts, failures: failures.slice(0, 10) });
      if (counts.open > 0) log(`reconciled after ${label}: ${JSON.stringify(counts)}${failures.length > 0 ? `\n    ${failures.slice(0, 5).join('\n    ')}` : ''}`);
    };

    log(`warm-up: FSPIOP at 16 connections for ${options.warmupS} s (counted in the books, not in the table)`);
    const warmup = await runPhase('warm-up', serviceTarget, 'fspiop', 16, options.warmupS, true);
    await reconcile('warm-up', 300);

    let maxUnansweredAtTeardown = warmup.load.connections;
    if (options.profile) {
      profileWindowWall.start = Date.now();
      phases.push(await runPhase(`profile fspiop c=64`, serviceTarget, 'fspiop', 64, options.profileDurationS, true));
      profileWindowWall.end = Date.now();
      maxUnansweredAtTeardown += 64;
      await reconcile('profile', 300);
    } else {
      for (const c of options.levels) {
        phases.push(await runPhase(`fspiop c=${c}`, serviceTarget, 'fspiop', c, options.durationS, true));
        maxUnansweredAtTeardown += c;
        await reconcile(`fspiop c=${c}`, 300);
      }
      for (const c of options.jmeterLevels) {
        phases.push(await runPhase(`jmeter c=${c}`, serviceTarget, 'jmeter', c, options.jmeterDurationS, true));
        maxUnansweredAtTeardown += c;
        await reconcile(`jmeter c=${c}`, 300);
      }
    }
    // A second look at the transfers the service did not know a moment after their phase.
    await reconcile('final', 1000);

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

    const sample = pickSample(committed, options.sampleGets);
    let sampleBad = 0;
    const sampleErrors: string[] = [];
    await pool(sample, 16, async (t) => {
      const got = await call(service!.base, 'GET', `/transfers/${t.id}`, undefined, { 'fspiop-source': names[t.payee]! });
      if (got.status !== 200 || got.body?.transferState !== 'COMMITTED' || got.body?.fulfilment !== t.fulfilment) {
        sampleBad++;
        if (sampleErrors.length < 3) sampleErrors.push(`${t.id}: ${got.status} ${got.text.slice(0, 160)}`);
      }
    });
    checks.push({ name: `GET /transfers/{id}: a sample of ${sample.length} is COMMITTED with its fulfilment`, pass: sampleBad === 0, detail: sampleBad === 0 ? 'all COMMITTED' : `${sampleBad} wrong: ${sampleErrors.join('; ')}` });

    const expected = new Map<string, bigint>(names.map((n) => [n, 0n]));
    let volume = 0n;
    for (const t of committed) {
      expected.set(names[t.payer]!, expected.get(names[t.payer]!)! + t.amount);
      expected.set(names[t.payee]!, expected.get(names[t.payee]!)! - t.amount);
      volume += t.amount;
    }
    const positionsAfter = await positions(service.base, names);
    const positionRows: string[][] = [];
    let positionsOk = true;
    for (const name of names) {
      const moved = positionsAfter.get(name)! - positionsBefore.get(name)!;
      const want = expected.get(name)!;
      if (moved !== want) positionsOk = false;
      positionRows.push([name, formatMinor(positionsBefore.get(name)!), formatMinor(positionsAfter.get(name)!), formatMinor(moved), formatMinor(want), moved === want ? 'ok' : 'MISMATCH']);
    }
    checks.push({
      name: 'positions moved by exactly the sums sent (per participant, bigint)',
      pass: positionsOk,
      detail: `${committed.length} transfers, volume ${formatMinor(volume)} ${CURRENCY}\n${table(['participant', 'before', 'after', 'moved', 'expected', ''], positionRows)}`,
    });

    checks.push(...(await ledgerChecks(service.base, names, cluster)));

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
    Math.max(0, (p.machineBusyS - (p.serviceCpuS ?? 0) - p.tigerbeetleCpuS - p.loadGeneratorCpuS) / p.wallS).toFixed(2),
    (p.stealS / p.wallS).toFixed(2),
    p.otherProcesses.join(', ') || '-',
  ]);
  const c1 = reports.find((r) => r.load.scenario === 'fspiop' && r.load.target === 'service' && r.load.connections === 1);
  const text = [
    `Benchmark ${startedAt.toISOString()} — ${options.profile ? 'profile' : options.quick ? 'quick' : 'full'} run, service ${git.head}${git.dirtyFiles.length > 0 ? ` + ${git.dirtyFiles.length} uncommitted file(s) in src/package.json` : ''}, ${options.batchStats ? 'bench/service-with-stats.ts launcher' : 'node dist/src/main.js'}, ${os.cpus().length} cores`,
    '',
    mainTable(reports),
    '',
    'Latency by request kind (ms) and where the CPU went (cores = CPU seconds per wall second):',
    latencyTable(reports),
    '',
    table(['phase', 'conc', 'machine busy cores', 'target process', 'its main thread', 'its other threads', 'TB replicas', 'load generator', 'other processes', 'stolen by hypervisor', 'heaviest other processes (cores)'], machineRows),
    '',
    ceilingTable(tb),
    '',
    c1 === undefined ? '' : `Concurrency-1 prepare latency: p50 ${c1.load.latency.prepare.p50.toFixed(2)} ms, p99 ${c1.load.latency.prepare.p99.toFixed(2)} ms (fulfil p50 ${c1.load.latency.fulfil.p50.toFixed(2)} ms)`,
    reports.some((r) => r.load.target === 'service' && r.batch === undefined)
      ? 'Ledger batch size: n/a — the service exposes no /metrics with a ledger_batch_commands histogram (or ledger_batches_total / ledger_batch_commands_total / ledger_batch_commands_max); --batch-stats starts a diagnostic launcher that adds them.'
      : '',
    '',
    'Books:',
    ...checks.map((c) => `  ${c.pass ? 'PASS' : 'FAIL'}  ${c.name}: ${c.detail.replace(/\n/g, '\n        ')}`),
    ...(warnings.length > 0 ? ['', ...warnings.map((w) => `WARNING: ${w}`)] : []),
  ].join('\n');
  process.stdout.write(`\n${text}\n`);
  if (profileSummaryText !== undefined) process.stdout.write(`\n${profileSummaryText}\n`);

  const resultsDir = path.join(BENCH_DIR, 'results');
  fs.mkdirSync(resultsDir, { recursive: true });
  const base = path.join(resultsDir, `${stamp}${options.profile ? '-profile' : options.quick ? '-quick' : ''}`);
  fs.writeFileSync(
    `${base}.json`,
    JSON.stringify(
      {
        startedAt, options, git, warnings, machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memGiB: os.totalmem() / 2 ** 30, node: process.version },
        ledgerEnv: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('LEDGER_'))),
        tigerbeetleCeiling: tb, phases: phases.map((p, i) => ({ ...p, report: reports[i] })), reconciliations, checks, text, profileSummary: profileSummaryText,
      },
      (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value),
      2,
    ),
  );
  if (!options.profile) fs.writeFileSync(`${base}.html`, htmlReport(`tb-central-ledger benchmark ${startedAt.toISOString()}`, reports, tb, text));
  process.stdout.write(`\nwrote ${path.relative(REPO_DIR, `${base}.json`)}${options.profile ? '' : ` and ${path.relative(REPO_DIR, `${base}.html`)}`}\n`);
  fs.rmSync(logDir, { recursive: true, force: true });
  const failed = checks.filter((c) => !c.pass);
  if (failed.length > 0) {
    process.stdout.write(`\nFAIL: ${failed.map((c) => c.name).join('; ')}\n`);
    process.exitCode = 1;
  }
}


function pickSample<T>(items: readonly T[], size: number): T[] {
  if (items.length <= size) return [...items];
  const picked = new Set<number>();
  while (picked.size < size) picked.add(Math.floor(Math.random() * items.length));
  return [...picked].map((i) => items[i]!);
}

main().then(
  // Autocannon and the ledger client may leave handles behind: leave explicitly.
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    process.stderr.write(`benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);

