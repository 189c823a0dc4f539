/**
 * Expiry of queued callers in bulk (a ledger outage with a full queue): those past their deadline
 * are answered `unavailable` and never sent, the others keep their place and order. At 100k
 * callers a queue quadratic in its length (a search and a splice per expired caller, a shift per
 * sent one) stalled the event loop ~2 s; this checks the behaviour at that size, not the time:
 * the deadlines leave seconds of room, so a loaded machine cannot fail it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BatchQueue } from '../../src/util/batch-queue';
import { deferred } from '../support/deferred';

const unavailable = (reason: string): Error => new Error(`unavailable: ${reason}`);

test(
  'callers queued past their deadline are dropped at once, the rest are sent in order',
  { timeout: 60_000 },
  async () => {
    const half = 50_000;
    // Wide enough that sending the 100k live callers after the hang ends fits well inside their
    // deadlines on a loaded machine.
    const timeoutMs = 8000;
    const hung = deferred();
    const batches: number[][] = [];
    const queue = new BatchQueue<number, number>(
      async (items) => {
        batches.push(items);
        if (batches.length === 1) await hung.promise;
        return items.map((i) => -i);
      },
      { maxBatch: 100, maxInFlight: 1, lingerMs: 0, maxQueued: 2 * half, timeoutMs },
      unavailable,
    );
    const submitAll = (from: number): Promise<PromiseSettledResult<number[]>[]> =>
      Promise.allSettled(Array.from({ length: half }, (_, i) => queue.submit([from + i])));
    const early = submitAll(0);
    await sleep(timeoutMs / 2);
    const late = submitAll(half);

    const earlyResults = await early;
    assert.equal(batches.length, 1, 'only the first batch went out before the expiry');
    assert.ok(
      earlyResults.every(
        (r) => r.status === 'rejected' && /unavailable: no answer within/.test(String(r.reason)),
      ),
      'every early caller, sent or queued, answered unavailable',
    );
    assert.equal(queue.stats().timeouts, half);
    // The expired callers no longer count as queued: the queue takes as many again as it dropped.
    const extra = Promise.allSettled(
      Array.from({ length: half }, (_, i) => queue.submit([2 * half + i])),
    );

    hung.resolve();
    const lateResults = await late;
    assert.ok(
      lateResults.every((r, i) => r.status === 'fulfilled' && r.value[0] === -(half + i)),
      'every late caller answered its own outcome',
    );
    assert.ok((await extra).every((r) => r.status === 'fulfilled'));
    const sent = batches.slice(1).flat();
    assert.deepEqual(
      sent,
      Array.from({ length: 2 * half }, (_, i) => half + i),
      'no expired caller sent; the rest in submission order',
    );
  },
);
