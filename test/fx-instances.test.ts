/**
 * FX conversions on two instances sharing one MariaDB and one (embedded) ledger (README "Scaling
 * out"): two conversions naming one determining transfer, each prepared on its own instance at
 * once, get one acceptance between them, as on one instance (test/unit/fx-races.test.ts); a claim
 * left by a crash before the ledger keeps the transfer for its conversion; a conversion the ledger
 * refused without a record gives the transfer back.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { buildService, type Service } from '../src/app';
import { canonicalTransferId } from '../src/domain/shared/ids';
import { loadConfig } from '../src/config/config';
import type { MetadataStore } from '../src/ports/metadata';
import { TransferInternalState } from '../src/ports/states';
import { fxLedgerId } from '../src/domain/fx/rules';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { refused, type Ledger, type LedgerCommand, type LedgerOutcome } from '../src/ports/ledger';
import { MySqlMetadataStore } from '../src/metadata/mysql';
import { deferred } from './support/deferred';
import { FxClient, injecting, type Payment } from './support/fx-client';
import { useMariaDb } from './support/mariadb';

const server = useMariaDb('FX on two instances over MySQL metadata');

/** Sees or changes each ledger command before the ledger does (undefined: left to the ledger). */
type Interceptor = (command: LedgerCommand) => Promise<LedgerOutcome | undefined>;
/** Sees every store's read of the conversions of determining transfers (the prepare's check). */
type ReadWatcher = (transferIds: readonly string[]) => void;

interface Instances {
  stores: MySqlMetadataStore[];
  /** One FX client per instance, all of the same parties. */
  clients: FxClient[];
  close(): Promise<void>;
}

/**
 * Two services, each with a MySqlMetadataStore of its own on one fresh database, over one
 * EmbeddedLedger.
 */
async function twoInstances(
  intercept: Interceptor = async () => undefined,
  watch: ReadWatcher = () => {},
): Promise<Instances> {
  const mariadb = server.current()!;
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    MYSQL_ENABLED: 'true',
    MYSQL_PORT: String(mariadb.port),
    MYSQL_USER: mariadb.user,
    MYSQL_PASSWORD: mariadb.password,
    MYSQL_DATABASE: await mariadb.createDatabase(),
    EXPIRY_SWEEP_MS: '60000',
  });
  const embedded = new EmbeddedLedger();
  const ledger: Ledger = new Proxy(embedded, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (key !== 'execute') return typeof value === 'function' ? value.bind(target) : value;
      return async (commands: readonly LedgerCommand[]) => {
        const changed = await Promise.all(commands.map(intercept));
        const own = await target.execute(commands.filter((_, i) => changed[i] === undefined));
        return changed.map((outcome) => outcome ?? own.shift()!);
      };
    },
  });
  const stores: MySqlMetadataStore[] = [];
  const services: Service[] = [];
  for (let i = 0; i < 2; i++) {
    const store = new MySqlMetadataStore(config.mysql);
    await store.migrate();
    stores.push(store);
    const watched: MetadataStore = new Proxy(store, {
      get(target, key, receiver) {
        if (key !== 'fxTransfersDetermining') return Reflect.get(target, key, receiver) as unknown;
        return async (transferIds: readonly string[]) => {
          const found = await target.fxTransfersDetermining(transferIds);
          watch(transferIds);
          return found;
        };
      },
    });
    services.push(await buildService(config, { ledger, store: watched }));
  }
  const run = Math.random().toString(16).slice(2, 8);
  const clients = services.map(
    (service) => new FxClient(injecting(service.app), FxClient.parties(run)),
  );
  await clients[0]!.onboard();
  return {
    stores,
    clients,
    close: async () => void (await Promise.all(services.map((s) => s.close()))),
  };
}

/** `body` on two fresh instances, closed after it; skipped without MariaDB. */
async function onTwoInstances(
  t: TestContext,
  body: (instances: Instances) => Promise<void>,
  intercept?: Interceptor,
  watch?: ReadWatcher,
): Promise<void> {
  if (server.current() === undefined) return t.skip('no MariaDB');
  const instances = await twoInstances(intercept, watch);
  try {
    await body(instances);
  } finally {
    await instances.close();
  }
}

/** A second conversion (its own id and condition) for the determining transfer of `first`. */
function anotherFor(c: FxClient, first: Payment): Payment {
  const second = c.payment('10', '26500');
  return { ...second, body: { ...second.body, determiningTransferId: first.transferId } };
}

describe('FX conversions on two instances over MySQL', () => {
  test(
    'two conversions for one determining transfer, each on its own instance at once: one accepted, the other refused 3100 with nothing written',
    { timeout: 120_000 },
    async (t) => {
      // Both prepares' ledger commands wait until both instances have checked the store for a
      // conversion of the transfer.
      let determining: string | undefined;
      let checks = 0;
      const bothChecked = deferred();
      const held = new Set<bigint>();
      const holdUntilBothChecked: Interceptor = async (command) => {
        if (command.kind === 'prepare' && held.has(command.id)) await bothChecked.promise;
        return undefined;
      };
      const countChecks: ReadWatcher = (transferIds) => {
        if (determining !== undefined && transferIds.includes(determining) && ++checks === 2)
          bothChecked.resolve();
      };
      await onTwoInstances(
        t,
        async (instances) => {
          const [one, two] = instances.clients as [FxClient, FxClient];
          const first = one.payment('10', '26500');
          const second = anotherFor(one, first);
          determining = canonicalTransferId(first.transferId);
          for (const p of [first, second])
            held.add(fxLedgerId(canonicalTransferId(p.commitRequestId)));
          const answers = await Promise.all([one.fxPrepare(first), two.fxPrepare(second)]);
          assert.deepEqual(
            answers.map((a) => a.status).sort(),
            [201, 400],
            JSON.stringify(answers.map((a) => a.body)),
          );
          const [accepted, refusedOne] =
            answers[0]!.status === 201 ? [first, second] : [second, first];
          const refusal = answers.find((a) => a.status === 400)!.body.errorInformation;
          assert.equal(refusal.errorCode, '3100');
          assert.match(
            refusal.errorDescription,
            new RegExp(
              `already has the fxTransfer ${canonicalTransferId(accepted.commitRequestId)}`,
            ),
          );
          assert.deepEqual(await one.positions(), ['10', '0', '0', '0'], 'one conversion reserved');
          for (const store of instances.stores) {
            assert.deepEqual(
              await store.fxTransfers([canonicalTransferId(refusedOne.commitRequestId)]),
              [undefined],
              'the refused conversion left no record',
            );
            assert.deepEqual(
              (await store.fxTransfersDetermining([determining])).map((r) => r?.commitRequestId),
              [canonicalTransferId(accepted.commitRequestId)],
            );
          }
          // Its unchanged resend is refused alike on either instance; the accepted one's is a
          // duplicate on both.
          for (const c of [one, two]) {
            assert.equal((await c.fxPrepare(refusedOne)).body.errorInformation.errorCode, '3100');
            assert.equal((await c.fxPrepare(accepted)).status, 200);
          }
          assert.deepEqual(await one.positions(), ['10', '0', '0', '0']);
        },
        holdUntilBothChecked,
        countChecks,
      );
    },
  );

  test(
    "a claim a crash left before the ledger: the same conversion's retry goes ahead, another conversion for the transfer is refused",
    { timeout: 120_000 },
    async (t) => {
      await onTwoInstances(t, async (instances) => {
        const [one, two] = instances.clients as [FxClient, FxClient];
        const first = one.payment('10', '26500');
        const second = anotherFor(one, first);
        // The claim as the crashed prepare made it, nothing in the ledger or the store after it.
        const claimed = await instances.stores[0]!.claimDetermining(
          canonicalTransferId(first.transferId),
          canonicalTransferId(first.commitRequestId),
        );
        assert.equal(claimed, canonicalTransferId(first.commitRequestId));
        const refusal = await two.fxPrepare(second);
        assert.equal(refusal.status, 400);
        assert.equal(refusal.body.errorInformation.errorCode, '3100');
        assert.equal((await two.fxPrepare(first)).status, 201);
        assert.deepEqual(await one.positions(), ['10', '0', '0', '0']);
      });
    },
  );

  test(
    'a conversion the ledger refused without a record gives the transfer back; one refused for liquidity keeps it (its record), as on one instance',
    { timeout: 120_000 },
    async (t) => {
      // The FXP's account deactivated by an instance this one's participant cache has not caught up
      // with.
      const inactive = new Set<bigint>();
      const refuseInactive: Interceptor = async (command) =>
        command.kind === 'prepare' && inactive.has(command.id) ? refused('inactive') : undefined;
      await onTwoInstances(
        t,
        async (instances) => {
          const [one, two] = instances.clients as [FxClient, FxClient];
          const first = one.payment('10', '26500');
          inactive.add(fxLedgerId(canonicalTransferId(first.commitRequestId)));
          assert.equal((await one.fxPrepare(first)).body.errorInformation.errorCode, '3100');
          assert.deepEqual(
            await instances.stores[0]!.fxTransfers([canonicalTransferId(first.commitRequestId)]),
            [undefined],
            'nothing recorded',
          );
          const second = anotherFor(one, first);
          assert.equal(
            (await two.fxPrepare(second)).status,
            201,
            'the transfer is free for another conversion',
          );
          assert.deepEqual(await one.positions(), ['10', '0', '0', '0']);

          // More than A's 1000 USD: refused 4001 and recorded ABORTED_REJECTED, which holds its
          // transfer.
          const poor = one.payment('5000', '26500');
          assert.equal((await one.fxPrepare(poor)).body.errorInformation.errorCode, '4001');
          const after = one.payment('10', '26500');
          const refusal = await two.fxPrepare(after, {
            ...after.body,
            determiningTransferId: poor.transferId,
          });
          assert.equal(refusal.body.errorInformation.errorCode, '3100');
          assert.match(
            refusal.body.errorInformation.errorDescription,
            new RegExp(canonicalTransferId(poor.commitRequestId)),
          );
        },
        refuseInactive,
      );
    },
  );

  test(
    "the FXP withdraws after the dependent transfer was prepared: its error and finish are recorded over the transfer's abort, and its resend is a duplicate at once",
    { timeout: 120_000 },
    async (t) => {
      await onTwoInstances(t, async (instances) => {
        const [one, two] = instances.clients as [FxClient, FxClient];
        const p = one.payment('10', '26500');
        assert.equal((await one.fxPrepare(p)).status, 201);
        assert.equal((await one.fxAnswer(p)).status, 200);
        assert.equal((await one.prepare(p, '26500')).status, 201);
        assert.equal((await one.fxError(p)).status, 200);
        const [stored] = await instances.stores[1]!.fxTransfers([
          canonicalTransferId(p.commitRequestId),
        ]);
        assert.equal(stored?.state, TransferInternalState.ABORTED_ERROR);
        assert.equal(
          stored?.errorInformation?.errorCode,
          '5100',
          "the withdrawal's error, not the bare abort the dependent transfer wrote first",
        );
        assert.match(stored?.finishHash ?? '', /^error:/);
        // Found recorded, the resend is answered as a duplicate on either instance, with no wait
        // for another instance's write.
        for (const c of [one, two]) {
          const started = Date.now();
          assert.equal((await c.fxError(p)).status, 200);
          assert.ok(
            Date.now() - started < 5_000,
            `a duplicate, not a wait for a record that never comes (${Date.now() - started} ms)`,
          );
        }
        assert.deepEqual(await one.positions(), ['0', '0', '0', '0'], 'every reservation released');
      });
    },
  );
});
