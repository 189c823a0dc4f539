/**
 * central-ledger's and central-settlement's pods of a Mojaloop installation, as local processes:
 * the build laid out as the image's /opt/app, each service's own published config/default.json
 * (read from its git mirror at the tag the official charts pin, never kept in this repository)
 * with only hosts and ports pointed here and a TIGERBEETLE section added, the charts' environment,
 * the pre-install migration Job, the wait-for-mysql init container, and each Deployment's command
 * with its probe. The reference: shared/reference/mojaloop-deployment.md.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { stopChild, track } from './leftovers';
import { REPO_DIR, startProcess, tail, type Started } from './service-process';

/** Where the `fetch` tool keeps git mirrors (owner+name/repo); MOJALOOP_MIRRORS overrides it. */
const MIRRORS = process.env['MOJALOOP_MIRRORS'] ?? '/work/.mirror';
const DIST_DIR = path.join(REPO_DIR, 'dist');
const JOB_TIMEOUT_MS = 180_000;
/** Nine Node processes starting at once on two cores, each waiting for its ledger. */
const POD_READY_TIMEOUT_MS = 180_000;

export interface MojaloopService {
  name: 'central-ledger' | 'central-settlement';
  /** Tags tried in order: the first the mirror has is read. */
  tags: string[];
  /** central-ledger's rc prefix for environment variables (CLEDG_DATABASE__PASSWORD …). */
  envPrefix: 'CLEDG' | 'CSET';
}

// mojaloop/helm v17.3.0 pins central-ledger v19.14.0 and central-settlement v17.4.0; that tag is
// not published in every mirror, v17.3.4 is the one before it.
export const CENTRAL_LEDGER: MojaloopService = {
  name: 'central-ledger',
  tags: ['v19.14.0'],
  envPrefix: 'CLEDG',
};
export const CENTRAL_SETTLEMENT: MojaloopService = {
  name: 'central-settlement',
  tags: ['v17.4.0', 'v17.3.4'],
  envPrefix: 'CSET',
};

export interface PublishedConfig {
  /** e.g. "central-ledger v19.14.0". */
  source: string;
  file: Record<string, any>;
}

/** The service's config/default.json as published at its tag, or why it cannot be read here. */
export function publishedConfig(
  service: MojaloopService,
): PublishedConfig | { unavailable: string } {
  const repo = path.join(MIRRORS, `mojaloop+${service.name}`, 'repo');
  if (!fs.existsSync(repo))
    return { unavailable: `no git mirror of mojaloop/${service.name} at ${repo}` };
  for (const tag of service.tags) {
    const shown = spawnSync('git', ['-C', repo, 'show', `${tag}:config/default.json`], {
      encoding: 'utf8',
      maxBuffer: 16 * 1024 * 1024,
    });
    if (shown.status === 0)
      return { source: `${service.name} ${tag}`, file: JSON.parse(shown.stdout) };
  }
  return { unavailable: `${repo} has none of the tags ${service.tags.join(', ')}` };
}

/** The servers of the installation the pods are pointed at. */
export interface Installation {
  mysqlPort: number;
  brokers: string[];
  ledger: { clusterId: bigint; addresses: string[] };
}

/**
 * The published file with what an operator's values change: the database's host and port, every
 * consumer's and producer's broker list, the pod's port, and the ledger in the 2022 TigerBeetle
 * integration's form. The replicas are named by host name, as a cluster's Services are.
 */
export function installationConfig(
  published: PublishedConfig,
  installation: Installation,
  port: number,
): Record<string, unknown> {
  const file = structuredClone(published.file);
  file['PORT'] = port;
  file['DATABASE'].HOST = '127.0.0.1';
  file['DATABASE'].PORT = installation.mysqlPort;
  pointAtBrokers(file['KAFKA'], installation.brokers);
  const endpoints = Object.fromEntries(
    installation.ledger.addresses.map((address, i) => [
      `REPLICA_ENDPOINT_${String(i + 1).padStart(2, '0')}`,
      `localhost:${address.slice(address.lastIndexOf(':') + 1)}`,
    ]),
  );
  file['TIGERBEETLE'] = {
    ENABLED: true,
    CLUSTER: Number(installation.ledger.clusterId),
    ...endpoints,
  };
  return file;
}

/** Every rdkafka `metadata.broker.list` under `node` set to `brokers`, in place. */
export function pointAtBrokers(node: unknown, brokers: string[]): void {
  if (node === null || typeof node !== 'object') return;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'metadata.broker.list') (node as Record<string, unknown>)[key] = brokers.join(',');
    else pointAtBrokers(value, brokers);
  }
}

/**
 * `npm run build`'s dist/ copied to `appDir` as the image's /opt/app, the repository's
 * node_modules linked beside it, and `config` mounted as config/default.json the way the charts'
 * ConfigMap is (the whole directory replaced).
 */
export function layOutApp(appDir: string, config: Record<string, unknown>): void {
  fs.cpSync(DIST_DIR, appDir, { recursive: true });
  fs.symlinkSync(path.join(REPO_DIR, 'node_modules'), path.join(appDir, 'node_modules'));
  const configDir = path.join(appDir, 'config');
  fs.rmSync(configDir, { recursive: true, force: true });
  fs.mkdirSync(configDir);
  fs.writeFileSync(path.join(configDir, 'default.json'), `${JSON.stringify(config, null, 2)}\n`);
}

/** What must exist before a layout: dist/ as `npm run build` writes it, else why not. */
export function buildMissing(): string | undefined {
  for (const entry of ['src/api/index.js', 'src/handlers/index.js', 'package.json'])
    if (!fs.existsSync(path.join(DIST_DIR, entry))) return `npm run build wrote no dist/${entry}`;
  return undefined;
}

/** Runs `npm run build` in the repository; rejects with its output's tail. */
export function build(logFile: string): Promise<void> {
  return runJob('npm run build', REPO_DIR, { ...process.env }, logFile);
}

/**
 * The environment the charts give every pod (their values' defaults): the database password as
 * from the secret, and the account and port the local installation needs, through the service's
 * own variables. Nothing of the test's environment leaks in.
 */
export function chartEnvironment(
  service: MojaloopService,
  options: {
    user: string;
    password: string;
    port: number;
    /** The pod's home: no rc file of this machine's (~/.CLEDGrc …) is read. */
    home: string;
    extra?: Record<string, string>;
  },
): NodeJS.ProcessEnv {
  const prefix = service.envPrefix;
  return {
    PATH: process.env['PATH'],
    HOME: options.home,
    npm_config_update_notifier: 'false',
    [`${prefix}_DATABASE__PASSWORD`]: options.password,
    [`${prefix}_DATABASE__USER`]: options.user,
    [`${prefix}_PORT`]: String(options.port),
    LOG_LEVEL: 'info',
    LOG_FILTER: 'error, warn, info',
    CSL_LOG_TRANSPORT: 'file',
    EVENT_SDK_LOG_FILTER: 'audit:*, log:warn, log:error',
    EVENT_SDK_LOG_METADATA_ONLY: 'false',
    EVENT_SDK_VENDOR_PREFIX: 'mojaloop',
    EVENT_SDK_TRACESTATE_HEADER_ENABLED: 'true',
    EVENT_SDK_ASYNC_OVERRIDE_EVENTS: 'log,trace',
    EVENT_SDK_TRACEID_PER_VENDOR: 'false',
    ...options.extra,
  };
}

/** `sh -c "<command>"` in `cwd`, its output to `logFile`; rejects with the tail on failure. */
function runJob(
  command: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  logFile: string,
): Promise<void> {
  const fd = fs.openSync(logFile, 'a');
  const child = track(spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', fd, fd] }));
  fs.closeSync(fd);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stopChild(child, 5_000);
      reject(new Error(`\`${command}\` still running after ${JOB_TIMEOUT_MS / 1000} s`));
    }, JOB_TIMEOUT_MS);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else
        reject(new Error(`\`${command}\` in ${cwd} exited ${signal ?? code}:\n${tail(logFile)}`));
    });
  });
}

/** The charts' pre-install Job: `sh -c "npm run migrate"` in /opt/app with its configuration. */
export function migrationJob(
  appDir: string,
  env: NodeJS.ProcessEnv,
  logFile: string,
): Promise<void> {
  return runJob('npm run migrate', appDir, env, logFile);
}

export interface MySqlAccount {
  port: number;
  user: string;
  password: string;
}

/** Creates the schema the published file names, as the installation's MySQL chart does. */
export async function createSchema(account: MySqlAccount, schema: string): Promise<void> {
  const connection = await mysql.createConnection({ host: '127.0.0.1', ...account });
  try {
    await connection.query(`CREATE DATABASE \`${schema}\``);
  } finally {
    await connection.end();
  }
}

/**
 * The handler charts' wait-for-mysql init container: `select is_locked from migration_lock;` must
 * answer 0 before a pod starts. Answers what it read, or the error.
 */
export async function migrationLockState(account: MySqlAccount, schema: string): Promise<string> {
  const connection = await mysql.createConnection({
    host: '127.0.0.1',
    database: schema,
    ...account,
  });
  try {
    const [rows] = await connection.query('select is_locked from migration_lock');
    return JSON.stringify(rows);
  } catch (error) {
    return `error: ${(error as Error).message}`;
  } finally {
    await connection.end();
  }
}

export interface Pod {
  label: string;
  started: Started;
}

/**
 * A Deployment's container: `node <args>` in `appDir` (its /opt/app), output to
 * `<logDir>/<label>.log`, ready once `readyPath` answers 2xx on `port` (its probe).
 */
export async function startPod(options: {
  label: string;
  appDir: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  port: number;
  readyPath: string;
  logDir: string;
}): Promise<Pod> {
  const started = await startProcess(
    options.label,
    options.args,
    options.env,
    options.port,
    path.join(options.logDir, `${options.label}.log`),
    options.readyPath,
    POD_READY_TIMEOUT_MS,
    options.appDir,
  );
  return { label: options.label, started };
}

/** The last lines of every log under `logDir`, for a failure's report. */
export function logTails(logDir: string, lines = 40): string {
  if (!fs.existsSync(logDir)) return '(no logs)';
  return fs
    .readdirSync(logDir)
    .filter((name) => name.endsWith('.log'))
    .map((name) => `\n--- ${name} ---\n${tail(path.join(logDir, name), lines)}`)
    .join('');
}
