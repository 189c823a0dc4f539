/** The metrics configuration (metrics.enabled, metrics.prefix) as /metrics honours it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';

import { metrics, type LedgerBatchSource } from '../../src/handlers/http/metrics';

const ledger: LedgerBatchSource = { stats: () => ({ lingerMs: 0 }), batchObservers: [] };

async function scrape(options: { enabled: boolean; prefix: string }) {
  const app = Fastify();
  try {
    await app.register(metrics, { ledger, ...options });
    return await app.inject({ method: 'GET', url: '/metrics' });
  } finally {
    await app.close();
  }
}

test("process metrics carry the configured prefix, as central-ledger's config.prefix", async () => {
  const response = await scrape({ enabled: true, prefix: 'moja_' });
  assert.equal(response.statusCode, 200);
  assert.match(response.body, /^moja_process_cpu_user_seconds_total /m);
  assert.doesNotMatch(response.body, /moja_cl_/);
  assert.match(response.body, /^ledger_batch_linger_seconds 0$/m);
});

test('disabled, /metrics is not served (central-ledger registers no metrics plugin)', async () => {
  const response = await scrape({ enabled: false, prefix: 'moja_cl_' });
  assert.equal(response.statusCode, 404);
});
