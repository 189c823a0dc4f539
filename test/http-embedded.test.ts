import { EmbeddedLedger } from '../src/ledger/embedded';
import { httpScenarioSuite } from './support/scenarios';

httpScenarioSuite('embedded ledger', () => ({ ledger: () => new EmbeddedLedger(), expiryGraceMs: 0 }));
