import { EmbeddedLedger } from '../src/ledger/embedded';
import { fxScenarioSuite } from './support/fx-scenarios';
import { useRealCluster } from './support/real-cluster';

fxScenarioSuite('embedded ledger', () => ({ ledger: () => new EmbeddedLedger(), expiryGraceMs: 0 }));

const cluster = useRealCluster('the FX scenario suite');
fxScenarioSuite('three-replica TigerBeetle cluster', () => (cluster.current() === undefined ? undefined : { ledger: () => cluster.ledger(), expiryGraceMs: 3000 }));
