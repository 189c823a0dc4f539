/**
 * The migration to the 3-event model on a real cluster holding the model before's accounts and
 * transfers (test/support/old-model.ts writes them as that version did: committed with window
 * legs, aborted, one still reserved, an initial position owing both debts, windows closed by their
 * gates), under metadata onboarded through the service. The service refuses to start on it; the
 * migration refuses while a transfer is reserved or the OPEN window holds old commits, writing
 * nothing; then it carries every figure over, closes the debtor's CAP, and a second run does
 * nothing. The new service then starts on it: old positions as they were, new transfers, a debtor
 * refused and paid, and the next window's nets only its own.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { AccountFlags, createClient } from 'tigerbeetle-node';
import { buildService } from '../src/app';
import { loadConfig } from '../src/config/config';
import { LedgerMismatchError, verifyLedgerModel } from '../src/domain/participants/ledger-identity';
import { accountId } from '../src/ledger/account-model';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { TigerBeetleLedger } from '../src/ledger/tigerbeetle';
import { MigrationRefusedError, type MigrationInput } from '../src/ledger/tigerbeetle-migration';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { LEDGER_MODEL, MODEL_BEFORE_THREE_EVENTS } from '../src/ports/ledger';
import { OldModelWriter } from './support/old-model';
import { Hub } from './support/settlement-hub';
import { startCluster, tigerbeetleBinary } from './support/tigerbeetle-cluster';

const CURRENCY = 'USD';
/** USD in minor units, as the ledger holds it. */
const usd = (major: number): bigint => BigInt(major * 100);
const PLACES = { ledger: 'the test cluster', metadata: 'the test metadata' };
const STATES = [
  'PS_TRANSFERS_RECORDED',
  'PS_TRANSFERS_RESERVED',
  'PS_TRANSFERS_COMMITTED',
  'SETTLED',
];

/** A service on `ledger` and `store`, listening; its Hub (the onboarded participants' names). */
async function serving<T>(
  ledger: EmbeddedLedger | TigerBeetleLedger,
  store: MemoryMetadataStore,
  run: string,
  work: (hub: Hub) => Promise<T>,
): Promise<T> {
  const service = await buildService(
    loadConfig({ LOG_LEVEL: 'silent', LEDGER_TIMEOUT_MS: '30000' }),
    { ledger, store },
  );
  await service.app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const port = (service.app.server.address() as AddressInfo).port;
    return await work(new Hub(`http://127.0.0.1:${port}`, run));
  } finally {
    await service.close();
  }
}

/** The metadata's window `id` CLOSED and the next one OPEN, as the version before closed it. */
async function closeInMetadata(store: MemoryMetadataStore, id: number): Promise<void> {
  const [window] = await store.settlementWindows([id]);
  const now = new Date().toISOString();
  const written = await store.writeSettlement({
    windows: [
      { ...window!, state: 'CLOSED', changedDate: now },
      {
        id: 0,
        state: 'OPEN',
        reason: 'r',
        createdDate: now,
        changedDate: now,
        content: [],
        version: 0,
      },
    ],
  });
  assert.notEqual(written, undefined);
}

test(
  'a cluster of the model before migrates at a window boundary, and the service starts on it',
  { timeout: 240_000 },
  async (t) => {
    if (tigerbeetleBinary() === undefined) return t.skip('no TigerBeetle server binary');
    const run = randomBytes(3).toString('hex');
    // The metadata, onboarded through the service (on the embedded ledger, whose accounts are
    // dropped): hub accounts, a NET model, three participants.
    const onboarded = new MemoryMetadataStore();
    await serving(new EmbeddedLedger(), onboarded, run, async (hub) => {
      await hub.onboardHub();
      await hub.onboard('A', '1000', '2000');
      await hub.onboard('B', '1000', '500');
      await hub.onboard('C', '200', '100');
      await hub.openWindowId();
    });
    const identity = BigInt('0x' + randomBytes(16).toString('hex'));
    const store = new MemoryMetadataStore();
    store.restore({ ...onboarded.snapshot(), ledgerIdentity: identity.toString() });
    const [a, b, c] = ['a', 'b', 'c'].map((short) => `${short}${run}`) as [string, string, string];

    const cluster = await startCluster({ replicas: 1 });
    const client = createClient({
      cluster_id: cluster.clusterId,
      replica_addresses: cluster.addresses,
    });
    const ledger = new TigerBeetleLedger({
      clusterId: cluster.clusterId,
      replicaAddresses: cluster.addresses,
    });
    try {
      // The same hub written by the version before.
      const old = new OldModelWriter(client, CURRENCY);
      await old.identity(identity);
      await old.openHub();
      for (const [name, cap, funds] of [
        [a, usd(1000), usd(2000)],
        [b, usd(1000), usd(500)],
        [c, usd(200), usd(100)],
      ] as const) {
        await old.openParticipant(name);
        await old.grantCap(name, cap);
        await old.fundsIn(name, funds);
      }
      await old.initialPosition(c, usd(300));
      const first = await old.prepare({ payer: a, payee: b }, usd(100), 600);
      await old.commit(first, { payer: a, payee: b }, usd(100), 1);
      await old.closeWindow(1);
      await closeInMetadata(store, 1);
      await old.abort(await old.prepare({ payer: a, payee: b }, usd(50), 600), usd(50));
      const back = await old.prepare({ payer: b, payee: a }, usd(30), 600);
      await old.commit(back, { payer: b, payee: a }, usd(30), 2);
      await old.prepare({ payer: a, payee: b }, usd(20), 2);

      assert.equal(await ledger.ledgerModel(), MODEL_BEFORE_THREE_EVENTS);
      await assert.rejects(
        verifyLedgerModel(ledger, PLACES),
        (error: unknown) =>
          error instanceof LedgerMismatchError && /migrate:ledger/.test(error.message),
        'the service refuses to start on the model before',
      );
      const input = async (): Promise<MigrationInput> => ({
        owners: [a, b, c].map((participant) => ({ participant, currency: CURRENCY })),
        hubCurrencies: [CURRENCY],
        openWindow: (await store.openSettlementWindow()).id,
      });
      await assert.rejects(
        ledger.migrateFromOldModel(await input()),
        (error: unknown) =>
          error instanceof MigrationRefusedError && /still reserved/.test(error.message),
      );
      assert.deepEqual(await ledger.hubsOpened([CURRENCY]), [false], 'nothing written');
      assert.equal(await ledger.ledgerModel(), MODEL_BEFORE_THREE_EVENTS);

      await new Promise((resolve) => setTimeout(resolve, 2500));
      await assert.rejects(
        ledger.migrateFromOldModel(await input()),
        (error: unknown) =>
          error instanceof MigrationRefusedError &&
          /OPEN settlement window 2 holds commits/.test(error.message),
      );
      assert.deepEqual(await ledger.hubsOpened([CURRENCY]), [false], 'nothing written');

      // The window boundary: the version before closes window 2.
      await old.closeWindow(2);
      await closeInMetadata(store, 2);
      assert.deepEqual(await ledger.migrateFromOldModel(await input()), {
        alreadyMigrated: false,
        participants: 3,
        debtors: 1,
        cutWindow: 2,
      });
      const balances = await ledger.balances(
        [a, b, c].map((participant) => ({ participant, currency: CURRENCY })),
      );
      assert.deepEqual(
        balances.map((x) => [x!.liquidity, x!.position, x!.reserved, x!.netDebitCap, x!.active]),
        [
          [usd(2000), usd(70), 0n, usd(1000), true],
          [usd(500), usd(-70), 0n, usd(1000), true],
          [usd(100), usd(300), 0n, usd(200), true],
        ],
        'the figures of the model before, read under the new one',
      );
      const [capC] = await client.lookupAccounts([accountId(c, CURRENCY, 'CAP')]);
      assert.notEqual(capC!.flags & AccountFlags.closed, 0, "the debtor's CAP is closed");
      assert.equal(await ledger.ledgerModel(), LEDGER_MODEL);
      assert.equal((await ledger.migrateFromOldModel(await input())).alreadyMigrated, true);
      await verifyLedgerModel(ledger, PLACES);

      await serving(ledger, store, run, async (hub) => {
        assert.deepEqual(await hub.positions('A', 'B', 'C'), ['70', '-70', '300']);
        assert.equal(await hub.openWindowId(), 3);
        assert.equal((await hub.transfer('A', 'B', '40', 'commit')).status, 201);
        assert.equal(
          (await hub.transfer('C', 'A', '10', 'commit')).errorCode,
          '4001',
          'the debtor cannot send: its liquidity is owed',
        );
        assert.equal((await hub.transfer('B', 'C', '250', 'commit')).status, 201);
        assert.deepEqual(await hub.positions('A', 'B', 'C'), ['110', '140', '50']);
        const closed = await hub.v2('POST', '/settlementWindows/3', {
          state: 'CLOSED',
          reason: 'after the migration',
        });
        assert.equal(closed.status, 200, closed.text);
        const settlement = await hub.v2('POST', '/settlements', {
          settlementModel: `DEFERREDNET${CURRENCY}`,
          reason: 'r',
          settlementWindows: [{ id: 3 }],
        });
        assert.equal(settlement.status, 200, settlement.text);
        const nets = new Map<number, number>(
          settlement.body.participants.flatMap((p: any) =>
            p.accounts.map((x: any) => [x.id, x.netSettlementAmount.amount]),
          ),
        );
        assert.deepEqual(
          [
            nets.get(await hub.accountId('A', 'POSITION')),
            nets.get(await hub.accountId('B', 'POSITION')),
            nets.get(await hub.accountId('C', 'POSITION')),
          ],
          [40, 210, -250],
          "window 3's nets are its own transfers only",
        );
        for (const state of STATES) await hub.settleAll(settlement.body.id, state);
        assert.deepEqual(await hub.positions('A', 'B', 'C'), ['70', '-70', '300']);
      });
    } finally {
      client.destroy();
      await cluster.stop();
    }
  },
);
