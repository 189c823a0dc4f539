/**
 * Settlement with metadata in MySQL (a real MariaDB started here; skipped loudly without one):
 * the worked example end to end, and two instances on one database and one TigerBeetle cluster
 * closing the same window at once — one close, one refusal "Window <id> is not open" — while both
 * commit transfers that land, each exactly once, in the window open when their commit was saved.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger } from '../src/ledger/ledger';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { mariaDbUnavailable, startMariaDb, type RunningMariaDb } from './support/mariadb';
import { useRealCluster } from './support/real-cluster';
import { Hub } from './support/settlement-hub';
import { workedExample } from './support/settlement-scenario';

const unavailable = mariaDbUnavailable();
let mariadb: RunningMariaDb | undefined;
before(async () => {
  if (unavailable !== undefined) {
    process.stderr.write(`\n*** SKIPPED: settlement with MySQL metadata: ${unavailable}. ***\n\n`);
    return;
  }
  mariadb = await startMariaDb();
});
after(async () => {
  await mariadb?.stop();
});
const cluster = useRealCluster('two instances closing one window');

async function mysqlConfig(database: string): Promise<ReturnType<typeof loadConfig>> {
  return loadConfig({ LOG_LEVEL: 'silent', MYSQL_ENABLED: 'true', MYSQL_PORT: String(mariadb!.port), MYSQL_USER: mariadb!.user, MYSQL_PASSWORD: mariadb!.password, MYSQL_DATABASE: database });
}

async function listening(config: ReturnType<typeof loadConfig>, ledger: Ledger, store?: MemoryMetadataStore): Promise<{ service: Service; base: string }> {
  const service = await buildService(config, { ledger, ...(store === undefined ? {} : { store }) });
  await service.app.listen({ host: '127.0.0.1', port: 0 });
  return { service, base: `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}` };
}

describe('settlement with MySQL metadata', () => {
  test('the worked example, metadata in MySQL', { timeout: 180_000 }, async (t) => {
    if (mariadb === undefined) return t.skip('no MariaDB');
    const { service, base } = await listening(await mysqlConfig(await mariadb.createDatabase()), new EmbeddedLedger());
    try {
      await workedExample(new Hub(base));
    } finally {
      await service.close();
    }
  });

  test('MySQL switched on over a ledger holding windows: two instances start, the OPEN window continues from the ledger\'s', { timeout: 180_000 }, async (t) => {
    if (mariadb === undefined) return t.skip('no MariaDB');
    const ledger = new EmbeddedLedger();
    const before = await listening(loadConfig({ LOG_LEVEL: 'silent' }), ledger, new MemoryMetadataStore());
    const hub = new Hub(before.base);
    let open: number;
    try {
      await hub.onboardHub();
      for (const short of ['A', 'B']) await hub.onboard(short, '1000', '1000');
      for (let i = 0; i < 2; i++) {
        await hub.transfer('A', 'B', '10', 'commit');
        await hub.v2('POST', `/settlementWindows/${await hub.openWindowId()}`, { state: 'CLOSED', reason: 'before MySQL' });
      }
      open = await hub.openWindowId();
      assert.equal(open, 3);
      await hub.transfer('A', 'B', '7', 'commit');
    } finally {
      await before.service.close();
    }
    const config = await mysqlConfig(await mariadb.createDatabase());
    const [first, second] = await Promise.all([listening(config, ledger), listening(config, ledger)]);
    try {
      const one = new Hub(first.base, hub.run);
      const two = new Hub(second.base, hub.run);
      assert.deepEqual([await one.openWindowId(), await two.openWindowId()], [open, open], 'the ledger\'s OPEN window, renumbered once');
      await one.onboardHub();
      for (const short of ['A', 'B']) await one.onboard(short, '1000', '1000');
      const closed = await one.v2('POST', `/settlementWindows/${open}`, { state: 'CLOSED', reason: 'in MySQL' });
      assert.equal(closed.body.settlementWindowId, open + 1, 'later ids number on from it');
      const settlement = await one.v2('POST', '/settlements', { settlementModel: 'DEFERREDNETUSD', reason: 'r', settlementWindows: [{ id: open }] });
      assert.deepEqual(settlement.body.participants.flatMap((p: any) => p.accounts.map((a: any) => a.netSettlementAmount.amount)).sort(), [-7, 7]);
    } finally {
      await first.service.close();
      await second.service.close();
    }
  });

  test('two instances close one window at once: one close, one refusal; every commit in exactly one window', { timeout: 180_000 }, async (t) => {
    if (mariadb === undefined) return t.skip('no MariaDB');
    if (cluster.current() === undefined) return t.skip('no TigerBeetle server binary');
    const config = await mysqlConfig(await mariadb.createDatabase());
    const first = await listening(config, cluster.ledger());
    const second = await listening(config, cluster.ledger());
    try {
      const one = new Hub(first.base);
      const two = new Hub(second.base, one.run);
      const hubs = [one, two];
      await one.onboardHub();
      await one.onboard('A', '1000000', '1000000');
      await one.onboard('B', '1000000', '1000000');
      const w1 = await one.openWindowId();
      for (let round = 0; round < 3; round++) {
        const window = await one.openWindowId();
        // Commits on both instances while both close the window.
        const traffic = Promise.all(Array.from({ length: 20 }, (_, i) => hubs[i % 2]!.transfer(i % 3 === 0 ? 'B' : 'A', i % 3 === 0 ? 'A' : 'B', '1', 'commit')));
        await one.transfer('A', 'B', '1', 'commit');
        const closes = await Promise.all(hubs.map((h) => h.v2('POST', `/settlementWindows/${window}`, { state: 'CLOSED', reason: `round ${round}` })));
        assert.deepEqual(closes.map((c) => c.status).sort(), [200, 400], closes.map((c) => c.text).join('\n'));
        assert.match(closes.find((c) => c.status === 400)!.text, new RegExp(`Window ${window} is not open`));
        for (const answer of await traffic) assert.equal(answer.status, 201);
        const open = await Promise.all(hubs.map((h) => h.openWindowId()));
        assert.equal(open[0], open[1], 'both instances see the same OPEN window');
      }
      // Settle everything: positions back to 0 only if every commit was in exactly one settled window.
      const last = await one.openWindowId();
      await one.transfer('A', 'B', '1', 'commit');
      await one.v2('POST', `/settlementWindows/${last}`, { state: 'CLOSED', reason: 'last' });
      const windows = Array.from({ length: last - w1 + 1 }, (_, i) => ({ id: w1 + i }));
      const settlement = await one.v2('POST', '/settlements', { settlementModel: 'DEFERREDNETUSD', reason: 'all', settlementWindows: windows });
      assert.equal(settlement.status, 200, settlement.text);
      for (const state of ['PS_TRANSFERS_RECORDED', 'PS_TRANSFERS_RESERVED', 'PS_TRANSFERS_COMMITTED', 'SETTLED']) await hubs[state.length % 2]!.settleAll(settlement.body.id, state);
      assert.deepEqual(await two.positions('A', 'B'), ['0', '0']);
    } finally {
      await first.service.close();
      await second.service.close();
    }
  });
});
