import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ConfigError, loadConfig, type Config } from '../../src/config/config';

const DEFAULTS: Config = {
  roles: {
    api: true,
    settlementApi: true,
    consume: ['prepare', 'fulfil', 'get', 'bulkPrepare', 'bulkFulfil', 'bulkGet'],
    expirySweep: true,
  },
  metrics: { enabled: true, prefix: 'moja_cl_' },
  http: { host: '127.0.0.1', port: 3001, bodyLimitBytes: 65536, logRequests: false },
  logLevel: 'info',
  ledger: {
    backend: 'embedded',
    tigerbeetle: {
      clusterId: 0n,
      addresses: ['127.0.0.1:3301', '127.0.0.1:3302', '127.0.0.1:3303'],
    },
    batch: {
      maxCommands: 1000,
      maxInFlight: 1,
      lingerMs: 0,
      maxLingerMs: 10,
      latencyBudgetMs: 20,
      growAtCommands: 16,
      idleMs: 3,
      maxQueuedCommands: 100_000,
    },
    timeoutMs: 5000,
    start: { retryMs: 500, retryMaxMs: 10_000, timeoutMs: 0 },
  },
  jmeter: { enabled: false },
  expirySweepMs: 1000,
  expiryTakeoverMs: 30_000,
  settlement: {},
  dataDir: './.data',
  dataTableHotEntries: 65_536,
  objectStore: { port: 27017, user: '', password: '', database: 'mlos' },
  bulk: { maxFulfilTimeoutSeconds: 300 },
  mysql: {
    enabled: false,
    host: '127.0.0.1',
    port: 3306,
    user: 'central_ledger',
    password: '',
    database: 'central_ledger',
    poolMax: 10,
    connectTimeoutMs: 5000,
    queryTimeoutMs: 5000,
    migrateOnStart: true,
    poolMin: 0,
    connectionOptions: {},
  },
  kafka: {
    enabled: false,
    brokers: ['127.0.0.1:9092'],
    clientId: 'central-ledger',
    groupId: 'central-ledger',
    consumers: {},
    topics: {
      prepare: 'topic-transfer-prepare',
      fulfil: 'topic-transfer-fulfil',
      get: 'topic-transfer-get',
      notification: 'topic-notification-event',
      settlementClose: 'topic-deferredsettlement-close',
      bulkPrepare: 'topic-bulk-prepare',
      bulkFulfil: 'topic-bulk-fulfil',
      bulkGet: 'topic-bulk-get',
    },
    topicPartitions: 1,
    consume: {
      partitionsConcurrently: 8,
      fetchMaxBytesPerPartition: 1024 * 1024,
      fetchMaxBytes: 10 * 1024 * 1024,
      fetchMinBytes: 1,
      fetchMaxWaitMs: 500,
      batchMaxMessages: 1000,
      commitIntervalMs: 1000,
      commitMaxMessages: 10_000,
    },
    produce: { maxBytes: 512 * 1024, maxMessages: 2000, lingerMs: 0 },
    sessionTimeoutMs: 30_000,
    heartbeatIntervalMs: 3000,
    transactionTimeoutMs: 10_000,
    bulkExactlyOnce: true,
  },
};

function assertConfigError(env: NodeJS.ProcessEnv, pattern: RegExp, overrides: unknown = {}): void {
  assert.throws(
    () => loadConfig(env, overrides),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
      assert.equal(error.name, 'ConfigError');
      assert.match(error.message, pattern);
      return true;
    },
    JSON.stringify(env),
  );
}

function withTempFile(content: string, body: (path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'config-test-'));
  try {
    const path = join(dir, 'config.json');
    writeFileSync(path, content);
    body(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('defaults apply with an empty environment', () => {
  assert.deepEqual(loadConfig({}), DEFAULTS);
  // Empty strings count as unset.
  assert.deepEqual(loadConfig({ PORT: '', LEDGER_BACKEND: '', TB_ADDRESSES: '' }), DEFAULTS);
});

test('each call returns a fresh object: mutating one does not leak into the next', () => {
  const first = loadConfig({});
  first.ledger.tigerbeetle.addresses.push('10.0.0.1:1');
  first.http.port = 1;
  assert.deepEqual(loadConfig({}), DEFAULTS);
});

test('environment variables take effect', () => {
  const config = loadConfig({
    HOST: '0.0.0.0',
    PORT: '8080',
    HTTP_BODY_LIMIT_BYTES: '2048',
    HTTP_LOG_REQUESTS: 'true',
    LOG_LEVEL: 'debug',
    LEDGER_BACKEND: 'tigerbeetle',
    TB_CLUSTER_ID: '340282366920938463463374607431768211455',
    TB_ADDRESSES: ' 10.0.0.1:3000 , 3001,,tb-2.local:3002 ',
    LEDGER_BATCH_MAX_COMMANDS: '1364',
    LEDGER_BATCH_MAX_IN_FLIGHT: '8',
    LEDGER_BATCH_LINGER_MS: '5',
    LEDGER_BATCH_MAX_LINGER_MS: '30',
    LEDGER_BATCH_LATENCY_BUDGET_MS: '40',
    LEDGER_BATCH_GROW_AT_COMMANDS: '16',
    LEDGER_BATCH_IDLE_MS: '4',
    LEDGER_MAX_QUEUED_COMMANDS: '500',
    LEDGER_TIMEOUT_MS: '250',
    LEDGER_START_RETRY_MS: '100',
    LEDGER_START_RETRY_MAX_MS: '2000',
    LEDGER_START_TIMEOUT_MS: '30000',
    JMETER_ENABLED: 'true',
    EXPIRY_SWEEP_MS: '50',
    EXPIRY_TAKEOVER_MS: '2000',
    DATA_DIR: '/var/lib/ledger',
    DATA_TABLE_HOT_ENTRIES: '4096',
    MYSQL_ENABLED: 'true',
    MYSQL_HOST: 'db',
    MYSQL_PORT: '3307',
    MYSQL_USER: 'u',
    MYSQL_PASSWORD: 'p',
    MYSQL_DATABASE: 'ledger',
    MYSQL_POOL_MAX: '4',
    MYSQL_CONNECT_TIMEOUT_MS: '1000',
    MYSQL_QUERY_TIMEOUT_MS: '2000',
    MYSQL_MIGRATE_ON_START: 'false',
    KAFKA_ENABLED: 'true',
    KAFKA_BROKERS: 'k1:9092,k2:9092',
    KAFKA_CLIENT_ID: 'cl',
    KAFKA_GROUP_ID: 'grp',
    KAFKA_TOPIC_PREPARE: 'p',
    KAFKA_TOPIC_FULFIL: 'f',
    KAFKA_TOPIC_GET: 'g',
    KAFKA_TOPIC_NOTIFICATION: 'n',
    KAFKA_TOPIC_SETTLEMENT_CLOSE: 's',
    KAFKA_TOPIC_PARTITIONS: '6',
    KAFKA_PARTITIONS_CONCURRENTLY: '3',
    KAFKA_FETCH_MAX_BYTES_PER_PARTITION: '65536',
    KAFKA_FETCH_MAX_BYTES: '262144',
    KAFKA_FETCH_MIN_BYTES: '4096',
    KAFKA_FETCH_MAX_WAIT_MS: '50',
    KAFKA_BATCH_MAX_MESSAGES: '200',
    KAFKA_COMMIT_INTERVAL_MS: '250',
    KAFKA_COMMIT_MAX_MESSAGES: '3000',
    KAFKA_PRODUCE_MAX_BYTES: '100000',
    KAFKA_PRODUCE_MAX_MESSAGES: '500',
    KAFKA_PRODUCE_LINGER_MS: '2',
    KAFKA_SESSION_TIMEOUT_MS: '10000',
    KAFKA_HEARTBEAT_INTERVAL_MS: '2000',
    KAFKA_TRANSACTIONAL_ID: 'ledger-0',
    KAFKA_TRANSACTION_TIMEOUT_MS: '5000',
    KAFKA_BULK_EXACTLY_ONCE: 'false',
    FAULT_POINT: 'fulfil.after-ledger',
    METRICS_ENABLED: 'false',
    METRICS_PREFIX: 'hub_',
    MYSQL_POOL_MIN: '2',
    SETTLEMENT_PORT: '3007',
    MONGODB_URL: 'mongodb://u:p@objstore:27018',
    MONGODB_HOST: 'objstore',
    MONGODB_PORT: '27018',
    MONGODB_USER: 'u',
    MONGODB_PASSWORD: 'p',
    MONGODB_DATABASE: 'bulk',
    BULK_MAX_FULFIL_TIMEOUT_SECONDS: '60',
    KAFKA_TOPIC_BULK_PREPARE: 'bp',
    KAFKA_TOPIC_BULK_FULFIL: 'bf',
    KAFKA_TOPIC_BULK_GET: 'bg',
  });
  assert.deepEqual(config, {
    roles: DEFAULTS.roles,
    metrics: { enabled: false, prefix: 'hub_' },
    http: { host: '0.0.0.0', port: 8080, bodyLimitBytes: 2048, logRequests: true },
    logLevel: 'debug',
    ledger: {
      backend: 'tigerbeetle',
      tigerbeetle: {
        clusterId: (1n << 128n) - 1n,
        addresses: ['10.0.0.1:3000', '3001', 'tb-2.local:3002'],
      },
      batch: {
        maxCommands: 1364,
        maxInFlight: 8,
        lingerMs: 5,
        maxLingerMs: 30,
        latencyBudgetMs: 40,
        growAtCommands: 16,
        idleMs: 4,
        maxQueuedCommands: 500,
      },
      timeoutMs: 250,
      start: { retryMs: 100, retryMaxMs: 2000, timeoutMs: 30_000 },
    },
    jmeter: { enabled: true },
    expirySweepMs: 50,
    expiryTakeoverMs: 2000,
    faultPoint: 'fulfil.after-ledger',
    settlement: { port: 3007 },
    dataDir: '/var/lib/ledger',
    dataTableHotEntries: 4096,
    objectStore: {
      url: 'mongodb://u:p@objstore:27018',
      host: 'objstore',
      port: 27018,
      user: 'u',
      password: 'p',
      database: 'bulk',
    },
    bulk: { maxFulfilTimeoutSeconds: 60 },
    mysql: {
      enabled: true,
      host: 'db',
      port: 3307,
      user: 'u',
      password: 'p',
      database: 'ledger',
      poolMax: 4,
      connectTimeoutMs: 1000,
      queryTimeoutMs: 2000,
      migrateOnStart: false,
      poolMin: 2,
      connectionOptions: {},
    },
    kafka: {
      enabled: true,
      brokers: ['k1:9092', 'k2:9092'],
      clientId: 'cl',
      groupId: 'grp',
      consumers: {},
      topics: {
        prepare: 'p',
        fulfil: 'f',
        get: 'g',
        notification: 'n',
        settlementClose: 's',
        bulkPrepare: 'bp',
        bulkFulfil: 'bf',
        bulkGet: 'bg',
      },
      topicPartitions: 6,
      consume: {
        partitionsConcurrently: 3,
        fetchMaxBytesPerPartition: 65536,
        fetchMaxBytes: 262144,
        fetchMinBytes: 4096,
        fetchMaxWaitMs: 50,
        batchMaxMessages: 200,
        commitIntervalMs: 250,
        commitMaxMessages: 3000,
      },
      produce: { maxBytes: 100000, maxMessages: 500, lingerMs: 2 },
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 2000,
      transactionalId: 'ledger-0',
      transactionTimeoutMs: 5000,
      bulkExactlyOnce: false,
    },
  });
  assert.equal(typeof config.ledger.tigerbeetle.clusterId, 'bigint');
  assert.equal(loadConfig({ JMETER_ENABLED: 'false' }).jmeter.enabled, false);
  assert.equal(loadConfig({ TB_CLUSTER_ID: '42' }).ledger.tigerbeetle.clusterId, 42n);
  assert.equal(loadConfig({ PORT: '0' }).http.port, 0);
});

test('variables that are unset keep their defaults', () => {
  const config = loadConfig({ PORT: '9000' });
  assert.deepEqual({ ...config, http: { ...config.http, port: 3001 } }, DEFAULTS);
});

test('bad values throw a ConfigError naming the variable', () => {
  assertConfigError({ PORT: 'abc' }, /PORT/);
  assertConfigError({ PORT: '70000' }, /PORT/);
  assertConfigError({ PORT: '-1' }, /PORT/);
  assertConfigError({ PORT: '3001.5' }, /PORT/);
  assertConfigError({ FAULT_POINT: 'fulfil.sometime' }, /FAULT_POINT/);
  assertConfigError({ PORT: '1e3' }, /PORT/);
  assertConfigError({ LEDGER_BACKEND: 'foo' }, /LEDGER_BACKEND/);
  assertConfigError({ LOG_LEVEL: 'loud' }, /LOG_LEVEL/);
  assertConfigError({ LOG_LEVEL: 'constructor' }, /LOG_LEVEL/);
  assertConfigError({ JMETER_ENABLED: 'yes' }, /JMETER_ENABLED/);
  assertConfigError({ JMETER_ENABLED: '1' }, /JMETER_ENABLED/);
  assertConfigError({ JMETER_ENABLED: 'TRUE' }, /JMETER_ENABLED/);
  assertConfigError({ KAFKA_PRODUCE_MAX_BYTES: String(1024 * 1024) }, /KAFKA_PRODUCE_MAX_BYTES/);
  assertConfigError({ KAFKA_PARTITIONS_CONCURRENTLY: '0' }, /KAFKA_PARTITIONS_CONCURRENTLY/);
  assertConfigError({ KAFKA_PRODUCE_LINGER_MS: '101' }, /KAFKA_PRODUCE_LINGER_MS/);
  assertConfigError({ KAFKA_COMMIT_INTERVAL_MS: '60001' }, /KAFKA_COMMIT_INTERVAL_MS/);
  assertConfigError({ KAFKA_COMMIT_MAX_MESSAGES: '0' }, /KAFKA_COMMIT_MAX_MESSAGES/);
  assertConfigError({ LEDGER_BATCH_MAX_COMMANDS: '1365' }, /LEDGER_BATCH_MAX_COMMANDS/);
  assertConfigError({ LEDGER_BATCH_MAX_COMMANDS: '0' }, /LEDGER_BATCH_MAX_COMMANDS/);
  assertConfigError({ LEDGER_BATCH_MAX_IN_FLIGHT: '65' }, /LEDGER_BATCH_MAX_IN_FLIGHT/);
  assertConfigError({ LEDGER_BATCH_LINGER_MS: '101' }, /LEDGER_BATCH_LINGER_MS/);
  // The adaptive linger stays between its floor and the latency budget.
  assertConfigError(
    { LEDGER_BATCH_LINGER_MS: '11', LEDGER_BATCH_MAX_LINGER_MS: '10' },
    /LEDGER_BATCH_MAX_LINGER_MS/,
  );
  assertConfigError({ LEDGER_BATCH_MAX_LINGER_MS: '21' }, /LEDGER_BATCH_MAX_LINGER_MS/);
  assertConfigError({ LEDGER_BATCH_LATENCY_BUDGET_MS: '0' }, /LEDGER_BATCH_LATENCY_BUDGET_MS/);
  assertConfigError({ LEDGER_BATCH_GROW_AT_COMMANDS: '0' }, /LEDGER_BATCH_GROW_AT_COMMANDS/);
  assertConfigError({ LEDGER_BATCH_IDLE_MS: '0' }, /LEDGER_BATCH_IDLE_MS/);
  assertConfigError({ LEDGER_MAX_QUEUED_COMMANDS: '0' }, /LEDGER_MAX_QUEUED_COMMANDS/);
  assertConfigError({ LEDGER_TIMEOUT_MS: '9' }, /LEDGER_TIMEOUT_MS/);
  assertConfigError({ LEDGER_START_RETRY_MS: '9' }, /LEDGER_START_RETRY_MS/);
  assertConfigError(
    { LEDGER_START_RETRY_MS: '1000', LEDGER_START_RETRY_MAX_MS: '999' },
    /LEDGER_START_RETRY_MAX_MS/,
  );
  // 0 waits forever; a bound shorter than a second would fail a start the ledger merely delays.
  assertConfigError({ LEDGER_START_TIMEOUT_MS: '999' }, /LEDGER_START_TIMEOUT_MS/);
  assertConfigError({ EXPIRY_SWEEP_MS: '60001' }, /EXPIRY_SWEEP_MS/);
  assertConfigError({ HTTP_BODY_LIMIT_BYTES: '1023' }, /HTTP_BODY_LIMIT_BYTES/);
  assertConfigError({ TB_CLUSTER_ID: 'x' }, /TB_CLUSTER_ID/);
  assertConfigError({ TB_CLUSTER_ID: '-1' }, /TB_CLUSTER_ID/);
  assertConfigError(
    { TB_CLUSTER_ID: '340282366920938463463374607431768211456' },
    /TB_CLUSTER_ID: must fit in 128 bits/,
  );
  assertConfigError({ TB_ADDRESSES: 'http://host:3000' }, /TB_ADDRESSES/);
  assertConfigError({ TB_ADDRESSES: ',' }, /TB_ADDRESSES/);
  assertConfigError({ TB_ADDRESSES: '1,2,3,4,5,6,7' }, /TB_ADDRESSES/);
});

test('several bad values are all reported at once', () => {
  assertConfigError(
    { LEDGER_BACKEND: 'foo', LOG_LEVEL: 'loud' },
    /LOG_LEVEL[\s\S]*LEDGER_BACKEND|LEDGER_BACKEND[\s\S]*LOG_LEVEL/,
  );
});

test('CONFIG_FILE merges over defaults, and the environment wins over the file', () => {
  withTempFile(
    JSON.stringify({
      http: { port: 4000 },
      ledger: { batch: { maxInFlight: 4 }, tigerbeetle: { addresses: ['10.1.1.1:3000'] } },
      jmeter: { enabled: true },
    }),
    (path) => {
      const config = loadConfig({ CONFIG_FILE: path });
      assert.equal(config.http.port, 4000);
      assert.equal(config.http.host, '127.0.0.1');
      assert.deepEqual(config.ledger.batch, {
        maxCommands: 1000,
        maxInFlight: 4,
        lingerMs: 0,
        maxLingerMs: 10,
        latencyBudgetMs: 20,
        growAtCommands: 16,
        idleMs: 3,
        maxQueuedCommands: 100_000,
      });
      assert.deepEqual(config.ledger.tigerbeetle.addresses, ['10.1.1.1:3000']);
      assert.equal(config.jmeter.enabled, true);
      assert.equal(loadConfig({ CONFIG_FILE: path, PORT: '5000' }).http.port, 5000);
      assert.equal(
        loadConfig({ CONFIG_FILE: path, JMETER_ENABLED: 'false' }).jmeter.enabled,
        false,
      );
    },
  );
});

test('a bad value in CONFIG_FILE is refused', () => {
  withTempFile(JSON.stringify({ http: { port: 'eighty' } }), (path) =>
    assertConfigError({ CONFIG_FILE: path }, /port|PORT/),
  );
  withTempFile(JSON.stringify({ ledger: { backend: 'postgres' } }), (path) =>
    assertConfigError({ CONFIG_FILE: path }, /backend|LEDGER_BACKEND/),
  );
  withTempFile(JSON.stringify({ unknownSection: {} }), (path) =>
    assertConfigError({ CONFIG_FILE: path }, /unknownSection/),
  );
});

test('a missing or unparsable CONFIG_FILE throws a ConfigError naming it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'config-test-'));
  try {
    const missing = join(dir, 'nope.json');
    assertConfigError(
      { CONFIG_FILE: missing },
      new RegExp(`CONFIG_FILE ${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  withTempFile('{ "http": ', (path) => assertConfigError({ CONFIG_FILE: path }, /CONFIG_FILE/));
  withTempFile('[1, 2]', (path) => assertConfigError({ CONFIG_FILE: path }, /JSON object/));
  withTempFile('"text"', (path) => assertConfigError({ CONFIG_FILE: path }, /JSON object/));
  withTempFile('null', (path) => assertConfigError({ CONFIG_FILE: path }, /JSON object/));
});

test('overrides win over the environment and are validated too', () => {
  const config = loadConfig(
    { PORT: '8080', LEDGER_BACKEND: 'tigerbeetle' },
    { http: { port: 9090 }, ledger: { timeoutMs: 100 } },
  );
  assert.equal(config.http.port, 9090);
  assert.equal(config.ledger.backend, 'tigerbeetle');
  assert.equal(config.ledger.timeoutMs, 100);
  assertConfigError({}, /LEDGER_TIMEOUT_MS/, { ledger: { timeoutMs: 1 } });
  assertConfigError({}, /JSON object/, 'not an object');
});
