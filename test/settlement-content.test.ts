/**
 * Content settles per currency, as central-settlement's aggregation rows do: under a model of no
 * currency covering USD and EUR, the USD content of a window reads SETTLED once every USD
 * account is SETTLED, while the EUR accounts are still committed (the settlement SETTLING, the
 * window PENDING_SETTLEMENT); the window is SETTLED with the last content. Embedded ledger.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { buildService } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { Hub } from './support/settlement-hub';

test(
  "a multi-currency settlement: each currency's content SETTLED with its own accounts",
  { timeout: 120_000 },
  async () => {
    const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
      ledger: new EmbeddedLedger(),
      store: new MemoryMetadataStore(),
    });
    await service.app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const hub = new Hub(`http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`);
      for (const currency of ['USD', 'EUR']) await hub.onboardHub({ currency, defaultModel: true });
      await hub.ok('POST', '/settlementModels', {
        name: 'DEFERREDNET',
        settlementGranularity: 'NET',
        settlementInterchange: 'MULTILATERAL',
        settlementDelay: 'DEFERRED',
        currency: null,
        requireLiquidityCheck: true,
        ledgerAccountType: 'POSITION',
        autoPositionReset: true,
        settlementAccountType: 'SETTLEMENT',
      });
      for (const [short, currency] of [
        ['A', 'USD'],
        ['B', 'USD'],
        ['C', 'EUR'],
        ['D', 'EUR'],
      ] as const)
        await hub.onboard(short, '1000', '1000', currency);
      assert.equal((await hub.transfer('A', 'B', '100', 'commit', 'USD')).status, 201);
      assert.equal((await hub.transfer('C', 'D', '50', 'commit', 'EUR')).status, 201);
      const w = await hub.openWindowId();
      assert.equal(
        (await hub.v2('POST', `/settlementWindows/${w}`, { state: 'CLOSED', reason: 'r' })).status,
        200,
      );
      const created = await hub.v2('POST', '/settlements', {
        settlementModel: 'DEFERREDNET',
        reason: 'r',
        settlementWindows: [{ id: w }],
      });
      assert.equal(created.status, 200, created.text);
      const s = created.body.id as number;
      for (const state of [
        'PS_TRANSFERS_RECORDED',
        'PS_TRANSFERS_RESERVED',
        'PS_TRANSFERS_COMMITTED',
      ])
        await hub.settleAll(s, state);
      const accountsOf = async (
        currency: string,
      ): Promise<{ id: number; accounts: { id: number; state: string; reason: string }[] }[]> =>
        (await hub.v2('GET', `/settlements/${s}`)).body.participants
          .map((p: any) => ({
            id: p.id,
            accounts: p.accounts
              .filter((a: any) => a.netSettlementAmount.currency === currency)
              .map((a: any) => ({ id: a.id, state: 'SETTLED', reason: 'paid' })),
          }))
          .filter((p: { accounts: unknown[] }) => p.accounts.length > 0);
      const contentStates = async (): Promise<Record<string, string>> =>
        Object.fromEntries(
          (await hub.v2('GET', `/settlementWindows/${w}`)).body.content.map((c: any) => [
            c.currencyId,
            c.state,
          ]),
        );

      const usd = await hub.v2('PUT', `/settlements/${s}`, {
        participants: await accountsOf('USD'),
      });
      assert.equal(usd.body.state, 'SETTLING');
      assert.deepEqual(await contentStates(), { USD: 'SETTLED', EUR: 'PENDING_SETTLEMENT' });
      assert.equal(
        (await hub.v2('GET', `/settlementWindows/${w}`)).body.state,
        'PENDING_SETTLEMENT',
      );

      const eur = await hub.v2('PUT', `/settlements/${s}`, {
        participants: await accountsOf('EUR'),
      });
      assert.equal(eur.body.state, 'SETTLED');
      assert.deepEqual(await contentStates(), { USD: 'SETTLED', EUR: 'SETTLED' });
      assert.equal((await hub.v2('GET', `/settlementWindows/${w}`)).body.state, 'SETTLED');
    } finally {
      await service.close();
    }
  },
);
