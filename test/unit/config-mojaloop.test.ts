/**
 * central-ledger's configuration read as central-ledger reads it (src/config/mojaloop.ts). Every
 * case is hermetic: its own directories (config, working directory, home), environment and
 * command line; nothing of the process's own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { ConfigError, loadConfig, type Config } from '../../src/config/config';
import { loadMojaloopConfig, type MojaloopConfigOptions } from '../../src/config/mojaloop';

const CENTRAL_LEDGER_MIRROR = '/work/.mirror/mojaloop+central-ledger/repo';
const CENTRAL_SETTLEMENT_MIRROR = '/work/.mirror/mojaloop+central-settlement/repo';
const OUR_DEFAULT_FILE = join(__dirname, '..', '..', 'config', 'default.json');

type Json = Record<string, unknown>;

/** A published file from a mirror of the project's sources, or undefined without the mirror. */
function fromMirror(mirror: string, revision: string, path: string): Json | undefined {
  try {
    const text = execFileSync('git', ['-C', mirror, 'show', `${revision}:${path}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}

/** A scratch tree: `files` by relative path (objects written as JSON); removed afterwards. */
function withTree<T>(files: Record<string, Json | string>, body: (root: string) => T): T {
  const root = mkdtempSync(join(tmpdir(), 'config-mojaloop-'));
  try {
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      const text = typeof content === 'string' ? content : JSON.stringify(content);
      writeFileSync(join(root, path), text);
    }
    return body(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** The loader over a tree laid out as /opt/app: `app/config/default.json`, cwd `app`. */
function load(root: string, options: Partial<MojaloopConfigOptions> = {}) {
  return loadMojaloopConfig({
    configDir: join(root, 'app', 'config'),
    cwd: join(root, 'app'),
    argv: [],
    ...options,
    env: { HOME: join(root, 'home'), ...options.env },
  });
}

function ourDefaultFile(): Json {
  return JSON.parse(readFileSync(OUR_DEFAULT_FILE, 'utf8')) as Json;
}

function withTigerBeetle(file: Json, section: Json = { EMBEDDED: true }): Json {
  return { ...file, TIGERBEETLE: section };
}

function assertRefused(run: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    for (const pattern of patterns) assert.match(error.message, pattern);
    return true;
  });
}

/** Every consumer's and producer's broker list in central-ledger's file set to `brokers`. */
function withBrokers(file: Json, brokers: string): Json {
  const copy = structuredClone(file);
  const kafka = copy.KAFKA as Record<string, Record<string, Record<string, Json>>>;
  for (const side of ['CONSUMER', 'PRODUCER'])
    for (const functionality of Object.values(kafka[side]!))
      for (const action of Object.values(functionality))
        ((action.config as Json).rdkafkaConf as Json)['metadata.broker.list'] = brokers;
  return copy;
}

test("central-ledger v19.14.0's own default.json, hosts changed, TIGERBEETLE added", (t) => {
  const published = fromMirror(CENTRAL_LEDGER_MIRROR, 'v19.14.0', 'config/default.json');
  if (published === undefined)
    return t.skip(`SKIPPED: no central-ledger mirror at ${CENTRAL_LEDGER_MIRROR}`);
  const file = withBrokers(published, 'kafka-0.kafka:9092,kafka-1.kafka:9092');
  (file.DATABASE as Json).HOST = 'mysql.local/';
  file.TIGERBEETLE = {
    ENABLED: true,
    ENABLE_BATCHING: false,
    CLUSTER: 1,
    REPLICA_ENDPOINT_01: 'tb-0.tb:3000',
    REPLICA_ENDPOINT_02: 'tb-1.tb:3000',
    REPLICA_ENDPOINT_03: '10.0.0.3:3000',
  };
  withTree({ 'app/config/default.json': file }, (root) => {
    const loaded = load(root, {
      env: { CLEDG_DATABASE__PASSWORD: 'secret', LOG_LEVEL: 'info' },
      argv: ['handler', '--prepare', '--position'],
    });
    const expected: Config = loadConfig({});
    expected.http.host = '0.0.0.0';
    expected.ledger.backend = 'tigerbeetle';
    expected.ledger.tigerbeetle = {
      clusterId: 1n,
      addresses: ['tb-0.tb:3000', 'tb-1.tb:3000', '10.0.0.3:3000'],
    };
    expected.expirySweepMs = 15_000;
    Object.assign(expected.mysql, {
      enabled: true,
      host: 'mysql.local',
      password: 'secret',
      poolMin: 10,
      poolMax: 10,
      connectTimeoutMs: 30_000,
    });
    Object.assign(expected.kafka, {
      enabled: true,
      brokers: ['kafka-0.kafka:9092', 'kafka-1.kafka:9092'],
      consumers: {
        prepare: { groupId: 'cl-group-transfer-prepare', clientId: 'cl-con-transfer-prepare' },
        fulfil: { groupId: 'cl-group-transfer-fulfil', clientId: 'cl-con-transfer-fulfil' },
        get: { groupId: 'cl-group-transfer-get', clientId: 'cl-con-transfer-get' },
        bulkPrepare: { groupId: 'cl-group-bulk-prepare', clientId: 'cl-con-bulk-prepare' },
        bulkFulfil: { groupId: 'cl-group-bulk-fulfil', clientId: 'cl-con-bulk-fulfil' },
        bulkGet: { groupId: 'cl-group-bulk-get', clientId: 'cl-con-bulk-get' },
      },
    });
    assert.equal(loaded.service, 'central-ledger');
    assert.deepEqual(loaded.config, expected);
    for (const key of [
      'HOSTNAME',
      'AMOUNT.PRECISION',
      'HUB_PARTICIPANT.ID',
      'HANDLERS.TIMEOUT.TIMEZONE',
      'TIGERBEETLE.ENABLE_BATCHING',
      'KAFKA.CONSUMER.TRANSFER.POSITION.config.rdkafkaConf.group.id',
    ])
      assert.ok(loaded.unusedKeys.includes(key), key);
    for (const key of [
      'PORT',
      'DATABASE.PASSWORD',
      // MONGODB.DISABLED true: no object store, but the keys are central-ledger's own.
      'MAX_FULFIL_TIMEOUT_DURATION_SECONDS',
      'MONGODB.HOST',
      'AMOUNT.SCALE',
      'HUB_PARTICIPANT.NAME',
      'TIGERBEETLE.CLUSTER',
      'KAFKA.CONSUMER.TRANSFER.PREPARE.config.rdkafkaConf.group.id',
      'KAFKA.PRODUCER.NOTIFICATION.EVENT.config.rdkafkaConf.metadata.broker.list',
      '_',
      'prepare',
      'position',
    ])
      assert.ok(!loaded.unusedKeys.includes(key), key);
  });
});

test('our own default.json: every key means something; the embedded ledger is refused', () => {
  withTree({ 'app/config/default.json': ourDefaultFile() }, (root) => {
    assertRefused(
      () => load(root),
      /no ledger configured/,
      /TIGERBEETLE\.ENABLED true/,
      /CLEDG_TIGERBEETLE__ENABLED=true/,
      /CLEDG_TIGERBEETLE__EMBEDDED=true/,
      /LEDGER_BACKEND=embedded/,
    );
    const migrate = load(root, { requireLedger: false });
    assert.deepEqual(migrate.unusedKeys, []);
    assert.equal(migrate.config.ledger.backend, 'embedded');
    assert.equal(migrate.config.mysql.enabled, true);
    assert.equal(migrate.config.kafka.enabled, true);
    assert.deepEqual(migrate.config.kafka.consumers.fulfil, {
      groupId: 'cl-group-transfer-fulfil',
      clientId: 'cl-con-transfer-fulfil',
    });
    assert.equal(migrate.config.expirySweepMs, 1000);
    assert.equal(
      load(root, { env: { LEDGER_BACKEND: 'embedded' } }).config.ledger.backend,
      'embedded',
    );
    const embedded = load(root, { env: { CLEDG_TIGERBEETLE__EMBEDDED: 'true' } });
    assert.equal(embedded.config.ledger.backend, 'embedded');
    const cluster = load(root, { env: { CLEDG_TIGERBEETLE__ENABLED: 'true' } }).config;
    assert.equal(cluster.ledger.backend, 'tigerbeetle');
    assert.equal(cluster.ledger.tigerbeetle.clusterId, 0n);
    assert.deepEqual(cluster.ledger.tigerbeetle.addresses, [
      '127.0.0.1:3301',
      '127.0.0.1:3302',
      '127.0.0.1:3303',
    ]);
    // Our own variable names the ledger too (precedence: ours first).
    const ours = load(root, { env: { LEDGER_BACKEND: 'tigerbeetle', TB_ADDRESSES: '3001' } });
    assert.deepEqual(ours.config.ledger.tigerbeetle.addresses, ['3001']);
  });
});

test('CLEDG_ variables nest on __ and are parsed as central-ledger parses them', () => {
  withTree({ 'app/config/default.json': withTigerBeetle(ourDefaultFile()) }, (root) => {
    const groupId = 'CLEDG_KAFKA__CONSUMER__TRANSFER__PREPARE__config__rdkafkaConf__group.id';
    const { config, unusedKeys } = load(root, {
      env: {
        CLEDG_DATABASE__PASSWORD: '12345',
        CLEDG_DATABASE__USER: 'true',
        [groupId]: 'my-prepare-group',
        CLEDG_PORT: '4001',
        CLEDG_DATABASE__POOL_MAX_SIZE: '20',
        CLEDG_INSTRUMENTATION__METRICS__DISABLED: 'true',
        CLEDG_INSTRUMENTATION__METRICS__config__prefix: 'moja_',
        CLEDG_MIGRATIONS__DISABLED: 'true',
        CLEDG_HANDLERS__TIMEOUT__TIMEXP: '*/5 * * * * *',
        CLEDG_DATABASE__ADDITIONAL_CONNECTION_OPTIONS__ssl__rejectUnauthorized: 'false',
        CLEDG_DATABASE__ADDITIONAL_CONNECTION_OPTIONS__ssl__ca: 'PEM',
        CLEDG_SOMETHING__ELSE: '1',
        // rc matches its prefix whatever its case, not the keys.
        cledg_DATABASE__SCHEMA: 'ledger_b',
        cledg_database__host: 'not-DATABASE.HOST',
      },
    });
    assert.equal(config.mysql.password, '12345');
    assert.equal(config.mysql.user, 'true');
    assert.equal(config.mysql.database, 'ledger_b');
    assert.deepEqual(config.kafka.consumers.prepare, {
      groupId: 'my-prepare-group',
      clientId: 'cl-con-transfer-prepare',
    });
    assert.equal(config.http.port, 4001);
    assert.equal(config.mysql.poolMax, 20);
    assert.deepEqual(config.metrics, { enabled: false, prefix: 'moja_' });
    assert.equal(config.mysql.migrateOnStart, false);
    assert.equal(config.expirySweepMs, 5000);
    assert.deepEqual(config.mysql.connectionOptions, {
      ssl: { rejectUnauthorized: false, ca: 'PEM' },
    });
    assert.equal(config.mysql.host, '127.0.0.1');
    assert.deepEqual(unusedKeys.sort(), ['SOMETHING.ELSE', 'database.host']);
  });
});

test("rc files: home's, the nearest .CLEDGrc and named ones, in rc's order, under variables", () => {
  const file = withTigerBeetle(ourDefaultFile());
  withTree(
    {
      'app/config/default.json': file,
      'home/.CLEDGrc': { PORT: 4002, DATABASE: { HOST: 'from-home', USER: 'home-user' } },
      // In a parent of the working directory, as the chart mounts it beside config/.
      '.CLEDGrc': { DATABASE: { HOST: 'from-cwd-rc', SCHEMA: 'rc_schema' } },
      'named.json': { DATABASE: { SCHEMA: 'named_schema' } },
      'home/.config/CLEDG': 'PORT=4003\n[DATABASE]\nPOOL_MIN_SIZE=2\n',
    },
    (root) => {
      const { config } = load(root, { env: { CLEDG_DATABASE__USER: 'env-user' } });
      assert.equal(config.http.port, 4002);
      assert.equal(config.mysql.host, 'from-cwd-rc');
      assert.equal(config.mysql.database, 'rc_schema');
      assert.equal(config.mysql.user, 'env-user');
      assert.equal(config.mysql.poolMin, 2);
      const named = load(root, { env: { CLEDG_config: join(root, 'named.json') } }).config;
      assert.equal(named.mysql.database, 'named_schema');
      const flagged = load(root, {
        argv: ['--config', join(root, 'named.json'), '--PORT', '4004'],
      });
      assert.equal(flagged.config.mysql.database, 'named_schema');
      assert.equal(flagged.config.http.port, 4004);
    },
  );
});

test('the layers merge as rc itself merges them (rc 1.2.8 run in a process of its own)', () => {
  const script = `
    const rc = require(${JSON.stringify(require.resolve('rc'))});
    const parse = require(${JSON.stringify(require.resolve('parse-strings-in-object'))});
    const defaults = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
    process.stdout.write(JSON.stringify(parse(rc('CLEDG', defaults))));
  `;
  const file = withTigerBeetle(ourDefaultFile());
  withTree(
    {
      'app/config/default.json': file,
      'rc.js': script,
      'home/.CLEDGrc': { PORT: 4002, DATABASE: { HOST: 'h', USER: 'u', PASSWORD: 'p' } },
      '.CLEDGrc': { DATABASE: { HOST: 'h2', SCHEMA: 's2' } },
      'app/.CLEDGrc': { DATABASE: { HOST: 'h3' } },
    },
    (root) => {
      const env = { HOME: join(root, 'home'), CLEDG_DATABASE__USER: '42' };
      const argv = ['--DATABASE.PASSWORD', 'flag', '--prepare'];
      const rcSaw = JSON.parse(
        execFileSync(
          process.execPath,
          [join(root, 'rc.js'), join(root, 'app', 'config', 'default.json'), ...argv],
          { cwd: join(root, 'app'), env, encoding: 'utf8' },
        ),
      ) as { PORT: number; DATABASE: Json };
      const { config } = load(root, { env, argv });
      assert.equal(config.http.port, rcSaw.PORT);
      assert.equal(config.mysql.host, rcSaw.DATABASE.HOST);
      // rc's answers parsed: 42 a number, hence the text here.
      assert.equal(config.mysql.user, String(rcSaw.DATABASE.USER));
      assert.equal(config.mysql.password, rcSaw.DATABASE.PASSWORD);
      assert.equal(config.mysql.database, rcSaw.DATABASE.SCHEMA);
      assert.deepEqual(
        [config.http.port, config.mysql.host, config.mysql.user, config.mysql.password],
        [4002, 'h3', '42', 'flag'],
      );
    },
  );
});

test('precedence: our variables, then central-ledger’s variables, then its file', () => {
  const file = withTigerBeetle(ourDefaultFile());
  (file.DATABASE as Json).HOST = 'from-file';
  withTree({ 'app/config/default.json': file, 'ours.json': { mysql: { port: 3310 } } }, (root) => {
    assert.equal(load(root).config.mysql.host, 'from-file');
    const cledg = { CLEDG_DATABASE__HOST: 'from-cledg', CLEDG_DATABASE__PORT: '3307' };
    assert.equal(load(root, { env: cledg }).config.mysql.host, 'from-cledg');
    const ours = load(root, {
      env: { ...cledg, MYSQL_HOST: 'from-ours', CONFIG_FILE: join(root, 'ours.json') },
    }).config;
    assert.equal(ours.mysql.host, 'from-ours');
    assert.equal(ours.mysql.port, 3310);
    assert.equal(load(root, { env: { PORT: '5005', CLEDG_PORT: '4005' } }).config.http.port, 5005);
    assert.equal(load(root, { env: { HOST: '127.0.0.1' } }).config.http.host, '127.0.0.1');
  });
});

test('TIGERBEETLE: numbered endpoints and the list form', () => {
  const numbered = {
    ENABLED: true,
    CLUSTER: '340282366920938463463374607431768211455',
    REPLICA_ENDPOINT_10: '5010',
    REPLICA_ENDPOINT_02: '5002',
    REPLICA_ENDPOINT_01: 'tb-0:5001',
  };
  const file = ourDefaultFile();
  withTree({ 'app/config/default.json': withTigerBeetle(file, numbered) }, (root) => {
    const { ledger } = load(root).config;
    assert.equal(ledger.backend, 'tigerbeetle');
    assert.equal(ledger.tigerbeetle.clusterId, (1n << 128n) - 1n);
    assert.deepEqual(ledger.tigerbeetle.addresses, ['tb-0:5001', '5002', '5010']);
  });
  const list = { ENABLED: true, CLUSTER: 7, REPLICA_ENDPOINTS: ['10.0.0.1:3000', 3001] };
  withTree({ 'app/config/default.json': withTigerBeetle(file, list) }, (root) => {
    const { ledger } = load(root).config;
    assert.equal(ledger.tigerbeetle.clusterId, 7n);
    assert.deepEqual(ledger.tigerbeetle.addresses, ['10.0.0.1:3000', '3001']);
    const fromVariable = load(root, {
      env: { CLEDG_TIGERBEETLE__REPLICA_ENDPOINTS: 'a:3000, b:3000' },
    });
    assert.deepEqual(fromVariable.config.ledger.tigerbeetle.addresses, ['a:3000', 'b:3000']);
    assertRefused(
      () => load(root, { env: { CLEDG_TIGERBEETLE__REPLICA_ENDPOINT_01: '3000' } }),
      /TIGERBEETLE\.REPLICA_ENDPOINTS \(CLEDG_TIGERBEETLE__REPLICA_ENDPOINTS\): set with TIGERBEETLE\.REPLICA_ENDPOINT_01/,
    );
  });
});

test('a bad value is a ConfigError naming the key and its variable', () => {
  withTree({ 'app/config/default.json': withTigerBeetle(ourDefaultFile()) }, (root) => {
    const refused = (env: NodeJS.ProcessEnv, ...patterns: RegExp[]): void =>
      assertRefused(() => load(root, { env }), ...patterns);
    refused({ CLEDG_PORT: 'abc' }, /PORT \(CLEDG_PORT\): "abc" is not a whole number/);
    refused({ CLEDG_PORT: '70000' }, /http\.port \(PORT \(CLEDG_PORT\)\)/);
    refused({ MYSQL_PORT: 'abc' }, /MYSQL_PORT/);
    refused(
      { CLEDG_TIGERBEETLE__CLUSTER: 'x' },
      /TIGERBEETLE\.CLUSTER \(CLEDG_TIGERBEETLE__CLUSTER\): "x" is not a cluster id/,
    );
    refused(
      { CLEDG_TIGERBEETLE__CLUSTER: '340282366920938463463374607431768211456' },
      /TIGERBEETLE\.CLUSTER \(CLEDG_TIGERBEETLE__CLUSTER\): must fit in 128 bits/,
    );
    refused(
      { CLEDG_TIGERBEETLE__REPLICA_ENDPOINT_02: 'http://tb:3000' },
      /TIGERBEETLE\.REPLICA_ENDPOINT_02 \(CLEDG_TIGERBEETLE__REPLICA_ENDPOINT_02\): .* is not a port, host:port or ip:port/,
    );
    refused(
      { CLEDG_TIGERBEETLE__ENABLED: 'yes' },
      /TIGERBEETLE\.ENABLED \(CLEDG_TIGERBEETLE__ENABLED\): "yes" is not true or false/,
    );
    refused({ CLEDG_TIGERBEETLE__ENABLED: 'true' }, /TIGERBEETLE\.EMBEDDED .*choose one ledger/);
    refused(
      { CLEDG_HUB_PARTICIPANT__NAME: 'Switch' },
      /HUB_PARTICIPANT\.NAME \(CLEDG_HUB_PARTICIPANT__NAME\): "Switch": the hub's name is fixed here/,
    );
    refused({ CLEDG_AMOUNT__SCALE: '2' }, /AMOUNT\.SCALE \(CLEDG_AMOUNT__SCALE\): 2: /);
    refused(
      { CLEDG_ENABLE_ON_US_TRANSFERS: 'true' },
      /ENABLE_ON_US_TRANSFERS \(CLEDG_ENABLE_ON_US_TRANSFERS\): true is not supported here/,
    );
    refused(
      { CLEDG_HANDLERS__TIMEOUT__TIMEXP: '0 */5 * * * *' },
      /HANDLERS\.TIMEOUT\.TIMEXP \(CLEDG_HANDLERS__TIMEOUT__TIMEXP\): .*only "\*\/N \* \* \* \* \*"/,
    );
    refused(
      { CLEDG_HANDLERS__TIMEOUT__TIMEXP: '*/61 * * * * *' },
      /expirySweepMs \(HANDLERS\.TIMEOUT\.TIMEXP \(CLEDG_HANDLERS__TIMEOUT__TIMEXP\)\)/,
    );
    refused(
      { CLEDG_DATABASE__DIALECT: 'pg' },
      /DATABASE\.DIALECT \(CLEDG_DATABASE__DIALECT\): "pg": only MySQL/,
    );
    refused(
      { CLEDG_DATABASE__POOL_MIN_SIZE: '11' },
      /mysql\.poolMin \(DATABASE\.POOL_MIN_SIZE \(CLEDG_DATABASE__POOL_MIN_SIZE\)\)/,
    );
    refused(
      { CLEDG_INSTRUMENTATION__METRICS__config__prefix: 'moja-cl' },
      /metrics\.prefix \(INSTRUMENTATION\.METRICS\.config\.prefix/,
    );
    refused(
      { CLEDG_KAFKA__TOPIC_TEMPLATES__GENERAL_TOPIC_TEMPLATE__TEMPLATE: 'topic-{{action}}' },
      /GENERAL_TOPIC_TEMPLATE\.TEMPLATE .*lacks \{\{functionality\}\}/,
    );
    refused(
      { 'CLEDG_KAFKA__CONSUMER__TRANSFER__GET__config__rdkafkaConf__metadata.broker.list': 'k:1' },
      /one Kafka cluster here: the broker lists differ: .*TRANSFER\.PREPARE.*"127\.0\.0\.1:9092".*TRANSFER\.GET\.config\.rdkafkaConf\.metadata\.broker\.list \(CLEDG_KAFKA__CONSUMER__TRANSFER__GET__config__rdkafkaConf__metadata\.broker\.list\) "k:1"/,
    );
    // Several at once, each named.
    refused({ CLEDG_PORT: 'abc', CLEDG_AMOUNT__SCALE: '2' }, /PORT[\s\S]*AMOUNT\.SCALE/);
  });
  withTree({ 'app/config/default.json': '{ "PORT": ' }, (root) =>
    assertRefused(() => load(root), /default\.json/),
  );
  withTree(
    { 'app/config/default.json': withTigerBeetle(ourDefaultFile()), 'app/.CLEDGrc': '{ "PORT" ' },
    (root) => assertRefused(() => load(root), /\.CLEDGrc: /),
  );
});

test('broker lists in another order are the same cluster', () => {
  const file = withTigerBeetle(ourDefaultFile());
  withTree({ 'app/config/default.json': file }, (root) => {
    const prepare =
      'CLEDG_KAFKA__CONSUMER__TRANSFER__PREPARE__config__rdkafkaConf__metadata.broker.list';
    const env = Object.fromEntries(
      ['PREPARE', 'FULFIL', 'GET'].map((action, i) => [
        prepare.replace('PREPARE', action),
        i === 0 ? 'a:9092,b:9092' : 'b:9092, a:9092',
      ]),
    );
    assert.deepEqual(load(root, { env }).config.kafka.brokers, ['a:9092', 'b:9092']);
  });
});

test('central-settlement is known by its file, and reads CSET_ variables', (t) => {
  const published = fromMirror(CENTRAL_SETTLEMENT_MIRROR, 'v17.3.4', 'config/default.json');
  if (published === undefined)
    return t.skip(`SKIPPED: no central-settlement mirror at ${CENTRAL_SETTLEMENT_MIRROR}`);
  const file = withTigerBeetle(withBrokers(published, 'kafka:9092'), {
    ENABLED: true,
    CLUSTER: 0,
    REPLICA_ENDPOINTS: ['tb-0:3000'],
  });
  withTree(
    { 'app/config/default.json': file, 'app/.CSETrc': { DATABASE: { PORT: 3307 } } },
    (root) => {
      const { service, config, unusedKeys } = load(root, {
        env: { CSET_DATABASE__PASSWORD: '0042', CLEDG_DATABASE__PASSWORD: 'not-mine' },
        argv: ['h', '--deferredSettlement'],
      });
      assert.equal(service, 'central-settlement');
      assert.equal(config.http.port, 3007);
      assert.equal(config.mysql.password, '0042');
      assert.equal(config.mysql.port, 3307);
      assert.deepEqual(config.kafka.brokers, ['kafka:9092']);
      assert.equal(config.kafka.topics.settlementClose, 'topic-deferredsettlement-close');
      assert.deepEqual(config.kafka.consumers, {});
      assert.ok(unusedKeys.includes('WINDOW_AGGREGATION.RETRY_COUNT'));
      assert.ok(!unusedKeys.includes('deferredSettlement'));
      assertRefused(
        () => load(root, { env: { CSET_PORT: 'x' } }),
        /invalid central-settlement configuration/,
        /PORT \(CSET_PORT\)/,
      );
    },
  );
});

test("LOG_LEVEL: Mojaloop's levels map onto ours in both loaders", () => {
  const expected: Record<string, Config['logLevel']> = {
    error: 'error',
    warn: 'warn',
    audit: 'warn',
    trace: 'trace',
    info: 'info',
    perf: 'info',
    verbose: 'debug',
    debug: 'debug',
    silly: 'trace',
    fatal: 'fatal',
    silent: 'silent',
  };
  withTree({ 'app/config/default.json': withTigerBeetle(ourDefaultFile()) }, (root) => {
    for (const [level, ours] of Object.entries(expected)) {
      assert.equal(loadConfig({ LOG_LEVEL: level }).logLevel, ours, level);
      assert.equal(load(root, { env: { LOG_LEVEL: level } }).config.logLevel, ours, level);
    }
    assertRefused(() => load(root, { env: { LOG_LEVEL: 'loud' } }), /LOG_LEVEL/);
  });
});

test('MONGODB: the object store where not disabled, bulk transfers with it', () => {
  withTree({ 'app/config/default.json': withTigerBeetle(ourDefaultFile()) }, (root) => {
    const off = load(root, { env: { CLEDG_MONGODB__DISABLED: 'true' } });
    assert.equal(off.config.objectStore.host, undefined);
    const on = load(root, {
      env: {
        CLEDG_MONGODB__DISABLED: 'false',
        CLEDG_MONGODB__HOST: 'objstore',
        CLEDG_MONGODB__PORT: '27018',
        CLEDG_MONGODB__USER: 'u',
        CLEDG_MONGODB__PASSWORD: 'p',
        CLEDG_MONGODB__DATABASE: 'bulk',
        CLEDG_MAX_FULFIL_TIMEOUT_DURATION_SECONDS: '60',
      },
    });
    assert.deepEqual(on.config.objectStore, {
      host: 'objstore',
      port: 27018,
      user: 'u',
      password: 'p',
      database: 'bulk',
    });
    assert.equal(on.config.bulk.maxFulfilTimeoutSeconds, 60);
    for (const key of ['MONGODB.HOST', 'MONGODB.DISABLED', 'MAX_FULFIL_TIMEOUT_DURATION_SECONDS'])
      assert.ok(!on.unusedKeys.includes(key), key);
    // Our own variable over central-ledger's key.
    const ours = load(root, {
      env: { CLEDG_MONGODB__DISABLED: 'false', MONGODB_URL: 'mongodb://other:1' },
    });
    assert.equal(ours.config.objectStore.url, 'mongodb://other:1');
    const hostless = load(root, { env: { CLEDG_MONGODB__DISABLED: 'false' } });
    assert.equal(hostless.config.objectStore.host, undefined);
    // The charts' bulk handlers render MONGODB.URI (their objstore_uri), its database in the path.
    const uri = load(root, {
      env: {
        CLEDG_MONGODB__DISABLED: 'false',
        CLEDG_MONGODB__URI: 'mongodb://u:p@objstore:27017/mlos2?authSource=admin',
      },
    });
    assert.equal(uri.config.objectStore.url, 'mongodb://u:p@objstore:27017/mlos2?authSource=admin');
    assert.equal(uri.config.objectStore.database, 'mlos2');
    assert.ok(!uri.unusedKeys.includes('MONGODB.URI'));
    const pathless = load(root, {
      env: { CLEDG_MONGODB__DISABLED: 'false', CLEDG_MONGODB__URI: 'mongodb://objstore:27017' },
    });
    assert.equal(pathless.config.objectStore.database, 'mlos');
    const disabled = load(root, {
      env: { CLEDG_MONGODB__DISABLED: 'true', CLEDG_MONGODB__URI: 'mongodb://objstore:27017' },
    });
    assert.equal(disabled.config.objectStore.url, undefined);
  });
});
