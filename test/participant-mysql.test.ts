/**
 * Participant administration with metadata in MySQL (a real MariaDB started here; skipped loudly
 * without one), two ParticipantService instances on two MySqlMetadataStore over one database and
 * one embedded ledger, as two service instances would be: a deactivation held at its ledger
 * command while the other instance reactivates, two limit changes at once, and a change on an
 * instance whose cache still holds the participant as it was before the other's change. Each
 * ends with the metadata (read by a store with a cold cache) saying what the ledger holds: the
 * admin changes of one participant take turns on its MySQL named lock and read it uncached in
 * their turn. Also: a read racing a save never leaves the old row in the cache.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config/config';
import { requireCurrency, parseSignedAmount } from '../src/domain/shared/money';
import { ParticipantService } from '../src/domain/participants/service';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger, LedgerCommand } from '../src/ports/ledger';
import { MySqlMetadataStore } from '../src/metadata/mysql';
import { deferred } from './support/deferred';
import { useMariaDb, type RunningMariaDb } from './support/mariadb';

const server = useMariaDb('participant administration with MySQL metadata');

const NAME = 'dfspa';
const USD = requireCurrency('USD');
/** Long enough for a change that is not kept waiting to finish on a loaded machine. */
const MEANWHILE_MS = 500;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The ledger, the first command of `kind` held until `release` (reported on `reached`). */
function holdingFirst(
  ledger: Ledger,
  kind: LedgerCommand['kind'],
): { ledger: Ledger; reached: Promise<void>; release: () => void } {
  const [reached, release] = [deferred(), deferred()];
  let armed = true;
  const held: Ledger = new Proxy(ledger, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (key !== 'execute') return typeof value === 'function' ? value.bind(target) : value;
      return async (commands: readonly LedgerCommand[]) => {
        if (armed && commands.some((c) => c.kind === kind)) {
          armed = false;
          reached.resolve();
          await release.promise;
        }
        return target.execute(commands);
      };
    },
  });
  return { ledger: held, reached: reached.promise, release: () => release.resolve() };
}

/** The participant as stored now, read by a store that has cached nothing. */
type Stored = () => Promise<{ isActive: boolean; positionActive: boolean; ndc: bigint }>;

/**
 * Two instances' stores on a fresh database over one ledger, `NAME` onboarded with a cap of 1000
 * USD.
 */
async function twoInstances(
  mariadb: RunningMariaDb,
  t: { after(fn: () => Promise<void>): void },
): Promise<{
  ledger: EmbeddedLedger;
  stores: [MySqlMetadataStore, MySqlMetadataStore];
  fresh: Stored;
}> {
  const database = await mariadb.createDatabase();
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    MYSQL_ENABLED: 'true',
    MYSQL_PORT: String(mariadb.port),
    MYSQL_USER: mariadb.user,
    MYSQL_PASSWORD: mariadb.password,
    MYSQL_DATABASE: database,
  }).mysql;
  const stores: [MySqlMetadataStore, MySqlMetadataStore] = [
    new MySqlMetadataStore(config),
    new MySqlMetadataStore(config),
  ];
  t.after(async () => void (await Promise.all(stores.map((s) => s.close()))));
  await stores[0].migrate();
  const ledger = new EmbeddedLedger();
  const admin = new ParticipantService(stores[0], ledger);
  for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT'])
    await admin.addHubAccount('Hub', { currency: 'USD', type });
  await admin.addSettlementModel({
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
  await admin.create({ name: NAME, currency: 'USD' });
  await admin.initialPositionAndLimits(NAME, {
    currency: 'USD',
    limit: { type: 'NET_DEBIT_CAP', value: '1000' },
  });
  const fresh: Stored = async () => {
    const cold = new MySqlMetadataStore(config);
    try {
      const participant = (await cold.participant(NAME))!;
      const account = participant.currencies[0]!;
      return {
        isActive: participant.isActive,
        positionActive: account.positionAccountActive,
        ndc: parseSignedAmount(account.netDebitCap!.value, USD),
      };
    } finally {
      await cold.close();
    }
  };
  return { ledger, stores, fresh };
}

async function ledgerView(ledger: Ledger): Promise<{ active: boolean; ndc: bigint }> {
  const [balance] = await ledger.balances([{ participant: NAME, currency: 'USD' }]);
  return { active: balance!.active, ndc: balance!.netDebitCap };
}

/**
 * Instance one's change held at its first ledger command of `kind` (its metadata, for activity,
 * already saved), instance two's sent meanwhile and given time to finish unless it is kept
 * waiting, then the first let go: both answered, the participant as stored and the ledger's view.
 */
async function heldWhileOtherChanges(
  mariadb: RunningMariaDb,
  t: { after(fn: () => Promise<void>): void },
  kind: LedgerCommand['kind'],
  first: (one: ParticipantService) => Promise<unknown>,
  second: (two: ParticipantService) => Promise<unknown>,
): Promise<{
  stored: Awaited<ReturnType<Stored>>;
  inLedger: Awaited<ReturnType<typeof ledgerView>>;
}> {
  const { ledger, stores, fresh } = await twoInstances(mariadb, t);
  const held = holdingFirst(ledger, kind);
  const firstDone = first(new ParticipantService(stores[0], held.ledger));
  await held.reached;
  const secondDone = second(new ParticipantService(stores[1], ledger));
  await Promise.race([secondDone, sleep(MEANWHILE_MS)]);
  held.release();
  await Promise.all([firstDone, secondDone]);
  return { stored: await fresh(), inLedger: await ledgerView(ledger) };
}

describe('participant administration with MySQL metadata, two instances', () => {
  test(
    "a deactivation held at its ledger command while the other instance reactivates: the metadata's activity is the ledger's",
    { timeout: 60_000 },
    async (t) => {
      const mariadb = server.current();
      if (mariadb === undefined) return t.skip('no MariaDB');
      const { stored, inLedger } = await heldWhileOtherChanges(
        mariadb,
        t,
        'setActive',
        (one) => one.setActive(NAME, false),
        (two) => two.setActive(NAME, true),
      );
      assert.equal(
        stored.isActive && stored.positionActive,
        inLedger.active,
        `metadata active ${stored.isActive}, the ledger's accounts ${inLedger.active ? 'open' : 'closed'}`,
      );
      assert.equal(
        inLedger.active,
        true,
        'the reactivation, asked last, is the change that stands',
      );
    },
  );

  test(
    "a change on an instance whose cache holds the participant as it was before the other's deactivation keeps it inactive",
    { timeout: 60_000 },
    async (t) => {
      const mariadb = server.current();
      if (mariadb === undefined) return t.skip('no MariaDB');
      const { ledger, stores, fresh } = await twoInstances(mariadb, t);
      const [one, two] = [
        new ParticipantService(stores[0], ledger),
        new ParticipantService(stores[1], ledger),
      ];
      assert.equal(
        (await two.get(NAME)).isActive,
        true,
        'instance two caches the participant active',
      );
      await one.setActive(NAME, false);
      await two.addEndpoint(NAME, {
        type: 'FSPIOP_CALLBACK_URL_TRANSFER_POST',
        value: 'http://dfspa/transfers',
      });
      const accountId = (await two.get(NAME)).currencies[0]!.positionAccountId;
      await two.setAccountActive(NAME, accountId, true);
      const [stored, inLedger] = [await fresh(), await ledgerView(ledger)];
      assert.equal(stored.isActive, false, 'the deactivation is not undone by a stale copy');
      assert.equal(inLedger.active, false);
    },
  );

  test(
    "two limit changes at once on two instances: the ledger's cap is the metadata's",
    { timeout: 60_000 },
    async (t) => {
      const mariadb = server.current();
      if (mariadb === undefined) return t.skip('no MariaDB');
      const cap = (value: string) => ({ currency: 'USD', limit: { type: 'NET_DEBIT_CAP', value } });
      const { stored, inLedger } = await heldWhileOtherChanges(
        mariadb,
        t,
        'adjustNdc',
        (one) => one.adjustLimit(NAME, cap('500')),
        (two) => two.adjustLimit(NAME, cap('300')),
      );
      assert.equal(
        inLedger.ndc,
        stored.ndc,
        `the ledger's cap ${inLedger.ndc}, the metadata's ${stored.ndc} (minor units)`,
      );
      assert.equal(stored.ndc, parseSignedAmount('300', USD), 'the change asked last stands');
    },
  );

  test(
    'a read racing a save does not leave the row as it was before the save in the cache',
    { timeout: 60_000 },
    async (t) => {
      const mariadb = server.current();
      if (mariadb === undefined) return t.skip('no MariaDB');
      const { stores } = await twoInstances(mariadb, t);
      const [store] = stores;
      const stored = (await store.participant(NAME))!;
      // A prepare's read on the same instance while the save's transaction runs: it reads the row
      // as it was.
      const saving = store.saveParticipant({ ...structuredClone(stored), isActive: false });
      const racing = store.participant(NAME);
      await Promise.all([saving, racing]);
      assert.equal(
        (await store.participant(NAME))!.isActive,
        false,
        'read after the save: the saved row',
      );
    },
  );
});
