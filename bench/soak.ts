/**
 * Soak test (issue 5's stability target: "a 10-minute run at 70 % of peak: no errors, RSS flat —
 * no growth beyond 10 % after warm-up"). A throwaway three-replica TigerBeetle cluster, MariaDB
 * for the metadata (or the embedded store), the built service in production mode as its own
 * process; the peak of complete two-phase FSPIOP transfers is measured for 20 s at 64 connections
 * (autocannon, bench/load.ts), then a paced open loop sends 70 % of that transfer rate for the
 * given minutes while the service's RSS, heap (GET /metrics) and CPU are sampled every 10 s.
 * Afterwards the books are checked. bench/README.md ("Soak") explains the figures.
 *
 *   npx tsx bench/soak.ts [--minutes 10] [--metadata mysql|embedded]
 *   options: --ratio 0.7 | --rate N (transfers/s)  --peak-seconds 20  --peak-connections 64
 * --participants 16
 *            --sample-seconds 10  --warmup-minutes 1  --max-in-flight 1024  --sockets 256
 * --buffer-pool-mib 1024
 *            --cache-grid 256MiB
 *            --no-build | --build  --no-wait
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startMariaDb, type RunningMariaDb } from '../test/support/mariadb';
import { startCluster, type RunningCluster } from '../test/support/tigerbeetle-cluster';
import {
  buildIfStale,
  gitDescription,
  ledgerChecks,
  runMain,
  sendOn,
  transferChecks,
  type Check,
  type TimedAnswer,
  progressLog,
  mariadbStatus,
  mariadbQuery,
} from './common';
import { cpuBetween, cpuSnapshot, findPids, memoryMiB } from './procstat';
import {
  OTHER_BENCHMARKS,
  median,
  otherBenchmarks,
  parseOptions,
  serviceMetrics,
  type MinuteReport,
  type MinuteStats,
  type Sample,
  type ServiceMetrics,
} from './soak-parts';
import { soakReport } from './soak-report';
import {
  Books,
  onboard,
  positions,
  reconcile,
  CURRENCY,
  Workload,
  type SentTransfer,
} from '../test/support/workload';
import {
  REPO_DIR,
  serviceEnv,
  sleep,
  startProcess,
  stopProcess,
  tail,
  type Started,
  mysqlEnv,
} from '../test/support/service-process';
import { freePort } from '../test/support/net';
import { drive, summarise, type LoadResult } from './load';

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const t0 = Date.now();
  const log = progressLog(t0);
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    log('interrupted: stopping the load (books and report follow)');
  });

  if (options.wait) {
    // Other engineers run benchmarks back to back: wait for three quiet polls in a row (20 s).
    const deadline = Date.now() + 15 * 60_000;
    for (let quiet = 0; quiet < 3; ) {
      const others = otherBenchmarks();
      quiet = others.length === 0 ? quiet + 1 : 0;
      if (quiet === 3) break;
      if (Date.now() > deadline)
        throw new Error(`another benchmark still runs after 15 min:\n${others.join('\n')}`);
      if (others.length > 0)
        log(
          `waiting for another benchmark to finish (pgrep -f '${OTHER_BENCHMARKS}'): ${others[0]}`,
        );
      await sleep(10_000);
      if (interrupted) throw new Error('interrupted');
    }
  }
  const warnings: string[] = [];
  if (options.build)
    warnings.push(...buildIfStale(REPO_DIR, { build: true, force: options.forceBuild }, log));
  const mainJs = path.join(REPO_DIR, 'dist/src/main.js');
  if (!fs.existsSync(mainJs)) throw new Error(`${mainJs} missing: run npm run build`);
  const git = gitDescription(REPO_DIR);

  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-soak-'));
  let cluster: RunningCluster | undefined;
  let mariadb: RunningMariaDb | undefined;
  let service: Started | undefined;
  let workload: Workload | undefined;
  let agent: http.Agent | undefined;
  const checks: Check[] = [];
  const samples: Sample[] = [];
  const minutes: MinuteReport[] = [];
  let peak: LoadResult | undefined;
  let peakWarmup: LoadResult | undefined;
  let targetRate = 0;
  let soakWallS = 0;
  let soakTransfers = 0;
  let maxBacklog = 0;
  let mysqlRows: string | undefined;
  let keepLogs = false;
  const reconciliations: Record<string, unknown>[] = [];
  const books = new Books(options.sampleGets);

  try {
    log('starting a three-replica TigerBeetle cluster');
    cluster = await startCluster({ replicas: 3, cacheGrid: options.cacheGrid });
    const tbPids = findPids('tigerbeetle', 'start', `--addresses=${cluster.addresses.join(',')}`);
    log(`cluster on ${cluster.addresses.join(',')} (replica pids ${tbPids.join(',')})`);

    const servicePort = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...serviceEnv(servicePort, cluster, path.join(workDir, 'data')),
      MYSQL_ENABLED: 'false',
    };
    let mariadbPids: number[] = [];
    let database = '';
    if (options.metadata === 'mysql') {
      log('starting MariaDB');
      mariadb = await startMariaDb({ bufferPoolMiB: options.bufferPoolMiB });
      database = await mariadb.createDatabase();
      mariadbPids = findPids('mariadbd', `--port=${mariadb.port}`);
      Object.assign(env, mysqlEnv(mariadb, database));
      log(
        `MariaDB on 127.0.0.1:${mariadb.port}, database ${database} (pid ${mariadbPids.join(',')})`,
      );
    }
    const nodeArgs: string[] = [];
    log(
      `starting the service: node ${[...nodeArgs, 'dist/src/main.js'].join(' ')} (port ${servicePort}, metadata ${options.metadata})`,
    );
    service = await startProcess(
      'service',
      [...nodeArgs, mainJs],
      env,
      servicePort,
      path.join(workDir, 'service.log'),
      '/health',
    );
    const svc = service;

    const names = await onboard(
      svc.base,
      `soak${Math.random().toString(16).slice(2, 6)}`,
      options.participants,
    );
    const positionsBefore = await positions(svc.base, names);
    log(
      `onboarded ${names.length} participants (${names[0]}…${names[names.length - 1]}), net debit cap and liquidity 1e9 ${CURRENCY} each`,
    );

    // Amounts 1.00–500.00, payer and payee uniform over all ordered pairs: every pair goes both
    // ways, so each position is a zero-drift random walk (~±10^5 after 10^6 transfers), far inside
    // 1e9.
    workload = new Workload(names, { conditionPool: 16_384, amountPool: 64 });
    const w = workload;
    /** Transfers whose completion the load generator did not see: test/support/workload.ts. */
    const settle = async (label: string, open: SentTransfer[]): Promise<void> => {
      const { counts, failures } = await reconcile(svc.base, w, open);
      for (const t of open) if (t.state === 'committed') books.add(t);
      reconciliations.push({ label, ...counts, failures: failures.slice(0, 10) });
      if (counts.open > 0) log(`reconciled ${label}: ${JSON.stringify(counts)}`);
    };
    /**
     * Folds the transfers autocannon tracked into the books, reconciles the rest, forgets them all.
     */
    const settleTracked = async (label: string): Promise<void> => {
      await sleep(300);
      const open: SentTransfer[] = [];
      for (const t of w.sent.values()) {
        if (t.state === 'committed') books.add(t);
        else open.push(t);
      }
      w.sent.clear();
      await settle(label, open);
    };

    // ---- peak
    log(`peak warm-up: ${options.peakWarmupSeconds} s at 16 connections`);
    peakWarmup = await drive({
      url: svc.base,
      scenario: 'fspiop',
      target: 'service',
      connections: 16,
      durationS: options.peakWarmupSeconds,
      workload: w,
      track: true,
    });
    await settleTracked('peak warm-up');
    log(
      `peak: ${options.peakSeconds} s of complete transfers at ${options.peakConnections} connections`,
    );
    peak = await drive({
      url: svc.base,
      scenario: 'fspiop',
      target: 'service',
      connections: options.peakConnections,
      durationS: options.peakSeconds,
      workload: w,
      track: true,
    });
    await settleTracked('peak');
    const peakRate = peak.transfers / peak.durationS;
    targetRate = options.rate ?? peakRate * options.ratio;
    log(
      `peak: ${peakRate.toFixed(0)} transfers/s (${(peak.requests / peak.durationS).toFixed(0)} req/s), p50 ${peak.latency.all.p50.toFixed(2)} ms, p99 ${peak.latency.all.p99.toFixed(2)} ms, ` +
        `errors ${peak.errors}, non-2xx ${peak.non2xx}, unexpected ${peak.unexpected}`,
    );
    if (peakRate <= 0) throw new Error('no transfer completed during the peak phase');
    log(
      `soak: ${options.minutes} min at ${options.rate === undefined ? `${(options.ratio * 100).toFixed(0)} % of peak` : 'a fixed rate'} = ${targetRate.toFixed(1)} transfers/s (${(2 * targetRate).toFixed(0)} req/s), paced, sampling every ${options.sampleSeconds} s`,
    );

    // ---- soak: a paced open loop. Transfers start on schedule (rate × elapsed), whatever the
    // answers' latency; each is POST /transfers then, on 201 RESERVED, the payee's PUT. Latency
    // is measured from the moment the request is handed to the agent (so waiting for a free
    // socket counts); at most `maxSockets` requests are on the wire at once, and at most
    // `maxInFlight` transfers are started and unfinished: beyond that the schedule falls behind
    // (the backlog column) rather than queueing without bound in the load generator.
    agent = new http.Agent({
      keepAlive: true,
      maxSockets: options.maxSockets,
      maxFreeSockets: options.maxSockets,
    });
    const ag = agent;
    const durationS = options.minutes * 60;
    const minuteStats: MinuteStats[] = [];
    const statsAt = (elapsedS: number): MinuteStats => {
      const minute = Math.min(Math.floor(elapsedS / 60), Math.ceil(durationS / 60) - 1);
      while (minuteStats.length <= minute)
        minuteStats.push({
          minute: minuteStats.length + 1,
          transfers: 0,
          requests: 0,
          errors: 0,
          non2xx: 0,
          unexpected: 0,
          latencies: [],
          wireLatencies: [],
          errorSamples: [],
        });
      return minuteStats[minute]!;
    };
    const soakOpen: SentTransfer[] = [];
    let inFlight = 0;
    let started = 0;
    const soakStart = performance.now();
    const elapsed = (): number => (performance.now() - soakStart) / 1000;
    const note = (answer: TimedAnswer, okStatus: number, okState: string): boolean => {
      const m = statsAt(elapsed());
      m.requests++;
      m.latencies.push(answer.ms);
      m.wireLatencies.push(answer.wireMs);
      if (answer.status === okStatus && answer.text.includes(`"${okState}"`)) return true;
      if (answer.status === 0) m.errors++;
      else if (answer.status >= 200 && answer.status < 300) m.unexpected++;
      else m.non2xx++;
      if (m.errorSamples.length < 5)
        m.errorSamples.push(`${answer.status} ${answer.text.slice(0, 300)}`);
      return false;
    };
    const oneTransfer = async (): Promise<void> => {
      const { transfer: t, condition, ilpPacket } = w.next(false);
      const payer = names[t.payer]!;
      const payee = names[t.payee]!;
      inFlight++;
      try {
        const prepared = await sendOn(
          ag,
          svc.port,
          'POST',
          '/transfers',
          w.headers(payer, payee),
          w.prepareBody(t, condition, ilpPacket, false),
        );
        if (!note(prepared, 201, 'RESERVED')) {
          soakOpen.push(t);
          return;
        }
        t.state = 'reserved';
        const fulfilled = await sendOn(
          ag,
          svc.port,
          'PUT',
          `/transfers/${t.id}`,
          w.headers(payee, payer),
          w.fulfilBody(t),
        );
        if (!note(fulfilled, 200, 'COMMITTED')) {
          soakOpen.push(t);
          return;
        }
        t.state = 'committed';
        statsAt(elapsed()).transfers++;
        soakTransfers++;
        books.add(t);
      } finally {
        inFlight--;
      }
    };
    const inFlightWork = new Set<Promise<void>>();
    const loopDone = new Promise<void>((resolve) => {
      const tick = (): void => {
        const now = elapsed();
        if (now >= durationS || interrupted || svc.exit !== undefined) return resolve();
        const due = Math.floor(now * targetRate);
        while (started < due && inFlight < options.maxInFlight) {
          started++;
          const work = oneTransfer();
          inFlightWork.add(work);
          void work.finally(() => inFlightWork.delete(work));
        }
        setTimeout(tick, 2);
      };
      tick();
    });

    /** InnoDB counters of MariaDB, read without blocking the load generator. */
    const dbStatus = async (): Promise<Map<string, number> | undefined> =>
      mariadb === undefined
        ? undefined
        : mariadbStatus(mariadb, ['Innodb_buffer_pool_reads', 'Innodb_data_fsyncs']).catch(
            () => undefined,
          );
    // Sampler: every sampleSeconds, the service's RSS, heap and CPU, and the machine's.
    const sampleState = {
      cpu: cpuSnapshot({ target: svc.pid, tigerbeetle: tbPids, extra: { mariadb: mariadbPids } }),
      metrics: await serviceMetrics(svc.base),
      db0: await dbStatus(),
    };
    const takeSample = async (): Promise<Sample> => {
      const [metrics, dbCounters] = await Promise.all([serviceMetrics(svc.base), dbStatus()]);
      const now = elapsed();
      const cpuNow = cpuSnapshot(sampleState.cpu.pids);
      const cpu = cpuBetween(sampleState.cpu, cpuNow);
      const interval = Math.max(0.001, cpu.wallS);
      const m0 = sampleState.metrics;
      const delta = (f: (m: ServiceMetrics) => number | undefined): number | undefined => {
        const a = m0 === undefined ? undefined : f(m0);
        const b = metrics === undefined ? undefined : f(metrics);
        return a === undefined || b === undefined ? undefined : b - a;
      };
      const ratio = (
        a: number | undefined,
        b: number | undefined,
        scale = 1,
      ): number | undefined =>
        a === undefined || b === undefined || b <= 0 ? undefined : (a / b) * scale;
      const dbDelta = (key: string): number | undefined => {
        const a = sampleState.db0?.get(key);
        const b = dbCounters?.get(key);
        return a === undefined || b === undefined ? undefined : (b - a) / interval;
      };
      const mib = (bytes: number | undefined): number | undefined =>
        bytes === undefined ? undefined : bytes / 2 ** 20;
      const sample: Sample = {
        t: Number(now.toFixed(1)),
        transfersDone: soakTransfers,
        rssMiB: memoryMiB(svc.pid, 'VmRSS'),
        hwmMiB: memoryMiB(svc.pid, 'VmHWM'),
        heapUsedMiB: mib(metrics?.heapUsedBytes),
        heapTotalMiB: mib(metrics?.heapTotalBytes),
        externalMiB: mib(metrics?.externalBytes),
        heapSpacesUsedMiB: Object.fromEntries(
          Object.entries(metrics?.heapSpacesUsed ?? {}).map(([k, v]) => [
            k,
            Number((v / 2 ** 20).toFixed(2)),
          ]),
        ),
        activeHandles: metrics?.activeHandles,
        requestLabelSets: metrics?.requestLabelSets,
        metricsLines: metrics?.lines,
        serviceCores: (cpu.target ?? 0) / interval,
        serviceMainThreadCores: (cpu.targetThreads['main'] ?? 0) / interval,
        replicaCores: cpu.tigerbeetle / interval,
        mariadbCores: (cpu.extra['mariadb'] ?? 0) / interval,
        loadGeneratorCores: cpu.loadGenerator / interval,
        machineBusyCores: cpu.machineBusy / interval,
        stealCores: cpu.steal / interval,
        otherCores: cpu.others / interval,
        mariadbRssMiB: mariadbPids.length > 0 ? memoryMiB(mariadbPids[0]!, 'VmRSS') : undefined,
        serviceMeanMs: ratio(
          delta((m) => m.httpSeconds),
          delta((m) => m.httpCount),
          1000,
        ),
        servicePrepareMs: ratio(
          delta((m) => m.routes['POST /transfers']?.seconds),
          delta((m) => m.routes['POST /transfers']?.count),
          1000,
        ),
        serviceFulfilMs: ratio(
          delta((m) => m.routes['PUT /transfers/:id']?.seconds),
          delta((m) => m.routes['PUT /transfers/:id']?.count),
          1000,
        ),
        dbDiskReadsPerS: dbDelta('Innodb_buffer_pool_reads'),
        dbFsyncsPerS: dbDelta('Innodb_data_fsyncs'),
        ledgerBatchesPerS: ratio(
          delta((m) => m.ledgerBatches),
          interval,
        ),
        ledgerCommandsPerBatch: ratio(
          delta((m) => m.ledgerCommands),
          delta((m) => m.ledgerBatches),
        ),
        ledgerBatchMs: ratio(
          delta((m) => m.ledgerSeconds),
          delta((m) => m.ledgerBatches),
          1000,
        ),
        inFlightTransfers: inFlight,
        backlog: Math.max(0, Math.floor(now * targetRate) - started),
        otherProcesses: cpu.heaviestOthers,
      };
      Object.assign(sampleState, {
        cpu: cpuNow,
        metrics: metrics ?? sampleState.metrics,
        db0: dbCounters ?? sampleState.db0,
      });
      return sample;
    };
    const sampler = (async (): Promise<void> => {
      for (let k = 1; ; k++) {
        const due = k * options.sampleSeconds;
        if (due > durationS + 0.5) return;
        const wait = due * 1000 - (performance.now() - soakStart);
        if (wait > 0) await sleep(wait);
        if (interrupted || svc.exit !== undefined) return;
        const sample = await takeSample();
        samples.push(sample);
        maxBacklog = Math.max(maxBacklog, sample.backlog);
        if (k === 1 || k % Math.max(1, Math.round(60 / options.sampleSeconds)) === 0) {
          log(
            `t=${sample.t.toFixed(0)} s: ${soakTransfers} transfers, RSS ${sample.rssMiB?.toFixed(1)} MiB, heap used ${sample.heapUsedMiB?.toFixed(1)} MiB, ` +
              `service ${sample.serviceCores.toFixed(2)} cores, machine ${sample.machineBusyCores.toFixed(2)}, in flight ${sample.inFlightTransfers}, backlog ${sample.backlog}`,
          );
        }
      }
    })();

    await loopDone;
    soakWallS = elapsed();
    if (svc.exit !== undefined) {
      throw new Error(
        `the service exited during the soak at ${svc.exit.at.toISOString()} (t=${((svc.exit.at.getTime() - (Date.now() - elapsed() * 1000)) / 1000).toFixed(0)} s; ` +
          `code ${svc.exit.code}, signal ${svc.exit.signal}; with LOG_LEVEL=warn a SIGTERM/SIGINT shutdown logs nothing) after ${soakTransfers} soak transfers; ` +
          `last sample: ${JSON.stringify(samples.at(-1))}\n${tail(svc.logFile)}`,
      );
    }
    await sampler;
    log(
      `soak load finished after ${soakWallS.toFixed(1)} s: ${started} transfers started, waiting for ${inFlightWork.size} in flight`,
    );
    await Promise.all([...inFlightWork]);
    // The state once the last answers are in (unless the last periodic sample was just taken).
    if (elapsed() - (samples.at(-1)?.t ?? 0) > 2) samples.push(await takeSample());
    await settle('soak', soakOpen);

    for (const m of minuteStats) {
      const spanS = Math.min(60, durationS - (m.minute - 1) * 60, soakWallS - (m.minute - 1) * 60);
      const last = [...samples]
        .reverse()
        .find((s) => s.t <= m.minute * 60 + 0.5 && s.t > (m.minute - 1) * 60);
      const inMinute = samples.filter(
        (s) => s.t > (m.minute - 1) * 60 && s.t <= m.minute * 60 + 0.5,
      );
      const mean = (f: (s: Sample) => number): number =>
        inMinute.length === 0
          ? Number.NaN
          : inMinute.reduce((n, s) => n + f(s), 0) / inMinute.length;
      minutes.push({
        minute: m.minute,
        transfers: m.transfers,
        transfersPerS: m.transfers / Math.max(1, spanS),
        requestsPerS: m.requests / Math.max(1, spanS),
        errors: m.errors,
        non2xx: m.non2xx,
        unexpected: m.unexpected,
        latency: summarise(m.latencies),
        wireLatency: summarise(m.wireLatencies),
        rssEndMiB: last?.rssMiB,
        ...((): {
          rssMinMiB: number | undefined;
          rssMedianMiB: number | undefined;
          rssMaxMiB: number | undefined;
        } => {
          const rss = inMinute.map((s) => s.rssMiB).filter((v): v is number => v !== undefined);
          return {
            rssMinMiB: rss.length === 0 ? undefined : Math.min(...rss),
            rssMedianMiB: median(rss),
            rssMaxMiB: rss.length === 0 ? undefined : Math.max(...rss),
          };
        })(),
        heapUsedEndMiB: last?.heapUsedMiB,
        serviceCores: mean((s) => s.serviceCores),
        machineBusyCores: mean((s) => s.machineBusyCores),
        stealCores: mean((s) => s.stealCores),
        otherCores: mean((s) => s.otherCores),
        maxInFlight: Math.max(0, ...inMinute.map((s) => s.inFlightTransfers)),
        errorSamples: m.errorSamples,
      });
      m.latencies = [];
      m.wireLatencies = [];
    }

    // ---- books
    log('checking the books');
    const neverArrived = reconciliations.reduce((n, r) => n + Number(r['neverArrived'] ?? 0), 0);
    const failed = reconciliations.reduce((n, r) => n + Number(r['failed'] ?? 0), 0);
    checks.push({
      name: 'every transfer that reached the service is COMMITTED',
      pass: failed === 0 && neverArrived <= options.peakConnections + 16,
      detail: `${books.committed} committed (peak phases and soak), ${failed} not committed, ${neverArrived} never reached the service (autocannon closing its connections at the end of a peak phase)`,
    });
    checks.push(
      ...(await transferChecks(svc.base, names, positionsBefore, books)),
      ...(await ledgerChecks(names, cluster)),
    );
    const refused = minutes.reduce((n, m) => n + m.errors + m.non2xx + m.unexpected, 0);
    const peakRefused = [peakWarmup, peak].reduce(
      (n, l) => n + l.errors + l.non2xx + l.unexpected,
      0,
    );
    checks.push({
      name: 'no errors or non-2xx answers (soak and peak)',
      pass: refused + peakRefused === 0,
      detail:
        `soak ${refused} (errors ${minutes.reduce((n, m) => n + m.errors, 0)}, non-2xx ${minutes.reduce((n, m) => n + m.non2xx, 0)}, unexpected 2xx ${minutes.reduce((n, m) => n + m.unexpected, 0)}), peak ${peakRefused}` +
        (refused > 0
          ? `; e.g. ${minutes
              .flatMap((m) => m.errorSamples)
              .slice(0, 3)
              .join(' | ')}`
          : ''),
    });
    if (mariadb !== undefined)
      mysqlRows = await mariadbQuery(
        mariadb,
        `SELECT state, COUNT(*) FROM ${database}.transfers GROUP BY state`,
      ).then(
        (rows) => rows.map((row) => row.join(' ')).join(', '),
        (error: Error) => `(query failed: ${error.message.slice(0, 200)})`,
      );

    log('stopping the service');
    await stopProcess(svc);
    service = undefined;
  } catch (error) {
    keepLogs = true;
    process.stderr.write(`service log and data kept in ${workDir}\n`);
    throw error;
  } finally {
    workload?.stop();
    agent?.destroy();
    if (service !== undefined) await stopProcess(service);
    if (mariadb !== undefined) {
      log('stopping MariaDB');
      await mariadb.stop();
    }
    if (cluster !== undefined) {
      log('stopping the cluster');
      await cluster.stop();
    }
    if (!keepLogs) fs.rmSync(workDir, { recursive: true, force: true });
    else fs.rmSync(path.join(workDir, 'data'), { recursive: true, force: true });
  }

  soakReport({
    options,
    startedAt,
    stamp,
    git,
    warnings,
    checks,
    samples,
    minutes,
    peak,
    peakWarmup,
    targetRate,
    soakWallS,
    soakTransfers,
    maxBacklog,
    mysqlRows,
    reconciliations,
  });
}

runMain(main, 'soak');
