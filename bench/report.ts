/** The benchmark's outputs: the console tables and the self-contained HTML chart. */
import { table, fixed, ms } from './common';
import type { LoadResult } from './load';
import type { LedgerBatches } from './phases';
import { SERVICE_EVENTS_PER_TRANSFER, type TbCeiling } from './tb-ceiling';

export interface PhaseReport {
  load: LoadResult;
  transfersPerS: number;
  requestsPerS: number;
  batch: LedgerBatches | undefined;
  cpu: {
    serviceCores: number;
    serviceCpuMsPerTransfer: number | undefined;
    tigerbeetleCores: number;
    loadGeneratorCores: number;
  };
  /** undefined when no transfer completed or the target's CPU could not be read. */
  cpuPerTransfer: CpuPerTransfer | undefined;
  serviceRssPeakMiB: number | undefined;
  serviceRssEndMiB: number | undefined;
  /** Service requests/s ÷ the no-op Fastify's at the same scenario and concurrency. */
  httpRatio: number | undefined;
  /** Service transfers/s ÷ the raw TigerBeetle ceiling's service-equivalent transfers/s. */
  ledgerRatio: number | undefined;
}

/**
 * CPU milliseconds per complete transfer during a phase, by consumer (CPU seconds over the phase
 * × 1000 ÷ transfers completed in it), and the throughput those costs imply on this machine:
 * arithmetic on measured CPU, not measured throughput.
 */
export interface CpuPerTransfer {
  /** The target process: the service, or the no-op server. */
  targetMs: number;
  tigerbeetleMs: number;
  loadGeneratorMs: number;
  /** The rest of the machine's busy time (/proc/stat, steal excluded), never below 0. */
  otherMs: number;
  sumMs: number;
  /** Machine cores × 1000 ÷ sumMs: transfers/s if every core did only this work. */
  machineBoundTransfersPerS: number;
  /**
   * Machine cores × 1000 ÷ targetMs: the target alone, with the replicas and the load generator
   * elsewhere.
   */
  targetOnlyBoundTransfersPerS: number;
}

export function cpuPerTransfer(
  transfers: number,
  machineCores: number,
  cpuS: { target: number; tigerbeetle: number; loadGenerator: number; other: number },
): CpuPerTransfer {
  const ms = (seconds: number): number => (seconds * 1000) / transfers;
  const sumMs = ms(cpuS.target + cpuS.tigerbeetle + cpuS.loadGenerator + cpuS.other);
  return {
    targetMs: ms(cpuS.target),
    tigerbeetleMs: ms(cpuS.tigerbeetle),
    loadGeneratorMs: ms(cpuS.loadGenerator),
    otherMs: ms(cpuS.other),
    sumMs,
    machineBoundTransfersPerS: (machineCores * 1000) / sumMs,
    targetOnlyBoundTransfersPerS: (machineCores * 1000) / ms(cpuS.target),
  };
}

const percent = (ratio: number | undefined): string =>
  ratio === undefined || !Number.isFinite(ratio) ? 'n/a' : `${(ratio * 100).toFixed(1)}%`;

export function mainTable(phases: PhaseReport[]): string {
  return table(
    [
      'scenario',
      'conc',
      'transfers/s',
      'req/s',
      'p50 ms',
      'p99 ms',
      'max ms',
      'err/non2xx',
      'commands/request mean/max',
      'CPU cores',
      'CPU ms/transfer',
      'peak RSS MiB',
      'vs HTTP ceiling',
      'vs TB ceiling',
    ],
    phases.map((p) => [
      p.load.target === 'noop' ? `${p.load.scenario} (no-op)` : p.load.scenario,
      String(p.load.connections),
      fixed(p.transfersPerS),
      fixed(p.requestsPerS),
      ms(p.load.latency.all.p50),
      ms(p.load.latency.all.p99),
      ms(p.load.latency.all.max),
      `${p.load.errors}/${p.load.non2xx + p.load.unexpected}`,
      p.batch === undefined ? 'n/a' : `${p.batch.mean.toFixed(1)}/≤${p.batch.maxBound}`,
      fixed(p.cpu.serviceCores, 2),
      fixed(p.cpu.serviceCpuMsPerTransfer, 3),
      fixed(p.serviceRssPeakMiB),
      percent(p.httpRatio),
      percent(p.ledgerRatio),
    ]),
  );
}

export function latencyTable(phases: PhaseReport[]): string {
  return table(
    [
      'scenario',
      'conc',
      'prepare p50',
      'prepare p99',
      'fulfil p50',
      'fulfil p99',
      'ledger batches/s',
      'ledger batch mean ms',
      'oldest command queued mean ms',
      'TB replicas CPU cores',
      'load generator CPU cores',
    ],
    phases.map((p) => [
      p.load.target === 'noop' ? `${p.load.scenario} (no-op)` : p.load.scenario,
      String(p.load.connections),
      ms(p.load.latency.prepare.p50),
      ms(p.load.latency.prepare.p99),
      p.load.latency.fulfil.count === 0 ? '-' : ms(p.load.latency.fulfil.p50),
      p.load.latency.fulfil.count === 0 ? '-' : ms(p.load.latency.fulfil.p99),
      p.batch === undefined ? 'n/a' : fixed(p.batch.batches / p.load.durationS),
      p.batch?.meanLatencyMs === undefined ? 'n/a' : ms(p.batch.meanLatencyMs),
      p.batch?.meanOldestWaitMs === undefined ? 'n/a' : ms(p.batch.meanOldestWaitMs),
      fixed(p.cpu.tigerbeetleCores, 2),
      fixed(p.cpu.loadGeneratorCores, 2),
    ]),
  );
}

/** One row per service phase, then a line for the no-op ceiling phases. */
export function cpuPerTransferTable(phases: PhaseReport[], machineCores: number): string {
  const perTransfer = (p: PhaseReport, f: (c: CpuPerTransfer) => number, digits: number): string =>
    fixed(p.cpuPerTransfer === undefined ? undefined : f(p.cpuPerTransfer), digits);
  const noop = phases.filter((p) => p.load.target === 'noop');
  return [
    `CPU per complete transfer and what it bounds (ms = CPU seconds in the phase × 1000 ÷ transfers completed in it; bounds = ${machineCores} cores × 1000 ÷ ms: arithmetic on measured CPU, not measured throughput):`,
    table(
      [
        'scenario',
        'conc',
        'transfers/s',
        'service ms',
        'TB replicas ms',
        'load generator ms',
        'other ms',
        'sum ms',
        'bound on this machine (transfers/s)',
        'service-only bound (transfers/s)',
      ],
      phases
        .filter((p) => p.load.target === 'service')
        .map((p) => [
          p.load.scenario,
          String(p.load.connections),
          fixed(p.transfersPerS),
          perTransfer(p, (c) => c.targetMs, 3),
          perTransfer(p, (c) => c.tigerbeetleMs, 3),
          perTransfer(p, (c) => c.loadGeneratorMs, 3),
          perTransfer(p, (c) => c.otherMs, 3),
          perTransfer(p, (c) => c.sumMs, 3),
          perTransfer(p, (c) => c.machineBoundTransfersPerS, 0),
          perTransfer(p, (c) => c.targetOnlyBoundTransfersPerS, 0),
        ]),
    ),
    ...(noop.length === 0
      ? []
      : [
          `No-op ceiling, CPU ms per transfer: ${noop.map((p) => `${p.load.scenario} c=${p.load.connections} no-op server ${perTransfer(p, (c) => c.targetMs, 3)}, load generator ${perTransfer(p, (c) => c.loadGeneratorMs, 3)}`).join('; ')}`,
        ]),
  ].join('\n');
}

export function ceilingTable(tb: TbCeiling | undefined): string {
  if (tb === undefined) return '(TigerBeetle ceiling not measured)';
  return table(
    [
      'ceiling',
      'batch',
      'events',
      'seconds',
      'events/s',
      'pending+post pairs/s',
      `service-equivalent transfers/s (events/${SERVICE_EVENTS_PER_TRANSFER})`,
      'failed events',
    ],
    [
      [
        'raw tigerbeetle-node',
        String(tb.batchSize),
        String(tb.events),
        tb.seconds.toFixed(2),
        fixed(tb.eventsPerS),
        fixed(tb.pairsPerS),
        fixed(tb.serviceEquivalentTransfersPerS),
        String(tb.failedEvents),
      ],
    ],
  );
}

interface Series {
  name: string;
  color: string;
  dashed?: boolean;
  points: { x: number; y: number }[];
}

/** A line chart as SVG: log2 x (concurrency), log10 y. */
function svgChart(title: string, yLabel: string, all: Series[]): string {
  const series = all.filter((s) => s.points.some((p) => p.y > 0));
  const W = 720;
  const legendRows = series.length;
  const H = 340 + legendRows * 18;
  const M = { left: 70, right: 30, top: 36, bottom: 58 + legendRows * 18 };
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const ys = series.flatMap((s) => s.points.map((p) => p.y)).filter((y) => y > 0);
  if (xs.length === 0 || ys.length === 0) return `<p>${title}: no data</p>`;
  const xMin = Math.log2(Math.min(...xs));
  const xMax = Math.max(xMin + 1, Math.log2(Math.max(...xs)));
  const yMin = Math.floor(Math.log10(Math.min(...ys)));
  const yMax = Math.max(yMin + 1, Math.ceil(Math.log10(Math.max(...ys))));
  const px = (x: number): number =>
    M.left + ((Math.log2(x) - xMin) / (xMax - xMin)) * (W - M.left - M.right);
  const py = (y: number): number =>
    H -
    M.bottom -
    ((Math.log10(Math.max(y, 10 ** yMin)) - yMin) / (yMax - yMin)) * (H - M.top - M.bottom);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
  ];
  parts.push(
    `<text x="${W / 2}" y="20" font-size="14" font-weight="bold" text-anchor="middle">${escapeXml(title)}</text>`,
  );
  for (let e = yMin; e <= yMax; e++) {
    for (const m of e < yMax ? [1, 2, 5] : [1]) {
      const y = py(m * 10 ** e);
      parts.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
      parts.push(
        `<text x="${M.left - 6}" y="${y + 4}" text-anchor="end">${formatTick(m * 10 ** e)}</text>`,
      );
    }
  }
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    parts.push(
      `<line x1="${px(x)}" x2="${px(x)}" y1="${M.top}" y2="${H - M.bottom}" stroke="#eee"/>`,
    );
    parts.push(`<text x="${px(x)}" y="${H - M.bottom + 16}" text-anchor="middle">${x}</text>`);
  }
  parts.push(
    `<text x="${(M.left + W - M.right) / 2}" y="${H - M.bottom + 34}" text-anchor="middle">concurrency (connections)</text>`,
  );
  parts.push(
    `<text transform="translate(16 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${escapeXml(yLabel)}</text>`,
  );
  parts.push(
    `<rect x="${M.left}" y="${M.top}" width="${W - M.left - M.right}" height="${H - M.top - M.bottom}" fill="none" stroke="#888"/>`,
  );
  series.forEach((s, i) => {
    const pts = s.points.filter((p) => p.y > 0).sort((a, b) => a.x - b.x);
    if (pts.length === 0) return;
    const dash = s.dashed === true ? ' stroke-dasharray="6 4"' : '';
    parts.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="2"${dash} points="${pts.map((p) => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ')}"/>`,
    );
    for (const p of pts)
      parts.push(
        `<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="3" fill="${s.color}"><title>${escapeXml(s.name)} @ ${p.x}: ${p.y.toFixed(2)}</title></circle>`,
      );
    const ly = H - M.bottom + 52 + i * 18;
    parts.push(
      `<line x1="${M.left}" x2="${M.left + 24}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${dash}/>`,
    );
    parts.push(`<text x="${M.left + 30}" y="${ly + 4}">${escapeXml(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

function formatTick(v: number): string {
  if (v >= 1e6) return `${v / 1e6}M`;
  if (v >= 1e3) return `${v / 1e3}k`;
  return String(v);
}

function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

export function htmlReport(
  title: string,
  phases: PhaseReport[],
  tb: TbCeiling | undefined,
  textTables: string,
): string {
  const pick = (
    scenario: string,
    target: string,
    f: (p: PhaseReport) => number,
  ): { x: number; y: number }[] =>
    phases
      .filter((p) => p.load.scenario === scenario && p.load.target === target)
      .map((p) => ({ x: p.load.connections, y: f(p) }));
  const concurrencies = [...new Set(phases.map((p) => p.load.connections))];
  const throughput: Series[] = [
    {
      name: 'FSPIOP transfers/s',
      color: '#1f77b4',
      points: pick('fspiop', 'service', (p) => p.transfersPerS),
    },
    {
      name: '/jmeter fulfil:true transfers/s',
      color: '#ff7f0e',
      points: pick('jmeter', 'service', (p) => p.transfersPerS),
    },
    {
      name: 'no-op HTTP ceiling (FSPIOP, req/s ÷ 2)',
      color: '#2ca02c',
      dashed: true,
      points: pick('fspiop', 'noop', (p) => p.requestsPerS / 2),
    },
    {
      name: 'no-op HTTP ceiling (jmeter, req/s)',
      color: '#98df8a',
      dashed: true,
      points: pick('jmeter', 'noop', (p) => p.requestsPerS),
    },
  ];
  if (tb !== undefined)
    throughput.push({
      name: `TigerBeetle ceiling (events/s ÷ ${SERVICE_EVENTS_PER_TRANSFER})`,
      color: '#d62728',
      dashed: true,
      points: concurrencies.map((x) => ({ x, y: tb.serviceEquivalentTransfersPerS })),
    });
  const p99: Series[] = [
    {
      name: 'FSPIOP p99 (all requests)',
      color: '#1f77b4',
      points: pick('fspiop', 'service', (p) => p.load.latency.all.p99),
    },
    {
      name: 'FSPIOP prepare p99',
      color: '#9467bd',
      points: pick('fspiop', 'service', (p) => p.load.latency.prepare.p99),
    },
    {
      name: '/jmeter fulfil:true p99',
      color: '#ff7f0e',
      points: pick('jmeter', 'service', (p) => p.load.latency.all.p99),
    },
    {
      name: 'no-op HTTP p99 (FSPIOP)',
      color: '#2ca02c',
      dashed: true,
      points: pick('fspiop', 'noop', (p) => p.load.latency.all.p99),
    },
  ];
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<style>body{font-family:sans-serif;margin:24px;max-width:1100px} pre{background:#f6f6f6;padding:12px;overflow-x:auto;font-size:12px}</style>
</head><body>
<h1>${escapeXml(title)}</h1>
${svgChart('Throughput against concurrency', 'transfers/s (log scale)', throughput)}
${svgChart('p99 latency against concurrency', 'ms (log scale)', p99)}
<h2>Figures</h2>
<pre>${escapeXml(textTables)}</pre>
</body></html>
`;
}
