/**
 * `npm run migrate:ledger`: migrates a TigerBeetle cluster written under the ledger model before
 * the 3-event one (src/ledger/tigerbeetle-migration.ts; the procedure: docs/operations.md,
 * "Upgrading to the 3-event ledger model"), its configuration read as config/command-line.ts says.
 * Every instance of the version before must be stopped first. It refuses, writing nothing, while
 * transfers are still reserved or the OPEN window holds commits of the old model; run again after
 * a failure, it finishes what the failed run began. The service refuses to start on the cluster
 * until it has run.
 */
import { createLedger, createMetadataStore } from './app';
import { commandConfiguration, runCommand } from './config/command-line';
import { HUB_NAME } from './domain/participants/service';
import { TigerBeetleLedger } from './ledger/tigerbeetle';

runCommand('ledger migration', async () => {
  const config = commandConfiguration(process.argv.slice(2), { requireLedger: true });
  if (config.ledger.backend !== 'tigerbeetle')
    throw new Error(
      'the embedded ledger has no migration: a journal of the model before is refused at start ' +
        '(the embedded ledger is for development: start with an empty DATA_DIR)',
    );
  const store = await createMetadataStore(config);
  const ledger = await createLedger(config);
  try {
    if (!(ledger instanceof TigerBeetleLedger)) throw new Error('not a TigerBeetle ledger');
    const [participants, hubs, windows] = await Promise.all([
      store.participants(),
      store.hubAccounts(),
      store.settlementWindows(),
    ]);
    const closing = windows.filter((w) => w.state === 'PROCESSING').map((w) => w.id);
    if (closing.length > 0)
      throw new Error(
        `settlement windows ${closing.join(', ')} are still closing: start the version before ` +
          'once (it finishes them), stop it, then run again',
      );
    const report = await ledger.migrateFromOldModel({
      owners: participants
        .filter((p) => p.name !== HUB_NAME)
        .flatMap((p) => p.currencies.map((c) => ({ participant: p.name, currency: c.currency }))),
      hubCurrencies: [...new Set(hubs.map((h) => h.currency))],
      openWindow: (await store.openSettlementWindow()).id,
    });
    process.stdout.write(
      report.alreadyMigrated
        ? 'the ledger is written under the 3-event model already: nothing to do\n'
        : `migrated ${report.participants} participant accounts (${report.debtors} owing: CAP ` +
            `closed), the new windows start after window ${report.cutWindow}\n`,
    );
  } finally {
    await ledger.close();
    await store.close();
  }
});
