/**
 * Metadata behind the MYSQL_ENABLED flag, against a real MariaDB started here (skipped loudly
 * without Debian's mariadb-server), and the durability of the embedded stores with it off.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import knexFactory from 'knex';
import { buildService, type Service } from '../src/app';
import { loadConfig, type Config } from '../src/config/config';
import { encodeIlpPrepare } from '../src/domain/shared/ilp';
import type { FxTransferRecord } from '../src/ports/metadata';
import { TransferInternalState } from '../src/ports/states';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger } from '../src/ports/ledger';
import { migrationSource } from '../src/metadata/migrations';
import { MySqlMetadataStore } from '../src/metadata/mysql';
import { mariaDbUnavailable, startMariaDb, type RunningMariaDb } from './support/mariadb';
import { useRealCluster } from './support/real-cluster';
import { fxScenarioSuite } from './support/fx-scenarios';
import { httpScenarioSuite } from './support/scenarios';

const unavailable = mariaDbUnavailable();
let mariadb: RunningMariaDb | undefined;
before(async () => {
  if (unavailable !== undefined) {
    process.stderr.write(
      `\n*** SKIPPED: MySQL metadata tests against a real MariaDB: ${unavailable}. ***\n\n`,
    );
    return;
  }
  mariadb = await startMariaDb();
});
after(async () => {
  await mariadb?.stop();
});
const cluster = useRealCluster('two service instances sharing one database');

async function mysqlEnvironment(
  extra: Record<string, string> = {},
): Promise<Record<string, string>> {
  const database = await mariadb!.createDatabase();
  return {
    LOG_LEVEL: 'silent',
    JMETER_ENABLED: 'true',
    MYSQL_ENABLED: 'true',
    MYSQL_PORT: String(mariadb!.port),
    MYSQL_USER: mariadb!.user,
    MYSQL_PASSWORD: mariadb!.password,
    MYSQL_DATABASE: database,
    ...extra,
  };
}

/** A migrated MySQL store on a database of its own. */
async function migratedStore(): Promise<MySqlMetadataStore> {
  const store = new MySqlMetadataStore(loadConfig(await mysqlEnvironment()).mysql);
  await store.migrate();
  return store;
}

// The whole HTTP and FX scenario suites with metadata in MySQL.
httpScenarioSuite('metadata in MySQL', () =>
  unavailable !== undefined
    ? undefined
    : { ledger: () => new EmbeddedLedger(), expiryGraceMs: 0, store: migratedStore },
);
fxScenarioSuite('metadata in MySQL', () =>
  unavailable !== undefined
    ? undefined
    : { ledger: () => new EmbeddedLedger(), expiryGraceMs: 0, store: migratedStore },
);

/** Onboards payer and payee in USD through the admin API; returns helpers for transfers. */
async function onboard(service: Service, names: { payer: string; payee: string }): Promise<void> {
  const call = (method: 'POST' | 'PUT', url: string, payload: object) =>
    service.app.inject({ method, url, payload: payload as Record<string, unknown> });
  for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT'])
    await call('POST', '/participants/Hub/accounts', { currency: 'USD', type });
  await call('POST', '/settlementModels', {
    name: 'DEFERREDNET',
    settlementGranularity: 'NET',
    settlementInterchange: 'MULTILATERAL',
    settlementDelay: 'DEFERRED',
    currency: 'USD',
    requireLiquidityCheck: true,
    ledgerAccountType: 'POSITION',
    autoPositionReset: true,
    settlementAccountType: 'SETTLEMENT',
  });
  for (const name of [names.payer, names.payee]) {
    assert.equal((await call('POST', '/participants', { name, currency: 'USD' })).statusCode, 201);
    assert.equal(
      (
        await call('POST', `/participants/${name}/initialPositionAndLimits`, {
          currency: 'USD',
          limit: { type: 'NET_DEBIT_CAP', value: 100000 },
        })
      ).statusCode,
      201,
    );
    await call('POST', `/participants/${name}/endpoints`, {
      type: 'FSPIOP_CALLBACK_URL_TRANSFER_POST',
      value: `http://${name}/transfers`,
    });
    const accounts = JSON.parse(
      (await service.app.inject({ method: 'GET', url: `/participants/${name}/accounts` })).body,
    );
    const settlement = accounts.find(
      (a: { ledgerAccountType: string }) => a.ledgerAccountType === 'SETTLEMENT',
    ).id;
    const funded = await call('POST', `/participants/${name}/accounts/${settlement}`, {
      transferId: randomUUID(),
      externalReference: 'r',
      action: 'recordFundsIn',
      reason: 'r',
      amount: { amount: '100000', currency: 'USD' },
    });
    assert.equal(funded.statusCode, 202);
  }
}

function newTransfer(payer: string, payee: string, amount = '10') {
  const preimage = randomBytes(32);
  const body = {
    transferId: randomUUID(),
    payerFsp: payer,
    payeeFsp: payee,
    amount: { amount, currency: 'USD' },
    ilpPacket: encodeIlpPrepare({
      amount: 1000n,
      expiresAt: new Date(Date.now() + 600_000).toISOString(),
      executionCondition: randomBytes(32).toString('base64url'),
      destination: `g.${payee}`,
      data: Buffer.from(Buffer.from('{"transactionId":"t"}').toString('base64url')),
    }),
    condition: createHash('sha256').update(preimage).digest('base64url'),
    expiration: new Date(Date.now() + 600_000).toISOString(),
  };
  return {
    body,
    fulfil: {
      transferState: 'COMMITTED',
      fulfilment: preimage.toString('base64url'),
      completedTimestamp: new Date().toISOString(),
    },
  };
}

const prepare = (service: Service, t: ReturnType<typeof newTransfer>) =>
  service.app.inject({
    method: 'POST',
    url: '/transfers',
    payload: t.body,
    headers: { 'fspiop-source': t.body.payerFsp },
  });
const fulfil = (service: Service, t: ReturnType<typeof newTransfer>) =>
  service.app.inject({
    method: 'PUT',
    url: `/transfers/${t.body.transferId}`,
    payload: t.fulfil,
    headers: { 'fspiop-source': t.body.payeeFsp, 'fspiop-destination': t.body.payerFsp },
  });
const positionOf = async (service: Service, name: string): Promise<string> =>
  String(
    JSON.parse(
      (
        await service.app.inject({
          method: 'GET',
          url: `/participants/${name}/positions?currency=USD`,
        })
      ).body,
    ).value,
  );

describe('MySQL metadata', () => {
  test('migrations create the schema from empty, and a second run applies nothing', async (t) => {
    if (mariadb === undefined) return t.skip('no MariaDB');
    const config = loadConfig(await mysqlEnvironment()).mysql;
    const first = new MySqlMetadataStore(config);
    const second = new MySqlMetadataStore(config);
    try {
      const [a, b] = await Promise.all([first.migrate(), second.migrate()]);
      assert.deepEqual(
        [...a, ...b],
        [
          '001_metadata',
          '002_message_origins',
          '003_funds_ledger_id',
          '004_fx_transfers',
          '005_participant_is_proxy',
          '006_settlement',
          '007_expiry_claims',
          '008_fx_expiry_claims',
          '009_expires_at',
          '010_fx_determining',
          '011_mojaloop_schema',
          '012_ledger_identity',
        ],
        'two instances migrating at once apply each migration exactly once',
      );
      assert.deepEqual(await first.migrate(), []);
      const db = knexFactory({
        client: 'mysql2',
        connection: {
          host: config.host,
          port: config.port,
          user: config.user,
          password: config.password,
          database: config.database,
        },
      });
      const [tables] = await db.raw('SHOW TABLES');
      await db.destroy();
      const names = (tables as Record<string, string>[]).map((row) => Object.values(row)[0]).sort();
      for (const table of [
        'funds_records',
        'hub_accounts',
        'participant_currencies',
        'participant_endpoints',
        'participants',
        'settlement_models',
        'transfers',
        'expiry_claims',
        'fx_expiry_claims',
        'fx_determining',
        'ledger_identity',
      ])
        assert.ok(names.includes(table), table);
    } finally {
      await first.close();
      await second.close();
    }
  });

  test('010 on a database already holding conversions: each determining transfer is claimed by one of its conversions', async (t) => {
    if (mariadb === undefined) return t.skip('no MariaDB');
    const config = loadConfig(await mysqlEnvironment()).mysql;
    const db = knexFactory({
      client: 'mysql2',
      connection: {
        host: config.host,
        port: config.port,
        user: config.user,
        password: config.password,
        database: config.database,
      },
    });
    const store = new MySqlMetadataStore(config);
    try {
      // The schema as the release before 010 left it.
      const before = (await migrationSource.getMigrations([])).filter((m) => m.name < '010');
      await db.migrate.latest({
        migrationSource: { ...migrationSource, getMigrations: async () => before },
        tableName: 'knex_migrations',
      });
      const now = new Date().toISOString();
      const conversion = (
        commitRequestId: string,
        determiningTransferId: string,
      ): FxTransferRecord => ({
        commitRequestId,
        determiningTransferId,
        initiatingFsp: 'a',
        counterPartyFsp: 'fxp',
        sourceAmount: { amount: '1', currency: 'USD' },
        targetAmount: { amount: '2', currency: 'EUR' },
        condition: 'c',
        expiration: now,
        payloadHash: 'h',
        state: TransferInternalState.RESERVED,
        createdAt: now,
      });
      const [one, two] = [randomUUID(), randomUUID()];
      // `two` has two conversions, both accepted by instances before the claim existed.
      const [x1, x2, x3] = [randomUUID(), randomUUID(), randomUUID()];
      const [lower, higher] = [x2, x3].sort() as [string, string];
      await store.saveFxTransfers([conversion(x1, one), conversion(x2, two), conversion(x3, two)]);

      assert.deepEqual(await store.migrate(), [
        '010_fx_determining',
        '011_mojaloop_schema',
        '012_ledger_identity',
      ]);
      const rows: { determining_transfer_id: string; commit_request_id: string }[] = await db(
        'fx_determining',
      )
        .select()
        .orderBy('determining_transfer_id');
      assert.deepEqual(
        rows.map((r) => [r.determining_transfer_id, r.commit_request_id]),
        [
          [one, x1],
          [two, lower],
        ].sort((a, b) => a[0]!.localeCompare(b[0]!)),
      );
      assert.equal(
        await store.claimDetermining(one, randomUUID()),
        x1,
        'a new conversion for a converted transfer meets its conversion',
      );
      assert.equal(await store.claimDetermining(two, higher), lower);
      const fresh = randomUUID();
      const x4 = randomUUID();
      assert.equal(
        await store.claimDetermining(fresh, x4),
        x4,
        'a transfer no conversion names is free',
      );
      assert.equal(
        await store.claimDetermining(fresh, x4),
        x4,
        "and its claimant's retry finds it its own",
      );
    } finally {
      await store.close();
      await db.destroy();
    }
  });

  test('restart with MySQL on: participants, limits, endpoints and a prepared transfer survive', async (t) => {
    if (mariadb === undefined) return t.skip('no MariaDB');
    const dataDir = mkdtempSync(join(tmpdir(), 'ledger-data-'));
    const config = loadConfig({ ...(await mysqlEnvironment()), DATA_DIR: dataDir });
    try {
      await restartScenario(config);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test(
    'MySQL stopped mid-run: clear 2003 errors, never a hang; after it returns no transfer is lost or doubled',
    { timeout: 120_000 },
    async (t) => {
      if (mariadb === undefined) return t.skip('no MariaDB');
      const config = loadConfig(
        await mysqlEnvironment({
          MYSQL_QUERY_TIMEOUT_MS: '1000',
          MYSQL_CONNECT_TIMEOUT_MS: '1000',
        }),
      );
      const service = await buildService(config, { ledger: new EmbeddedLedger() });
      try {
        const names = { payer: 'outagepayer', payee: 'outagepayee' };
        await onboard(service, names);
        const transfers = Array.from({ length: 40 }, () =>
          newTransfer(names.payer, names.payee, '1'),
        );
        const ok = (
          await Promise.all(transfers.slice(0, 20).map((x) => prepare(service, x)))
        ).every((r) => r.statusCode === 201);
        assert.ok(ok, 'prepares before the outage succeed');

        await mariadb.pause();
        const started = Date.now();
        const during = await Promise.all(transfers.slice(20).map((x) => prepare(service, x)));
        assert.ok(Date.now() - started < 15_000, 'requests fail within the configured timeouts');
        for (const response of during) {
          assert.equal(response.statusCode, 503, response.body);
          assert.equal(JSON.parse(response.body).errorInformation.errorCode, '2003');
        }
        const health = await service.app.inject({ method: 'GET', url: '/health' });
        assert.equal(health.statusCode, 502);
        assert.equal(
          JSON.parse(health.body).services.find(
            (s: { name: string }) => s.name === 'metadata:mysql',
          ).status,
          'DOWN',
        );
        await mariadb.resume();

        // Clients retry what failed; then everything is fulfilled (retries of fulfils included).
        for (const x of transfers.slice(20)) {
          const retried = await prepare(service, x);
          assert.ok(retried.statusCode === 200 || retried.statusCode === 201, retried.body);
          assert.equal(JSON.parse(retried.body).transferState, 'RESERVED');
        }
        for (const x of transfers)
          assert.equal(JSON.parse((await fulfil(service, x)).body).transferState, 'COMMITTED');
        for (const x of transfers.slice(0, 5))
          assert.equal(
            (await fulfil(service, x)).statusCode,
            200,
            'a retried fulfil is a duplicate',
          );
        assert.equal(
          await positionOf(service, names.payer),
          '40',
          'exactly 40 transfers of 1 moved: none lost, none doubled',
        );
        assert.equal(await positionOf(service, names.payee), '-40');
      } finally {
        await mariadb.resume();
        await service.close();
      }
    },
  );

  test('two instances sharing one database and one TigerBeetle cluster: prepare on one, fulfil on the other', async (t) => {
    if (mariadb === undefined) return t.skip('no MariaDB');
    if (cluster.current() === undefined) return t.skip('no TigerBeetle server binary');
    const config = loadConfig(await mysqlEnvironment());
    const first = await buildService(config, { ledger: cluster.ledger() });
    const second = await buildService(config, { ledger: cluster.ledger() });
    try {
      const run = randomBytes(3).toString('hex');
      const names = { payer: `twopayer${run}`, payee: `twopayee${run}` };
      await onboard(first, names);
      const transfers = Array.from({ length: 30 }, () =>
        newTransfer(names.payer, names.payee, '2'),
      );
      for (const response of await Promise.all(transfers.map((x) => prepare(first, x))))
        assert.equal(response.statusCode, 201, response.body);
      for (const response of await Promise.all(transfers.map((x) => fulfil(second, x))))
        assert.equal(JSON.parse(response.body).transferState, 'COMMITTED', response.body);
      // The same fulfils racing on both instances: each transfer still commits once.
      const raced = await Promise.all(
        transfers.flatMap((x) => [fulfil(first, x), fulfil(second, x)]),
      );
      for (const response of raced) assert.equal(response.statusCode, 200, response.body);
      const got = await second.app.inject({
        method: 'GET',
        url: `/transfers/${transfers[0]!.body.transferId}`,
        headers: { 'fspiop-source': names.payer },
      });
      assert.equal(JSON.parse(got.body).transferState, 'COMMITTED');
      assert.equal(await positionOf(first, names.payer), '60');
      assert.equal(await positionOf(second, names.payee), '-60');
    } finally {
      await first.close();
      await second.close();
    }
  });
});

describe('durability with MySQL off (embedded journals in DATA_DIR)', () => {
  test('restart: participants, limits, endpoints and a prepared transfer survive; the fulfil after restart commits', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ledger-data-'));
    try {
      await restartScenario(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir }));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/**
 * Onboards, prepares two transfers, restarts the service (same config, same data), then checks
 * everything is still known and a transfer prepared before the restart can be fulfilled. The
 * ledger is the journalled embedded one in DATA_DIR.
 */
async function restartScenario(config: Config, ledger?: () => Ledger): Promise<void> {
  const names = { payer: 'restartpayer', payee: 'restartpayee' };
  let service = await buildService(config, ledger === undefined ? {} : { ledger: ledger() });
  const kept = newTransfer(names.payer, names.payee, '12.5');
  const committed = newTransfer(names.payer, names.payee, '7');
  try {
    await onboard(service, names);
    assert.equal((await prepare(service, kept)).statusCode, 201);
    assert.equal((await prepare(service, committed)).statusCode, 201);
    assert.equal(JSON.parse((await fulfil(service, committed)).body).transferState, 'COMMITTED');
  } finally {
    await service.close();
  }
  service = await buildService(config, ledger === undefined ? {} : { ledger: ledger() });
  try {
    const participant = JSON.parse(
      (await service.app.inject({ method: 'GET', url: `/participants/${names.payer}` })).body,
    );
    assert.equal(participant.name, names.payer);
    assert.equal(participant.accounts.length, 2);
    const limits = JSON.parse(
      (await service.app.inject({ method: 'GET', url: `/participants/${names.payer}/limits` }))
        .body,
    );
    assert.equal(limits[0].limit.value, 100000);
    const endpoints = JSON.parse(
      (await service.app.inject({ method: 'GET', url: `/participants/${names.payer}/endpoints` }))
        .body,
    );
    assert.deepEqual(endpoints, [
      { type: 'FSPIOP_CALLBACK_URL_TRANSFER_POST', value: `http://${names.payer}/transfers` },
    ]);
    // 7 committed and 12.5 prepared: both in the position, as central-ledger reports it.
    assert.equal(await positionOf(service, names.payer), '19.5');
    const accounts = JSON.parse(
      (await service.app.inject({ method: 'GET', url: `/participants/${names.payer}/accounts` }))
        .body,
    );
    assert.equal(
      accounts.find((a: { ledgerAccountType: string }) => a.ledgerAccountType === 'POSITION').value,
      19.5,
    );
    assert.equal(
      (await prepare(service, committed)).statusCode,
      200,
      'a duplicate prepare is still recognised',
    );
    const done = await fulfil(service, kept);
    assert.equal(JSON.parse(done.body).transferState, 'COMMITTED', done.body);
    assert.equal(await positionOf(service, names.payer), '19.5');
    assert.equal(await positionOf(service, names.payee), '-19.5');
  } finally {
    await service.close();
  }
}
