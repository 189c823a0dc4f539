/**
 * Reads the JMeter results CSV and prints the figures that matter:
 *
 *   npx tsx jmeter/summary.ts <results.csv> [--manifest <data dir>/manifest.json] [--json]
 *
 * Committed transfers per second (over the span of the "transfers" thread group), the latency of
 * a whole transfer (prepare then fulfil, or the single request) at p50/p99, per-label request
 * figures, and the errors with their first failure messages. Exits 1 when any sample failed, or
 * when the samples per label differ from what the data set's manifest says the plan sends (a
 * thread group cut short by `duration` or `loops`): the Maven plugin rounds the error rate to
 * two decimals, so a single error in 20,000 samples would pass its threshold of 0.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

export interface Sample {
  timeStamp: number;
  elapsed: number;
  label: string;
  responseCode: string;
  threadName: string;
  success: boolean;
  failureMessage: string;
  grpThreads: number;
}

/**
 * RFC 4180 CSV as JMeter writes it: quoted fields may hold commas, doubled quotes and line breaks.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  while (i < text.length) {
    let field: string;
    if (text[i] === '"') {
      // Quoted: runs to the next quote not doubled.
      let value = '';
      let j = i + 1;
      for (;;) {
        const quote = text.indexOf('"', j);
        if (quote < 0) throw new Error('results CSV ends inside a quoted field');
        value += text.slice(j, quote);
        if (text[quote + 1] === '"') {
          value += '"';
          j = quote + 2;
        } else {
          i = quote + 1;
          break;
        }
      }
      field = value;
    } else {
      let j = i;
      while (j < text.length && text[j] !== ',' && text[j] !== '\n' && text[j] !== '\r') j++;
      field = text.slice(i, j);
      i = j;
    }
    row.push(field);
    if (text[i] === ',') {
      i++;
      if (i === text.length) row.push('');
    } else {
      if (text[i] === '\r' && text[i + 1] === '\n') i++;
      i++;
      rows.push(row);
      row = [];
    }
  }
  if (row.length > 0) rows.push(row);
  return rows;
}

export function readSamples(csv: string): Sample[] {
  const [header, ...rows] = parseCsv(csv);
  if (header === undefined) return [];
  const column = (name: string): number => {
    const index = header.indexOf(name);
    if (index < 0)
      throw new Error(`results CSV has no ${name} column (header: ${header.join(',')})`);
    return index;
  };
  const c = {
    timeStamp: column('timeStamp'),
    elapsed: column('elapsed'),
    label: column('label'),
    responseCode: column('responseCode'),
    threadName: column('threadName'),
    success: column('success'),
    failureMessage: column('failureMessage'),
    grpThreads: column('grpThreads'),
  };
  return rows
    .filter((r) => r.length === header.length)
    .map((r) => ({
      timeStamp: Number(r[c.timeStamp]),
      elapsed: Number(r[c.elapsed]),
      label: r[c.label]!,
      responseCode: r[c.responseCode]!,
      threadName: r[c.threadName]!,
      success: r[c.success] === 'true',
      failureMessage: r[c.failureMessage]!,
      grpThreads: Number(r[c.grpThreads]),
    }));
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[
    Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  ]!;
}

export interface LabelFigures {
  label: string;
  count: number;
  errors: number;
  p50: number;
  p99: number;
  max: number;
  perSecond: number;
}

export interface Summary {
  samples: number;
  errors: number;
  errorPercent: number;
  seconds: number;
  transfers: {
    committed: number;
    threads: number;
    seconds: number;
    perSecond: number;
    p50: number;
    p99: number;
    max: number;
    requestsPerTransfer: number;
  };
  labels: LabelFigures[];
  failures: { label: string; message: string }[];
  /**
   * Differences from the manifest's samples per action type; empty when it matches or none was
   * given.
   */
  mismatches: string[];
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function threadGroupOf(threadName: string): string {
  return threadName.replace(/ \d+-\d+$/, '');
}

function spanSeconds(samples: Sample[]): number {
  if (samples.length === 0) return 0;
  let start = Infinity;
  let end = -Infinity;
  for (const s of samples) {
    start = Math.min(start, s.timeStamp);
    end = Math.max(end, s.timeStamp + s.elapsed);
  }
  return Math.max(1, end - start) / 1000;
}

export function summarize(samples: Sample[], expected?: Record<string, number>): Summary {
  const errors = samples.filter((s) => !s.success);
  const byLabel = new Map<string, Sample[]>();
  for (const s of samples) pushTo(byLabel, s.label, s);
  const labels = [...byLabel.entries()].map(([label, list]) => {
    const sorted = list.map((s) => s.elapsed).sort((a, b) => a - b);
    return {
      label,
      count: list.length,
      errors: list.filter((s) => !s.success).length,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      max: sorted[sorted.length - 1]!,
      perSecond: list.length / spanSeconds(list),
    };
  });

  // A transfer of the "transfers" thread group is a transfer_prepare_fulfil, or a transfer_prepare
  // and the transfer_fulfil the same thread sends next: its latency runs from the first request's
  // start to the last one's end.
  const group = samples.filter((s) => threadGroupOf(s.threadName) === 'transfers');
  const latencies: number[] = [];
  const byThread = new Map<string, Sample[]>();
  for (const s of group) pushTo(byThread, s.threadName, s);
  for (const list of byThread.values()) {
    list.sort((a, b) => a.timeStamp - b.timeStamp);
    for (let i = 0; i < list.length; i++) {
      const s = list[i]!;
      if (s.label === 'transfer_prepare_fulfil' && s.success) latencies.push(s.elapsed);
      if (s.label === 'transfer_prepare' && list[i + 1]?.label === 'transfer_fulfil') {
        const fulfil = list[i + 1]!;
        if (s.success && fulfil.success)
          latencies.push(fulfil.timeStamp + fulfil.elapsed - s.timeStamp);
        i++;
      }
    }
  }
  latencies.sort((a, b) => a - b);
  const groupSeconds = spanSeconds(group);

  const mismatches: string[] = [];
  if (expected !== undefined) {
    for (const [label, count] of Object.entries(expected)) {
      const got = byLabel.get(label)?.length ?? 0;
      if (got !== count) mismatches.push(`${label}: ${got} samples, the data set has ${count}`);
    }
    for (const label of byLabel.keys())
      if (!(label in expected)) mismatches.push(`${label}: not an action type of the data set`);
  }

  return {
    samples: samples.length,
    errors: errors.length,
    errorPercent: samples.length === 0 ? 0 : (100 * errors.length) / samples.length,
    seconds: spanSeconds(samples),
    transfers: {
      committed: latencies.length,
      threads: group.reduce((max, s) => Math.max(max, s.grpThreads), 0),
      seconds: groupSeconds,
      perSecond: group.length === 0 ? 0 : latencies.length / groupSeconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies.length === 0 ? Number.NaN : latencies[latencies.length - 1]!,
      requestsPerTransfer: latencies.length === 0 ? 0 : group.length / latencies.length,
    },
    labels,
    failures: errors.slice(0, 10).map((s) => ({
      label: s.label,
      message: s.failureMessage.replace(/\s+/g, ' ').slice(0, 300),
    })),
    mismatches,
  };
}

export function formatSummary(summary: Summary): string {
  const t = summary.transfers;
  const lines = [
    `samples ${summary.samples} in ${summary.seconds.toFixed(1)} s, errors ${summary.errors} (${summary.errorPercent.toFixed(3)}%)`,
    `committed transfers: ${t.committed} in ${t.seconds.toFixed(1)} s with ${t.threads} threads = ${t.perSecond.toFixed(0)} transfers/s ` +
      `(${t.requestsPerTransfer.toFixed(0)} request(s) each); latency per transfer p50 ${t.p50} ms, p99 ${t.p99} ms, max ${t.max} ms`,
    '',
    `${'label'.padEnd(26)}${'count'.padStart(8)}${'errors'.padStart(8)}${'p50 ms'.padStart(8)}${'p99 ms'.padStart(8)}${'max ms'.padStart(8)}${'req/s'.padStart(9)}`,
    ...summary.labels.map(
      (l) =>
        `${l.label.padEnd(26)}${String(l.count).padStart(8)}${String(l.errors).padStart(8)}${String(l.p50).padStart(8)}${String(l.p99).padStart(8)}${String(l.max).padStart(8)}${l.perSecond.toFixed(0).padStart(9)}`,
    ),
  ];
  if (summary.failures.length > 0)
    lines.push('', 'first failures:', ...summary.failures.map((f) => `  ${f.label}: ${f.message}`));
  if (summary.mismatches.length > 0)
    lines.push(
      '',
      'samples differ from the data set (a thread group cut short?):',
      ...summary.mismatches.map((m) => `  ${m}`),
    );
  return lines.join('\n') + '\n';
}

export function main(argv: string[]): number {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { manifest: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) {
    process.stderr.write(
      'usage: tsx jmeter/summary.ts <results.csv> [--manifest <manifest.json>] [--json]\n',
    );
    return 2;
  }
  const expected =
    values.manifest === undefined
      ? undefined
      : (
          JSON.parse(readFileSync(values.manifest, 'utf8')) as {
            actionTypes: Record<string, number>;
          }
        ).actionTypes;
  const nonZero =
    expected === undefined
      ? undefined
      : Object.fromEntries(Object.entries(expected).filter(([, n]) => n > 0));
  const summary = summarize(readSamples(readFileSync(positionals[0]!, 'utf8')), nonZero);
  process.stdout.write(
    values.json === true ? JSON.stringify(summary, null, 2) + '\n' : formatSummary(summary),
  );
  return summary.errors === 0 && summary.mismatches.length === 0 && summary.samples > 0 ? 0 : 1;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
