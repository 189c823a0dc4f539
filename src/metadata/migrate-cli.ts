/** `npm run migrate`: brings the MySQL metadata schema up to date with the configured database. */
import { loadConfig } from '../config/config';
import { MySqlMetadataStore } from './mysql';

async function main(): Promise<void> {
  const config = loadConfig();
  const store = new MySqlMetadataStore(config.mysql);
  try {
    const applied = await store.migrate();
    process.stdout.write(
      applied.length === 0 ? 'schema already up to date\n' : `applied: ${applied.join(', ')}\n`,
    );
  } finally {
    await store.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `migration failed: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
