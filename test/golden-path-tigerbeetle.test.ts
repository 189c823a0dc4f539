import { useRealCluster } from './support/real-cluster';
import { goldenPathSuite } from './support/golden-path';

const cluster = useRealCluster('the golden path compatibility suite', 1);

// TigerBeetle releases an expired reservation on its next pulse: allow it a little beyond.
goldenPathSuite('one-replica TigerBeetle cluster', () =>
  cluster.current() === undefined
    ? undefined
    : { ledger: () => cluster.ledger(), expiryGraceMs: 3000 },
);
