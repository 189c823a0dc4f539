/**
 * The fault suite: DFSP clients that retry with the same id and the same body run complete
 * transfers against the service on a real three-replica cluster while one fault is injected —
 * a replica killed with SIGKILL and restarted, the service killed with SIGKILL and restarted,
 * or two replicas of three stopped (quorum lost) and resumed. Then every transfer is reconciled
 * against the ledger itself:
 *
 *  - lost: the ledger posted it and the service does not report it COMMITTED, or the reverse;
 *  - doubled: its requests were answered both COMMITTED and refused/ABORTED;
 *  - stuck: still RESERVED (in the ledger or as reported) once its expiration has passed;
 *  - books: every participant's position is exactly the sum of what the ledger posted, nothing
 *    is left reserved, and debits equal credits on both ledgers of the currency.
 *
 * Bounded in clients, duration and transfers; all traffic on 127.0.0.1. `npm run faults`
 * (bench/faults.ts) runs it in full and prints the table; test/faults.test.ts runs a reduced form
 * inside `npm test`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { transferIdToU128 } from '../../src/domain/shared/ids';
import { TigerBeetleLedger } from '../../src/ledger/tigerbeetle';
import { liveDirs } from './leftovers';
import type { RunningCluster } from './tigerbeetle-cluster';
import {
  call,
  pool,
  serviceEnv,
  sleep,
  startProcess,
  stopProcess,
  type Answer,
  type Started,
} from './service-process';
import { freePort } from './net';
import { onboard, CURRENCY, Workload, type SentTransfer } from './workload';

export const FAULTS = ['replica kill -9', 'service kill -9', 'quorum loss'] as const;
export type Fault = (typeof FAULTS)[number];

export interface SuiteOptions {
  clients: number;
  /** Traffic lasts this long; the fault starts at a third and heals at two thirds of it. */
  durationMs: number;
  /** Bound on the transfers one scenario sends, whatever the duration. */
  maxTransfers: number;
  /** The service's LEDGER_TIMEOUT_MS. */
  ledgerTimeoutMs: number;
}

export interface ScenarioResult {
  scenario: Fault;
  transfers: number;
  committed: number;
  lost: number;
  doubled: number;
  stuck: number;
  booksOk: boolean;
  /**
   * The slowest answer the clients got (the service must answer within LEDGER_TIMEOUT_MS, even with
   * no quorum).
   */
  maxAnswerMs: number;
  /**
   * Transfers in flight at some moment of the fault: the scenario tested something only if this is
   * above 0.
   */
  duringFault: number;
  problems: string[];
}

/**
 * How a transfer expires: soon enough that what a fault leaves reserved is released within the run.
 */
const EXPIRY_SECONDS = 15;
/** A client's pause between retries of an unanswered or 5xx request. */
const RETRY_PAUSE_MS = 250;
/**
 * Past the last expiration, how long until the ledger has released everything and the sweep
 * recorded it.
 */
const SETTLE_MS = 4_000;
const SERVICE_ARGS = ['--import', 'tsx', path.join(__dirname, '..', '..', 'src', 'main.ts')];

interface Tracked {
  sent: SentTransfer;
  payer: string;
  payee: string;
  prepareBody: string;
  fulfilBody: string;
  answers: Set<string>;
  expiresAt: number;
  startedAt: number;
  /** When its client was told its end (undefined: never, until the reconciliation). */
  doneAt?: number;
}

export async function runScenario(
  fault: Fault,
  cluster: RunningCluster,
  options: SuiteOptions,
  log: (line: string) => void = () => {},
): Promise<ScenarioResult> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fault-suite-'));
  liveDirs.add(dataDir);
  const port = await freePort();
  const env = {
    ...serviceEnv(port, cluster, dataDir),
    LEDGER_TIMEOUT_MS: String(options.ledgerTimeoutMs),
    EXPIRY_SWEEP_MS: '250',
  };
  const logFile = path.join(dataDir, 'service.log');
  let service: Started = await startProcess('service', SERVICE_ARGS, env, port, logFile, '/health');
  const base = service.base;
  try {
    const names = await onboard(base, `f${Math.random().toString(36).slice(2, 7)}`, 4);
    const workload = new Workload(names, {
      conditionPool: 64,
      amountPool: 32,
      expirySeconds: EXPIRY_SECONDS,
    });
    const tracked: Tracked[] = [];
    let maxAnswerMs = 0;
    let stopping = false;
    /** One request, retried with the same body until it gets an answer that is not 5xx. */
    const request = async (
      t: Tracked,
      method: string,
      url: string,
      body: string | undefined,
      headers: Record<string, string>,
    ): Promise<Answer> => {
      for (;;) {
        const started = performance.now();
        const answer = await call(base, method, url, body, headers).catch(() => undefined);
        maxAnswerMs = Math.max(maxAnswerMs, performance.now() - started);
        if (answer !== undefined && answer.status < 500) {
          t.answers.add(
            answer.body?.transferState ??
              answer.body?.errorInformation?.errorCode ??
              String(answer.status),
          );
          return answer;
        }
        await sleep(RETRY_PAUSE_MS);
      }
    };
    // Paced so that the transfers spread over the whole run, the fault's third included.
    const pauseMs = (options.durationMs * options.clients) / options.maxTransfers;
    const client = async (): Promise<void> => {
      while (!stopping && tracked.length < options.maxTransfers) {
        await sleep(pauseMs * Math.random());
        const { transfer, condition, ilpPacket } = workload.next(false);
        const prepareBody = workload.prepareBody(transfer, condition, ilpPacket, false);
        const t: Tracked = {
          sent: transfer,
          payer: names[transfer.payer]!,
          payee: names[transfer.payee]!,
          prepareBody,
          fulfilBody: workload.fulfilBody(transfer),
          answers: new Set(),
          expiresAt: Date.parse(JSON.parse(prepareBody).expiration as string),
          startedAt: Date.now(),
        };
        tracked.push(t);
        const prepared = await request(
          t,
          'POST',
          '/transfers',
          t.prepareBody,
          workload.headers(t.payer, t.payee),
        );
        if (prepared.body?.transferState === 'RESERVED')
          await request(
            t,
            'PUT',
            `/transfers/${transfer.id}`,
            t.fulfilBody,
            workload.headers(t.payee, t.payer),
          );
        t.doneAt = Date.now();
      }
    };

    const traffic = Promise.all(Array.from({ length: options.clients }, client));
    await sleep(options.durationMs / 3);
    const injectedAt = Date.now();
    log(`${fault}: injected after ${tracked.length} transfers`);
    switch (fault) {
      case 'replica kill -9':
        await cluster.signal(0, 'SIGKILL');
        break;
      case 'service kill -9':
        await new Promise<void>((resolve) => {
          service.child.once('exit', () => resolve());
          service.child.kill('SIGKILL');
        });
        // The clients keep retrying meanwhile, as DFSPs whose connection broke.
        service = await startProcess('service', SERVICE_ARGS, env, port, logFile, '/health');
        break;
      case 'quorum loss':
        await cluster.signal(1, 'SIGSTOP');
        await cluster.signal(2, 'SIGSTOP');
        break;
    }
    await sleep(options.durationMs / 3);
    if (fault === 'replica kill -9') cluster.restart(0);
    if (fault === 'quorum loss') {
      await cluster.signal(1, 'SIGCONT');
      await cluster.signal(2, 'SIGCONT');
    }
    const healedAt = Date.now();
    log(`${fault}: healed after ${tracked.length} transfers`);
    await sleep(options.durationMs / 3);
    stopping = true;
    await traffic;
    const duringFault = tracked.filter(
      (t) => t.startedAt < healedAt && (t.doneAt ?? Infinity) > injectedAt,
    ).length;
    workload.stop();

    // As a DFSP would: whatever it was not told the end of, it asks about, and fulfils what is
    // still reserved.
    await pool(tracked, 8, async (t) => {
      const got = await request(t, 'GET', `/transfers/${t.sent.id}`, undefined, {
        'fspiop-source': t.payer,
      });
      if (got.body?.transferState === 'RESERVED')
        await request(
          t,
          'PUT',
          `/transfers/${t.sent.id}`,
          t.fulfilBody,
          workload.headers(t.payee, t.payer),
        );
    });
    const lastExpiry = Math.max(...tracked.map((t) => t.expiresAt));
    await sleep(Math.max(0, lastExpiry + SETTLE_MS - Date.now()));
    const reported = new Map<string, string>();
    await pool(tracked, 8, async (t) => {
      const got = await request(t, 'GET', `/transfers/${t.sent.id}`, undefined, {
        'fspiop-source': t.payer,
      });
      reported.set(
        t.sent.id,
        got.body?.transferState ??
          `HTTP ${got.status} ${got.body?.errorInformation?.errorCode ?? ''}`,
      );
    });
    return {
      ...(await reconcile(tracked, reported, names, cluster)),
      scenario: fault,
      maxAnswerMs: Math.round(maxAnswerMs),
      duringFault,
    };
  } finally {
    await stopProcess(service);
    rmSync(dataDir, { recursive: true, force: true });
    liveDirs.delete(dataDir);
  }
}

async function reconcile(
  tracked: readonly Tracked[],
  reported: Map<string, string>,
  names: readonly string[],
  cluster: RunningCluster,
): Promise<Omit<ScenarioResult, 'scenario' | 'maxAnswerMs' | 'duringFault'>> {
  const ledger = new TigerBeetleLedger({
    clusterId: cluster.clusterId,
    replicaAddresses: cluster.addresses,
  });
  try {
    const states = await ledger.transferStates(tracked.map((t) => transferIdToU128(t.sent.id)));
    const problems: string[] = [];
    let lost = 0;
    let doubled = 0;
    let stuck = 0;
    let committed = 0;
    const expected = new Map<string, bigint>(names.map((name) => [name, 0n]));
    for (const [i, t] of tracked.entries()) {
      const state = states[i]!;
      const says = reported.get(t.sent.id);
      if (state === 'committed') {
        committed++;
        expected.set(t.payer, expected.get(t.payer)! + t.sent.amount);
        expected.set(t.payee, expected.get(t.payee)! - t.sent.amount);
      }
      if ((state === 'committed') !== (says === 'COMMITTED')) {
        lost++;
        problems.push(`${t.sent.id}: the ledger says ${state}, the service ${says}`);
      }
      if (
        t.answers.has('COMMITTED') &&
        [...t.answers].some((a) => a === 'ABORTED' || a === '3303')
      ) {
        doubled++;
        problems.push(`${t.sent.id}: answered ${[...t.answers].join(', ')}`);
      }
      if (state === 'reserved' || says === 'RESERVED') {
        stuck++;
        problems.push(`${t.sent.id}: still reserved (ledger ${state}, service ${says})`);
      }
    }
    const balances = await ledger.balances(
      names.map((participant) => ({ participant, currency: CURRENCY })),
    );
    const trial = await ledger.trialBalances(CURRENCY);
    let booksOk = trial.every((s) => s.debits === s.credits);
    for (const [i, name] of names.entries()) {
      const balance = balances[i]!;
      if (balance.position !== expected.get(name) || balance.reserved !== 0n) {
        booksOk = false;
        problems.push(
          `${name}: position ${balance.position} reserved ${balance.reserved}, the posted transfers make ${expected.get(name)}`,
        );
      }
    }
    return { transfers: tracked.length, committed, lost, doubled, stuck, booksOk, problems };
  } finally {
    await ledger.close();
  }
}

/** The suite's table: one row per scenario (of this suite or another, kafka-faults.ts). */
export function resultTable(
  results: readonly (Omit<ScenarioResult, 'scenario'> & { scenario: string })[],
): string[][] {
  return results.map((r) => [
    r.scenario,
    String(r.transfers),
    String(r.duringFault),
    String(r.committed),
    String(r.lost),
    String(r.doubled),
    String(r.stuck),
    r.booksOk ? 'yes' : 'NO',
    String(r.maxAnswerMs),
  ]);
}

export const RESULT_HEADER = [
  'scenario',
  'transfers',
  'during fault',
  'committed',
  'lost',
  'doubled',
  'stuck',
  'books ok',
  'max answer ms',
];
