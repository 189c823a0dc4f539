/**
 * Kafka going away under load (issue 28, item 3), in the Kafka drop-in mode on a real broker:
 * ml-api-adapter and the DFSPs are played by a feeder that produces prepares at a steady rate and,
 * once a prepare is forwarded to its payee, the payee's fulfil (each send retried until the broker
 * takes it), while a collector of its own reads every notification. The service runs in process,
 * on a ledger the caller gives (embedded or a real cluster) and a memory store seen as shared (as
 * MySQL is: another instance's write may land a while after it was asked). One fault, injected
 * at a third of the run and healed at two thirds:
 *
 *  - 'Kafka broker kill -9': the broker SIGKILLed, restarted on its data;
 *  - 'Kafka rebalance mid-batch': a second instance joins the consumer group (partitions move
 *    while batches are under way) and leaves it again.
 *
 * Nothing is restarted by hand: consumers and producers must resume by themselves. Then every
 * transfer is reconciled against the ledger and the notifications:
 *
 *  - lost: committed in the ledger without a commit notification, or the reverse;
 *  - doubled: told two outcomes (a commit under two event ids, or a commit and an abort);
 *  - stuck: still reserved in the ledger, or its prepare never forwarded;
 *  - books: every participant's position is what the committed transfers make, nothing reserved;
 *  - repeated: notifications seen again under an event id already seen (at-least-once delivery:
 *    allowed, counted);
 *  - max answer: the longest from a message's first send to its answer (the outage included);
 *  - recover: from the heal to the first commit told of a transfer prepared after it.
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { transferIdToU128 } from '../../src/domain/shared/ids';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import type { Ledger } from '../../src/ports/ledger';
import type { MetadataStore } from '../../src/ports/metadata';
import { RESULT_HEADER, resultTable, type ScenarioResult } from './fault-suite';
import { sharedView } from './held-writes';
import type { RunningKafka } from './kafka-broker';
import { fulfilMessage, newTransfer, prepareMessage, type TestTransfer } from './mojaloop-messages';
import { onboard } from './onboard';
import { sleep } from './service-process';

export const KAFKA_FAULTS = ['Kafka broker kill -9', 'Kafka rebalance mid-batch'] as const;
export type KafkaFault = (typeof KAFKA_FAULTS)[number];

export interface KafkaFaultOptions {
  /** Traffic lasts this long; the fault starts at a third and heals at two thirds of it. */
  durationMs: number;
  /** Transfers started a second. */
  ratePerSecond: number;
  /** Partitions of each topic. */
  partitions: number;
}

/** A fault suite's row (fault-suite.ts), and: */
export interface KafkaFaultResult
  extends Omit<ScenarioResult, 'scenario' | 'failures' | 'slowestAnswer'> {
  scenario: KafkaFault;
  /** From the heal to the first commit told of a transfer prepared after it. */
  recoverSeconds: number;
  /** Notifications seen again under an event id already seen. */
  repeated: number;
}

/** Another instance's write may land this long after it was asked (the store is seen as MySQL). */
const SHARED_WRITE_TIMEOUT_MS = 2000;
/** Past the traffic, how long every transfer may take to be told its end. */
const SETTLE_MS = 90_000;
/** Once all is told, how long a repeated or doubled notification may still take to show. */
const LINGER_MS = 3000;
const RESEND_PAUSE_MS = 250;
const PARTICIPANTS = 4;
/** The service's settings: a session the second instance's join and leave keep short to see. */
const SERVICE_ENV = {
  LOG_LEVEL: 'silent',
  KAFKA_ENABLED: 'true',
  KAFKA_SESSION_TIMEOUT_MS: '10000',
  KAFKA_HEARTBEAT_INTERVAL_MS: '1000',
  KAFKA_COMMIT_INTERVAL_MS: '250',
  EXPIRY_SWEEP_MS: '250',
};

interface Tracked {
  transfer: TestTransfer;
  /** The first send of its prepare, of its fulfil. */
  preparedAt: number;
  fulfilledAt?: number;
  /** When its prepare was first forwarded, its commit first told. */
  forwardedAt?: number;
  committedAt?: number;
}

interface Seen {
  eventId: string;
  transferId: string;
  action: string;
  status: string;
  at: number;
}

/** `target`, whose close() leaves it open: the run closes its ledger, not a service. */
function unclosable<T extends { close(): Promise<void> }>(target: T): T {
  return new Proxy(target, {
    get: (t, key, receiver) =>
      key === 'close' ? async () => undefined : (Reflect.get(t, key, receiver) as unknown),
  });
}

export async function runKafkaFault(
  fault: KafkaFault,
  broker: RunningKafka,
  ledger: Ledger,
  options: KafkaFaultOptions,
  log: (line: string) => void = () => {},
): Promise<KafkaFaultResult> {
  const run = randomBytes(3).toString('hex');
  const topics = {
    KAFKA_TOPIC_PREPARE: `kf-${run}-prepare`,
    KAFKA_TOPIC_FULFIL: `kf-${run}-fulfil`,
    KAFKA_TOPIC_GET: `kf-${run}-get`,
    KAFKA_TOPIC_NOTIFICATION: `kf-${run}-notification`,
    KAFKA_TOPIC_SETTLEMENT_CLOSE: `kf-${run}-settlement-close`,
  };
  const client = new Kafka({
    clientId: `feeder-${run}`,
    brokers: broker.brokers,
    logLevel: logLevel.NOTHING,
  });
  const admin = client.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: Object.values(topics).map((topic) => ({ topic, numPartitions: options.partitions })),
  });
  await admin.disconnect();
  const config = loadConfig({
    ...SERVICE_ENV,
    ...topics,
    KAFKA_BROKERS: broker.brokers.join(','),
    KAFKA_GROUP_ID: `kf-${run}`,
    KAFKA_TOPIC_PARTITIONS: String(options.partitions),
  });
  const store: MetadataStore = unclosable(
    sharedView(new MemoryMetadataStore(), SHARED_WRITE_TIMEOUT_MS),
  );
  const parts = { ledger: unclosable(ledger), store };
  const services: Service[] = [await buildService(config, parts)];
  const producer: Producer = client.producer({ retry: { retries: 2 } });
  let collector: Consumer | undefined;
  /** Set once the run is over: a send still retrying gives up. */
  let over = false;
  try {
    const names = Array.from({ length: PARTICIPANTS }, (_, i) => `kf${run}p${i}`);
    await onboard((o) => services[0]!.app.inject(o), names, '10000000', 10_000_000);
    await producer.connect();
    const send = async (topic: string, transfer: TestTransfer, message: unknown) => {
      const value = JSON.stringify(message);
      while (!over) {
        try {
          await producer.send({ topic, messages: [{ key: transfer.transferId, value }] });
          return;
        } catch {
          await sleep(RESEND_PAUSE_MS);
        }
      }
    };
    const tracked = new Map<string, Tracked>();
    const seen: Seen[] = [];
    // A short session: after the broker's restart its group waits out its members from before.
    collector = client.consumer({
      groupId: `kf-${run}-collector`,
      sessionTimeout: 6000,
      heartbeatInterval: 1000,
    });
    await collector.connect();
    await collector.subscribe({ topic: topics.KAFKA_TOPIC_NOTIFICATION, fromBeginning: true });
    await collector.run({
      eachMessage: async ({ message }) => {
        const value = JSON.parse(message.value!.toString());
        const note: Seen = {
          eventId: value.metadata.event.id,
          transferId: value.id,
          action: value.metadata.event.action,
          status: value.metadata.event.state.status,
          at: Date.now(),
        };
        seen.push(note);
        const t = tracked.get(note.transferId);
        if (t === undefined || note.status !== 'success') return;
        if (note.action === 'commit') t.committedAt ??= note.at;
        if (note.action !== 'prepare' || t.forwardedAt !== undefined) return;
        // The payee answers the first forward only, as a DFSP would.
        t.forwardedAt = note.at;
        t.fulfilledAt = Date.now();
        void send(topics.KAFKA_TOPIC_FULFIL, t.transfer, fulfilMessage(t.transfer, 'commit'));
      },
    });

    let stopping = false;
    const feeder = (async () => {
      for (let i = 0; !stopping; i++) {
        const [payer, payee] = [names[i % PARTICIPANTS]!, names[(i + 1) % PARTICIPANTS]!];
        const transfer = newTransfer(payer, payee, String(1 + (i % 9)));
        tracked.set(transfer.transferId, { transfer, preparedAt: Date.now() });
        void send(topics.KAFKA_TOPIC_PREPARE, transfer, prepareMessage(transfer));
        await sleep(1000 / options.ratePerSecond);
      }
    })();
    await sleep(options.durationMs / 3);
    const injectedAt = Date.now();
    log(`${fault}: injected after ${tracked.size} transfers`);
    if (fault === 'Kafka broker kill -9') await broker.kill();
    else services.push(await buildService(config, parts));
    await sleep(options.durationMs / 3);
    if (fault === 'Kafka broker kill -9') await broker.restart();
    else await services.pop()!.close();
    const healedAt = Date.now();
    log(`${fault}: healed after ${tracked.size} transfers`);
    await sleep(options.durationMs / 3);
    stopping = true;
    await feeder;
    const all = [...tracked.values()];
    const settleBy = Date.now() + SETTLE_MS;
    while (Date.now() < settleBy && all.some((t) => t.committedAt === undefined)) await sleep(250);
    await sleep(LINGER_MS);
    return {
      scenario: fault,
      ...(await reconcile(all, seen, names, ledger)),
      duringFault: all.filter(
        (t) => t.preparedAt < healedAt && (t.committedAt ?? Infinity) > injectedAt,
      ).length,
      maxAnswerMs: Math.round(
        Math.max(
          ...all.map((t) =>
            Math.max(
              (t.forwardedAt ?? Date.now()) - t.preparedAt,
              (t.committedAt ?? Date.now()) - (t.fulfilledAt ?? Date.now()),
            ),
          ),
        ),
      ),
      recoverSeconds:
        Math.round(
          (Math.min(
            ...all
              .filter((t) => t.preparedAt >= healedAt && t.committedAt !== undefined)
              .map((t) => t.committedAt!),
          ) -
            healedAt) /
            100,
        ) / 10,
    };
  } finally {
    over = true;
    await collector?.disconnect();
    await producer.disconnect();
    await Promise.all(services.map((s) => s.close()));
  }
}

async function reconcile(
  all: readonly Tracked[],
  seen: readonly Seen[],
  names: readonly string[],
  ledger: Ledger,
): Promise<
  Pick<
    KafkaFaultResult,
    'transfers' | 'committed' | 'lost' | 'doubled' | 'stuck' | 'booksOk' | 'repeated' | 'problems'
  >
> {
  const states = await ledger.transferStates(
    all.map((t) => transferIdToU128(t.transfer.transferId)),
  );
  const about = new Map<string, Seen[]>();
  for (const note of seen)
    about.set(note.transferId, [...(about.get(note.transferId) ?? []), note]);
  const problems: string[] = [];
  let [committed, lost, doubled, stuck] = [0, 0, 0, 0];
  const expected = new Map<string, bigint>(names.map((name) => [name, 0n]));
  for (const [i, t] of all.entries()) {
    const { transferId, payer, payee, amount } = t.transfer;
    const state = states[i]!;
    const notes = about.get(transferId) ?? [];
    const commits = new Set(
      notes.filter((n) => n.action === 'commit' && n.status === 'success').map((n) => n.eventId),
    );
    const failures = notes.filter((n) => n.status !== 'success' || n.action.includes('abort'));
    if (state === 'committed') {
      committed++;
      const cents = BigInt(amount) * 100n;
      expected.set(payer, expected.get(payer)! + cents);
      expected.set(payee, expected.get(payee)! - cents);
    }
    if ((state === 'committed') !== commits.size > 0) {
      lost++;
      problems.push(`${transferId}: the ledger says ${state}, ${commits.size} commit(s) told`);
    }
    if (commits.size > 1 || (commits.size > 0 && failures.length > 0)) {
      doubled++;
      problems.push(`${transferId}: told ${notes.map((n) => `${n.action}/${n.status}`).join(' ')}`);
    }
    if (state === 'reserved' || t.forwardedAt === undefined) {
      stuck++;
      problems.push(`${transferId}: ledger ${state}, forwarded ${t.forwardedAt !== undefined}`);
    }
  }
  const balances = await ledger.balances(
    names.map((participant) => ({ participant, currency: 'USD' })),
  );
  let booksOk = true;
  for (const [i, name] of names.entries()) {
    const balance = balances[i];
    if (balance?.position !== expected.get(name) || balance?.reserved !== 0n) {
      booksOk = false;
      problems.push(
        `${name}: position ${balance?.position} reserved ${balance?.reserved}, the committed transfers make ${expected.get(name)}`,
      );
    }
  }
  const repeated = seen.length - new Set(seen.map((n) => n.eventId)).size;
  return { transfers: all.length, committed, lost, doubled, stuck, booksOk, repeated, problems };
}

/** The suite's Kafka table: one row per scenario. */
export function kafkaResultTable(results: readonly KafkaFaultResult[]): string[][] {
  return resultTable(results).map((row, i) => [...row, String(results[i]!.repeated)]);
}

export const KAFKA_RESULT_HEADER = [...RESULT_HEADER, 'repeated'];
