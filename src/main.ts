/** Starts the service: config from the environment, then HTTP on the configured port. */
import { buildService } from './app';
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
  const service = await buildService(config);
  const shutdown = (signal: string): void => {
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
  await service.app.listen({ host: config.http.host, port: config.http.port });
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
