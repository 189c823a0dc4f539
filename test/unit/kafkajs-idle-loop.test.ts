import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  PATCHED_KAFKAJS_VERSION,
  stopKafkajsIdleLoop,
} from '../../src/handlers/kafka/kafkajs-idle-loop';

/** kafkajs's RequestQueue as these tests drive it (src/network/requestQueue, untyped). */
interface Queue {
  pending: unknown[];
  inflight: Map<number, unknown>;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  push(request: object): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  checkPendingRequests(): void;
  maybeThrottle(ms: number): void;
  destroy(): void;
}

/* eslint-disable @typescript-eslint/no-require-imports */
const RequestQueue = require('kafkajs/src/network/requestQueue') as new (options: object) => Queue;
/* eslint-enable @typescript-eslint/no-require-imports */

const quiet = { debug: () => undefined, warn: () => undefined, error: () => undefined };

/** A queue of one request in flight at a time, as kafkajs makes one per broker connection. */
function queue(): Queue {
  return new RequestQueue({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: 'localhost:9092',
    logger: quiet,
  });
}

/** A request as kafkajs's Connection pushes it; `sent` lists the ids as they are sent. */
function request(correlationId: number, sent: number[]): object {
  return {
    entry: {
      correlationId,
      apiKey: 1,
      apiName: 'Fetch',
      apiVersion: 11,
      resolve: () => undefined,
      reject: () => undefined,
    },
    expectResponse: true,
    sendRequest: () => sent.push(correlationId),
  };
}

test('the kafkajs installed is the version the idle-loop mend was written for', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const installed = (require('kafkajs/package.json') as { version: string }).version;
  assert.equal(installed, PATCHED_KAFKAJS_VERSION);
});

test('an idle request queue arms no timer once mended (kafkajs 2.2.4 re-arms one at 1 ms)', () => {
  const before = queue();
  // What an answered request does: check what is pending, nothing here.
  before.checkPendingRequests();
  assert.notEqual(before.throttleCheckTimeoutId, null, 'kafkajs 2.2.4 polls an idle queue');
  before.destroy();

  assert.equal(stopKafkajsIdleLoop(), true);
  const idle = queue();
  idle.checkPendingRequests();
  assert.equal(idle.throttleCheckTimeoutId, null);
  const answered: number[] = [];
  idle.push(request(1, answered));
  idle.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
  assert.deepEqual(answered, [1]);
  assert.equal(idle.throttleCheckTimeoutId, null, 'nothing armed after an answer either');
  idle.destroy();
});

test('a mended queue still sends a held request, when one in flight is answered', () => {
  stopKafkajsIdleLoop();
  const held = queue();
  const sent: number[] = [];
  held.push(request(1, sent));
  held.push(request(2, sent));
  assert.deepEqual(sent, [1], 'one in flight at a time: the second is held');
  assert.equal(held.pending.length, 1);
  held.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
  assert.deepEqual(sent, [1, 2]);
  held.destroy();
});

test('a mended queue sends a held request when a throttle ends, and checks while throttled', async () => {
  stopKafkajsIdleLoop();
  const throttled = queue();
  throttled.maybeThrottle(30);
  throttled.checkPendingRequests();
  assert.notEqual(throttled.throttleCheckTimeoutId, null, 'a throttle keeps its check');
  const sent: number[] = [];
  throttled.push(request(1, sent));
  assert.deepEqual(sent, [], 'held while the broker throttles the client');
  await sleep(80);
  assert.deepEqual(sent, [1]);
  assert.equal(throttled.throttleCheckTimeoutId, null, 'and no timer left once it is sent');
  throttled.destroy();
});
