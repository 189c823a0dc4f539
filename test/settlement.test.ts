/**
 * Settlement over HTTP: the reference's worked example through every state, refusals, abort, a
 * window with transfers RESERVED at close, GROSS, and the settlement API on a port of its own
 * (SETTLEMENT_PORT) — on the embedded ledger, and on a real cluster when a binary is installed.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger } from '../src/ports/ledger';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { freePort } from './support/net';
import { useRealCluster } from './support/real-cluster';
import { Hub } from './support/settlement-hub';
import { grossExample, workedExample } from './support/settlement-scenario';

const cluster = useRealCluster('the settlement scenarios');

async function started(
  ledger: Ledger,
  env: Record<string, string> = {},
): Promise<{ service: Service; base: string }> {
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent', ...env }), {
    ledger,
    store: new MemoryMetadataStore(),
  });
  await service.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    service,
    base: `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`,
  };
}

for (const backend of ['embedded', 'tigerbeetle'] as const) {
  describe(`settlement (${backend === 'embedded' ? 'embedded ledger' : 'real TigerBeetle cluster'})`, () => {
    test('the worked example through every state, then GROSS', { timeout: 180_000 }, async (t) => {
      if (backend === 'tigerbeetle' && cluster.current() === undefined)
        return t.skip('no TigerBeetle server binary');
      const { service, base } = await started(
        backend === 'embedded' ? new EmbeddedLedger() : cluster.ledger(),
      );
      try {
        const hub = new Hub(base);
        await workedExample(hub);
        await grossExample(hub);
      } finally {
        await service.close();
      }
    });
  });
}

test('SETTLEMENT_PORT: the /v2 API on a port of its own too, with FSPIOP errors', async () => {
  const port = await freePort();
  const { service, base } = await started(new EmbeddedLedger(), { SETTLEMENT_PORT: String(port) });
  try {
    for (const at of [base, `http://127.0.0.1:${port}`]) {
      const open = await fetch(`${at}/v2/settlementWindows?state=OPEN`);
      assert.equal(open.status, 200);
      assert.equal(((await open.json()) as { state: string }[])[0]!.state, 'OPEN');
    }
    const unknown = await fetch(`http://127.0.0.1:${port}/v2/nothing`);
    assert.equal(unknown.status, 404);
    assert.equal(
      ((await unknown.json()) as { errorInformation: { errorCode: string } }).errorInformation
        .errorCode,
      '3002',
    );
  } finally {
    await service.close();
  }
});
