/**
 * The soak test's parts (bench/soak.ts): its options, the service's /metrics, V8 heap
 * snapshots, and the shapes of its samples and per-minute figures.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { flags, scrapeMetrics } from './common';
import { sleep, type Started } from '../test/support/service-process';
import { type LatencySummary } from './load';

export const OTHER_BENCHMARKS = 'bench/(run|kafka).ts';

export interface Options {
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
  /**
   * MariaDB's InnoDB buffer pool: a production-like size, so that the table of 10 minutes of
   * transfers stays in memory.
   */
  bufferPoolMiB: number;
  sampleGets: number;
  build: boolean;
  forceBuild: boolean;
  wait: boolean;
  heapSnapshots: boolean;
}

export function parseOptions(argv: string[]): Options {
  const { has, value, number } = flags(argv);
  const num = (flag: string, fallback: number): number => number(flag, fallback, true);
  const metadata = value('--metadata') ?? 'mysql';
  if (metadata !== 'mysql' && metadata !== 'embedded')
    throw new Error(`--metadata ${metadata}: mysql or embedded`);
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

// ---------------------------------------------------------------------------------------------
// Processes

export function otherBenchmarks(): string[] {
  const found = spawnSync('pgrep', ['-af', OTHER_BENCHMARKS], { encoding: 'utf8' }).stdout.trim();
  return found === '' ? [] : found.split('\n');
}

/** The service's own memory figures from GET /metrics (prom-client default metrics). */
export interface ServiceMetrics {
  residentBytes?: number;
  heapUsedBytes?: number;
  heapTotalBytes?: number;
  externalBytes?: number;
  /** V8 heap spaces (used bytes): old, new, code, large_object... */
  heapSpacesUsed: Record<string, number>;
  activeHandles?: number;
  /**
   * Number of label sets of http_request_duration_seconds (one histogram per method/route/status).
   */
  requestLabelSets: number;
  /**
   * Sample lines of the whole exposition (comments not counted): grows if some metric gains label
   * sets.
   */
  lines: number;
  /**
   * Cumulative: HTTP requests and their seconds (all routes), ledger batches, their commands and
   * seconds.
   */
  httpCount: number;
  httpSeconds: number;
  /** Per route ("POST /transfers", "PUT /transfers/:id"): requests and seconds. */
  routes: Record<string, { count: number; seconds: number }>;
  ledgerBatches?: number;
  ledgerCommands?: number;
  ledgerSeconds?: number;
}

export async function serviceMetrics(base: string): Promise<ServiceMetrics | undefined> {
  const samples = await scrapeMetrics(base);
  if (samples === undefined) return undefined;
  const result: ServiceMetrics = {
    heapSpacesUsed: {},
    requestLabelSets: 0,
    lines: samples.length,
    httpCount: 0,
    httpSeconds: 0,
    routes: {},
  };
  for (const { name, labels, value } of samples) {
    if (name === 'moja_cl_process_resident_memory_bytes') result.residentBytes = value;
    else if (name === 'moja_cl_nodejs_heap_size_used_bytes') result.heapUsedBytes = value;
    else if (name === 'moja_cl_nodejs_heap_size_total_bytes') result.heapTotalBytes = value;
    else if (name === 'moja_cl_nodejs_external_memory_bytes') result.externalBytes = value;
    else if (name === 'moja_cl_nodejs_active_handles_total') result.activeHandles = value;
    else if (name === 'moja_cl_nodejs_heap_space_size_used_bytes') {
      const space = labels['space'];
      if (space !== undefined) result.heapSpacesUsed[space] = value;
    } else if (
      name === 'http_request_duration_seconds_count' ||
      name === 'http_request_duration_seconds_sum'
    ) {
      const entry = (result.routes[`${labels['method']} ${labels['route']}`] ??= {
        count: 0,
        seconds: 0,
      });
      if (name === 'http_request_duration_seconds_count') {
        result.requestLabelSets++;
        result.httpCount += value;
        entry.count += value;
      } else {
        result.httpSeconds += value;
        entry.seconds += value;
      }
    } else if (name === 'ledger_batch_commands_count') result.ledgerBatches = value;
    else if (name === 'ledger_batch_commands_sum') result.ledgerCommands = value;
    else if (name === 'ledger_batch_duration_seconds_sum') result.ledgerSeconds = value;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Heap snapshots (--heap-snapshots): the service runs with --heapsnapshot-signal=SIGUSR2.

/**
 * Self size and count per constructor (objects, closures, native) or per node type (strings, code,
 * arrays...).
 */
export function summariseSnapshot(file: string): Map<string, { count: number; bytes: number }> {
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
    const key =
      type === 'object' || type === 'closure' || type === 'native'
        ? `${type} ${snapshot.strings[snapshot.nodes[i + nameAt]!]}`
        : `(${type})`;
    const entry = byKey.get(key) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += snapshot.nodes[i + sizeAt]!;
    byKey.set(key, entry);
  }
  return byKey;
}

export async function takeHeapSnapshot(service: Started, dir: string): Promise<string> {
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

export interface Sample {
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
  /**
   * Over the last interval, from the service's /metrics: mean request time inside the service,
   * ledger batches.
   */
  serviceMeanMs: number | undefined;
  servicePrepareMs: number | undefined;
  serviceFulfilMs: number | undefined;
  /**
   * MariaDB, per second over the interval: InnoDB pages read from disk (buffer pool misses),
   * fsyncs.
   */
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

export interface MinuteStats {
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

export interface MinuteReport {
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

export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
