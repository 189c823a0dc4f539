/**
 * The soak test's parts (bench/soak.ts): its options, the service's /metrics, and the shapes
 * of its samples and per-minute figures.
 */
import { spawnSync } from 'node:child_process';
import { flags, scrapeMetrics } from './common';
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
