/**
 * The fault suite (test/support/fault-suite.ts) in a reduced form: each fault once, with a few
 * retrying clients for a few seconds, on a real three-replica cluster (and, for the MySQL faults,
 * two instances on a MariaDB of the file's own, down for 8 s). `npm run faults` runs it in full.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FAULTS,
  MYSQL_ANSWER_BOUND_MS,
  MYSQL_FAULTS,
  runScenario,
  type ScenarioResult,
} from './support/fault-suite';
import { useMariaDb } from './support/mariadb';
import { useRealCluster } from './support/real-cluster';

const cluster = useRealCluster('the fault suite');
const mariadb = useMariaDb('the fault suite on MySQL');

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

describe('fault suite (reduced): no transfer lost, doubled or stuck, books exact', () => {
  for (const fault of FAULTS) {
    test(fault, { timeout: 300_000 }, async (t) => {
      const running = cluster.current();
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
        const [running, database] = [cluster.current(), mariadb.current()];
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
          `every answer within the instances' MySQL timeouts: the slowest ${result.maxAnswerMs} ms`,
        );
      },
    );
  }
});
