/**
 * What an FX payment costs beside a plain transfer, measured in the same run on the same service
 * and ledger:
 *   plain: POST /transfers + the payee's PUT (3 ledger events: prepare 1, commit 2);
 *   FX:    POST /fxTransfers + the FXP's PUT + POST /transfers + the payee's PUT (6 events:
 *          fx prepare 1, FXP answer 0, dependent prepare 1, commit of both legs in one chain 4).
 * The service runs in-process (Fastify inject, no sockets) on a real TigerBeetle cluster it
 * starts (--replicas 1|3, default 3), or on the embedded ledger (--embedded). Each payment runs
 * its steps in order; --concurrency payments run at once. Prints per-payment latency (p50/p99),
 * payments/s and ledger events; then checks the books (each currency's positions sum to 0).
 *
 *   npx tsx bench/fx.ts [--payments N] [--concurrency C] [--replicas 1|3] [--embedded]
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { buildService } from '../src/app';
import { loadConfig } from '../src/config/config';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger } from '../src/ports/ledger';
import { TigerBeetleLedger } from '../src/ledger/tigerbeetle';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { FxClient, type Reply } from '../test/support/fx-client';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import { flags } from './common';

const args = flags(process.argv.slice(2));
const payments = args.number('--payments', 1000);
const concurrency = args.number('--concurrency', 16);
const replicas = args.number('--replicas', 3) === 1 ? 1 : 3;

function expect(reply: Reply, status: number, what: string): void {
  if (reply.status !== status)
    throw new Error(`${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
}

async function measure(
  label: string,
  count: number,
  one: () => Promise<void>,
): Promise<{ label: string; perSecond: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < count) {
        const t0 = performance.now();
        await one();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number): number =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { label, perSecond: count / elapsed, p50: at(0.5), p99: at(0.99) };
}

async function main(): Promise<void> {
  let cluster: RunningCluster | undefined;
  let ledger: Ledger;
  if (args.has('--embedded')) {
    ledger = new EmbeddedLedger();
  } else {
    cluster = await startCluster({ replicas });
    ledger = new TigerBeetleLedger({
      clusterId: cluster.clusterId,
      replicaAddresses: cluster.addresses,
    });
  }
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
    ledger,
    store: new MemoryMetadataStore(),
  });
  try {
    const client = new FxClient(
      async (method, url, payload, headers) => {
        const r = await service.app.inject({
          method,
          url,
          ...(payload === undefined ? {} : { payload }),
          headers: headers ?? {},
        });
        return { status: r.statusCode, body: r.body.length === 0 ? undefined : JSON.parse(r.body) };
      },
      FxClient.parties(randomBytes(3).toString('hex')),
    );
    await client.onboard();
    // A plain transfer in TZS F → B: the dependent transfer's shape without its conversion.
    const plainClient = new FxClient(client.send, { ...client.parties, A: client.parties.F });
    const plain = (): Promise<void> =>
      (async () => {
        const p = plainClient.payment();
        expect(
          await plainClient.prepare({ ...p, transferId: p.transferId }, '1'),
          201,
          'plain prepare',
        );
        expect(await plainClient.commit(p), 200, 'plain commit');
      })();
    const fx = async (): Promise<void> => {
      const p = client.payment('0.01', '1');
      expect(await client.fxPrepare(p), 201, 'fx prepare');
      expect(await client.fxAnswer(p), 200, 'fx answer');
      expect(await client.prepare(p, '1'), 201, 'dependent prepare');
      expect(await client.commit(p), 200, 'commit');
    };
    await measure('warm-up', Math.min(100, payments), async () => {
      await plain();
      await fx();
    });
    const results = [
      await measure('plain transfer (3 ledger events)', payments, plain),
      await measure('FX payment: fx + transfer (6 ledger events)', payments, fx),
    ];
    const backend =
      cluster === undefined ? 'embedded ledger' : `${replicas}-replica TigerBeetle cluster`;
    console.log(
      `\n${payments} payments each, ${concurrency} at once, in-process service on the ${backend}\n`,
    );
    console.log('| payment | per second | p50 ms | p99 ms |\n|---|---|---|---|');
    for (const r of results)
      console.log(
        `| ${r.label} | ${r.perSecond.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |`,
      );
    console.log(
      `\nFX / plain: ${(results[0]!.perSecond / results[1]!.perSecond).toFixed(2)}× the time per payment`,
    );
    const [aUsd, fUsd, fTzs, bTzs] = (await client.positions()).map(Number);
    console.log(
      `books: USD A ${aUsd} + F ${fUsd} = ${aUsd! + fUsd!}; TZS F ${fTzs} + B ${bTzs} = ${fTzs! + bTzs!} (plain transfers F → B included)`,
    );
    if (aUsd! + fUsd! !== 0 || fTzs! + bTzs! !== 0) process.exitCode = 1;
  } finally {
    await service.close();
    await cluster?.stop();
  }
}

void main();
