/**
 * The ledger's BatchQueue (src/util/batch-queue.ts) under a modelled closed loop, to compare
 * linger policies where the machine is too busy for the real benchmark to tell them apart:
 * C clients, each sending one ledger command, waiting for its answer, then spending a "think"
 * time (HTTP, validation, journal, the load generator) before the next. The ledger is a sleep of
 * the round trip a batch of n commands took in bench/README.md's quiet run of 2026-11-21
 * (3 replicas, fspiop at 1/16/64/256 connections), and is charged the replica CPU those batches
 * cost there; both are straight-line fits of those four points:
 *
 *   round trip ≈ 0.55 + 0.12·n ms      replica CPU ≈ 0.85 + 0.105·n ms per request
 *
 * A model, not a measurement: it leaves out that CPU the replicas save speeds up everything else
 * on a shared machine. Prints, per policy: commands per request, modelled replica CPU per
 * complete transfer (2 commands), p50/p99 of the ledger wait (queue + round trip), transfers/s.
 *
 * With `--open R`, an open loop instead: commands arrive at R per second (Poisson), whatever the
 * answers' latency, as from many independent clients (a hub's DFSPs, a Kafka topic's backlog):
 * there a linger costs latency, not throughput.
 *
 *   npx tsx bench/batch-model.ts [--clients 64,256] [--seconds 5] [--think-ms 4:8] [--open
 * 2000,5000]
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BatchQueue, type AdaptiveLingerOptions } from '../src/util/batch-queue';
import { flags, runMain } from './common';
import { table } from './report';

const roundTripMs = (n: number): number => 0.55 + 0.12 * n;
const replicaCpuMs = (n: number): number => 0.85 + 0.105 * n;

interface Policy {
  name: string;
  lingerMs: number;
  adaptive?: AdaptiveLingerOptions;
}

const POLICIES: Policy[] = [
  { name: 'no linger (MAX_LINGER_MS=0)' },
  {
    name: 'adaptive ≤10 ms, budget 20 ms, grow at 2',
    adaptive: { maxLingerMs: 10, latencyBudgetMs: 20, growAtItems: 2 },
  },
  {
    name: 'adaptive ≤10 ms, budget 20 ms, grow at 8',
    adaptive: { maxLingerMs: 10, latencyBudgetMs: 20, growAtItems: 8 },
  },
  {
    name: 'adaptive ≤10 ms, budget 20 ms, grow at 16 (default)',
    adaptive: { maxLingerMs: 10, latencyBudgetMs: 20, growAtItems: 16 },
  },
  {
    name: 'adaptive ≤20 ms, budget 40 ms',
    adaptive: { maxLingerMs: 20, latencyBudgetMs: 40, growAtItems: 8 },
  },
  { name: 'fixed linger 5 ms', lingerMs: 5 },
].map((p) => ({ lingerMs: 0, ...p }));

interface Outcome {
  batchMean: number;
  replicaMsPerTransfer: number;
  p50: number;
  p99: number;
  transfersPerS: number;
  lingerEndMs: number;
}

/** `load`: closed loop of that many clients, or open loop of that many commands per second. */
async function simulate(
  policy: Policy,
  load: { clients: number } | { perS: number },
  seconds: number,
  think: [number, number],
): Promise<Outcome> {
  let batches = 0;
  let commands = 0;
  let replicaMs = 0;
  const queue = new BatchQueue<number, number>(
    async (items) => {
      batches++;
      commands += items.length;
      replicaMs += replicaCpuMs(items.length);
      await sleep(roundTripMs(items.length));
      return items;
    },
    {
      maxBatch: 1000,
      maxInFlight: 1,
      lingerMs: policy.lingerMs,
      maxQueued: 100_000,
      timeoutMs: 5000,
      ...(policy.adaptive === undefined ? {} : { adaptive: policy.adaptive }),
    },
    (reason) => new Error(reason),
  );
  const waits: number[] = [];
  const end = performance.now() + seconds * 1000;
  const client = async (): Promise<void> => {
    while (performance.now() < end) {
      await sleep(think[0] + Math.random() * (think[1] - think[0]));
      const sent = performance.now();
      await queue.submit([1]);
      waits.push(performance.now() - sent);
    }
  };
  const openLoop = async (perS: number): Promise<void> => {
    const answers: Promise<void>[] = [];
    let next = performance.now();
    while (next < end) {
      next += -Math.log(1 - Math.random()) * (1000 / perS);
      const lag = next - performance.now();
      if (lag >= 1) await sleep(lag);
      const sent = next;
      answers.push(queue.submit([1]).then(() => void waits.push(performance.now() - sent)));
    }
    await Promise.all(answers);
  };
  await ('clients' in load
    ? Promise.all(Array.from({ length: load.clients }, client))
    : openLoop(load.perS));
  waits.sort((a, b) => a - b);
  const transfers = commands / 2;
  return {
    batchMean: commands / batches,
    replicaMsPerTransfer: replicaMs / transfers,
    p50: waits[Math.floor(waits.length * 0.5)]!,
    p99: waits[Math.floor(waits.length * 0.99)]!,
    transfersPerS: transfers / seconds,
    lingerEndMs: queue.stats().lingerMs,
  };
}

async function main(): Promise<void> {
  const { value } = flags(process.argv.slice(2));
  const open = value('--open')?.split(',').map(Number);
  const loads: ({ clients: number } | { perS: number })[] =
    open !== undefined
      ? open.map((perS) => ({ perS }))
      : (value('--clients') ?? '64,256').split(',').map((c) => ({ clients: Number(c) }));
  const seconds = Number(value('--seconds') ?? 5);
  const think = (value('--think-ms') ?? '4:8').split(':').map(Number) as [number, number];
  const rows: string[][] = [];
  for (const load of loads) {
    let baseline: Outcome | undefined;
    for (const policy of POLICIES) {
      const outcome = await simulate(policy, load, seconds, think);
      baseline ??= outcome;
      rows.push([
        policy.name,
        'clients' in load ? `${load.clients} clients` : `${load.perS} commands/s`,
        outcome.batchMean.toFixed(1),
        outcome.replicaMsPerTransfer.toFixed(3),
        `${((outcome.replicaMsPerTransfer / baseline.replicaMsPerTransfer) * 100).toFixed(0)}%`,
        outcome.p50.toFixed(1),
        outcome.p99.toFixed(1),
        outcome.transfersPerS.toFixed(0),
        outcome.lingerEndMs.toFixed(1),
      ]);
    }
  }
  console.log(
    `Modelled ledger batching (${new Date().toISOString()}), think time ${think[0]}–${think[1]} ms, ${seconds} s per row:`,
  );
  console.log(
    table(
      [
        'policy',
        'load',
        'commands/request',
        'replica ms/transfer (model)',
        'vs no linger',
        'ledger wait p50 ms',
        'p99 ms',
        'transfers/s',
        'linger at end ms',
      ],
      rows,
    ),
  );
}

runMain(main, 'batch model');
