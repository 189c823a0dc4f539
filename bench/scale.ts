/**
 * Scale-out: the same complete FSPIOP transfers driven at one service instance, then at two, with
 * the same total connections, both instances on one MariaDB (MYSQL_ENABLED) and one three-replica
 * TigerBeetle cluster. With two instances a transfer's fulfil goes to either instance at random,
 * as a load balancer would send it (`--fulfil other`: always to the one that did not prepare it).
 * Prints transfers/s, the ratio, latency, CPU per transfer
 * by process and the bounds that CPU puts on each figure, then the books. With
 * `--connections-per-instance`, each round also drives the two instances with twice the
 * connections (the same load per instance as the one-instance phase: load grew, the operator
 * scaled out) and prints that ratio beside the fixed-total one. bench/README.md ("Scale-out")
 * explains every figure.
 *
 *   npx tsx bench/scale.ts [--fulfil random|other|same] [--connections 64]
 * [--connections-per-instance] [--duration 8] [--rounds 2] [--warmup 3] [--no-build|--build]
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startMariaDb, type RunningMariaDb } from '../test/support/mariadb';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import {
  buildIfStale,
  checkLines,
  failOnChecks,
  flags,
  gitDescription,
  gitLabel,
  ledgerChecks,
  machineDescription,
  paragraphs,
  runMain,
  scrapeMetrics,
  sendOn,
  transferChecks,
  writeResult,
  type Check,
  table,
  progressLog,
  mariadbStatus,
} from './common';
import { cpuBetween, cpuSeconds, cpuSnapshot, findPids, type CpuUsed } from './procstat';
import { Books, onboard, positions, reconcile, Workload } from '../test/support/workload';
import {
  REPO_DIR,
  serviceEnv,
  sleep,
  startProcess,
  stopProcess,
  type Started,
  mysqlEnv,
} from '../test/support/service-process';
import { freePort } from '../test/support/net';
import { summarise, type LoadResult } from './load';

/**
 * Where a transfer's fulfil goes with two instances: to the other one, to either at random (a load
 * balancer), or to the preparer.
 */
type FulfilAt = 'other' | 'random' | 'same';

interface Options {
  fulfilAt: FulfilAt;
  connections: number;
  /** Also a 2-instance phase per round at `connections` per instance (2 × connections in all). */
  perInstance: boolean;
  durationS: number;
  rounds: number;
  warmupS: number;
  participants: number;
  sampleGets: number;
  build: boolean;
  forceBuild: boolean;
}

function parseOptions(argv: string[]): Options {
  const { has, number, value } = flags(argv);
  const fulfilAt = value('--fulfil') ?? 'random';
  if (fulfilAt !== 'other' && fulfilAt !== 'random' && fulfilAt !== 'same')
    throw new Error(`--fulfil ${fulfilAt}: other, random or same`);
  return {
    fulfilAt,
    connections: number('--connections', 64, true),
    perInstance: has('--connections-per-instance'),
    durationS: number('--duration', 8, true),
    rounds: number('--rounds', 2, true),
    warmupS: number('--warmup', 3),
    participants: 8,
    sampleGets: 500,
    build: !has('--no-build'),
    forceBuild: has('--build'),
  };
}

/** An instance the load reaches: its process and a keep-alive agent of its own. */
interface Instance {
  name: string;
  started: Started;
  agent: http.Agent;
}

/**
 * A closed loop of `connections` clients for `durationS`: client i prepares at instance i mod n
 * and fulfils at the instance `fulfilAt` says. Unlike autocannon (one host per connection) a
 * client may change host between requests; every client finishes its transfer before the phase
 * ends, so none is left in flight.
 */
async function crossingLoad(
  instances: readonly Instance[],
  fulfilAt: FulfilAt,
  connections: number,
  durationS: number,
  w: Workload,
): Promise<LoadResult> {
  const latencies = {
    all: [] as number[],
    prepare: [] as number[],
    fulfil: [] as number[],
    complete: [] as number[],
  };
  const statusCodes: Record<string, number> = {};
  const errorSamples = new Set<string>();
  let transfers = 0;
  let errors = 0;
  let non2xx = 0;
  let unexpected = 0;
  const started = performance.now();
  const deadline = started + durationS * 1000;
  const request = async (
    at: Instance,
    kind: 'prepare' | 'fulfil',
    method: string,
    url: string,
    headers: Record<string, string>,
    body: string,
    okStatus: number,
    okState: string,
  ): Promise<boolean> => {
    const answer = await sendOn(at.agent, at.started.port, method, url, headers, body);
    latencies.all.push(answer.ms);
    latencies[kind].push(answer.ms);
    statusCodes[answer.status] = (statusCodes[answer.status] ?? 0) + 1;
    if (answer.status === okStatus && answer.text.includes(`"${okState}"`)) return true;
    if (answer.status === 0) errors++;
    else if (answer.status >= 200 && answer.status < 300) unexpected++;
    else non2xx++;
    if (errorSamples.size < 5)
      errorSamples.add(`${at.name} ${kind}: ${answer.status} ${answer.text.slice(0, 300)}`);
    return false;
  };
  const client = async (i: number): Promise<void> => {
    const preparer = instances[i % instances.length]!;
    const n = instances.length;
    while (performance.now() < deadline) {
      const at = { same: i % n, other: (i + 1) % n, random: Math.floor(Math.random() * n) };
      const fulfiller = instances[at[fulfilAt]]!;
      const { transfer: t, condition, ilpPacket } = w.next(true);
      const payer = w.participants[t.payer]!;
      const payee = w.participants[t.payee]!;
      const t0 = performance.now();
      if (
        !(await request(
          preparer,
          'prepare',
          'POST',
          '/transfers',
          w.headers(payer, payee),
          w.prepareBody(t, condition, ilpPacket, false),
          201,
          'RESERVED',
        ))
      ) {
        t.state = 'failed';
        continue;
      }
      t.state = 'reserved';
      // A refused fulfil leaves the transfer reserved: the reconciliation sees to it.
      if (
        !(await request(
          fulfiller,
          'fulfil',
          'PUT',
          `/transfers/${t.id}`,
          w.headers(payee, payer),
          w.fulfilBody(t),
          200,
          'COMMITTED',
        ))
      )
        continue;
      t.state = 'committed';
      transfers++;
      latencies.complete.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, i) => client(i)));
  return {
    scenario: 'fspiop',
    target: 'service',
    connections,
    durationS: (performance.now() - started) / 1000,
    requests: latencies.all.length,
    transfers,
    non2xx,
    unexpected,
    errors,
    timeouts: 0,
    latency: {
      all: summarise(latencies.all),
      prepare: summarise(latencies.prepare),
      fulfil: summarise(latencies.fulfil),
      complete: summarise(latencies.complete),
    },
    statusCodes,
    errorSamples: [...errorSamples],
  };
}

/** Ledger requests and their commands so far, summed over the instances (GET /metrics). */
async function ledgerBatches(
  instances: readonly Instance[],
): Promise<{ requests: number; commands: number }> {
  const total = { requests: 0, commands: 0 };
  for (const instance of instances) {
    for (const s of (await scrapeMetrics(instance.started.base)) ?? []) {
      if (Object.keys(s.labels).length > 0) continue;
      if (s.name === 'ledger_batch_commands_count') total.requests += s.value;
      if (s.name === 'ledger_batch_commands_sum') total.commands += s.value;
    }
  }
  return total;
}

/** InnoDB's lock contention counters so far (SHOW GLOBAL STATUS): row lock waits, deadlocks. */
async function innodbContention(
  db: RunningMariaDb,
): Promise<{ lockWaits: number; deadlocks: number }> {
  const values = await mariadbStatus(db, ['Innodb_row_lock_waits', 'Innodb_deadlocks']);
  return {
    lockWaits: values.get('Innodb_row_lock_waits') ?? Number.NaN,
    deadlocks: values.get('Innodb_deadlocks') ?? Number.NaN,
  };
}

/**
 * What a phase is compared as: 1 instance at `connections`; 2 instances sharing the same total
 * (fixed total: the same load spread); 2 instances at `connections` each (per instance: the load
 * doubled, each instance as busy as the one alone).
 */
type Form = 'one' | 'fixedTotal' | 'perInstance';

interface Phase {
  label: string;
  form: Form;
  instances: number;
  load: LoadResult;
  cpu: CpuUsed;
  ledgerRequests: number;
  ledgerCommands: number;
  /** InnoDB row lock waits and deadlocks during the phase. */
  lockWaits: number;
  deadlocks: number;
}

/**
 * CPU ms per complete transfer by process, and the bounds it implies (see bench/README.md,
 * "Scale-out").
 */
function perTransfer(p: Phase, cores: number) {
  const ms = (seconds: number): number => (seconds * 1000) / p.load.transfers;
  const instancesMs = ms((p.cpu.target ?? Number.NaN) + (p.cpu.extra['instance B'] ?? 0));
  const replicasMs = ms(p.cpu.tigerbeetle);
  const mariadbMs = ms(p.cpu.extra['mariadb'] ?? 0);
  const loadGeneratorMs = ms(p.cpu.loadGenerator);
  const otherMs = ms(p.cpu.others);
  // Our processes only: on a shared machine the others' CPU says nothing about this topology.
  const sumMs = instancesMs + replicasMs + mariadbMs + loadGeneratorMs;
  return {
    instancesMs,
    replicasMs,
    mariadbMs,
    loadGeneratorMs,
    otherMs,
    sumMs,
    machineBound: (cores * 1000) / sumMs,
    /**
     * Each instance on a core of its own, everything else elsewhere: instances × 1000 ÷ instance ms
     * per transfer.
     */
    coreEachBound: (p.instances * 1000) / instancesMs,
  };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const startedAt = new Date();
  const log = progressLog(startedAt.getTime());
  const warnings = buildIfStale(REPO_DIR, { build: options.build, force: options.forceBuild }, log);
  const git = gitDescription(REPO_DIR);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-scale-'));
  let cluster: RunningCluster | undefined;
  let mariadb: RunningMariaDb | undefined;
  const instances: Instance[] = [];
  const phases: Phase[] = [];
  const checks: Check[] = [];
  const lost: string[] = [];
  let workload: Workload | undefined;
  try {
    log('starting a three-replica TigerBeetle cluster and MariaDB');
    cluster = await startCluster({ replicas: 3 });
    mariadb = await startMariaDb({ bufferPoolMiB: 256 });
    const database = await mariadb.createDatabase();
    const db = mariadb;
    const tbPids = findPids('tigerbeetle', 'start', `--addresses=${cluster.addresses.join(',')}`);
    const mariadbPids = findPids('mariadbd', `--port=${mariadb.port}`);
    for (const name of ['A', 'B']) {
      const port = await freePort();
      const env = {
        ...serviceEnv(port, cluster, path.join(workDir, `data-${name}`)),
        ...mysqlEnv(mariadb, database),
      };
      const started = await startProcess(
        `instance ${name}`,
        [path.join(REPO_DIR, 'dist/src/main.js')],
        env,
        port,
        path.join(workDir, `instance-${name}.log`),
        '/health',
      );
      instances.push({
        name,
        started,
        agent: new http.Agent({ keepAlive: true, maxSockets: 2 * options.connections }),
      });
      log(`instance ${name}: pid ${started.pid}, port ${port}`);
    }
    const [a, b] = instances as [Instance, Instance];
    const names = await onboard(
      a.started.base,
      `scale${Math.random().toString(16).slice(2, 6)}`,
      options.participants,
    );
    const positionsBefore = await positions(a.started.base, names);
    const w = new Workload(names, { conditionPool: 16_384, amountPool: 64 });
    workload = w;

    const run = async (
      label: string,
      form: Form,
      targets: Instance[],
      durationS: number,
    ): Promise<Phase> => {
      const batches0 = await ledgerBatches(instances);
      const locks0 = await innodbContention(db);
      const cpu0 = cpuSnapshot({
        target: a.started.pid,
        tigerbeetle: tbPids,
        extra: { 'instance B': [b.started.pid], mariadb: mariadbPids },
      });
      const load = await crossingLoad(
        targets,
        options.fulfilAt,
        form === 'perInstance' ? 2 * options.connections : options.connections,
        durationS,
        w,
      );
      const cpu = cpuBetween(cpu0, cpuSnapshot(cpu0.pids));
      const batches1 = await ledgerBatches(instances);
      const locks1 = await innodbContention(db);
      // A process gone mid-phase (the OOM killer takes replicas on a crowded machine) makes its CPU
      // delta meaningless.
      const gone = [...tbPids, ...mariadbPids, a.started.pid, b.started.pid].filter(
        (pid) => cpuSeconds(pid) === undefined,
      );
      if (gone.length > 0)
        lost.push(
          `${label}: pid ${gone.join(', ')} gone (replicas ${tbPids.join(', ')}, MariaDB ${mariadbPids.join(', ')}, instances ${a.started.pid}, ${b.started.pid})`,
        );
      const phase = {
        label,
        form,
        instances: targets.length,
        load,
        cpu,
        ledgerRequests: batches1.requests - batches0.requests,
        ledgerCommands: batches1.commands - batches0.commands,
        lockWaits: locks1.lockWaits - locks0.lockWaits,
        deadlocks: locks1.deadlocks - locks0.deadlocks,
      };
      log(
        `${label}: ${(load.transfers / load.durationS).toFixed(0)} transfers/s, p99 ${load.latency.all.p99.toFixed(1)} ms, machine ${(cpu.machineBusy / cpu.wallS).toFixed(2)} cores, errors ${load.errors}/${load.non2xx}/${load.unexpected}${load.errorSamples.length > 0 ? `\n    e.g. ${load.errorSamples.join('\n    e.g. ')}` : ''}`,
      );
      return phase;
    };
    log(`warm-up: ${options.warmupS} s on each instance alone, then on both`);
    for (const targets of [[a], [b], [a, b]]) await run('warm-up', 'one', targets, options.warmupS);
    for (let round = 1; round <= options.rounds; round++) {
      phases.push(await run(`1 instance, round ${round}`, 'one', [a], options.durationS));
      phases.push(
        await run(`2 instances, round ${round}`, 'fixedTotal', [a, b], options.durationS),
      );
      if (options.perInstance)
        phases.push(
          await run(
            `2 instances, ${options.connections} each, round ${round}`,
            'perInstance',
            [a, b],
            options.durationS,
          ),
        );
    }

    log('checking the books (through instance A, whichever instance prepared or fulfilled)');
    await sleep(500);
    const { counts, failures } = await reconcile(
      a.started.base,
      w,
      [...w.sent.values()].filter((t) => t.state !== 'committed'),
    );
    const sent = [...w.sent.values()];
    const notCommitted = sent.filter((t) => t.state !== 'committed' && t.state !== 'sent');
    checks.push({
      name: 'every transfer prepared is COMMITTED',
      pass: notCommitted.length === 0 && failures.length === 0,
      detail: `${sent.length} sent; reconciled ${JSON.stringify(counts)}${failures.length > 0 ? `; ${failures.slice(0, 3).join('; ')}` : ''}`,
    });
    const books = new Books(options.sampleGets);
    for (const t of sent) if (t.state === 'committed') books.add(t);
    checks.push(
      ...(await transferChecks(a.started.base, names, positionsBefore, books)),
      ...(await ledgerChecks(names, cluster)),
    );
    const [atA, atB] = [
      await positions(a.started.base, names),
      await positions(b.started.base, names),
    ];
    const differ = names.filter((n) => atA.get(n) !== atB.get(n));
    checks.push({
      name: 'both instances answer the same positions',
      pass: differ.length === 0,
      detail: differ.length === 0 ? `${names.length} participants` : differ.join(', '),
    });
    checks.push({
      name: 'every process of the run alive through every phase',
      pass: lost.length === 0,
      detail: lost.length === 0 ? 'yes' : `${lost.join('; ')}: CPU figures from then on are wrong`,
    });
    const refused = phases.reduce(
      (n, p) => n + p.load.errors + p.load.non2xx + p.load.unexpected,
      0,
    );
    checks.push({
      name: 'no errors or non-2xx answers under load',
      pass: refused === 0,
      detail: String(refused),
    });
  } catch (error) {
    process.stderr.write(`instance logs kept in ${workDir}\n`);
    throw error;
  } finally {
    workload?.stop();
    for (const instance of instances) {
      instance.agent.destroy();
      await stopProcess(instance.started);
    }
    await mariadb?.stop();
    await cluster?.stop();
  }

  // ---- report
  const cores = os.cpus().length;
  const tps = (p: Phase): number => p.load.transfers / p.load.durationS;
  const rows = phases.map((p) => {
    const c = perTransfer(p, cores);
    const f = (v: number, digits = 3): string => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');
    return [
      p.label,
      String(p.load.connections),
      f(tps(p), 0),
      f(p.load.latency.all.p50, 1),
      f(p.load.latency.all.p99, 1),
      f(p.load.latency.complete.p99, 1),
      f(p.ledgerCommands / p.ledgerRequests, 1),
      f(p.ledgerRequests / p.load.durationS, 0),
      `${p.lockWaits} / ${p.deadlocks}`,
      f(p.cpu.machineBusy / p.cpu.wallS, 2),
      f(p.cpu.others / p.cpu.wallS, 2),
      f(c.instancesMs),
      f(c.replicasMs),
      f(c.mariadbMs),
      f(c.loadGeneratorMs),
      f(c.sumMs),
      f(c.otherMs),
      f(c.machineBound, 0),
      f(c.coreEachBound, 0),
    ];
  });
  const mean = (form: Form, f: (p: Phase) => number): number => {
    const of = phases.filter((p) => p.form === form);
    return of.reduce((s, p) => s + f(p), 0) / of.length;
  };
  const ratio = (form: Form, f: (p: Phase) => number): string =>
    (mean(form, f) / mean('one', f)).toFixed(2);
  const cpuOf = (form: Form) => ({
    ms: mean(form, (p) => perTransfer(p, cores).instancesMs),
    sum: mean(form, (p) => perTransfer(p, cores).sumMs),
    replicasMs: mean(form, (p) => perTransfer(p, cores).replicasMs),
  });
  const one = cpuOf('one');
  /** The comparison lines of one 2-instance form against the 1-instance phases. */
  const compare = (form: Form, title: string): string[] => {
    const two = cpuOf(form);
    return [
      `${title}: 2 instances ÷ 1 instance = ${ratio(form, tps)}× transfers/s measured (means over ${options.rounds} round(s): ${mean(form, tps).toFixed(0)} ÷ ${mean('one', tps).toFixed(0)}); p99 per request ${ratio(form, (p) => p.load.latency.all.p99)}×; ledger commands per request ${mean('one', (p) => p.ledgerCommands / p.ledgerRequests).toFixed(1)} → ${mean(form, (p) => p.ledgerCommands / p.ledgerRequests).toFixed(1)}; replicas ${one.replicasMs.toFixed(3)} → ${two.replicasMs.toFixed(3)} ms/transfer.`,
      `  CPU bound on this machine: ${cores} cores × 1000 ÷ sum ms (instances + replicas + MariaDB + load generator) = ${cores} × 1000 ÷ ${one.sum.toFixed(3)} = ${((cores * 1000) / one.sum).toFixed(0)} transfers/s with 1 instance, ${cores} × 1000 ÷ ${two.sum.toFixed(3)} = ${((cores * 1000) / two.sum).toFixed(0)} with 2: a second instance cannot add throughput where every process already shares the same ${cores} cores.`,
      `  A core per instance (replicas, MariaDB and load generator on other cores): 1 × 1000 ÷ ${one.ms.toFixed(3)} = ${(1000 / one.ms).toFixed(0)} transfers/s for 1 instance, 2 × 1000 ÷ ${two.ms.toFixed(3)} = ${(2000 / two.ms).toFixed(0)} for 2: ${(2000 / two.ms / (1000 / one.ms)).toFixed(2)}× (target ≥ 1.6×).`,
    ];
  };
  const text = paragraphs(
    `Scale-out benchmark ${startedAt.toISOString()} — service ${gitLabel(git)}, ${cores} cores, MariaDB metadata, 3 TigerBeetle replicas, ${options.connections} connections in every phase${options.perInstance ? ` (and ${2 * options.connections} in the "each" phases)` : ''}; with 2 instances each client prepares on its own instance and fulfils on ${{ other: 'the other', random: 'either, at random (as a load balancer would)', same: 'the same' }[options.fulfilAt]}`,
    table(
      [
        'phase',
        'conc',
        'transfers/s',
        'p50 ms',
        'p99 ms',
        'transfer p99 ms',
        'ledger cmds/request',
        'ledger requests/s',
        'InnoDB lock waits / deadlocks',
        'machine busy cores',
        'other processes cores',
        'instances ms',
        'replicas ms',
        'MariaDB ms',
        'load generator ms',
        'sum ms',
        'other processes ms (not in sum)',
        'machine bound (transfers/s)',
        'a core per instance bound (transfers/s)',
      ],
      rows,
    ),
    [
      ...compare(
        'fixedTotal',
        `Fixed total (${options.connections} connections shared by the 2 instances; the primary comparison)`,
      ),
      ...(options.perInstance
        ? compare(
            'perInstance',
            `Same load per instance (${options.connections} connections each, ${2 * options.connections} in all: the load doubled)`,
          )
        : []),
    ],
    checkLines(checks, warnings),
  );
  process.stdout.write(`\n${text}\n`);
  const file = writeResult(`scale-${startedAt.toISOString().replace(/[:.]/g, '-')}`, {
    startedAt,
    options,
    git,
    warnings,
    machine: machineDescription(),
    phases: phases.map((p) => ({ ...p, perTransfer: perTransfer(p, cores) })),
    checks,
    text,
  });
  process.stdout.write(`\nwrote ${path.relative(REPO_DIR, file)}\n`);
  fs.rmSync(workDir, { recursive: true, force: true });
  failOnChecks(checks);
}

runMain(main);
