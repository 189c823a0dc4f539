/**
 * `npm run migrate`: brings the MySQL metadata schema up to date with the configured database.
 *
 * Which database, as the service's two ways to start say it:
 *  - by default, central-ledger's configuration: config/default.json beside src/ (the ConfigMap
 *    Mojaloop's charts mount at /opt/app/config; dist/config after `npm run build`), rc's
 *    .cledgrc files and CLEDG_* variables, as src/api/index.js reads them. The charts'
 *    pre-install Job runs `npm run migrate` in /opt/app: dist/package.json's script, plain node.
 *  - with --own-config (the repository's `npm run migrate`): our own variables and CONFIG_FILE,
 *    as src/main.js reads them.
 * A flag, not the presence of config/: the build puts our own central-ledger-format defaults
 * there, so the file is in every layout.
 */
import { join } from 'node:path';
import { loadConfig, type Config } from '../config/config';
import { loadMojaloopConfig } from '../config/mojaloop';
import { MySqlMetadataStore } from './mysql';

const OWN_CONFIG_FLAG = '--own-config';

function configuration(argv: string[]): Config {
  if (argv.includes(OWN_CONFIG_FLAG)) return loadConfig();
  const { config, unusedKeys } = loadMojaloopConfig({
    configDir: join(__dirname, '..', '..', 'config'),
    argv,
    // Migrating needs no ledger: the embedded ledger's refusal is the service's, not this job's.
    requireLedger: false,
  });
  if (unusedKeys.length > 0)
    process.stdout.write(`configuration keys with no meaning here: ${unusedKeys.join(', ')}\n`);
  return config;
}

async function main(): Promise<void> {
  const config = configuration(process.argv.slice(2));
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
