/**
 * How long one `set` of a spilled TieredTable (src/util/tiered-table.ts: the embedded ledger's id
 * tables and the metadata's record indexes) can hold the event loop as keys pile up: the service
 * calls `set` inline while answering a request, so the slowest set is a stall every request in
 * flight waits out. Random 128-bit keys, as transfer ids and their hashes are; 3 value words, as
 * the record index has. Baseline in the same run: the same keys into a table without spill (all
 * in memory, no runs), whose slowest sets are its hash table doubling.
 *
 *   npx tsx bench/tiered-stall.ts [--keys 1048576] [--hot-entries 65536] [--over-ms 5]
 */
import { randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TieredTable } from '../src/util/tiered-table';
import { flags, machineDescription, runMain } from './common';
import { table } from './report';

interface Timings {
  totalMs: number;
  /** Sets slower than the threshold: [keys held before it, ms]. */
  slow: [number, number][];
  maxMs: number;
  p999Ms: number;
  runs: number;
}

function measure(
  keys: readonly Uint32Array[],
  hotEntries: number | undefined,
  overMs: number,
): Timings {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tiered-stall-'));
  const tiered = new TieredTable(
    3,
    hotEntries === undefined ? undefined : { dir, name: 'stall', hotEntries },
  );
  const values = new Uint32Array(3);
  const times = new Float64Array(keys.length);
  const slow: [number, number][] = [];
  try {
    for (let i = 0; i < keys.length; i++) {
      values[0] = i;
      const started = process.hrtime.bigint();
      tiered.set(keys[i]!, values);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      times[i] = ms;
      if (ms > overMs) slow.push([i, ms]);
    }
    const runs = tiered.runCount;
    const sorted = Float64Array.from(times).sort();
    return {
      totalMs: times.reduce((a, b) => a + b, 0),
      slow,
      maxMs: sorted[sorted.length - 1]!,
      p999Ms: sorted[Math.floor(sorted.length * 0.999)]!,
      runs,
    };
  } finally {
    tiered.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = flags(process.argv.slice(2));
  const count = args.number('--keys', 1_048_576, true);
  const hotEntries = args.number('--hot-entries', 65_536, true);
  const overMs = args.number('--over-ms', 5, true);
  const machine = machineDescription();
  console.log(
    `TieredTable set stalls, ${new Date().toISOString()}: ${count} random keys, hot tier ${hotEntries}, ${machine.cpus} cores, node ${machine.node}`,
  );
  const keys = Array.from({ length: count }, () => randomFillSync(new Uint32Array(4)));
  const inMemory = measure(keys, undefined, overMs);
  const spilled = measure(keys, hotEntries, overMs);
  const row = (name: string, t: Timings): string[] => [
    name,
    t.totalMs.toFixed(0),
    ((t.totalMs * 1000) / count).toFixed(2),
    t.p999Ms.toFixed(3),
    t.maxMs.toFixed(1),
    String(t.slow.length),
    String(t.runs),
  ];
  console.log(
    table(
      [
        'table',
        'total ms',
        'µs per set',
        'p99.9 ms',
        'slowest set ms',
        `sets over ${overMs} ms`,
        'runs at the end',
      ],
      [
        row('in memory (no spill, baseline)', inMemory),
        row(`spilled, hot tier ${hotEntries}`, spilled),
      ],
    ),
  );
  console.log(
    `slowest set, spilled ÷ in memory: ${(spilled.maxMs / inMemory.maxMs).toFixed(2)}×; total, spilled ÷ in memory: ${(spilled.totalMs / inMemory.totalMs).toFixed(2)}×`,
  );
  console.log(`sets of the spilled table over ${overMs} ms (keys held before the set: ms):`);
  console.log(spilled.slow.map(([at, ms]) => `${at}: ${ms.toFixed(1)}`).join(', ') || '(none)');
}

runMain(main);
