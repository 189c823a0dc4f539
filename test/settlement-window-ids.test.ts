/**
 * Window ids against the ledger: a new metadata store (a wiped data dir, MySQL switched on) on a
 * ledger that already holds settlement windows must not reuse their ids, which name the ledger's
 * window cuts. The new store's OPEN window takes the id after the ledger's latest cut (the commits
 * since are its); its commits land, its close reads only its own nets, and its settlement
 * (numbered 1 again) moves money although an older settlement 1 did. Embedded ledger and a real
 * three-replica cluster.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { buildService } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger } from '../src/ports/ledger';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { useRealCluster } from './support/real-cluster';
import { Hub } from './support/settlement-hub';

const cluster = useRealCluster('the window id test');
const STATES = [
  'PS_TRANSFERS_RECORDED',
  'PS_TRANSFERS_RESERVED',
  'PS_TRANSFERS_COMMITTED',
  'SETTLED',
];

/**
 * A service on `ledger` with a metadata store of its own, fresh, onboarding the same participants
 * (the operator again).
 */
async function withFreshStore(
  ledger: Ledger,
  run: string,
  work: (hub: Hub) => Promise<void>,
): Promise<void> {
  // A generous ledger timeout: a new client registers with a cluster that may be busy (the test is
  // not about time).
  const service = await buildService(
    loadConfig({ LOG_LEVEL: 'silent', LEDGER_TIMEOUT_MS: '30000' }),
    { ledger, store: new MemoryMetadataStore() },
  );
  await service.app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const hub = new Hub(
      `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`,
      run,
    );
    await hub.onboardHub();
    for (const short of ['A', 'B']) await hub.onboard(short, '1000', '1000');
    await work(hub);
  } finally {
    await service.close();
  }
}

/** Closes the OPEN window; answers its id and the nets of its content by participant. */
async function closeOpen(hub: Hub): Promise<{ id: number; nets: Map<number, number> }> {
  const id = await hub.openWindowId();
  const closed = await hub.v2('POST', `/settlementWindows/${id}`, {
    state: 'CLOSED',
    reason: 'end of day',
  });
  assert.equal(closed.status, 200, closed.text);
  const settlement = await hub.v2('POST', '/settlements', {
    settlementModel: 'DEFERREDNETUSD',
    reason: 'r',
    settlementWindows: [{ id }],
  });
  assert.equal(settlement.status, 200, settlement.text);
  const nets = new Map<number, number>(
    settlement.body.participants.flatMap((p: any) =>
      p.accounts.map((a: any) => [a.id, a.netSettlementAmount.amount]),
    ),
  );
  for (const state of STATES) await hub.settleAll(settlement.body.id, state);
  return { id, nets };
}

for (const backend of ['embedded', 'tigerbeetle'] as const) {
  describe(`window ids (${backend === 'embedded' ? 'embedded ledger' : 'real TigerBeetle cluster'})`, () => {
    test(
      "a new metadata store continues from the ledger's windows, never reusing one",
      { timeout: 240_000 },
      async (t) => {
        if (backend === 'tigerbeetle' && cluster.current() === undefined)
          return t.skip('no TigerBeetle server binary');
        const embedded = new EmbeddedLedger();
        const ledger = (): Ledger => (backend === 'embedded' ? embedded : cluster.ledger());
        const run = Math.random().toString(16).slice(2, 8);
        let firstStore: { open: number; positions: string[] } | undefined;
        await withFreshStore(ledger(), run, async (hub) => {
          assert.equal((await hub.transfer('A', 'B', '300', 'commit')).status, 201);
          const w1 = await closeOpen(hub);
          assert.equal(w1.nets.get(await hub.accountId('A', 'POSITION')), 300);
          assert.equal((await hub.transfer('A', 'B', '100', 'commit')).status, 201);
          firstStore = { open: await hub.openWindowId(), positions: await hub.positions('A', 'B') };
        });
        assert.deepEqual(
          firstStore!.positions,
          ['100', '-100'],
          'the first settlement moved its money',
        );

        // A new store: its OPEN window is the one after the ledger's latest cut, with the 100
        // already in it.
        await withFreshStore(ledger(), run, async (hub) => {
          assert.equal(await hub.openWindowId(), firstStore!.open);
          assert.equal((await hub.transfer('B', 'A', '30', 'commit')).status, 201);
          const adopted = await closeOpen(hub);
          assert.equal(adopted.id, firstStore!.open);
          assert.equal(
            adopted.nets.get(await hub.accountId('A', 'POSITION')),
            70,
            "the window holds the old store's 100 and the new 30",
          );
          // Its settlement is numbered 1 again, yet its steps are its own: the money moved.
          assert.deepEqual(await hub.positions('A', 'B'), ['0', '0']);
        });

        // A window cut there by a store since lost: a new store takes the next id.
        const direct = ledger();
        assert.equal(await direct.latestCutWindow(), firstStore!.open, 'the close above cut it');
        const lost = firstStore!.open + 1;
        const [cutOutcome] = await direct.execute([
          { kind: 'closeWindow', window: lost, currency: 'USD' },
        ]);
        assert.equal(cutOutcome!.ok, true);
        assert.equal(await direct.latestCutWindow(), lost);
        if (backend === 'tigerbeetle') await direct.close();
        await withFreshStore(ledger(), run, async (hub) => {
          assert.equal(await hub.openWindowId(), lost + 1);
          assert.equal((await hub.transfer('A', 'B', '5', 'commit')).status, 201);
          const next = await closeOpen(hub);
          assert.equal(next.nets.get(await hub.accountId('A', 'POSITION')), 5);
          assert.equal(await hub.openWindowId(), lost + 2);
        });
      },
    );
  });
}
