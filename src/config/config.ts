/**
 * The one configuration module: defaults, then central-ledger's configuration when started through
 * its entry points (mojaloop.ts), then an optional JSON file (CONFIG_FILE), then environment
 * variables, validated as a whole. A bad value stops the start with a message that names the
 * variable (or central-ledger's key). docs/configuration.md lists every entry.
 */
import { readFileSync } from 'node:fs';
import Joi from '@hapi/joi';
import { MAX_BATCH_COMMANDS } from '../ports/ledger';
import { FAULT_POINTS, FX_FAULT_POINTS, KAFKA_FAULT_POINTS, type FaultPoint } from '../util/fault';
import { getPath, isJsonObject, setPath } from './paths';

/**
 * The Kafka topics whose messages a process may consume (central-ledger's handler flags); the bulk
 * ones only where an object store is configured (objectStore).
 */
export const CONSUMED_TOPICS = [
  'prepare',
  'fulfil',
  'get',
  'bulkPrepare',
  'bulkFulfil',
  'bulkGet',
] as const;
export type ConsumedTopic = (typeof CONSUMED_TOPICS)[number];

/** Our log levels (pino's); Mojaloop's are read too (MOJALOOP_LOG_LEVELS). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export interface Config {
  /**
   * What this process runs. By default everything; central-ledger's entry points (src/api,
   * src/handlers) choose from their command line, as central-ledger's processes do.
   */
  roles: {
    /** The FSPIOP, admin and /jmeter HTTP routes. */
    api: boolean;
    /** The settlement API (/v2). */
    settlementApi: boolean;
    /** The Kafka topics consumed (with kafka.enabled). */
    consume: ConsumedTopic[];
    /** The expiry sweep of transfers and conversions, and the takeover of others' records. */
    expirySweep: boolean;
  };
  /** Prometheus metrics on /metrics, their names prefixed as central-ledger's are. */
  metrics: { enabled: boolean; prefix: string };
  http: { host: string; port: number; bodyLimitBytes: number; logRequests: boolean };
  logLevel: (typeof LOG_LEVELS)[number];
  ledger: {
    backend: 'embedded' | 'tigerbeetle';
    tigerbeetle: { clusterId: bigint; addresses: string[] };
    batch: {
      maxCommands: number;
      maxInFlight: number;
      /**
       * The linger's floor (ms): how long a non-full batch's oldest command may wait for company.
       */
      lingerMs: number;
      /** The adaptive linger's ceiling (ms); unset or equal to lingerMs: a fixed linger. */
      maxLingerMs?: number;
      /**
       * Oldest command's wait + the ledger round trip (ms) above which the adaptive linger halves.
       */
      latencyBudgetMs: number;
      /**
       * Commands per batch from which the adaptive linger grows (load); from half of it a step
       * back, below half back to lingerMs.
       */
      growAtCommands: number;
      /**
       * A lingering batch goes out once no command has arrived for this long (ms): its callers
       * have come.
       */
      idleMs: number;
      maxQueuedCommands: number;
    };
    timeoutMs: number;
    /**
     * A TigerBeetle ledger not answering at start is waited for: the start-up work is retried
     * after `retryMs`, doubling up to `retryMaxMs`, until it succeeds or, when `timeoutMs` is not
     * 0, that long has passed (then the start fails).
     */
    start: { retryMs: number; retryMaxMs: number; timeoutMs: number };
  };
  jmeter: { enabled: boolean };
  expirySweepMs: number;
  /**
   * With shared metadata (MySQL): this often, and this long past its expiration, a reservation no
   * live instance is telling is taken over by the sweep of whichever instance finds it.
   */
  expiryTakeoverMs: number;
  /**
   * Tests only: the step boundary at which the process kills itself (util/fault.ts); unset in
   * production.
   */
  faultPoint?: FaultPoint;
  /**
   * The settlement API (/v2) is always served on PORT; with `port` also on a listener of its own
   * (central-settlement's is 3007).
   */
  settlement: { port?: number };
  /** Where the embedded ledger and metadata keep their files (journal) when they are in use. */
  dataDir: string;
  /**
   * Entries each of the embedded stores' id tables keeps in memory (ledger idempotency ids,
   * finished reservations, final-record indexes) before writing them to a sorted run on disk.
   */
  dataTableHotEntries: number;
  /**
   * The object store bulk-api-adapter shares (MongoDB, or FerretDB): bulk transfers are on only
   * with one, named by `url` (mongodb://…, credentials included) or `host` (with port, user,
   * password). `database` is bulk-api-adapter's (central-ledger's MONGODB.DATABASE).
   */
  objectStore: {
    url?: string;
    host?: string;
    port: number;
    user: string;
    password: string;
    database: string;
  };
  bulk: {
    /**
     * How old a payee's completedTimestamp may be (central-ledger's
     * MAX_FULFIL_TIMEOUT_DURATION_SECONDS).
     */
    maxFulfilTimeoutSeconds: number;
  };
  mysql: {
    enabled: boolean;
    host: string;
    port: number;
    user: string;
    password: string;
    database: string;
    poolMax: number;
    connectTimeoutMs: number;
    queryTimeoutMs: number;
    migrateOnStart: boolean;
    /** Connections the pool keeps open even when idle. */
    poolMin: number;
    /**
     * More mysql2 connection options (central-ledger's DATABASE.ADDITIONAL_CONNECTION_OPTIONS),
     * e.g. `ssl` for TLS to MySQL.
     */
    connectionOptions: Record<string, unknown>;
  };
  kafka: {
    enabled: boolean;
    brokers: string[];
    clientId: string;
    /**
     * Without committed offsets the group starts at the beginning: on central-ledger's Kafka, set
     * them first (docs/kafka.md).
     */
    groupId: string;
    /**
     * A topic's own consumer group and client id (central-ledger gives each topic one, e.g.
     * cl-group-transfer-prepare); a topic not named here is consumed in `groupId`. Topics that
     * share a group id share one consumer.
     */
    consumers: Partial<Record<ConsumedTopic, { groupId: string; clientId: string }>>;
    /**
     * `settlementClose`: central-settlement's topic-deferredsettlement-close, told of each window
     * close.
     */
    topics: {
      prepare: string;
      fulfil: string;
      get: string;
      notification: string;
      settlementClose: string;
      /** bulk-api-adapter's: consumed where bulk transfers are on. */
      bulkPrepare: string;
      bulkFulfil: string;
      bulkGet: string;
    };
    /** Partitions of each topic the service creates on a broker that lacks it. */
    topicPartitions: number;
    /**
     * What is consumed at once: partition batches handled concurrently (their commands share
     * ledger batches), the bytes a fetch brings (per partition and in all), the bytes it waits
     * for at the broker, and at most how long, the messages of one partition whose offsets are
     * committed together; offsets go to the group coordinator at most every `commitIntervalMs`,
     * sooner once `commitMaxMessages` handled messages wait for their commit (a crash redelivers at
     * most those, answered again under the same event ids).
     */
    consume: {
      partitionsConcurrently: number;
      fetchMaxBytesPerPartition: number;
      fetchMaxBytes: number;
      fetchMinBytes: number;
      fetchMaxWaitMs: number;
      batchMaxMessages: number;
      commitIntervalMs: number;
      commitMaxMessages: number;
    };
    /**
     * Notifications of concurrent batches go out together: per produce request at most these, the
     * first waiting `lingerMs` for company.
     */
    produce: { maxBytes: number; maxMessages: number; lingerMs: number };
    /**
     * The consumer's group session: dropped from the group (its partitions moved) when silent this
     * long; heartbeats every `heartbeatIntervalMs`, also while a chunk is under way. A request's
     * wait for another instance's record stays within a third of it (docs/kafka.md).
     */
    sessionTimeoutMs: number;
    heartbeatIntervalMs: number;
    /**
     * The bulk topics' answers go out exactly once, each chunk's with its offsets in a Kafka
     * transaction (docs/kafka.md "Bulk topics: exactly once"). `transactionalId`: this instance's
     * name in the transactional ids (`<it>-<consumer group>`), the same across its restarts and
     * no other running instance's (default: host name and HTTP port). `transactionTimeoutMs`: how
     * long the broker lets a transaction run before aborting it, what an instance that died in one
     * holds up readers of the notification topic when no restart of it aborts it sooner.
     */
    transactionalId?: string;
    transactionTimeoutMs: number;
    /**
     * Off: the bulk topics' answers go the at-least-once way of the others, for a broker that
     * cannot host transactions (its transaction state log needs as many brokers as its
     * replication factor, 3 by default).
     */
    bulkExactlyOnce: boolean;
  };
}

/** Environment variable → path in the config, with how to read it. */
export const ENVIRONMENT: {
  name: string;
  path: string[];
  type: 'string' | 'number' | 'boolean' | 'list';
}[] = [
  { name: 'METRICS_ENABLED', path: ['metrics', 'enabled'], type: 'boolean' },
  { name: 'METRICS_PREFIX', path: ['metrics', 'prefix'], type: 'string' },
  { name: 'HOST', path: ['http', 'host'], type: 'string' },
  { name: 'PORT', path: ['http', 'port'], type: 'number' },
  { name: 'HTTP_BODY_LIMIT_BYTES', path: ['http', 'bodyLimitBytes'], type: 'number' },
  { name: 'HTTP_LOG_REQUESTS', path: ['http', 'logRequests'], type: 'boolean' },
  { name: 'LOG_LEVEL', path: ['logLevel'], type: 'string' },
  { name: 'LEDGER_BACKEND', path: ['ledger', 'backend'], type: 'string' },
  { name: 'TB_CLUSTER_ID', path: ['ledger', 'tigerbeetle', 'clusterId'], type: 'string' },
  { name: 'TB_ADDRESSES', path: ['ledger', 'tigerbeetle', 'addresses'], type: 'list' },
  { name: 'LEDGER_BATCH_MAX_COMMANDS', path: ['ledger', 'batch', 'maxCommands'], type: 'number' },
  { name: 'LEDGER_BATCH_MAX_IN_FLIGHT', path: ['ledger', 'batch', 'maxInFlight'], type: 'number' },
  { name: 'LEDGER_BATCH_LINGER_MS', path: ['ledger', 'batch', 'lingerMs'], type: 'number' },
  { name: 'LEDGER_BATCH_MAX_LINGER_MS', path: ['ledger', 'batch', 'maxLingerMs'], type: 'number' },
  { name: 'LEDGER_BATCH_IDLE_MS', path: ['ledger', 'batch', 'idleMs'], type: 'number' },
  {
    name: 'LEDGER_BATCH_LATENCY_BUDGET_MS',
    path: ['ledger', 'batch', 'latencyBudgetMs'],
    type: 'number',
  },
  {
    name: 'LEDGER_BATCH_GROW_AT_COMMANDS',
    path: ['ledger', 'batch', 'growAtCommands'],
    type: 'number',
  },
  {
    name: 'LEDGER_MAX_QUEUED_COMMANDS',
    path: ['ledger', 'batch', 'maxQueuedCommands'],
    type: 'number',
  },
  { name: 'LEDGER_TIMEOUT_MS', path: ['ledger', 'timeoutMs'], type: 'number' },
  { name: 'LEDGER_START_RETRY_MS', path: ['ledger', 'start', 'retryMs'], type: 'number' },
  { name: 'LEDGER_START_RETRY_MAX_MS', path: ['ledger', 'start', 'retryMaxMs'], type: 'number' },
  { name: 'LEDGER_START_TIMEOUT_MS', path: ['ledger', 'start', 'timeoutMs'], type: 'number' },
  { name: 'JMETER_ENABLED', path: ['jmeter', 'enabled'], type: 'boolean' },
  { name: 'EXPIRY_SWEEP_MS', path: ['expirySweepMs'], type: 'number' },
  { name: 'EXPIRY_TAKEOVER_MS', path: ['expiryTakeoverMs'], type: 'number' },
  { name: 'FAULT_POINT', path: ['faultPoint'], type: 'string' },
  { name: 'SETTLEMENT_PORT', path: ['settlement', 'port'], type: 'number' },
  { name: 'DATA_DIR', path: ['dataDir'], type: 'string' },
  { name: 'DATA_TABLE_HOT_ENTRIES', path: ['dataTableHotEntries'], type: 'number' },
  { name: 'MYSQL_ENABLED', path: ['mysql', 'enabled'], type: 'boolean' },
  { name: 'MYSQL_HOST', path: ['mysql', 'host'], type: 'string' },
  { name: 'MYSQL_PORT', path: ['mysql', 'port'], type: 'number' },
  { name: 'MYSQL_USER', path: ['mysql', 'user'], type: 'string' },
  { name: 'MYSQL_PASSWORD', path: ['mysql', 'password'], type: 'string' },
  { name: 'MYSQL_DATABASE', path: ['mysql', 'database'], type: 'string' },
  { name: 'MYSQL_POOL_MAX', path: ['mysql', 'poolMax'], type: 'number' },
  { name: 'MYSQL_CONNECT_TIMEOUT_MS', path: ['mysql', 'connectTimeoutMs'], type: 'number' },
  { name: 'MYSQL_QUERY_TIMEOUT_MS', path: ['mysql', 'queryTimeoutMs'], type: 'number' },
  { name: 'MYSQL_MIGRATE_ON_START', path: ['mysql', 'migrateOnStart'], type: 'boolean' },
  { name: 'MYSQL_POOL_MIN', path: ['mysql', 'poolMin'], type: 'number' },
  { name: 'MONGODB_URL', path: ['objectStore', 'url'], type: 'string' },
  { name: 'MONGODB_HOST', path: ['objectStore', 'host'], type: 'string' },
  { name: 'MONGODB_PORT', path: ['objectStore', 'port'], type: 'number' },
  { name: 'MONGODB_USER', path: ['objectStore', 'user'], type: 'string' },
  { name: 'MONGODB_PASSWORD', path: ['objectStore', 'password'], type: 'string' },
  { name: 'MONGODB_DATABASE', path: ['objectStore', 'database'], type: 'string' },
  {
    name: 'BULK_MAX_FULFIL_TIMEOUT_SECONDS',
    path: ['bulk', 'maxFulfilTimeoutSeconds'],
    type: 'number',
  },
  { name: 'KAFKA_ENABLED', path: ['kafka', 'enabled'], type: 'boolean' },
  { name: 'KAFKA_BROKERS', path: ['kafka', 'brokers'], type: 'list' },
  { name: 'KAFKA_CLIENT_ID', path: ['kafka', 'clientId'], type: 'string' },
  { name: 'KAFKA_GROUP_ID', path: ['kafka', 'groupId'], type: 'string' },
  { name: 'KAFKA_TOPIC_PREPARE', path: ['kafka', 'topics', 'prepare'], type: 'string' },
  { name: 'KAFKA_TOPIC_FULFIL', path: ['kafka', 'topics', 'fulfil'], type: 'string' },
  { name: 'KAFKA_TOPIC_GET', path: ['kafka', 'topics', 'get'], type: 'string' },
  { name: 'KAFKA_TOPIC_NOTIFICATION', path: ['kafka', 'topics', 'notification'], type: 'string' },
  { name: 'KAFKA_TOPIC_BULK_PREPARE', path: ['kafka', 'topics', 'bulkPrepare'], type: 'string' },
  { name: 'KAFKA_TOPIC_BULK_FULFIL', path: ['kafka', 'topics', 'bulkFulfil'], type: 'string' },
  { name: 'KAFKA_TOPIC_BULK_GET', path: ['kafka', 'topics', 'bulkGet'], type: 'string' },
  {
    name: 'KAFKA_TOPIC_SETTLEMENT_CLOSE',
    path: ['kafka', 'topics', 'settlementClose'],
    type: 'string',
  },
  { name: 'KAFKA_TOPIC_PARTITIONS', path: ['kafka', 'topicPartitions'], type: 'number' },
  {
    name: 'KAFKA_PARTITIONS_CONCURRENTLY',
    path: ['kafka', 'consume', 'partitionsConcurrently'],
    type: 'number',
  },
  {
    name: 'KAFKA_FETCH_MAX_BYTES_PER_PARTITION',
    path: ['kafka', 'consume', 'fetchMaxBytesPerPartition'],
    type: 'number',
  },
  { name: 'KAFKA_FETCH_MAX_BYTES', path: ['kafka', 'consume', 'fetchMaxBytes'], type: 'number' },
  { name: 'KAFKA_FETCH_MIN_BYTES', path: ['kafka', 'consume', 'fetchMinBytes'], type: 'number' },
  { name: 'KAFKA_FETCH_MAX_WAIT_MS', path: ['kafka', 'consume', 'fetchMaxWaitMs'], type: 'number' },
  {
    name: 'KAFKA_BATCH_MAX_MESSAGES',
    path: ['kafka', 'consume', 'batchMaxMessages'],
    type: 'number',
  },
  {
    name: 'KAFKA_COMMIT_INTERVAL_MS',
    path: ['kafka', 'consume', 'commitIntervalMs'],
    type: 'number',
  },
  {
    name: 'KAFKA_COMMIT_MAX_MESSAGES',
    path: ['kafka', 'consume', 'commitMaxMessages'],
    type: 'number',
  },
  { name: 'KAFKA_PRODUCE_MAX_BYTES', path: ['kafka', 'produce', 'maxBytes'], type: 'number' },
  { name: 'KAFKA_PRODUCE_MAX_MESSAGES', path: ['kafka', 'produce', 'maxMessages'], type: 'number' },
  { name: 'KAFKA_PRODUCE_LINGER_MS', path: ['kafka', 'produce', 'lingerMs'], type: 'number' },
  { name: 'KAFKA_SESSION_TIMEOUT_MS', path: ['kafka', 'sessionTimeoutMs'], type: 'number' },
  { name: 'KAFKA_HEARTBEAT_INTERVAL_MS', path: ['kafka', 'heartbeatIntervalMs'], type: 'number' },
  { name: 'KAFKA_TRANSACTIONAL_ID', path: ['kafka', 'transactionalId'], type: 'string' },
  { name: 'KAFKA_BULK_EXACTLY_ONCE', path: ['kafka', 'bulkExactlyOnce'], type: 'boolean' },
  {
    name: 'KAFKA_TRANSACTION_TIMEOUT_MS',
    path: ['kafka', 'transactionTimeoutMs'],
    type: 'number',
  },
];

/**
 * ~3 MiB of hot table each: 65,536 entries written out at a time (bench/README "Memory against
 * work").
 */
export const DATA_TABLE_HOT_ENTRIES = 65_536;

const DEFAULTS = {
  roles: { api: true, settlementApi: true, consume: [...CONSUMED_TOPICS], expirySweep: true },
  metrics: { enabled: true, prefix: 'moja_cl_' },
  http: { host: '127.0.0.1', port: 3001, bodyLimitBytes: 65536, logRequests: false },
  logLevel: 'info',
  ledger: {
    backend: 'embedded',
    tigerbeetle: {
      clusterId: '0',
      addresses: ['127.0.0.1:3301', '127.0.0.1:3302', '127.0.0.1:3303'],
    },
    // A command is at most 6 TigerBeetle events (MAX_EVENTS_PER_COMMAND): 1,000 stay under the
    // 8,189 per request.
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
    // Waits for the ledger forever by default: a service started beside its cluster (compose, a
    // pod) must not crash-loop while the replicas come up.
    start: { retryMs: 500, retryMaxMs: 10_000, timeoutMs: 0 },
  },
  jmeter: { enabled: false },
  expirySweepMs: 1000,
  expiryTakeoverMs: 30_000,
  settlement: {},
  dataDir: './.data',
  dataTableHotEntries: DATA_TABLE_HOT_ENTRIES,
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
    // A broker refuses a record batch over its message.max.bytes (1 MB by default); kafkajs puts a
    // partition's share of a request in one.
    produce: { maxBytes: 512 * 1024, maxMessages: 2000, lingerMs: 0 },
    // kafkajs's defaults, explicit. A broker accepts sessions of 6 s to 30 min by default
    // (group.min/max.session.timeout.ms).
    sessionTimeoutMs: 30_000,
    heartbeatIntervalMs: 3000,
    // A transaction lasts its produce, its offsets and its commit: milliseconds.
    transactionTimeoutMs: 10_000,
    bulkExactlyOnce: true,
  },
};

/** A TigerBeetle replica's or Kafka broker's address: `port`, `host:port` or `ip:port`. */
export const ADDRESS_PATTERN =
  /^([A-Za-z0-9.-]+:)?(6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3})$/;
const address = Joi.string().pattern(ADDRESS_PATTERN);
const SCHEMA = Joi.object({
  roles: Joi.object({
    api: Joi.boolean().required(),
    settlementApi: Joi.boolean().required(),
    consume: Joi.array()
      .items(Joi.string().valid(...CONSUMED_TOPICS))
      .unique()
      .required(),
    expirySweep: Joi.boolean().required(),
  }).required(),
  metrics: Joi.object({
    enabled: Joi.boolean().required(),
    prefix: Joi.string()
      .pattern(/^[a-zA-Z_][a-zA-Z0-9_]*$/)
      .allow('')
      .required(),
  }).required(),
  http: Joi.object({
    host: Joi.string().required(),
    port: Joi.number().integer().min(0).max(65535).required(),
    bodyLimitBytes: Joi.number()
      .integer()
      .min(1024)
      .max(10 * 1024 * 1024)
      .required(),
    logRequests: Joi.boolean().required(),
  }).required(),
  logLevel: Joi.string()
    .valid(...LOG_LEVELS)
    .required(),
  ledger: Joi.object({
    backend: Joi.string().valid('embedded', 'tigerbeetle').required(),
    tigerbeetle: Joi.object({
      clusterId: Joi.alternatives(
        Joi.string().pattern(/^\d{1,39}$/),
        Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER),
      ).required(),
      addresses: Joi.array().items(address).min(1).max(6).required(),
    }).required(),
    batch: Joi.object({
      // A command is at most 6 TigerBeetle events (MAX_EVENTS_PER_COMMAND); a request takes at most
      // 8,189.
      maxCommands: Joi.number().integer().min(1).max(MAX_BATCH_COMMANDS).required(),
      maxInFlight: Joi.number().integer().min(1).max(64).required(),
      lingerMs: Joi.number().integer().min(0).max(100).required(),
      maxLingerMs: Joi.number().integer().min(Joi.ref('lingerMs')).max(Joi.ref('latencyBudgetMs')),
      latencyBudgetMs: Joi.number().integer().min(1).max(1000).required(),
      growAtCommands: Joi.number().integer().min(1).max(MAX_BATCH_COMMANDS).required(),
      idleMs: Joi.number().integer().min(1).max(1000).required(),
      maxQueuedCommands: Joi.number().integer().min(1).max(10_000_000).required(),
    }).required(),
    timeoutMs: Joi.number().integer().min(10).max(600_000).required(),
    start: Joi.object({
      retryMs: Joi.number().integer().min(10).max(60_000).required(),
      retryMaxMs: Joi.number().integer().min(Joi.ref('retryMs')).max(300_000).required(),
      // 0: no bound.
      timeoutMs: Joi.alternatives(
        Joi.number().valid(0),
        Joi.number().integer().min(1000).max(86_400_000),
      ).required(),
    }).required(),
  }).required(),
  jmeter: Joi.object({ enabled: Joi.boolean().required() }).required(),
  expirySweepMs: Joi.number().integer().min(10).max(60_000).required(),
  expiryTakeoverMs: Joi.number().integer().min(100).max(3_600_000).required(),
  faultPoint: Joi.string().valid(...FAULT_POINTS, ...FX_FAULT_POINTS, ...KAFKA_FAULT_POINTS),
  settlement: Joi.object({ port: Joi.number().integer().min(0).max(65535) }).required(),
  dataDir: Joi.string().min(1).required(),
  dataTableHotEntries: Joi.number().integer().min(1).max(16_777_216).required(),
  objectStore: Joi.object({
    url: Joi.string().pattern(/^mongodb(\+srv)?:\/\//),
    host: Joi.string().min(1),
    port: Joi.number().integer().min(1).max(65535).required(),
    user: Joi.string().allow('').required(),
    password: Joi.string().allow('').required(),
    database: Joi.string()
      .pattern(/^[A-Za-z0-9_-]{1,63}$/)
      .required(),
  }).required(),
  bulk: Joi.object({
    maxFulfilTimeoutSeconds: Joi.number().integer().min(1).max(86_400).required(),
  }).required(),
  mysql: Joi.object({
    enabled: Joi.boolean().required(),
    host: Joi.string().required(),
    port: Joi.number().integer().min(1).max(65535).required(),
    user: Joi.string().required(),
    password: Joi.string().allow('').required(),
    database: Joi.string()
      .pattern(/^[A-Za-z0-9_]{1,64}$/)
      .required(),
    poolMax: Joi.number().integer().min(2).max(200).required(),
    connectTimeoutMs: Joi.number().integer().min(100).max(120_000).required(),
    queryTimeoutMs: Joi.number().integer().min(100).max(120_000).required(),
    migrateOnStart: Joi.boolean().required(),
    poolMin: Joi.number().integer().min(0).max(Joi.ref('poolMax')).required(),
    connectionOptions: Joi.object().unknown(true).required(),
  }).required(),
  kafka: Joi.object({
    enabled: Joi.boolean().required(),
    brokers: Joi.array().items(address).min(1).required(),
    clientId: Joi.string().required(),
    groupId: Joi.string().required(),
    consumers: Joi.object(
      Object.fromEntries(
        CONSUMED_TOPICS.map((topic) => [
          topic,
          Joi.object({ groupId: Joi.string().required(), clientId: Joi.string().required() }),
        ]),
      ),
    ).required(),
    topics: Joi.object({
      prepare: Joi.string().required(),
      fulfil: Joi.string().required(),
      get: Joi.string().required(),
      notification: Joi.string().required(),
      settlementClose: Joi.string().required(),
      bulkPrepare: Joi.string().required(),
      bulkFulfil: Joi.string().required(),
      bulkGet: Joi.string().required(),
    }).required(),
    topicPartitions: Joi.number().integer().min(1).max(1000).required(),
    consume: Joi.object({
      partitionsConcurrently: Joi.number().integer().min(1).max(1000).required(),
      fetchMaxBytesPerPartition: Joi.number()
        .integer()
        .min(1024)
        .max(64 * 1024 * 1024)
        .required(),
      fetchMaxBytes: Joi.number()
        .integer()
        .min(1024)
        .max(256 * 1024 * 1024)
        .required(),
      fetchMinBytes: Joi.number()
        .integer()
        .min(1)
        .max(64 * 1024 * 1024)
        .required(),
      fetchMaxWaitMs: Joi.number().integer().min(1).max(30_000).required(),
      batchMaxMessages: Joi.number().integer().min(1).max(100_000).required(),
      commitIntervalMs: Joi.number().integer().min(0).max(60_000).required(),
      commitMaxMessages: Joi.number().integer().min(1).max(1_000_000).required(),
    }).required(),
    produce: Joi.object({
      maxBytes: Joi.number()
        .integer()
        .min(1024)
        .max(900 * 1024)
        .required(),
      maxMessages: Joi.number().integer().min(1).max(100_000).required(),
      lingerMs: Joi.number().integer().min(0).max(100).required(),
    }).required(),
    sessionTimeoutMs: Joi.number().integer().min(1000).max(1_800_000).required(),
    heartbeatIntervalMs: Joi.number()
      .integer()
      .min(100)
      .less(Joi.ref('sessionTimeoutMs'))
      .required(),
    transactionalId: Joi.string(),
    // The broker refuses a transaction timeout over its transaction.max.timeout.ms (15 min).
    transactionTimeoutMs: Joi.number().integer().min(1000).max(900_000).required(),
    bulkExactlyOnce: Joi.boolean().required(),
  }).required(),
});

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Mojaloop's log levels (central-services-logger's, least verbose first) onto ours: the nearest
 * level that shows the same messages. `trace` is a level of both and read as ours (the most
 * verbose), so configurations that work today keep their meaning.
 */
export const MOJALOOP_LOG_LEVELS: Readonly<Record<string, Config['logLevel']>> = {
  error: 'error',
  warn: 'warn',
  audit: 'warn',
  info: 'info',
  perf: 'info',
  verbose: 'debug',
  debug: 'debug',
  silly: 'trace',
};

/**
 * Values beneath our own file and variables: central-ledger's configuration read by
 * src/config/mojaloop.ts, with the key each value came from (`PORT (CLEDG_PORT)`) for errors.
 */
export interface ConfigLayer {
  values: Record<string, unknown>;
  /** Config path (`http.port`) → the key that set it. */
  keys: ReadonlyMap<string, string>;
}

/** Builds the config from defaults, the optional file, the environment and explicit overrides. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: unknown = {}): Config {
  return buildConfig({ own: readOwnConfiguration(env), overrides });
}

/** Our own configuration alone: CONFIG_FILE's values, then our environment variables over them. */
export function readOwnConfiguration(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const own: Record<string, unknown> = {};
  if (env.CONFIG_FILE !== undefined) {
    let fromFile: unknown;
    try {
      fromFile = JSON.parse(readFileSync(env.CONFIG_FILE, 'utf8'));
    } catch (error) {
      throw new ConfigError(`CONFIG_FILE ${env.CONFIG_FILE}: ${(error as Error).message}`);
    }
    deepMerge(own, fromFile);
  }
  for (const variable of ENVIRONMENT) {
    const raw = env[variable.name];
    if (raw === undefined || raw === '') continue;
    setPath(own, variable.path, parseVariable(variable.name, raw, variable.type));
  }
  return own;
}

/**
 * The one merge and validation of every configuration: defaults, then `beneath` (central-ledger's
 * configuration), then our own (readOwnConfiguration), then `overrides`. An error names our
 * variable, or the key of `beneath` when the bad value came from there.
 */
export function buildConfig(sources: {
  own: Record<string, unknown>;
  beneath?: ConfigLayer;
  overrides?: unknown;
}): Config {
  const { own, beneath, overrides = {} } = sources;
  const merged = structuredClone(DEFAULTS) as Record<string, unknown>;
  if (beneath !== undefined) deepMerge(merged, beneath.values);
  deepMerge(merged, own);
  deepMerge(merged, overrides);
  const level = merged.logLevel;
  if (typeof level === 'string' && Object.hasOwn(MOJALOOP_LOG_LEVELS, level))
    merged.logLevel = MOJALOOP_LOG_LEVELS[level];
  const nameOf = (path: string[]): string | undefined =>
    (getPath(own, path) !== undefined ? undefined : keyOf(beneath, path)) ??
    environmentNameOf(path);
  const { error, value } = SCHEMA.validate(merged, { abortEarly: false, convert: false });
  if (error !== undefined) {
    const details = error.details.map((d) => {
      const name = nameOf(d.path.map(String));
      return `${d.path.join('.')}${name === undefined ? '' : ` (${name})`}: ${d.message}`;
    });
    throw new ConfigError(`invalid configuration:\n  ${details.join('\n  ')}`);
  }
  const checked = value as typeof DEFAULTS & {
    ledger: { tigerbeetle: { clusterId: string | number } };
  };
  const clusterId = BigInt(checked.ledger.tigerbeetle.clusterId as string | number);
  if (clusterId >= 1n << 128n)
    throw new ConfigError(
      `${nameOf(['ledger', 'tigerbeetle', 'clusterId'])}: must fit in 128 bits`,
    );
  return {
    ...(checked as unknown as Config),
    ledger: {
      ...(checked.ledger as unknown as Config['ledger']),
      tigerbeetle: { ...checked.ledger.tigerbeetle, clusterId },
    },
  };
}

/** The key of `layer` that set `path` or the nearest object above it. */
function keyOf(layer: ConfigLayer | undefined, path: string[]): string | undefined {
  for (let length = path.length; layer !== undefined && length > 0; length--) {
    const key = layer.keys.get(path.slice(0, length).join('.'));
    if (key !== undefined) return key;
  }
  return undefined;
}

function parseVariable(
  name: string,
  raw: string,
  type: 'string' | 'number' | 'boolean' | 'list',
): unknown {
  switch (type) {
    case 'string':
      return raw;
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
    case 'number':
      if (!/^-?\d+$/.test(raw))
        throw new ConfigError(`${name}: ${JSON.stringify(raw)} is not a whole number`);
      return Number(raw);
    case 'boolean':
      if (raw !== 'true' && raw !== 'false')
        throw new ConfigError(`${name}: ${JSON.stringify(raw)} is not true or false`);
      return raw === 'true';
  }
}

function environmentNameOf(path: string[]): string | undefined {
  const key = path.join('.');
  return ENVIRONMENT.find((v) => key === v.path.join('.') || key.startsWith(v.path.join('.') + '.'))
    ?.name;
}

function deepMerge(target: Record<string, unknown>, source: unknown): void {
  if (!isJsonObject(source)) {
    if (source !== undefined) throw new ConfigError('configuration must be a JSON object');
    return;
  }
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isJsonObject(value) && isJsonObject(existing)) {
      deepMerge(existing, value);
    } else {
      target[key] = value;
    }
  }
}
