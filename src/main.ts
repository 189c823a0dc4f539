/**
 * Starts the service: config from the environment, then HTTP on the configured port at once,
 * serving once the ledger answers.
 */
import { listenThenServe } from './app';
import { ConfigError, loadConfig } from './config/config';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const { service, serving } = await listenThenServe(config);
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
    'central-ledger ready',
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `failed to start: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exit(1);
});
