/**
 * The fault suite: DFSP clients that retry with the same id and the same body run complete
 * transfers against the service on a real three-replica cluster while one fault is injected —
 * a replica killed with SIGKILL and restarted, the service killed with SIGKILL and restarted,
 * or two replicas of three stopped (quorum lost) and resumed. The partitions (the cluster on a
 * mesh of network namespaces, netns.ts) cut a node off the network and mend it: a backup, the
 * primary (a view change), the service from the whole cluster, or the primary again and again
 * (each time the one then primary) for the fault's length. The MySQL faults run two instances
 * sharing one MariaDB for their metadata (each transfer prepared on one, fulfilled on the other):
 * the database killed with SIGKILL, or stopped, and started again on its data, or hung (SIGSTOP:
 * connections wait unanswered, only the instances' timeouts end them) and resumed. The ledger
 * faults stop every replica and restart the service on its metadata meanwhile: started before its
 * ledger (it answers /health DOWN with the reason until the replicas, started later, answer), or
 * on a cluster formatted anew at the same addresses (it must refuse it, /health naming the
 * mismatch, and write nothing there), then put back on its own cluster and restarted. Then every
 * transfer is reconciled against the ledger itself:
 *
 *  - lost: the ledger posted it and the service does not report it COMMITTED, or the reverse;
 *  - doubled: its requests were answered both COMMITTED and refused/ABORTED;
 *  - stuck: still RESERVED (in the ledger or as reported) once its expiration has passed;
 *  - books: every participant's position is exactly the sum of what the ledger posted, nothing
 *    is left reserved, and debits equal credits on both ledgers of the currency;
 *  - with MySQL, the metadata itself: each transfer's row COMMITTED exactly where the ledger
 *    posted it (a disagreement is counted lost).
 * Also measured: the slowest answer, the answers of 5xx (each must be an FSPIOP error), and how
 * long after the heal every instance answered again (no restart of them).
 *
 * Bounded in clients, duration and transfers; all traffic on 127.0.0.1 (or the mesh). `npm run
 * faults` (bench/faults.ts) runs it in full and prints the table; test/faults.test.ts runs a
 * reduced form inside `npm test`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { transferIdToU128 } from '../../src/domain/shared/ids';
import { TigerBeetleLedger } from '../../src/ledger/tigerbeetle';
import { liveDirs } from './leftovers';
import { knexOn, type RunningMariaDb } from './mariadb';
import { formatCluster, startCluster, type RunningCluster } from './tigerbeetle-cluster';
import {
  call,
  mysqlEnv,
  pool,
  serviceEnv,
  sleep,
  startProcess,
  stopProcess,
  until,
  type Answer,
  type Started,
} from './service-process';
import { freePort } from './net';
import { createMesh, netnsUnavailable, type Mesh, type MeshNode } from './netns';
import { onboard, CURRENCY, Workload, type SentTransfer } from './workload';

export const FAULTS = ['replica kill -9', 'service kill -9', 'quorum loss'] as const;
/** The faults of a shared MySQL: they need SuiteOptions.mariadb. */
export const MYSQL_FAULTS = ['mysql kill -9', 'mysql restart', 'mysql hang'] as const;
/** The network partitions: they need SuiteOptions.mesh, the cluster started on it. */
export const PARTITION_FAULTS = [
  'backup cut off',
  'primary cut off',
  'service cut off',
  'primary flapping',
] as const;
export type PartitionFault = (typeof PARTITION_FAULTS)[number];
/**
 * Every replica stopped and the service restarted meanwhile: on no ledger (the replicas started
 * later), or on a cluster formatted anew at their addresses (the original put back later).
 */
export const LEDGER_FAULTS = ['ledger late', 'foreign ledger'] as const;
export type Fault =
  | (typeof FAULTS)[number]
  | (typeof MYSQL_FAULTS)[number]
  | PartitionFault
  | (typeof LEDGER_FAULTS)[number];

export interface SuiteOptions {
  clients: number;
  /** Traffic lasts this long; the fault starts at a third and heals at two thirds of it. */
  durationMs: number;
  /** Bound on the transfers one scenario sends, whatever the duration. */
  maxTransfers: number;
  /** The service's LEDGER_TIMEOUT_MS. */
  ledgerTimeoutMs: number;
  /** How long the fault lasts (default: a third of the duration). */
  faultMs?: number;
  /** The MariaDB the MySQL faults' instances share (and the faults hit). */
  mariadb?: RunningMariaDb;
  /**
   * The network the cluster runs on, which the partitions cut (startFaultCluster); the ledger
   * faults need it where the cluster runs on one (a foreign cluster starts there too).
   */
  mesh?: Mesh;
}

/** The suite's cluster, and the mesh it runs on where namespaces are permitted. */
export interface FaultCluster {
  cluster: RunningCluster;
  /** Undefined where namespaces are refused: the partitions skip. */
  mesh?: Mesh;
  /** Why there is no mesh. */
  withoutMesh?: string;
  stop(): Promise<void>;
}

/**
 * A three-replica cluster for the suite: each replica in a network namespace of its own where
 * that is permitted (so the partitions can run), else all on 127.0.0.1.
 */
export async function startFaultCluster(): Promise<FaultCluster> {
  const withoutMesh = netnsUnavailable();
  const mesh = withoutMesh === undefined ? await createMesh(3) : undefined;
  try {
    const cluster = await startCluster({ replicas: 3, ...(mesh && { places: mesh }) });
    return {
      cluster,
      ...(mesh && { mesh }),
      ...(withoutMesh !== undefined && { withoutMesh }),
      stop: async () => {
        await cluster.stop();
        mesh?.remove();
      },
    };
  } catch (error) {
    mesh?.remove();
    throw error;
  }
}

/** The instances' MySQL bounds in the MySQL faults: a write's callers wait at most 3 × 1 + 1 s. */
const MYSQL_TIMEOUTS = { MYSQL_QUERY_TIMEOUT_MS: '1000', MYSQL_CONNECT_TIMEOUT_MS: '1000' };
/**
 * The slowest answer the MySQL faults allow: twice that bound (a request's reads, then its write;
 * each of those times out at most once in an outage).
 */
export const MYSQL_ANSWER_BOUND_MS = 8_000;

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
  /** That answer: the request, its status, and when it was asked relative to the fault. */
  slowestAnswer: string;
  /** The answers of 5xx (or none: the connection failed) by status and FSPIOP error code. */
  failures: Record<string, number>;
  /**
   * Seconds from the heal until every instance had answered a request below 500 again (NaN: one
   * never did).
   */
  recoverSeconds: number;
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
/** The primary flapping: cut off this long (a view change takes ~6 s), then back this long. */
const FLAP_DOWN_MS = 8_000;
const FLAP_UP_MS = 4_000;
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
  /** The instances its prepare and its fulfil go to. */
  prepareBase: string;
  fulfilBase: string;
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
  const mariadb = options.mariadb;
  const onMySql = (MYSQL_FAULTS as readonly Fault[]).includes(fault);
  if (onMySql && mariadb === undefined) throw new Error(`${fault} needs a MariaDB`);
  const mesh = options.mesh;
  const partition = (PARTITION_FAULTS as readonly Fault[]).includes(fault);
  if (partition && mesh === undefined) throw new Error(`${fault} needs the cluster on a mesh`);
  const database = onMySql ? await mariadb!.createDatabase() : undefined;
  const environments = await Promise.all(
    Array.from({ length: onMySql ? 2 : 1 }, async (_, i) => {
      const port = await freePort();
      const env: NodeJS.ProcessEnv = {
        ...serviceEnv(port, cluster, path.join(dataDir, String(i))),
        LEDGER_TIMEOUT_MS: String(options.ledgerTimeoutMs),
        EXPIRY_SWEEP_MS: '250',
        ...(database === undefined ? {} : { ...mysqlEnv(mariadb!, database), ...MYSQL_TIMEOUTS }),
      };
      return { port, env, logFile: path.join(dataDir, `service-${i}.log`) };
    }),
  );
  /** Ready once /health answers 200, or (readyPath '/live') once it listens. */
  const start = (i: number, readyPath = '/health'): Promise<Started> => {
    const { port, env, logFile } = environments[i]!;
    return startProcess('service', SERVICE_ARGS, env, port, logFile, readyPath);
  };
  const services: Started[] = [];
  // One after the other: the first applies the migrations.
  for (const i of environments.keys()) services.push(await start(i));
  const bases = services.map((service) => service.base);
  try {
    const names = await onboard(bases[0]!, `f${Math.random().toString(36).slice(2, 7)}`, 4);
    const workload = new Workload(names, {
      conditionPool: 64,
      amountPool: 32,
      expirySeconds: EXPIRY_SECONDS,
    });
    const tracked: Tracked[] = [];
    let maxAnswerMs = 0;
    let slowestAnswer = 'none';
    /** When the fault was injected (set then; read by the requests in flight). */
    const injected: { at?: number } = {};
    let stopping = false;
    /** When the fault healed (set then; read by the requests in flight). */
    const heal: { at?: number } = {};
    const failures: Record<string, number> = {};
    /** What the fault itself found wrong (the service's health, a write to a foreign ledger). */
    const faultProblems: string[] = [];
    /** Per instance, when it first answered below 500 a request asked after the heal. */
    const answeringAgain = new Map<string, number>();
    /** When `at` (Date.now()) was, relative to the fault's injection and heal. */
    const sinceFault = (at: number): string =>
      injected.at === undefined || at < injected.at
        ? 'before the fault'
        : heal.at === undefined || at < heal.at
          ? `${at - injected.at} ms into the fault`
          : `${at - heal.at} ms after the heal`;
    /** One request, retried with the same body until it gets an answer that is not 5xx. */
    const request = async (
      t: Tracked,
      base: string,
      call_: { method: string; url: string; body?: string; headers: Record<string, string> },
    ): Promise<Answer> => {
      for (;;) {
        const asked = Date.now();
        const started = performance.now();
        const answer = await call(base, call_.method, call_.url, call_.body, call_.headers).catch(
          () => undefined,
        );
        const answerMs = performance.now() - started;
        if (answerMs > maxAnswerMs) {
          maxAnswerMs = answerMs;
          slowestAnswer = `${call_.method} ${call_.url}: ${answer?.status ?? 'no answer'} ${answerMs.toFixed(0)} ms, asked ${sinceFault(asked)}`;
        }
        if (answer !== undefined && answer.status < 500) {
          if (heal.at !== undefined && asked >= heal.at && !answeringAgain.has(base))
            answeringAgain.set(base, Date.now());
          t.answers.add(
            answer.body?.transferState ??
              answer.body?.errorInformation?.errorCode ??
              String(answer.status),
          );
          return answer;
        }
        const failure =
          answer === undefined
            ? 'no answer'
            : `HTTP ${answer.status} ${answer.body?.errorInformation?.errorCode ?? '(no FSPIOP error)'}`;
        failures[failure] = (failures[failure] ?? 0) + 1;
        await sleep(RETRY_PAUSE_MS);
      }
    };
    const faultMs = options.faultMs ?? options.durationMs / 3;
    // Paced so that the transfers spread over the whole run, the fault and what follows its heal
    // included (a cap reached earlier would leave the recovery unmeasured): a client's pauses
    // average its share of the run.
    const runMs = (2 * options.durationMs) / 3 + faultMs;
    const pauseMs = (runMs * options.clients) / options.maxTransfers;
    const client = async (): Promise<void> => {
      while (!stopping && tracked.length < options.maxTransfers) {
        await sleep(2 * pauseMs * Math.random());
        const { transfer, condition, ilpPacket } = workload.next(false);
        const prepareBody = workload.prepareBody(transfer, condition, ilpPacket, false);
        const t: Tracked = {
          sent: transfer,
          payer: names[transfer.payer]!,
          payee: names[transfer.payee]!,
          prepareBody,
          fulfilBody: workload.fulfilBody(transfer),
          answers: new Set(),
          // With two instances, each transfer is prepared on one and fulfilled on the other.
          prepareBase: bases[tracked.length % bases.length]!,
          fulfilBase: bases[(tracked.length + 1) % bases.length]!,
          expiresAt: Date.parse(JSON.parse(prepareBody).expiration as string),
          startedAt: Date.now(),
        };
        tracked.push(t);
        const prepared = await request(t, t.prepareBase, {
          method: 'POST',
          url: '/transfers',
          body: t.prepareBody,
          headers: workload.headers(t.payer, t.payee),
        });
        if (prepared.body?.transferState === 'RESERVED') await fulfil(t);
        t.doneAt = Date.now();
      }
    };
    const fulfil = (t: Tracked): Promise<Answer> =>
      request(t, t.fulfilBase, {
        method: 'PUT',
        url: `/transfers/${t.sent.id}`,
        body: t.fulfilBody,
        headers: workload.headers(t.payee, t.payer),
      });
    const ask = (t: Tracked): Promise<Answer> =>
      request(t, t.prepareBase, {
        method: 'GET',
        url: `/transfers/${t.sent.id}`,
        headers: { 'fspiop-source': t.payer },
      });

    const traffic = Promise.all(Array.from({ length: options.clients }, client));
    await sleep(options.durationMs / 3);
    const injectedAt = Date.now();
    injected.at = injectedAt;
    log(`${fault}: injected after ${tracked.length} transfers`);
    /** The node a partition cut off (undefined: none, or the primary flapping). */
    let cutOff: MeshNode | undefined;
    /** The cluster formatted anew at the original's addresses (the foreign ledger). */
    let foreign: RunningCluster | undefined;
    const onLedger = (LEDGER_FAULTS as readonly Fault[]).includes(fault);
    if (onLedger) {
      for (const i of cluster.addresses.keys()) await cluster.signal(i, 'SIGKILL');
      if (fault === 'foreign ledger') {
        const { clusterId, addresses } = cluster;
        const formatted = await formatCluster({
          replacing: { clusterId, addresses },
          ...(mesh && { places: mesh }),
        });
        foreign = await formatted.start();
      }
      // Killed, not stopped: a graceful stop drains with Fastify's own 503, not an FSPIOP error.
      await crash(services[0]!);
      services[0] = await start(0, '/live');
      const why = fault === 'foreign ledger' ? /is not the ledger/ : /ledger/;
      faultProblems.push(...(await healthDown(services[0].base, why)));
    }
    switch (fault) {
      case 'replica kill -9':
        await cluster.signal(0, 'SIGKILL');
        break;
      case 'service kill -9':
        await crash(services[0]!);
        // The clients keep retrying meanwhile, as DFSPs whose connection broke.
        services[0] = await start(0);
        break;
      case 'quorum loss':
        await cluster.signal(1, 'SIGSTOP');
        await cluster.signal(2, 'SIGSTOP');
        break;
      case 'mysql kill -9':
        await mariadb!.crash();
        break;
      case 'mysql restart':
        await mariadb!.pause();
        break;
      case 'mysql hang':
        mariadb!.signal('SIGSTOP');
        break;
      case 'backup cut off':
        cutOff = (cluster.primary() + 1) % cluster.addresses.length;
        break;
      case 'primary cut off':
        cutOff = cluster.primary();
        break;
      case 'service cut off':
        cutOff = 'service';
        break;
      case 'primary flapping':
      case 'ledger late':
      case 'foreign ledger':
        break;
    }
    if (cutOff !== undefined) {
      log(`${fault}: cutting off ${cutOff === 'service' ? 'the service' : `replica ${cutOff}`}`);
      await mesh!.cut(cutOff);
    }
    if (fault === 'primary flapping') await flap(cluster, mesh!, faultMs, log);
    else await sleep(faultMs);
    if (cutOff !== undefined) await mesh!.mend(cutOff);
    if (fault === 'replica kill -9') cluster.restart(0);
    if (fault === 'quorum loss') {
      await cluster.signal(1, 'SIGCONT');
      await cluster.signal(2, 'SIGCONT');
    }
    if (fault === 'mysql hang') mariadb!.signal('SIGCONT');
    else if (onMySql) await mariadb!.resume();
    if (foreign !== undefined) {
      faultProblems.push(...(await foreignWrites(foreign, tracked, names)));
      await foreign.stop();
    }
    if (onLedger) for (const i of cluster.addresses.keys()) cluster.restart(i);
    const healedAt = Date.now();
    heal.at = healedAt;
    if (foreign !== undefined) {
      // Back on its own cluster: restarted, it serves once the replicas answer.
      await crash(services[0]!);
      services[0] = await start(0, '/live');
    }
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
      const got = await ask(t);
      if (got.body?.transferState === 'RESERVED') await fulfil(t);
    });
    const lastExpiry = Math.max(...tracked.map((t) => t.expiresAt));
    await sleep(Math.max(0, lastExpiry + SETTLE_MS - Date.now()));
    const reported = new Map<string, string>();
    await pool(tracked, 8, async (t) => {
      const got = await ask(t);
      reported.set(
        t.sent.id,
        got.body?.transferState ??
          `HTTP ${got.status} ${got.body?.errorInformation?.errorCode ?? ''}`,
      );
    });
    const recovered = bases.map((base) => answeringAgain.get(base) ?? NaN);
    const reconciled = await reconcile(tracked, reported, names, cluster);
    const disagreements =
      database === undefined
        ? []
        : await metadataDisagreements(tracked, mariadb!, database, cluster);
    const restarted = services.flatMap((service) =>
      service.exit === undefined ? [] : [`${service.base} exited: ${JSON.stringify(service.exit)}`],
    );
    return {
      ...reconciled,
      lost: reconciled.lost + disagreements.length,
      problems: [...faultProblems, ...restarted, ...disagreements, ...reconciled.problems],
      scenario: fault,
      maxAnswerMs: Math.round(maxAnswerMs),
      slowestAnswer,
      duringFault,
      failures,
      recoverSeconds: Math.round((Math.max(...recovered) - healedAt) / 100) / 10,
    };
  } finally {
    await Promise.all(services.map((service) => stopProcess(service)));
    rmSync(dataDir, { recursive: true, force: true });
    liveDirs.delete(dataDir);
  }
}

/** Kills the service with SIGKILL; resolves once it has exited. */
async function crash(service: Started): Promise<void> {
  await new Promise<void>((resolve) => {
    service.child.once('exit', () => resolve());
    service.child.kill('SIGKILL');
  });
}

/** How long a restarted service may take to say in /health why it does not serve. */
const HEALTH_WAIT_MS = 30_000;

/**
 * The service's /health while it cannot serve: DOWN (503) with a reason matching `why`, the
 * ledger DOWN. What is not so is told.
 */
async function healthDown(base: string, why: RegExp): Promise<string[]> {
  const health = await until(
    `/health naming ${why}`,
    async () => {
      const answer = await call(base, 'GET', '/health');
      return answer.status === 200 || why.test(answer.body?.reason ?? '') ? answer : undefined;
    },
    HEALTH_WAIT_MS,
  ).catch((error: Error) => error.message);
  if (typeof health === 'string') return [health];
  const ledger = health.body?.services?.find((s: { name: string }) => s.name.startsWith('ledger'));
  return health.status === 503 && health.body?.status === 'DOWN' && ledger?.status === 'DOWN'
    ? []
    : [`/health without its ledger: ${health.status} ${health.text}`];
}

/**
 * What the service wrote to a ledger not its own, told: the participants' accounts or the
 * transfers, found there.
 */
async function foreignWrites(
  foreign: RunningCluster,
  tracked: readonly Tracked[],
  names: readonly string[],
): Promise<string[]> {
  const ledger = new TigerBeetleLedger({
    clusterId: foreign.clusterId,
    replicaAddresses: foreign.addresses,
  });
  try {
    const balances = await ledger.balances(
      names.map((participant) => ({ participant, currency: CURRENCY })),
    );
    const states = await ledger.transferStates(tracked.map((t) => transferIdToU128(t.sent.id)));
    return [
      ...names.filter((_, i) => balances[i] !== undefined).map((n) => `${n}'s accounts`),
      ...tracked.filter((_, i) => states[i] !== 'unknown').map((t) => `transfer ${t.sent.id}`),
    ].map((written) => `the foreign ledger holds ${written}`);
  } finally {
    await ledger.close();
  }
}

/** Cuts off whichever replica is primary, mends it, and again, until `forMs` has passed. */
async function flap(
  cluster: RunningCluster,
  mesh: Mesh,
  forMs: number,
  log: (line: string) => void,
): Promise<void> {
  const until = Date.now() + forMs;
  while (Date.now() < until) {
    const primary = cluster.primary();
    log(`primary flapping: cutting off replica ${primary}`);
    await mesh.cut(primary);
    await sleep(Math.min(FLAP_DOWN_MS, until - Date.now()));
    await mesh.mend(primary);
    await sleep(Math.min(FLAP_UP_MS, Math.max(0, until - Date.now())));
  }
}

/**
 * The MySQL metadata's own say, read from its table: a transfer's row COMMITTED exactly where the
 * ledger posted it. Each disagreement is told, and counted lost.
 */
async function metadataDisagreements(
  tracked: readonly Tracked[],
  mariadb: RunningMariaDb,
  database: string,
  cluster: RunningCluster,
): Promise<string[]> {
  const db = knexOn(mariadb, database);
  const ledger = new TigerBeetleLedger({
    clusterId: cluster.clusterId,
    replicaAddresses: cluster.addresses,
  });
  try {
    const rows: { transfer_id: string; state: string }[] = await db('transfers').select(
      'transfer_id',
      'state',
    );
    const stored = new Map(rows.map((row) => [row.transfer_id, row.state]));
    const states = await ledger.transferStates(tracked.map((t) => transferIdToU128(t.sent.id)));
    return tracked.flatMap((t, i) => {
      const posted = states[i] === 'committed';
      const row = stored.get(t.sent.id);
      return posted === (row === 'COMMITTED')
        ? []
        : [`${t.sent.id}: the ledger says ${states[i]}, its MySQL row ${row ?? 'none'}`];
    });
  } finally {
    await Promise.all([db.destroy(), ledger.close()]);
  }
}

async function reconcile(
  tracked: readonly Tracked[],
  reported: Map<string, string>,
  names: readonly string[],
  cluster: RunningCluster,
): Promise<
  Omit<
    ScenarioResult,
    'scenario' | 'maxAnswerMs' | 'slowestAnswer' | 'duringFault' | 'failures' | 'recoverSeconds'
  >
> {
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
    const trial = await ledger.trialBalance(CURRENCY);
    let booksOk = trial.debits === trial.credits;
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
  results: readonly (Omit<ScenarioResult, 'scenario' | 'failures' | 'slowestAnswer'> & {
    scenario: string;
  })[],
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
    Number.isNaN(r.recoverSeconds) ? 'never' : String(r.recoverSeconds),
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
  'recover s',
];
