import { test } from 'node:test';
import assert from 'node:assert/strict';

import { BatchQueue, type BatchQueueOptions } from '../../src/util/batch-queue';

const unavailable = (reason: string): Error => new Error(`unavailable: ${reason}`);
const TIMEOUT_MS = 5000;

/**
 * A queue run on a clock of the test's own: `performance.now()` reads `clock.now`, and the timers
 * the queue arms are recorded (the callers' deadline timer apart) and fired by `advance`, so that
 * no assertion depends on how fast the machine runs. Sends on the next tick (setImmediate) stay
 * real. `hold` keeps a batch's answer back until it resolves (a ledger busy that long).
 */
function queueOnTestClock(
  options: Partial<BatchQueueOptions>,
  hold: (items: string[]) => Promise<void> = () => Promise.resolve(),
): {
  queue: BatchQueue<string, string>;
  batches: { items: string[]; at: number }[];
  /** Each linger timer armed: when, and for how long. */
  armed: { at: number; waitMs: number }[];
  clock: { now: number };
  submit: (item: string) => Promise<string[]>;
  advance: (toMs: number) => Promise<void>;
  restore: () => void;
} {
  const clock = { now: 0 };
  const batches: { items: string[]; at: number }[] = [];
  const armed: { at: number; waitMs: number }[] = [];
  let timers: { due: number; fire: () => void; id: number }[] = [];
  let nextId = 1;
  const real = { now: performance.now, setTimeout, clearTimeout };
  performance.now = () => clock.now;
  globalThis.setTimeout = ((fire: () => void, waitMs: number) => {
    const id = nextId++;
    // The deadline timer bounds every caller's wait: never reached here.
    if (waitMs !== TIMEOUT_MS) {
      armed.push({ at: clock.now, waitMs });
      timers.push({ due: clock.now + waitMs, fire, id });
    }
    return id;
  }) as unknown as typeof setTimeout;
  globalThis.clearTimeout = ((id: number) => {
    timers = timers.filter((t) => t.id !== id);
  }) as unknown as typeof clearTimeout;
  const restore = (): void => {
    performance.now = real.now;
    globalThis.setTimeout = real.setTimeout;
    globalThis.clearTimeout = real.clearTimeout;
  };
  const queue = new BatchQueue<string, string>(
    async (items) => {
      batches.push({ items, at: clock.now });
      await hold(items);
      return items;
    },
    {
      maxBatch: 100,
      maxInFlight: 1,
      lingerMs: 0,
      maxQueued: 1000,
      timeoutMs: TIMEOUT_MS,
      ...options,
    },
    unavailable,
  );
  const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  /** Moves the clock to `toMs`, firing each timer due on the way at its own time. */
  const advance = async (toMs: number): Promise<void> => {
    for (;;) {
      await settled();
      const next = timers.filter((t) => t.due <= toMs).sort((a, b) => a.due - b.due)[0];
      if (next === undefined) break;
      timers = timers.filter((t) => t !== next);
      clock.now = Math.max(clock.now, next.due);
      next.fire();
    }
    clock.now = toMs;
    await settled();
  };
  return { queue, batches, armed, clock, submit: (item) => queue.submit([item]), advance, restore };
}

test('a lingering batch goes out once its callers stop coming, not at the end of its linger', async () => {
  const q = queueOnTestClock({ lingerMs: 100, idleMs: 10 });
  try {
    const a = q.submit('a');
    await q.advance(6);
    const b = q.submit('b');
    await q.advance(1000);
    assert.deepEqual(await Promise.all([a, b]), [['a'], ['b']]);
    // Armed for the quiet after the first arrival; fired at 10 ms, the second arrival (at 6) had
    // come meanwhile: armed again for the rest of the quiet after it.
    assert.deepEqual(q.armed, [
      { at: 0, waitMs: 10 },
      { at: 10, waitMs: 6 },
    ]);
    assert.deepEqual(q.batches, [{ items: ['a', 'b'], at: 16 }], 'one batch, 10 ms after b');
  } finally {
    q.restore();
  }
});

test('callers that keep coming are held no longer than the linger', async () => {
  const q = queueOnTestClock({ lingerMs: 20, idleMs: 10 });
  try {
    const answers = [q.submit('a')];
    for (const at of [8, 16]) {
      await q.advance(at);
      answers.push(q.submit(`at ${at}`));
    }
    await q.advance(1000);
    await Promise.all(answers);
    assert.deepEqual(q.batches, [{ items: ['a', 'at 8', 'at 16'], at: 20 }]);
    assert.deepEqual(
      q.armed.map((t) => t.waitMs),
      [10, 8, 2],
      'the quiet after each latest arrival, cut to what is left of the linger',
    );
  } finally {
    q.restore();
  }
});

test('without idleMs the linger alone holds the batch', async () => {
  const q = queueOnTestClock({ lingerMs: 100 });
  try {
    const a = q.submit('a');
    await q.advance(50);
    assert.equal(q.batches.length, 0, 'still lingering at 50 ms');
    await q.advance(1000);
    assert.deepEqual(await a, ['a']);
    assert.deepEqual(q.armed, [{ at: 0, waitMs: 100 }]);
    assert.deepEqual(q.batches, [{ items: ['a'], at: 100 }]);
  } finally {
    q.restore();
  }
});

test('items that came while the ledger was busy and went quiet since go out at once', async () => {
  let answerFirst: (() => void) | undefined;
  const q = queueOnTestClock({ lingerMs: 100, idleMs: 10 }, (items) =>
    items[0] === 'first' ? new Promise((resolve) => (answerFirst = resolve)) : Promise.resolve(),
  );
  try {
    const first = q.submit('first');
    await q.advance(10);
    assert.deepEqual(q.batches, [{ items: ['first'], at: 10 }]);
    // Arrives while the first batch is out, which is answered 30 ms later.
    const late = q.submit('late');
    await q.advance(40);
    answerFirst!();
    await first;
    await q.advance(40);
    assert.deepEqual(await late, ['late']);
    assert.deepEqual(q.batches.at(-1), { items: ['late'], at: 40 }, 'quiet for 30 ms: not held');
  } finally {
    q.restore();
  }
});

/** A queue whose batches are answered when the test says: `answer()` releases the oldest held. */
function returningQueue(options: Partial<BatchQueueOptions>) {
  const held: (() => void)[] = [];
  const q = queueOnTestClock(
    { returning: true, ...options },
    () => new Promise<void>((resolve) => held.push(resolve)),
  );
  const answer = async (): Promise<void> => {
    held.shift()!();
    await q.advance(q.clock.now);
  };
  return { ...q, answer };
}

test('returning: once the callers a batch answered are queued again, the next batch goes out', async () => {
  const q = returningQueue({ lingerMs: 100, idleMs: 10 });
  try {
    const first = [q.submit('a'), q.submit('b')];
    await q.advance(10);
    assert.deepEqual(q.batches, [{ items: ['a', 'b'], at: 10 }], 'the first: by the idle close');
    // Arrives while the first batch is out: it and the first's two callers are expected.
    const late = q.submit('late');
    await q.advance(14);
    await q.answer();
    await Promise.all(first);
    await q.advance(15);
    const back = [q.submit('a again')];
    await q.advance(16);
    assert.equal(q.batches.length, 1, 'two of the three expected: still waiting');
    back.push(q.submit('b again'));
    await q.advance(16);
    assert.deepEqual(
      q.batches.at(-1),
      { items: ['late', 'a again', 'b again'], at: 16 },
      'out the moment the last expected came, not 10 ms later',
    );
    await q.answer();
    assert.deepEqual(await late, ['late']);
  } finally {
    q.restore();
  }
});

test('returning: a caller that does not come back holds the batch only the idle close', async () => {
  const q = returningQueue({ lingerMs: 100, idleMs: 10 });
  try {
    const first = q.submit('a');
    await q.advance(10);
    const late = q.submit('late');
    await q.advance(40);
    await q.answer();
    await first;
    // Quiet for 30 ms since 'late' came, but its company was answered only now: held 10 ms more
    // for it, where without `returning` it would go at once (as 'items that came while the ledger
    // was busy' shows).
    await q.advance(49);
    assert.equal(q.batches.length, 1, 'held after the answer');
    await q.advance(1000);
    assert.deepEqual(q.batches.at(-1), { items: ['late'], at: 50 }, '10 ms after the answer');
    await q.answer();
    assert.deepEqual(await late, ['late']);
  } finally {
    q.restore();
  }
});

test('an idleMs below what a timer can wait is refused', () => {
  assert.throws(
    () =>
      new BatchQueue<number, number>(
        (items) => Promise.resolve(items),
        { maxBatch: 1, maxInFlight: 1, lingerMs: 5, idleMs: 0.5, maxQueued: 1, timeoutMs: 1 },
        unavailable,
      ),
    /limits/,
  );
});
