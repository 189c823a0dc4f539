/**
 * The fault suite in full (test/support/fault-suite.ts): a three-replica cluster (each replica in
 * a network namespace of its own where permitted, test/support/netns.ts), 16 retrying clients,
 * each fault in turn (the partitions: a backup or the primary cut off for 20 s, the service for
 * 15 s, the primary flapping for 20 s, skipped loudly without namespaces; the MySQL ones, two
 * instances on a MariaDB down for 20 s, where MariaDB is installed; the ledger ones: every replica
 * stopped and the service restarted meanwhile, on no ledger for 8 s or on a cluster formatted anew
 * at their addresses for 15 s), then the table; then Kafka
 * going away under load (test/support/kafka-faults.ts: the broker killed and restarted, a
 * rebalance mid-batch) on a real broker and the same cluster, skipped loudly without one. Exits 1
 * when a transfer is lost, doubled or stuck, or the books are off.
 *
 *   npm run faults [-- --clients 16 --seconds 30 --max-transfers 5000 --kafka-rate 50]
 *   npm run faults -- --kafka-only
 */
import { TigerBeetleLedger } from '../src/ledger/tigerbeetle';
import { mariaDbUnavailable, startMariaDb } from '../test/support/mariadb';
import { kafkaAvailable, startKafka } from '../test/support/kafka-broker';
import {
  KAFKA_FAULTS,
  KAFKA_RESULT_HEADER,
  kafkaResultTable,
  runKafkaFault,
  type KafkaFaultResult,
} from '../test/support/kafka-faults';
import { flags, runMain, table } from './common';
import {
  FAULTS,
  LEDGER_FAULTS,
  MYSQL_FAULTS,
  PARTITION_FAULTS,
  RESULT_HEADER,
  resultTable,
  runScenario,
  startFaultCluster,
  type Fault,
  type PartitionFault,
  type ScenarioResult,
  type SuiteOptions,
} from '../test/support/fault-suite';

/** How long the MySQL faults keep the database down. */
const MYSQL_OUTAGE_MS = 20_000;
/**
 * How long the ledger faults last: the service waiting for replicas that start only then (one
 * took ~9.5 s to listen), or refusing the foreign ledger.
 */
const LEDGER_FAULT_MS: Record<(typeof LEDGER_FAULTS)[number], number> = {
  'ledger late': 8_000,
  'foreign ledger': 15_000,
};
/** How long each partition lasts. */
const PARTITION_MS: Record<PartitionFault, number> = {
  'backup cut off': 20_000,
  'primary cut off': 20_000,
  'service cut off': 15_000,
  'primary flapping': 20_000,
};

runMain(async () => {
  const args = flags(process.argv.slice(2));
  const options = {
    clients: args.number('--clients', 16, true),
    durationMs: args.number('--seconds', 30, true) * 1000,
    maxTransfers: args.number('--max-transfers', 5000, true),
    ledgerTimeoutMs: 5000,
  };
  const print = (line: string): void => void process.stdout.write(`${line}\n`);
  const suite = await startFaultCluster();
  const { cluster, mesh } = suite;
  if (suite.withoutMesh !== undefined)
    print(`\n*** SKIPPED: the network partitions: ${suite.withoutMesh}. ***`);
  const withoutMariaDb = mariaDbUnavailable();
  if (withoutMariaDb !== undefined) print(`MySQL faults skipped: ${withoutMariaDb}`);
  const mariadb = withoutMariaDb === undefined ? await startMariaDb() : undefined;
  const results: ScenarioResult[] = [];
  const kafkaResults: KafkaFaultResult[] = [];
  try {
    if (!args.has('--kafka-only')) {
      const runs = FAULTS.map((fault): [Fault, Partial<SuiteOptions>] => [fault, {}]);
      if (mesh !== undefined)
        for (const fault of PARTITION_FAULTS)
          runs.push([fault, { faultMs: PARTITION_MS[fault], mesh }]);
      for (const fault of LEDGER_FAULTS)
        runs.push([fault, { faultMs: LEDGER_FAULT_MS[fault], ...(mesh && { mesh }) }]);
      if (mariadb !== undefined)
        for (const fault of MYSQL_FAULTS) runs.push([fault, { faultMs: MYSQL_OUTAGE_MS, mariadb }]);
      for (const [fault, faultOptions] of runs)
        results.push(await runScenario(fault, cluster, { ...options, ...faultOptions }, print));
    }
    const why = kafkaAvailable();
    if (why === undefined) {
      const broker = await startKafka();
      const ledger = new TigerBeetleLedger({
        clusterId: cluster.clusterId,
        replicaAddresses: cluster.addresses,
      });
      try {
        const kafkaOptions = {
          durationMs: options.durationMs,
          ratePerSecond: args.number('--kafka-rate', 50, true),
          partitions: 4,
        };
        for (const fault of KAFKA_FAULTS)
          kafkaResults.push(await runKafkaFault(fault, broker, ledger, kafkaOptions, print));
      } finally {
        await ledger.close();
        await broker.stop();
      }
    } else print(`\n*** SKIPPED: the Kafka faults: ${why}. ***`);
  } finally {
    await Promise.all([suite.stop(), mariadb?.stop()]);
  }
  if (results.length > 0) print(`\n${table(RESULT_HEADER, resultTable(results))}`);
  if (kafkaResults.length > 0)
    print(`\n${table(KAFKA_RESULT_HEADER, kafkaResultTable(kafkaResults))}`);
  for (const r of results)
    if (Object.keys(r.failures).length > 0)
      print(`${r.scenario}: answers of 5xx ${JSON.stringify(r.failures)}`);
  for (const r of [...results, ...kafkaResults])
    for (const problem of r.problems.slice(0, 20)) print(`${r.scenario}: ${problem}`);
  // A problem besides those counted: what a ledger fault found (its /health, a foreign write).
  const wrong = (r: ScenarioResult | KafkaFaultResult): boolean =>
    r.lost + r.doubled + r.stuck > 0 || !r.booksOk || r.problems.length > 0;
  if ([...results, ...kafkaResults].some(wrong)) process.exitCode = 1;
}, 'fault suite');
