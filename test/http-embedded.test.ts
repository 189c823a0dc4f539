import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { buildService } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { LEDGER_MODEL, type Ledger } from '../src/ports/ledger';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { httpScenarioSuite } from './support/scenarios';

httpScenarioSuite('embedded ledger', () => ({
  ledger: () => new EmbeddedLedger(),
  expiryGraceMs: 0,
}));

test('a ledger that does not answer: 2003 within LEDGER_TIMEOUT_MS, /health 502, /live 200 (no restart), never a hang', async () => {
  const silent = new Promise<never>(() => {});
  let identity: bigint | undefined;
  const unresponsive: Ledger = {
    name: 'tigerbeetle',
    execute: () => silent,
    balances: () => silent,
    hubBalances: () => silent,
    transferStates: () => silent,
    finishedAt: () => silent,
    positionsAdjusted: () => silent,
    windowNets: () => silent,
    windowMoved: () => silent,
    grossSinceWindowClose: () => silent,
    latestCutWindow: () => silent,
    // Its identity answers: the start-up check passes, and the money operations go unanswered.
    identity: async () => identity,
    recordIdentity: async (given) => (identity ??= given),
    ledgerModel: async () => LEDGER_MODEL,
    recordLedgerModel: async () => LEDGER_MODEL,
    hubsOpened: async (currencies) => currencies.map(() => true),
    close: async () => {},
  };
  const service = await buildService(
    loadConfig({ LOG_LEVEL: 'silent', LEDGER_TIMEOUT_MS: '100' }),
    { ledger: unresponsive, store: new MemoryMetadataStore() },
  );
  try {
    const started = Date.now();
    const response = await service.app.inject({
      method: 'POST',
      url: '/participants/Hub/accounts',
      payload: { currency: 'USD', type: 'HUB_RECONCILIATION' },
    });
    assert.equal(response.statusCode, 503);
    assert.equal(JSON.parse(response.body).errorInformation.errorCode, '2003');
    assert.ok(Date.now() - started < 2000);
    const health = await service.app.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 502);
    assert.equal(JSON.parse(health.body).services[0].status, 'DOWN');
    // Restarting this process would not bring the ledger back: liveness stays OK.
    const live = await service.app.inject({ method: 'GET', url: '/live' });
    assert.equal(live.statusCode, 200);
    assert.deepEqual(JSON.parse(live.body), { status: 'OK' });
  } finally {
    await service.close();
  }
});

test('requests Node refuses before Fastify (CONNECT, unparseable, URI or headers over the limit) get FSPIOP answers', async () => {
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
    ledger: new EmbeddedLedger(),
    store: new MemoryMetadataStore(),
  });
  try {
    await service.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = service.app.server.address() as AddressInfo;
    const send = (request: string): Promise<{ status: number; headers: string; body: any }> =>
      new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(request));
        let received = '';
        socket.on('data', (chunk) => (received += chunk.toString('latin1')));
        socket.on('error', reject);
        socket.on('close', () => {
          const [head = '', body = ''] = received.split('\r\n\r\n');
          resolve({ status: Number(head.split(' ')[1]), headers: head, body: JSON.parse(body) });
        });
      });
    const cases: [string, string, number, string][] = [
      ['CONNECT', 'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n', 405, '3000'],
      ['not HTTP', 'HELLO\r\n\r\n', 400, '3101'],
      [
        'a URI past the header limit',
        `GET /participants?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
        414,
        '3000',
      ],
      [
        'headers past the limit',
        `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        '3000',
      ],
    ];
    for (const [name, request, status, code] of cases) {
      const answer = await send(request);
      assert.equal(answer.status, status, `${name}: ${answer.headers}`);
      assert.equal(answer.body.errorInformation.errorCode, code, name);
      assert.match(answer.headers, /content-type: application\/json/i, name);
    }
  } finally {
    await service.close();
  }
});

test('a request arriving while the service stops is answered an FSPIOP 2003, not a bare 503', async () => {
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
    ledger: new EmbeddedLedger(),
    store: new MemoryMetadataStore(),
  });
  await service.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = service.app.server.address() as AddressInfo;
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk) => (received += chunk.toString('latin1')));
  const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
  // A request under way (its body half sent) keeps the connection open while the service stops;
  // a second one, pipelined behind it once the stop began, arrives during the stop.
  const body = JSON.stringify({ name: 'stopping', currency: 'USD' });
  socket.write(
    'POST /participants HTTP/1.1\r\nHost: ledger\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
  );
  await wait(200);
  const closing = service.close();
  await wait(200);
  socket.write(`${body.slice(5)}GET /participants HTTP/1.1\r\nHost: ledger\r\n\r\n`);
  try {
    for (let waited = 0; !received.includes('"2003"') && waited < 5000; waited += 50)
      await wait(50);
    const answers = received.split('HTTP/1.1 ').slice(1);
    assert.equal(answers.length, 2, received);
    assert.match(answers[1]!, /^503 /);
    assert.equal(JSON.parse(answers[1]!.split('\r\n\r\n')[1]!).errorInformation.errorCode, '2003');
  } finally {
    socket.destroy();
    await closing;
  }
});
