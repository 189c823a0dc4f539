/**
 * central-ledger's entry points started as the Mojaloop charts start them: a directory laid out as
 * the image's /opt/app (src/, config/default.json in central-ledger's format), `node
 * src/api/index.js` and `node src/handlers/index.js handler <flags>` as separate processes (run
 * from the sources through tsx). On the embedded ledger: what each process serves, the command
 * lines refused, the embedded ledger refused unless asked for, central-settlement's /v2/health.
 * Then over one MariaDB, one Kafka broker and one TigerBeetle cluster: each handler consumes only
 * its topics, and transfers are prepared in one process, fulfilled in another and expired by a
 * third. That part skips loudly without a broker (Java/Maven), MariaDB or a TigerBeetle binary.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  closeSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { AssignerProtocol, Kafka, logLevel } from 'kafkajs';
import {
  feedAndCollect,
  kafkaAvailable,
  startKafka,
  type RunningKafka,
  type SeenNotification,
} from './support/kafka-broker';
import { stopChild, track } from './support/leftovers';
import { mariaDbUnavailable, startMariaDb, type RunningMariaDb } from './support/mariadb';
import {
  fulfilMessage,
  newTransfer,
  prepareMessage,
  type TestTransfer,
} from './support/mojaloop-messages';
import { freePort } from './support/net';
import { onboard } from './support/onboard';
import { call, sleep, tail } from './support/service-process';
import {
  startCluster,
  tigerbeetleBinary,
  type RunningCluster,
} from './support/tigerbeetle-cluster';

const REPO = resolve(__dirname, '..');
const made: string[] = [];
const running: ChildProcess[] = [];
after(async () => {
  await Promise.all(running.map((child) => stopChild(child, 15_000)));
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/**
 * A directory laid out as the image's /opt/app: our sources in src/, central-ledger's (or
 * central-settlement's) default.json in config/, the packages beside them.
 */
function appDir(defaultJson: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'entry-points-'));
  made.push(dir);
  cpSync(join(REPO, 'src'), join(dir, 'src'), { recursive: true });
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config', 'default.json'), JSON.stringify(defaultJson, null, 2));
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

interface Entry {
  child: ChildProcess;
  log: string;
  base: string;
  exited: Promise<number | null>;
}

/**
 * `node src/<script> args…` in `dir`, as a chart's container command runs it; it listens on `port`
 * (its PORT, from `env` or the file).
 */
function entry(
  dir: string,
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  port = Number(env.PORT),
): Entry {
  const log = join(dir, `${script.replaceAll('/', '-')}-${args.join('')}-${Date.now()}.log`);
  const fd = openSync(log, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', `src/${script}`, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  track(child);
  running.push(child);
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, log, base: `http://127.0.0.1:${port}`, exited };
}

/** Resolves once `path` answers 200; fails if the process exits first. */
async function healthy(started: Entry, path = '/health', timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (started.child.exitCode !== null)
      assert.fail(`exited (${started.child.exitCode}) while starting:\n${tail(started.log)}`);
    try {
      if ((await fetch(`${started.base}${path}`)).status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) assert.fail(`not healthy in time:\n${tail(started.log)}`);
    await sleep(200);
  }
}

/** The exit code and the output of a process that must refuse to start. */
async function refused(started: Entry): Promise<{ code: number | null; output: string }> {
  const code = await Promise.race([
    started.exited,
    sleep(60_000).then(() => assert.fail(`still running:\n${tail(started.log)}`)),
  ]);
  return { code, output: readFileSync(started.log, 'utf8') };
}

const fetchInject =
  (base: string) =>
  async (options: {
    method: 'POST' | 'GET';
    url: string;
    payload?: object;
  }): Promise<{ statusCode: number; body: string }> => {
    const answer = await call(base, options.method, options.url, options.payload);
    return { statusCode: answer.status, body: answer.text };
  };

const FSPIOP = 'application/vnd.interoperability.transfers+json;version=1.1';

describe('on the embedded ledger', () => {
  const embedded = { PORT: 0, TIGERBEETLE: { EMBEDDED: true } };
  const env = async (dir: string): Promise<NodeJS.ProcessEnv> => ({
    PORT: String(await freePort()),
    LOG_LEVEL: 'info',
    MYSQL_ENABLED: 'false',
    KAFKA_ENABLED: 'false',
    DATA_DIR: join(dir, `data-${randomBytes(3).toString('hex')}`),
  });

  test('the API process serves the admin and FSPIOP API and /health', async () => {
    const dir = appDir(embedded);
    const api = entry(dir, 'api/index.ts', [], await env(dir));
    await healthy(api);
    const [payer, payee] = ['entrypayer', 'entrypayee'];
    await onboard(fetchInject(api.base), [payer, payee], '1000', 1000);
    const participants = await call(api.base, 'GET', '/participants');
    assert.equal(participants.status, 200);
    assert.ok(participants.body.some((p: { name: string }) => p.name === payer));
    const transfer = newTransfer(payer, payee, '12.5');
    const prepared = await call(api.base, 'POST', '/transfers', JSON.stringify(transfer.body), {
      'content-type': FSPIOP,
      'fspiop-source': payer,
      'fspiop-destination': payee,
    });
    assert.equal(prepared.status, 201, prepared.text);
    assert.equal(prepared.body.transferState, 'RESERVED');
    assert.equal((await call(api.base, 'GET', '/v2/settlementWindows?state=OPEN')).status, 200);
    api.child.kill('SIGTERM');
    assert.equal(await api.exited, 0);
  });

  test('a handler process: --position alone stays up, healthy, and says it has nothing to do', async () => {
    const dir = appDir(embedded);
    const position = entry(
      dir,
      'handlers/index.ts',
      ['handler', '--position', '--bulkprocessing'],
      await env(dir),
    );
    await healthy(position);
    await sleep(1_500);
    assert.equal((await call(position.base, 'GET', '/health')).status, 200);
    assert.equal((await call(position.base, 'GET', '/participants')).status, 404);
    assert.match(readFileSync(position.log, 'utf8'), /--position: nothing of its own to do here/);
    assert.match(
      readFileSync(position.log, 'utf8'),
      /--bulkprocessing: nothing of its own to do here/,
    );
    position.child.kill('SIGTERM');
    assert.equal(await position.exited, 0);
  });

  test('refused: an unknown flag, no command, the embedded ledger not asked for', async () => {
    const dir = appDir(embedded);
    const unknown = await refused(
      entry(dir, 'handlers/index.ts', ['handler', '--prepar'], await env(dir)),
    );
    assert.equal(unknown.code, 2);
    assert.match(unknown.output, /--prepar: not a central-ledger handler command line\nusage: /);
    const none = await refused(entry(dir, 'handlers/index.ts', [], await env(dir)));
    assert.equal(none.code, 2);
    assert.match(none.output, /no command: .*\nusage: /);
    const unnamed = appDir({ PORT: 0 });
    const ledger = await refused(entry(unnamed, 'api/index.ts', [], await env(unnamed)));
    assert.equal(ledger.code, 2);
    assert.match(ledger.output, /no ledger configured: .*TIGERBEETLE\.EMBEDDED true/);
  });

  test("central-settlement's file: the settlement API at /v2 with /v2/health on its PORT", async () => {
    const port = await freePort();
    const dir = appDir({ PORT: port, WINDOW_AGGREGATION: {}, TIGERBEETLE: { EMBEDDED: true } });
    const { PORT: _, ...rest } = await env(dir);
    const settlement = entry(dir, 'api/index.ts', [], rest, port);
    await healthy(settlement, '/v2/health');
    assert.equal(
      (await call(settlement.base, 'GET', '/v2/settlementWindows?state=OPEN')).status,
      200,
    );
    assert.equal((await call(settlement.base, 'GET', '/participants')).status, 404);
    const handler = entry(dir, 'handlers/index.ts', ['h', '--deferredSettlement'], await env(dir));
    await healthy(handler);
    assert.match(readFileSync(handler.log, 'utf8'), /--deferredSettlement: nothing of its own/);
  });
});

describe('over one MariaDB, one Kafka broker and one TigerBeetle cluster', () => {
  const unavailable =
    kafkaAvailable() ??
    mariaDbUnavailable() ??
    (tigerbeetleBinary() === undefined ? 'no TigerBeetle server binary' : undefined);
  let broker: RunningKafka | undefined;
  let mariadb: RunningMariaDb | undefined;
  let cluster: RunningCluster | undefined;
  const closing: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closing.reverse()) await close();
  });

  test(
    'each handler consumes its topics only; prepared in one process, fulfilled in another, expired by a third',
    { timeout: 400_000 },
    async (t) => {
      if (unavailable !== undefined) {
        process.stderr.write(`\n*** SKIPPED: entry points over servers: ${unavailable}. ***\n\n`);
        return t.skip(unavailable);
      }
      broker = await startKafka();
      closing.push(() => broker!.stop());
      mariadb = await startMariaDb();
      closing.push(() => mariadb!.stop());
      cluster = await startCluster({ replicas: 1 });
      closing.push(() => cluster!.stop());
      const seen: SeenNotification[] = [];
      const { producer, collector } = await feedAndCollect(broker, 1, seen);
      closing.push(async () => {
        await collector.disconnect();
        await producer.disconnect();
      });
      const consumer = (topic: string): object => ({
        config: {
          rdkafkaConf: {
            'client.id': `cl-con-transfer-${topic}`,
            'group.id': `cl-group-transfer-${topic}`,
            'metadata.broker.list': broker!.brokers.join(','),
          },
        },
      });
      const dir = appDir({
        PORT: 3001,
        DATABASE: {
          HOST: '127.0.0.1',
          PORT: mariadb.port,
          USER: mariadb.user,
          PASSWORD: mariadb.password,
          SCHEMA: await mariadb.createDatabase(),
        },
        MIGRATIONS: { DISABLED: false },
        // As the charts set it: the API process runs no handler of its own.
        HANDLERS: { DISABLED: true },
        KAFKA: {
          CONSUMER: {
            TRANSFER: {
              PREPARE: consumer('prepare'),
              FULFIL: consumer('fulfil'),
              GET: consumer('get'),
            },
          },
        },
        // The test cluster's random 128-bit id as text: a JSON number would lose its digits.
        TIGERBEETLE: {
          ENABLED: true,
          CLUSTER: String(cluster.clusterId),
          REPLICA_ENDPOINT_01: cluster.addresses[0],
        },
      });
      const start = async (script: string, args: string[]): Promise<Entry> => {
        const started = entry(dir, script, args, {
          PORT: String(await freePort()),
          LOG_LEVEL: 'info',
        });
        await healthy(started);
        return started;
      };
      const api = await start('api/index.ts', []);
      const [prepare, fulfil, timeout] = await Promise.all([
        start('handlers/index.ts', ['handler', '--prepare']),
        start('handlers/index.ts', ['handler', '--fulfil']),
        start('handlers/index.ts', ['h', '--timeout']),
      ]);

      const run = randomBytes(3).toString('hex');
      const [payer, payee] = [`eppayer${run}`, `eppayee${run}`];
      await onboard(fetchInject(api.base), [payer, payee], '1000', 1000);

      // Each handler's group holds its own topic only; nobody consumes the get topic.
      const kafka = new Kafka({ brokers: broker.brokers, logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      await admin.connect();
      try {
        const assigned = async (): Promise<Record<string, string[]>> => {
          const { groups } = await admin.describeGroups([
            'cl-group-transfer-prepare',
            'cl-group-transfer-fulfil',
            'cl-group-transfer-get',
          ]);
          return Object.fromEntries(
            groups.map((group) => [
              group.groupId,
              group.members.flatMap((member) =>
                Object.keys(
                  AssignerProtocol.MemberAssignment.decode(member.memberAssignment)?.assignment ??
                    {},
                ),
              ),
            ]),
          );
        };
        await until('the handlers joined their groups', async () => {
          const now = await assigned();
          return (
            now['cl-group-transfer-prepare']!.length > 0 &&
            now['cl-group-transfer-fulfil']!.length > 0
          );
        });
        assert.deepEqual(await assigned(), {
          'cl-group-transfer-prepare': ['topic-transfer-prepare'],
          'cl-group-transfer-fulfil': ['topic-transfer-fulfil'],
          'cl-group-transfer-get': [],
        });
      } finally {
        await admin.disconnect();
      }

      const send = async (
        topic: string,
        transfer: TestTransfer,
        message: unknown,
      ): Promise<void> => {
        await producer.send({
          topic: `topic-transfer-${topic}`,
          messages: [{ key: transfer.transferId, value: JSON.stringify(message) }],
        });
      };
      const told = (transfer: TestTransfer, action: string): number =>
        seen.filter(
          (n) => n.value.id === transfer.transferId && n.value.metadata.event.action === action,
        ).length;
      const committed = newTransfer(payer, payee, '10');
      const expiring = newTransfer(payer, payee, '7', 'USD', 4_000);
      for (const transfer of [committed, expiring])
        await send('prepare', transfer, prepareMessage(transfer));
      await until('both prepares forwarded', async () =>
        [committed, expiring].every((transfer) => told(transfer, 'prepare') > 0),
      );
      await send('fulfil', committed, fulfilMessage(committed, 'commit'));
      // Told within seconds of the expiration, not after EXPIRY_TAKEOVER_MS (30 s): the timeout
      // process takes over at once what the prepare process prepared.
      await until(
        'the commit and the expiry told',
        async () => told(committed, 'commit') > 0 && told(expiring, 'timeout-reserved') > 0,
        20_000,
      );
      // Nothing told twice, also a few sweeps later.
      await sleep(3_000);
      assert.deepEqual(
        [told(committed, 'prepare'), told(committed, 'commit'), told(expiring, 'prepare')],
        [1, 1, 1],
      );
      assert.equal(told(expiring, 'timeout-reserved'), 1);
      const position = await call(api.base, 'GET', `/participants/${payer}/positions?currency=USD`);
      assert.equal(
        Number(position.body.value),
        10,
        'the committed amount only: the expired one released',
      );
      for (const [name, started] of Object.entries({ prepare, fulfil, timeout }))
        assert.equal((await call(started.base, 'GET', '/health')).status, 200, name);
      assert.match(readFileSync(timeout.log, 'utf8'), /"expirySweep":true/);
    },
  );
});

async function until(
  what: string,
  done: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(200);
  }
}
