/**
 * What one benchmark phase used, measured at its two ends: CPU per process (service, broker,
 * TigerBeetle replicas, load generator, everything else), the ledger batcher's counters from
 * /metrics, and the HTTP phase (complete FSPIOP transfers with autocannon) that bench/kafka.ts
 * sets beside its Kafka phase.
 */
import fs from 'node:fs';
import { scrapeMetrics } from './common';
import { cpuBetween, cpuSnapshot, findPids, memoryMiB, type CpuSnapshot } from './procstat';
import { drive, type LatencySummary, type Workload } from './workload';

// ---------------------------------------------------------------------------------------------
// Processes (as bench/run.ts)

/** The broker JVM listening on `hostPort` (its server.properties names the listener). */
export function brokerPid(hostPort: string): number | undefined {
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
export async function ledgerMetrics(base: string): Promise<{ batches: number; commands: number; seconds: number } | undefined> {
  const samples = await scrapeMetrics(base);
  const value = (name: string): number | undefined => samples?.find((s) => s.name === name && Object.keys(s.labels).length === 0)?.value;
  const batches = value('ledger_batch_commands_count');
  const commands = value('ledger_batch_commands_sum');
  const seconds = value('ledger_batch_duration_seconds_sum');
  return batches === undefined || commands === undefined ? undefined : { batches, commands, seconds: seconds ?? Number.NaN };
}

export interface LedgerBatches {
  batches: number;
  meanCommands: number;
  meanMs: number;
}

export function ledgerBetween(a: { batches: number; commands: number; seconds: number } | undefined, b: { batches: number; commands: number; seconds: number } | undefined): LedgerBatches | undefined {
  if (a === undefined || b === undefined || b.batches <= a.batches) return undefined;
  const batches = b.batches - a.batches;
  return { batches, meanCommands: (b.commands - a.commands) / batches, meanMs: ((b.seconds - a.seconds) * 1000) / batches };
}

// ---------------------------------------------------------------------------------------------
// CPU accounting per phase

export interface Pids {
  service: number;
  broker: number | undefined;
  tigerbeetle: number[];
}

export function snapshot(pids: Pids): CpuSnapshot {
  return cpuSnapshot({ target: pids.service, tigerbeetle: pids.tigerbeetle, extra: { broker: pids.broker === undefined ? [] : [pids.broker] } });
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
  /** Cores by /proc/stat column: where the machine's busy time went (irq + softirq belong to no process). */
  machineBreakdown: Record<string, number>;
  /** Processes started on the machine during the phase (their CPU is lost if they also ended in it). */
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
// HTTP: complete FSPIOP transfers with autocannon, with a latency per transfer

export interface HttpPhase {
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

export async function runHttpPhase(label: string, base: string, workload: Workload, connections: number, durationS: number, pids: Pids | undefined): Promise<HttpPhase> {
  const metrics0 = await ledgerMetrics(base);
  const before = pids === undefined ? undefined : snapshot(pids);
  const result = await drive({ url: base, scenario: 'fspiop', target: 'service', connections, durationS, workload, track: true });
  const { scenario: _scenario, target: _target, timeouts: _timeouts, statusCodes: _codes, latency, ...counts } = result;
  const load = { ...counts, latency: { complete: latency.complete, prepare: latency.prepare, fulfil: latency.fulfil } };
  const after = pids === undefined ? undefined : snapshot(pids);
  const metrics1 = await ledgerMetrics(base);
  return { label, ...load, transfersPerS: load.transfers / load.durationS, cpu: before === undefined || after === undefined ? undefined : cpuUse(before, after), ledger: ledgerBetween(metrics0, metrics1) };
}

