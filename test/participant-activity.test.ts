/**
 * A participant's activity when a change's ledger command fails: before the ledger applied it, or
 * after (its answer lost). The next read, on this instance or another, finds the metadata saying
 * what the ledger holds: as it was before the change, or as the change asked. And participant
 * names matched ignoring case by both metadata stores, as central-ledger's MySQL collation does.
 * Each runs on the memory store (two services over one store) and on MySQL (a real MariaDB
 * started here, skipped loudly without one: two stores over one database).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config/config';
import { ParticipantService } from '../src/domain/participants/service';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { MySqlMetadataStore } from '../src/metadata/mysql';
import type { Ledger, LedgerCommand } from '../src/ports/ledger';
import type { MetadataStore, Participant } from '../src/ports/metadata';
import { useMariaDb } from './support/mariadb';
import { replacing } from './support/replacing-ledger';

const server = useMariaDb('participant activity and names with MySQL metadata');

const NAME = 'dfspa';
const CURRENCIES = ['USD', 'EUR'] as const;

interface Instances {
  stores: [MetadataStore, MetadataStore];
  /** The participant as stored now, read past every cache. */
  storedNow(name: string): Promise<Participant | undefined>;
}

type Kind = 'memory' | 'mysql';
type After = (fn: () => Promise<void>) => void;

/**
 * Two instances' stores of `kind` over one ledger, hub accounts in every currency, a default
 * settlement model, and `NAME` created in `currencies` by instance one's service (`admin`);
 * undefined without a MariaDB.
 */
async function onboarded(
  kind: Kind,
  after: After,
  currencies: readonly string[],
): Promise<(Instances & { ledger: EmbeddedLedger; admin: ParticipantService }) | undefined> {
  const running = await instances(kind, after);
  if (running === undefined) return undefined;
  const ledger = new EmbeddedLedger();
  const admin = new ParticipantService(running.stores[0], ledger);
  await hub(admin);
  for (const currency of currencies) await admin.create({ name: NAME, currency });
  return { ...running, ledger, admin };
}

async function instances(kind: Kind, after: After): Promise<Instances | undefined> {
  if (kind === 'memory') {
    const store = new MemoryMetadataStore();
    return { stores: [store, store], storedNow: (name) => store.participant(name) };
  }
  const mariadb = server.current();
  if (mariadb === undefined) return undefined;
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    MYSQL_ENABLED: 'true',
    MYSQL_PORT: String(mariadb.port),
    MYSQL_USER: mariadb.user,
    MYSQL_PASSWORD: mariadb.password,
    MYSQL_DATABASE: await mariadb.createDatabase(),
  }).mysql;
  const stores: [MySqlMetadataStore, MySqlMetadataStore] = [
    new MySqlMetadataStore(config),
    new MySqlMetadataStore(config),
  ];
  after(async () => void (await Promise.all(stores.map((s) => s.close()))));
  await stores[0].migrate();
  const storedNow = async (name: string): Promise<Participant | undefined> => {
    const cold = new MySqlMetadataStore(config);
    try {
      return await cold.participant(name);
    } finally {
      await cold.close();
    }
  };
  return { stores, storedNow };
}

/** Hub accounts in every currency and a default settlement model: participants may be created. */
async function hub(admin: ParticipantService): Promise<void> {
  for (const currency of CURRENCIES)
    for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT'])
      await admin.addHubAccount('Hub', { currency, type });
  await admin.addSettlementModel({
    name: 'DEFERREDNET',
    settlementGranularity: 'NET',
    settlementInterchange: 'MULTILATERAL',
    settlementDelay: 'DEFERRED',
    currency: null,
    requireLiquidityCheck: true,
    ledgerAccountType: 'POSITION',
    autoPositionReset: true,
    settlementAccountType: 'SETTLEMENT',
  });
}

/**
 * The ledger, its first command of `kind` failing: unanswered, and either never applied or
 * applied (an answer lost on its way back).
 */
function failingOnce(ledger: Ledger, kind: LedgerCommand['kind'], applied: boolean): Ledger {
  let armed = true;
  return replacing(ledger, {
    execute: async (commands, deadline) => {
      if (!armed || !commands.some((c) => c.kind === kind))
        return ledger.execute(commands, deadline);
      armed = false;
      if (applied) await ledger.execute(commands, deadline);
      throw new Error('the ledger did not answer');
    },
  });
}

/** Whether the participant is active, and each currency's POSITION account. */
type Activity = { isActive: boolean; accounts: boolean[] };

const activityOf = (participant: Participant): Activity => ({
  isActive: participant.isActive,
  accounts: participant.currencies.map((c) => c.positionAccountActive),
});

async function openInLedger(ledger: Ledger): Promise<boolean[]> {
  const balances = await ledger.balances(
    CURRENCIES.map((currency) => ({ participant: NAME, currency })),
  );
  return balances.map((b) => b!.active);
}

interface Change {
  what: string;
  /** Made first, with a ledger that answers. */
  before?: (admin: ParticipantService, accountId: number) => Promise<unknown>;
  change: (admin: ParticipantService, accountId: number) => Promise<unknown>;
  from: Activity;
  to: Activity;
}

const CHANGES: Change[] = [
  {
    what: 'a deactivation',
    change: (admin) => admin.setActive(NAME, false),
    from: { isActive: true, accounts: [true, true] },
    to: { isActive: false, accounts: [true, true] },
  },
  {
    what: 'a reactivation',
    before: (admin) => admin.setActive(NAME, false),
    change: (admin) => admin.setActive(NAME, true),
    from: { isActive: false, accounts: [true, true] },
    to: { isActive: true, accounts: [true, true] },
  },
  {
    what: "a POSITION account's deactivation",
    change: (admin, accountId) => admin.setAccountActive(NAME, accountId, false),
    from: { isActive: true, accounts: [true, true] },
    to: { isActive: true, accounts: [false, true] },
  },
  {
    what: "a POSITION account's reactivation",
    before: (admin, accountId) => admin.setAccountActive(NAME, accountId, false),
    change: (admin, accountId) => admin.setAccountActive(NAME, accountId, true),
    from: { isActive: true, accounts: [false, true] },
    to: { isActive: true, accounts: [true, true] },
  },
];

for (const kind of ['memory', 'mysql'] as const) {
  describe(`participant activity when the ledger fails, ${kind} metadata`, () => {
    for (const { what, before, change, from, to } of CHANGES) {
      for (const applied of [false, true]) {
        test(
          `${what} whose ledger command ${applied ? 'was applied but not answered' : 'failed'}: ` +
            'the next read finds what the ledger holds',
          { timeout: 60_000 },
          async (t) => {
            const running = await onboarded(kind, (fn) => t.after(fn), CURRENCIES);
            if (running === undefined) return t.skip('no MariaDB');
            const { stores, storedNow, ledger, admin } = running;
            const accountId = (await admin.get(NAME)).currencies[0]!.positionAccountId;
            await before?.(admin, accountId);
            const failing = new ParticipantService(
              stores[0],
              failingOnce(ledger, 'setActive', applied),
            );
            await assert.rejects(change(failing, accountId), /did not answer/);

            const expected = applied ? to : from;
            const two = new ParticipantService(stores[1], ledger);
            assert.deepEqual(activityOf(await two.get(NAME)), expected, 'as read');
            assert.deepEqual(activityOf((await storedNow(NAME))!), expected, 'as stored');
            assert.deepEqual(
              await openInLedger(ledger),
              expected.accounts.map((active) => expected.isActive && active),
              "the ledger's accounts",
            );
          },
        );
      }
    }
  });

  describe(`participant names, ${kind} metadata`, () => {
    test(
      "a name in another case is the participant's: found, refused again, its currencies added",
      { timeout: 60_000 },
      async (t) => {
        const running = await onboarded(kind, (fn) => t.after(fn), ['USD']);
        if (running === undefined) return t.skip('no MariaDB');
        const { stores, storedNow, ledger, admin } = running;
        assert.equal((await stores[0].participant('DFSPA'))?.name, NAME, 'found by the store');
        assert.equal((await admin.get('DfspA')).name, NAME, 'found by the service');
        await assert.rejects(
          admin.create({ name: 'DFSPA', currency: 'USD' }),
          /already been registered/,
        );
        await admin.create({ name: 'DFSPA', currency: 'EUR' });
        assert.deepEqual(
          (await stores[0].participants()).map((p) => p.name),
          [NAME],
          'one participant',
        );
        const stored = (await storedNow('Dfspa'))!;
        assert.deepEqual(
          stored.currencies.map((c) => c.currency),
          ['USD', 'EUR'],
        );
        assert.deepEqual(await openInLedger(ledger), [true, true], "the ledger's accounts, open");
      },
    );

    test(
      'a read under another case sees the change saved since',
      { timeout: 60_000 },
      async (t) => {
        const running = await onboarded(kind, (fn) => t.after(fn), ['USD']);
        if (running === undefined) return t.skip('no MariaDB');
        const { stores, admin } = running;
        assert.equal((await stores[0].participant('DFSPA'))?.isActive, true, 'read, and cached');
        await admin.setActive(NAME, false);
        assert.equal((await stores[0].participant('DFSPA'))?.isActive, false, 'read again');
      },
    );
  });
}
