/**
 * Two service instances in Kafka drop-in mode, as README "Scaling out" describes the topology: one
 * consumer group over partitioned Mojaloop topics, one MariaDB, one TigerBeetle cluster. The group
 * shares the partitions between the instances, so a transfer's prepare and its fulfil are consumed
 * by whichever instance holds each partition; every transfer must still be forwarded once,
 * committed once, its money moved once, and answered alike by both instances. Skipped loudly
 * without a broker (Java/Maven), MariaDB or a TigerBeetle binary.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { AssignerProtocol, Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import {
  feedAndCollect,
  kafkaAvailable,
  startKafka,
  type RunningKafka,
  type SeenNotification,
} from './support/kafka-broker';
import { mariaDbUnavailable, startMariaDb, type RunningMariaDb } from './support/mariadb';
import {
  fulfilMessage,
  newTransfer,
  prepareMessage,
  type TestTransfer,
} from './support/mojaloop-messages';
import { onboard } from './support/onboard';
import { useRealCluster } from './support/real-cluster';

const PARTITIONS = 4;
const TRANSFERS = 40;
const unavailable = kafkaAvailable() ?? mariaDbUnavailable();
let broker: RunningKafka | undefined;
let mariadb: RunningMariaDb | undefined;
let producer: Producer | undefined;
let collector: Consumer | undefined;
const seen: SeenNotification[] = [];

before(async () => {
  if (unavailable !== undefined) {
    process.stderr.write(`\n*** SKIPPED: two instances in Kafka mode: ${unavailable}. ***\n\n`);
    return;
  }
  // Settled, not Promise.all: when one fails the other must still be known to after() to stop.
  const [kafka, db] = await Promise.allSettled([startKafka(), startMariaDb()]);
  if (kafka.status === 'fulfilled') broker = kafka.value;
  if (db.status === 'fulfilled') mariadb = db.value;
  if (kafka.status === 'rejected') throw kafka.reason;
  if (db.status === 'rejected') throw db.reason;
  ({ producer, collector } = await feedAndCollect(kafka.value, PARTITIONS, seen));
});
after(async () => {
  await collector?.disconnect();
  await producer?.disconnect();
  await broker?.stop();
  await mariadb?.stop();
});
const cluster = useRealCluster('two instances in Kafka mode');

/**
 * Each message to a partition of the test's choosing (keyed by transfer id, as notifications are).
 */
async function send(
  topic: 'prepare' | 'fulfil',
  messages: { transfer: TestTransfer; message: unknown; partition: number }[],
): Promise<void> {
  await producer!.send({
    topic: `topic-transfer-${topic}`,
    messages: messages.map(({ transfer, message, partition }) => ({
      key: transfer.transferId,
      value: JSON.stringify(message),
      partition,
    })),
  });
}

const notified = (transfer: TestTransfer, action: string): any[] =>
  seen
    .filter((n) => n.value.id === transfer.transferId && n.value.metadata.event.action === action)
    .map((n) => n.value);

async function until(what: string, done: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('two instances in Kafka mode: one consumer group, one database, one cluster', () => {
  test(
    'the group shares the partitions; every transfer is forwarded once, committed once, and answered alike by both',
    { timeout: 240_000 },
    async (t) => {
      if (broker === undefined || mariadb === undefined) return t.skip(unavailable!);
      if (cluster.current() === undefined) return t.skip('no TigerBeetle server binary');
      const run = randomBytes(3).toString('hex');
      const groupId = `ledger-${run}`;
      const config = loadConfig({
        LOG_LEVEL: 'silent',
        KAFKA_ENABLED: 'true',
        KAFKA_BROKERS: broker.brokers.join(','),
        KAFKA_GROUP_ID: groupId,
        MYSQL_ENABLED: 'true',
        MYSQL_PORT: String(mariadb.port),
        MYSQL_USER: mariadb.user,
        MYSQL_PASSWORD: mariadb.password,
        MYSQL_DATABASE: await mariadb.createDatabase(),
      });
      const services: Service[] = [];
      try {
        for (let i = 0; i < 2; i++)
          services.push(await buildService(config, { ledger: cluster.ledger() }));
        const [payer, payee] = [`kspayer${run}`, `kspayee${run}`];
        await onboard(
          (options) => services[0]!.app.inject(options),
          [payer, payee],
          '100000',
          100000,
        );

        // Both instances are members of the group; which holds each partition of the two topics.
        const owner = new Map<string, number>();
        const admin = new Kafka({
          clientId: 'test-admin',
          brokers: broker.brokers,
          logLevel: logLevel.NOTHING,
        }).admin();
        await admin.connect();
        try {
          const deadline = Date.now() + 60_000;
          for (;;) {
            const [group] = (await admin.describeGroups([groupId])).groups;
            if (group !== undefined && group.state === 'Stable' && group.members.length === 2) {
              for (const [member, description] of group.members.entries()) {
                const assigned =
                  AssignerProtocol.MemberAssignment.decode(description.memberAssignment)
                    ?.assignment ?? {};
                for (const [topic, partitions] of Object.entries(assigned))
                  for (const partition of partitions) owner.set(`${topic}/${partition}`, member);
              }
              if (
                ['prepare', 'fulfil'].every((topic) =>
                  Array.from({ length: PARTITIONS }, (_, p) =>
                    owner.has(`topic-transfer-${topic}/${p}`),
                  ).every(Boolean),
                )
              )
                break;
            }
            assert.ok(
              Date.now() < deadline,
              `the group never had both instances: ${JSON.stringify(group?.members.map((m) => m.clientId))} ${group?.state}`,
            );
            await new Promise((resolve) => setTimeout(resolve, 250));
          }
        } finally {
          await admin.disconnect();
        }

        // Prepare i goes to partition i mod P; the first half's fulfils to the next partition, the
        // rest's to the same one. Which instance gets each is the group's assignment: some must
        // cross.
        const transfers = Array.from({ length: TRANSFERS }, (_, i) =>
          newTransfer(payer, payee, `${i + 1}.25`),
        );
        const [preparedOn, fulfilledOn] = [
          (i: number): number => i % PARTITIONS,
          (i: number): number => (i < TRANSFERS / 2 ? i + 1 : i) % PARTITIONS,
        ];
        const crossing = transfers.filter(
          (_x, i) =>
            owner.get(`topic-transfer-prepare/${preparedOn(i)}`) !==
            owner.get(`topic-transfer-fulfil/${fulfilledOn(i)}`),
        ).length;
        assert.ok(
          crossing > 0,
          `some transfers prepared on one instance and fulfilled on the other (${crossing} of ${TRANSFERS} cross)`,
        );
        await send(
          'prepare',
          transfers.map((transfer, i) => ({
            transfer,
            message: prepareMessage(transfer),
            partition: preparedOn(i),
          })),
        );
        await until('every prepare forwarded', () =>
          transfers.every((x) => notified(x, 'prepare').length > 0),
        );
        await send(
          'fulfil',
          transfers.map((transfer, i) => ({
            transfer,
            message: fulfilMessage(transfer, 'commit'),
            partition: fulfilledOn(i),
          })),
        );
        await until('every commit notified', () =>
          transfers.every((x) => notified(x, 'commit').length > 0),
        );
        // Anything doubled would arrive within the same few hundred ms: give it time to show.
        await new Promise((resolve) => setTimeout(resolve, 2000));
        for (const x of transfers) {
          const [forwards, commits] = [notified(x, 'prepare'), notified(x, 'commit')];
          assert.equal(forwards.length, 1, `${x.transferId}: forwarded once`);
          assert.equal(forwards[0].to, payee);
          assert.equal(commits.length, 1, `${x.transferId}: committed once`);
          assert.equal(commits[0].to, payer);
          assert.equal(commits[0].metadata.event.state.status, 'success');
        }
        assert.equal(
          seen.filter((n) => n.value.metadata.event.state.status !== 'success').length,
          0,
          'no error notification',
        );

        // 1.25 + 2.25 + … + 40.25 in cents: the money moved once per transfer.
        const expected = transfers.reduce((sum, _x, i) => sum + BigInt(i + 1) * 100n + 25n, 0n);
        for (const service of services) {
          const positionCents = async (name: string): Promise<bigint> => {
            const text = /"value":(-?[0-9.]+)/.exec(
              (
                await service.app.inject({
                  method: 'GET',
                  url: `/participants/${name}/positions?currency=USD`,
                })
              ).body,
            )![1]!;
            const [units, fraction = ''] = text.split('.');
            const cents = BigInt(units!.replace('-', '')) * 100n + BigInt(fraction.padEnd(2, '0'));
            return text.startsWith('-') ? -cents : cents;
          };
          assert.equal(
            await positionCents(payer),
            expected,
            "the payer's position, on either instance",
          );
          assert.equal(await positionCents(payee), -expected);
          for (const x of [transfers[0]!, transfers[TRANSFERS - 1]!]) {
            const got = await service.app.inject({
              method: 'GET',
              url: `/transfers/${x.transferId}`,
              headers: {
                'fspiop-source': payer,
                accept: 'application/vnd.interoperability.transfers+json;version=1.1',
              },
            });
            const body = JSON.parse(got.body);
            assert.equal(body.transferState, 'COMMITTED', got.body);
            assert.equal(body.fulfilment, x.fulfilment);
          }
        }
      } finally {
        await Promise.all(services.map((s) => s.close()));
      }
    },
  );
});
