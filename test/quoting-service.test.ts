/**
 * A real quoting-service (v17.14.5, the tag mojaloop/helm v17.3.0 pins; simple routing mode, as
 * the charts run it) over the MySQL database of this service and a real Kafka broker: its API
 * takes `POST /quotes`, its handler checks payer and payee on central-ledger's tables
 * (docs/mojaloop-schema.md) and forwards the quote to the payee's callback URL; an unknown or
 * inactive payee is refused to the payer with 3201, as quoting-service does on central-ledger.
 * quoting-service is not part of this repository: the test uses an install of it found in
 * QUOTING_SERVICE_DIR (default /work/build/quoting-service). Without it, a broker or MariaDB, the
 * test skips, loudly.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { kafkaAvailable, startKafka, type RunningKafka } from './support/kafka-broker';
import { mariaDbUnavailable, startMariaDb, type RunningMariaDb } from './support/mariadb';
import { freePorts } from './support/net';
import { onboard } from './support/onboard';
import {
  call,
  mysqlEnv,
  sleep,
  startProcess,
  stopProcess,
  tail,
  type Started,
} from './support/service-process';

const QS_DIR = process.env.QUOTING_SERVICE_DIR ?? '/work/build/quoting-service';
const CALLBACK_WAIT_MS = 30_000;

function unavailable(): string | undefined {
  if (!fs.existsSync(path.join(QS_DIR, 'node_modules', '@mojaloop', 'central-services-shared')))
    return `no quoting-service installed in ${QS_DIR} (QUOTING_SERVICE_DIR)`;
  return mariaDbUnavailable() ?? kafkaAvailable();
}

/** What the DFSPs' callback server received. */
interface Received {
  method: string;
  url: string;
  body: any;
}

/** A callback server for every DFSP: `http://…/<fsp>` is the FSP's FSPIOP_CALLBACK_URL_QUOTES. */
async function callbackServer(): Promise<{
  base: string;
  received: Received[];
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      received.push({
        method: request.method!,
        url: request.url!,
        body: text === '' ? undefined : JSON.parse(text),
      });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Every broker list in quoting-service's configuration, pointed at ours. */
function withBroker(value: unknown, broker: string): unknown {
  if (Array.isArray(value)) return value.map((v) => withBroker(v, broker));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [
      key,
      key === 'metadata.broker.list' ? broker : withBroker(v, broker),
    ]),
  );
}

/** Makes every listen of the process bind to loopback: quoting-service's monitor has no setting. */
const LOOPBACK_PRELOAD = `const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'object' && args[0] !== null) args[0] = { ...args[0], host: '127.0.0.1' };
  else if (typeof args[0] === 'number' || typeof args[0] === 'string')
    args.splice(1, typeof args[1] === 'string' ? 1 : 0, '127.0.0.1');
  return listen.apply(this, args);
};
`;

describe('a real quoting-service over our MySQL tables', () => {
  const why = unavailable();
  let mariadb: RunningMariaDb | undefined;
  let kafka: RunningKafka | undefined;
  let service: Service | undefined;
  let callbacks: Awaited<ReturnType<typeof callbackServer>> | undefined;
  const processes: Started[] = [];
  let api = '';
  let monitor = '';

  before(async () => {
    if (why !== undefined) {
      process.stderr.write(`\n*** SKIPPED: a real quoting-service: ${why}. ***\n\n`);
      return;
    }
    mariadb = await startMariaDb();
    kafka = await startKafka();
    const database = await mariadb.createDatabase();
    service = await buildService(
      loadConfig({ LOG_LEVEL: 'silent', ...mysqlEnv(mariadb, database) }),
      {
        ledger: new EmbeddedLedger(),
      },
    );
    await service.app.listen({ host: '127.0.0.1', port: 0 });
    const ledgerBase = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
    const inject = (o: { method: 'POST' | 'GET'; url: string; payload?: object }) =>
      service!.app.inject(o);
    await onboard(inject, ['payerfsp', 'payeefsp', 'gonefsp'], '1000', 1000);
    callbacks = await callbackServer();
    for (const fsp of ['payerfsp', 'payeefsp', 'gonefsp'])
      assert.equal(
        (
          await inject({
            method: 'POST',
            url: `/participants/${fsp}/endpoints`,
            payload: { type: 'FSPIOP_CALLBACK_URL_QUOTES', value: `${callbacks.base}/${fsp}` },
          })
        ).statusCode,
        201,
      );
    const gone = await service.app.inject({
      method: 'PUT',
      url: '/participants/gonefsp',
      payload: { isActive: false },
    });
    assert.equal(gone.statusCode, 200, gone.body);

    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-service-'));
    const [apiPort, monitorPort] = await freePorts(2);
    const defaults = JSON.parse(
      fs.readFileSync(path.join(QS_DIR, 'config', 'default.json'), 'utf8'),
    );
    const config = {
      ...(withBroker(defaults, kafka.brokers[0]!) as Record<string, any>),
      LISTEN_ADDRESS: '127.0.0.1',
      PORT: apiPort,
      MONITORING_PORT: monitorPort,
      SWITCH_ENDPOINT: ledgerBase,
      SIMPLE_ROUTING_MODE: true,
      DATABASE: {
        ...defaults.DATABASE,
        HOST: '127.0.0.1',
        PORT: mariadb.port,
        USER: mariadb.user,
        PASSWORD: mariadb.password,
        SCHEMA: database,
      },
      CACHE: { ENUM_DATA_EXPIRES_IN_MS: 4170000, PARTICIPANT_DATA_EXPIRES_IN_MS: 10 },
      PROXY_CACHE: { ...defaults.PROXY_CACHE, enabled: false },
      PAYLOAD_CACHE: { ...defaults.PAYLOAD_CACHE, enabled: false },
      LOG_LEVEL: 'info',
    };
    const configFile = path.join(dir, 'quoting-service.json');
    fs.writeFileSync(configFile, JSON.stringify(config));
    const preload = path.join(dir, 'loopback.cjs');
    fs.writeFileSync(preload, LOOPBACK_PRELOAD);
    const env = { ...process.env, QUOTE_config: configFile, NODE_ENV: 'production' };
    const start = async (label: string, args: string[], port: number): Promise<Started> => {
      const started = await startProcess(
        `quoting-service ${label}`,
        ['--require', preload, ...args],
        env,
        port,
        path.join(dir, `${label}.log`),
        '/health',
        120_000,
      );
      processes.push(started);
      return started;
    };
    const handler = [path.join(QS_DIR, 'src/handlers/index.js'), 'h', '--quotes'];
    monitor = (await start('handler', handler, monitorPort!)).base;
    api = (await start('API', [path.join(QS_DIR, 'src/index.js')], apiPort!)).base;
  });

  after(async () => {
    for (const started of processes) await stopProcess(started);
    await callbacks?.close();
    await service?.close();
    await kafka?.stop();
    await mariadb?.stop();
  });

  const quote = async (payer: string, payee: string): Promise<string> => {
    const quoteId = randomUUID();
    const answer = await call(
      api,
      'POST',
      '/quotes',
      {
        quoteId,
        transactionId: randomUUID(),
        payee: {
          partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '27713803912', fspId: payee },
        },
        payer: {
          partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '44123456789', fspId: payer },
        },
        amountType: 'SEND',
        amount: { currency: 'USD', amount: '10' },
        transactionType: { scenario: 'TRANSFER', initiator: 'PAYER', initiatorType: 'CONSUMER' },
      },
      {
        'content-type': 'application/vnd.interoperability.quotes+json;version=1.1',
        accept: 'application/vnd.interoperability.quotes+json;version=1',
        date: new Date().toUTCString(),
        'fspiop-source': payer,
        'fspiop-destination': payee,
      },
    );
    assert.equal(answer.status, 202, answer.text);
    return quoteId;
  };

  const callbackFor = async (quoteId: string): Promise<Received> => {
    const deadline = Date.now() + CALLBACK_WAIT_MS;
    for (;;) {
      const found = callbacks!.received.find(
        (r) => r.url.includes(quoteId) || r.body?.quoteId === quoteId,
      );
      if (found !== undefined) return found;
      if (Date.now() > deadline)
        throw new Error(
          `no callback for quote ${quoteId}:\n${processes.map((p) => tail(p.logFile, 20)).join('\n')}`,
        );
      await sleep(100);
    }
  };

  test('the handler is healthy: it reads migration_lock', async (t) => {
    if (why !== undefined) return t.skip(why);
    const health = await call(monitor, 'GET', '/health');
    assert.equal(health.status, 200, health.text);
    assert.equal(health.body.status, 'OK');
  });

  test('a quote between active participants reaches the payee', { timeout: 60_000 }, async (t) => {
    if (why !== undefined) return t.skip(why);
    const quoteId = await quote('payerfsp', 'payeefsp');
    const forwarded = await callbackFor(quoteId);
    assert.equal(forwarded.method, 'POST');
    assert.equal(forwarded.url, '/payeefsp/quotes');
  });

  test(
    'an unknown or inactive payee is refused to the payer with 3201',
    { timeout: 60_000 },
    async (t) => {
      if (why !== undefined) return t.skip(why);
      for (const payee of ['nosuchfsp', 'gonefsp']) {
        const quoteId = await quote('payerfsp', payee);
        const refused = await callbackFor(quoteId);
        assert.equal(refused.method, 'PUT', payee);
        assert.equal(refused.url, `/payerfsp/quotes/${quoteId}/error`, payee);
        assert.equal(refused.body.errorInformation.errorCode, '3201', payee);
      }
    },
  );
});
