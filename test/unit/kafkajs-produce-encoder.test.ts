import { mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import {
  encodable,
  speedUpKafkajsProduce,
  type ProduceMessage,
  type ProduceRequestArgs,
} from '../../src/handlers/kafka/kafkajs-produce-encoder';

const requireKafkajs = createRequire(require.resolve('kafkajs/package.json'));

interface EncodedRequest {
  apiVersion: number;
  expectResponse: () => boolean;
  encode: () => Promise<{ buffer: Buffer }>;
}
type RequestModule = ((args: ProduceRequestArgs) => EncodedRequest) & {
  kafkajs?: (args: ProduceRequestArgs) => EncodedRequest;
};

assert.equal(speedUpKafkajsProduce(), true, 'patched before any produce request was made');
const lean = requireKafkajs('./src/protocol/requests/produce/v3/request') as RequestModule;
const kafkajs = lean.kafkajs!;

/** A deterministic generator (mulberry32): the same cases on every run. */
function generator(seed: number): (below: number) => number {
  let state = seed;
  return (below) => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (((t ^ (t >>> 14)) >>> 0) % below) as number;
  };
}

/** Lengths around the varint boundaries of a record's size (64, 8,192 bytes) and beyond. */
const LENGTHS = [
  0, 1, 50, 59, 60, 61, 62, 63, 64, 65, 127, 128, 4_600, 8_180, 8_191, 8_200, 20_000,
];

function text(random: (below: number) => number, length: number): string {
  // Some non-ASCII: a record's sizes count UTF-8 bytes, not characters.
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789{}":,é€';
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[random(alphabet.length)];
  return out;
}

function randomMessage(random: (below: number) => number): ProduceMessage {
  const length = LENGTHS[random(LENGTHS.length)]!;
  const keyKind = random(4);
  const valueKind = random(8);
  return {
    key: keyKind === 0 ? null : keyKind === 1 ? Buffer.from(text(random, 36)) : text(random, 36),
    value:
      valueKind === 0
        ? null
        : valueKind === 1
          ? Buffer.from(text(random, length))
          : text(random, length),
  };
}

function randomRequest(random: (below: number) => number): ProduceRequestArgs {
  const producerIds = [undefined, -1, '8021', 5n, { value: 77n }] as const;
  const transactionalIds = [null, undefined, '', 'tx-1'] as const;
  return {
    acks: [-1, 0, 1][random(3)]!,
    timeout: 30_000,
    transactionalId: transactionalIds[random(transactionalIds.length)],
    producerId: producerIds[random(producerIds.length)],
    producerEpoch: random(3),
    topicData: Array.from({ length: 1 + random(3) }, (_, t) => ({
      topic: `topic-notification-event-${t}`,
      partitions: Array.from({ length: 1 + random(4) }, (_, p) => ({
        partition: p,
        firstSequence: random(2) === 0 ? undefined : random(100_000),
        messages: Array.from({ length: 1 + random(20) }, () => randomMessage(random)),
      })),
    })),
  };
}

async function bytes(request: EncodedRequest): Promise<Buffer> {
  return (await request.encode()).buffer;
}

test('the lean encoder writes every produce request byte for byte as kafkajs does', async () => {
  mock.method(Date, 'now', () => 1_795_934_710_388);
  try {
    const random = generator(29);
    for (let i = 0; i < 300; i++) {
      const args = randomRequest(random);
      assert.ok(encodable(args));
      const ours = lean(args);
      const theirs = kafkajs(args);
      assert.equal(ours.expectResponse(), theirs.expectResponse());
      assert.equal(ours.apiVersion, theirs.apiVersion);
      assert.deepEqual(await bytes(ours), await bytes(theirs), `request ${i}`);
    }
  } finally {
    mock.restoreAll();
  }
});

test('versions 4 to 7 of the request are the lean one with their own number', async () => {
  mock.method(Date, 'now', () => 1_795_934_710_388);
  try {
    const args = randomRequest(generator(7));
    const v7 = requireKafkajs('./src/protocol/requests/produce/v7/request') as RequestModule;
    const request = v7(args);
    assert.equal(request.apiVersion, 7);
    assert.deepEqual(await bytes(request), await bytes(kafkajs(args)));
  } finally {
    mock.restoreAll();
  }
});

test('a request the lean encoder does not write goes through kafkajs’s own', async () => {
  mock.method(Date, 'now', () => 1_795_934_710_388);
  try {
    const message = { key: 'k', value: 'v'.repeat(300) };
    const request = (messages: ProduceMessage[], compression?: number): ProduceRequestArgs => ({
      acks: -1,
      timeout: 30_000,
      compression,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages }] }],
    });
    // Each written as the lean encoder writes would differ: headers, times, gzip, no records.
    const others = [
      request([{ ...message, headers: { traceparent: '00-ab' } }]),
      request([{ ...message, timestamp: 1_795_934_700_000 }]),
      request([message], 1),
      request([]),
    ];
    for (const args of others) {
      assert.equal(encodable(args), false);
      assert.deepEqual(await bytes(lean(args)), await bytes(kafkajs(args)));
    }
    assert.ok(encodable(request([message, { key: null, value: null, headers: {} }])));
  } finally {
    mock.restoreAll();
  }
});
