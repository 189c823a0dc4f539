/**
 * The Kafka transport's batches, driven through its kafkajs eachBatch handler with a client
 * that records what would go to the broker (and fails on demand): order within and across
 * partition batches, what shares a produce request and a commit, and that no offset is
 * committed before its notifications are produced. The real broker: kafka.test.ts.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  KafkaJSNonRetriableError,
  KafkaJSProtocolError,
  type EachBatchPayload,
  type Kafka,
  type TopicPartitionOffsetAndMetadata,
} from 'kafkajs';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import { KafkaTransport } from '../src/handlers/kafka/transport';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { FxClient, injecting, newCondition } from './support/fx-client';
import {
  abortMessage,
  fulfilMessage,
  fxMessage,
  newTransfer,
  prepareMessage,
  type TestTransfer,
} from './support/mojaloop-messages';
import { onboard } from './support/onboard';

// kafkajs's own retrier (no types are published for it): what it retries, what stops the consumer.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- an internal module, untyped
const createRetry = require('kafkajs/src/retry') as (options: {
  retries: number;
}) => (fn: () => Promise<void>) => Promise<void>;

const PREPARE = 'topic-transfer-prepare';
const FULFIL = 'topic-transfer-fulfil';

/** The in-memory store, failing its next transfer save when told to (a full disk, a deadlock). */
class FailingStore extends MemoryMetadataStore {
  failNextSave: Error | undefined;

  override async saveTransfers(
    records: Parameters<MemoryMetadataStore['saveTransfers']>[0],
  ): Promise<void> {
    const error = this.failNextSave;
    this.failNextSave = undefined;
    if (error !== undefined) throw error;
    return super.saveTransfers(records);
  }
}

/** Plays kafkajs and the broker: keeps what is produced and committed, fails when told to. */
class RecordingKafka {
  eachBatch: ((payload: EachBatchPayload) => Promise<void>) | undefined;
  readonly produceRequests: { topic: string; key: string; value: any }[][] = [];
  readonly commitRequests: TopicPartitionOffsetAndMetadata[][] = [];
  failProduce = false;
  /** The offset commits the transport under test has still under way. */
  settled: () => Promise<void> = async () => undefined;
  /** Commits fail (the process dies before they land). */
  failCommits = false;
  /** What produce requests fail with, if anything. */
  produceError: Error | undefined;
  /** The topics paused through the consumer. */
  readonly paused: string[] = [];
  /** The eachBatch calls under way. */
  readonly underway = new Set<Promise<void>>();
  running: () => boolean = () => false;

  get produced(): { topic: string; key: string; value: any }[] {
    return this.produceRequests.flat();
  }

  consumer(): unknown {
    // As kafkajs: stop() waits for the batches under way, then leaves the group; a commit issued
    // while it stops is dropped without a word (runner.commitOffsets), one after it is refused.
    let running = false;
    let inGroup = false;
    return {
      connect: async () => undefined,
      disconnect: async () => undefined,
      stop: async () => {
        running = false;
        await Promise.allSettled(this.underway);
        inGroup = false;
      },
      on: () => () => undefined,
      events: { CRASH: 'consumer.crash', REBALANCING: 'consumer.rebalancing' },
      subscribe: async () => undefined,
      pause: (topics: { topic: string }[]) => void this.paused.push(...topics.map((t) => t.topic)),
      run: async ({ eachBatch }: { eachBatch: (payload: EachBatchPayload) => Promise<void> }) => {
        this.eachBatch = eachBatch;
        [running, inGroup] = [true, true];
        this.running = () => running;
      },
      commitOffsets: async (offsets: TopicPartitionOffsetAndMetadata[]) => {
        if (!inGroup)
          throw new Error('Consumer group was not initialized, consumer#run must be called first');
        if (!running) return;
        if (this.failCommits) throw new Error('killed before the commit');
        this.commitRequests.push(offsets);
      },
    };
  }

  producer(): unknown {
    return {
      connect: async () => undefined,
      disconnect: async () => undefined,
      sendBatch: async ({
        topicMessages,
      }: {
        topicMessages: { topic: string; messages: { key: string; value: string }[] }[];
      }) => {
        if (this.failProduce) throw new Error('broker unavailable');
        if (this.produceError !== undefined) throw this.produceError;
        this.produceRequests.push(
          topicMessages.flatMap(({ topic, messages }) =>
            messages.map((m) => ({ topic, key: m.key, value: JSON.parse(m.value) })),
          ),
        );
      },
    };
  }

  admin(): unknown {
    return {
      connect: async () => undefined,
      disconnect: async () => undefined,
      listTopics: async () => [
        PREPARE,
        FULFIL,
        'topic-transfer-get',
        'topic-notification-event',
        'topic-deferredsettlement-close',
      ],
      fetchTopicMetadata: async ({ topics }: { topics: string[] }) => ({
        topics: topics.map((name) => ({ name, partitions: [{ partitionId: 0, leader: 0 }] })),
      }),
      describeCluster: async () => ({}),
    };
  }

  /**
   * Hands a batch to the service as kafkajs would; resolves with the offsets it resolved, once the
   * commits it issued are sent.
   */
  async deliver(
    topic: string,
    partition: number,
    messages: { offset: number; value: unknown }[],
  ): Promise<string[]> {
    const resolved = await this.handOver(topic, partition, messages);
    await this.settled();
    return resolved;
  }

  /**
   * Hands a batch to the service; resolves with the offsets it resolved, when eachBatch returns.
   */
  async handOver(
    topic: string,
    partition: number,
    messages: { offset: number; value: unknown }[],
  ): Promise<string[]> {
    const resolved: string[] = [];
    const batch = {
      topic,
      partition,
      highWatermark: '0',
      messages: messages.map(({ offset, value }) => ({
        offset: String(offset),
        key: null,
        value: Buffer.from(JSON.stringify(value)),
        timestamp: '0',
        attributes: 0,
        headers: {},
      })),
    };
    const handled = this.eachBatch!({
      batch,
      resolveOffset: (offset: string) => void resolved.push(offset),
      heartbeat: async () => undefined,
      commitOffsetsIfNecessary: async () => undefined,
      uncommittedOffsets: () => ({ topics: [] }),
      isRunning: () => this.running(),
      isStale: () => false,
      pause: () => () => undefined,
    } as unknown as EachBatchPayload);
    this.underway.add(handled);
    try {
      await handled;
    } finally {
      this.underway.delete(handled);
    }
    return resolved;
  }
}

/**
 * Whether kafkajs would deliver the batch again after eachBatch threw `error` (its retrier's
 * judgement), rather than stop consuming for good.
 */
async function kafkajsRetries(error: unknown): Promise<boolean> {
  const outcome = await createRetry({ retries: 0 })(async () => {
    throw error;
  }).catch((e: Error) => e);
  return (outcome as Error).name === 'KafkaJSNumberOfRetriesExceeded';
}

/** What a batch that must fail failed with. */
function failure(batch: Promise<unknown>): Promise<unknown> {
  return batch.then(
    () => assert.fail('the batch succeeded'),
    (error: unknown) => error,
  );
}

describe('Kafka batches', () => {
  let service: Service;
  const store = new FailingStore();
  const run = randomBytes(3).toString('hex');
  const payer = `bpayer${run}`;
  const payee = `bpayee${run}`;
  const position = async (): Promise<bigint> =>
    BigInt(
      JSON.parse(
        (
          await service.app.inject({
            method: 'GET',
            url: `/participants/${payer}/positions?currency=USD`,
          })
        ).body,
      ).value,
    );
  const transport = async (
    kafka: RecordingKafka,
    env: NodeJS.ProcessEnv = {},
  ): Promise<KafkaTransport> => {
    const config = loadConfig({ LOG_LEVEL: 'silent', ...env });
    const started = new KafkaTransport({
      config: config.kafka,
      consume: config.roles.consume,
      transfers: service.transfers,
      fx: service.fx,
      log: service.app.log,
      instance: 'test',
      kafka: kafka as unknown as Kafka,
    });
    await started.start();
    kafka.settled = () => started.settled();
    return started;
  };
  const about = (kafka: RecordingKafka, transfer: TestTransfer): any[] =>
    kafka.produced.filter((n) => n.key === transfer.transferId).map((n) => n.value);
  const actions = (kafka: RecordingKafka, transfer: TestTransfer): string[] =>
    about(kafka, transfer).map(
      (n) => `${n.metadata.event.action}/${n.metadata.event.state.status}`,
    );

  before(async () => {
    service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
      ledger: new EmbeddedLedger(),
      store,
    });
    await onboard((options) => service.app.inject(options), [payer, payee], '100000', 100000);
  });
  after(async () => {
    await service?.close();
  });

  test('a prepare and its fulfil in one batch run in order; so do they in two partition batches handled at once', async () => {
    const kafka = new RecordingKafka();
    await transport(kafka);
    const before = await position();
    // One partition carrying both kinds (a deployment may route them to one topic).
    const [a, b] = [newTransfer(payer, payee, '3'), newTransfer(payer, payee, '4')];
    const resolved = await kafka.deliver(PREPARE, 0, [
      { offset: 10, value: prepareMessage(a) },
      { offset: 11, value: prepareMessage(b) },
      { offset: 12, value: fulfilMessage(a, 'commit') },
      { offset: 13, value: fulfilMessage(b, 'commit') },
    ]);
    assert.deepEqual(actions(kafka, a), ['prepare/success', 'commit/success']);
    assert.deepEqual(actions(kafka, b), ['prepare/success', 'commit/success']);
    assert.deepEqual(resolved, ['13']);
    assert.deepEqual(kafka.commitRequests, [[{ topic: PREPARE, partition: 0, offset: '14' }]]);
    // Also when each message is a chunk of its own.
    const single = new RecordingKafka();
    await transport(single, { KAFKA_BATCH_MAX_MESSAGES: '1' });
    const f = newTransfer(payer, payee, '2');
    assert.deepEqual(
      await single.deliver(PREPARE, 5, [
        { offset: 0, value: prepareMessage(f) },
        { offset: 1, value: fulfilMessage(f, 'commit') },
      ]),
      ['0', '1'],
    );
    assert.deepEqual(actions(single, f), ['prepare/success', 'commit/success']);
    assert.deepEqual(single.commitRequests.flat().at(-1), {
      topic: PREPARE,
      partition: 5,
      offset: '2',
    });
    // Two partitions at once (kafkajs with partitionsConsumedConcurrently): the fulfil waits for
    // its prepare.
    const c = newTransfer(payer, payee, '5');
    await Promise.all([
      kafka.deliver(PREPARE, 1, [{ offset: 0, value: prepareMessage(c) }]),
      kafka.deliver(FULFIL, 0, [{ offset: 0, value: fulfilMessage(c, 'commit') }]),
    ]);
    assert.deepEqual(actions(kafka, c), ['prepare/success', 'commit/success']);
    assert.equal(await position(), before + 14n, 'each transfer moved its money once');
    // Independent transfers of two partition batches share one produce request.
    const [d, e] = [newTransfer(payer, payee, '1'), newTransfer(payer, payee, '1')];
    await Promise.all([
      kafka.deliver(PREPARE, 2, [{ offset: 0, value: prepareMessage(d) }]),
      kafka.deliver(PREPARE, 3, [{ offset: 0, value: prepareMessage(e) }]),
    ]);
    assert.deepEqual(
      kafka.produceRequests
        .at(-1)!
        .map((n) => n.key)
        .sort(),
      [d.transferId, e.transferId].sort(),
    );
    assert.deepEqual(
      kafka.commitRequests
        .at(-1)!
        .map((o) => `${o.topic}:${o.partition}:${o.offset}`)
        .sort(),
      [`${PREPARE}:2:1`, `${PREPARE}:3:1`],
      'and their offsets one commit',
    );
    assert.equal(await position(), before + 16n);
  });

  test('a produce that fails commits nothing; delivered again, the batch is answered and the money has moved once', async () => {
    const kafka = new RecordingKafka();
    await transport(kafka);
    const before = await position();
    const x = newTransfer(payer, payee, '7');
    const batch = [{ offset: 20, value: prepareMessage(x) }];
    kafka.failProduce = true;
    await assert.rejects(
      kafka.deliver(PREPARE, 0, batch),
      /broker unavailable/,
      'the batch fails: kafkajs delivers it again',
    );
    assert.deepEqual(kafka.commitRequests, [], 'no offset committed');
    assert.equal(await position(), before + 7n, 'the reservation is in the ledger');
    kafka.failProduce = false;
    assert.deepEqual(await kafka.deliver(PREPARE, 0, batch), ['20']);
    assert.deepEqual(
      actions(kafka, x),
      ['prepare/success'],
      'the redelivered prepare is forwarded',
    );
    assert.deepEqual(kafka.commitRequests, [[{ topic: PREPARE, partition: 0, offset: '21' }]]);
    assert.equal(await position(), before + 7n, 'reserved once');
  });

  test('killed after a batch was handled and notified, before its commit: it comes again from the committed offset, no money doubled, the same notifications under the same event ids', async () => {
    const first = new RecordingKafka();
    await transport(first, { KAFKA_BATCH_MAX_MESSAGES: '2' });
    const before = await position();
    const transfers = [1, 2, 3, 4, 5, 6].map(() => newTransfer(payer, payee, '1'));
    const prepares = transfers.map((t, i) => ({ offset: 30 + i, value: prepareMessage(t) }));
    assert.deepEqual(await first.deliver(PREPARE, 0, prepares.slice(0, 2)), ['31']);
    assert.deepEqual(first.commitRequests, [[{ topic: PREPARE, partition: 0, offset: '32' }]]);
    // The next batch (two chunks) is handled and produced, but no commit of it lands.
    first.failCommits = true;
    await first.deliver(PREPARE, 0, prepares.slice(2));
    assert.equal(first.commitRequests.length, 1);
    assert.equal(first.produced.length, 6, 'all six forwards went out');

    // The restarted service gets the partition from the committed offset.
    const second = new RecordingKafka();
    await transport(second, { KAFKA_BATCH_MAX_MESSAGES: '2' });
    assert.deepEqual(await second.deliver(PREPARE, 0, prepares.slice(2)), ['33', '35']);
    assert.deepEqual(second.commitRequests.flat().at(-1), {
      topic: PREPARE,
      partition: 0,
      offset: '36',
    });
    for (const t of transfers.slice(2)) {
      const [was] = about(first, t);
      const [again] = about(second, t);
      assert.equal(again.metadata.event.action, 'prepare');
      assert.equal(
        again.metadata.event.id,
        was.metadata.event.id,
        'told again under the same event id',
      );
      assert.deepEqual(
        [again.from, again.to, again.content],
        [was.from, was.to, was.content],
        'the same notification',
      );
    }
    assert.equal(await position(), before + 6n, 'six transfers of 1 USD reserved once each');
    assert.equal(
      new Set(first.produced.map((n) => n.value.metadata.event.id)).size,
      6,
      'distinct messages, distinct event ids',
    );
  });

  test('a redelivered FX fulfil whose fulfilment was invalid is answered again as the abort it was, not as a reservation', async () => {
    const kafka = new RecordingKafka();
    await transport(kafka);
    const client = new FxClient(injecting(service.app), FxClient.parties(run));
    await client.onboard();
    const { A, F } = client.parties;
    const p = client.payment();
    await kafka.deliver(PREPARE, 13, [
      { offset: 0, value: fxMessage('prepare', 'fx-prepare', p.commitRequestId, A, F, p.body) },
    ]);
    const reserve = [
      {
        offset: 0,
        value: fxMessage('fulfil', 'fx-reserve', p.commitRequestId, F, A, {
          conversionState: 'RESERVED',
          fulfilment: newCondition().fulfilment,
          completedTimestamp: p.answeredAt,
        }),
      },
    ];
    const told = (): string[] =>
      kafka.produced
        .filter((n) => n.key === p.commitRequestId)
        .map(
          ({ value: n }) =>
            `${n.metadata.event.action}/${n.metadata.event.state.status} ${n.from}→${n.to} ${n.metadata.event.id}`,
        );
    await kafka.deliver(FULFIL, 13, reserve);
    const first = told();
    assert.match(first[1]!, new RegExp(`^fx-abort-validation/error Hub→${A} `));
    await kafka.deliver(FULFIL, 13, reserve);
    assert.deepEqual(
      told().slice(2),
      first.slice(1),
      'told again as the first time, under the same event id',
    );
    assert.equal((await client.fxGet(p)).body.conversionState, 'ABORTED');
  });

  test('a redelivered fulfil or PUT /error with a wrong FSPIOP-Destination is answered again as the abort it was, not 3100', async () => {
    const kafka = new RecordingKafka();
    await transport(kafka);
    const misaddressed = (message: any): any => (
      (message.content.headers['fspiop-destination'] = payee),
      message
    );
    const told = (t: TestTransfer): string[] =>
      about(kafka, t).map(
        (n) =>
          `${n.metadata.event.action}/${n.metadata.event.state.code ?? n.metadata.event.state.status} ${n.from}→${n.to} ${n.metadata.event.id}`,
      );
    for (const [partition, [t, finish]] of [
      [newTransfer(payer, payee, '1'), fulfilMessage] as const,
      [newTransfer(payer, payee, '1'), abortMessage] as const,
    ].entries()) {
      await kafka.deliver(PREPARE, 14, [{ offset: partition, value: prepareMessage(t) }]);
      const message = [
        {
          offset: 0,
          value: misaddressed(
            finish === fulfilMessage ? fulfilMessage(t, 'commit') : abortMessage(t),
          ),
        },
      ];
      await kafka.deliver(FULFIL, 14 + partition, message);
      const first = told(t);
      assert.match(
        first[1]!,
        /^abort-validation\/3100 /,
        'the transfer is aborted and its parties told',
      );
      await kafka.deliver(FULFIL, 14 + partition, message);
      assert.deepEqual(
        told(t).slice(first.length),
        first.slice(1),
        'told again as the first time, under the same event ids',
      );
      assert.equal((await service.transfers.get(t.transferId, payer)).state, 'ABORTED_REJECTED');
    }
  });

  test('a redelivered FX fulfil with a wrong FSPIOP-Destination is answered again as the abort it was, not 3100', async () => {
    const kafka = new RecordingKafka();
    await transport(kafka);
    const client = new FxClient(injecting(service.app), FxClient.parties(`d${run}`));
    await client.onboard();
    const { A, F } = client.parties;
    const p = client.payment();
    await kafka.deliver(PREPARE, 16, [
      { offset: 0, value: fxMessage('prepare', 'fx-prepare', p.commitRequestId, A, F, p.body) },
    ]);
    const reserve = [
      {
        offset: 0,
        value: fxMessage('fulfil', 'fx-reserve', p.commitRequestId, F, F, {
          conversionState: 'RESERVED',
          fulfilment: p.fx.fulfilment,
          completedTimestamp: p.answeredAt,
        }),
      },
    ];
    const told = (): string[] =>
      kafka.produced
        .filter((n) => n.key === p.commitRequestId)
        .map(
          ({ value: n }) =>
            `${n.metadata.event.action}/${n.metadata.event.state.code ?? n.metadata.event.state.status} ${n.from}→${n.to} ${n.metadata.event.id}`,
        );
    await kafka.deliver(FULFIL, 16, reserve);
    const first = told();
    assert.match(first[1]!, new RegExp(`^fx-abort-validation/3100 Hub→${A} `));
    await kafka.deliver(FULFIL, 16, reserve);
    assert.deepEqual(
      told().slice(first.length),
      first.slice(1),
      'told again as the first time, under the same event ids',
    );
    assert.equal((await client.fxGet(p)).body.conversionState, 'ABORTED');
  });

  test('a percent-encoded payload that is not valid UTF-8 is answered 3101', async () => {
    const kafka = new RecordingKafka();
    await transport(kafka);
    const x = newTransfer(payer, payee, '1');
    const message = prepareMessage(x);
    message.content.payload =
      'data:application/vnd.interoperability.transfers+json;version=1.0,%E0%A4%A';
    await kafka.deliver(PREPARE, 10, [{ offset: 0, value: message }]);
    assert.deepEqual(
      about(kafka, x).map((n) => [n.metadata.event.action, n.metadata.event.state.code]),
      [['prepare', '3101']],
    );
  });

  test('a storage error the transport does not know (a full disk after the money moved, a fault of ours) fails the batch, uncommitted, and kafkajs delivers it again: answered then as the ledger has it', async () => {
    const kafka = new RecordingKafka();
    await transport(kafka);
    const [x, y] = [newTransfer(payer, payee, '3'), newTransfer(payer, payee, '1')];
    // A fault of ours is retried too, not answered 2001.
    store.failNextSave = new TypeError("Cannot read properties of undefined (reading 'state')");
    assert.ok(
      await kafkajsRetries(
        await failure(kafka.deliver(PREPARE, 5, [{ offset: 0, value: prepareMessage(y) }])),
      ),
      'a fault of ours: kafkajs delivers the batch again',
    );
    assert.deepEqual(await kafka.deliver(PREPARE, 5, [{ offset: 0, value: prepareMessage(y) }]), [
      '0',
    ]);
    assert.deepEqual(actions(kafka, y), ['prepare/success']);
    await kafka.deliver(PREPARE, 6, [{ offset: 0, value: prepareMessage(x) }]);
    // The ledger commits, then the metadata's disk is full.
    const commit = [{ offset: 0, value: fulfilMessage(x, 'commit') }];
    store.failNextSave = Object.assign(new Error('ENOSPC: no space left on device, write'), {
      code: 'ENOSPC',
    });
    assert.ok(
      await kafkajsRetries(await failure(kafka.deliver(FULFIL, 6, commit))),
      'kafkajs delivers the batch again',
    );
    assert.deepEqual(
      actions(kafka, x),
      ['prepare/success'],
      'nobody is told of the commit yet, least of all that it failed',
    );
    assert.deepEqual(
      kafka.commitRequests.flat().filter((o) => o.topic === FULFIL),
      [],
      'its offset is not committed',
    );
    assert.equal(
      (await service.transfers.get(x.transferId, payer)).state,
      'COMMITTED',
      'the money moved',
    );
    assert.deepEqual(await kafka.deliver(FULFIL, 6, commit), ['0']);
    assert.deepEqual(
      actions(kafka, x),
      ['prepare/success', 'commit/success'],
      'the payer learns of the commit',
    );
    assert.deepEqual([about(kafka, x)[1].from, about(kafka, x)[1].to], [payee, payer]);
    assert.deepEqual(kafka.commitRequests.at(-1), [{ topic: FULFIL, partition: 6, offset: '1' }]);
  });

  test('a produce kafkajs will not retry (a message too large for the broker) fails the batch with an error it retries: the consumer goes on', async () => {
    const kafka = new RecordingKafka();
    await transport(kafka);
    const x = newTransfer(payer, payee, '1');
    const batch = [{ offset: 0, value: prepareMessage(x) }];
    kafka.produceError = new KafkaJSNonRetriableError(
      new KafkaJSProtocolError(
        Object.assign(
          new Error(
            'The request included a message larger than the max message size the server will accept',
          ),
          { type: 'MESSAGE_TOO_LARGE', code: 10, retriable: false },
        ),
      ),
    );
    assert.equal(
      await kafkajsRetries(kafka.produceError),
      false,
      'thrown as the producer threw it, kafkajs would stop consuming for good',
    );
    assert.ok(
      await kafkajsRetries(await failure(kafka.deliver(PREPARE, 7, batch))),
      'kafkajs delivers the batch again',
    );
    assert.deepEqual(kafka.commitRequests, []);
    kafka.produceError = undefined;
    assert.deepEqual(await kafka.deliver(PREPARE, 7, batch), ['0']);
    assert.deepEqual(actions(kafka, x), ['prepare/success']);
  });

  test('produce requests are bounded in bytes, not UTF-16 characters', async () => {
    const wide = (t: TestTransfer): any => {
      const message = prepareMessage(t);
      message.content.headers['x-note'] = 'é'.repeat(2000);
      return message;
    };
    const [d, e] = [newTransfer(payer, payee, '1'), newTransfer(payer, payee, '1')];
    const measure = new RecordingKafka();
    await transport(measure);
    await measure.deliver(PREPARE, 8, [{ offset: 0, value: wide(d) }]);
    const [sent] = measure.produced;
    const characters = sent!.key.length + JSON.stringify(sent!.value).length;
    // Two such notifications fit in characters, not in bytes (each é is two).
    const kafka = new RecordingKafka();
    await transport(kafka, { KAFKA_PRODUCE_MAX_BYTES: String(2 * characters + 100) });
    await Promise.all([
      kafka.deliver(PREPARE, 8, [{ offset: 1, value: wide(d) }]),
      kafka.deliver(PREPARE, 9, [{ offset: 0, value: wide(e) }]),
    ]);
    assert.deepEqual(
      kafka.produceRequests.map((r) => r.length),
      [1, 1],
    );
  });

  test('a stop commits what waits out KAFKA_COMMIT_INTERVAL_MS, and what a batch under way handles, before kafkajs stops taking commits', async () => {
    const kafka = new RecordingKafka();
    const started = await transport(kafka, { KAFKA_COMMIT_INTERVAL_MS: '60000' });
    const [a, b] = [newTransfer(payer, payee, '1'), newTransfer(payer, payee, '1')];
    await kafka.deliver(PREPARE, 11, [{ offset: 0, value: prepareMessage(a) }]);
    // The first commit went at once; the next waits out the interval.
    await kafka.handOver(PREPARE, 11, [{ offset: 1, value: prepareMessage(b) }]);
    const underway = kafka.handOver(PREPARE, 12, [
      { offset: 0, value: prepareMessage(newTransfer(payer, payee, '1')) },
    ]);
    await started.stop();
    await underway;
    assert.deepEqual(
      kafka.commitRequests
        .flat()
        .filter((o) => o.partition === 11)
        .at(-1),
      { topic: PREPARE, partition: 11, offset: '2' },
    );
    assert.deepEqual(
      kafka.commitRequests.flat().filter((o) => o.partition === 12),
      [{ topic: PREPARE, partition: 12, offset: '1' }],
      'the batch under way finished and committed',
    );
    assert.deepEqual(
      kafka.paused.sort(),
      [FULFIL, 'topic-transfer-get', PREPARE].sort(),
      'no new batch is fetched meanwhile',
    );
  });
});
