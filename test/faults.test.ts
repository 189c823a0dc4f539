/**
 * The fault suite (test/support/fault-suite.ts) in a reduced form: each fault once, with a few
 * retrying clients for a few seconds, on a real three-replica cluster (and, for the MySQL faults,
 * two instances on a MariaDB of the file's own, down for 8 s); of the partitions (the cluster on
 * a mesh of network namespaces), a backup and the service cut off for 8 s; of the ledger faults,
 * the service restarted before its replicas, started 5 s later (the foreign ledger is
 * `npm run faults` only: test/ledger-identity-tigerbeetle.test.ts covers it without load).
 * `npm run faults` runs it in full.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  FAULTS,
  MYSQL_ANSWER_BOUND_MS,
  MYSQL_FAULTS,
  runScenario,
  type Fault,
  startFaultCluster,
  type FaultCluster,
  type PartitionFault,
  type ScenarioResult,
} from './support/fault-suite';
import { useMariaDb } from './support/mariadb';
import { tigerbeetleBinary } from './support/tigerbeetle-cluster';

const mariadb = useMariaDb('the fault suite on MySQL');
let suite: FaultCluster | undefined;
before(async () => {
  if (tigerbeetleBinary() === undefined) {
    process.stderr.write(
      '\n*** SKIPPED: the fault suite against a real TigerBeetle cluster: no server binary ($TIGERBEETLE_BIN or tigerbeetle on PATH). ***\n\n',
    );
    return;
  }
  suite = await startFaultCluster();
  if (suite.withoutMesh !== undefined)
    process.stderr.write(
      `\n*** SKIPPED: the fault suite's network partitions: ${suite.withoutMesh}. ***\n\n`,
    );
});
after(async () => {
  await suite?.stop();
});

/** The partitions the reduced suite runs (the primary's take a view change: `npm run faults`). */
const PARTITIONS: readonly PartitionFault[] = ['backup cut off', 'service cut off'];
/**
 * Past LEDGER_TIMEOUT_MS, how much later an answer may come in a partition (the request's work
 * besides its ledger call, on a busy 2-core machine).
 */
const PARTITION_ANSWER_MARGIN_MS = 1_000;

const REDUCED = { clients: 4, durationMs: 9_000, maxTransfers: 300, ledgerTimeoutMs: 2_000 };

function assertExact(result: ScenarioResult): void {
  assert.ok(result.duringFault > 0, 'transfers were in flight while the fault lasted');
  assert.deepEqual(
    {
      lost: result.lost,
      doubled: result.doubled,
      stuck: result.stuck,
      booksOk: result.booksOk,
    },
    { lost: 0, doubled: 0, stuck: 0, booksOk: true },
    result.problems.slice(0, 10).join('\n'),
  );
}

/**
 * The faults whose 5xx must all be FSPIOP errors, the service answering again by itself, with
 * the bound on the fault.
 */
const BOUNDED: readonly { fault: Fault; faultMs: number }[] = [
  ...PARTITIONS.map((fault) => ({ fault, faultMs: 8_000 })),
  { fault: 'ledger late', faultMs: 5_000 },
];

describe('fault suite (reduced): no transfer lost, doubled or stuck, books exact', () => {
  for (const fault of FAULTS) {
    test(fault, { timeout: 300_000 }, async (t) => {
      const running = suite?.cluster;
      if (running === undefined) return t.skip('no TigerBeetle server binary');
      const result = await runScenario(fault, running, REDUCED, (line) => t.diagnostic(line));
      t.diagnostic(JSON.stringify({ ...result, problems: result.problems.slice(0, 10) }));
      assertExact(result);
    });
  }
  for (const fault of MYSQL_FAULTS) {
    test(
      `${fault}: two instances answer 2003 meanwhile and recover by themselves`,
      {
        timeout: 300_000,
      },
      async (t) => {
        const [running, database] = [suite?.cluster, mariadb.current()];
        if (running === undefined || database === undefined)
          return t.skip('no TigerBeetle server binary or no MariaDB');
        const result = await runScenario(
          fault,
          running,
          { ...REDUCED, faultMs: 8_000, mariadb: database },
          (line) => t.diagnostic(line),
        );
        t.diagnostic(JSON.stringify({ ...result, problems: result.problems.slice(0, 10) }));
        assertExact(result);
        assert.deepEqual(
          Object.keys(result.failures).filter((failure) => failure !== 'HTTP 503 2003'),
          [],
          'every answer the outage caused was 503 with FSPIOP error 2003',
        );
        assert.ok(Number.isFinite(result.recoverSeconds), 'both instances answered again');
        assert.ok(
          result.maxAnswerMs <= MYSQL_ANSWER_BOUND_MS,
          `every answer within the instances' MySQL timeouts: the slowest ${result.slowestAnswer}`,
        );
      },
    );
  }
  for (const { fault, faultMs } of BOUNDED) {
    test(
      `${fault}: every answer within LEDGER_TIMEOUT_MS, recovered by itself`,
      { timeout: 300_000 },
      async (t) => {
        const mesh = suite?.mesh;
        if (suite === undefined) return t.skip('no TigerBeetle server binary');
        const partition = (PARTITIONS as readonly Fault[]).includes(fault);
        if (partition && mesh === undefined) return t.skip(suite.withoutMesh!);
        const result = await runScenario(
          fault,
          suite.cluster,
          { ...REDUCED, faultMs, ...(mesh && { mesh }) },
          (line) => t.diagnostic(line),
        );
        t.diagnostic(JSON.stringify({ ...result, problems: result.problems.slice(0, 10) }));
        assertExact(result);
        // With the ledger faults, also what the fault found: /health not DOWN with its reason.
        assert.deepEqual(result.problems, []);
        assert.deepEqual(
          Object.keys(result.failures).filter(
            (failure) => !/^HTTP 5\d\d \d{4}$/.test(failure) && failure !== 'no answer',
          ),
          [],
          'every answer of 5xx was an FSPIOP error',
        );
        assert.ok(Number.isFinite(result.recoverSeconds), 'the service answered again');
        assert.ok(
          result.maxAnswerMs <= REDUCED.ledgerTimeoutMs + PARTITION_ANSWER_MARGIN_MS,
          `every answer within LEDGER_TIMEOUT_MS: the slowest ${result.slowestAnswer}`,
        );
      },
    );
  }
});
