/**
 * A real ml-api-adapter (Mojaloop's FSPIOP HTTP front) in front of the service, and DFSPs that
 * receive its callbacks. ml-api-adapter is installed out of the tree from its sources
 * (scripts/install-mojaloop.sh ml-api-adapter): ML_API_ADAPTER_DIR, by default
 * /work/build/ml-api-adapter; without it the tests using it skip, loudly.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pointAtBrokers } from './mojaloop-install';
import { startProcess, type Started } from './service-process';

export const ML_API_ADAPTER_DIR = process.env['ML_API_ADAPTER_DIR'] ?? '/work/build/ml-api-adapter';
const READY_TIMEOUT_MS = 180_000;

/**
 * Why a Mojaloop service installed out of the tree (`name`, at `dir`) cannot run here — the first
 * of its `needed` files missing — or undefined when it can.
 */
export function missingInstall(install: {
  name: string;
  dir: string;
  needed: readonly string[];
}): string | undefined {
  const missing = install.needed.find((file) => !fs.existsSync(path.join(install.dir, file)));
  return missing === undefined
    ? undefined
    : `no ${install.name} installed at ${install.dir} (${missing} missing)`;
}

/** Why no ml-api-adapter can run here, or undefined when it can. */
export function mlApiAdapterUnavailable(): string | undefined {
  return missingInstall({
    name: 'ml-api-adapter',
    dir: ML_API_ADAPTER_DIR,
    needed: ['src/api/index.js', 'config/default.json', 'node_modules/@hapi/hapi'],
  });
}

/**
 * Starts ml-api-adapter's API with its notification handler, its configuration overridden (rc's
 * MLAPI_config file) to use `centralLedger` for endpoints, the local broker, no Redis caches.
 */
export async function startMlApiAdapter(options: {
  centralLedger: string;
  brokers: string[];
  port: number;
  workDir: string;
  logDir: string;
  /** Sign the Hub's callbacks (JWS) with this PEM private key, as a hub operator's does. */
  jwsSigningKeyPath?: string;
  /** Further settings of ml-api-adapter's configuration (top-level keys of config/default.json). */
  settings?: Record<string, unknown>;
}): Promise<Started> {
  const published = JSON.parse(
    fs.readFileSync(path.join(ML_API_ADAPTER_DIR, 'config', 'default.json'), 'utf8'),
  );
  const kafka = structuredClone(published.KAFKA);
  pointAtBrokers(kafka, options.brokers);
  const overrides = {
    PORT: options.port,
    ENDPOINT_SOURCE_URL: options.centralLedger,
    ENDPOINT_HEALTH_URL: `${options.centralLedger}/health`,
    PROXY_CACHE: { enabled: false },
    PAYLOAD_CACHE: { enabled: false },
    ENDPOINT_SECURITY: {
      JWS: {
        JWS_SIGN: options.jwsSigningKeyPath !== undefined,
        JWS_VALIDATE: false,
        ...(options.jwsSigningKeyPath === undefined
          ? {}
          : { JWS_SIGNING_KEY_PATH: options.jwsSigningKeyPath }),
      },
    },
    KAFKA: kafka,
    ...options.settings,
  };
  const configFile = path.join(options.workDir, 'ml-api-adapter.json');
  fs.writeFileSync(configFile, JSON.stringify(overrides));
  const preload = loopbackPreload(options.workDir);
  return startProcess(
    'ml-api-adapter',
    ['--require', preload, 'src/api/index.js'],
    {
      PATH: process.env['PATH'],
      HOME: options.workDir,
      MLAPI_config: configFile,
      LOG_LEVEL: 'info',
    },
    options.port,
    path.join(options.logDir, 'ml-api-adapter.log'),
    '/health',
    READY_TIMEOUT_MS,
    ML_API_ADAPTER_DIR,
  );
}

/**
 * A `--require` preload binding a Hapi server (which has no listen-address setting) to 127.0.0.1,
 * off the machine's other interfaces: Mojaloop's adapters' servers.
 */
export function loopbackPreload(workDir: string): string {
  const preload = path.join(workDir, 'listen-loopback.js');
  fs.writeFileSync(
    preload,
    [
      "const net = require('node:net');",
      'const listen = net.Server.prototype.listen;',
      'net.Server.prototype.listen = function (...args) {',
      "  if (typeof args[0] === 'number') return listen.call(this, args[0], '127.0.0.1', ...args.slice(1));",
      "  if (args[0] && typeof args[0] === 'object' && args[0].port !== undefined)",
      "    return listen.call(this, { ...args[0], host: '127.0.0.1' }, ...args.slice(1));",
      '  return listen.apply(this, args);',
      '};',
      '',
    ].join('\n'),
  );
  return preload;
}

/** A callback as a DFSP received it. */
export interface Callback {
  dfsp: string;
  method: string;
  /** The path below the DFSP's own prefix, e.g. /transfers/{id}/error. */
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** DFSPs' callback servers in one HTTP server, each under /<name>; they answer 200 to all. */
export class Dfsps {
  readonly received: Callback[] = [];
  private server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const [, dfsp = '', ...rest] = (request.url ?? '/').split('/');
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        body = text;
      }
      this.received.push({
        dfsp,
        method: request.method ?? '',
        path: `/${rest.join('/')}`,
        headers: request.headers,
        body,
      });
      response.writeHead(200).end();
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /**
   * The callbacks received about `transferId` (named in the path, or a POST's body), in order,
   * each with the transfer's id in its path written `{id}`.
   */
  about(transferId: string): Callback[] {
    return this.received
      .filter((c) => c.path.includes(transferId) || c.body?.transferId === transferId)
      .map((c) => ({ ...c, path: c.path.replace(transferId, '{id}') }));
  }
}

/** The callback URLs ml-api-adapter looks up for transfers, for a DFSP under `base`. */
export function transferEndpoints(base: string, dfsp: string): { type: string; value: string }[] {
  const root = `${base}/${dfsp}`;
  return [
    { type: 'FSPIOP_CALLBACK_URL_TRANSFER_POST', value: `${root}/transfers` },
    { type: 'FSPIOP_CALLBACK_URL_TRANSFER_PUT', value: `${root}/transfers/{{transferId}}` },
    { type: 'FSPIOP_CALLBACK_URL_TRANSFER_ERROR', value: `${root}/transfers/{{transferId}}/error` },
  ];
}

const TRANSFERS_TYPE = 'application/vnd.interoperability.transfers+json;version=1.1';

/** The FSPIOP headers a DFSP sends ml-api-adapter with a transfers request. */
export function fspiopHeaders(source: string, destination?: string): Record<string, string> {
  return {
    'content-type': TRANSFERS_TYPE,
    accept: TRANSFERS_TYPE,
    date: new Date().toUTCString(),
    'fspiop-source': source,
    ...(destination === undefined ? {} : { 'fspiop-destination': destination }),
    // ml-api-adapter's tracing reads it when present; a DFSP's SDK sends one.
    traceparent: `00-${randomUUID().replaceAll('-', '')}-${randomUUID().replaceAll('-', '').slice(0, 16)}-01`,
  };
}
