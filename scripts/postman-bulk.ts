/**
 * Mojaloop's Postman "Bulk API Transfers" collection (mojaloop/postman) against the service in
 * Kafka mode behind a real bulk-api-adapter v17.2.6, over a throwaway Kafka broker and FerretDB,
 * with newman. Results and the reason of each failure: docs/bulk-postman.md.
 *
 *   POSTMAN_DIR=/work/.mirror/mojaloop+postman/repo \
 *   NEWMAN=/work/build/newman/node_modules/.bin/newman \
 *     npx tsx scripts/postman-bulk.ts [--delay-request MS] [--keep-logs DIR]
 *
 * POSTMAN_DIR: a checkout of mojaloop/postman, or a bare git directory (the collection and the
 * environment are then read with `git show HEAD:…`). NEWMAN: newman's executable, installed out
 * of the tree (npm install newman@6 in /work/build/newman). bulk-api-adapter and FerretDB come
 * from the tests' harnesses (BULK_API_ADAPTER_DIR, FERRETDB_BIN); the broker's jars as for the
 * Kafka tests. The service is this checkout's dist/src/main.js (built when stale), embedded ledger.
 *
 * The collection runs its "Transfers" folder (its "Quotes" folder is quoting-service's). It asks
 * mojaloop/simulator what the DFSPs received; a stand-in here answers the same endpoints:
 * `/bulkTransfers` (payerfsp and payeefsp, as ML_OSS_Setup_LegacySim registers them: the payee's
 * POST is answered with a PUT to bulk-api-adapter fulfilling every transfer with the simulator's
 * default fulfilment) and `/bulkTransfersNegative` (noresponsepayeefsp: never answers), each with
 * GET …/correlationid/{id} (the last PUT's body, 202), …/requests/{id} and …/callbacks/{id}
 * (`{headers, data}` of the last POST or PUT, 200, then forgotten). The participants are onboarded
 * here as the setup collections would (USD, a net debit cap, liquidity, bulk callback URLs).
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { buildIfStale, flags, progressLog } from '../bench/common';
import { bulkApiAdapterUnavailable, startBulkApiAdapter } from '../test/support/bulk-api-adapter';
import { ferretDbUnavailable, startFerretDb, type RunningFerretDb } from '../test/support/ferretdb';
import { kafkaAvailable, startKafka, type RunningKafka } from '../test/support/kafka-broker';
import { freePort } from '../test/support/net';
import { onboard } from '../test/support/onboard';
import {
  REPO_DIR,
  call,
  startProcess,
  stopProcess,
  type Started,
} from '../test/support/service-process';

const COLLECTION = 'Bulk API Transfers.postman_collection.json';
/** The one environment of mojaloop/postman with HOST_BULK_ADAPTER and validCondition2. */
const ENVIRONMENT = 'environments/Mojaloop-Local-CGS-MojaSims.postman_environment.json';
/** mojaloop/simulator's TRANSFERS_FULFILMENT default (its helm chart's value too). */
const SIMULATOR_FULFILMENT =
  process.env['TRANSFERS_FULFILMENT'] ?? 'XoSz1cL0tljJSCp_VtIYmPNw-zFUgGfbUqf69AagUzY';
const DFSPS = { payerfsp: '/bulkTransfers', payeefsp: '/bulkTransfers' } as const;
const NO_RESPONSE_PAYEE = 'noresponsepayeefsp';

/** A collection file of POSTMAN_DIR, copied to `dir` (from a work tree or a bare repository). */
function postmanFile(postmanDir: string, file: string, dir: string): string {
  const out = path.join(dir, path.basename(file));
  const plain = path.join(postmanDir, file);
  if (fs.existsSync(plain)) fs.copyFileSync(plain, out);
  else fs.writeFileSync(out, execFileSync('git', ['-C', postmanDir, 'show', `HEAD:${file}`]));
  return out;
}

/** The bulk callback URLs under `root`, as ML_OSS_Setup_LegacySim registers the simulator's. */
function simulatorEndpoints(root: string): [string, string][] {
  return [
    ['FSPIOP_CALLBACK_URL_BULK_TRANSFER_POST', root],
    ['FSPIOP_CALLBACK_URL_BULK_TRANSFER_PUT', `${root}/{{id}}`],
    ['FSPIOP_CALLBACK_URL_BULK_TRANSFER_ERROR', `${root}/{{id}}/error`],
  ];
}

interface Recorded {
  headers: http.IncomingHttpHeaders;
  data: unknown;
}

/**
 * mojaloop/simulator's bulk endpoints, our own: what each DFSP received, asked back by the
 * collection; the payee behind `/bulkTransfers` fulfils every transfer through bulk-api-adapter.
 */
class SimulatorStandIn {
  private readonly server: http.Server;
  /** By prefix (/bulkTransfers, /bulkTransfersNegative), then bulk id. */
  private readonly correlation = new Map<string, unknown>();
  private readonly requests = new Map<string, Recorded>();
  private readonly callbacks = new Map<string, Recorded>();
  readonly log: string[] = [];
  base = '';

  constructor(private readonly bulkApiAdapter: () => string) {
    this.server = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        const [status, answer] = this.handle(request, body);
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(answer === undefined ? '' : JSON.stringify(answer));
      });
    });
  }

  async start(): Promise<void> {
    const port = await freePort();
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private handle(request: http.IncomingMessage, text: string): [number, unknown] {
    const url = request.url ?? '';
    this.log.push(`${request.method} ${url}`);
    const match = /^(\/bulkTransfers(?:Negative)?)(?:\/([^/]+))?(?:\/([^/]+))?$/.exec(url);
    if (match === null) return [404, undefined];
    const [, prefix, first, second] = match as unknown as [string, string, string?, string?];
    const data = text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>);
    const key = (id: string): string => `${prefix} ${id}`;
    if (request.method === 'POST' && first === undefined && data !== undefined) {
      const id = String(data['bulkTransferId']);
      this.requests.set(key(id), { headers: request.headers, data });
      if (prefix === '/bulkTransfersNegative') this.correlation.set(key(id), data);
      else void this.fulfil(request.headers, data);
      return [202, undefined];
    }
    if (request.method === 'PUT' && first !== undefined) {
      this.correlation.set(key(first), data);
      this.callbacks.set(key(first), { headers: request.headers, data });
      return [200, undefined];
    }
    if (request.method === 'GET' && second !== undefined) {
      if (first === 'correlationid') return [202, this.correlation.get(key(second))];
      const store = first === 'requests' ? this.requests : this.callbacks;
      const found = store.get(key(second));
      store.delete(key(second));
      if (first === 'requests' || first === 'callbacks') return [200, found];
    }
    return [404, undefined];
  }

  /** The payee's PUT /bulkTransfers/{id} to bulk-api-adapter: every transfer fulfilled. */
  private async fulfil(headers: http.IncomingHttpHeaders, data: Record<string, unknown>) {
    const id = String(data['bulkTransferId']);
    const transfers = (data['individualTransfers'] ?? []) as { transferId: string }[];
    const answer = await call(
      this.bulkApiAdapter(),
      'PUT',
      `/bulkTransfers/${id}`,
      {
        bulkTransferState: 'COMPLETED',
        completedTimestamp: new Date().toISOString(),
        individualTransferResults: transfers.map((t) => ({
          transferId: t.transferId,
          fulfilment: SIMULATOR_FULFILMENT,
        })),
      },
      {
        'content-type': String(headers['content-type']),
        // fetch would send `Accept: */*`, which bulk-api-adapter refuses (3101).
        accept: 'application/vnd.interoperability.bulkTransfers+json;version=1',
        date: new Date().toUTCString(),
        'fspiop-source': String(headers['fspiop-destination']),
        'fspiop-destination': String(headers['fspiop-source']),
        'fspiop-http-method': 'PUT',
        'fspiop-uri': `/bulkTransfers/${id}`,
      },
    );
    this.log.push(
      `  payee's PUT /bulkTransfers/${id} to bulk-api-adapter: ${answer.status} ${answer.text}`,
    );
  }
}

async function main(): Promise<void> {
  const { number, value } = flags(process.argv.slice(2));
  const postmanDir = process.env['POSTMAN_DIR'];
  const newman = process.env['NEWMAN'] ?? '/work/build/newman/node_modules/.bin/newman';
  if (postmanDir === undefined) throw new Error('POSTMAN_DIR: a mojaloop/postman checkout');
  if (!fs.existsSync(newman)) throw new Error(`no newman at ${newman} (NEWMAN)`);
  const missing = kafkaAvailable() ?? ferretDbUnavailable() ?? bulkApiAdapterUnavailable();
  if (missing !== undefined) throw new Error(missing);
  const log = progressLog(Date.now());
  buildIfStale(REPO_DIR, { build: true, force: false }, log);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postman-bulk-'));
  const keepLogs = value('--keep-logs');
  let broker: RunningKafka | undefined;
  let ferret: RunningFerretDb | undefined;
  let service: Started | undefined;
  let adapter: Started | undefined;
  let status = 1;
  const simulator = new SimulatorStandIn(() => adapter?.base ?? '');
  try {
    log('starting a Kafka broker, FerretDB and the simulator stand-in');
    [broker, ferret] = await Promise.all([startKafka(), startFerretDb(), simulator.start()]);
    const port = await freePort();
    service = await startProcess(
      'the service',
      [path.join(REPO_DIR, 'dist/src/main.js')],
      {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'warn',
        DATA_DIR: path.join(workDir, 'data'),
        KAFKA_ENABLED: 'true',
        KAFKA_BROKERS: broker.brokers.join(','),
        KAFKAJS_NO_PARTITIONER_WARNING: '1',
        MONGODB_URL: ferret.url,
        MONGODB_DATABASE: 'mlos',
      },
      port,
      path.join(workDir, 'service.log'),
      '/health',
    );
    const base = service.base;
    log(`the service on ${base}; onboarding payerfsp, payeefsp, ${NO_RESPONSE_PAYEE}`);
    const inject = async (request: { method: string; url: string; payload?: object }) => {
      const answer = await call(base, request.method, request.url, request.payload);
      return { statusCode: answer.status, body: answer.text };
    };
    await onboard(inject, [...Object.keys(DFSPS), NO_RESPONSE_PAYEE], '1000000', 1_000_000);
    const callbackRoots: Record<string, string> = {
      ...DFSPS,
      [NO_RESPONSE_PAYEE]: '/bulkTransfersNegative',
    };
    for (const [dfsp, root] of Object.entries(callbackRoots))
      for (const [type, value] of simulatorEndpoints(`${simulator.base}${root}`)) {
        const added = await call(base, 'POST', `/participants/${dfsp}/endpoints`, { type, value });
        if (added.status !== 201)
          throw new Error(`endpoint of ${dfsp}: ${added.status} ${added.text}`);
      }
    adapter = await startBulkApiAdapter({
      centralLedger: base,
      brokers: broker.brokers,
      mongo: { host: ferret.host, port: ferret.port, database: 'mlos' },
      port: await freePort(),
      workDir,
      logDir: workDir,
    });
    log(`bulk-api-adapter on ${adapter.base}; running newman`);
    const report = path.join(workDir, 'newman.json');
    // Not spawnSync: the stand-in answers newman's requests from this process's event loop.
    const run = spawn(
      newman,
      [
        'run',
        postmanFile(postmanDir, COLLECTION, workDir),
        '-e',
        postmanFile(postmanDir, ENVIRONMENT, workDir),
        '--folder',
        'Transfers',
        '--env-var',
        `HOST_BULK_ADAPTER=${adapter.base}`,
        '--env-var',
        `HOST_CENTRAL_LEDGER=${base}`,
        '--env-var',
        'BASE_CENTRAL_LEDGER_ADMIN=',
        '--env-var',
        `HOST_SIMULATOR=${simulator.base}`,
        // Used by the collection, set by mojaloop/postman's other environments, not by this one.
        '--env-var',
        'payerFsp=payerfsp',
        '--env-var',
        'payeeFsp=payeefsp',
        '--env-var',
        `transferDate=${new Date().toUTCString()}`,
        '--delay-request',
        String(number('--delay-request', 2000)),
        '--reporters',
        'cli,json',
        '--reporter-json-export',
        report,
      ],
      { stdio: 'inherit' },
    );
    status = await new Promise<number>((resolve) => run.on('exit', (code) => resolve(code ?? 1)));
    log(`newman exited ${status}; the stand-in saw:\n  ${simulator.log.join('\n  ')}`);
  } finally {
    if (adapter !== undefined) await stopProcess(adapter);
    if (service !== undefined) await stopProcess(service);
    await simulator.stop();
    await ferret?.stop();
    await broker?.stop();
    if (keepLogs !== undefined) {
      fs.mkdirSync(keepLogs, { recursive: true });
      for (const file of fs.readdirSync(workDir).filter((f) => /\.(log|json)$/.test(f)))
        fs.copyFileSync(path.join(workDir, file), path.join(keepLogs, file));
    }
    fs.rmSync(workDir, { recursive: true, force: true });
  }
  process.exitCode = status;
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
