/**
 * Settlement cost against the number of transfers: a window holding 10k, 100k and 1M committed
 * transfers over 100 participants is closed, and a settlement over it created and taken through
 * every state to SETTLED, each timed beside one ledger lookup in the same run. The transfers are
 * written straight through the ledger interface in large batches (prepare, then commit: the
 * service's own commands; a commit lands in the window not yet cut), so the 1M point stays within
 * minutes. Growth must be flat in the number of transfers: closing writes one cut and reads two
 * history entries per participant.
 *
 *   npm run bench:settlement                    # 1-replica cluster, 10k / 100k / 1M
 *   npm run bench:settlement -- --replicas 3 --points 10000,100000
 *
 * Prints figures, never fails on time; exits 1 only if a settlement's books are wrong.
 */
import { randomBytes } from 'node:crypto';
import { buildService } from '../src/app';
import { loadConfig } from '../src/config/config';
import type { LedgerCommand } from '../src/ports/ledger';
import { TigerBeetleLedger } from '../src/ledger/tigerbeetle';
import { MemoryMetadataStore } from '../src/metadata/memory';
import { startCluster } from '../test/support/tigerbeetle-cluster';
import { flags, runMain } from './common';

const PARTICIPANTS = 100;
const CURRENCY = 'USD';
/**
 * Transfers per ledger request: at most 2 events each (a prepare 1, a commit 2), under
 * TigerBeetle's 8,189.
 */
const PER_REQUEST = 2000;
/** Ledger requests in flight while loading. */
const IN_FLIGHT = 4;
/** Lookups averaged for the reference figure. */
const LOOKUPS = 50;

/** What the settlement API answers for a settlement (the fields read here). */
interface Settlement {
  id: number;
  state: string;
  participants: { id: number; accounts: { id: number; errorInformation?: unknown }[] }[];
}

runMain(async () => {
  const args = flags(process.argv.slice(2));
  const replicas = args.number('--replicas', 1) === 3 ? 3 : 1;
  const points = (args.value('--points') ?? '10000,100000,1000000').split(',').map(Number);
  const cluster = await startCluster({ replicas });
  const ledger = new TigerBeetleLedger({
    clusterId: cluster.clusterId,
    replicaAddresses: cluster.addresses,
  });
  const service = await buildService(
    loadConfig({ LOG_LEVEL: 'silent', LEDGER_TIMEOUT_MS: '60000' }),
    { ledger, store: new MemoryMetadataStore() },
  );
  /** An admin or settlement API call in process; its JSON answer, as the caller expects it. */
  const inject = async <Answer = unknown>(
    method: 'GET' | 'POST' | 'PUT',
    url: string,
    payload?: unknown,
  ): Promise<Answer> => {
    const answer = await service.app.inject({
      method,
      url,
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    if (answer.statusCode >= 300)
      throw new Error(`${method} ${url}: ${answer.statusCode} ${answer.body}`);
    return (answer.body.length === 0 ? undefined : JSON.parse(answer.body)) as Answer;
  };
  const rows: string[] = [];
  try {
    const run = randomBytes(3).toString('hex');
    const names = Array.from({ length: PARTICIPANTS }, (_, i) => `bench${run}p${i}`);
    for (const type of ['HUB_MULTILATERAL_SETTLEMENT', 'HUB_RECONCILIATION'])
      await inject('POST', '/participants/Hub/accounts', { currency: CURRENCY, type });
    await inject('POST', '/settlementModels', {
      name: 'DEFERREDNET',
      settlementGranularity: 'NET',
      settlementInterchange: 'MULTILATERAL',
      settlementDelay: 'DEFERRED',
      currency: CURRENCY,
      requireLiquidityCheck: true,
      ledgerAccountType: 'POSITION',
      autoPositionReset: true,
      settlementAccountType: 'SETTLEMENT',
    });
    for (const name of names) {
      await inject('POST', '/participants', { name, currency: CURRENCY });
      await inject('POST', `/participants/${name}/initialPositionAndLimits`, {
        currency: CURRENCY,
        limit: { type: 'NET_DEBIT_CAP', value: 1e12 },
        initialPosition: 0,
      });
      const settlementAccount = (
        await inject<{ id: number; ledgerAccountType: string }[]>(
          'GET',
          `/participants/${name}/accounts`,
        )
      ).find((a) => a.ledgerAccountType === 'SETTLEMENT')!.id;
      await inject('POST', `/participants/${name}/accounts/${settlementAccount}`, {
        transferId: crypto.randomUUID(),
        externalReference: 'b',
        action: 'recordFundsIn',
        reason: 'bench',
        amount: { amount: 1e12, currency: CURRENCY },
      });
    }
    console.log(`${PARTICIPANTS} participants onboarded on a ${replicas}-replica cluster`);
    for (const count of points) {
      if (await service.windows.settlesAtOnce(CURRENCY))
        throw new Error('the bench currency must settle NET');
      const window = (await service.windows.list()).find((w) => w.state === 'OPEN')!.id;
      const loadStarted = performance.now();
      await load(ledger, names, count);
      const loadS = (performance.now() - loadStarted) / 1000;

      const lookupStarted = performance.now();
      for (let i = 0; i < LOOKUPS; i++)
        await ledger.balances([{ participant: names[i % PARTICIPANTS]!, currency: CURRENCY }]);
      const lookupMs = (performance.now() - lookupStarted) / LOOKUPS;

      const timed = async <T>(work: () => Promise<T>): Promise<[T, number]> => {
        const started = performance.now();
        const result = await work();
        return [result, performance.now() - started];
      };
      const [, closeMs] = await timed(() =>
        inject('POST', `/v2/settlementWindows/${window}`, {
          state: 'CLOSED',
          reason: 'bench',
        }),
      );
      const [settlement, createMs] = await timed(() =>
        inject<Settlement>('POST', '/v2/settlements', {
          settlementModel: 'DEFERREDNET',
          reason: 'bench',
          settlementWindows: [{ id: window }],
        }),
      );
      const [, settleMs] = await timed(async () => {
        for (const state of [
          'PS_TRANSFERS_RECORDED',
          'PS_TRANSFERS_RESERVED',
          'PS_TRANSFERS_COMMITTED',
          'SETTLED',
        ]) {
          const participants = settlement.participants.map((p) => ({
            id: p.id,
            accounts: p.accounts.map((a) => ({ id: a.id, state, reason: state })),
          }));
          const answer = await inject<Settlement>('PUT', `/v2/settlements/${settlement.id}`, {
            participants,
          });
          for (const p of answer.participants)
            for (const a of p.accounts)
              if (a.errorInformation !== undefined) throw new Error(JSON.stringify(a));
        }
      });
      const final = await inject<Settlement>('GET', `/v2/settlements/${settlement.id}`);
      if (final.state !== 'SETTLED')
        throw new Error(`settlement ${settlement.id} ended ${final.state}`);
      const positions = await ledger.balances(
        names.map((participant) => ({ participant, currency: CURRENCY })),
      );
      const nonZero = positions.filter((b) => b!.position !== 0n).length;
      if (nonZero > 0)
        throw new Error(`${nonZero} positions not back to 0 after settling everything`);
      rows.push(
        `| ${count.toLocaleString('en')} | ${loadS.toFixed(1)} s | ${closeMs.toFixed(1)} ms | ${createMs.toFixed(1)} ms | ${settleMs.toFixed(1)} ms | ${lookupMs.toFixed(2)} ms | ${settlement.participants.length} |`,
      );
      console.log(rows[rows.length - 1]);
    }
    console.log(
      '\n| transfers in the window | load (ledger, batched) | close window | create settlement | 4 steps to SETTLED | one ledger lookup | accounts |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const row of rows) console.log(row);
  } finally {
    await service.close();
    await cluster.stop();
  }
}, 'settlement benchmark');

/**
 * `count` transfers between random participants, prepared and committed through the ledger in
 * large batches.
 */
async function load(
  ledger: TigerBeetleLedger,
  names: readonly string[],
  count: number,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const size = Math.min(PER_REQUEST, count - next);
      next += size;
      const transfers = Array.from({ length: size }, () => {
        const payer = Math.floor(Math.random() * names.length);
        const payee = (payer + 1 + Math.floor(Math.random() * (names.length - 1))) % names.length;
        return {
          id: BigInt('0x' + randomBytes(16).toString('hex')) | 1n,
          payer: names[payer]!,
          payee: names[payee]!,
          currency: CURRENCY,
          amount: BigInt(1 + Math.floor(Math.random() * 100_000)),
        };
      });
      const prepares: LedgerCommand[] = transfers.map((t) => ({
        kind: 'prepare',
        ...t,
        timeoutSeconds: 3600,
        payloadHash: 1n,
      }));
      const commits: LedgerCommand[] = transfers.map((t) => ({ kind: 'commit', ...t }));
      for (const batch of [prepares, commits]) {
        const refused = (await ledger.execute(batch)).filter((o) => !o.ok);
        if (refused.length > 0)
          throw new Error(
            `${refused.length} of ${batch.length} refused, e.g. ${JSON.stringify(refused[0])}`,
          );
      }
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}
