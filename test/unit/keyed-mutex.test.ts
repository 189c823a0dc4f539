import { test } from 'node:test';
import assert from 'node:assert/strict';

import { KeyedMutex } from '../../src/util/keyed-mutex';
import { deferred, settle } from '../support/deferred';

test('work under the same key runs one at a time, in arrival order', async () => {
  const mutex = new KeyedMutex();
  const log: string[] = [];
  let running = 0;
  let maxRunning = 0;
  const gates = [deferred(), deferred(), deferred(), deferred()];
  const results = gates.map((gate, i) =>
    mutex.run('dfsp1', async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      log.push(`start ${i}`);
      await gate.promise;
      log.push(`end ${i}`);
      running--;
      return i * 10;
    }),
  );
  await settle();
  assert.deepEqual(log, ['start 0']);
  // Releasing a later task first does not let it jump the queue.
  gates[2]!.resolve();
  await settle();
  assert.deepEqual(log, ['start 0']);
  gates[0]!.resolve();
  await settle();
  assert.deepEqual(log, ['start 0', 'end 0', 'start 1']);
  gates[1]!.resolve();
  await settle();
  // Task 2 was already released, so it runs through; then 3 starts.
  assert.deepEqual(log, ['start 0', 'end 0', 'start 1', 'end 1', 'start 2', 'end 2', 'start 3']);
  gates[3]!.resolve();
  assert.deepEqual(await Promise.all(results), [0, 10, 20, 30]);
  assert.equal(maxRunning, 1);
});

test('different keys run concurrently', async () => {
  const mutex = new KeyedMutex();
  const started: string[] = [];
  const gateA = deferred();
  const gateB = deferred();
  const a = mutex.run('a', async () => {
    started.push('a');
    await gateA.promise;
    return 'A';
  });
  const b = mutex.run('b', async () => {
    started.push('b');
    await gateB.promise;
    return 'B';
  });
  await settle();
  assert.deepEqual(started.sort(), ['a', 'b']);
  gateB.resolve();
  assert.equal(await b, 'B');
  gateA.resolve();
  assert.equal(await a, 'A');
});

test('a task that throws rejects its caller and releases the key', async () => {
  const mutex = new KeyedMutex();
  const gate = deferred();
  const log: string[] = [];
  const failing = mutex.run('k', async () => {
    log.push('failing');
    await gate.promise;
    throw new Error('boom');
  });
  const next = mutex.run('k', async () => {
    log.push('next');
    return 'ok';
  });
  await settle();
  assert.deepEqual(log, ['failing']);
  gate.resolve();
  await assert.rejects(failing, /boom/);
  assert.equal(await next, 'ok');
  assert.deepEqual(log, ['failing', 'next']);
  // A synchronous throw inside the work function releases the key too.
  await assert.rejects(
    mutex.run('k', () => {
      throw new Error('sync');
    }),
    /sync/,
  );
  assert.equal(await mutex.run('k', async () => 'after'), 'after');
});

test('the key is free again once its queue drains', async () => {
  const mutex = new KeyedMutex();
  assert.equal(await mutex.run('k', async () => 1), 1);
  const log: string[] = [];
  const gate = deferred();
  const first = mutex.run('k', async () => {
    log.push('first');
    await gate.promise;
  });
  await settle();
  // A fresh task on the drained key started at once rather than waiting for anything old.
  assert.deepEqual(log, ['first']);
  const tails = (mutex as unknown as { tails: Map<string, unknown> }).tails;
  assert.equal(tails.size, 1);
  gate.resolve();
  await first;
  assert.equal(tails.size, 0);
});

test('a queued run with a deadline gives up at it without running, and keeps its place until the run before it ends', async () => {
  const mutex = new KeyedMutex();
  const gate = deferred();
  const log: string[] = [];
  const first = mutex.run('k', async () => {
    log.push('first');
    await gate.promise;
  });
  const started = Date.now();
  const late = mutex.run('k', async () => log.push('late'), {
    deadline: Date.now() + 50,
    expired: () => new Error('expired'),
  });
  const patient = mutex.run('k', async () => log.push('patient'));
  await assert.rejects(late, /expired/);
  assert.ok(Date.now() - started >= 40, 'waited until its deadline');
  await settle();
  // The one behind the run that gave up still waits for the first.
  assert.deepEqual(log, ['first']);
  gate.resolve();
  await first;
  await patient;
  assert.deepEqual(log, ['first', 'patient']);
  assert.equal(mutex.held('k'), false, 'the key is free once its queue drains');
  // A deadline already passed on a free key: the work runs (it waits for nothing).
  assert.equal(
    await mutex.run('k', async () => 'free', {
      deadline: Date.now() - 1,
      expired: () => new Error('expired'),
    }),
    'free',
  );
  // A run given its turn in time runs to its end, past its deadline.
  assert.equal(
    await mutex.run(
      'k',
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        return 'done';
      },
      { deadline: Date.now() + 10, expired: () => new Error('expired') },
    ),
    'done',
  );
});

test('a run that gave up, whose predecessor failed, still passes its place on', async () => {
  const mutex = new KeyedMutex();
  const gate = deferred();
  const failing = mutex.run('k', async () => {
    await gate.promise;
    throw new Error('boom');
  });
  const late = mutex.run('k', async () => 'never', {
    deadline: Date.now() + 20,
    expired: () => new Error('expired'),
  });
  const next = mutex.run('k', async () => 'next');
  await assert.rejects(late, /expired/);
  gate.resolve();
  await assert.rejects(failing, /boom/);
  assert.equal(await next, 'next');
  assert.equal(mutex.held('k'), false);
});
