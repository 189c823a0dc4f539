/**
 * A real bulk-api-adapter (Mojaloop's FSPIOP `/bulkTransfers` front) in front of the service's
 * Kafka mode, with its notification handler on. It is installed out of the tree from its sources
 * (docs/bulk.md, "bulk-api-adapter for the tests"): BULK_API_ADAPTER_DIR, by default
 * /work/build/bulk-api-adapter; without it the tests using it skip, loudly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pointAtBrokers } from './mojaloop-install';
import { loopbackPreload, missingInstall } from './ml-api-adapter';
import { startProcess, type Started } from './service-process';

export const BULK_API_ADAPTER_DIR =
  process.env['BULK_API_ADAPTER_DIR'] ?? '/work/build/bulk-api-adapter';
const READY_TIMEOUT_MS = 180_000;
export const BULK_TRANSFERS_TYPE =
  'application/vnd.interoperability.bulkTransfers+json;version=1.1';

/** Why no bulk-api-adapter can run here, or undefined when it can. */
export function bulkApiAdapterUnavailable(): string | undefined {
  return missingInstall({
    name: 'bulk-api-adapter',
    dir: BULK_API_ADAPTER_DIR,
    needed: [
      'src/api/index.js',
      'config/default.json',
      'node_modules/@hapi/hapi',
      'node_modules/node-rdkafka',
      'node_modules/@mojaloop/object-store-lib',
    ],
  });
}

/**
 * Starts bulk-api-adapter's API and notification handler, its configuration overridden (rc's
 * BKAPI_config file): the service's endpoints and health, the object store, the local broker.
 */
export async function startBulkApiAdapter(options: {
  /** The service's base URL: endpoints from /participants/{fsp}/endpoints, health from /health. */
  centralLedger: string;
  brokers: string[];
  mongo: { host: string; port: number; database: string };
  port: number;
  workDir: string;
  logDir: string;
}): Promise<Started> {
  const published = JSON.parse(
    fs.readFileSync(path.join(BULK_API_ADAPTER_DIR, 'config', 'default.json'), 'utf8'),
  );
  const kafka = structuredClone(published.KAFKA);
  pointAtBrokers(kafka, options.brokers);
  const overrides = {
    PORT: options.port,
    HOSTNAME: `http://127.0.0.1:${options.port}`,
    ENDPOINT_SOURCE_URL: `${options.centralLedger}/participants/{{fsp}}/endpoints`,
    ENDPOINT_HEALTH_URL: `${options.centralLedger}/health`,
    MONGODB: {
      HOST: options.mongo.host,
      PORT: options.mongo.port,
      DATABASE: options.mongo.database,
    },
    ENDPOINT_SECURITY: { TLS: { rejectUnauthorized: true }, JWS: { JWS_SIGN: false } },
    INSTRUMENTATION: { METRICS: { DISABLED: true } },
    KAFKA: kafka,
  };
  const configFile = path.join(options.workDir, 'bulk-api-adapter.json');
  fs.writeFileSync(configFile, JSON.stringify(overrides));
  const preload = loopbackPreload(options.workDir);
  return startProcess(
    'bulk-api-adapter',
    ['--require', preload, 'src/api/index.js'],
    {
      PATH: process.env['PATH'],
      HOME: options.workDir,
      BKAPI_config: configFile,
      LOG_LEVEL: 'info',
      EVENT_SDK_LOG_FILTER: '',
      EVENT_SDK_LOG_METADATA_ONLY: 'true',
    },
    options.port,
    path.join(options.logDir, 'bulk-api-adapter.log'),
    '/health',
    READY_TIMEOUT_MS,
    BULK_API_ADAPTER_DIR,
  );
}

/** The callback URLs bulk-api-adapter looks up for bulk transfers, for a DFSP under `base`. */
export function bulkEndpoints(base: string, dfsp: string): { type: string; value: string }[] {
  const root = `${base}/${dfsp}`;
  return [
    { type: 'FSPIOP_CALLBACK_URL_BULK_TRANSFER_POST', value: `${root}/bulkTransfers` },
    { type: 'FSPIOP_CALLBACK_URL_BULK_TRANSFER_PUT', value: `${root}/bulkTransfers/{{id}}` },
    {
      type: 'FSPIOP_CALLBACK_URL_BULK_TRANSFER_ERROR',
      value: `${root}/bulkTransfers/{{id}}/error`,
    },
  ];
}

/** The FSPIOP headers a DFSP sends bulk-api-adapter (a GET too needs a Content-Type there). */
export function bulkHeaders(source: string, destination?: string): Record<string, string> {
  return {
    'content-type': BULK_TRANSFERS_TYPE,
    accept: 'application/vnd.interoperability.bulkTransfers+json;version=1',
    date: new Date().toUTCString(),
    'fspiop-source': source,
    ...(destination === undefined ? {} : { 'fspiop-destination': destination }),
  };
}
