/**
 * The soak test's report (bench/soak.ts): per-minute and memory tables, the RSS verdict, the
 * checks, the text printed and the JSON result written.
 */
import os from 'node:os';
import path from 'node:path';
import {
  checkLines,
  failOnChecks,
  gitLabel,
  machineDescription,
  writeResult,
  type Check,
  type GitDescription,
  table,
  fixed,
  ms,
} from './common';
import { median, type MinuteReport, type Options, type Sample } from './soak-parts';
import { REPO_DIR } from '../test/support/service-process';
import { type LoadResult } from './load';

/** What a finished soak run hands to its report. */
export interface SoakRun {
  options: Options;
  startedAt: Date;
  stamp: string;
  git: GitDescription;
  warnings: string[];
  checks: Check[];
  samples: Sample[];
  minutes: MinuteReport[];
  peak: LoadResult | undefined;
  peakWarmup: LoadResult | undefined;
  targetRate: number;
  soakWallS: number;
  soakTransfers: number;
  maxBacklog: number;
  mysqlRows: string | undefined;
  reconciliations: Record<string, unknown>[];
}

/** Prints the report, writes the result file, and fails the process on a failed check. */
export function soakReport(run: SoakRun): void {
  const {
    options,
    startedAt,
    stamp,
    git,
    warnings,
    checks,
    samples,
    minutes,
    peak,
    peakWarmup,
    targetRate,
    soakWallS,
    soakTransfers,
    maxBacklog,
    mysqlRows,
    reconciliations,
  } = run;
  const minuteTable = table(
    [
      'minute',
      'transfers',
      'transfers/s',
      'req/s',
      'err/non2xx',
      'p50 ms',
      'p99 ms',
      'max ms',
      'wire p50',
      'wire p99',
      'RSS MiB min/median/max',
      'heap used MiB (end)',
      'service cores',
      'machine busy',
      'others',
      'stolen',
      'max in flight',
    ],
    minutes.map((m) => [
      String(m.minute),
      String(m.transfers),
      fixed(m.transfersPerS),
      fixed(m.requestsPerS),
      `${m.errors}/${m.non2xx + m.unexpected}`,
      ms(m.latency.p50),
      ms(m.latency.p99),
      ms(m.latency.max),
      ms(m.wireLatency.p50),
      ms(m.wireLatency.p99),
      `${fixed(m.rssMinMiB)}/${fixed(m.rssMedianMiB)}/${fixed(m.rssMaxMiB)}`,
      fixed(m.heapUsedEndMiB, 1),
      fixed(m.serviceCores, 2),
      fixed(m.machineBusyCores, 2),
      fixed(m.otherCores, 2),
      fixed(m.stealCores, 2),
      String(m.maxInFlight),
    ]),
  );
  // RSS and the heap saw-tooth with garbage collection (±20 % between two samples 10 s apart):
  // levels are the median of a minute's samples, the warm-up's last minute against the run's last.
  const warmupS = options.warmupMinutes * 60;
  const totalS = Math.min(options.minutes * 60, soakWallS || options.minutes * 60);
  const warmWindow = samples.filter((s) => s.t > warmupS - 60 + 0.5 && s.t <= warmupS + 0.5);
  const endWindow = samples.filter((s) => s.t > Math.max(warmupS + 0.5, totalS - 60 + 0.5));
  const warm = warmWindow.at(-1) ?? samples[0];
  const end = samples.at(-1);
  const after = samples.filter((s) => warm !== undefined && s.t >= warm.t);
  const level = (window: Sample[], f: (s: Sample) => number | undefined): number | undefined =>
    median(window.map(f).filter((v): v is number => v !== undefined));
  const rssWarm = level(warmWindow, (s) => s.rssMiB);
  const rssEnd = level(endWindow, (s) => s.rssMiB);
  const rssMax = Math.max(...samples.map((s) => s.rssMiB ?? 0));
  const hwm = end?.hwmMiB;
  const growth = rssWarm === undefined || rssEnd === undefined ? Number.NaN : rssEnd / rssWarm - 1;
  const sampleGrowth =
    warm?.rssMiB !== undefined && end?.rssMiB !== undefined
      ? end.rssMiB / warm.rssMiB - 1
      : Number.NaN;
  const maxGrowth =
    rssWarm === undefined ? Number.NaN : Math.max(...after.map((s) => s.rssMiB ?? 0)) / rssWarm - 1;
  const slope = (f: (s: Sample) => number | undefined): number => {
    // MiB per minute after warm-up (least squares).
    const points = after
      .map((s) => [s.t / 60, f(s)] as const)
      .filter((p): p is readonly [number, number] => p[1] !== undefined);
    if (points.length < 2) return Number.NaN;
    const mx = points.reduce((n, p) => n + p[0], 0) / points.length;
    const my = points.reduce((n, p) => n + p[1], 0) / points.length;
    const sxx = points.reduce((n, p) => n + (p[0] - mx) ** 2, 0);
    return sxx === 0 ? Number.NaN : points.reduce((n, p) => n + (p[0] - mx) * (p[1] - my), 0) / sxx;
  };
  // Transfers between the middles of the two windows, for MiB per 1,000 transfers.
  const transfersBetween =
    (level(endWindow, (s) => s.transfersDone) ?? 0) -
    (level(warmWindow, (s) => s.transfersDone) ?? 0);
  const memoryRow = (label: string, f: (s: Sample) => number | undefined): string[] => {
    const a = level(warmWindow, f);
    const b = level(endWindow, f);
    return [
      label,
      fixed(a, 1),
      fixed(warm === undefined ? undefined : f(warm), 1),
      fixed(b, 1),
      fixed(end === undefined ? undefined : f(end), 1),
      fixed(Math.max(...samples.map((s) => f(s) ?? 0)), 1),
      fixed(slope(f), 2),
      fixed(
        a === undefined || b === undefined || transfersBetween <= 0
          ? undefined
          : ((b - a) / transfersBetween) * 1000,
        3,
      ),
    ];
  };
  const memoryRows = [
    memoryRow('RSS (VmRSS)', (s) => s.rssMiB),
    memoryRow('V8 heap used', (s) => s.heapUsedMiB),
    memoryRow('V8 heap total', (s) => s.heapTotalMiB),
    memoryRow('external (+ array buffers)', (s) => s.externalMiB),
    ...Object.keys(end?.heapSpacesUsedMiB ?? {})
      .filter((space) => samples.some((s) => (s.heapSpacesUsedMiB[space] ?? 0) >= 0.5))
      .map((space) => memoryRow(`  heap space ${space}`, (s) => s.heapSpacesUsedMiB[space])),
    ...(options.metadata === 'mysql' ? [memoryRow('MariaDB RSS', (s) => s.mariadbRssMiB)] : []),
  ];
  const memoryTable = table(
    [
      'MiB',
      'warm-up minute median',
      `sample t=${fixed(warm?.t)} s`,
      'last minute median',
      `sample t=${fixed(end?.t)} s`,
      'max',
      'slope after warm-up MiB/min',
      'MiB per 1,000 transfers (medians)',
    ],
    memoryRows,
  );
  const sampleTable = table(
    [
      't s',
      'transfers',
      'RSS MiB',
      'heap used',
      'heap total',
      'external',
      'svc cores',
      'main thr',
      'replicas',
      'mariadb',
      'loadgen',
      'machine',
      'others',
      'stolen',
      'svc ms',
      'prepare ms',
      'fulfil ms',
      'ledger cmds/batch',
      'ledger batch ms',
      ...(options.metadata === 'mysql' ? ['db disk reads/s', 'db fsyncs/s'] : []),
      'in flight',
      'backlog',
      'label sets',
      'heaviest others',
    ],
    samples.map((s) => [
      fixed(s.t),
      String(s.transfersDone),
      fixed(s.rssMiB, 1),
      fixed(s.heapUsedMiB, 1),
      fixed(s.heapTotalMiB, 1),
      fixed(s.externalMiB, 1),
      fixed(s.serviceCores, 2),
      fixed(s.serviceMainThreadCores, 2),
      fixed(s.replicaCores, 2),
      fixed(s.mariadbCores, 2),
      fixed(s.loadGeneratorCores, 2),
      fixed(s.machineBusyCores, 2),
      fixed(s.otherCores, 2),
      fixed(s.stealCores, 2),
      fixed(s.serviceMeanMs, 1),
      fixed(s.servicePrepareMs, 1),
      fixed(s.serviceFulfilMs, 1),
      fixed(s.ledgerCommandsPerBatch, 1),
      fixed(s.ledgerBatchMs, 1),
      ...(options.metadata === 'mysql' ? [fixed(s.dbDiskReadsPerS), fixed(s.dbFsyncsPerS)] : []),
      String(s.inFlightTransfers),
      String(s.backlog),
      fixed(s.requestLabelSets),
      s.otherProcesses.join(', ') || '-',
    ]),
  );
  const rssFlat = Number.isFinite(growth) && growth <= 0.1;
  const rssSummary =
    `warm-up minute median ${fixed(rssWarm, 1)} MiB → last minute median ${fixed(rssEnd, 1)} MiB: ${growth >= 0 ? '+' : ''}${fixed(growth * 100, 1)} %; ` +
    `single samples ${fixed(warm?.rssMiB, 1)} MiB (t=${fixed(warm?.t)} s) → ${fixed(end?.rssMiB, 1)} MiB (t=${fixed(end?.t)} s): ${sampleGrowth >= 0 ? '+' : ''}${fixed(sampleGrowth * 100, 1)} %; ` +
    `largest sample after warm-up ${fixed(maxGrowth * 100, 1)} % above the warm-up median; trend ${fixed(
      slope((s) => s.rssMiB),
      2,
    )} MiB/min`;
  // Both stores: the embedded one keeps only open records in memory (README "Metadata").
  checks.push({
    name: 'RSS flat: no growth beyond 10 % after warm-up (minute medians)',
    pass: rssFlat,
    detail: rssSummary,
  });
  const peakRate = peak === undefined ? Number.NaN : peak.transfers / peak.durationS;
  const soakRate = soakWallS > 0 ? soakTransfers / soakWallS : Number.NaN;
  checks.push({
    name: `the load held the target rate (≥ 98 % of ${fixed(targetRate, 1)} transfers/s)`,
    pass: soakRate >= 0.98 * targetRate,
    detail: `${fixed(soakRate, 1)} transfers/s achieved; the schedule's largest backlog ${maxBacklog} transfers (the service falling behind, or the load generator starved of CPU)`,
  });
  const text = [
    `Soak ${startedAt.toISOString()} — ${options.minutes} min, metadata ${options.metadata}, service ${gitLabel(git)}, node dist/src/main.js, ${os.cpus().length} cores`,
    '',
    `Peak (fspiop, ${options.peakConnections} connections, ${options.peakSeconds} s): ${fixed(peakRate)} transfers/s, p50 ${fixed(peak?.latency.all.p50, 2)} ms, p99 ${fixed(peak?.latency.all.p99, 2)} ms, errors/non-2xx ${peak?.errors ?? 'n/a'}/${peak === undefined ? 'n/a' : peak.non2xx + peak.unexpected}`,
    `Soak target ${options.rate === undefined ? `${(options.ratio * 100).toFixed(0)} %` : 'fixed rate'}: ${fixed(targetRate, 1)} transfers/s (${fixed(2 * targetRate)} req/s, paced); achieved ${fixed(soakRate, 1)} transfers/s, ${soakTransfers} complete transfers in ${fixed(soakWallS, 1)} s; load generator's largest backlog ${maxBacklog}`,
    '',
    minuteTable,
    '',
    `Memory of the service (warm-up = the first ${options.warmupMinutes} min of the soak; ${transfersBetween} transfers between the two windows' middles):`,
    memoryTable,
    `RSS: ${rssSummary}; max sampled ${fixed(rssMax, 1)} MiB, peak RSS since start (VmHWM, incl. the peak phase) ${fixed(hwm, 1)} MiB` +
      ` — target (≤ 10 %): ${rssFlat ? 'MET' : 'NOT MET'}`,
    `prom-client: ${fixed(end?.requestLabelSets)} http_request_duration_seconds label sets at the end (${fixed(warm?.requestLabelSets)} at warm-up), ${fixed(end?.metricsLines)} exposition lines (${fixed(warm?.metricsLines)})`,
    ...(mysqlRows === undefined ? [] : [`MariaDB transfers rows by state: ${mysqlRows}`]),
    '',
    `Samples every ${options.sampleSeconds} s (cores = CPU seconds per wall second; label sets = http_request_duration_seconds label sets):`,
    sampleTable,
    '',
    ...checkLines(checks, warnings),
  ].join('\n');
  process.stdout.write(`\n${text}\n`);

  const file = writeResult(`soak-${stamp}${options.metadata === 'embedded' ? '-embedded' : ''}`, {
    startedAt,
    options,
    git,
    warnings,
    machine: machineDescription(),
    peak: peak === undefined ? undefined : { ...peak, transfersPerS: peakRate },
    peakWarmup,
    soak: {
      targetTransfersPerS: targetRate,
      achievedTransfersPerS: soakRate,
      transfers: soakTransfers,
      wallS: soakWallS,
      maxBacklog,
    },
    memory: {
      warmupEnd: warm,
      end,
      rssGrowth: growth,
      rssMaxGrowthAfterWarmup: maxGrowth,
      rssMaxMiB: rssMax,
      vmHwmMiB: hwm,
      rssSlopeMiBPerMin: slope((s) => s.rssMiB),
      rssWarmupMedianMiB: rssWarm,
      rssLastMinuteMedianMiB: rssEnd,
      rssSampleGrowth: sampleGrowth,
      transfersBetweenWindows: transfersBetween,
      table: memoryRows,
    },
    minutes,
    samples,
    mysqlRows,
    reconciliations,
    checks,
    text,
  });
  process.stdout.write(`\nwrote ${path.relative(REPO_DIR, file)}\n`);
  failOnChecks(checks);
}
