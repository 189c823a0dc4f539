import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { JournalMetadataStore } from '../src/metadata/journal';
import { fxScenarioSuite } from './support/fx-scenarios';
import { useRealCluster } from './support/real-cluster';

fxScenarioSuite('embedded ledger', () => ({
  ledger: () => new EmbeddedLedger(),
  expiryGraceMs: 0,
}));
// Final conversions and transfers leave memory for the journal: every answer must stay the same.
fxScenarioSuite('embedded ledger, journalled metadata', () => ({
  ledger: () => new EmbeddedLedger(),
  store: () => JournalMetadataStore.open(mkdtempSync(join(tmpdir(), 'fx-journal-'))),
  expiryGraceMs: 0,
}));

const cluster = useRealCluster('the FX scenario suite');
fxScenarioSuite('three-replica TigerBeetle cluster', () =>
  cluster.current() === undefined
    ? undefined
    : { ledger: () => cluster.ledger(), expiryGraceMs: 3000 },
);
