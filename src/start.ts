/**
 * Starting a process, for every entry point (src/main.ts, and central-ledger's src/api/index.ts
 * and src/handlers/index.ts): the configuration (a ConfigError ends the process with its message
 * and exit code 2), HTTP listening at once and serving once the ledger answers (listenThenServe),
 * SIGINT and SIGTERM closing it, and the "ready" line.
 */
import { join } from 'node:path';
import { listenThenServe } from './app';
import { ConfigError, type Config } from './config/config';
import { loadMojaloopConfig, type MojaloopService } from './config/mojaloop';

/** A line logged once at start, when the logger exists (pino's argument order). */
export interface Notice {
  fields: Record<string, unknown>;
  message: string;
}

export interface Startup {
  config: Config;
  /** Logged before the ledger is waited for: what the configuration left unused, the roles. */
  notices?: Notice[];
  /** What the ready line calls this process; central-ledger unless said. */
  service?: string;
}

/**
 * Starts the process `startup` describes; `startup` throws ConfigError for a configuration (or a
 * command line) it refuses. Any other failure to start ends the process with exit code 1.
 */
export function start(startup: () => Startup): void {
  run(startup).catch((error: unknown) => {
    process.stderr.write(
      `failed to start: ${error instanceof Error ? error.stack : String(error)}\n`,
    );
    process.exit(1);
  });
}

export interface MojaloopProcess {
  /** The entry point's directory: the configuration is in its ../../config, as central-ledger's. */
  entryDir: string;
  /** rc's command-line flags; by default the process's arguments. */
  argv?: string[];
  /** What the process runs, once it is known which service the configuration is of. */
  roles(service: MojaloopService): { roles: Config['roles']; notes: string[] };
}

/**
 * Starts a process through central-ledger's (or central-settlement's) entry points: configured as
 * they are (config/mojaloop.ts), running the roles its command asks for. The roles, the notes and
 * the configuration keys left unused are logged once.
 */
export function startMojaloopProcess(entry: MojaloopProcess): void {
  start(() => {
    const { service, config, unusedKeys } = loadMojaloopConfig({
      configDir: join(entry.entryDir, '..', '..', 'config'),
      ...(entry.argv === undefined ? {} : { argv: entry.argv }),
    });
    const { roles, notes } = entry.roles(service);
    const unused =
      unusedKeys.length === 0
        ? []
        : [{ fields: { keys: unusedKeys }, message: 'configuration keys with no meaning here' }];
    return {
      config: { ...config, roles },
      service,
      notices: [
        { fields: { roles }, message: `${service}: the roles of this process` },
        ...notes.map((message) => ({ fields: {}, message })),
        ...unused,
      ],
    };
  });
}

async function run(startup: () => Startup): Promise<void> {
  let started;
  try {
    started = startup();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const { config, notices = [], service: name = 'central-ledger' } = started;
  const { service, serving } = await listenThenServe(config);
  for (const { fields, message } of notices) service.app.log.info(fields, message);
  let shuttingDown = false;
  const shutdown = (signal: string): void => {
    shuttingDown = true;
    service.app.log.info({ signal }, 'shutting down');
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        service.app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  try {
    await serving;
  } catch (error) {
    // A shutdown while the ledger was awaited stops the wait: not a failed start.
    if (shuttingDown) return;
    throw error;
  }
  service.app.log.info(
    { ledger: config.ledger.backend, jmeter: config.jmeter.enabled },
    `${name} ready`,
  );
}
