/**
 * The service started the way Mojaloop's charts (mojaloop/helm v17.3.0) start central-ledger and
 * central-settlement, with nothing but the images swapped (issue 26, "Done when"): `npm run build`
 * laid out as the image's /opt/app; central-ledger v19.14.0's own config/default.json, as
 * published, with only hosts, ports and a TIGERBEETLE section changed; the charts' environment;
 * the pre-install Job `sh -c "npm run migrate"` first, then each Deployment's command as a process
 * of its own (API, prepare, fulfil, get, timeout, admin, position) over one MariaDB, a real Kafka
 * broker and a three-replica TigerBeetle cluster. Transfers arrive on Kafka exactly as
 * ml-api-adapter v16.10.1 writes them (its captured shapes, test/fixtures/kafka; a variant goes
 * through a live ml-api-adapter where one is installed): prepared by the prepare process,
 * committed by the fulfil process, expired by the timeout process, read by the get process, every
 * notification once and the positions exact.
 * A process configured by central-settlement's own default.json then answers /v2/health and runs
 * a settlement. The published files are read from the services' git mirrors at test time: without
 * them (or Kafka, MariaDB, TigerBeetle) the test skips, loudly.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import {
  feedAndCollect,
  kafkaAvailable,
  startKafka,
  type RunningKafka,
  type SeenNotification,
} from './support/kafka-broker';
import {
  Dfsps,
  fspiopHeaders,
  mlApiAdapterUnavailable,
  startMlApiAdapter,
  transferEndpoints,
} from './support/ml-api-adapter';
import { mariaDbUnavailable, startMariaDb, type RunningMariaDb } from './support/mariadb';
import {
  build,
  buildMissing,
  CENTRAL_LEDGER,
  CENTRAL_SETTLEMENT,
  chartEnvironment,
  createSchema,
  installationConfig,
  layOutApp,
  logTails,
  migrationJob,
  migrationLockState,
  publishedConfig,
  startPod,
  type Installation,
  type MySqlAccount,
  type Pod,
  type PublishedConfig,
} from './support/mojaloop-install';
import {
  fulfilMessage,
  getMessage,
  newTransfer,
  prepareMessage,
  type TestTransfer,
} from './support/mojaloop-messages';
import { freePort, freePorts } from './support/net';
import { call, sleep, stopProcess, type Started } from './support/service-process';
import { Hub } from './support/settlement-hub';
import {
  startCluster,
  tigerbeetleBinary,
  type RunningCluster,
} from './support/tigerbeetle-cluster';

const WHAT = 'the service started as Mojaloop’s charts start central-ledger';
/** central-ledger's handler Deployments (mojaloop/helm centralledger/chart-handler-*). */
const HANDLER_FLAGS = ['--prepare', '--fulfil', '--get', '--timeout', '--admin', '--position'];
/** The consumer groups of central-ledger's own file, one process each. */
const GROUPS = {
  prepare: 'cl-group-transfer-prepare',
  fulfil: 'cl-group-transfer-fulfil',
  get: 'cl-group-transfer-get',
};
/** central-settlement's port in its file and its chart. */
const SETTLEMENT_PORT = 3007;
/** A transfer left to expire: long enough to be prepared first, short for the test. */
const EXPIRES_IN_MS = 8_000;
/**
 * Its expiry is told by the timeout process, which sweeps every 15 s (the file's HANDLERS.TIMEOUT
 * .TIMEXP) and takes over another process's reservations once overdue.
 */
const EXPIRY_TOLD_WITHIN_MS = 180_000;

const ledgerFile = publishedConfig(CENTRAL_LEDGER);
const settlementFile = publishedConfig(CENTRAL_SETTLEMENT);
const unavailable =
  kafkaAvailable() ??
  mariaDbUnavailable() ??
  (tigerbeetleBinary() === undefined ? 'no tigerbeetle binary on PATH' : undefined) ??
  ('unavailable' in ledgerFile ? ledgerFile.unavailable : undefined) ??
  ('unavailable' in settlementFile ? settlementFile.unavailable : undefined);

const startedAt = Date.now();
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mojaloop-install-'));
const logDir = path.join(workDir, 'logs');
fs.mkdirSync(logDir);
let broker: RunningKafka | undefined;
let mariadb: RunningMariaDb | undefined;
let cluster: RunningCluster | undefined;
let producer: Producer | undefined;
let collector: Consumer | undefined;
const seen: SeenNotification[] = [];
const pods = new Map<string, Pod>();
let failed = false;

before(async () => {
  if (unavailable !== undefined) {
    process.stderr.write(`\n*** SKIPPED: ${WHAT}: ${unavailable}. ***\n\n`);
    return;
  }
  await step(startInstallation);
});

/** The build, then the installation's servers: Kafka, MariaDB, a three-replica cluster. */
async function startInstallation(): Promise<void> {
  // The compiler first, alone: beside it on two cores the replicas missed their start's deadline.
  await build(path.join(logDir, 'npm-run-build.log'));
  // Settled, not Promise.all: whatever started must be known to after() to stop.
  const [kafka, db, ledger] = await Promise.allSettled([
    startKafka(),
    startMariaDb(),
    // A cluster id the file can hold as the JSON number the 2022 integration wrote.
    startCluster({
      replicas: 3,
      clusterId: BigInt(randomInt(1, 2 ** 31)),
      // Beside a JVM and MariaDB starting on two cores, replicas have taken over a minute.
      readyTimeoutMs: 180_000,
    }),
  ]);
  if (kafka.status === 'fulfilled') broker = kafka.value;
  if (db.status === 'fulfilled') mariadb = db.value;
  if (ledger.status === 'fulfilled') cluster = ledger.value;
  for (const result of [kafka, db, ledger]) if (result.status === 'rejected') throw result.reason;
  ({ producer, collector } = await feedAndCollect(broker!, 1, seen));
}

after(async () => {
  if (failed) process.stderr.write(`\n${WHAT}: the processes' logs${logTails(logDir)}\n`);
  await Promise.all([...pods.values()].map((pod) => stopProcess(pod.started)));
  await collector?.disconnect();
  await producer?.disconnect();
  await Promise.all([broker?.stop(), mariadb?.stop(), cluster?.stop()]);
  process.stderr.write(
    `[mojaloop-install] ${((Date.now() - startedAt) / 1000).toFixed(0)} s in all; logs in ${logDir}\n`,
  );
  if (!failed) fs.rmSync(workDir, { recursive: true, force: true });
});

/** Runs a step; a failure is remembered so that after() prints the processes' logs. */
async function step(work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    failed = true;
    throw error;
  }
}

async function until(
  what: string | (() => string),
  done: () => boolean | Promise<boolean>,
  ms = 60_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline)
      assert.fail(
        `timed out after ${ms / 1000} s waiting for ${typeof what === 'string' ? what : what()}`,
      );
    await sleep(200);
  }
}

function pod(label: string): Pod {
  const found = pods.get(label);
  assert.ok(found !== undefined, `${label} is running`);
  return found;
}

let hub: Hub | undefined;
let settlementBase: string;

describe(WHAT, () => {
  const account = (): MySqlAccount => ({
    port: mariadb!.port,
    user: mariadb!.user,
    password: mariadb!.password,
  });

  test(
    'the migration Job, then every Deployment’s command as a process of its own, healthy',
    { timeout: 600_000 },
    async (t) => {
      if (unavailable !== undefined) return t.skip(unavailable);
      await step(async () => {
        assert.equal(buildMissing(), undefined, 'npm run build lays out dist/ as /opt/app');
        const ledger = ledgerFile as PublishedConfig;
        const settlement = settlementFile as PublishedConfig;
        const installation: Installation = {
          mysqlPort: mariadb!.port,
          brokers: broker!.brokers,
          ledger: { clusterId: cluster!.clusterId, addresses: cluster!.addresses },
        };
        const schema = ledger.file['DATABASE'].SCHEMA as string;
        assert.equal(settlement.file['DATABASE'].SCHEMA, schema, 'one schema for both services');
        await createSchema(account(), schema);

        // One /opt/app per image, each with its service's file mounted at config/.
        const ledgerApp = path.join(workDir, 'central-ledger');
        layOutApp(ledgerApp, installationConfig(ledger, installation, 3001));
        const settlementApp = path.join(workDir, 'central-settlement');
        const settlementPort = (await portFree(SETTLEMENT_PORT))
          ? SETTLEMENT_PORT
          : await freePort();
        layOutApp(settlementApp, installationConfig(settlement, installation, settlementPort));

        const ledgerEnv = (port: number, extra: Record<string, string> = {}): NodeJS.ProcessEnv =>
          chartEnvironment(CENTRAL_LEDGER, { ...account(), port, home: workDir, extra });
        await migrationJob(ledgerApp, ledgerEnv(3001), path.join(logDir, 'migration-job.log'));
        assert.equal(
          await migrationLockState(account(), schema),
          JSON.stringify([{ is_locked: 0 }]),
          'the handler charts’ wait-for-mysql init container lets the pods start',
        );

        // What each chart's own file sets per pod, here through central-ledger's variables: every
        // pod runs with migrations off; the API's pod with HANDLERS.DISABLED (central-ledger's API
        // process runs every handler too without it).
        const ports = await freePorts(HANDLER_FLAGS.length + 2);
        const commands = [
          {
            label: 'centralledger-service',
            args: ['src/api/index.js'],
            port: ports[0]!,
            perPod: { CLEDG_HANDLERS__DISABLED: 'true' },
          },
          ...HANDLER_FLAGS.map((flag, i) => ({
            label: `centralledger-handler${flag.replace('--', '-')}`,
            args: ['src/handlers/index.js', 'handler', flag],
            port: ports[i + 1]!,
            perPod: {},
          })),
        ];
        const settlementEnv = (port: number): NodeJS.ProcessEnv =>
          chartEnvironment(CENTRAL_SETTLEMENT, { ...account(), port, home: workDir });
        const starting = [
          ...commands.map(({ perPod, ...command }) =>
            startPod({
              ...command,
              appDir: ledgerApp,
              env: ledgerEnv(command.port, { CLEDG_MIGRATIONS__DISABLED: 'true', ...perPod }),
              readyPath: '/health',
              logDir,
            }),
          ),
          startPod({
            label: 'centralsettlement-service',
            appDir: settlementApp,
            args: ['src/api/index.js'],
            env: settlementEnv(settlementPort),
            port: settlementPort,
            readyPath: '/v2/health',
            logDir,
          }),
          startPod({
            label: 'centralsettlement-handler-deferredsettlement',
            appDir: settlementApp,
            args: ['src/handlers/index.js', 'h', '--deferredSettlement'],
            env: settlementEnv(ports[ports.length - 1]!),
            port: ports[ports.length - 1]!,
            readyPath: '/health',
            logDir,
          }),
        ];
        const results = await Promise.allSettled(starting);
        for (const result of results)
          if (result.status === 'fulfilled') pods.set(result.value.label, result.value);
        const refused = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
        assert.deepEqual(refused, [], 'every pod passes its probe');
        process.stderr.write(
          `[mojaloop-install] ${pods.size} pods healthy ${((Date.now() - startedAt) / 1000).toFixed(0)} s after the start\n`,
        );

        hub = new Hub(pod('centralledger-service').started.base);
        settlementBase = pod('centralsettlement-service').started.base;
        assert.equal(settlementPort, pod('centralsettlement-service').started.port);
        const metrics = await call(hub.base, 'GET', '/metrics');
        assert.equal(metrics.status, 200);
        assert.match(metrics.text, /^moja_cl_/m, 'the file’s metrics prefix');
      });
    },
  );

  test(
    'transfers from ml-api-adapter on Kafka: prepared, committed, read and expired each by its own process; every notification once, positions exact',
    { timeout: 600_000 },
    async (t) => {
      if (unavailable !== undefined) return t.skip(unavailable);
      if (hub === undefined) return t.skip('the pods did not start');
      const api = hub;
      await step(async () => {
        await api.onboardHub();
        await api.onboard('A', '10000', '10000');
        await api.onboard('B', '10000', '10000');
        const [payer, payee] = [api.name('A'), api.name('B')];
        await waitForGroups();

        const t1 = newTransfer(payer, payee, '10.25');
        const t2 = newTransfer(payee, payer, '3.5');
        const t3 = newTransfer(payer, payee, '7.77', 'USD', EXPIRES_IN_MS);
        await send(
          'prepare',
          [t1, t2, t3].map((x) => prepareMessage(x)),
        );
        await until('the three prepares forwarded', () =>
          [t1, t2, t3].every((x) => told(x, 'prepare').length > 0),
        );
        assert.deepEqual(await api.positions('A', 'B'), ['18.02', '3.5']);

        await send('fulfil', [fulfilMessage(t1, 'commit'), fulfilMessage(t2, 'commit')]);
        await until('the two commits told', () =>
          [t1, t2].every((x) => told(x, 'commit').length > 0),
        );
        assert.deepEqual(await api.positions('A', 'B'), ['14.52', '-6.75']);

        await send('get', [getMessage(t1, payer)]);
        await until('the GET answered', () => told(t1, 'get').length > 0);

        const expiring = Date.now();
        await until(
          'the expiry told',
          () => told(t3, 'timeout-reserved').length > 0,
          EXPIRY_TOLD_WITHIN_MS,
        );
        process.stderr.write(
          `[mojaloop-install] expiry told ${((Date.now() - expiring) / 1000).toFixed(0)} s after the GET (the transfer expired ${EXPIRES_IN_MS / 1000} s after its prepare)\n`,
        );
        assert.deepEqual(await api.positions('A', 'B'), ['6.75', '-6.75']);
        assert.equal(await api.transferState(t1.transferId, 'A'), 'COMMITTED');
        assert.equal(await api.transferState(t3.transferId, 'A'), 'ABORTED');

        // Anything told twice would come within moments: give it time to show.
        await sleep(3_000);
        const notifications = seen.map((n) => n.value);
        const eventIds = notifications.map((n) => n.metadata.event.id);
        assert.equal(new Set(eventIds).size, eventIds.length, 'every event id once');
        assert.deepEqual(
          notifications.map((n) => `${n.id} ${n.metadata.event.action}`).sort(),
          [
            `${t1.transferId} prepare`,
            `${t1.transferId} commit`,
            `${t1.transferId} get`,
            `${t2.transferId} prepare`,
            `${t2.transferId} commit`,
            `${t3.transferId} prepare`,
            `${t3.transferId} timeout-reserved`,
          ].sort(),
          'every callback once, and nothing else',
        );
        for (const x of [t1, t2, t3]) {
          const [forward] = told(x, 'prepare');
          assert.deepEqual([forward.from, forward.to], [x.payer, x.payee]);
          assert.equal(forward.metadata.event.state.status, 'success');
        }
        for (const x of [t1, t2]) {
          const [commit] = told(x, 'commit');
          assert.deepEqual([commit.from, commit.to], [x.payee, x.payer]);
          assert.equal(commit.metadata.event.state.status, 'success');
        }
        const [got] = told(t1, 'get');
        assert.deepEqual(
          [got.from, got.to, got.metadata.event.state.status],
          ['Hub', payer, 'success'],
        );
        assert.equal(got.content.payload.transferState, 'COMMITTED');
        assert.equal(got.content.payload.fulfilment, t1.fulfilment);
        const [expired] = told(t3, 'timeout-reserved');
        assert.deepEqual([expired.from, expired.to], ['Hub', payer]);
        assert.equal(expired.content.payload.errorInformation.errorCode, '3303');
        assert.deepEqual(expired.content.context, { payer, payee });

        // Each topic was consumed in central-ledger's own group, by one process: its handler's.
        await until('the offsets committed', async () => {
          const committed = await committedOffsets();
          return committed.prepare === 3 && committed.fulfil === 2 && committed.get === 1;
        });
        for (const pod of pods.values())
          assert.equal(pod.started.exit, undefined, `${pod.label} still runs`);
      });
    },
  );

  test(
    'a central-settlement-configured process answers /v2/health and runs a settlement',
    { timeout: 300_000 },
    async (t) => {
      if (unavailable !== undefined) return t.skip(unavailable);
      if (hub === undefined) return t.skip('the pods did not start');
      const api = hub;
      await step(async () => {
        const health = await call(settlementBase, 'GET', '/v2/health');
        assert.equal(health.status, 200, health.text);
        const settlement = new Hub(settlementBase, api.run);
        const windowId = await settlement.openWindowId();
        const closed = await settlement.v2('POST', `/settlementWindows/${windowId}`, {
          state: 'CLOSED',
          reason: 'end of day',
        });
        assert.equal(closed.status, 200, closed.text);
        assert.equal(closed.body.state, 'OPEN');
        const created = await settlement.v2('POST', '/settlements', {
          settlementModel: 'DEFERREDNETUSD',
          reason: 'end of day',
          settlementWindows: [{ id: windowId }],
        });
        assert.equal(created.status, 200, created.text);
        assert.equal(created.body.state, 'PENDING_SETTLEMENT');
        const nets = new Map<number, unknown>(
          created.body.participants.flatMap((p: any) =>
            p.accounts.map((a: any) => [a.id, a.netSettlementAmount]),
          ),
        );
        assert.deepEqual(
          [
            nets.get(await api.accountId('A', 'POSITION')),
            nets.get(await api.accountId('B', 'POSITION')),
          ],
          [
            { amount: 6.75, currency: 'USD' },
            { amount: -6.75, currency: 'USD' },
          ],
        );
        assert.equal(nets.size, 2, 'the two DFSPs, nothing else');
        const settlementId = created.body.id as number;
        const states = ['PS_TRANSFERS_RECORDED', 'PS_TRANSFERS_RESERVED', 'PS_TRANSFERS_COMMITTED'];
        let settled = created;
        for (const state of [...states, 'SETTLED'])
          settled = await settlement.settleAll(settlementId, state);
        assert.equal(settled.body.state, 'SETTLED');
        assert.equal(
          (await settlement.v2('GET', `/settlementWindows/${windowId}`)).body.state,
          'SETTLED',
        );
        // Read back through the central-ledger API process: one ledger, one database.
        assert.deepEqual(await api.positions('A', 'B'), ['0', '0']);
      });
    },
  );
});

describe(`${WHAT}, behind a real ml-api-adapter v16.10.1`, () => {
  const missing = mlApiAdapterUnavailable();
  let dfsps: Dfsps | undefined;
  let adapter: Started | undefined;
  after(async () => {
    if (adapter !== undefined) await stopProcess(adapter);
    await dfsps?.stop();
  });

  test(
    'DFSPs’ requests through ml-api-adapter: prepared, committed, read and expired by their processes; every callback once, positions exact',
    { timeout: 600_000 },
    async (t) => {
      if (unavailable !== undefined) return t.skip(unavailable);
      if (missing !== undefined) {
        process.stderr.write(
          `\n*** SKIPPED: ${WHAT}, behind a real ml-api-adapter: ${missing}. ***\n\n`,
        );
        return t.skip(missing);
      }
      if (hub === undefined) return t.skip('the pods did not start');
      const api = hub;
      await step(async () => {
        dfsps = new Dfsps();
        const callbacks = await dfsps.start();
        await api.onboard('C', '10000', '10000');
        await api.onboard('D', '10000', '10000');
        const [payer, payee] = [api.name('C'), api.name('D')];
        for (const dfsp of [payer, payee])
          for (const endpoint of transferEndpoints(callbacks, dfsp))
            await api.ok('POST', `/participants/${dfsp}/endpoints`, endpoint);
        adapter = await startMlApiAdapter({
          centralLedger: api.base,
          brokers: broker!.brokers,
          port: await freePort(),
          workDir,
          logDir,
        });
        const request = async (
          method: string,
          url: string,
          headers: Record<string, string>,
          body?: unknown,
        ): Promise<void> => {
          const answer = await call(adapter!.base, method, url, body, headers);
          // FSPIOP: a request is accepted (202), a callback such as the payee's PUT answered 200.
          const expected = method === 'PUT' ? 200 : 202;
          assert.equal(
            answer.status,
            expected,
            `${method} ${url}: ${answer.status} ${answer.text}`,
          );
        };
        /** What `dfsp` received about `x` by `method` on `path` (the id written `{id}`). */
        const received = (dfsp: string, x: TestTransfer, method: string, path: string): any[] =>
          dfsps!
            .about(x.transferId)
            .filter((c) => c.dfsp === dfsp && c.method === method && c.path === path);

        const committed = newTransfer(payer, payee, '4.2');
        const expiring = newTransfer(payer, payee, '1.11', 'USD', EXPIRES_IN_MS);
        for (const x of [committed, expiring])
          await request('POST', '/transfers', fspiopHeaders(payer, payee), x.body);
        await until('the payee told of both transfers', () =>
          [committed, expiring].every((x) => received(payee, x, 'POST', '/transfers').length > 0),
        );
        assert.deepEqual(await api.positions('C', 'D'), ['5.31', '0']);
        await request('PUT', `/transfers/${committed.transferId}`, fspiopHeaders(payee, payer), {
          transferState: 'COMMITTED',
          fulfilment: committed.fulfilment,
          completedTimestamp: new Date().toISOString(),
        });
        await until('the payer and the payee told of the commit', () =>
          [payer, payee].every(
            (dfsp) => received(dfsp, committed, 'PUT', '/transfers/{id}').length > 0,
          ),
        );
        await request('GET', `/transfers/${committed.transferId}`, fspiopHeaders(payer, payee));
        await until(
          'the payer answered its GET',
          () => received(payer, committed, 'PUT', '/transfers/{id}').length > 1,
        );
        await until(
          'both told of the expiry',
          () =>
            [payer, payee].every(
              (dfsp) => received(dfsp, expiring, 'PUT', '/transfers/{id}/error').length > 0,
            ),
          EXPIRY_TOLD_WITHIN_MS,
        );
        await sleep(3_000);

        const [commit, answer] = received(payer, committed, 'PUT', '/transfers/{id}');
        assert.equal(commit.body.transferState, 'COMMITTED');
        assert.equal(commit.body.fulfilment, committed.fulfilment);
        assert.equal(answer.body.transferState, 'COMMITTED');
        assert.equal(
          received(payee, committed, 'PUT', '/transfers/{id}')[0].body.transferState,
          'COMMITTED',
        );
        for (const dfsp of [payer, payee])
          assert.equal(
            received(dfsp, expiring, 'PUT', '/transfers/{id}/error')[0].body.errorInformation
              .errorCode,
            '3303',
          );
        const tally = (x: TestTransfer): string[] =>
          dfsps!
            .about(x.transferId)
            .map((c) => `${c.dfsp === payer ? 'payer' : 'payee'} ${c.method} ${c.path}`)
            .sort();
        assert.deepEqual(
          tally(committed),
          [
            'payee POST /transfers',
            'payee PUT /transfers/{id}',
            'payer PUT /transfers/{id}',
            'payer PUT /transfers/{id}',
          ],
          'every callback once: forward, commit to both, the GET’s answer',
        );
        assert.deepEqual(
          tally(expiring),
          [
            'payee POST /transfers',
            'payee PUT /transfers/{id}/error',
            'payer PUT /transfers/{id}/error',
          ],
          'every callback once: forward, the expiry to both',
        );
        assert.deepEqual(await api.positions('C', 'D'), ['4.2', '-4.2']);
      });
    },
  );
});

/** Messages to a topic exactly as ml-api-adapter produces them: no key. */
async function send(topic: 'prepare' | 'fulfil' | 'get', messages: unknown[]): Promise<void> {
  await producer!.send({
    topic: `topic-transfer-${topic}`,
    messages: messages.map((message) => ({ value: JSON.stringify(message) })),
  });
}

function told(transfer: TestTransfer, action: string): any[] {
  return seen
    .filter((n) => n.value.id === transfer.transferId && n.value.metadata.event.action === action)
    .map((n) => n.value);
}

function admin() {
  return new Kafka({
    clientId: 'mojaloop-install-test',
    brokers: broker!.brokers,
    logLevel: logLevel.NOTHING,
  }).admin();
}

/** Until each of central-ledger's three transfer groups is stable with exactly one member. */
async function waitForGroups(): Promise<void> {
  const kafka = admin();
  await kafka.connect();
  try {
    let last = '';
    await until(
      () => `one member in each of ${Object.values(GROUPS).join(', ')} (last seen: ${last})`,
      async () => {
        const { groups } = await kafka.describeGroups(Object.values(GROUPS));
        last = JSON.stringify(groups.map((g) => [g.groupId, g.state, g.members.length]));
        return groups.every((g) => g.state === 'Stable' && g.members.length === 1);
      },
      120_000,
    );
  } finally {
    await kafka.disconnect();
  }
}

/** The offsets central-ledger's groups committed on their topics (messages handled). */
async function committedOffsets(): Promise<Record<keyof typeof GROUPS, number>> {
  const kafka = admin();
  await kafka.connect();
  try {
    const entries = await Promise.all(
      (Object.entries(GROUPS) as [keyof typeof GROUPS, string][]).map(async ([topic, groupId]) => {
        const [offsets] = await kafka.fetchOffsets({
          groupId,
          topics: [`topic-transfer-${topic}`],
        });
        const total = (offsets?.partitions ?? []).reduce(
          (sum, p) => sum + Math.max(0, Number(p.offset)),
          0,
        );
        return [topic, total] as const;
      }),
    );
    return Object.fromEntries(entries) as Record<keyof typeof GROUPS, number>;
  } finally {
    await kafka.disconnect();
  }
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
