/**
 * Starts the service: config from the environment, then HTTP on the configured port at once,
 * serving once the ledger answers (src/start.ts).
 */
import { loadConfig } from './config/config';
import { start } from './start';

start(() => ({ config: loadConfig() }));
