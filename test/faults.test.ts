/**
 * The fault suite (test/support/fault-suite.ts) in a reduced form: each fault once, with a few
 * retrying clients for a few seconds, on a real three-replica cluster. `npm run faults` runs it
 * in full.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FAULTS, runScenario } from './support/fault-suite';
import { useRealCluster } from './support/real-cluster';

const cluster = useRealCluster('the fault suite');

describe('fault suite (reduced): no transfer lost, doubled or stuck, books exact', () => {
  for (const fault of FAULTS) {
    test(fault, { timeout: 300_000 }, async (t) => {
      const running = cluster.current();
      if (running === undefined) return t.skip('no TigerBeetle server binary');
      const result = await runScenario(
        fault,
        running,
        { clients: 4, durationMs: 9_000, maxTransfers: 300, ledgerTimeoutMs: 2_000 },
        (line) => t.diagnostic(line),
      );
      t.diagnostic(JSON.stringify({ ...result, problems: result.problems.slice(0, 10) }));
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
    });
  }
});
