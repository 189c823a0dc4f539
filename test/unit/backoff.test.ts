import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryWithBackoff } from '../../src/util/backoff';

test('waits double from initialMs up to maxMs, until the work succeeds', async () => {
  const waits: number[] = [];
  let attempts = 0;
  const result = await retryWithBackoff(
    async () => {
      if (++attempts < 6) throw new Error(`attempt ${attempts}`);
      return 'done';
    },
    { initialMs: 1, maxMs: 8, timeoutMs: 0 },
    (_error, retryInMs) => waits.push(retryInMs),
    new AbortController().signal,
  );
  assert.equal(result, 'done');
  assert.deepEqual(waits, [1, 2, 4, 8, 8]);
});

test('past timeoutMs the last failure is the answer', async () => {
  let attempts = 0;
  await assert.rejects(
    retryWithBackoff(
      async () => {
        throw new Error(`attempt ${++attempts}`);
      },
      { initialMs: 10, maxMs: 20, timeoutMs: 50 },
      () => undefined,
      new AbortController().signal,
    ),
    (error: Error) => error.message === `attempt ${attempts}` && attempts > 1,
  );
});

test('an abort stops the wait', async () => {
  const stopping = new AbortController();
  const retried = retryWithBackoff(
    async () => {
      throw new Error('never up');
    },
    { initialMs: 60_000, maxMs: 60_000, timeoutMs: 0 },
    () => stopping.abort(),
    stopping.signal,
  );
  await assert.rejects(retried, { name: 'AbortError' });
});
