/**
 * Runs Mojaloop's own Postman collections (the community repository mojaloop/postman), filtered to
 * the requests aimed at central-ledger, against this service, and writes a summary.
 *
 *   npx tsx scripts/postman/run.ts --postman <mojaloop/postman checkout, export or bare git dir>
 *       [--rev HEAD] [--url http://127.0.0.1:3001 | --start] [--sequence name,...] [--out dir]
 *
 * The collections are never copied into this repository: they are read from the path given, from
 * its files or, for a bare repository, with `git show <rev>:<file>`, and the filtered copies live
 * in a temporary directory. See scripts/postman/README.md for what is kept and why.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../test/support/net';
import { stopChild, track } from '../../test/support/leftovers';

/** A variable whose value is central-ledger's base URL in every environment of mojaloop/postman. */
const CENTRAL_LEDGER_HOST = '{{HOST_CENTRAL_LEDGER}}';
/**
 * Where every other service's variable points: the discard port, so a stray request is refused at
 * once.
 */
const NOWHERE = 'http://127.0.0.1:9';

interface CollectionRun {
  /** Path of the collection inside mojaloop/postman. */
  file: string;
  /** A short name for reports. */
  name: string;
  /**
   * Run only to put the hub into the state the next collection expects; its failures are reported
   * with the setup run.
   */
  setup?: boolean;
  /**
   * Adds `"settlementAccountType": "SETTLEMENT"` to POST /settlementModels bodies that lack it: the
   * 2022
   * collections predate central-ledger making it required, so without it v19.14 refuses the model
   * (3101) and every onboarding step after it fails there as here. Only for setups of the test
   * collections.
   */
  addSettlementAccountType?: boolean;
}

interface Sequence {
  name: string;
  /** The environment file of mojaloop/postman the collections were written for. */
  environment: string;
  /** Run in this order against one fresh service, the environment passed from one to the next. */
  collections: CollectionRun[];
}

const HUB_SETUP: CollectionRun = {
  file: 'MojaloopHub_Setup.postman_collection.json',
  name: 'MojaloopHub_Setup',
};
const LEGACY_SETUP: CollectionRun = {
  file: 'ML_OSS_Setup_LegacySim.postman_collection.json',
  name: 'ML_OSS_Setup_LegacySim',
};

export const SEQUENCES: Sequence[] = [
  {
    name: 'mojasims',
    environment: 'environments/Mojaloop-Local-MojaSims.postman_environment.json',
    collections: [
      HUB_SETUP,
      { file: 'MojaloopSims_Onboarding.postman_collection.json', name: 'MojaloopSims_Onboarding' },
    ],
  },
  {
    name: 'legacy',
    environment: 'environments/Mojaloop-Local.postman_environment.json',
    collections: [LEGACY_SETUP],
  },
  {
    name: 'cgs',
    environment: 'environments/Mojaloop-Local-CGS-MojaSims.postman_environment.json',
    collections: [
      {
        file: 'CGS/OSS-CGS-New-Deployment-FSP-Setup.postman_collection.json',
        name: 'OSS-CGS-New-Deployment-FSP-Setup',
      },
    ],
  },
  {
    name: 'api-tests',
    environment: 'environments/Mojaloop-Local.postman_environment.json',
    collections: [
      { ...LEGACY_SETUP, setup: true, addSettlementAccountType: true },
      { file: 'archive/OSS-API-Tests-old.postman_collection.json', name: 'OSS-API-Tests-old' },
      { file: 'archive/OSS-API-Tests-New.postman_collection.json', name: 'OSS-API-Tests-New' },
    ],
  },
  {
    name: 'feature-tests',
    environment: 'environments/Mojaloop-Local.postman_environment.json',
    collections: [
      { ...LEGACY_SETUP, setup: true, addSettlementAccountType: true },
      { file: 'archive/OSS-Feature-Tests.postman_collection.json', name: 'OSS-Feature-Tests' },
    ],
  },
];

interface Options {
  postman: string;
  rev: string;
  url: string;
  start: boolean;
  sequences: string[];
  out: string;
  newman: string[];
  requestTimeoutMs: number;
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    postman: '',
    rev: 'HEAD',
    url: 'http://127.0.0.1:3001',
    start: false,
    sequences: SEQUENCES.map((s) => s.name),
    out: path.resolve(__dirname, 'out'),
    newman: (process.env.NEWMAN ?? 'npx --yes newman@6').split(' '),
    requestTimeoutMs: 10_000,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === '--postman') options.postman = value();
    else if (arg === '--rev') options.rev = value();
    else if (arg === '--url') options.url = value().replace(/\/+$/, '');
    else if (arg === '--start') options.start = true;
    else if (arg === '--sequence') options.sequences = value().split(',');
    else if (arg === '--out') options.out = path.resolve(value());
    else if (arg === '--request-timeout-ms') options.requestTimeoutMs = Number(value());
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write(fs.readFileSync(__filename, 'utf8').split('*/')[0] + '*/\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}`);
  }
  if (!options.postman)
    throw new Error(
      '--postman <path to a checkout, export or bare git repository of mojaloop/postman> is required',
    );
  for (const name of options.sequences) {
    if (!SEQUENCES.some((s) => s.name === name))
      throw new Error(
        `unknown sequence ${name} (known: ${SEQUENCES.map((s) => s.name).join(', ')})`,
      );
  }
  return options;
}

/**
 * A file of mojaloop/postman: from the directory if it is there, else from the git repository at
 * `rev`.
 */
function readSource(options: Options, file: string): string {
  const onDisk = path.join(options.postman, file);
  if (fs.existsSync(onDisk)) return fs.readFileSync(onDisk, 'utf8');
  return execFileSync('git', ['-C', options.postman, 'show', `${options.rev}:${file}`], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
}

function sourceRevision(options: Options): string {
  try {
    return execFileSync('git', ['-C', options.postman, 'rev-parse', options.rev], {
      encoding: 'utf8',
    }).trim();
  } catch {
    return '(not a git repository)';
  }
}

// ---- filtering ------------------------------------------------------------------------------

interface PostmanItem {
  name: string;
  item?: PostmanItem[];
  request?: { method: string; url: string | { raw?: string } };
  [key: string]: unknown;
}

function rawUrl(item: PostmanItem): string {
  const url = item.request?.url;
  return typeof url === 'string' ? url : (url?.raw ?? '');
}

/**
 * The variable a URL starts with (`HOST_SWITCH_TRANSFERS`), or the URL's start when it has none.
 */
function hostOf(raw: string): string {
  const match = /^\{\{([^}]+)\}\}/.exec(raw.trim());
  return match ? match[1]! : raw.slice(0, 40) || '(empty)';
}

interface FilterResult {
  collection: { item: PostmanItem[]; [key: string]: unknown };
  kept: number;
  dropped: Map<string, number>;
  /**
   * Literal URLs of other hosts in scripts (a JS library, Google's OAuth for result sheets), sent
   * to NOWHERE instead.
   */
  blockedScriptUrls: Set<string>;
}

const LITERAL_URL = /https?:\/\/[A-Za-z0-9.-]+(:\d+)?[^'"`\s]*/g;

/**
 * Traffic stays on this machine: every script's literal URLs that are not 127.0.0.1 point at
 * NOWHERE, and every script runs with a `pm` whose sendRequest sends any other URL (built at run
 * time, or `pm.sendRequest('www.google.com')` used as a sleep) there too, and records each request.
 */
function confineScripts<T extends object>(node: T, blocked: Set<string>): T {
  const events = (node as { event?: unknown }).event;
  if (!Array.isArray(events)) return node;
  const event = (events as { script?: { exec?: string[] | string } }[]).map((e) => {
    if (!e.script?.exec) return e;
    const lines = Array.isArray(e.script.exec) ? e.script.exec : [e.script.exec];
    const exec = [
      GUARDED_PM,
      ...lines.map((line) =>
        line.replace(LITERAL_URL, (url) => {
          if (/^https?:\/\/127\.0\.0\.1[:/]/.test(url)) return url;
          blocked.add(url);
          return `${NOWHERE}/blocked`;
        }),
      ),
      GUARDED_PM_END,
    ];
    return { ...e, script: { ...e.script, exec } };
  });
  return { ...node, event };
}

/**
 * Keeps the requests whose URL starts with central-ledger's variable; drops the rest, and folders
 * left empty.
 */
export function filterCollection(collection: {
  item: PostmanItem[];
  [key: string]: unknown;
}): FilterResult {
  let kept = 0;
  const dropped = new Map<string, number>();
  const blockedScriptUrls = new Set<string>();
  const walk = (items: PostmanItem[]): PostmanItem[] => {
    const out: PostmanItem[] = [];
    for (const item of items) {
      if (item.item) {
        const children = walk(item.item);
        if (children.length > 0)
          out.push(confineScripts({ ...item, item: children }, blockedScriptUrls));
      } else if (rawUrl(item).trim().startsWith(CENTRAL_LEDGER_HOST)) {
        kept++;
        out.push(instrument(confineScripts(item, blockedScriptUrls)));
      } else {
        const host = hostOf(rawUrl(item));
        dropped.set(host, (dropped.get(host) ?? 0) + 1);
      }
    }
    return out;
  };
  const item = walk(collection.item);
  return {
    collection: confineScripts({ ...collection, item }, blockedScriptUrls),
    kept,
    dropped,
    blockedScriptUrls,
  };
}

interface EnvironmentFile {
  values: { key: string; value: unknown; enabled?: boolean; type?: string }[];
  [key: string]: unknown;
}

/**
 * The upstream environment with central-ledger at `url` and every other service at NOWHERE.
 * `overrides` (env.template.json) sets what the upstream file leaves for a deployment to fill in.
 */
export function prepareEnvironment(
  env: EnvironmentFile,
  url: string,
  overrides: Record<string, string>,
): EnvironmentFile {
  const values = env.values.map((v) => {
    const value = typeof v.value === 'string' ? v.value : String(v.value ?? '');
    const looksLikeService =
      /^https?:\/\//.test(value) ||
      /\.local(:\d+)?(\/|$)/.test(value) ||
      /^localhost:\d+/.test(value);
    return { ...v, value: looksLikeService ? NOWHERE : value };
  });
  const set = (key: string, value: string): void => {
    const existing = values.find((v) => v.key === key);
    if (existing) existing.value = value;
    else values.push({ key, value, enabled: true, type: 'default' });
  };
  for (const [key, value] of Object.entries(overrides)) set(key, value);
  set('HOST_CENTRAL_LEDGER', url);
  return { ...env, values };
}

/**
 * Newman's JSON report keeps one request per item (the last one its scripts sent), so each kept
 * item records its own request and answer, and every pm.sendRequest of its scripts, in environment
 * variables (__own_<item id>, __side_<item id>) that the exported environment brings back.
 */
const GUARDED_PM = `var __guardedPm = (function (pm) {
  const send = pm.sendRequest.bind(pm);
  const guarded = function (req, cb) {
    let url = typeof req === 'string' ? req : String(req.url);
    if (!/^https?:\\/\\/127\\.0\\.0\\.1[:/]/.test(url)) {
      url = '${NOWHERE}/blocked';
      req = typeof req === 'string' ? url : Object.assign({}, req, { url: url });
    }
    return send(req, function (err, res) {
      try {
        const key = '__side_' + pm.info.requestId;
        const list = JSON.parse(pm.environment.get(key) || '[]');
        const sent = typeof req === 'object' && req.body && req.body.raw ? String(req.body.raw) : '';
        list.push({ method: typeof req === 'string' ? 'GET' : (req.method || 'GET'), url: url, sent: sent.slice(0, 300), status: res ? res.code : null, body: res ? res.text().slice(0, 400) : '', error: err ? String(err.message || err) : '' });
        pm.environment.set(key, JSON.stringify(list.slice(-20)));
      } catch (e) {}
      if (cb) return cb(err, res);
    });
  };
  // pm.sendRequest is read-only and non-configurable: a proxy of an empty object stands in for pm.
  return new Proxy({}, {
    get: function (_target, key) {
      if (key === 'sendRequest') return guarded;
      const value = Reflect.get(pm, key);
      return typeof value === 'function' ? Object.assign(value.bind(pm), value) : value;
    },
    has: function (_target, key) { return key in pm; },
  });
})(pm);
(function (pm) {`;
const GUARDED_PM_END = '})(__guardedPm);';
const RECORD_OWN = `try { pm.environment.set('__own_' + pm.info.requestId, JSON.stringify({ method: pm.request.method, url: pm.request.url.toString(), sent: pm.request.body && pm.request.body.raw ? String(pm.request.body.raw).slice(0, 300) : '', status: pm.response.code, body: pm.response.text().slice(0, 600) })); } catch (e) {}`;

function instrument(item: PostmanItem): PostmanItem {
  // pm.info.requestId is the item's id; items without one would get a fresh id from newman.
  const id = typeof item.id === 'string' ? item.id : randomUUID();
  const events = Array.isArray(item.event)
    ? [...(item.event as { listen: string; script?: { exec?: string[] | string } }[])]
    : [];
  if (!events.some((e) => e.listen === 'test'))
    events.push({ listen: 'test', script: { exec: [] } });
  const event = events.map((e) => {
    const exec =
      e.script?.exec === undefined
        ? []
        : Array.isArray(e.script.exec)
          ? e.script.exec
          : [e.script.exec];
    const head = e.listen === 'test' ? [RECORD_OWN] : [];
    return { ...e, script: { type: 'text/javascript', ...e.script, exec: [...head, ...exec] } };
  });
  return { ...item, id, event };
}

interface Recorded {
  method: string;
  url: string;
  sent: string;
  status: number | null;
  body: string;
  error?: string;
}

/**
 * Takes the recordings out of an exported environment (so the next collection does not see them).
 */
function takeRecordings(envFile: string): {
  own: Map<string, Recorded>;
  side: Map<string, Recorded[]>;
} {
  const env = JSON.parse(fs.readFileSync(envFile, 'utf8')) as EnvironmentFile;
  const own = new Map<string, Recorded>();
  const side = new Map<string, Recorded[]>();
  for (const v of env.values) {
    if (typeof v.value !== 'string') continue;
    try {
      if (v.key.startsWith('__own_')) own.set(v.key.slice(6), JSON.parse(v.value) as Recorded);
      else if (v.key.startsWith('__side_'))
        side.set(v.key.slice(7), JSON.parse(v.value) as Recorded[]);
    } catch {
      // a recording cut short: left out
    }
  }
  env.values = env.values.filter(
    (v) => !v.key.startsWith('__own_') && !v.key.startsWith('__side_'),
  );
  fs.writeFileSync(envFile, JSON.stringify(env, null, 2));
  return { own, side };
}

/** See CollectionRun.addSettlementAccountType. */
export function addSettlementAccountType(collection: { item: PostmanItem[] }): number {
  let patched = 0;
  const walk = (items: PostmanItem[]): void => {
    for (const item of items) {
      if (item.item) walk(item.item);
      const body = (item.request as { body?: { raw?: string } } | undefined)?.body;
      if (
        item.request?.method !== 'POST' ||
        !/\/settlementModels\/?$/.test(rawUrl(item)) ||
        !body?.raw
      )
        continue;
      try {
        const parsed = JSON.parse(body.raw) as Record<string, unknown>;
        if (parsed.settlementAccountType !== undefined) continue;
        body.raw = JSON.stringify({ ...parsed, settlementAccountType: 'SETTLEMENT' }, null, 2);
        patched++;
      } catch {
        // not JSON: left as it is
      }
    }
  };
  walk(collection.item);
  return patched;
}

// ---- the service ----------------------------------------------------------------------------

async function waitHealthy(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`the service exited with ${child.exitCode}:\n${log()}`);
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the service did not become healthy in 60 s:\n${log()}`);
}

/** The service from this checkout on a free port, with an empty DATA_DIR and /jmeter on. */
async function startService(
  workDir: string,
): Promise<{ url: string; stop: () => Promise<void>; dataDir: string }> {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(workDir, 'data-'));
  const root = path.resolve(__dirname, '../..');
  let output = '';
  const child = track(
    spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: root,
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_DIR: dataDir,
        JMETER_ENABLED: 'true',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  child.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-8000)));
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-8000)));
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, child, () => output);
  return { url, dataDir, stop: () => stopChild(child, 5000) };
}

// ---- newman and its report -----------------------------------------------------------------

interface Failure {
  request: string;
  method: string;
  url: string;
  assertion: string;
  message: string;
  status: string;
  body: string;
  requestBody: string;
  /** Requests the item's scripts sent to central-ledger (pm.sendRequest), with their answers. */
  sideRequests: string[];
}

interface CollectionSummary {
  sequence: string;
  name: string;
  file: string;
  setup: boolean;
  kept: number;
  dropped: Record<string, number>;
  blockedScriptUrls: string[];
  patchedSettlementModels: number;
  requests: number;
  requestErrors: number;
  /** pm.sendRequest calls to other services refused at NOWHERE (not failures of central-ledger). */
  refusedElsewhere: number;
  assertions: number;
  assertionsFailed: number;
  failures: Failure[];
  /**
   * The items' own requests central-ledger answered with 4xx/5xx though no assertion failed (the
   * collection does not check).
   */
  unassertedErrors: string[];
  newmanExit: number | null;
}

function runNewman(options: Options, args: string[], logFile: string): Promise<number | null> {
  return new Promise((resolve) => {
    const [command, ...rest] = options.newman;
    const log = fs.openSync(logFile, 'w');
    const child = track(spawn(command!, [...rest, ...args], { stdio: ['ignore', log, log] }));
    // A bound on the whole run: collections with setTimeout waits take a few minutes at most.
    const timer = setTimeout(() => child.kill('SIGKILL'), 20 * 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fs.closeSync(log);
      resolve(code);
    });
  });
}

interface NewmanFailure {
  error: { name?: string; message?: string; test?: string; port?: number; code?: string };
  at: string;
  source?: { id?: string; name?: string };
}

interface NewmanReport {
  run: { stats: Record<string, { total: number; failed: number }>; failures: NewmanFailure[] };
}

function clip(text: string, max = 400): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** Item id → its folder path, for reports. */
function itemPaths(collection: { item: PostmanItem[] }): Map<string, string> {
  const paths = new Map<string, string>();
  const walk = (items: PostmanItem[], prefix: string[]): void => {
    for (const item of items) {
      const here = [...prefix, item.name];
      if (item.item) walk(item.item, here);
      else if (typeof item.id === 'string') paths.set(item.id, here.join(' / '));
    }
  };
  walk(collection.item, []);
  return paths;
}

function pathOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.pathname}${u.search}`;
  } catch {
    return url;
  }
}

function portOf(url: string): string {
  try {
    return new URL(url).port;
  } catch {
    return '';
  }
}

function summarise(
  report: NewmanReport,
  paths: Map<string, string>,
  recordings: { own: Map<string, Recorded>; side: Map<string, Recorded[]> },
  servicePort: string,
): Pick<
  CollectionSummary,
  | 'requests'
  | 'requestErrors'
  | 'refusedElsewhere'
  | 'assertions'
  | 'assertionsFailed'
  | 'failures'
  | 'unassertedErrors'
> {
  const failures: Failure[] = [];
  const seen = new Set<string>();
  const failedItems = new Set<string>();
  let refusedElsewhere = 0;
  for (const failure of report.run.failures) {
    if (
      failure.at === 'request' &&
      failure.error.code === 'ECONNREFUSED' &&
      failure.error.port === 9
    ) {
      refusedElsewhere++;
      continue;
    }
    const itemId = failure.source?.id ?? '';
    failedItems.add(itemId);
    const assertion = failure.error.test ?? failure.error.name ?? failure.at;
    const message = clip(failure.error.message ?? '', 300);
    const key = `${itemId}|${assertion}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const own = recordings.own.get(itemId);
    const side = (recordings.side.get(itemId) ?? [])
      .filter((r) => portOf(r.url) === servicePort)
      .map(
        (r) =>
          `${r.method} ${pathOf(r.url)}${r.sent ? ` ${clip(r.sent, 200)}` : ''} → ${r.status ?? r.error} ${clip(r.body, 300)}`,
      );
    failures.push({
      request: paths.get(itemId) ?? failure.source?.name ?? '(unknown)',
      method: own?.method ?? '',
      url: own ? pathOf(own.url) : '',
      assertion,
      message,
      status: own?.status !== undefined && own.status !== null ? `${own.status}` : '(no response)',
      body: clip(own?.body ?? ''),
      requestBody: clip(own?.sent ?? '', 300),
      sideRequests: [...new Set(side)],
    });
  }
  const unassertedErrors: string[] = [];
  for (const [itemId, own] of recordings.own) {
    if (failedItems.has(itemId) || (own.status ?? 0) < 400) continue;
    unassertedErrors.push(
      `**${paths.get(itemId) ?? itemId}** — \`${own.method} ${pathOf(own.url)}\`${own.sent ? ` sent \`${clip(own.sent, 200)}\`` : ''} got ${own.status} \`${clip(own.body, 300)}\``,
    );
  }
  const stats = report.run.stats;
  return {
    unassertedErrors,
    requests: stats.requests?.total ?? 0,
    requestErrors: stats.requests?.failed ?? 0,
    refusedElsewhere,
    assertions: stats.assertions?.total ?? 0,
    assertionsFailed: stats.assertions?.failed ?? 0,
    failures,
  };
}

function markdown(
  options: Options,
  revision: string,
  summaries: CollectionSummary[],
  started: Date,
): string {
  const lines: string[] = [];
  lines.push(
    `# Postman run: mojaloop/postman ${revision.slice(0, 12)} against tb-central-ledger`,
    '',
  );
  lines.push(
    `Started ${started.toISOString()}; service ${options.start ? 'started fresh per sequence (--start)' : options.url}.`,
    '',
  );
  lines.push(
    '| sequence | collection | requests kept (dropped by host) | requests run | refused elsewhere | assertions | failed |',
    '|---|---|---|---|---|---|---|',
  );
  for (const s of summaries) {
    const dropped =
      Object.entries(s.dropped)
        .map(([h, n]) => `${h} ${n}`)
        .join(', ') || '–';
    lines.push(
      `| ${s.sequence} | ${s.name}${s.setup ? ' (setup)' : ''} | ${s.kept} (${dropped}) | ${s.requests} | ${s.refusedElsewhere} | ${s.assertions} | ${s.assertionsFailed} |`,
    );
  }
  const blocked = [...new Set(summaries.flatMap((s) => s.blockedScriptUrls))];
  if (blocked.length > 0)
    lines.push(
      '',
      `Literal URLs in the collections' scripts sent to ${NOWHERE} instead: ${blocked.join(', ')}.`,
    );
  lines.push(
    '',
    `"requests run" counts the scripts' pm.sendRequest calls too; "refused elsewhere" are those aimed at other services (at ${NOWHERE}, refused at once).`,
  );
  for (const s of summaries) {
    if (s.patchedSettlementModels > 0)
      lines.push(
        '',
        `${s.sequence}: ${s.name}: ${s.patchedSettlementModels} POST /settlementModels bodies given "settlementAccountType": "SETTLEMENT" (required since the collection was written).`,
      );
  }
  for (const s of summaries) {
    if (s.setup || (s.failures.length === 0 && s.unassertedErrors.length === 0)) continue;
    lines.push('', `## ${s.sequence}: ${s.name}`, '');
    if (s.unassertedErrors.length > 0) {
      lines.push('Error answers no assertion checked:', '');
      for (const e of s.unassertedErrors) lines.push(`- ${e}`);
      lines.push('', 'Failed assertions:', '');
    }
    for (const f of s.failures) {
      lines.push(`- **${f.request}** — \`${f.method} ${f.url}\``);
      lines.push(`  - assertion: ${f.assertion}: ${f.message}`);
      if (f.requestBody) lines.push(`  - sent: \`${f.requestBody}\``);
      lines.push(`  - got: ${f.status} \`${f.body}\``);
      for (const side of f.sideRequests) lines.push(`  - its script's request: \`${side}\``);
    }
  }
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const started = new Date();
  const revision = sourceRevision(options);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'postman-run-'));
  fs.mkdirSync(options.out, { recursive: true });
  const overrides = JSON.parse(
    fs.readFileSync(path.join(__dirname, 'env.template.json'), 'utf8'),
  ) as Record<string, string>;
  const summaries: CollectionSummary[] = [];
  try {
    for (const sequence of SEQUENCES.filter((s) => options.sequences.includes(s.name))) {
      const service = options.start ? await startService(work) : undefined;
      const url = service?.url ?? options.url;
      let envFile = path.join(work, `${sequence.name}.env.json`);
      const env = JSON.parse(readSource(options, sequence.environment)) as EnvironmentFile;
      fs.writeFileSync(envFile, JSON.stringify(prepareEnvironment(env, url, overrides), null, 2));
      try {
        for (const [index, run] of sequence.collections.entries()) {
          const filtered = filterCollection(JSON.parse(readSource(options, run.file)));
          const patched = run.addSettlementAccountType
            ? addSettlementAccountType(filtered.collection)
            : 0;
          const base = `${sequence.name}-${index}-${run.name}`;
          const collectionFile = path.join(work, `${base}.collection.json`);
          fs.writeFileSync(collectionFile, JSON.stringify(filtered.collection));
          const reportFile = path.join(options.out, `${base}.newman.json`);
          const nextEnv = path.join(work, `${base}.env-out.json`);
          process.stdout.write(
            `${sequence.name}: ${run.name}: ${filtered.kept} central-ledger requests … `,
          );
          const summary: CollectionSummary = {
            sequence: sequence.name,
            name: run.name,
            file: run.file,
            setup: run.setup === true,
            kept: filtered.kept,
            dropped: Object.fromEntries(filtered.dropped),
            blockedScriptUrls: [...filtered.blockedScriptUrls],
            patchedSettlementModels: patched,
            requests: 0,
            requestErrors: 0,
            refusedElsewhere: 0,
            assertions: 0,
            assertionsFailed: 0,
            failures: [],
            unassertedErrors: [],
            newmanExit: null,
          };
          if (filtered.kept > 0) {
            summary.newmanExit = await runNewman(
              options,
              [
                'run',
                collectionFile,
                '--environment',
                envFile,
                '--export-environment',
                nextEnv,
                '--reporters',
                'cli,json',
                '--reporter-json-export',
                reportFile,
                '--timeout-request',
                String(options.requestTimeoutMs),
                '--timeout-script',
                '120000',
                '--delay-request',
                '10',
                '--color',
                'off',
                '--disable-unicode',
              ],
              path.join(options.out, `${base}.newman.log`),
            );
            const recordings = fs.existsSync(nextEnv)
              ? takeRecordings(nextEnv)
              : { own: new Map<string, Recorded>(), side: new Map<string, Recorded[]>() };
            if (fs.existsSync(reportFile)) {
              Object.assign(
                summary,
                summarise(
                  JSON.parse(fs.readFileSync(reportFile, 'utf8')) as NewmanReport,
                  itemPaths(filtered.collection),
                  recordings,
                  new URL(url).port,
                ),
              );
            }
            if (fs.existsSync(nextEnv)) envFile = nextEnv;
          }
          process.stdout.write(
            `${summary.requests} run, ${summary.assertions - summary.assertionsFailed}/${summary.assertions} assertions passed\n`,
          );
          summaries.push(summary);
        }
      } finally {
        await service?.stop();
        if (service) fs.rmSync(service.dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  fs.writeFileSync(
    path.join(options.out, 'summary.json'),
    JSON.stringify(
      { revision, started, url: options.start ? '--start' : options.url, summaries },
      null,
      2,
    ),
  );
  fs.writeFileSync(
    path.join(options.out, 'summary.md'),
    markdown(options, revision, summaries, started),
  );
  process.stdout.write(`summary: ${path.join(options.out, 'summary.md')}\n`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
