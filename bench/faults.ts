/**
 * The fault suite in full (test/support/fault-suite.ts): a three-replica cluster on 127.0.0.1, 16
 * retrying clients, each fault in turn (the MySQL ones, two instances on a MariaDB down for 20 s,
 * where MariaDB is installed), then the table. Exits 1 when a transfer is lost, doubled or stuck,
 * or the books are off.
 *
 *   npm run faults [-- --clients 16 --seconds 30 --max-transfers 5000]
 */
import { mariaDbUnavailable, startMariaDb } from '../test/support/mariadb';
import { startCluster } from '../test/support/tigerbeetle-cluster';
import { flags, runMain, table } from './common';
import {
  FAULTS,
  MYSQL_FAULTS,
  RESULT_HEADER,
  resultTable,
  runScenario,
  type ScenarioResult,
} from '../test/support/fault-suite';

/** How long the MySQL faults keep the database down. */
const MYSQL_OUTAGE_MS = 20_000;

runMain(async () => {
  const args = flags(process.argv.slice(2));
  const options = {
    clients: args.number('--clients', 16, true),
    durationMs: args.number('--seconds', 30, true) * 1000,
    maxTransfers: args.number('--max-transfers', 5000, true),
    ledgerTimeoutMs: 5000,
  };
  const cluster = await startCluster({ replicas: 3 });
  const withoutMariaDb = mariaDbUnavailable();
  if (withoutMariaDb !== undefined)
    process.stdout.write(`MySQL faults skipped: ${withoutMariaDb}\n`);
  const mariadb = withoutMariaDb === undefined ? await startMariaDb() : undefined;
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  const results: ScenarioResult[] = [];
  try {
    for (const fault of FAULTS) results.push(await runScenario(fault, cluster, options, log));
    if (mariadb !== undefined)
      for (const fault of MYSQL_FAULTS)
        results.push(
          await runScenario(fault, cluster, { ...options, faultMs: MYSQL_OUTAGE_MS, mariadb }, log),
        );
  } finally {
    await Promise.all([cluster.stop(), mariadb?.stop()]);
  }
  process.stdout.write(`\n${table(RESULT_HEADER, resultTable(results))}\n`);
  for (const r of results) {
    if (Object.keys(r.failures).length > 0)
      process.stdout.write(`${r.scenario}: answers of 5xx ${JSON.stringify(r.failures)}\n`);
  }
  for (const r of results)
    for (const problem of r.problems.slice(0, 20))
      process.stdout.write(`${r.scenario}: ${problem}\n`);
  if (results.some((r) => r.lost + r.doubled + r.stuck > 0 || !r.booksOk)) process.exitCode = 1;
}, 'fault suite');
