/**
 * Crash injection: the service is started with FAULT_POINT set to one step boundary (util/fault.ts)
 * and kills itself there with SIGKILL, between the ledger's write and the metadata's (or after
 * both, before the answer). It is restarted on the same data, the client retries as DFSPs do
 * (the same id, the same body), and then what the service reports of the transfer must be what
 * the ledger holds, the metadata must have been repaired to it, and the books must be exact.
 * On the embedded ledger (journalled in DATA_DIR) always, and on a real three-replica
 * TigerBeetle cluster when a server binary is installed.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { transferIdToU128 } from '../src/domain/shared/ids';
import { JournaledLedger } from '../src/ledger/journaled';
import type { Ledger, LedgerTransferState } from '../src/ports/ledger';
import { JournalMetadataStore } from '../src/metadata/journal';
import { apiStateOf } from '../src/ports/states';
import { FAULT_POINTS, type FaultPoint } from '../src/util/fault';
import { liveDirs } from './support/leftovers';
import { freePort } from './support/net';
import { useRealCluster } from './support/real-cluster';
import {
  call,
  sleep,
  startProcess,
  stopProcess,
  type Answer,
  type Started,
} from './support/service-process';
import { onboard, Workload, parseMinor } from './support/workload';

/**
 * Expiration of the transfer under test: long enough for the steps before the crash on a loaded
 * machine.
 */
const EXPIRY_SECONDS = 4;
/**
 * A crash at prepare is retried at once and the transfer then fulfilled: its expiration must
 * outlast a restart on a loaded machine (a restart took over 4 s on a busy box), and the test
 * never waits for it.
 */
const PREPARE_EXPIRY_SECONDS = 120;
/**
 * Past the expiration, how long until both ledgers have released the reservation (whole-second
 * timeouts).
 */
const RELEASE_MS = 2_500;
/**
 * Bounds on waits that depend on the machine's load, generous so they fail only for a real fault.
 */
const CRASH_TIMEOUT_MS = 60_000;
const SWEEP_TIMEOUT_MS = 60_000;
const SERVICE_ARGS = ['--import', 'tsx', join(__dirname, '..', 'src', 'main.ts')];
/**
 * Two entries of each id table in memory: what a crash leaves is read back from runs on disk too
 * (rebuilt at each start).
 */
const HOT_ENTRIES = 2;

const API_OF_LEDGER: Record<LedgerTransferState, string | undefined> = {
  reserved: 'RESERVED',
  committed: 'COMMITTED',
  settled: 'SETTLED',
  aborted: 'ABORTED',
  expired: 'ABORTED',
  unknown: undefined,
};

interface Backend {
  name: string;
  env(): Record<string, string>;
  /** The ledger the service used, opened by the test once the service has stopped. */
  open(dataDir: string): Promise<Ledger>;
}

const cluster = useRealCluster('the crash-injection test');
const backends: Backend[] = [
  {
    name: 'embedded ledger',
    env: () => ({ LEDGER_BACKEND: 'embedded' }),
    open: (dataDir) => JournaledLedger.open(dataDir, HOT_ENTRIES),
  },
  {
    name: 'TigerBeetle cluster',
    env: () => ({
      LEDGER_BACKEND: 'tigerbeetle',
      TB_CLUSTER_ID: cluster.current()!.clusterId.toString(),
      TB_ADDRESSES: cluster.current()!.addresses.join(','),
    }),
    open: async () => cluster.ledger(),
  },
];

for (const backend of backends) {
  describe(`crash at every step boundary (${backend.name})`, () => {
    // The transfer flow's points; the settlement's are test/settlement-crash.test.ts's.
    for (const point of FAULT_POINTS.filter((p) => /^(prepare|fulfil|abort|expiry)\./.test(p))) {
      test(
        `killed at ${point}: after restart and retries the answers, the metadata and the books are the ledger's`,
        { timeout: 240_000 },
        async (t) => {
          if (backend.name !== 'embedded ledger' && cluster.current() === undefined)
            return t.skip('no TigerBeetle server binary');
          await crashScenario(point, backend, (message) => t.diagnostic(message));
        },
      );
    }
  });
}

async function crashScenario(
  point: FaultPoint,
  backend: Backend,
  note: (message: string) => void,
): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'crash-'));
  liveDirs.add(dataDir);
  const port = await freePort();
  const env = {
    ...process.env,
    LOG_LEVEL: 'warn',
    PORT: String(port),
    DATA_DIR: dataDir,
    JMETER_ENABLED: 'true',
    EXPIRY_SWEEP_MS: '200',
    DATA_TABLE_HOT_ENTRIES: String(HOT_ENTRIES),
    ...backend.env(),
  };
  const logFile = join(dataDir, 'service.log');
  let service: Started | undefined;
  try {
    service = await startProcess(
      'service',
      SERVICE_ARGS,
      { ...env, FAULT_POINT: point },
      port,
      logFile,
      '/health',
    );
    const killed = new Promise<NodeJS.Signals | null>((resolve) =>
      service!.child.once('exit', (_code, signal) => resolve(signal)),
    );
    const names = await onboard(service.base, `k${Math.random().toString(36).slice(2, 8)}`, 2);
    const workload = new Workload(names, {
      conditionPool: 1,
      amountPool: 1,
      expirySeconds: point.startsWith('prepare.') ? PREPARE_EXPIRY_SECONDS : EXPIRY_SECONDS,
    });
    const { transfer, condition, ilpPacket } = workload.next(true);
    workload.stop();
    const payer = names[transfer.payer]!;
    const payee = names[transfer.payee]!;
    // A DFSP retries with the very same bodies.
    const bodies = {
      prepare: workload.prepareBody(transfer, condition, ilpPacket, false),
      fulfil: workload.fulfilBody(transfer),
      abort: JSON.stringify({
        errorInformation: { errorCode: '5100', errorDescription: 'payee refused' },
      }),
    };
    const expiresAt = Date.parse(JSON.parse(bodies.prepare).expiration as string);
    const send = (step: 'prepare' | 'fulfil' | 'abort', base: string): Promise<Answer> =>
      step === 'prepare'
        ? call(base, 'POST', '/transfers', bodies.prepare, workload.headers(payer, payee))
        : call(
            base,
            'PUT',
            `/transfers/${transfer.id}${step === 'abort' ? '/error' : ''}`,
            bodies[step],
            workload.headers(payee, payer),
          );
    const get = (base: string): Promise<Answer> =>
      call(base, 'GET', `/transfers/${transfer.id}`, undefined, { 'fspiop-source': payer });

    const step = point.slice(0, point.indexOf('.')) as 'prepare' | 'fulfil' | 'abort' | 'expiry';
    if (step !== 'prepare') assert.equal((await send('prepare', service.base)).status, 201);
    if (step !== 'expiry') {
      const answer = await send(step, service.base).catch((error: Error) => error);
      assert.ok(
        answer instanceof Error,
        `the ${step} was answered (${JSON.stringify(answer)}): the fault point did not kill the service`,
      );
    }
    assert.equal(
      await within(killed, CRASH_TIMEOUT_MS, `the service was not killed at ${point}`),
      'SIGKILL',
    );

    service = await startProcess('service', SERVICE_ARGS, env, port, logFile, '/health');
    const base = service.base;
    let expected: string;
    switch (step) {
      case 'prepare': {
        // Retried at once, as a client whose request got no answer does; then fulfilled.
        const retried = await send('prepare', base);
        assert.ok(retried.status === 200 || retried.status === 201, retried.text);
        assert.equal(retried.body.transferState, 'RESERVED');
        expected = 'COMMITTED';
        assert.equal((await send('fulfil', base)).body?.transferState, expected);
        break;
      }
      case 'fulfil':
      case 'abort': {
        expected = step === 'fulfil' ? 'COMMITTED' : 'ABORTED';
        assert.equal(
          (await get(base)).body?.transferState,
          expected,
          'asked at once after the restart, the service reports what the ledger did',
        );
        // The retry comes only after the expiration (the reported defect): still the ledger's
        // outcome, never 3303.
        await sleep(Math.max(0, expiresAt + RELEASE_MS - Date.now()));
        const retried = await send(step, base);
        assert.equal(retried.status, 200, retried.text);
        assert.equal(retried.body.transferState, expected);
        break;
      }
      case 'expiry': {
        expected = 'ABORTED';
        const deadline = Date.now() + SWEEP_TIMEOUT_MS;
        while ((await get(base)).body?.transferState !== expected && Date.now() < deadline)
          await sleep(200);
        const late = await send('fulfil', base);
        assert.equal(late.body?.errorInformation?.errorCode, '3303', late.text);
        break;
      }
    }
    const reported = await get(base);
    assert.equal(reported.body?.transferState, expected, reported.text);
    if (step === 'expiry') assert.equal(reported.body.errorInformation?.errorCode, '3303');
    // The sweep reads the ledger for every record loaded at start; give it time to repair.
    await sleep(1_000);
    await stopProcess(service);
    service = undefined;

    const ledger = await backend.open(dataDir);
    try {
      const [state] = await ledger.transferStates([transferIdToU128(transfer.id)]);
      assert.equal(
        API_OF_LEDGER[state!],
        expected,
        `the ledger says ${state}, the service reported ${expected}`,
      );
      const [payerBalance, payeeBalance] = await ledger.balances([
        { participant: payer, currency: 'USD' },
        { participant: payee, currency: 'USD' },
      ]);
      const moved = expected === 'COMMITTED' ? parseMinor(transfer.amountText) : 0n;
      // Balances are in minor units, as parseMinor's cents.
      assert.deepEqual(
        [payerBalance!.position, payerBalance!.reserved],
        [moved, 0n],
        'payer: moved exactly once, nothing left reserved',
      );
      assert.deepEqual(
        [payeeBalance!.position, payeeBalance!.reserved],
        [-moved, 0n],
        'payee: received exactly once',
      );
    } finally {
      await ledger.close();
    }
    const store = await JournalMetadataStore.open(dataDir, HOT_ENTRIES);
    try {
      const [record] = await store.transfers([transfer.id]);
      assert.equal(
        apiStateOf(record!.state),
        expected,
        `the metadata was repaired to the ledger's state (it holds ${record!.state})`,
      );
    } finally {
      await store.close();
    }
    note(`${point}: ${expected}, ledger and metadata agree`);
  } finally {
    if (service !== undefined) await stopProcess(service);
    rmSync(dataDir, { recursive: true, force: true });
    liveDirs.delete(dataDir);
  }
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)),
  );
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
