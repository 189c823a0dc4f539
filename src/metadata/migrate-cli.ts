/**
 * `npm run migrate`: brings the MySQL metadata schema up to date with the configured database,
 * read as config/command-line.ts says (the charts' pre-install Job runs it in /opt/app).
 */
import { commandConfiguration, runCommand } from '../config/command-line';
import { MySqlMetadataStore } from './mysql';

runCommand('migration', async () => {
  // Migrating needs no ledger: the embedded ledger's refusal is the service's, not this job's.
  const config = commandConfiguration(process.argv.slice(2), { requireLedger: false });
  const store = new MySqlMetadataStore(config.mysql);
  try {
    const applied = await store.migrate();
    process.stdout.write(
      applied.length === 0 ? 'schema already up to date\n' : `applied: ${applied.join(', ')}\n`,
    );
  } finally {
    await store.close();
  }
});
