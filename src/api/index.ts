/**
 * central-ledger's API process (`node src/api/index.js` in /opt/app, as the Mojaloop charts run
 * it): the admin, FSPIOP and settlement HTTP API on PORT, configured from central-ledger's
 * config/default.json beside src/. With central-settlement's file it is central-settlement's API
 * process: the settlement API at /v2 (with /v2/health) on its PORT. The transfer topics are
 * consumed, and the expiries swept, by the handler processes (src/handlers/index.ts).
 */
import type { Config } from '../config/config';
import type { MojaloopService } from '../config/mojaloop';
import { startMojaloopProcess } from '../start';

const ROLES: Record<MojaloopService, Config['roles']> = {
  'central-ledger': { api: true, settlementApi: true, consume: [], expirySweep: false },
  'central-settlement': { api: false, settlementApi: true, consume: [], expirySweep: false },
};

startMojaloopProcess({
  entryDir: __dirname,
  roles: (service) => ({ roles: ROLES[service], notes: [] }),
});
