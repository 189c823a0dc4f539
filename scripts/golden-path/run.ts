/**
 * Runs Mojaloop's Testing Toolkit golden path against this service as a hub operator would
 * (issue 30): the Testing Toolkit (ml-testing-toolkit) as the simulated DFSPs, its command-line
 * client running the test cases of mojaloop/testing-toolkit-test-cases, a real ml-api-adapter in
 * front of the service in its Kafka mode, a real Kafka broker, and the embedded ledger or a
 * TigerBeetle cluster. First the golden path's provisioning of the hub and its DFSPs, then the
 * golden-path files that need nothing but ml-api-adapter, the ledger and the settlement API.
 *
 *   npx tsx scripts/golden-path/run.ts [--ledger embedded|tigerbeetle] [--replicas 1|3]
 *       [--test-cases <git dir or checkout>] [--rev v20.2.5] [--ttk <dir>] [--cli <dir>]
 *       [--only <file substring>] [--out <dir>] [--keep]
 *
 * Nothing of the Testing Toolkit or its test cases is in this repository: they are installed out
 * of the tree (scripts/golden-path/README.md says how) and read where they are; the collections
 * are filtered into a temporary directory. Requests aimed at services the run does not start
 * (account-lookup, quoting, simulators) are left out and counted in the summary.
 */
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { kafkaAvailable, startKafka, type RunningKafka } from '../../test/support/kafka-broker';
import { track } from '../../test/support/leftovers';
import {
  ML_API_ADAPTER_DIR,
  mlApiAdapterUnavailable,
  startMlApiAdapter,
} from '../../test/support/ml-api-adapter';
import { freePorts } from '../../test/support/net';
import {
  REPO_DIR,
  startProcess,
  stopProcess,
  tail,
  type Started,
} from '../../test/support/service-process';
import {
  startCluster,
  tigerbeetleBinary,
  type RunningCluster,
} from '../../test/support/tigerbeetle-cluster';

/** The golden path's provisioning: the hub, then its simulated DFSPs. */
const PROVISIONING = 'collections/hub/provisioning/for_golden_path';
const GOLDEN_PATH = 'collections/hub/golden_path';
/**
 * The golden-path files that need only ml-api-adapter, the ledger and the settlement API, in the
 * order of the golden path's own master files.
 */
const SUBSET = [
  'api-tests/admin-api-tests/Admintests-20201221.json',
  'api-tests/SettlementWindows/settlementadmin.json',
  'bug fixes/other-bug-fixes.json',
  'bug fixes/Test for Bugfix #742 - Error code check.json',
  'bug fixes/Tests for Bugfix #981 - Fix 500 http code instead of 400.json',
  'feature_tests/funds_in/funds_in_ttk.json',
  'feature_tests/funds_out/Reserve&Commit/funds_out_commit.json',
  'feature_tests/funds_out/Reserve&Abort/funds_out_abort.json',
  'feature_tests/transfer_negative_scenarios/payee_abort_v1.1.json',
  'feature_tests/transfer_negative_scenarios/payer_transfer_timeout.json',
  'fx/api_schema_validation/fx_transfers.json',
  'fx/feature_tests/negative_scenarios/fxp_error.json',
  'fx/feature_tests/negative_scenarios/fxp_invalid_fulfillment.json',
  'fx/feature_tests/negative_scenarios/payee_invalid_fulfillment.json',
  'fx/feature_tests/negative_scenarios/timeout_scenarios.json',
];
/**
 * Values the golden path's environment file (environments/hub.json) leaves to the deployment: the
 * FX simulators the provisioning onboards (ttkfxpayer, ttkfxp1, ttkfxpayee) and their currencies
 * (USD and XXX, for which the provisioning opens Hub accounts), the FX API's media types, and
 * e-mail addresses. Everything else is the file's own.
 */
const DEPLOYMENT_VALUES: Record<string, string> = {
  currency3: 'XXX',
  FX_PAYER_DFSP_ID: 'ttkfxpayer',
  FX_PAYEE_DFSP_ID: 'ttkfxpayee',
  FX_TESTFXP1_ID: 'ttkfxp1',
  FX_SOURCE_CURRENCY: 'USD',
  FX_TARGET_CURRENCY: 'XXX',
  FX_SOURCE_AMOUNT: '10',
  FX_TARGET_AMOUNT: '20',
  // The amount the golden path's rules answer with an error (rules_validation: 13).
  FX_SOURCE_AMOUNT_ERROR_GENERIC: '13',
  FX_EXPIRATION: '2099-01-01T00:00:00.000Z',
  contentTypeFxTransfers: 'application/vnd.interoperability.fxTransfers+json;version=2.0',
  acceptFxTransfers: 'application/vnd.interoperability.fxTransfers+json;version=2',
  contentTypeFxQuotes: 'application/vnd.interoperability.fxQuotes+json;version=2.0',
  acceptFxQuotes: 'application/vnd.interoperability.fxQuotes+json;version=2',
  email: 'dfsp@example.com',
  noresponsepayeefspEmail: 'noresponsepayeefsp@example.com',
};
/**
 * ml-api-adapter's settings as Mojaloop's charts deploy it (mojaloop/helm, the notification
 * handler's `send_transfer_confirmation_to_payee: false`) where its own config/default.json
 * differs: no copy of an outcome back to the party that sent it. With the copy, an FXP's error
 * goes to the payer and back to the FXP at the same moment, and the toolkit, both DFSPs at once,
 * takes whichever arrives first as the payer's callback.
 */
const ML_API_ADAPTER_SETTINGS = { TRANSFERS: { SEND_TRANSFER_CONFIRMATION_TO_PAYEE: false } };
/** The services the run starts, as the environment file names them. */
const SERVED = ['HOST_CENTRAL_LEDGER', 'HOST_CENTRAL_SETTLEMENT', 'HOST_ML_API_ADAPTER'];
/** Where every other service's variable points: the discard port, refused at once. */
const NOWHERE = 'http://127.0.0.1:9';
/** The Testing Toolkit's fixed ports (inbound FSPIOP API, admin API), moved by the preload. */
const TTK_INBOUND_PORT = 4040;
const TTK_ADMIN_PORT = 5050;
/** Bound on one command-line client run (the client's own is 15 minutes). */
const CLIENT_TIMEOUT_MS = 30 * 60_000;

interface Options {
  ledger: 'embedded' | 'tigerbeetle';
  replicas: 1 | 3;
  testCases: string;
  rev: string;
  ttk: string;
  cli: string;
  only: string | undefined;
  out: string;
  keep: boolean;
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    ledger: 'embedded',
    replicas: 3,
    testCases: '/work/.mirror/mojaloop+testing-toolkit-test-cases/repo',
    rev: 'v20.2.5',
    ttk: '/work/build/ttk/ml-testing-toolkit',
    cli: '/work/build/ttk/cli',
    only: undefined,
    out: path.resolve(__dirname, 'out'),
    keep: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    if (arg === '--ledger') {
      const ledger = value();
      if (ledger !== 'embedded' && ledger !== 'tigerbeetle')
        throw new Error('--ledger is embedded or tigerbeetle');
      options.ledger = ledger;
    } else if (arg === '--replicas') options.replicas = value() === '1' ? 1 : 3;
    else if (arg === '--test-cases') options.testCases = path.resolve(value());
    else if (arg === '--rev') options.rev = value();
    else if (arg === '--ttk') options.ttk = path.resolve(value());
    else if (arg === '--cli') options.cli = path.resolve(value());
    else if (arg === '--only') options.only = value();
    else if (arg === '--out') options.out = path.resolve(value());
    else if (arg === '--keep') options.keep = true;
    else if (arg === '--help') {
      process.stdout.write(fs.readFileSync(__filename, 'utf8').split('*/')[0] + '*/\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}`);
  }
  return options;
}

/** The test-cases repository, read from a checkout or with `git show <rev>:<file>`. */
class TestCases {
  private readonly bare: boolean;

  constructor(
    private readonly root: string,
    private readonly rev: string,
  ) {
    this.bare = !fs.existsSync(path.join(root, 'collections'));
  }

  read(file: string): string {
    if (!this.bare) return fs.readFileSync(path.join(this.root, file), 'utf8');
    return execFileSync('git', ['-C', this.root, 'show', `${this.rev}:${file}`], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
  }

  /**
   * The files of a collection folder in the order of its master.json files (folders within, in
   * place; a folder without one, its files by name), relative to `dir`; a file no master.json
   * lists is not part of it.
   */
  ordered(dir: string, prefix = ''): string[] {
    const folder = path.posix.join(dir, prefix);
    // A master file may name a folder the tag lacks (for_golden_path's CGS_Specific).
    if (!this.exists(folder)) return [];
    if (!this.exists(path.posix.join(folder, 'master.json')))
      return this.files(folder).map((name) => path.posix.join(prefix, name));
    const master = JSON.parse(this.read(path.posix.join(folder, 'master.json')));
    return (master.order as { name: string; type: string }[]).flatMap((entry) => {
      const name = path.posix.join(prefix, entry.name);
      return entry.type === 'file' ? [name] : this.ordered(dir, name);
    });
  }

  /** The JSON files directly in `dir`, by name. */
  private files(dir: string): string[] {
    const names = this.bare
      ? execFileSync('git', ['-C', this.root, 'ls-tree', '--name-only', `${this.rev}:${dir}`], {
          encoding: 'utf8',
        }).split('\n')
      : fs.readdirSync(path.join(this.root, dir));
    return names.filter((name) => name.endsWith('.json')).sort();
  }

  private exists(file: string): boolean {
    if (!this.bare) return fs.existsSync(path.join(this.root, file));
    try {
      execFileSync('git', ['-C', this.root, 'cat-file', '-e', `${this.rev}:${file}`], {
        stdio: 'ignore',
      });
      return true;
    } catch {
      return false;
    }
  }
}

/** What the runner reads of a collection's requests and of the client's report. */
interface CollectionRequest {
  url?: string;
  description?: string;
  tests?: {
    assertions?: { description: string; resultStatus?: { status?: string; message?: string } }[];
  };
}
interface TestCase {
  name: string;
  fileInfo?: { path?: string };
  requests?: CollectionRequest[];
}
interface Report {
  test_cases?: {
    name: string;
    fileInfo?: { path?: string };
    requests?: { request?: CollectionRequest; response?: { status?: number; body?: unknown } }[];
  }[];
}

/** What filtering left out of a collection. */
interface Dropped {
  file: string;
  request: string;
  host: string;
  assertions: number;
}

/**
 * A collection without the requests aimed at services the run does not start (the host variable
 * of their `url`), the left-out ones added to `dropped`.
 */
function filtered(file: string, text: string, dropped: Dropped[]): string {
  const collection: { test_cases?: TestCase[] } = JSON.parse(text);
  if (!Array.isArray(collection.test_cases)) return text;
  for (const testCase of collection.test_cases) {
    testCase.requests = (testCase.requests ?? []).filter((request) => {
      const host = /\{\$inputs\.(HOST_[A-Z_]+)\}/.exec(String(request.url ?? ''))?.[1];
      if (host === undefined || SERVED.includes(host)) return true;
      dropped.push({
        file,
        request: `${testCase.name} -> ${request.description}`,
        host,
        assertions: request.tests?.assertions?.length ?? 0,
      });
      return false;
    });
  }
  return JSON.stringify(collection, null, 2);
}

/**
 * The golden path's environment file with the hosts of this run: the services it starts, the
 * Testing Toolkit for every DFSP's callbacks, nowhere for the rest.
 */
function environment(
  testCases: TestCases,
  hosts: { service: string; adapter: string; ttkInbound: string },
): unknown {
  const file = JSON.parse(testCases.read('environments/hub.json'));
  const values: Record<string, unknown> = { ...DEPLOYMENT_VALUES, ...file.inputValues };
  file.inputValues = values;
  // Ids as UUIDs: the transfers go as FSPIOP v1.1, whose schema (the toolkit's own, as payee)
  // takes no ULID.
  file.options = { ...file.options, generateIDType: 'uuid' };
  for (const [key, value] of Object.entries(values)) {
    if (typeof value !== 'string') continue;
    if (key.startsWith('HOST_')) values[key] = NOWHERE;
    else if (key === 'CALLBACK_ENDPOINT_BASE_URL' || /_CALLBACK_URL$/.test(key))
      values[key] = hosts.ttkInbound;
    else if (/_(TESTAPI|SDK_TESTAPI|SDK_TESTAPI_WS|BACKEND_TESTAPI)_URL$/.test(key))
      values[key] = NOWHERE;
  }
  values['HOST_CENTRAL_LEDGER'] = hosts.service;
  values['HOST_CENTRAL_SETTLEMENT'] = `${hosts.service}/v2`;
  values['HOST_ML_API_ADAPTER'] = hosts.adapter;
  return file;
}

/**
 * A working directory for the Testing Toolkit (it reads and writes `spec_files/` in its working
 * directory): its own files, the golden path's rules (the test-cases repository's `rules/hub`) and
 * a user configuration sending the DFSPs' callbacks to ml-api-adapter.
 */
function ttkWorkDir(options: Options, testCases: TestCases, dir: string, adapter: string): void {
  fs.cpSync(path.join(options.ttk, 'spec_files'), path.join(dir, 'spec_files'), {
    recursive: true,
  });
  for (const kind of ['rules_callback', 'rules_response', 'rules_validation']) {
    fs.writeFileSync(
      path.join(dir, 'spec_files', kind, 'default.json'),
      testCases.read(`rules/hub/${kind}/default.json`),
    );
  }
  const userConfigFile = path.join(dir, 'spec_files', 'user_config.json');
  const userConfig = JSON.parse(fs.readFileSync(userConfigFile, 'utf8'));
  userConfig.CALLBACK_ENDPOINT = adapter;
  fs.writeFileSync(userConfigFile, JSON.stringify(userConfig, null, 2));
}

/**
 * A `--require` preload binding the Testing Toolkit's servers to 127.0.0.1 and moving its fixed
 * ports to the ones this run chose (TTK_PORTS: "4040=<port>,5050=<port>").
 */
function listenPreload(dir: string): string {
  const file = path.join(dir, 'listen-loopback.js');
  fs.writeFileSync(
    file,
    [
      "const net = require('node:net');",
      'const moved = Object.fromEntries(',
      "  (process.env.TTK_PORTS || '').split(',').filter(Boolean).map((p) => p.split('=').map(Number)),",
      ');',
      'const listen = net.Server.prototype.listen;',
      'net.Server.prototype.listen = function (...args) {',
      "  if (typeof args[0] === 'number')",
      "    return listen.call(this, moved[args[0]] || args[0], '127.0.0.1', ...args.slice(1));",
      "  if (args[0] && typeof args[0] === 'object' && args[0].port !== undefined) {",
      '    const port = moved[args[0].port] || args[0].port;',
      "    return listen.call(this, { ...args[0], port, host: '127.0.0.1' }, ...args.slice(1));",
      '  }',
      '  return listen.apply(this, args);',
      '};',
      '',
    ].join('\n'),
  );
  return file;
}

/** One run of the command-line client over `inputs`; its JSON report. */
async function runClient(
  options: Options,
  run: { name: string; inputs: string[]; environmentFile: string; ttkAdmin: string },
): Promise<Report> {
  const report = path.join(options.out, `${run.name}.report.json`);
  fs.rmSync(report, { force: true });
  const log = path.join(options.out, `${run.name}.log`);
  const fd = fs.openSync(log, 'w');
  const child = spawn(
    process.execPath,
    [
      path.join(options.cli, 'bin', 'cli.js'),
      '--base-url',
      run.ttkAdmin,
      '--input-files',
      run.inputs.join(','),
      '--environment-file',
      run.environmentFile,
      '--log-level',
      '2',
      '--report-format',
      'json',
      '--report-target',
      `file://${report}`,
    ],
    { cwd: options.out, stdio: ['ignore', fd, fd] },
  );
  fs.closeSync(fd);
  track(child);
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), CLIENT_TIMEOUT_MS);
    child.once('exit', (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode);
    });
  });
  if (!fs.existsSync(report))
    throw new Error(`${run.name}: the client exited ${code} without a report:\n${tail(log)}`);
  return JSON.parse(fs.readFileSync(report, 'utf8'));
}

interface Tally {
  passed: number;
  failed: number;
  skipped: number;
  failures: string[];
}

/** Assertions passed, failed and skipped in a client's report, per file. */
function tally(report: Report, root: string): Map<string, Tally> {
  const byFile = new Map<string, Tally>();
  for (const testCase of report.test_cases ?? []) {
    const file = path.relative(root, path.resolve('/', String(testCase.fileInfo?.path ?? '')));
    const counts = byFile.get(file) ?? { passed: 0, failed: 0, skipped: 0, failures: [] };
    byFile.set(file, counts);
    for (const { request, response } of testCase.requests ?? []) {
      for (const assertion of request?.tests?.assertions ?? []) {
        const result = assertion.resultStatus ?? {};
        if (result.status === 'SUCCESS') counts.passed++;
        else if (result.status === 'SKIPPED') counts.skipped++;
        else {
          counts.failed++;
          counts.failures.push(
            `${testCase.name} -> ${request?.description}: ${assertion.description}` +
              ` (${String(result.message ?? result.status).slice(0, 200)}; answered` +
              ` ${response?.status} ${JSON.stringify(response?.body ?? '').slice(0, 200)})`,
          );
        }
      }
    }
  }
  return byFile;
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const unavailable =
    kafkaAvailable() ??
    mlApiAdapterUnavailable() ??
    (fs.existsSync(path.join(options.ttk, 'node_modules'))
      ? undefined
      : `no Testing Toolkit installed at ${options.ttk}`) ??
    (fs.existsSync(path.join(options.cli, 'node_modules'))
      ? undefined
      : `no Testing Toolkit client installed at ${options.cli}`) ??
    (options.ledger === 'tigerbeetle' && tigerbeetleBinary() === undefined
      ? 'no tigerbeetle binary on PATH'
      : undefined);
  if (unavailable !== undefined) throw new Error(`cannot run the golden path: ${unavailable}`);
  const testCases = new TestCases(options.testCases, options.rev);
  fs.mkdirSync(options.out, { recursive: true });
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'golden-path-'));
  const logDir = path.join(options.out, 'logs');
  fs.rmSync(logDir, { recursive: true, force: true });
  fs.mkdirSync(logDir, { recursive: true });
  const started: Started[] = [];
  let broker: RunningKafka | undefined;
  let cluster: RunningCluster | undefined;
  const say = (line: string): void => {
    process.stdout.write(`[golden-path ${new Date().toISOString()}] ${line}\n`);
  };
  try {
    say('starting Kafka' + (options.ledger === 'tigerbeetle' ? ' and TigerBeetle' : ''));
    broker = await startKafka();
    if (options.ledger === 'tigerbeetle')
      cluster = await startCluster({ replicas: options.replicas, readyTimeoutMs: 180_000 });
    const [servicePort, adapterPort, ttkInboundPort, ttkAdminPort] = await freePorts(4);
    const ledgerEnv =
      cluster === undefined
        ? { LEDGER_BACKEND: 'embedded' }
        : {
            LEDGER_BACKEND: 'tigerbeetle',
            TB_CLUSTER_ID: cluster.clusterId.toString(),
            TB_ADDRESSES: cluster.addresses.join(','),
          };
    say('starting the service (Kafka mode)');
    const service = await startProcess(
      'service',
      ['--import', 'tsx', path.join(REPO_DIR, 'src', 'main.ts')],
      {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(servicePort),
        DATA_DIR: path.join(workDir, 'data'),
        KAFKA_ENABLED: 'true',
        KAFKA_BROKERS: broker.brokers.join(','),
        LOG_LEVEL: 'info',
        ...ledgerEnv,
      },
      servicePort!,
      path.join(logDir, 'service.log'),
      '/health',
      120_000,
    );
    started.push(service);
    say(`starting ml-api-adapter (${ML_API_ADAPTER_DIR})`);
    // The Hub signs its callbacks (the funds-in/out cases check the signature is there).
    const jwsSigningKeyPath = path.join(workDir, 'jws-signing.key');
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    fs.writeFileSync(jwsSigningKeyPath, privateKey.export({ type: 'pkcs1', format: 'pem' }));
    const adapter = await startMlApiAdapter({
      jwsSigningKeyPath,
      centralLedger: service.base,
      brokers: broker.brokers,
      port: adapterPort!,
      workDir,
      logDir,
      settings: ML_API_ADAPTER_SETTINGS,
    });
    started.push(adapter);
    say(`starting the Testing Toolkit (${options.ttk})`);
    const ttkDir = path.join(workDir, 'ttk');
    fs.mkdirSync(ttkDir);
    ttkWorkDir(options, testCases, ttkDir, adapter.base);
    const ttk = await startProcess(
      'ml-testing-toolkit',
      ['--require', listenPreload(workDir), path.join(options.ttk, 'src', 'index.js')],
      {
        PATH: process.env['PATH'],
        HOME: workDir,
        TTK_PORTS: `${TTK_INBOUND_PORT}=${ttkInboundPort},${TTK_ADMIN_PORT}=${ttkAdminPort}`,
      },
      ttkAdminPort!,
      path.join(logDir, 'ml-testing-toolkit.log'),
      '/api/config/user',
      120_000,
      ttkDir,
    );
    started.push(ttk);

    const environmentFile = path.join(workDir, 'environment.json');
    fs.writeFileSync(
      environmentFile,
      JSON.stringify(
        environment(testCases, {
          service: service.base,
          adapter: adapter.base,
          ttkInbound: `http://127.0.0.1:${ttkInboundPort}`,
        }),
        null,
        2,
      ),
    );
    const dropped: Dropped[] = [];
    const collections = path.join(workDir, 'collections');
    const copies = (from: string, files: string[]): string[] =>
      files.map((file) => {
        const target = path.join(collections, path.basename(from), file);
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.writeFileSync(target, filtered(file, testCases.read(`${from}/${file}`), dropped));
        return target;
      });
    const runs = [
      // In the order of its master files.
      { name: 'provisioning', inputs: copies(PROVISIONING, testCases.ordered(PROVISIONING)) },
      {
        name: 'golden-path',
        inputs: copies(
          GOLDEN_PATH,
          SUBSET.filter((file) => options.only === undefined || file.includes(options.only)),
        ),
      },
    ];
    const summary: Record<string, unknown> = {
      date: new Date().toISOString(),
      testCases: `${options.testCases} ${options.rev}`,
      ledger: cluster === undefined ? 'embedded' : `tigerbeetle (${options.replicas} replicas)`,
      dropped,
    };
    const lines: string[] = [];
    for (const run of runs) {
      say(`running ${run.name} (${run.inputs.length} input(s))`);
      const report = await runClient(options, {
        ...run,
        environmentFile,
        ttkAdmin: ttk.base,
      });
      const byFile = tally(report, collections);
      let passed = 0;
      let total = 0;
      lines.push(`## ${run.name}`);
      for (const [file, counts] of byFile) {
        passed += counts.passed;
        total += counts.passed + counts.failed + counts.skipped;
        lines.push(
          `${file}: ${counts.passed}/${counts.passed + counts.failed + counts.skipped}` +
            (counts.skipped === 0 ? '' : ` (${counts.skipped} skipped)`),
        );
        for (const failure of counts.failures) lines.push(`  FAILED ${failure}`);
      }
      lines.push(`${run.name}: ${passed}/${total} assertions passed`, '');
      summary[run.name] = { passed, total, byFile: Object.fromEntries(byFile) };
      say(`${run.name}: ${passed}/${total} assertions passed`);
    }
    lines.push(
      `left out (aimed at services not run): ${dropped.length} requests, ` +
        `${dropped.reduce((sum, d) => sum + d.assertions, 0)} assertions`,
    );
    for (const d of dropped) lines.push(`  ${d.file}: ${d.request} (${d.host})`);
    fs.writeFileSync(path.join(options.out, 'summary.md'), lines.join('\n') + '\n');
    fs.writeFileSync(path.join(options.out, 'summary.json'), JSON.stringify(summary, null, 2));
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    for (const process of started.reverse()) await stopProcess(process);
    await broker?.stop();
    await cluster?.stop();
    if (!options.keep) fs.rmSync(workDir, { recursive: true, force: true });
    else say(`kept ${workDir}`);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
