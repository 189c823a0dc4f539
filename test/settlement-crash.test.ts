/**
 * Crash injection in settlement: the service kills itself (FAULT_POINT) between the two writes of
 * a window close (claimed in the metadata / cut in the ledger) or of a settlement step
 * (money moved in the ledger / states saved), is restarted on the same data, and the operator
 * repeats the request that got no answer. The close completes once, the step repeats or
 * completes, and the money moved exactly once: positions and the hub's account end exact.
 * Embedded ledger (journalled) always; a real cluster when a binary is installed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { FaultPoint } from '../src/util/fault';
import { liveDirs } from './support/leftovers';
import { freePort } from './support/net';
import { useRealCluster } from './support/real-cluster';
import { Hub } from './support/settlement-hub';
import {
  call,
  sleep,
  startProcess,
  stopProcess,
  type Answer,
  type Started,
} from './support/service-process';

const SERVICE_ARGS = ['--import', 'tsx', join(__dirname, '..', 'src', 'main.ts')];
const POINTS: FaultPoint[] = [
  'window.after-claim',
  'window.after-ledger',
  'settlement.after-ledger',
  'settlement.after-metadata',
];
const STATES = [
  'PS_TRANSFERS_RECORDED',
  'PS_TRANSFERS_RESERVED',
  'PS_TRANSFERS_COMMITTED',
  'SETTLED',
];
const cluster = useRealCluster('the settlement crash test');

const backends = [
  { name: 'embedded ledger', env: (): Record<string, string> => ({ LEDGER_BACKEND: 'embedded' }) },
  {
    name: 'TigerBeetle cluster',
    env: (): Record<string, string> => ({
      LEDGER_BACKEND: 'tigerbeetle',
      TB_CLUSTER_ID: cluster.current()!.clusterId.toString(),
      TB_ADDRESSES: cluster.current()!.addresses.join(','),
    }),
  },
];

for (const backend of backends) {
  describe(`settlement crash (${backend.name})`, () => {
    for (const point of POINTS) {
      test(
        `killed at ${point}: restarted, the request repeated, money moved once`,
        { timeout: 180_000 },
        async (t) => {
          if (backend.name !== 'embedded ledger' && cluster.current() === undefined)
            return t.skip('no TigerBeetle server binary');
          await scenario(point, backend.env());
        },
      );
    }
    test(
      'killed after a GROSS commit reached the ledger: the transfer reads SETTLED after the restart, the retry too',
      { timeout: 180_000 },
      async (t) => {
        if (backend.name !== 'embedded ledger' && cluster.current() === undefined)
          return t.skip('no TigerBeetle server binary');
        await grossScenario(backend.env());
      },
    );
  });
}

/** A GROSS commit whose metadata a crash lost: the ledger's gross legs say SETTLED. */
async function grossScenario(backendEnv: Record<string, string>): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'settlement-crash-'));
  liveDirs.add(dataDir);
  const port = await freePort();
  const env = {
    ...process.env,
    LOG_LEVEL: 'warn',
    PORT: String(port),
    DATA_DIR: dataDir,
    ...backendEnv,
  };
  const logFile = join(dataDir, 'service.log');
  let service: Started = await startProcess(
    'service',
    SERVICE_ARGS,
    { ...env, FAULT_POINT: 'fulfil.after-ledger' },
    port,
    logFile,
    '/health',
  );
  try {
    const hub = new Hub(service.base);
    await hub.onboardHub({ currency: 'GHS', gross: true });
    await hub.onboard('D', '1000', '1000', 'GHS');
    await hub.onboard('E', '1000', '1000', 'GHS');
    const prepared = await hub.transfer('D', 'E', '100', 'none', 'GHS');
    assert.equal(prepared.status, 201);
    const fulfil = (): Promise<Answer> =>
      call(
        service.base,
        'PUT',
        `/transfers/${prepared.id}`,
        {
          transferState: 'COMMITTED',
          fulfilment: prepared.fulfilment,
          completedTimestamp: '2026-01-01T00:00:00.000Z',
        },
        { 'fspiop-source': hub.name('E'), 'fspiop-destination': hub.name('D') },
      );
    await assert.rejects(fulfil(), 'the service died after the ledger committed');
    await new Promise((resolve) =>
      service.child.exitCode !== null || service.child.signalCode !== null
        ? resolve(undefined)
        : service.child.once('exit', resolve),
    );
    service = await startProcess('service', SERVICE_ARGS, env, port, logFile, '/health');
    assert.equal(await hub.transferState(prepared.id, 'D'), 'SETTLED', 'decided from the ledger');
    const retried = await fulfil();
    assert.equal(retried.status, 200, retried.text);
    assert.equal(retried.body.transferState, 'COMMITTED', 'the lost answer, as the first time');
    assert.equal(await hub.transferState(prepared.id, 'E'), 'SETTLED');
    assert.deepEqual(
      await Promise.all([hub.position('D'), hub.position('E')]),
      [
        { position: '0', settlement: '-900' },
        { position: '0', settlement: '-1100' },
      ],
      'settled once',
    );
    // A hub whose only currency settles GROSS: the window the commit landed in (before the restart)
    // is not empty.
    const window = await hub.openWindowId();
    const closed = await hub.v2('POST', `/settlementWindows/${window}`, {
      state: 'CLOSED',
      reason: 'gross only',
    });
    assert.equal(closed.status, 200, closed.text);
    const closedWindow = (await hub.v2('GET', `/settlementWindows/${window}`)).body;
    assert.deepEqual([closedWindow.state, closedWindow.content], ['CLOSED', []]);
    const next = closed.body.settlementWindowId as number;
    assert.equal(
      (
        await hub.v2('POST', `/settlementWindows/${next}`, {
          state: 'CLOSED',
          reason: 'nothing since',
        })
      ).body.errorInformation.errorDescription,
      `Generic validation error - Window ${next} is empty`,
    );
  } finally {
    await stopProcess(service);
    rmSync(dataDir, { recursive: true, force: true });
    liveDirs.delete(dataDir);
  }
}

async function scenario(point: FaultPoint, backendEnv: Record<string, string>): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'settlement-crash-'));
  liveDirs.add(dataDir);
  const port = await freePort();
  const env = {
    ...process.env,
    LOG_LEVEL: 'warn',
    PORT: String(port),
    DATA_DIR: dataDir,
    ...backendEnv,
  };
  const logFile = join(dataDir, 'service.log');
  // Each run its own currency on a shared cluster: every fresh metadata store continues from the
  // windows the ledger holds.
  const currency = {
    'window.after-claim': 'USD',
    'window.after-ledger': 'EUR',
    'settlement.after-ledger': 'KES',
    'settlement.after-metadata': 'TZS',
  }[point as string]!;
  let service: Started = await startProcess(
    'service',
    SERVICE_ARGS,
    { ...env, FAULT_POINT: point },
    port,
    logFile,
    '/health',
  );
  let crashed = false;
  /**
   * Sends a request; if the service died on it, restarts it without the fault and sends it again
   * (the operator's retry).
   */
  const withRestart = async (send: () => Promise<Answer>): Promise<Answer> => {
    try {
      return await send();
    } catch {
      assert.equal(crashed, false, 'killed once only');
      crashed = true;
      await new Promise((resolve) =>
        service.child.exitCode !== null || service.child.signalCode !== null
          ? resolve(undefined)
          : service.child.once('exit', resolve),
      );
      service = await startProcess('service', SERVICE_ARGS, env, port, logFile, '/health');
      return send();
    }
  };
  try {
    const hub = new Hub(service.base);
    await hub.onboardHub({ currency });
    await hub.onboard('A', '1000', '1000', currency);
    await hub.onboard('B', '1000', '1000', currency);
    for (const [payer, payee, amount] of [
      ['A', 'B', '300'],
      ['B', 'A', '50'],
    ] as const)
      assert.equal((await hub.transfer(payer, payee, amount, 'commit', currency)).status, 201);
    const w1 = await hub.openWindowId();
    const close = await withRestart(() =>
      hub.v2('POST', `/settlementWindows/${w1}`, { state: 'CLOSED', reason: 'end of day' }),
    );
    // Answered the new window, or (repeated after the crash: the restart finished the close) "not
    // open".
    assert.ok(close.status === 200 || /is not open/.test(close.text), close.text);
    const deadline = Date.now() + 30_000;
    while (
      (await hub.v2('GET', `/settlementWindows/${w1}`)).body.state !== 'CLOSED' &&
      Date.now() < deadline
    )
      await sleep(200);
    assert.equal(
      (await hub.v2('GET', `/settlementWindows/${w1}`)).body.state,
      'CLOSED',
      'the interrupted close was completed',
    );
    assert.notEqual(await hub.openWindowId(), w1);

    const created = await hub.v2('POST', '/settlements', {
      settlementModel: `DEFERREDNET${currency}`,
      reason: 'r',
      settlementWindows: [{ id: w1 }],
    });
    assert.equal(created.status, 200, created.text);
    const nets = created.body.participants
      .flatMap((p: any) => p.accounts.map((a: any) => a.netSettlementAmount.amount))
      .sort();
    assert.deepEqual(nets, [-250, 250]);
    for (const state of STATES) {
      const participants = created.body.participants.map((p: any) => ({
        id: p.id,
        accounts: p.accounts.map((a: any) => ({ id: a.id, state, reason: state })),
      }));
      const answer = await withRestart(() =>
        hub.v2('PUT', `/settlements/${created.body.id}`, { participants }),
      );
      assert.equal(answer.status, 200, answer.text);
      for (const p of answer.body.participants)
        for (const a of p.accounts) assert.equal(a.state, state, JSON.stringify(a));
    }
    assert.equal(crashed, true, `the service was killed at ${point}`);
    assert.equal((await hub.v2('GET', `/settlements/${created.body.id}`)).body.state, 'SETTLED');
    const positions = await Promise.all(
      ['A', 'B'].map(
        async (s) =>
          (await hub.ok('GET', `/participants/${hub.name(s)}/positions?currency=${currency}`)).body
            .value,
      ),
    );
    assert.deepEqual(positions, [0, 0], 'every position back to 0: each step moved its money once');
    const hubAccount = ((await hub.ok('GET', '/participants/Hub/accounts')).body as any[]).find(
      (a) => a.ledgerAccountType === 'HUB_MULTILATERAL_SETTLEMENT' && a.currency === currency,
    );
    assert.equal(hubAccount.value, 0);
  } finally {
    await stopProcess(service);
    rmSync(dataDir, { recursive: true, force: true });
    liveDirs.delete(dataDir);
  }
}
