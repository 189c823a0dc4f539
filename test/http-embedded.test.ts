import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildService } from '../src/app';
import { loadConfig } from '../src/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger } from '../src/ledger/ledger';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { httpScenarioSuite } from './support/scenarios';

httpScenarioSuite('embedded ledger', () => ({ ledger: () => new EmbeddedLedger(), expiryGraceMs: 0 }));

test('a ledger that does not answer: 2003 within LEDGER_TIMEOUT_MS, /health 502, /live 200 (no restart), never a hang', async () => {
  const silent = new Promise<never>(() => {});
  const unresponsive: Ledger = { name: 'tigerbeetle', execute: () => silent, balances: () => silent, hubBalances: () => silent, transferStates: () => silent, close: async () => {} };
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent', LEDGER_TIMEOUT_MS: '100' }), { ledger: unresponsive, store: new MemoryMetadataStore() });
  try {
    const started = Date.now();
    const response = await service.app.inject({ method: 'POST', url: '/participants/Hub/accounts', payload: { currency: 'USD', type: 'HUB_RECONCILIATION' } });
    assert.equal(response.statusCode, 500);
    assert.equal(JSON.parse(response.body).errorInformation.errorCode, '2003');
    assert.ok(Date.now() - started < 2000);
    const health = await service.app.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 502);
    assert.equal(JSON.parse(health.body).services[0].status, 'DOWN');
    // Restarting this process would not bring the ledger back: liveness stays OK.
    const live = await service.app.inject({ method: 'GET', url: '/live' });
    assert.equal(live.statusCode, 200);
    assert.deepEqual(JSON.parse(live.body), { status: 'OK' });
  } finally {
    await service.close();
  }
});
