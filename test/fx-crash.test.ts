/**
 * Crash injection for FX (FAULT_POINT, util/fault.ts): the service is killed with SIGKILL at the
 * FX step boundaries — above all between the dependent transfer's commit in the ledger (one chain
 * posting both the conversion's and the transfer's reservations) and the metadata of each — then
 * restarted on the same data while the clients retry. Both legs or neither, the books exact
 * per currency, the state reported the ledger's. Embedded ledger always; a real three-replica
 * cluster when a server binary is installed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { transferIdToU128 } from '../src/domain/shared/ids';
import { fxLedgerId } from '../src/domain/fx/rules';
import { JournaledLedger } from '../src/ledger/journaled';
import type { Ledger } from '../src/ports/ledger';
import type { FaultPoint } from '../src/util/fault';
import { FxClient, type Send } from './support/fx-client';
import { liveDirs } from './support/leftovers';
import { freePort } from './support/net';
import { useRealCluster } from './support/real-cluster';
import { call, sleep, startProcess, stopProcess, type Started } from './support/service-process';

const SERVICE_ARGS = ['--import', 'tsx', join(__dirname, '..', 'src', 'main.ts')];
const cluster = useRealCluster('the FX crash-injection test');
const backends = [
  {
    name: 'embedded ledger',
    env: (): Record<string, string> => ({ LEDGER_BACKEND: 'embedded' }),
    open: (dataDir: string): Promise<Ledger> => JournaledLedger.open(dataDir),
  },
  {
    name: 'TigerBeetle cluster',
    env: (): Record<string, string> => ({
      LEDGER_BACKEND: 'tigerbeetle',
      TB_CLUSTER_ID: cluster.current()!.clusterId.toString(),
      TB_ADDRESSES: cluster.current()!.addresses.join(','),
    }),
    open: async (): Promise<Ledger> => cluster.ledger(),
  },
];

/** Where the service dies, and what the payment ends as once restarted and retried. */
const CASES: {
  point: FaultPoint;
  step: 'fx-prepare' | 'commit' | 'withdraw';
  expected: 'COMMITTED' | 'ABORTED';
}[] = [
  { point: 'fx-prepare.after-ledger', step: 'fx-prepare', expected: 'COMMITTED' },
  { point: 'fulfil.after-ledger', step: 'commit', expected: 'COMMITTED' },
  { point: 'fx-settle.before-metadata', step: 'commit', expected: 'COMMITTED' },
  { point: 'fx-abort.after-ledger', step: 'withdraw', expected: 'ABORTED' },
];

for (const backend of backends) {
  describe(`FX: killed -9 at a step boundary (${backend.name})`, () => {
    for (const { point, step, expected } of CASES) {
      test(
        `${point}: both legs or neither, books exact, the ledger's state reported`,
        { timeout: 120_000 },
        async (t) => {
          if (backend.name !== 'embedded ledger' && cluster.current() === undefined)
            return t.skip('no TigerBeetle server binary');
          const dataDir = mkdtempSync(join(tmpdir(), 'fx-crash-'));
          liveDirs.add(dataDir);
          const port = await freePort();
          const env = {
            ...process.env,
            LOG_LEVEL: 'warn',
            PORT: String(port),
            DATA_DIR: dataDir,
            EXPIRY_SWEEP_MS: '200',
            ...backend.env(),
          };
          let service: Started | undefined;
          const send: Send = async (method, url, payload, headers) => {
            const answer = await call(service!.base, method, url, payload, headers ?? {});
            return { status: answer.status, body: answer.body };
          };
          const client = new FxClient(
            send,
            FxClient.parties(Math.random().toString(36).slice(2, 8)),
          );
          try {
            service = await startProcess(
              'service',
              SERVICE_ARGS,
              { ...env, FAULT_POINT: point },
              port,
              join(dataDir, 'service.log'),
              '/health',
            );
            const killed = new Promise<NodeJS.Signals | null>((resolve) =>
              service!.child.once('exit', (_code, signal) => resolve(signal)),
            );
            await client.onboard();
            const p = client.payment();
            const steps = {
              'fx-prepare': () => client.fxPrepare(p),
              commit: () => client.commit(p),
              withdraw: () => client.fxError(p),
            };
            if (step !== 'fx-prepare') {
              assert.equal((await client.fxPrepare(p)).status, 201);
              assert.equal((await client.fxAnswer(p)).status, 200);
              assert.equal((await client.prepare(p)).status, 201);
            }
            assert.ok(
              (await steps[step]().catch((error: Error) => error)) instanceof Error,
              'the fault point did not kill the service',
            );
            assert.equal(await killed, 'SIGKILL');

            service = await startProcess(
              'service',
              SERVICE_ARGS,
              env,
              port,
              join(dataDir, 'service.log'),
              '/health',
            );
            // Asked at once after the restart: what the ledger did.
            if (step === 'commit')
              assert.equal((await client.fxGet(p)).body.conversionState, 'COMMITTED');
            if (step === 'withdraw')
              assert.equal((await client.transferGet(p)).body.transferState, 'ABORTED');
            // The clients retry the very request, then go on.
            const retried = await steps[step]();
            assert.equal(
              retried.status === 201 ? 200 : retried.status,
              200,
              JSON.stringify(retried.body),
            );
            if (step === 'fx-prepare') {
              assert.equal((await client.fxAnswer(p)).status, 200);
              assert.equal((await client.prepare(p)).status, 201);
              assert.equal((await client.commit(p)).body.transferState, 'COMMITTED');
            }
            assert.equal((await client.fxGet(p)).body.conversionState, expected);
            assert.equal((await client.transferGet(p)).body.transferState, expected);
            const moved = expected === 'COMMITTED';
            assert.deepEqual(
              await client.positions(),
              moved ? ['100', '-100', '265000', '-265000'] : ['0', '0', '0', '0'],
              'each currency sums to 0',
            );
            await sleep(500);
            await stopProcess(service);
            service = undefined;
            const ledger = await backend.open(dataDir);
            try {
              const states = await ledger.transferStates([
                fxLedgerId(p.commitRequestId),
                transferIdToU128(p.transferId),
              ]);
              assert.deepEqual(
                states,
                moved ? ['committed', 'committed'] : ['aborted', 'aborted'],
                'both legs or neither',
              );
              const { A, B, F } = client.parties;
              const balances = await ledger.balances([
                { participant: A, currency: 'USD' },
                { participant: F, currency: 'USD' },
                { participant: F, currency: 'TZS' },
                { participant: B, currency: 'TZS' },
              ]);
              assert.deepEqual(
                balances.map((b) => b!.reserved),
                [0n, 0n, 0n, 0n],
                'nothing left reserved',
              );
            } finally {
              await ledger.close();
            }
          } finally {
            if (service !== undefined) await stopProcess(service);
            rmSync(dataDir, { recursive: true, force: true });
            liveDirs.delete(dataDir);
          }
        },
      );
    }
  });
}
