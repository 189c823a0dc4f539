/**
 * An abort after a commit step the ledger made but the metadata never recorded (its answer lost:
 * a crash, a timeout, another instance's PUT in flight): the ledger wins. The abort is refused as
 * central-settlement refuses one after a commit, the settlement reads the account COMMITTED, and
 * finishing it leaves positions exact instead of moving the sender's money twice. And an abort
 * and a PUT committing, in flight at once on one instance, held in either order
 * (test/support/settlement-race.ts): the changes take turns, so the abort either finds the commit
 * saved and is refused, or is saved with no commit step in the ledger and the PUT refused.
 * And a change whose ledger request timed out (its turn over) and landed after the other change
 * (test/support/settlement-race.ts LateRequest), its decision or its steps, in either order: the
 * ledger's decision keeps commit and abort apart, metadata and ledger agree, money moves once.
 * Embedded ledger and a real three-replica cluster.
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
import { Hub, errorCode } from './support/settlement-hub';
import {
  LateRequest,
  SettlementRace,
  abortRacingCommit,
  lateRequestAcrossChange,
} from './support/settlement-race';
import { replacing } from './support/replacing-ledger';

const cluster = useRealCluster('the settlement abort test');

/**
 * The ledger, whose next execute of settlement steps is applied but answered with an error once
 * `loseNext` is set (the settlement's decision, a request of its own before, is answered).
 */
function losingAnswers(inner: Ledger): { ledger: Ledger; loseNext: () => void } {
  let lose = false;
  const ledger = replacing(inner, {
    execute: async (commands, deadline) => {
      const outcomes = await inner.execute(commands, deadline);
      if (lose && commands.some((c) => c.kind === 'adjustPosition')) {
        lose = false;
        throw new Error("the ledger's answer was lost");
      }
      return outcomes;
    },
  });
  return { ledger, loseNext: () => (lose = true) };
}

for (const backend of ['embedded', 'tigerbeetle'] as const) {
  describe(`settlement abort (${backend === 'embedded' ? 'embedded ledger' : 'real TigerBeetle cluster'})`, () => {
    test(
      'a commit step made in the ledger but not recorded: the abort is refused, the account reads COMMITTED, money moves once',
      { timeout: 180_000 },
      async (t) => {
        if (backend === 'tigerbeetle' && cluster.current() === undefined)
          return t.skip('no TigerBeetle server binary');
        const inner = backend === 'embedded' ? new EmbeddedLedger() : cluster.ledger();
        const { ledger, loseNext } = losingAnswers(inner);
        const service = await buildService(
          loadConfig({ LOG_LEVEL: 'silent', LEDGER_TIMEOUT_MS: '30000' }),
          { ledger, store: new MemoryMetadataStore() },
        );
        await service.app.listen({ host: '127.0.0.1', port: 0 });
        try {
          const hub = new Hub(
            `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`,
          );
          await hub.onboardHub();
          for (const short of ['A', 'B']) await hub.onboard(short, '1000', '1000');
          assert.equal((await hub.transfer('A', 'B', '300', 'commit')).status, 201);
          const w1 = await hub.openWindowId();
          assert.equal(
            (
              await hub.v2('POST', `/settlementWindows/${w1}`, {
                state: 'CLOSED',
                reason: 'end of day',
              })
            ).status,
            200,
          );
          const created = await hub.v2('POST', '/settlements', {
            settlementModel: 'DEFERREDNETUSD',
            reason: 'r',
            settlementWindows: [{ id: w1 }],
          });
          assert.equal(created.status, 200, created.text);
          const s1 = created.body.id as number;
          for (const state of ['PS_TRANSFERS_RECORDED', 'PS_TRANSFERS_RESERVED'])
            await hub.settleAll(s1, state);
          assert.deepEqual(await hub.positions('A', 'B'), ['300', '0']);

          // The commit step of A (the sender) is made, its answer lost: nothing recorded.
          const settlement = (await hub.v2('GET', `/settlements/${s1}`)).body;
          const participants = settlement.participants.map(
            (p: { id: number; accounts: { id: number }[] }) => ({
              id: p.id,
              accounts: p.accounts.map((a) => ({
                id: a.id,
                state: 'PS_TRANSFERS_COMMITTED',
                reason: 'paid',
              })),
            }),
          );
          loseNext();
          assert.equal((await hub.v2('PUT', `/settlements/${s1}`, { participants })).status, 500);
          assert.equal(
            (await hub.v2('GET', `/settlements/${s1}`)).body.state,
            'PS_TRANSFERS_RESERVED',
          );
          assert.deepEqual(await hub.positions('A', 'B'), ['0', '0'], 'the ledger made the step');

          const abort = await hub.v2('PUT', `/settlements/${s1}`, {
            state: 'ABORTED',
            reason: 'too late',
          });
          assert.equal(abort.status, 400, abort.text);
          assert.equal(errorCode(abort), '3100');
          assert.match(
            abort.text,
            new RegExp(
              `At least one settlement transfer is committed for settlement '${s1}'. Aborting is not allowed.`,
            ),
          );
          const after = (await hub.v2('GET', `/settlements/${s1}`)).body;
          const states = Object.fromEntries(
            after.participants.flatMap((p: any) =>
              p.accounts.map((a: any) => [a.netSettlementAmount.amount, a.state]),
            ),
          );
          assert.deepEqual(
            states,
            { 300: 'PS_TRANSFERS_COMMITTED', [-300]: 'PS_TRANSFERS_RESERVED' },
            'the metadata follows the ledger',
          );
          assert.deepEqual(
            await hub.positions('A', 'B'),
            ['0', '0'],
            'the refused abort moved nothing',
          );

          // The operator finishes the settlement: A's commit is a re-statement, no money moves
          // again.
          for (const state of ['PS_TRANSFERS_COMMITTED', 'SETTLED']) await hub.settleAll(s1, state);
          assert.equal((await hub.v2('GET', `/settlements/${s1}`)).body.state, 'SETTLED');
          assert.deepEqual(await hub.positions('A', 'B'), ['0', '0']);
        } finally {
          await service.close();
        }
      },
    );

    for (const late of ['commit', 'abort'] as const) {
      for (const part of ['steps', 'decision'] as const) {
        test(
          `the ${late === 'commit' ? 'PUT committing' : 'abort'}'s ${part} request times out and lands after the ${late === 'commit' ? 'abort' : 'PUT committing'}: never both, metadata and ledger agree, money moves once`,
          { timeout: 180_000 },
          async (t) => {
            if (backend === 'tigerbeetle' && cluster.current() === undefined)
              return t.skip('no TigerBeetle server binary');
            const ledger = backend === 'embedded' ? new EmbeddedLedger() : cluster.ledger();
            const store = new MemoryMetadataStore();
            const request = new LateRequest();
            const service = await buildService(
              loadConfig({ LOG_LEVEL: 'silent', LEDGER_TIMEOUT_MS: '30000' }),
              { ledger: request.ledger(ledger), store },
            );
            await service.app.listen({ host: '127.0.0.1', port: 0 });
            try {
              const hub = new Hub(
                `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`,
              );
              await lateRequestAcrossChange(late, part, hub, ledger, store, request);
            } finally {
              await service.close();
            }
          },
        );
      }
    }

    for (const first of ['abort', 'commit'] as const) {
      test(
        `an abort and a PUT committing at once, the ${first} first: one waits for the other, metadata and ledger agree, money moves once`,
        { timeout: 180_000 },
        async (t) => {
          if (backend === 'tigerbeetle' && cluster.current() === undefined)
            return t.skip('no TigerBeetle server binary');
          const ledger = backend === 'embedded' ? new EmbeddedLedger() : cluster.ledger();
          const store = new MemoryMetadataStore();
          const race = new SettlementRace();
          const service = await buildService(
            loadConfig({ LOG_LEVEL: 'silent', LEDGER_TIMEOUT_MS: '30000' }),
            { ledger: race.ledger(ledger), store: race.store(store) },
          );
          await service.app.listen({ host: '127.0.0.1', port: 0 });
          try {
            const hub = new Hub(
              `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`,
            );
            await abortRacingCommit(first, race, { abort: hub, commit: hub }, ledger, store);
          } finally {
            await service.close();
          }
        },
      );
    }
  });
}
