import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { BatchQueue, LINGER_STEP_MS, type BatchQueueOptions } from '../../src/util/batch-queue';

const unavailable = (reason: string): Error => new Error(`unavailable: ${reason}`);

/**
 * A queue over an executor that answers each item with its double after `delayMs`, recording each
 * batch.
 */
function queueOf(
  options: Partial<BatchQueueOptions>,
  delayMs = 0,
): { queue: BatchQueue<number, number>; batches: number[][]; sentAt: number[] } {
  const batches: number[][] = [];
  const sentAt: number[] = [];
  const queue = new BatchQueue<number, number>(
    async (items) => {
      batches.push(items);
      sentAt.push(performance.now());
      if (delayMs > 0) await sleep(delayMs);
      return items.map((i) => 2 * i);
    },
    { maxBatch: 100, maxInFlight: 1, lingerMs: 0, maxQueued: 1000, timeoutMs: 5000, ...options },
    unavailable,
  );
  return { queue, batches, sentAt };
}

const ADAPTIVE = { maxLingerMs: 3, latencyBudgetMs: 1000, growAtItems: 4 };

test('under load the linger grows by a step per full-enough batch up to maxLingerMs; a small batch resets it', async () => {
  const { queue, batches } = queueOf({ adaptive: ADAPTIVE });
  assert.equal(queue.stats().lingerMs, 0);
  const expected: number[] = [];
  for (let round = 0; round < 8; round++) {
    const results = await Promise.all([1, 2, 3, 4].map((i) => queue.submit([10 * round + i])));
    assert.deepEqual(
      results,
      [1, 2, 3, 4].map((i) => [2 * (10 * round + i)]),
    );
    expected.push(Math.min(ADAPTIVE.maxLingerMs, (round + 1) * LINGER_STEP_MS));
    assert.equal(queue.stats().lingerMs, expected[round], `after batch ${round + 1}`);
  }
  assert.deepEqual(
    batches.map((b) => b.length),
    Array(8).fill(4),
    'each round is one batch of its four callers',
  );
  // Light load: a batch under growAtItems drops the linger back to the floor at once.
  assert.deepEqual(await queue.submit([7]), [14]);
  assert.equal(queue.stats().lingerMs, 0);
});

test('a batch between half of growAtItems and it steps the linger back; a smaller one or a lone item resets it', async () => {
  const { queue } = queueOf({
    adaptive: { maxLingerMs: 10, latencyBudgetMs: 1000, growAtItems: 8 },
  });
  const round = (size: number, first: number): Promise<number[][]> =>
    Promise.all(Array.from({ length: size }, (_, i) => queue.submit([first + i])));
  for (let i = 0; i < 4; i++) await round(8, 100 * i);
  assert.equal(
    queue.stats().lingerMs,
    4 * LINGER_STEP_MS,
    'four batches of growAtItems grew it four steps',
  );
  await round(5, 1000);
  assert.equal(
    queue.stats().lingerMs,
    3 * LINGER_STEP_MS,
    'a batch of 5 (≥ 8/2) took one step back',
  );
  await round(4, 2000);
  assert.equal(queue.stats().lingerMs, 2 * LINGER_STEP_MS, 'a batch of 4 (= 8/2) too');
  await round(3, 3000);
  assert.equal(queue.stats().lingerMs, 0, 'a batch of 3 (< 8/2): light load, back to the floor');
  // With growAtItems 2 a lone item is below the band: never held.
  const small = queueOf({ adaptive: { maxLingerMs: 10, latencyBudgetMs: 1000, growAtItems: 2 } });
  await Promise.all([small.queue.submit([1]), small.queue.submit([2])]);
  assert.equal(small.queue.stats().lingerMs, LINGER_STEP_MS);
  await small.queue.submit([3]);
  assert.equal(small.queue.stats().lingerMs, 0);
});

test('an adaptive linger holds the next batch for company, counted from its oldest item', async () => {
  const { queue, batches, sentAt } = queueOf({
    adaptive: { maxLingerMs: 30, latencyBudgetMs: 1000, growAtItems: 1 },
  });
  // Grow the linger to 30 ms: 60 single-item batches, each growing it by 0.5 ms.
  for (let i = 0; i < 60; i++) await queue.submit([i]);
  assert.equal(queue.stats().lingerMs, 30);
  // The timers the queue arms, read rather than timed: a stalled machine (CI once took 1 s) makes
  // any upper bound on the wall clock say nothing about which arrival the linger counts from.
  const armed: number[] = [];
  const realSetTimeout = globalThis.setTimeout;
  const recording = (...args: Parameters<typeof setTimeout>): NodeJS.Timeout => {
    armed.push(args[1] ?? 0);
    return realSetTimeout(...args);
  };
  const recorded = (item: number): Promise<number[]> => {
    globalThis.setTimeout = recording as typeof setTimeout;
    try {
      return queue.submit([item]);
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
  };
  const first = performance.now();
  const a = recorded(100);
  await sleep(10);
  const b = recorded(101);
  assert.deepEqual(await Promise.all([a, b]), [[200], [202]]);
  assert.deepEqual(batches.at(-1), [100, 101], 'the later caller rode with the first');
  // The first arrival arms the deadline (5,000 ms) and the linger; the second arms nothing.
  assert.equal(armed.length, 2, `timers armed: ${armed.join(', ')}`);
  assert.equal(armed[0], 5000, 'the deadline timer');
  assert.ok(armed[1]! > 29 && armed[1]! <= 30, `the linger from the first arrival: ${armed[1]}`);
  const held = sentAt.at(-1)! - first;
  assert.ok(held >= 28, `the oldest item waited the linger (${held.toFixed(1)} ms)`);
});

test('while round trips alone exceed the latency budget the linger stays at its lingerMs floor', async () => {
  // Round trips of 15 ms against a 12 ms budget: every batch is over it, however full.
  const { queue } = queueOf(
    { lingerMs: 1, adaptive: { maxLingerMs: 8, latencyBudgetMs: 12, growAtItems: 1 } },
    15,
  );
  const seen: number[] = [];
  for (let i = 0; i < 6; i++) {
    await queue.submit([i]);
    seen.push(queue.stats().lingerMs);
  }
  assert.deepEqual(seen, [1, 1, 1, 1, 1, 1]);
  const stats = queue.stats();
  assert.ok(
    stats.totalOldestWaitMs >= 0 && stats.totalOldestWaitMs < stats.totalLatencyMs,
    'the oldest waits are counted apart from the round trips',
  );
});

test('over budget after growing: the linger halves from where it stood', async () => {
  let delayMs = 0;
  const queue = new BatchQueue<number, number>(
    async (items) => {
      if (delayMs > 0) await sleep(delayMs);
      return items;
    },
    // A budget far above the growing batches' waits (≤ 8 ms plus timer slop, which a loaded
    // machine stretches), and round trips far above the budget once the ledger slows.
    {
      maxBatch: 100,
      maxInFlight: 1,
      lingerMs: 0,
      maxQueued: 1000,
      timeoutMs: 5000,
      adaptive: { maxLingerMs: 8, latencyBudgetMs: 200, growAtItems: 1 },
    },
    unavailable,
  );
  for (let i = 0; i < 16; i++) await queue.submit([i]);
  assert.equal(queue.stats().lingerMs, 8);
  delayMs = 250;
  await queue.submit([1]);
  assert.equal(queue.stats().lingerMs, 4);
  await queue.submit([2]);
  assert.equal(queue.stats().lingerMs, 2);
  await queue.submit([3]);
  assert.equal(queue.stats().lingerMs, 1);
  // Halved below one step above the floor: the floor itself, not a fraction of a millisecond
  // that would make the next lone batch wait for a timer (at least 1 ms) instead of the next tick.
  await queue.submit([4]);
  assert.equal(queue.stats().lingerMs, LINGER_STEP_MS);
  await queue.submit([5]);
  assert.equal(queue.stats().lingerMs, 0);
});

test('a full batch goes out at once whatever the linger', async () => {
  const { queue, batches } = queueOf({
    maxBatch: 3,
    adaptive: { maxLingerMs: 50, latencyBudgetMs: 1000, growAtItems: 1 },
  });
  for (let i = 0; i < 100; i++) await queue.submit([i]);
  assert.equal(queue.stats().lingerMs, 50);
  const started = performance.now();
  assert.deepEqual(await Promise.all([queue.submit([1, 2]), queue.submit([3])]), [[2, 4], [6]]);
  assert.ok(performance.now() - started < 40, 'the full batch did not wait the 50 ms linger');
  assert.deepEqual(batches.at(-1), [1, 2, 3]);
});

test('an adaptive linger outside lingerMs ≤ maxLingerMs ≤ latencyBudgetMs is refused', () => {
  for (const [lingerMs, adaptive] of [
    [5, { maxLingerMs: 4, latencyBudgetMs: 10, growAtItems: 1 }],
    [0, { maxLingerMs: 11, latencyBudgetMs: 10, growAtItems: 1 }],
    [0, { maxLingerMs: 5, latencyBudgetMs: 10, growAtItems: 0 }],
  ] as const) {
    assert.throws(() => queueOf({ lingerMs, adaptive }), /adaptive linger needs/);
  }
});
