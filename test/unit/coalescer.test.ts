import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { Coalescer, type CoalescerLimits } from '../../src/handlers/kafka/coalescer';

/**
 * A coalescer of numbers (each counting as that many bytes) whose requests are recorded with their
 * start time.
 */
function recording(
  limits: CoalescerLimits,
  sendMs = 5,
): { coalescer: Coalescer<number>; requests: { items: number[]; at: number }[] } {
  const requests: { items: number[]; at: number }[] = [];
  const started = performance.now();
  const coalescer = new Coalescer<number>(
    limits,
    (n) => n,
    async (items) => {
      requests.push({ items: [...items], at: performance.now() - started });
      await sleep(sendMs);
    },
  );
  return { coalescer, requests };
}

test('without an interval, what arrives during a request goes out as soon as it ends', async () => {
  const { coalescer, requests } = recording({ maxItems: 100, maxBytes: 1000, lingerMs: 0 });
  const first = coalescer.add([1]);
  await sleep(1);
  const second = Promise.all([coalescer.add([2]), coalescer.add([3])]);
  await Promise.all([first, second]);
  assert.deepEqual(
    requests.map((r) => r.items),
    [[1], [2, 3]],
  );
  assert.ok(
    requests[1]!.at - requests[0]!.at < 200,
    `second request ${requests[1]!.at - requests[0]!.at} ms after the first`,
  );
});

test('an interval spaces the requests: one per interval, what arrives meanwhile together', async () => {
  const { coalescer, requests } = recording({
    maxItems: 100,
    maxBytes: 1000,
    lingerMs: 0,
    intervalMs: 400,
  });
  const first = coalescer.add([1]);
  await sleep(1);
  const later = [coalescer.add([2])];
  await sleep(20);
  later.push(coalescer.add([3]));
  await Promise.all([first, ...later]);
  assert.deepEqual(
    requests.map((r) => r.items),
    [[1], [2, 3]],
  );
  assert.ok(
    requests[1]!.at - requests[0]!.at >= 395,
    `second request ${(requests[1]!.at - requests[0]!.at).toFixed(1)} ms after the first`,
  );
  // After a quiet spell longer than the interval, the next goes at once.
  await sleep(450);
  const quiet = performance.now();
  await coalescer.add([4]);
  assert.ok(
    performance.now() - quiet < 200,
    `${(performance.now() - quiet).toFixed(0)} ms after a quiet spell`,
  );
  assert.deepEqual(
    requests.map((r) => r.items),
    [[1], [2, 3], [4]],
  );
});

test('a full request waits for no interval', async () => {
  const { coalescer, requests } = recording({
    maxItems: 100,
    maxBytes: 10,
    lingerMs: 0,
    intervalMs: 10_000,
  });
  await coalescer.add([1]);
  const at = performance.now();
  // 6 + 6 > 10: the first 6 fills a request, which goes at once; the second waits for the interval.
  const first = coalescer.add([6]);
  const second = coalescer.add([6]);
  await first;
  assert.ok(
    performance.now() - at < 1000,
    `the full request went after ${(performance.now() - at).toFixed(0)} ms`,
  );
  assert.deepEqual(
    requests.map((r) => r.items),
    [[1], [6]],
  );
  await coalescer.drained();
  await second;
  assert.deepEqual(
    requests.map((r) => r.items),
    [[1], [6], [6]],
  );
});

test('drained() sends what waits without waiting out the interval', async () => {
  const { coalescer, requests } = recording({
    maxItems: 100,
    maxBytes: 1000,
    lingerMs: 0,
    intervalMs: 10_000,
  });
  await coalescer.add([1]);
  const pending = coalescer.add([2]);
  const at = performance.now();
  await coalescer.drained();
  await pending;
  assert.ok(
    performance.now() - at < 1000,
    `drained after ${(performance.now() - at).toFixed(0)} ms`,
  );
  assert.deepEqual(
    requests.map((r) => r.items),
    [[1], [2]],
  );
});

test('a failed request rejects its callers only', async () => {
  let calls = 0;
  const coalescer = new Coalescer<number>(
    { maxItems: 1, maxBytes: 1000, lingerMs: 0, intervalMs: 20 },
    () => 1,
    async () => {
      calls++;
      if (calls === 1) throw new Error('broker down');
    },
  );
  const results = await Promise.allSettled([coalescer.add([1]), coalescer.add([2])]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'fulfilled'],
  );
});
