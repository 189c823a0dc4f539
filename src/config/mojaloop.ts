/**
 * central-ledger's configuration, read as central-ledger reads it: `default.json` in the entry
 * points' config directory, then rc's override files and `CLEDG_<KEY>__<SUB>` variables, strings
 * turned into numbers and booleans by parse-strings-in-object; central-settlement's file (known by
 * its own keys) the same way with `CSET_`. Every key with a meaning here is mapped onto our Config
 * beneath our own file and variables (config.ts); the others are accepted and listed.
 * docs/configuration.md, "central-ledger's configuration", has the table.
 */
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import parseStringsInObject from 'parse-strings-in-object';
import {
  ADDRESS_PATTERN,
  CONSUMED_TOPICS,
  ConfigError,
  buildConfig,
  readOwnConfiguration,
  type Config,
  type ConfigLayer,
} from './config';
import { getPath, isJsonObject, setPath, type JsonObject } from './paths';

export type MojaloopService = 'central-ledger' | 'central-settlement';

export interface MojaloopConfigOptions {
  /**
   * The directory of default.json: the entry point's own `../../config`, found from __dirname as
   * central-ledger finds its file (/opt/app/config in the image, dist/config locally).
   */
  configDir: string;
  /** Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Default process.argv.slice(2): rc reads `--KEY value` flags too. */
  argv?: string[];
  /** Where rc looks for `.CLEDGrc` / `.CSETrc` (and in its parents); default process.cwd(). */
  cwd?: string;
  /** false for `npm run migrate`: no ledger needed, so no refusal of the embedded ledger. */
  requireLedger?: boolean;
}

export interface MojaloopConfig {
  /** central-settlement recognised from its file's own keys. */
  service: MojaloopService;
  /** `roles` left at their defaults: the entry point sets them. */
  config: Config;
  /** Keys with no meaning here (file, rc files, CLEDG_/CSET_ variables): logged once at start. */
  unusedKeys: string[];
  /**
   * central-ledger's HANDLERS.DISABLED (default false): when false its API process runs every
   * handler too (src/shared/setup.js); the charts set it true for the API's pod.
   */
  handlersDisabled: boolean;
}

type KeyPath = readonly string[];

const PREFIX: Record<MojaloopService, string> = {
  'central-ledger': 'CLEDG',
  'central-settlement': 'CSET',
};

/** rc's own modules, resolved from rc's place as rc itself resolves them. */
const fromRc = createRequire(require.resolve('rc'));
const rcFiles = fromRc('./lib/utils') as {
  parse(content: string): JsonObject;
  file(path: string): string | undefined;
  env(prefix: string, env: NodeJS.ProcessEnv): JsonObject;
};
const deepExtend = fromRc('deep-extend') as (
  target: JsonObject,
  ...sources: unknown[]
) => JsonObject;
const minimist = fromRc('minimist') as typeof import('minimist');

/** Builds our Config from central-ledger's (or central-settlement's) configuration. */
export function loadMojaloopConfig(options: MojaloopConfigOptions): MojaloopConfig {
  const env = options.env ?? process.env;
  const defaults = readDefaultFile(options.configDir);
  const service: MojaloopService = isCentralSettlementFile(defaults)
    ? 'central-settlement'
    : 'central-ledger';
  const prefix = PREFIX[service];
  const layers = readRcLayers(prefix, defaults, {
    env,
    argv: options.argv ?? process.argv.slice(2),
    cwd: options.cwd ?? process.cwd(),
  });
  const source = new KeyReader(service, layers);
  const beneath = mapOntoConfig(source);
  const own = readOwnConfiguration(env);
  const ledgerNamed =
    getPath(beneath.values, ['ledger', 'backend']) !== undefined ||
    getPath(own, ['ledger', 'backend']) !== undefined;
  if (options.requireLedger !== false && !ledgerNamed) throw unnamedLedger(prefix);
  const handlersDisabled = source.boolean(['HANDLERS', 'DISABLED']) ?? false;
  source.throwErrors();
  return {
    service,
    config: buildConfig({ own, beneath }),
    unusedKeys: source.unusedKeys(),
    handlersDisabled,
  };
}

function readDefaultFile(configDir: string): JsonObject {
  const path = join(configDir, 'default.json');
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${path}: ${(error as Error).message}`);
  }
  if (!isJsonObject(parsed)) throw new ConfigError(`${path}: must be a JSON object`);
  return parsed;
}

/** Keys only central-settlement's default.json has: its window aggregation and its consumer. */
function isCentralSettlementFile(file: JsonObject): boolean {
  return (
    file.WINDOW_AGGREGATION !== undefined ||
    getPath(file, ['KAFKA', 'CONSUMER', 'DEFERREDSETTLEMENT']) !== undefined
  );
}

/**
 * rc(prefix, defaults) as rc 1.2.8 merges it (its index.js), from rc's own pieces, with the
 * environment, working directory and home given rather than the process's (rc() itself takes only
 * the command line, and its home is the one when it was loaded): the defaults,
 * /etc/<prefix>/config, /etc/<prefix>rc, ~/.config/<prefix>/config, ~/.config/<prefix>,
 * ~/.<prefix>/config, ~/.<prefix>rc, the nearest .<prefix>rc from `cwd` up, the files named by
 * <prefix>_config and --config, then <prefix>_ variables, then the command line; then
 * parse-strings-in-object, as central-ledger's src/lib/config.js does. `settings` leaves out the
 * command line: its flags (`--prepare`, `_`) are the entry point's.
 */
function readRcLayers(
  prefix: string,
  defaults: JsonObject,
  from: { env: NodeJS.ProcessEnv; argv: string[]; cwd: string },
): { settings: JsonObject; merged: JsonObject } {
  const argv = minimist(from.argv) as JsonObject;
  const variables = rcFiles.env(`${prefix}_`, from.env);
  const files: string[] = [];
  const configs: JsonObject[] = [defaults];
  const addFile = (path: unknown): void => {
    if (typeof path !== 'string' || files.includes(path)) return;
    const content = rcFiles.file(path);
    if (content === undefined) return;
    try {
      configs.push(rcFiles.parse(content));
    } catch (error) {
      throw new ConfigError(`${path}: ${(error as Error).message}`);
    }
    files.push(path);
  };
  addFile(join('/etc', prefix, 'config'));
  addFile(join('/etc', `${prefix}rc`));
  const home = from.env.HOME;
  if (home !== undefined) {
    addFile(join(home, '.config', prefix, 'config'));
    addFile(join(home, '.config', prefix));
    addFile(join(home, `.${prefix}`, 'config'));
    addFile(join(home, `.${prefix}rc`));
  }
  addFile(findUpwards(from.cwd, `.${prefix}rc`));
  addFile(variables.config);
  addFile(argv.config);
  const parse = (layers: unknown[]): JsonObject =>
    parseStringsInObject<JsonObject>(deepExtend({}, ...configs, ...layers));
  return { settings: parse([variables]), merged: parse([variables, argv]) };
}

function findUpwards(start: string, name: string): string | undefined {
  for (let dir = start; ; dir = dirname(dir)) {
    const path = join(dir, name);
    try {
      statSync(path);
      return path;
    } catch {
      if (dirname(dir) === dir) return undefined;
    }
  }
}

/**
 * Reads central-ledger's keys, remembering each one read (the others are the unused keys) and
 * each bad value, named as a key and as its variable: `PORT (CLEDG_PORT)`.
 */
class KeyReader {
  readonly prefix: string;
  private readonly read = new Set<string>();
  private readonly errors: string[] = [];

  constructor(
    readonly service: MojaloopService,
    private readonly layers: { settings: JsonObject; merged: JsonObject },
  ) {
    this.prefix = PREFIX[service];
  }

  nameOf(path: KeyPath): string {
    return `${path.join('.')} (${this.prefix}_${path.join('__')})`;
  }

  fail(path: KeyPath, problem: string): undefined {
    this.errors.push(`${this.nameOf(path)}: ${problem}`);
    return undefined;
  }

  /** Throws the bad values found, all at once. */
  throwErrors(): void {
    if (this.errors.length > 0)
      throw new ConfigError(
        `invalid ${this.service} configuration:\n  ${this.errors.join('\n  ')}`,
      );
  }

  /** The value at `path`, marked as read (with everything beneath it). */
  value(path: KeyPath): unknown {
    this.read.add(JSON.stringify(path));
    return getPath(this.layers.merged, path);
  }

  /** Whether `path` is set, not marking it as read. */
  has(path: KeyPath): boolean {
    return getPath(this.layers.merged, path) !== undefined;
  }

  /** The names beneath `path`, not marked as read. */
  keysUnder(path: KeyPath): string[] {
    const node = getPath(this.layers.merged, path);
    return isJsonObject(node) ? Object.keys(node) : [];
  }

  integer(path: KeyPath): number | undefined {
    const value = this.value(path);
    if (value === undefined || Number.isSafeInteger(value)) return value as number | undefined;
    return this.fail(path, `${JSON.stringify(value)} is not a whole number`);
  }

  boolean(path: KeyPath): boolean | undefined {
    const value = this.value(path);
    if (value === undefined || typeof value === 'boolean') return value;
    return this.fail(path, `${JSON.stringify(value)} is not true or false`);
  }

  /**
   * Text as written: parse-strings-in-object turned "12345" into a number, and the number's
   * digits are exactly the text's (it converts only what prints back the same).
   */
  text(path: KeyPath): string | undefined {
    const value = this.value(path);
    if (value === undefined || typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    return this.fail(path, `${JSON.stringify(value)} is not text`);
  }

  object(path: KeyPath): JsonObject | undefined {
    const value = this.value(path);
    if (value === undefined || isJsonObject(value)) return value;
    return this.fail(path, `${JSON.stringify(value)} is not an object`);
  }

  /** Keys of the settings never read: no meaning here. */
  unusedKeys(): string[] {
    const unused: string[] = [];
    const walk = (node: unknown, path: string[]): void => {
      if (this.read.has(JSON.stringify(path))) return;
      if (!isJsonObject(node) || Object.keys(node).length === 0) {
        unused.push(path.join('.'));
        return;
      }
      for (const [key, child] of Object.entries(node)) walk(child, [...path, key]);
    };
    // `config`: rc's own (the file a <prefix>_config variable names).
    for (const [key, child] of Object.entries(this.layers.settings))
      if (key !== 'config') walk(child, [key]);
    return unused;
  }
}

/** Our Config's values from central-ledger's keys: the layer beneath our own configuration. */
function mapOntoConfig(source: KeyReader): ConfigLayer {
  const values: JsonObject = { http: { host: '0.0.0.0' } };
  const keys = new Map<string, string>();
  const set = (ours: string, key: KeyPath, value: unknown): void => {
    if (value === undefined) return;
    setPath(values, ours.split('.'), value);
    keys.set(ours, source.nameOf(key));
  };
  set('http.port', ['PORT'], source.integer(['PORT']));
  mapDatabase(source, set);
  mapObjectStore(source, set);
  mapKafka(source, set);
  const disabledKey = ['INSTRUMENTATION', 'METRICS', 'DISABLED'];
  const metricsDisabled = source.boolean(disabledKey);
  if (metricsDisabled !== undefined) set('metrics.enabled', disabledKey, !metricsDisabled);
  const prefixKey = ['INSTRUMENTATION', 'METRICS', 'config', 'prefix'];
  set('metrics.prefix', prefixKey, source.text(prefixKey));
  const sweepKey = ['HANDLERS', 'TIMEOUT', 'TIMEXP'];
  set('expirySweepMs', sweepKey, sweepIntervalMs(source, sweepKey));
  checkFixedHere(source);
  mapTigerBeetle(source, set);
  source.throwErrors();
  return { values, keys };
}

type Setter = (ours: string, key: KeyPath, value: unknown) => void;

function mapDatabase(source: KeyReader, set: Setter): void {
  if (!source.has(['DATABASE'])) return;
  set('mysql.enabled', ['DATABASE'], true);
  const dialect = source.text(['DATABASE', 'DIALECT']);
  if (dialect !== undefined && dialect !== 'mysql2' && dialect !== 'mysql')
    source.fail(['DATABASE', 'DIALECT'], `${JSON.stringify(dialect)}: only MySQL (mysql2) here`);
  const database = (key: string): string[] => ['DATABASE', key];
  // central-ledger drops a trailing slash from the host too.
  set('mysql.host', database('HOST'), source.text(database('HOST'))?.replace(/\/$/, ''));
  set('mysql.port', database('PORT'), source.integer(database('PORT')));
  set('mysql.user', database('USER'), source.text(database('USER')));
  set('mysql.password', database('PASSWORD'), source.text(database('PASSWORD')));
  set('mysql.database', database('SCHEMA'), source.text(database('SCHEMA')));
  set('mysql.poolMin', database('POOL_MIN_SIZE'), source.integer(database('POOL_MIN_SIZE')));
  set('mysql.poolMax', database('POOL_MAX_SIZE'), source.integer(database('POOL_MAX_SIZE')));
  const acquire = database('ACQUIRE_TIMEOUT_MILLIS');
  set('mysql.connectTimeoutMs', acquire, source.integer(acquire));
  const options = database('ADDITIONAL_CONNECTION_OPTIONS');
  set('mysql.connectionOptions', options, source.object(options));
  const migrationsDisabled = source.boolean(['MIGRATIONS', 'DISABLED']);
  if (migrationsDisabled !== undefined)
    set('mysql.migrateOnStart', ['MIGRATIONS', 'DISABLED'], !migrationsDisabled);
}

/**
 * The object store: central-ledger's MONGODB section, on unless MONGODB.DISABLED (its default.json
 * says true: no bulk handler runs).
 */
function mapObjectStore(source: KeyReader, set: Setter): void {
  const mongo = (key: string): string[] => ['MONGODB', key];
  const timeoutKey = ['MAX_FULFIL_TIMEOUT_DURATION_SECONDS'];
  set('bulk.maxFulfilTimeoutSeconds', timeoutKey, source.integer(timeoutKey));
  // Read in any case: a disabled section is still central-ledger's, not an unknown key.
  const disabled = source.boolean(mongo('DISABLED')) ?? !source.has(['MONGODB']);
  source.boolean(mongo('DEBUG'));
  const host = source.text(mongo('HOST'));
  const port = source.integer(mongo('PORT'));
  const user = source.text(mongo('USER'));
  const password = source.text(mongo('PASSWORD'));
  const database = source.text(mongo('DATABASE'));
  // The charts' bulk handlers render one URI (their objstore_uri) instead of the parts.
  const uri = source.text(mongo('URI'));
  if (disabled) return;
  if (uri !== undefined) {
    set('objectStore.url', mongo('URI'), uri);
    set('objectStore.database', mongo('URI'), database ?? databaseOfUri(uri));
    return;
  }
  // Without a host (and none of our own MONGODB_ variables) no store is configured: the start
  // says bulk transfers are off.
  if (host === undefined) return;
  set('objectStore.host', mongo('HOST'), host);
  set('objectStore.port', mongo('PORT'), port);
  set('objectStore.user', mongo('USER'), user);
  set('objectStore.password', mongo('PASSWORD'), password);
  set('objectStore.database', mongo('DATABASE'), database);
}

/** The database a mongodb:// URI names in its path, if any (`mongodb://h:27017/mlos?x=y`). */
function databaseOfUri(uri: string): string | undefined {
  const path = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]+)/.exec(uri)?.[1];
  return path === undefined || path === '' ? undefined : decodeURIComponent(path);
}

/** Our topic: central-ledger's functionality and action in its general topic template. */
const TOPIC_ACTIONS: Record<keyof Config['kafka']['topics'], [string, string]> = {
  prepare: ['transfer', 'prepare'],
  fulfil: ['transfer', 'fulfil'],
  get: ['transfer', 'get'],
  notification: ['notification', 'event'],
  settlementClose: ['deferredsettlement', 'close'],
  bulkPrepare: ['bulk', 'prepare'],
  bulkFulfil: ['bulk', 'fulfil'],
  bulkGet: ['bulk', 'get'],
};

/** Each consumed topic's consumer in central-ledger's KAFKA.CONSUMER (its group and client ids). */
const CONSUMER_KEYS: Record<(typeof CONSUMED_TOPICS)[number], [string, string]> = {
  prepare: ['TRANSFER', 'PREPARE'],
  fulfil: ['TRANSFER', 'FULFIL'],
  get: ['TRANSFER', 'GET'],
  bulkPrepare: ['BULK', 'PREPARE'],
  bulkFulfil: ['BULK', 'FULFIL'],
  bulkGet: ['BULK', 'GET'],
};

function mapKafka(source: KeyReader, set: Setter): void {
  const brokerLists = ['CONSUMER', 'PRODUCER'].flatMap((side) =>
    source.keysUnder(['KAFKA', side]).flatMap((functionality) =>
      source.keysUnder(['KAFKA', side, functionality]).map((action) => {
        const key = ['KAFKA', side, functionality, action, 'config', 'rdkafkaConf'];
        return [...key, 'metadata.broker.list'];
      }),
    ),
  );
  const lists = brokerLists
    .map((key) => ({
      key,
      brokers: source
        .text(key)
        ?.split(',')
        .map((b) => b.trim()),
    }))
    .filter((list): list is { key: string[]; brokers: string[] } => list.brokers !== undefined);
  const first = lists[0];
  if (first === undefined) return;
  const differing = lists.filter(
    (list) => [...list.brokers].sort().join() !== [...first.brokers].sort().join(),
  );
  if (differing.length > 0) {
    const named = [first, ...differing].map((l) => `${source.nameOf(l.key)} "${l.brokers}"`);
    source.fail(first.key, `one Kafka cluster here: the broker lists differ: ${named.join(', ')}`);
  }
  set('kafka.enabled', first.key, true);
  set('kafka.brokers', first.key, first.brokers);
  for (const topic of CONSUMED_TOPICS) {
    const conf = ['KAFKA', 'CONSUMER', ...CONSUMER_KEYS[topic], 'config', 'rdkafkaConf'];
    const groupId = source.text([...conf, 'group.id']);
    if (groupId === undefined) continue;
    const clientId = source.text([...conf, 'client.id']) ?? groupId;
    set(`kafka.consumers.${topic}`, [...conf, 'group.id'], { groupId, clientId });
  }
  const templateKey = ['KAFKA', 'TOPIC_TEMPLATES', 'GENERAL_TOPIC_TEMPLATE', 'TEMPLATE'];
  const template = source.text(templateKey);
  if (template === undefined) return;
  if (!template.includes('{{functionality}}') || !template.includes('{{action}}')) {
    source.fail(templateKey, `${JSON.stringify(template)} lacks {{functionality}} or {{action}}`);
    return;
  }
  for (const [ours, [functionality, action]] of Object.entries(TOPIC_ACTIONS)) {
    const topic = template
      .replaceAll('{{functionality}}', functionality)
      .replaceAll('{{action}}', action);
    if (!/^[A-Za-z0-9._-]{1,249}$/.test(topic))
      source.fail(templateKey, `makes ${JSON.stringify(topic)}, not a Kafka topic name`);
    else set(`kafka.topics.${ours}`, templateKey, topic);
  }
}

/** The timeout handler's cron `*\/N * * * * *` (every N seconds) as our sweep's interval. */
function sweepIntervalMs(source: KeyReader, key: KeyPath): number | undefined {
  const cron = source.text(key);
  if (cron === undefined) return undefined;
  const match = /^\*(?:\/(\d+))? \* \* \* \* \*$/.exec(cron.trim());
  if (match !== null) return Number(match[1] ?? 1) * 1000;
  return source.fail(
    key,
    `${JSON.stringify(cron)}: only "*/N * * * * *" (every N seconds) is understood here`,
  );
}

/** Keys whose other values would change what this service does: only today's values pass. */
function checkFixedHere(source: KeyReader): void {
  const hub = source.text(['HUB_PARTICIPANT', 'NAME']);
  if (hub !== undefined && hub !== 'Hub')
    source.fail(
      ['HUB_PARTICIPANT', 'NAME'],
      `${JSON.stringify(hub)}: the hub's name is fixed here ("Hub", as central-ledger's default)`,
    );
  const scale = source.integer(['AMOUNT', 'SCALE']);
  if (scale !== undefined && scale !== 4)
    source.fail(
      ['AMOUNT', 'SCALE'],
      `${scale}: amounts keep central-ledger's default scale 4 here (each currency's own ` +
        'minor units inside)',
    );
  if (source.boolean(['ENABLE_ON_US_TRANSFERS']) === true)
    source.fail(
      ['ENABLE_ON_US_TRANSFERS'],
      'true is not supported here: a transfer whose payer is its payee is refused',
    );
}

/**
 * The ledger: the 2022 TigerBeetle integration's `TIGERBEETLE: {ENABLED, CLUSTER,
 * REPLICA_ENDPOINT_01, ...}` or a list `REPLICA_ENDPOINTS`, or `EMBEDDED: true` for the embedded
 * ledger. Endpoints are `port`, `host:port` or `ip:port`; createLedger resolves host names.
 */
function mapTigerBeetle(source: KeyReader, set: Setter): void {
  const section = ['TIGERBEETLE'];
  if (source.keysUnder(section).length === 0) return;
  const key = (name: string): string[] => [...section, name];
  const enabled = source.boolean(key('ENABLED'));
  const embedded = source.boolean(key('EMBEDDED'));
  if (enabled === true && embedded === true)
    source.fail(key('EMBEDDED'), 'true with TIGERBEETLE.ENABLED true: choose one ledger');
  else if (enabled === true) set('ledger.backend', key('ENABLED'), 'tigerbeetle');
  else if (embedded === true) set('ledger.backend', key('EMBEDDED'), 'embedded');
  const cluster = source.text(key('CLUSTER'));
  if (cluster !== undefined && !/^\d{1,39}$/.test(cluster))
    source.fail(key('CLUSTER'), `${JSON.stringify(cluster)} is not a cluster id (digits)`);
  else set('ledger.tigerbeetle.clusterId', key('CLUSTER'), cluster);
  if (enabled === true && cluster === undefined)
    source.fail(key('CLUSTER'), 'missing: TIGERBEETLE.ENABLED needs the cluster id');
  const endpoints = replicaEndpoints(source, section);
  if (endpoints !== undefined)
    set('ledger.tigerbeetle.addresses', endpoints.key, endpoints.addresses);
  else if (enabled === true)
    source.fail(key('ENABLED'), 'true needs TIGERBEETLE.REPLICA_ENDPOINT_01, ... (or a list)');
}

function replicaEndpoints(
  source: KeyReader,
  section: KeyPath,
): { key: KeyPath; addresses: string[] } | undefined {
  const numbered = source
    .keysUnder(section)
    .filter((name) => /^REPLICA_ENDPOINT_\d+$/.test(name))
    .sort((a, b) => Number(a.slice(17)) - Number(b.slice(17)))
    .map((name) => [...section, name]);
  const listKey = [...section, 'REPLICA_ENDPOINTS'];
  const list = source.value(listKey);
  if (list !== undefined && numbered.length > 0) {
    source.fail(listKey, `set with ${numbered[0]!.join('.')}: choose one form`);
    return undefined;
  }
  const checked = (key: KeyPath, value: unknown): string | undefined => {
    const text = typeof value === 'number' ? String(value) : value;
    if (typeof text === 'string' && ADDRESS_PATTERN.test(text)) return text;
    return source.fail(key, `${JSON.stringify(value)} is not a port, host:port or ip:port`);
  };
  if (list !== undefined) {
    // A variable gives the list as text: "host:port,host:port".
    const items = typeof list === 'string' ? list.split(',').map((s) => s.trim()) : list;
    if (!Array.isArray(items)) return source.fail(listKey, `${JSON.stringify(list)} is not a list`);
    return { key: listKey, addresses: onlyDefined(items.map((item) => checked(listKey, item))) };
  }
  if (numbered.length === 0) return undefined;
  const addresses = numbered.map((key) => checked(key, source.value(key)));
  return { key: [...section, 'REPLICA_ENDPOINT_01'], addresses: onlyDefined(addresses) };
}

function unnamedLedger(prefix: string): ConfigError {
  return new ConfigError(
    'no ledger configured: set TIGERBEETLE.ENABLED true, TIGERBEETLE.CLUSTER and ' +
      `TIGERBEETLE.REPLICA_ENDPOINT_01, _02, ... (${prefix}_TIGERBEETLE__ENABLED=true, ` +
      `${prefix}_TIGERBEETLE__CLUSTER, ${prefix}_TIGERBEETLE__REPLICA_ENDPOINT_01, ...) for a ` +
      'TigerBeetle cluster; or, for the embedded ledger that keeps the money inside this one ' +
      `process, TIGERBEETLE.EMBEDDED true (${prefix}_TIGERBEETLE__EMBEDDED=true) or ` +
      'LEDGER_BACKEND=embedded. Several processes each with an embedded ledger would split the ' +
      'money between them.',
  );
}

function onlyDefined<T>(items: (T | undefined)[]): T[] {
  return items.filter((item): item is T => item !== undefined);
}
