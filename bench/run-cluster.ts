/**
 * Some of bench/run.ts's phases on a TigerBeetle cluster of their own, with a service process of
 * its own against it: start both, onboard, warm up, run the phases, reconcile, check the books of
 * everything sent to that cluster, stop both.
 *
 * run.ts gives every measured phase one of these. TigerBeetle paces its LSM compaction over the
 * requests that follow the ones that wrote the data, so a phase on a cluster that earlier phases
 * wrote to pays part of their compaction in its replica CPU per transfer (bench/README.md, "Ids
 * that need not be derived"); on a cluster of its own a phase follows only its own onboarding and
 * warm-up, the same for every phase. `--shared-cluster` puts all phases on one, as runs did before.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import { ledgerChecks, transferChecks, type Check } from './common';
import { measurePhase, type PhaseRecord, type PhaseSpec, type Target } from './phases';
import { findPids } from './procstat';
import { Books, onboard, positions, reconcile, CURRENCY, Workload } from '../test/support/workload';
import { freePort } from '../test/support/net';
import {
  serviceEnv,
  sleep,
  startProcess,
  stopProcess,
  type Started,
} from '../test/support/service-process';

/**
 * Starts a throwaway cluster, runs `work` with it and its replicas' pids, and stops it whatever
 * happens. The pids are what a phase's CPU accounting reads: they are new with every cluster.
 */
export async function withCluster<T>(
  options: NonNullable<Parameters<typeof startCluster>[0]> & { replicas: 1 | 3 },
  work: (cluster: RunningCluster, pids: number[]) => Promise<T>,
): Promise<T> {
  const cluster = await startCluster(options);
  try {
    const pids = findPids('tigerbeetle', 'start', `--addresses=${cluster.addresses.join(',')}`);
    if (pids.length !== options.replicas)
      throw new Error(`expected ${options.replicas} replica pids, found ${pids.length}`);
    return await work(cluster, pids);
  } finally {
    await cluster.stop();
  }
}

/** What every cluster of a run is set up with. */
export interface ClusterSetup {
  replicas: 1 | 3;
  mainJs: string;
  serviceDir: string;
  /** node options before main.js (--cpu-prof…). */
  nodeArgs: string[];
  /** Participant names are `${prefix}p0…`: the same on every cluster (each starts empty). */
  participantPrefix: string;
  participants: number;
  sampleGets: number;
  warmupS: number;
  /** Where the service's log and its DATA_DIR go: each cluster's service gets its own of both. */
  logDir: string;
}

export interface ClusterRun {
  index: number;
  /** The phases' labels joined: how the books name this cluster. */
  label: string;
  /** The participants onboarded (the same names on every cluster). */
  names: string[];
  /** Seconds from starting the cluster to the participants onboarded: what a new cluster costs. */
  startS: number;
  warmup: PhaseRecord;
  phases: PhaseRecord[];
  reconciliations: Record<string, unknown>[];
  /** The books of every transfer sent to this cluster (warm-up included). */
  checks: Check[];
  /** Date.now() once the service had exited (a profile's window is counted back from it). */
  serviceExitAt: number;
}

export async function runOnCluster(
  index: number,
  specs: readonly PhaseSpec[],
  setup: ClusterSetup,
  log: (message: string) => void,
  interrupted: () => boolean,
): Promise<ClusterRun> {
  const label = specs.map((s) => s.label).join(', ');
  const startedAt = performance.now();
  log(`cluster ${index} (${label}): starting a ${setup.replicas}-replica TigerBeetle cluster`);
  return withCluster({ replicas: setup.replicas }, async (cluster, tbPids) => {
    log(
      `cluster ${cluster.clusterId.toString(16).slice(0, 8)}… on ${cluster.addresses.join(',')} (replica pids ${tbPids.join(',')}) after ${((performance.now() - startedAt) / 1000).toFixed(1)} s`,
    );
    const dataDir = path.join(setup.logDir, `data-${index}`);
    let service: Started | undefined;
    let workload: Workload | undefined;
    try {
      const port = await freePort();
      log(
        `starting the service: node ${[...setup.nodeArgs, setup.mainJs].join(' ')} (port ${port})`,
      );
      const env = { ...serviceEnv(port, cluster, dataDir), SERVICE_DIR: setup.serviceDir };
      service = await startProcess(
        'service',
        [...setup.nodeArgs, setup.mainJs],
        env,
        port,
        path.join(setup.logDir, `service-${index}.log`),
        '/health',
      );
      const names = await onboard(service.base, setup.participantPrefix, setup.participants);
      const positionsBefore = await positions(service.base, names);
      const startS = (performance.now() - startedAt) / 1000;
      log(
        `onboarded ${names.length} participants (${names[0]}…${names[names.length - 1]}) in ${CURRENCY}; cluster and service ready in ${startS.toFixed(1)} s`,
      );

      const w = new Workload(names, { conditionPool: 16_384, amountPool: 64 });
      workload = w;
      const target: Target = { kind: 'service', base: service.base, pid: service.pid };
      const reconciliations: Record<string, unknown>[] = [];
      const phase = async (spec: PhaseSpec): Promise<PhaseRecord> => {
        if (interrupted()) throw new Error('interrupted');
        return { ...(await measurePhase(spec, target, w, tbPids, true, log)), cluster: index };
      };
      /**
       * Transfers whose completion the load generator did not see, a moment after their phase: see
       * reconcile in test/support/workload.ts.
       */
      const settle = async (what: string, settleMs: number): Promise<void> => {
        await sleep(settleMs);
        const { counts: found, failures } = await reconcile(
          service!.base,
          w,
          [...w.sent.values()].filter((t) => t.state !== 'committed'),
        );
        const counts = {
          open: found.open,
          committedLate: found.committedLate,
          fulfilledNow: found.fulfilledNow,
          missing: found.neverArrived,
          failed: found.failed,
        };
        reconciliations.push({
          label: what,
          cluster: index,
          ...counts,
          failures: failures.slice(0, 10),
        });
        if (counts.open > 0)
          log(
            `reconciled after ${what}: ${JSON.stringify(counts)}${failures.length > 0 ? `\n    ${failures.slice(0, 5).join('\n    ')}` : ''}`,
          );
      };

      // Every service process is new, so every cluster warms its JIT up before anything is
      // measured.
      log(
        `warm-up: FSPIOP at 16 connections for ${setup.warmupS} s (counted in the books, not in the table)`,
      );
      const warmup = await phase({
        label: 'warm-up',
        scenario: 'fspiop',
        connections: 16,
        durationS: setup.warmupS,
      });
      await settle('warm-up', 300);
      let maxUnansweredAtTeardown = warmup.load.connections;
      const phases: PhaseRecord[] = [];
      for (const spec of specs) {
        phases.push(await phase(spec));
        maxUnansweredAtTeardown += spec.connections;
        await settle(spec.label, 300);
      }
      // A second look at the transfers the service did not know a moment after their phase.
      await settle('final', 1000);

      log(`checking the books of cluster ${index}`);
      const sent = [...w.sent.values()];
      const committed = sent.filter((t) => t.state === 'committed');
      const missing = sent.filter((t) => t.state === 'sent');
      const notCommitted = sent.filter((t) => t.state === 'reserved' || t.state === 'failed');
      const checks: Check[] = [
        {
          name: 'every transfer that reached the service is COMMITTED',
          pass: notCommitted.length === 0 && missing.length <= maxUnansweredAtTeardown,
          detail: `${sent.length} sent, ${committed.length} committed, ${notCommitted.length} not committed, ${missing.length} never reached the service (at most ${maxUnansweredAtTeardown} may: one per connection at each phase's end)`,
        },
      ];
      const books = new Books(setup.sampleGets);
      for (const t of committed) books.add(t);
      checks.push(
        ...(await transferChecks(service.base, names, positionsBefore, books)),
        ...(await ledgerChecks(names, cluster)),
      );

      log('stopping the service');
      await stopProcess(service);
      service = undefined;
      return {
        index,
        label,
        names,
        startS,
        warmup,
        phases,
        reconciliations,
        checks,
        serviceExitAt: Date.now(),
      };
    } finally {
      workload?.stop();
      if (service !== undefined) await stopProcess(service);
      fs.rmSync(dataDir, { recursive: true, force: true });
      log(`stopping cluster ${index}`);
    }
  });
}

/**
 * The books of several clusters as one list: a check per name, PASS only where it passed on every
 * cluster. A detail that is the same one line on every cluster is said once; otherwise a line per
 * cluster, its first line where it passed and the whole of it (the positions table) where it
 * failed.
 */
export function mergeChecks(runs: readonly { label: string; checks: readonly Check[] }[]): Check[] {
  if (runs.length === 1) return [...runs[0]!.checks];
  const names = [...new Set(runs.flatMap((r) => r.checks.map((c) => c.name)))];
  return names.map((name) => {
    const of = runs.flatMap((r) =>
      r.checks.filter((c) => c.name === name).map((check) => ({ label: r.label, check })),
    );
    const first = of[0]!.check.detail;
    const same = of.every(({ check }) => check.detail === first) && !first.includes('\n');
    const where = of.length === runs.length ? 'every cluster' : of.map((o) => o.label).join(', ');
    return {
      name,
      pass: of.every(({ check }) => check.pass),
      detail: same
        ? `${first} (${where})`
        : of
            .map(
              ({ label, check }) =>
                `${label}: ${check.pass ? check.detail.split('\n')[0] : check.detail}`,
            )
            .join('\n'),
    };
  });
}
