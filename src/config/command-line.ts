/**
 * The configuration of the one-off commands (`npm run migrate`, `npm run migrate:ledger`), as the
 * service's two ways to start read theirs:
 *  - by default, central-ledger's configuration: config/default.json beside src/ (the ConfigMap
 *    Mojaloop's charts mount at /opt/app/config; dist/config after `npm run build`), rc's
 *    .cledgrc files and CLEDG_* variables, as src/api/index.js reads them. The charts'
 *    pre-install Job runs `npm run migrate` in /opt/app: dist/package.json's script, plain node.
 *  - with --own-config (the repository's scripts): our own variables and CONFIG_FILE, as
 *    src/main.js reads them.
 * A flag, not the presence of config/: the build puts our own central-ledger-format defaults
 * there, so the file is in every layout.
 */
import { join } from 'node:path';
import { loadConfig, type Config } from './config';
import { loadMojaloopConfig } from './mojaloop';

const OWN_CONFIG_FLAG = '--own-config';

export function commandConfiguration(argv: string[], options: { requireLedger: boolean }): Config {
  if (argv.includes(OWN_CONFIG_FLAG)) return loadConfig();
  const { config, unusedKeys } = loadMojaloopConfig({
    configDir: join(__dirname, '..', '..', 'config'),
    argv,
    requireLedger: options.requireLedger,
  });
  if (unusedKeys.length > 0)
    process.stdout.write(`configuration keys with no meaning here: ${unusedKeys.join(', ')}\n`);
  return config;
}

/** Runs a command's work; a failure is written to stderr and exits 1. */
export function runCommand(what: string, work: () => Promise<void>): void {
  work().catch((error: unknown) => {
    process.stderr.write(
      `${what} failed: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  });
}
