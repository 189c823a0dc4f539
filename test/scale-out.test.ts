/**
 * Two service instances on one MariaDB and one three-replica TigerBeetle cluster, each with its
 * own ledger client (README: "Scaling out"): transfers prepared on one and fulfilled on the other,
 * answered in full by both; a participant deactivated, reactivated or given another limit on one
 * instance, seen by the other; an expiry that both instances know is told exactly once, and its
 * claim in MySQL (one claimant, taken over once lapsed), for transfers and FX conversions alike;
 * a stale copy of a conversion never overwrites the finisher's row; after a scale-down, the
 * expiries of the instance gone are taken over by the one left.
 */
import knexFactory from 'knex';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import type {
  ExpiryKind,
  FxInternalState,
  FxTransferRecord,
  TransferRecord,
} from '../src/ports/metadata';
import { RECEIVED_FULFIL_DEPENDENT, TransferInternalState } from '../src/ports/states';
import { MySqlMetadataStore } from '../src/metadata/mysql';
import { mariaDbUnavailable, startMariaDb, type RunningMariaDb } from './support/mariadb';
import { useRealCluster } from './support/real-cluster';
import { FxClient } from './support/fx-client';
import { Hub, errorCode } from './support/settlement-hub';
import { call } from './support/service-process';

const unavailable = mariaDbUnavailable();
let mariadb: RunningMariaDb | undefined;
before(async () => {
  if (unavailable !== undefined) {
    process.stderr.write(`\n*** SKIPPED: two instances on MySQL metadata: ${unavailable}. ***\n\n`);
    return;
  }
  mariadb = await startMariaDb();
});
after(async () => {
  await mariadb?.stop();
});
const cluster = useRealCluster('two instances');

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Each instance's sweep, run twice side by side, tells (through `tell`) exactly the `expected` ids
 * between them, each once.
 */
async function assertToldOnce(
  sweeps: ((tell: (ids: string[]) => void) => Promise<unknown>)[],
  expected: string[],
): Promise<void> {
  const told = sweeps.map((): string[] => []);
  const sweepAll = (): Promise<unknown[]> =>
    Promise.all(sweeps.map((sweep, i) => sweep((ids) => void told[i]!.push(...ids))));
  await sweepAll();
  await sweepAll();
  assert.deepEqual(
    told.flat().sort(),
    [...expected].sort(),
    `each expiry told exactly once (by instance: ${told.map((ids) => ids.length).join(', ')})`,
  );
}

/**
 * Two instances on a fresh database, with hubs talking to each (one run: the same participant
 * names).
 */
async function twoInstances(
  env: Record<string, string> = {},
): Promise<{ services: Service[]; one: Hub; two: Hub; close(): Promise<void> }> {
  // The background sweep is slowed down so that the test runs each sweep itself (unless `env` says
  // otherwise).
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    MYSQL_ENABLED: 'true',
    MYSQL_PORT: String(mariadb!.port),
    MYSQL_USER: mariadb!.user,
    MYSQL_PASSWORD: mariadb!.password,
    MYSQL_DATABASE: await mariadb!.createDatabase(),
    EXPIRY_SWEEP_MS: '60000',
    EXPIRY_TAKEOVER_MS: '3600000',
    ...env,
  });
  const services: Service[] = [];
  for (let i = 0; i < 2; i++) {
    const service = await buildService(config, { ledger: cluster.ledger() });
    await service.app.listen({ host: '127.0.0.1', port: 0 });
    services.push(service);
  }
  const base = (s: Service): string =>
    `http://127.0.0.1:${(s.app.server.address() as AddressInfo).port}`;
  const one = new Hub(base(services[0]!));
  const two = new Hub(base(services[1]!), one.run);
  await one.onboardHub();
  await one.onboard('A', '1000', '1000000');
  await one.onboard('B', '1000', '1000000');
  return {
    services,
    one,
    two,
    close: async () => void (await Promise.all(services.map((s) => s.close()))),
  };
}

/** An FX client of the parties of run `run`, over HTTP to the instance `hub`. */
function fxClientAt(hub: Hub, run: string): FxClient {
  return new FxClient(async (method, url, payload, headers) => {
    const answer = await call(hub.base, method, url, payload, headers ?? {});
    return { status: answer.status, body: answer.body };
  }, FxClient.parties(run));
}

function skipped(t: { skip(message: string): void }): boolean {
  if (mariadb === undefined) return (t.skip('no MariaDB'), true);
  if (cluster.current() === undefined) return (t.skip('no TigerBeetle server binary'), true);
  return false;
}

describe('expiry claims in MySQL', () => {
  const now = (): string => new Date().toISOString();
  const transfer = (): TransferRecord => ({
    transferId: randomUUID(),
    payerFsp: 'a',
    payeeFsp: 'b',
    amount: '1',
    currency: 'USD',
    condition: 'c',
    ilpPacket: 'p',
    expiration: now(),
    extensionList: undefined,
    payloadHash: 'h',
    state: TransferInternalState.RESERVED,
    createdAt: now(),
  });
  const conversion = (state: FxInternalState): FxTransferRecord => ({
    commitRequestId: randomUUID(),
    determiningTransferId: randomUUID(),
    initiatingFsp: 'a',
    counterPartyFsp: 'fxp',
    sourceAmount: { amount: '1', currency: 'USD' },
    targetAmount: { amount: '2', currency: 'EUR' },
    condition: 'c',
    expiration: now(),
    payloadHash: 'h',
    state,
    createdAt: now(),
  });
  /** Each kind of claim: how to store an open record, record it expired, and find its claim row. */
  const kinds: {
    kind: ExpiryKind;
    claims: string;
    records: string;
    key: string;
    open(store: MySqlMetadataStore): Promise<{ id: string; expire(): Promise<void> }>;
  }[] = [
    {
      kind: 'transfer',
      claims: 'expiry_claims',
      records: 'transfers',
      key: 'transfer_id',
      async open(store) {
        const record = transfer();
        await store.saveTransfers([record]);
        return {
          id: record.transferId,
          expire: () =>
            store.saveTransfers([{ ...record, state: TransferInternalState.EXPIRED_RESERVED }]),
        };
      },
    },
    {
      // An FX conversion the FXP agreed to still holds its money: its expiry is claimable too.
      kind: 'fx',
      claims: 'fx_expiry_claims',
      records: 'fx_transfers',
      key: 'commit_request_id',
      async open(store) {
        const record = conversion(RECEIVED_FULFIL_DEPENDENT);
        await store.saveFxTransfers([record]);
        return {
          id: record.commitRequestId,
          expire: () =>
            store.saveFxTransfers([{ ...record, state: TransferInternalState.EXPIRED_RESERVED }]),
        };
      },
    },
  ];

  async function twoStores(t: { after(fn: () => Promise<void>): void }): Promise<{
    first: MySqlMetadataStore;
    second: MySqlMetadataStore;
    db: ReturnType<typeof knexFactory>;
  }> {
    const config = loadConfig({
      MYSQL_ENABLED: 'true',
      MYSQL_PORT: String(mariadb!.port),
      MYSQL_USER: mariadb!.user,
      MYSQL_PASSWORD: mariadb!.password,
      MYSQL_DATABASE: await mariadb!.createDatabase(),
    }).mysql;
    const [first, second] = [new MySqlMetadataStore(config), new MySqlMetadataStore(config)];
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
    t.after(async () => {
      await db.destroy();
      await first.close();
      await second.close();
    });
    await first.migrate();
    return { first, second, db };
  }

  for (const { kind, claims, key, open } of kinds) {
    test(
      `${kind}: one claimant at a time; renewed by it, taken over once lapsed, and none once recorded`,
      { timeout: 60_000 },
      async (t) => {
        if (mariadb === undefined) return t.skip('no MariaDB');
        const { first, second, db } = await twoStores(t);
        const { id, expire } = await open(first);
        assert.deepEqual(
          await first.claimExpiries(kind, [id, randomUUID()]),
          { mine: [id], recorded: [] },
          'an unknown id is never claimed',
        );
        assert.deepEqual(
          await second.claimExpiries(kind, [id]),
          { mine: [], recorded: [] },
          'held by the first',
        );
        assert.deepEqual(
          await first.claimExpiries(kind, [id]),
          { mine: [id], recorded: [] },
          'its claimant retries (a failed notification)',
        );
        // The first instance died with the claim: once it lapses, the second takes it over.
        await db(claims)
          .where({ [key]: id })
          .update({ until_ms: Date.now() - 1 });
        assert.deepEqual(await second.claimExpiries(kind, [id]), { mine: [id], recorded: [] });
        assert.deepEqual(await first.claimExpiries(kind, [id]), { mine: [], recorded: [] });
        await expire();
        await db(claims)
          .where({ [key]: id })
          .update({ until_ms: Date.now() - 1 });
        assert.deepEqual(
          await first.claimExpiries(kind, [id]),
          { mine: [], recorded: [id] },
          'recorded: never claimed again, to forget',
        );
        const otherKind = kinds.find((k) => k.kind !== kind)!.kind;
        assert.deepEqual(
          await first.claimExpiries(otherKind, [id]),
          { mine: [], recorded: [] },
          'a claim of one kind is not one of the other',
        );
      },
    );
  }

  for (const { kind, claims, records, key, open } of kinds) {
    test(
      `${kind}: overdue and claimed by no live instance, oldest first, at most the limit asked`,
      { timeout: 60_000 },
      async (t) => {
        if (mariadb === undefined) return t.skip('no MariaDB');
        const { first, second, db } = await twoStores(t);
        const [older, newer] = [await open(first), await open(first)];
        const later = Date.now() + 1000;
        assert.deepEqual(await first.overdue(kind, Date.now() - 60_000, 10), [], 'not overdue yet');
        await db(records)
          .where({ [key]: older.id })
          .update({ expires_at_ms: Date.now() - 10_000 });
        assert.deepEqual(await first.overdue(kind, later, 1), [older.id]);
        assert.deepEqual(await first.overdue(kind, later, 10), [older.id, newer.id]);
        assert.deepEqual((await second.claimExpiries(kind, [older.id])).mine, [older.id]);
        assert.deepEqual(
          await first.overdue(kind, later, 10),
          [newer.id],
          'a live claim: its instance is telling it',
        );
        await db(claims)
          .where({ [key]: older.id })
          .update({ until_ms: Date.now() - 1 });
        assert.deepEqual(
          await first.overdue(kind, later, 10),
          [older.id, newer.id],
          'a lapsed claim: taken over',
        );
        await older.expire();
        assert.deepEqual(
          await first.overdue(kind, later, 10),
          [newer.id],
          'recorded final: never again',
        );
      },
    );
  }

  test(
    'fx: a stale open copy never overwrites a conversion another instance finished',
    { timeout: 60_000 },
    async (t) => {
      if (mariadb === undefined) return t.skip('no MariaDB');
      const { first, second } = await twoStores(t);
      const reserved = conversion(TransferInternalState.RESERVED);
      await first.saveFxTransfers([reserved]);
      const committed: FxTransferRecord = {
        ...reserved,
        state: TransferInternalState.COMMITTED,
        fulfilment: 'f',
        finishHash: 'fh',
        completedTimestamp: now(),
      };
      await second.saveFxTransfers([committed]);
      await first.saveFxTransfers([{ ...reserved, state: RECEIVED_FULFIL_DEPENDENT }]);
      await first.saveFxTransfers([{ ...reserved, state: TransferInternalState.EXPIRED_RESERVED }]);
      assert.deepEqual(
        await first.fxTransfers([reserved.commitRequestId]),
        [committed],
        "the finisher's record stands",
      );
      const open = conversion(TransferInternalState.RESERVED);
      await first.saveFxTransfers([open]);
      await second.saveFxTransfers([{ ...open, state: RECEIVED_FULFIL_DEPENDENT }]);
      assert.equal(
        (await first.fxTransfers([open.commitRequestId]))[0]?.state,
        RECEIVED_FULFIL_DEPENDENT,
        'an open row still moves on',
      );
    },
  );

  test(
    "fx: a withdrawal's record completes the bare abort written before it (the dependent transfer's, a repair), and is never undone by one",
    { timeout: 60_000 },
    async (t) => {
      if (mariadb === undefined) return t.skip('no MariaDB');
      const { first, second } = await twoStores(t);
      const reserved = conversion(TransferInternalState.RESERVED);
      await first.saveFxTransfers([reserved]);
      // What the dependent transfer's abort (or a repair from the ledger) records: the state alone.
      const bare: FxTransferRecord = {
        ...reserved,
        state: TransferInternalState.ABORTED_ERROR,
        completedTimestamp: now(),
      };
      await first.saveFxTransfers([bare]);
      const withdrawal: FxTransferRecord = {
        ...bare,
        finishHash: 'error:h',
        errorInformation: { errorCode: '5100', errorDescription: 'FXP withdraws' },
      };
      await first.saveFxTransfers([withdrawal]);
      assert.deepEqual(
        await second.fxTransfers([reserved.commitRequestId]),
        [withdrawal],
        "the withdrawal's error and finish are recorded",
      );
      await second.saveFxTransfers([bare]);
      await second.saveFxTransfers([
        {
          ...withdrawal,
          finishHash: 'error:other',
          errorInformation: { errorCode: '5101', errorDescription: 'another' },
        },
      ]);
      await second.saveFxTransfers([{ ...bare, state: TransferInternalState.COMMITTED }]);
      assert.deepEqual(
        await first.fxTransfers([reserved.commitRequestId]),
        [withdrawal],
        'a recorded withdrawal stands against a bare abort, another withdrawal and another state',
      );
    },
  );

  test(
    "fx: the FXP's ABORTED (ABORTED_REJECTED, its own finish) completes a bare abort too; a stale bare copy never replaces one",
    { timeout: 60_000 },
    async (t) => {
      if (mariadb === undefined) return t.skip('no MariaDB');
      const { first, second } = await twoStores(t);
      // The FXP had agreed (its answer's finish hash) before the conversion was aborted.
      const agreed = conversion(RECEIVED_FULFIL_DEPENDENT);
      await first.saveFxTransfers([{ ...agreed, finishHash: 'fulfil:agree' }]);
      const bare: FxTransferRecord = {
        ...agreed,
        finishHash: 'fulfil:agree',
        state: TransferInternalState.ABORTED_ERROR,
        completedTimestamp: now(),
      };
      await first.saveFxTransfers([bare]);
      // A copy read before the agreement, repaired as bare: no finish of its own, kept out.
      const { finishHash: _dropped, ...bareCopy } = bare;
      await second.saveFxTransfers([bareCopy]);
      assert.deepEqual(
        await first.fxTransfers([agreed.commitRequestId]),
        [bare],
        'the bare abort as first written',
      );
      const withdrawn: FxTransferRecord = {
        ...bare,
        state: TransferInternalState.ABORTED_REJECTED,
        finishHash: 'fulfil:aborted',
      };
      await second.saveFxTransfers([withdrawn]);
      assert.deepEqual(
        await first.fxTransfers([agreed.commitRequestId]),
        [withdrawn],
        "the withdrawal's state and finish",
      );
      await first.saveFxTransfers([bare]);
      assert.deepEqual(
        await second.fxTransfers([agreed.commitRequestId]),
        [withdrawn],
        'and never undone',
      );
    },
  );
});

describe('two instances on one database and one TigerBeetle cluster', () => {
  test(
    'prepared on one, fulfilled on the other: committed, and both answer it with its fulfilment',
    { timeout: 180_000 },
    async (t) => {
      if (skipped(t)) return;
      const { one, two, close } = await twoInstances();
      try {
        const transfers: { id: string; fulfilment: string }[] = [];
        for (let i = 0; i < 6; i++) {
          const [preparer, fulfiller] = i % 2 === 0 ? [one, two] : [two, one];
          const [payer, payee] = i % 3 === 0 ? ['B', 'A'] : ['A', 'B'];
          const prepared = await preparer.transfer(payer, payee, '10.25', 'none');
          assert.equal(prepared.status, 201);
          const fulfilled = await fulfiller.finish(
            prepared.id,
            payer,
            payee,
            'commit',
            prepared.fulfilment,
          );
          assert.equal(fulfilled.body.transferState, 'COMMITTED');
          transfers.push(prepared);
        }
        // The preparer still holds each one open (RESERVED, no fulfilment): it must answer, and
        // leave stored, the finisher's record.
        for (const hub of [one, two, one]) {
          for (const { id, fulfilment } of transfers) {
            const got = await call(hub.base, 'GET', `/transfers/${id}`, undefined, {
              'fspiop-source': one.name('A'),
            });
            assert.equal(got.status, 200, got.text);
            assert.equal(got.body.transferState, 'COMMITTED');
            assert.equal(got.body.fulfilment, fulfilment, `${hub.base}: ${got.text}`);
          }
        }
        // A: 4 × 10.25 sent, 2 received; B the opposite. Both instances read the same ledger.
        assert.deepEqual(await one.positions('A', 'B'), ['20.5', '-20.5']);
        assert.deepEqual(await two.positions('A', 'B'), ['20.5', '-20.5']);

        // The payee's fulfil again, at the preparer (which still holds the transfer open): with
        // another body 3106, the same body a duplicate, as one instance would answer; the first
        // stays recorded.
        const resent = await one.transfer('A', 'B', '1', 'none');
        const body = {
          transferState: 'COMMITTED',
          fulfilment: resent.fulfilment,
          completedTimestamp: '2026-01-01T00:00:00.000Z',
        };
        const headers = { 'fspiop-source': one.name('B'), 'fspiop-destination': one.name('A') };
        assert.equal(
          (await call(two.base, 'PUT', `/transfers/${resent.id}`, body, headers)).status,
          200,
        );
        const modified = await call(
          one.base,
          'PUT',
          `/transfers/${resent.id}`,
          { ...body, completedTimestamp: '2026-01-02T00:00:00.000Z' },
          headers,
        );
        assert.equal(errorCode(modified), '3106', modified.text);
        const again = await call(one.base, 'PUT', `/transfers/${resent.id}`, body, headers);
        assert.equal(again.status, 200, again.text);
        assert.equal(again.body.transferState, 'COMMITTED');
        const got = await call(two.base, 'GET', `/transfers/${resent.id}`, undefined, {
          'fspiop-source': one.name('A'),
        });
        assert.equal(got.body.completedTimestamp, body.completedTimestamp);
        assert.deepEqual(await one.positions('A', 'B'), ['21.5', '-21.5']);
      } finally {
        await close();
      }
    },
  );

  test(
    'a participant deactivated, reactivated or limited on one instance is seen by the other',
    { timeout: 180_000 },
    async (t) => {
      if (skipped(t)) return;
      const { one, two, close } = await twoInstances();
      try {
        assert.equal(
          (await two.transfer('A', 'B', '60', 'commit')).status,
          201,
          'B knows A and its limits (cached now)',
        );
        await one.ok('PUT', `/participants/${one.name('A')}`, { isActive: false });
        // At once: the ledger closed A's accounts, whatever B's participant cache still says.
        const refused = await two.transfer('A', 'B', '1', 'none');
        assert.notEqual(
          refused.status,
          201,
          'a deactivated payer is refused by the other instance at once',
        );
        await sleep(1100);
        const worded = await two.transfer('A', 'B', '1', 'none');
        assert.equal(
          worded.errorCode,
          '3100',
          "then with central-ledger's wording, from the metadata",
        );
        await two.ok('PUT', `/participants/${one.name('A')}`, { isActive: true });
        await sleep(1100);
        assert.equal(
          (await one.transfer('A', 'B', '1', 'commit')).status,
          201,
          'reactivated on the other instance',
        );

        await one.ok('PUT', `/participants/${one.name('A')}/limits`, {
          currency: 'USD',
          limit: { type: 'NET_DEBIT_CAP', value: 100 },
        });
        const overLimit = await two.transfer('A', 'B', '60', 'none');
        assert.equal(
          overLimit.errorCode,
          '4200',
          'a lowered net debit cap holds on the other instance at once (61 + 60 > 100)',
        );
        assert.equal((await two.transfer('A', 'B', '30', 'commit')).status, 201);
        const limits = await call(
          two.base,
          'GET',
          `/participants/${one.name('A')}/limits?currency=USD`,
        );
        assert.equal(limits.body[0].limit.value, 100);
      } finally {
        await close();
      }
    },
  );

  test(
    'an expiry both instances know of is told once; a transfer the other instance finished is not',
    { timeout: 180_000 },
    async (t) => {
      if (skipped(t)) return;
      const { services, one, two, close } = await twoInstances();
      try {
        const expiring = await Promise.all(
          Array.from({ length: 5 }, () => one.transfer('A', 'B', '2', 'none', 'USD', 2000)),
        );
        const finishedElsewhere = await one.transfer('A', 'B', '3', 'none', 'USD', 2000);
        await two.finish(finishedElsewhere.id, 'A', 'B', 'commit', finishedElsewhere.fulfilment);
        // The second instance learns the open transfers as at a restart: both now sweep them.
        await services[1]!.transfers.loadOpen();
        await sleep(3500);
        await assertToldOnce(
          services.map(
            (s) => (tell) =>
              s.transfers.expireDue(async (expired) => tell(expired.map((r) => r.transferId))),
          ),
          expiring.map((e) => e.id),
        );
        for (const { id } of expiring) {
          const got = await call(two.base, 'GET', `/transfers/${id}`, undefined, {
            'fspiop-source': one.name('A'),
          });
          assert.equal(got.body.transferState, 'ABORTED', got.text);
        }
        // The first instance's sweep found it posted in the ledger: its repair keeps the finisher's
        // record.
        const got = await call(two.base, 'GET', `/transfers/${finishedElsewhere.id}`, undefined, {
          'fspiop-source': one.name('A'),
        });
        assert.equal(got.body.transferState, 'COMMITTED');
        assert.equal(got.body.fulfilment, finishedElsewhere.fulfilment);
        assert.deepEqual(await one.positions('A', 'B'), ['3', '-3']);
        assert.equal(
          errorCode(
            await call(
              one.base,
              'PUT',
              `/transfers/${expiring[0]!.id}`,
              { transferState: 'COMMITTED', fulfilment: expiring[0]!.fulfilment },
              { 'fspiop-source': one.name('B') },
            ),
          ),
          '3303',
        );
      } finally {
        await close();
      }
    },
  );

  test(
    'scaled down from two instances to one: the expiries of the one gone are recorded by the other',
    { timeout: 180_000 },
    async (t) => {
      if (skipped(t)) return;
      // Background sweeps and takeover passes on, fast: nothing here runs a sweep itself.
      const { services, one, close } = await twoInstances({
        EXPIRY_SWEEP_MS: '200',
        EXPIRY_TAKEOVER_MS: '500',
      });
      try {
        const client = fxClientAt(one, one.run);
        await client.onboard();
        const transfers = await Promise.all(
          Array.from({ length: 3 }, () => one.transfer('A', 'B', '2', 'none', 'USD', 1500)),
        );
        const conversions = [client.payment('1', '2650', 1500), client.payment('1', '2650', 1500)];
        for (const p of conversions) assert.equal((await client.fxPrepare(p)).status, 201);
        assert.equal(
          (await client.fxAnswer(conversions[0]!)).status,
          200,
          'agreed to: its money still waits for the transfer',
        );
        // The first instance goes away before any of its reservations expires; the second never
        // loaded them.
        await services.shift()!.close();
        const remaining = services[0]!;
        const states = async (): Promise<string[]> => [
          ...(await Promise.all(
            transfers.map(async ({ id }) => (await remaining.transfers.recordOf(id)).state),
          )),
          ...(await Promise.all(
            conversions.map(async (p) => (await remaining.fx.recordOf(p.commitRequestId)).state),
          )),
        ];
        const deadline = Date.now() + 20_000;
        while ((await states()).some((state) => state !== TransferInternalState.EXPIRED_RESERVED)) {
          assert.ok(
            Date.now() < deadline,
            `never recorded expired: ${(await states()).join(', ')}`,
          );
          await sleep(250);
        }
      } finally {
        await close();
      }
    },
  );

  test(
    'an FX conversion prepared on one instance and agreed to on the other: its transfer is accepted on either',
    { timeout: 180_000 },
    async (t) => {
      if (skipped(t)) return;
      const { one, two, close } = await twoInstances();
      try {
        const [first, second] = [fxClientAt(one, one.run), fxClientAt(two, one.run)];
        await first.onboard();
        const p = first.payment('1', '2650');
        assert.equal((await first.fxPrepare(p)).status, 201);
        assert.equal((await second.fxAnswer(p)).status, 200, 'the FXP answers the other instance');
        // The first instance still holds the conversion open as it prepared it: its transfer must
        // not be refused for that.
        const prepared = await first.prepare(p, '2650');
        assert.equal(prepared.status, 201, JSON.stringify(prepared.body));
        assert.equal((await second.commit(p)).status, 200);
        assert.equal((await first.fxGet(p)).body.conversionState, 'COMMITTED');
        assert.equal((await first.transferGet(p)).body.transferState, 'COMMITTED');
      } finally {
        await close();
      }
    },
  );

  test(
    'an FX conversion both instances know of is told expired once, agreed to by its FXP or not',
    { timeout: 180_000 },
    async (t) => {
      if (skipped(t)) return;
      const { services, one, close } = await twoInstances();
      try {
        const client = fxClientAt(one, one.run);
        await client.onboard();
        const payments = Array.from({ length: 4 }, () => client.payment('1', '2650', 2000));
        for (const p of payments) assert.equal((await client.fxPrepare(p)).status, 201);
        assert.equal(
          (await client.fxAnswer(payments[0]!)).status,
          200,
          'the FXP agreed: its money still waits for the transfer',
        );
        // The second instance learns the open conversions as at a restart: both now sweep them.
        await services[1]!.fx.loadOpen();
        await sleep(3500);
        await assertToldOnce(
          services.map(
            (s) => (tell) =>
              s.fx.expireDue(async (expired) => tell(expired.map((r) => r.commitRequestId))),
          ),
          payments.map((p) => p.commitRequestId),
        );
        for (const p of payments)
          assert.equal((await client.fxGet(p)).body.conversionState, 'ABORTED');
        assert.deepEqual(
          await client.positions(),
          ['0', '0', '0', '0'],
          'every reservation released',
        );
      } finally {
        await close();
      }
    },
  );
});
