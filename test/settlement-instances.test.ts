/**
 * Two instances on one ledger and one metadata store: one closes a window while the other still
 * believes it OPEN. A commit of the other in a currency the window never had (onboarded after the
 * close) must land in the OPEN window, not in the closed one, where no settlement would ever take
 * it. Embedded ledger.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { Hub } from './support/settlement-hub';

test(
  'a commit in a currency new since the close, by an instance that cached the closed window, lands in the OPEN one',
  { timeout: 120_000 },
  async () => {
    const ledger = new EmbeddedLedger();
    const store = new MemoryMetadataStore();
    const services: Service[] = [];
    try {
      const hubs: Hub[] = [];
      const run = Math.random().toString(16).slice(2, 8);
      for (let i = 0; i < 2; i++) {
        const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger, store });
        services.push(service);
        await service.app.listen({ host: '127.0.0.1', port: 0 });
        hubs.push(
          new Hub(`http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`, run),
        );
      }
      const [one, two] = hubs as [Hub, Hub];
      await one.onboardHub({ currency: 'USD' });
      for (const short of ['A', 'B']) await one.onboard(short, '1000', '1000', 'USD');
      assert.equal(
        (await two.transfer('A', 'B', '300', 'commit', 'USD')).status,
        201,
        'instance 2 now holds window 1 as OPEN',
      );
      const w1 = await one.openWindowId();
      assert.equal(
        (
          await one.v2('POST', `/settlementWindows/${w1}`, {
            state: 'CLOSED',
            reason: 'end of day',
          })
        ).status,
        200,
      );
      const w2 = await one.openWindowId();

      await one.onboardHub({ currency: 'EUR' });
      for (const short of ['C', 'D']) await one.onboard(short, '1000', '1000', 'EUR');
      assert.equal((await two.transfer('C', 'D', '100', 'commit', 'EUR')).status, 201);

      assert.deepEqual(
        await ledger.windowMoved(w1, ['EUR']),
        [false],
        'nothing landed in the closed window',
      );
      assert.deepEqual(await ledger.windowMoved(w2, ['EUR']), [true]);
      assert.deepEqual(
        (await one.v2('GET', `/settlementWindows/${w1}`)).body.content.map(
          (c: { currencyId: string }) => c.currencyId,
        ),
        ['USD'],
      );
      const closed = await one.v2('POST', `/settlementWindows/${w2}`, {
        state: 'CLOSED',
        reason: 'end of day',
      });
      assert.equal(closed.status, 200, closed.text);
      assert.deepEqual(
        (await one.v2('GET', `/settlementWindows/${w2}`)).body.content.map(
          (c: { currencyId: string }) => c.currencyId,
        ),
        ['EUR'],
        'settled with window 2',
      );
    } finally {
      for (const service of services) await service.close();
    }
  },
);
