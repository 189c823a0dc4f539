import { EmbeddedLedger } from '../src/ledger/embedded';
import { goldenPathSuite } from './support/golden-path';

goldenPathSuite('embedded ledger', () => ({
  ledger: () => new EmbeddedLedger(),
  expiryGraceMs: 0,
}));
