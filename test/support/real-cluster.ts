/**
 * One real three-replica TigerBeetle cluster per test file, or a loud skip where no server
 * binary is installed (see README: "Tests against a real cluster").
 */
import { after, before } from 'node:test';
import { TigerBeetleLedger } from '../../src/ledger/tigerbeetle';
import { startCluster, tigerbeetleBinary, type RunningCluster } from './tigerbeetle-cluster';

export interface ClusterHandle {
  /** Undefined when no binary is installed: the tests using it skip. */
  current(): RunningCluster | undefined;
  ledger(): TigerBeetleLedger;
}

/**
 * `replicas`: 1 for tests that need no replication (they save the memory of two replicas); default
 * 3, or $TB_TEST_REPLICAS=1.
 */
export function useRealCluster(what: string, replicas?: 1 | 3): ClusterHandle {
  let cluster: RunningCluster | undefined;
  before(async () => {
    if (tigerbeetleBinary() === undefined) {
      process.stderr.write(
        `\n*** SKIPPED: ${what} against a real TigerBeetle cluster: no server binary ($TIGERBEETLE_BIN or tigerbeetle on PATH). ***\n\n`,
      );
      return;
    }
    cluster = await startCluster({
      replicas: replicas ?? (process.env['TB_TEST_REPLICAS'] === '1' ? 1 : 3),
    });
  });
  after(async () => {
    await cluster?.stop();
  });
  return {
    current: () => cluster,
    ledger: () => {
      if (cluster === undefined) throw new Error('no cluster');
      return new TigerBeetleLedger({
        clusterId: cluster.clusterId,
        replicaAddresses: cluster.addresses,
      });
    },
  };
}
