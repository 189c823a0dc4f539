/**
 * Settlement with metadata in MySQL (a real MariaDB started here; skipped loudly without one):
 * the worked example end to end, and two instances on one database and one TigerBeetle cluster
 * closing the same window at once — one close, one refusal "Window <id> is not open" — while both
 * commit transfers that land, each exactly once, in the window open when their commit was saved;
 * and an abort on one instance and a PUT committing the same settlement on the other, held in
 * either order (test/support/settlement-race.ts): the settlement's named lock makes them take
 * turns, so metadata and ledger agree and the money moves once. The lock under those turns waits
 * no longer than its timeout, and dies with the session that held it; turns hold their locks on a
 * pool of their own (more of them than the main pool's connections leave it free), and a turn's
 * whole wait, queued behind others of its settlement included, ends at one deadline.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import knexFactory from 'knex';
import { buildService, createMetadataStore, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import type { MetadataStore } from '../src/ports/metadata';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger } from '../src/ports/ledger';
import { MetadataUnavailableError } from '../src/ports/metadata';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { MySqlMetadataStore } from '../src/metadata/mysql';
import { LockTimeoutError, withNamedLock } from '../src/metadata/named-lock';
import { deferred } from './support/deferred';
import { mariaDbUnavailable, startMariaDb, type RunningMariaDb } from './support/mariadb';
import { useRealCluster } from './support/real-cluster';
import { Hub } from './support/settlement-hub';
import { SettlementRace, abortRacingCommit } from './support/settlement-race';
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
/** Up to `max` sessions of the test's MariaDB on `database`, beside the store's own. */
function sessions(database: string, max: number): ReturnType<typeof knexFactory> {
  return knexFactory({
    client: 'mysql2',
    connection: {
      host: '127.0.0.1',
      port: mariadb!.port,
      user: mariadb!.user,
      password: mariadb!.password,
      database,
    },
    pool: { min: 0, max },
  });
}

const cluster = useRealCluster('two instances closing one window');

async function mysqlConfig(database: string): Promise<ReturnType<typeof loadConfig>> {
  return loadConfig({
    LOG_LEVEL: 'silent',
    MYSQL_ENABLED: 'true',
    MYSQL_PORT: String(mariadb!.port),
    MYSQL_USER: mariadb!.user,
    MYSQL_PASSWORD: mariadb!.password,
    MYSQL_DATABASE: database,
  });
}

async function listening(
  config: ReturnType<typeof loadConfig>,
  ledger: Ledger,
  store?: MetadataStore,
): Promise<{ service: Service; base: string }> {
  const service = await buildService(config, { ledger, ...(store === undefined ? {} : { store }) });
  await service.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    service,
    base: `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`,
  };
}

describe('settlement with MySQL metadata', () => {
  test('the worked example, metadata in MySQL', { timeout: 180_000 }, async (t) => {
    if (mariadb === undefined) return t.skip('no MariaDB');
    const { service, base } = await listening(
      await mysqlConfig(await mariadb.createDatabase()),
      new EmbeddedLedger(),
    );
    try {
      await workedExample(new Hub(base));
    } finally {
      await service.close();
    }
  });

  test(
    "MySQL switched on over a ledger holding windows: two instances start, the OPEN window continues from the ledger's",
    { timeout: 180_000 },
    async (t) => {
      if (mariadb === undefined) return t.skip('no MariaDB');
      const ledger = new EmbeddedLedger();
      const before = await listening(
        loadConfig({ LOG_LEVEL: 'silent' }),
        ledger,
        new MemoryMetadataStore(),
      );
      const hub = new Hub(before.base);
      let open: number;
      try {
        await hub.onboardHub();
        for (const short of ['A', 'B']) await hub.onboard(short, '1000', '1000');
        for (let i = 0; i < 2; i++) {
          await hub.transfer('A', 'B', '10', 'commit');
          await hub.v2('POST', `/settlementWindows/${await hub.openWindowId()}`, {
            state: 'CLOSED',
            reason: 'before MySQL',
          });
        }
        open = await hub.openWindowId();
        assert.equal(open, 3);
        await hub.transfer('A', 'B', '7', 'commit');
      } finally {
        await before.service.close();
      }
      const config = await mysqlConfig(await mariadb.createDatabase());
      const [first, second] = await Promise.all([
        listening(config, ledger),
        listening(config, ledger),
      ]);
      try {
        const one = new Hub(first.base, hub.run);
        const two = new Hub(second.base, hub.run);
        assert.deepEqual(
          [await one.openWindowId(), await two.openWindowId()],
          [open, open],
          "the ledger's OPEN window, renumbered once",
        );
        await one.onboardHub();
        for (const short of ['A', 'B']) await one.onboard(short, '1000', '1000');
        const closed = await one.v2('POST', `/settlementWindows/${open}`, {
          state: 'CLOSED',
          reason: 'in MySQL',
        });
        assert.equal(closed.body.settlementWindowId, open + 1, 'later ids number on from it');
        const settlement = await one.v2('POST', '/settlements', {
          settlementModel: 'DEFERREDNETUSD',
          reason: 'r',
          settlementWindows: [{ id: open }],
        });
        assert.deepEqual(
          settlement.body.participants
            .flatMap((p: any) => p.accounts.map((a: any) => a.netSettlementAmount.amount))
            .sort(),
          [-7, 7],
        );
      } finally {
        await first.service.close();
        await second.service.close();
      }
    },
  );

  test(
    'two instances close one window at once: one close, one refusal; every commit in exactly one window',
    { timeout: 180_000 },
    async (t) => {
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
          const traffic = Promise.all(
            Array.from({ length: 20 }, (_, i) =>
              hubs[i % 2]!.transfer(
                i % 3 === 0 ? 'B' : 'A',
                i % 3 === 0 ? 'A' : 'B',
                '1',
                'commit',
              ),
            ),
          );
          await one.transfer('A', 'B', '1', 'commit');
          const closes = await Promise.all(
            hubs.map((h) =>
              h.v2('POST', `/settlementWindows/${window}`, {
                state: 'CLOSED',
                reason: `round ${round}`,
              }),
            ),
          );
          assert.deepEqual(
            closes.map((c) => c.status).sort(),
            [200, 400],
            closes.map((c) => c.text).join('\n'),
          );
          assert.match(
            closes.find((c) => c.status === 400)!.text,
            new RegExp(`Window ${window} is not open`),
          );
          for (const answer of await traffic) assert.equal(answer.status, 201);
          const open = await Promise.all(hubs.map((h) => h.openWindowId()));
          assert.equal(open[0], open[1], 'both instances see the same OPEN window');
        }
        // Settle everything: positions back to 0 only if every commit was in exactly one settled
        // window.
        const last = await one.openWindowId();
        await one.transfer('A', 'B', '1', 'commit');
        await one.v2('POST', `/settlementWindows/${last}`, { state: 'CLOSED', reason: 'last' });
        const windows = Array.from({ length: last - w1 + 1 }, (_, i) => ({ id: w1 + i }));
        const settlement = await one.v2('POST', '/settlements', {
          settlementModel: 'DEFERREDNETUSD',
          reason: 'all',
          settlementWindows: windows,
        });
        assert.equal(settlement.status, 200, settlement.text);
        for (const state of [
          'PS_TRANSFERS_RECORDED',
          'PS_TRANSFERS_RESERVED',
          'PS_TRANSFERS_COMMITTED',
          'SETTLED',
        ])
          await hubs[state.length % 2]!.settleAll(settlement.body.id, state);
        assert.deepEqual(await two.positions('A', 'B'), ['0', '0']);
      } finally {
        await first.service.close();
        await second.service.close();
      }
    },
  );

  test(
    "a MySQL named lock (a settlement's turn): another session waits at most its timeout, the lock dies with the session holding it, and that holder keeps its work's answer with a warning",
    { timeout: 60_000 },
    async (t) => {
      if (mariadb === undefined) return t.skip('no MariaDB');
      const database = await mariadb.createDatabase();
      const [a, b] = [sessions(database, 2), sessions(database, 2)];
      try {
        const entered = deferred();
        const gate = deferred();
        const warnings: string[] = [];
        const holder = withNamedLock(
          a,
          { name: 'test_turn', wait: 1, warn: (_fields, message) => warnings.push(message) },
          async () => {
            entered.resolve();
            await gate.promise;
            return 'done';
          },
        );
        holder.catch(() => undefined);
        await entered.promise;
        const started = Date.now();
        await assert.rejects(
          withNamedLock(b, { name: 'test_turn', wait: 1 }, async () => 'never'),
          LockTimeoutError,
        );
        assert.ok(Date.now() - started >= 900, 'waited its timeout');
        // The holder's session ends, as when its instance dies: the server frees the lock.
        const [[{ session }]] = (await b.raw('SELECT IS_USED_LOCK(?) AS session', [
          'test_turn',
        ])) as [[{ session: number | string }]];
        await b.raw(`KILL ${Number(session)}`);
        assert.equal(
          await withNamedLock(b, { name: 'test_turn', wait: 5 }, async () => 'mine'),
          'mine',
        );
        gate.resolve();
        // The work's answer stands (its change was made); the lost lock is told loudly, not as the
        // answer.
        assert.equal(await holder, 'done', "the work's result is kept");
        assert.ok(
          warnings.length > 0 && warnings.some((w) => /named lock test_turn/.test(w)),
          `the holder whose session died is warned: ${JSON.stringify(warnings)}`,
        );
      } finally {
        await a.destroy();
        await b.destroy();
      }
    },
  );

  test(
    "turns hold their named locks on a pool of their own: more turns than the main pool's connections, waiting on locks held elsewhere or running queries, never starve a plain metadata query",
    { timeout: 60_000 },
    async (t) => {
      if (mariadb === undefined) return t.skip('no MariaDB');
      const database = await mariadb.createDatabase();
      const config = loadConfig({
        LOG_LEVEL: 'silent',
        MYSQL_ENABLED: 'true',
        MYSQL_PORT: String(mariadb.port),
        MYSQL_USER: mariadb.user,
        MYSQL_PASSWORD: mariadb.password,
        MYSQL_DATABASE: database,
        MYSQL_POOL_MAX: '2',
        MYSQL_CONNECT_TIMEOUT_MS: '1000',
      }).mysql;
      const store = new MySqlMetadataStore(config, { turnTimeoutMs: 10_000 });
      // Another instance's session, holding the locks of settlements 1–6.
      const other = sessions(database, 1);
      const counter = sessions(database, 1);
      const release = deferred();
      try {
        await store.migrate();
        const held = deferred();
        const holder = other.transaction(async (session) => {
          for (let id = 1; id <= 6; id++)
            await session.raw('SELECT GET_LOCK(?, 0)', [
              `central_ledger_settlement_${id}_${database}`.slice(0, 64),
            ]);
          held.resolve();
          await release.promise;
          await session.raw('SELECT RELEASE_ALL_LOCKS()');
        });
        await held.promise;
        // Six turns of six settlements wait for their locks: more than the lock pool (1 of
        // MYSQL_POOL_MAX's 2 connections) and the main pool (the other) hold.
        const waiting = Array.from({ length: 6 }, (_, i) =>
          store.settlementTurn(i + 1, async () => i + 1),
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        let started = Date.now();
        assert.ok(await store.healthy(), 'a plain query gets a connection while the turns wait');
        assert.ok(Array.isArray(await store.hubAccounts()));
        assert.ok(
          Date.now() - started < 900,
          `answered at once, not after the acquire timeout (${Date.now() - started} ms)`,
        );
        // The other instance's session and this count's own are the two beside the store's.
        const [[{ connections }]] = await counter.raw(
          'SELECT COUNT(*) AS connections FROM information_schema.PROCESSLIST WHERE DB = ?',
          [database],
        );
        assert.ok(
          Number(connections) - 2 <= 2,
          `the store holds at most MYSQL_POOL_MAX (2) connections (${connections} in all)`,
        );
        release.resolve();
        await holder;
        assert.deepEqual(
          await Promise.all(waiting),
          [1, 2, 3, 4, 5, 6],
          'each turn got its lock once it was free, those beyond the lock pool too',
        );
        // Four turns at once whose work runs queries (one at a time: one lock connection) while a
        // plain query runs too.
        const gate = deferred();
        const working = Array.from({ length: 4 }, (_, i) =>
          store.settlementTurn(10 + i, async () => {
            const accounts = await store.hubAccounts();
            await gate.promise;
            return Array.isArray(accounts);
          }),
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        started = Date.now();
        assert.ok(await store.healthy(), 'a plain query gets a connection while the turns work');
        assert.ok(Date.now() - started < 900, `answered at once (${Date.now() - started} ms)`);
        gate.resolve();
        assert.deepEqual(
          await Promise.all(working),
          [true, true, true, true],
          "every turn's own queries got a connection",
        );
      } finally {
        release.resolve();
        await other.destroy();
        await counter.destroy();
        await store.close();
      }
    },
  );

  test(
    "the k-th request queued for one settlement is answered within the turn's deadline, not k times it",
    { timeout: 60_000 },
    async (t) => {
      if (mariadb === undefined) return t.skip('no MariaDB');
      const database = await mariadb.createDatabase();
      const config = loadConfig({
        LOG_LEVEL: 'silent',
        MYSQL_ENABLED: 'true',
        MYSQL_PORT: String(mariadb.port),
        MYSQL_USER: mariadb.user,
        MYSQL_PASSWORD: mariadb.password,
        MYSQL_DATABASE: database,
      }).mysql;
      const timeoutMs = 1500;
      const store = new MySqlMetadataStore(config, { turnTimeoutMs: timeoutMs });
      const other = sessions(database, 1);
      // Answered 2003 after at least `min` ms, and by the deadline (plus scheduling slack), however
      // many were queued.
      const answeredWithin = async (
        requests: Promise<unknown>[],
        started: number,
        min: number,
      ): Promise<void> => {
        const times = await Promise.all(
          requests.map((request) =>
            request.then(
              () => assert.fail('a queued request was given its turn'),
              (error: unknown) => {
                assert.ok(error instanceof MetadataUnavailableError, String(error));
                return Date.now() - started;
              },
            ),
          ),
        );
        for (const ms of times)
          assert.ok(
            ms >= min && ms < timeoutMs + 700,
            `answered ${ms} ms after asking, the deadline ${timeoutMs} ms: ${JSON.stringify(times)}`,
          );
      };
      const release = deferred();
      try {
        await store.migrate();
        // A turn of this instance does not end: the four queued behind it give up at their
        // deadline.
        const gate = deferred();
        const entered = deferred();
        const first = store.settlementTurn(7, async () => {
          entered.resolve();
          await gate.promise;
          return 'first';
        });
        await entered.promise;
        let started = Date.now();
        await answeredWithin(
          Array.from({ length: 4 }, () => store.settlementTurn(7, async () => 'never')),
          started,
          timeoutMs - 100,
        );
        // One asking now still waits behind the turn that holds it, and gets its turn once that
        // ends.
        const next = store.settlementTurn(7, async () => 'next');
        gate.resolve();
        assert.equal(await first, 'first');
        assert.equal(await next, 'next');
        // Another instance holds the lock throughout: the first waits in GET_LOCK the whole seconds
        // left (1), the others in the queue, then each tries with what is left (0 s: one try); all
        // are answered by the deadline.
        const held = deferred();
        const holder = other.transaction(async (session) => {
          await session.raw('SELECT GET_LOCK(?, 0)', [
            `central_ledger_settlement_8_${database}`.slice(0, 64),
          ]);
          held.resolve();
          await release.promise;
        });
        await held.promise;
        started = Date.now();
        await answeredWithin(
          Array.from({ length: 4 }, () => store.settlementTurn(8, async () => 'never')),
          started,
          900,
        );
        release.resolve();
        await holder;
        // A deadline already passed is answered without asking for the lock.
        const early = new MySqlMetadataStore(config, { turnTimeoutMs: 0 });
        try {
          await assert.rejects(
            early.settlementTurn(8, async () => 'never'),
            MetadataUnavailableError,
          );
        } finally {
          await early.close();
        }
      } finally {
        release.resolve();
        await other.destroy();
        await store.close();
      }
    },
  );

  for (const first of ['abort', 'commit'] as const) {
    test(
      `an abort on one instance and a PUT committing on the other, the ${first} first: they take turns, metadata and ledger agree, money moves once`,
      { timeout: 180_000 },
      async (t) => {
        if (mariadb === undefined) return t.skip('no MariaDB');
        const config = await mysqlConfig(await mariadb.createDatabase());
        const ledger = new EmbeddedLedger();
        const race = new SettlementRace();
        const stores = [
          await createMetadataStore(config),
          await createMetadataStore(config),
        ] as const;
        const [one, two] = [
          await listening(config, race.ledger(ledger), race.store(stores[0])),
          await listening(config, race.ledger(ledger), race.store(stores[1])),
        ];
        try {
          const abortVia = new Hub(one.base);
          await abortRacingCommit(
            first,
            race,
            { abort: abortVia, commit: new Hub(two.base, abortVia.run) },
            ledger,
            stores[0],
          );
        } finally {
          await one.service.close();
          await two.service.close();
        }
      },
    );
  }
});
