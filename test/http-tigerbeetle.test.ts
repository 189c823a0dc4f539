import { useRealCluster } from './support/real-cluster';
import { httpScenarioSuite } from './support/scenarios';

const cluster = useRealCluster('the HTTP scenario suite');

// TigerBeetle expires a reservation at its cluster timestamp plus whole seconds of timeout,
// and releases it on its next pulse: allow it a little beyond the expiration.
httpScenarioSuite('three-replica TigerBeetle cluster', () =>
  cluster.current() === undefined
    ? undefined
    : { ledger: () => cluster.ledger(), expiryGraceMs: 3000 },
);
