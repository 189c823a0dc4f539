/**
 * What one benchmark phase used, measured at its two ends: CPU per process (service, broker,
 * TigerBeetle replicas, load generator, everything else), the ledger batcher's counters from
 * /metrics, bench/run.ts's phase (one scenario at one concurrency against the service or the
 * no-op server), and the HTTP phase (complete FSPIOP transfers with autocannon) that
 * bench/kafka.ts sets beside its Kafka phase.
 */
import fs from 'node:fs';
import os from 'node:os';
import { scrapeMetrics } from './common';
import { cpuBetween, cpuSnapshot, findPids, memoryMiB, type CpuSnapshot } from './procstat';
import { drive, type LoadResult, type Scenario } from './load';
import { type Workload } from '../test/support/workload';

// ---------------------------------------------------------------------------------------------
// Processes (as bench/run.ts)

/** The broker JVM listening on `hostPort` (its server.properties names the listener). */
export function brokerPid(hostPort: string): number | undefined {
  for (const pid of findPids('kafka.Kafka')) {
    try {
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const properties = args.find((a) => a.endsWith('server.properties'));
      if (properties === undefined) continue;
      const listeners = fs.readFileSync(properties, 'utf8');
      if (
        [`PLAINTEXT://${hostPort}\n`, `PLAINTEXT://${hostPort},`].some((l) => listeners.includes(l))
      )
        return pid;
    } catch {
      // gone
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// CPU accounting per phase

export interface Pids {
  service: number;
  broker: number | undefined;
  tigerbeetle: number[];
}

export function snapshot(pids: Pids): CpuSnapshot {
  return cpuSnapshot({
    target: pids.service,
    tigerbeetle: pids.tigerbeetle,
    extra: { broker: pids.broker === undefined ? [] : [pids.broker] },
  });
}

export interface CpuUse {
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
  /**
   * Cores by /proc/stat column: where the machine's busy time went (irq + softirq belong to no
   * process).
   */
  machineBreakdown: Record<string, number>;
  /**
   * Processes started on the machine during the phase (their CPU is lost if they also ended in it).
   */
  forks: number;
  /** Every process (kernel threads too) that used ≥ 0.005 cores, ours included. */
  allConsumers: string[];
  serviceRssPeakMiB: number | undefined;
}

/** A phase's CPU in cores, from the snapshots at its ends. */
export function cpuUse(before: CpuSnapshot, after: CpuSnapshot): CpuUse {
  const used = cpuBetween(before, after);
  const cores = (seconds: number): number => seconds / used.wallS;
  const service = before.pids.target;
  return {
    wallS: used.wallS,
    service: cores(used.target ?? Number.NaN),
    serviceMain: cores(used.targetThreads['main'] ?? 0),
    broker:
      (before.pids.extra?.['broker'] ?? []).length === 0
        ? undefined
        : cores(used.extra['broker'] ?? 0),
    tigerbeetle: cores(used.tigerbeetle),
    loadGenerator: cores(used.loadGenerator),
    machine: cores(used.machineBusy),
    others: cores(used.others),
    steal: cores(used.steal),
    heaviestOthers: used.heaviestOthers,
    machineBreakdown: Object.fromEntries(
      Object.entries(used.machineColumns).map(([name, seconds]) => [
        name,
        Number(cores(seconds).toFixed(3)),
      ]),
    ),
    forks: used.forks,
    allConsumers: used.allConsumers,
    serviceRssPeakMiB: memoryMiB(service, 'VmHWM'),
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP: complete FSPIOP transfers with autocannon, with a latency per transfer

export interface HttpPhase extends LoadResult {
  label: string;
  transfersPerS: number;
  cpu: CpuUse | undefined;
  ledger: LedgerBatches | undefined;
}

export async function runHttpPhase(
  label: string,
  base: string,
  workload: Workload,
  connections: number,
  durationS: number,
  pids: Pids | undefined,
): Promise<HttpPhase> {
  const metrics0 = await batchMetrics(base);
  const before = pids === undefined ? undefined : snapshot(pids);
  const result = await drive({
    url: base,
    scenario: 'fspiop',
    target: 'service',
    connections,
    durationS,
    workload,
    track: true,
  });
  const after = pids === undefined ? undefined : snapshot(pids);
  const metrics1 = await batchMetrics(base);
  return {
    label,
    ...result,
    transfersPerS: result.transfers / result.durationS,
    cpu: before === undefined || after === undefined ? undefined : cpuUse(before, after),
    ledger: batchDelta(metrics0, metrics1),
  };
}

// ---------------------------------------------------------------------------------------------
// bench/run.ts's phase: one scenario at one concurrency, with the ledger batch histograms

interface BatchMetrics {
  batches: number;
  commands: number;
  /** Cumulative histogram buckets of commands per batch (upper bound → count). */
  buckets: Map<number, number>;
  latencyMsTotal: number | undefined;
  /** Sum of each batch's oldest command's wait in the queue (ms), where the service reports it. */
  oldestWaitMsTotal: number | undefined;
}

/**
 * The service's ledger batch histograms from GET /metrics (src/handlers/metrics.ts), if it answers.
 */
export async function batchMetrics(base: string): Promise<BatchMetrics | undefined> {
  const samples = await scrapeMetrics(base);
  if (samples === undefined) return undefined;
  const values = new Map<string, number>();
  const buckets = new Map<number, number>();
  for (const { name, labels, value } of samples) {
    if (name === 'ledger_batch_commands_bucket') {
      const le = labels['le'];
      if (le !== undefined)
        buckets.set(le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), value);
      continue;
    }
    if (Object.keys(labels).length === 0) values.set(name, value);
  }
  const batches = values.get('ledger_batch_commands_count');
  const commands = values.get('ledger_batch_commands_sum');
  if (batches === undefined || commands === undefined) return undefined;
  const seconds = values.get('ledger_batch_duration_seconds_sum');
  const waited = values.get('ledger_batch_oldest_wait_seconds_total');
  return {
    batches,
    commands,
    buckets,
    latencyMsTotal: seconds === undefined ? undefined : seconds * 1000,
    oldestWaitMsTotal: waited === undefined ? undefined : waited * 1000,
  };
}

/** The ledger's requests to TigerBeetle over a phase, from /metrics. */
export interface LedgerBatches {
  /** Commands per request, mean. */
  mean: number;
  /** The smallest histogram bucket bound holding every request of the phase. */
  maxBound: number;
  batches: number;
  /** Round trip of a request, mean; undefined where the service does not report it. */
  meanLatencyMs: number | undefined;
  /**
   * How long a request's oldest command waited in the queue, mean (a free slot, then the linger);
   * undefined where the service does not report it.
   */
  meanOldestWaitMs: number | undefined;
}

/** Mean batch between two scrapes, and the bucket bound ("≤ 64") of the largest. */
export function batchDelta(
  before: BatchMetrics | undefined,
  after: BatchMetrics | undefined,
): LedgerBatches | undefined {
  if (before === undefined || after === undefined) return undefined;
  const batches = after.batches - before.batches;
  if (batches <= 0) return undefined;
  // The histogram gives no exact maximum: the smallest bucket bound that holds every batch of the
  // phase.
  const bounds = [...after.buckets.keys()].sort((a, b) => a - b);
  const max =
    bounds.find((le) => (after.buckets.get(le) ?? 0) - (before.buckets.get(le) ?? 0) >= batches) ??
    Number.NaN;
  return {
    mean: (after.commands - before.commands) / batches,
    maxBound: max,
    batches,
    meanLatencyMs:
      after.latencyMsTotal === undefined || before.latencyMsTotal === undefined
        ? undefined
        : (after.latencyMsTotal - before.latencyMsTotal) / batches,
    meanOldestWaitMs:
      after.oldestWaitMsTotal === undefined || before.oldestWaitMsTotal === undefined
        ? undefined
        : (after.oldestWaitMsTotal - before.oldestWaitMsTotal) / batches,
  };
}

/** What a phase drives: the service, or the no-op Fastify server. */
export interface Target {
  kind: 'service' | 'noop';
  base: string;
  pid: number;
}

export interface PhaseSpec {
  label: string;
  scenario: Scenario;
  connections: number;
  durationS: number;
}

export interface PhaseRecord {
  label: string;
  /**
   * Which of the run's clusters the phase ran on (bench/run-cluster.ts); undefined for the no-op
   * server's phases.
   */
  cluster?: number;
  load: LoadResult;
  wallS: number;
  /**
   * Date.now() at the phase's start and end (a profile's window is counted back from the service's
   * exit).
   */
  wallClock: { start: number; end: number };
  serviceCpuS: number | undefined;
  /**
   * The target's CPU seconds by thread: main (JS), tigerbeetle client, libuv pool, V8 GC helpers...
   */
  serviceThreadsCpuS: Record<string, number>;
  tigerbeetleCpuS: number;
  loadGeneratorCpuS: number;
  machineBusyS: number;
  /** CPU time the hypervisor took from this VM during the phase (all cores). */
  stealS: number;
  /** The machine's busy CPU seconds that none of the measured processes account for. */
  otherCpuS: number;
  /** The heaviest processes that are not ours during the phase. */
  otherProcesses: string[];
  rssPeakMiB: number | undefined;
  rssEndMiB: number | undefined;
  batch: LedgerBatches | undefined;
  loadavg: number[];
}

/**
 * Drives one phase and reads what it used. `tigerbeetlePids`: the replicas of the cluster the
 * target talks to now (every cluster of a run has its own), [] when none is up.
 */
export async function measurePhase(
  spec: PhaseSpec,
  target: Target,
  workload: Workload,
  tigerbeetlePids: readonly number[],
  track: boolean,
  log: (message: string) => void,
): Promise<PhaseRecord> {
  const { label, scenario, connections, durationS } = spec;
  const metrics0 = target.kind === 'service' ? await batchMetrics(target.base) : undefined;
  const start = Date.now();
  const cpu0 = cpuSnapshot({ target: target.pid, tigerbeetle: tigerbeetlePids });
  const load = await drive({
    url: target.base,
    scenario,
    target: target.kind,
    connections,
    durationS,
    workload,
    track,
  });
  const cpu = cpuBetween(cpu0, cpuSnapshot(cpu0.pids));
  const end = Date.now();
  const metrics1 = target.kind === 'service' ? await batchMetrics(target.base) : undefined;
  log(
    `${label}: ${(load.transfers / load.durationS).toFixed(0)} transfers/s, ${(load.requests / load.durationS).toFixed(0)} req/s, ` +
      `p50 ${load.latency.all.p50.toFixed(2)} ms, p99 ${load.latency.all.p99.toFixed(2)} ms, errors ${load.errors}, non-2xx ${load.non2xx}, unexpected ${load.unexpected}` +
      (load.errorSamples.length > 0 ? `\n    e.g. ${load.errorSamples.join('\n    e.g. ')}` : ''),
  );
  return {
    label,
    load,
    wallS: cpu.wallS,
    wallClock: { start, end },
    serviceCpuS: cpu.target,
    serviceThreadsCpuS: Object.fromEntries(
      Object.entries(cpu.targetThreads).map(([name, seconds]) => [
        name,
        Number(seconds.toFixed(2)),
      ]),
    ),
    tigerbeetleCpuS: cpu.tigerbeetle,
    loadGeneratorCpuS: cpu.loadGenerator,
    machineBusyS: cpu.machineBusy,
    stealS: cpu.steal,
    otherCpuS: cpu.others,
    otherProcesses: cpu.heaviestOthers,
    rssPeakMiB: memoryMiB(target.pid, 'VmHWM'),
    rssEndMiB: memoryMiB(target.pid, 'VmRSS'),
    batch: batchDelta(metrics0, metrics1),
    loadavg: os.loadavg(),
  };
}
