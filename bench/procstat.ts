/**
 * CPU time and memory of processes from /proc (Linux): utime+stime from /proc/<pid>/stat and the
 * peak resident set (VmHWM) from /proc/<pid>/status; a snapshot of everything a benchmark phase
 * accounts for, and the difference between two.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** CPU seconds so far by pid, with a short name. */
export type ProcessTable = Map<number, { name: string; cpu: number }>;

let ticksPerSecond: number | undefined;

/** USER_HZ: the clock ticks per second of /proc's CPU times. */
export function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond =
        Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * The command name and CPU seconds (utime + stime) of a /proc/<pid>/stat or
 * /proc/<pid>/task/<tid>/stat text.
 */
function parseStat(text: string): { comm: string; cpu: number } {
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  // Fields 14 and 15 of stat are utime and stime; here field 3 (state) is index 0.
  return {
    comm: text.slice(text.indexOf('(') + 1, close),
    cpu: (Number(fields[11]) + Number(fields[12])) / clockTicks(),
  };
}

/** CPU seconds (user + system) a process has used so far; undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    return parseStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')).cpu;
  } catch {
    return undefined;
  }
}

/** Sum of cpuSeconds over several processes (those gone count 0). */
export function cpuSecondsOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);
}

/** A /proc/<pid>/status field in kB (VmHWM = peak RSS, VmRSS = current RSS), in MiB. */
export function memoryMiB(pid: number, field: 'VmHWM' | 'VmRSS' = 'VmHWM'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(
      fs.readFileSync(`/proc/${pid}/status`, 'utf8'),
    );
    return match === null ? undefined : Number(match[1]) / 1024;
  } catch {
    return undefined;
  }
}

/** Pids of processes whose command line contains every one of the given strings. */
export function findPids(...needles: string[]): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline: string;
    try {
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
    } catch {
      continue;
    }
    if (needles.every((needle) => cmdline.includes(needle))) pids.push(Number(entry));
  }
  return pids;
}

/** The load generator itself (this process), CPU seconds so far. */
export function selfCpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/** The first eight columns of /proc/stat's cpu line (guest time is inside user). */
export const MACHINE_COLUMNS = [
  'user',
  'nice',
  'system',
  'idle',
  'iowait',
  'irq',
  'softirq',
  'steal',
] as const;

export interface MachineCpu {
  /** user, nice, system, irq, softirq. */
  busy: number;
  /** Time the hypervisor gave this VM's CPUs to others. */
  steal: number;
  total: number;
  /** Seconds per /proc/stat column (MACHINE_COLUMNS). */
  columns: Record<(typeof MACHINE_COLUMNS)[number], number>;
  /** Processes started on the machine since boot. */
  forks: number;
}

/** CPU seconds of the whole machine so far (all cores), from /proc/stat. */
export function machineCpuSeconds(): MachineCpu {
  const text = fs.readFileSync('/proc/stat', 'utf8');
  const [, ...values] = text.split('\n')[0]!.trim().split(/\s+/);
  const columns = Object.fromEntries(
    MACHINE_COLUMNS.map((name, i) => [name, Number(values[i] ?? 0) / clockTicks()]),
  ) as MachineCpu['columns'];
  const busy = columns.user + columns.nice + columns.system + columns.irq + columns.softirq;
  return {
    busy,
    steal: columns.steal,
    total: busy + columns.idle + columns.iowait + columns.steal,
    columns,
    forks: Number(/^processes (\d+)$/m.exec(text)?.[1] ?? Number.NaN),
  };
}

/**
 * CPU seconds per thread name of a process (/proc/<pid>/task/<tid>/stat), threads of one name
 * summed.
 */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const { comm, cpu } = parseStat(text);
    const name = tid === String(pid) ? 'main' : comm;
    byName.set(name, (byName.get(name) ?? 0) + cpu);
  }
  return byName;
}

/**
 * CPU seconds so far of every process on the machine, with a short name (comm, or the script for
 * node/java).
 */
export function allProcesses(): ProcessTable {
  const table: ProcessTable = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const { comm, cpu } = parseStat(fs.readFileSync(`/proc/${entry}/stat`, 'utf8'));
      let name = comm;
      if (comm === 'node' || comm === 'java' || comm.startsWith('MainThread')) {
        const args = fs
          .readFileSync(`/proc/${entry}/cmdline`, 'utf8')
          .split('\0')
          .filter((a) => a.length > 0);
        const script = args.slice(1).find((a) => !a.startsWith('-') && /[./]/.test(a));
        if (script !== undefined) name = `${comm} ${script.split('/').slice(-2).join('/')}`;
      }
      table.set(Number(entry), { name, cpu });
    } catch {
      // gone
    }
  }
  return table;
}

/**
 * The processes that used at least `minCores` (0.02) between two tables, pids in `exclude` left
 * out, heaviest first, at most `limit` (3): "name[pid] cores" strings with `digits` (2) decimals.
 */
export function topConsumers(
  before: ProcessTable,
  after: ProcessTable,
  seconds: number,
  exclude: ReadonlySet<number>,
  options: { limit?: number; minCores?: number; digits?: number } = {},
): string[] {
  const { limit = 3, minCores = 0.02, digits = 2 } = options;
  const used: { name: string; cores: number }[] = [];
  for (const [pid, now] of after) {
    if (exclude.has(pid)) continue;
    const cores = (now.cpu - (before.get(pid)?.cpu ?? 0)) / seconds;
    if (cores >= minCores) used.push({ name: `${now.name}[${pid}]`, cores });
  }
  return used
    .sort((a, b) => b.cores - a.cores)
    .slice(0, limit)
    .map((u) => `${u.name} ${u.cores.toFixed(digits)}`);
}

// ---------------------------------------------------------------------------------------------
// A benchmark phase's CPU: one snapshot at each end, and their difference

/** Whose CPU a phase accounts for. */
export interface CpuPids {
  /** The process under load (the service, or the no-op server), and its threads. */
  target: number;
  tigerbeetle: readonly number[];
  /** Other processes of the run by name (the Kafka broker, MariaDB), each group summed. */
  extra?: Readonly<Record<string, readonly number[]>>;
}

/**
 * CPU seconds of the processes a phase accounts for: used so far (a snapshot), or between two
 * snapshots.
 */
interface AccountedCpu {
  /** undefined when the target is gone (at either end). */
  target: number | undefined;
  /** By thread name ('main' = the JS thread), threads of one name summed. */
  targetThreads: Record<string, number>;
  tigerbeetle: number;
  /** By CpuPids.extra's names. */
  extra: Record<string, number>;
  /** This process. */
  loadGenerator: number;
}

export interface CpuSnapshot extends AccountedCpu {
  pids: CpuPids;
  /** performance.now() when it was taken. */
  at: number;
  machine: MachineCpu;
  processes: ProcessTable;
}

export function cpuSnapshot(pids: CpuPids): CpuSnapshot {
  return {
    pids,
    at: performance.now(),
    target: cpuSeconds(pids.target),
    targetThreads: Object.fromEntries(threadCpuSeconds(pids.target)),
    tigerbeetle: cpuSecondsOf(pids.tigerbeetle),
    extra: Object.fromEntries(
      Object.entries(pids.extra ?? {}).map(([name, group]) => [name, cpuSecondsOf(group)]),
    ),
    loadGenerator: selfCpuSeconds(),
    machine: machineCpuSeconds(),
    processes: allProcesses(),
  };
}

/** CPU seconds used between two snapshots (of the same pids), and over how many wall seconds. */
export interface CpuUsed extends AccountedCpu {
  wallS: number;
  machineBusy: number;
  steal: number;
  /** The machine's busy seconds that none of the processes above account for (≥ 0). */
  others: number;
  /** By /proc/stat column (MACHINE_COLUMNS): irq and softirq belong to no process. */
  machineColumns: Record<(typeof MACHINE_COLUMNS)[number], number>;
  /**
   * Processes started on the machine meanwhile (their CPU is lost if they also ended meanwhile).
   */
  forks: number;
  /** The heaviest processes not accounted for above: topConsumers' "name[pid] cores". */
  heaviestOthers: string[];
  /** Every process (kernel threads and ours too) that used ≥ 0.005 cores: "name[pid] cores". */
  allConsumers: string[];
}

export function cpuBetween(a: CpuSnapshot, b: CpuSnapshot): CpuUsed {
  const wallS = (b.at - a.at) / 1000;
  const target = a.target === undefined || b.target === undefined ? undefined : b.target - a.target;
  const minus = (
    after: Record<string, number>,
    before: Record<string, number>,
  ): Record<string, number> =>
    Object.fromEntries(
      Object.entries(after).map(([name, seconds]) => [name, seconds - (before[name] ?? 0)]),
    );
  const extra = minus(b.extra, a.extra);
  const tigerbeetle = b.tigerbeetle - a.tigerbeetle;
  const loadGenerator = b.loadGenerator - a.loadGenerator;
  const machineBusy = b.machine.busy - a.machine.busy;
  const ours = new Set([
    b.pids.target,
    process.pid,
    process.ppid,
    ...b.pids.tigerbeetle,
    ...Object.values(b.pids.extra ?? {}).flat(),
  ]);
  return {
    wallS,
    target,
    targetThreads: minus(b.targetThreads, a.targetThreads),
    tigerbeetle,
    extra,
    loadGenerator,
    machineBusy,
    steal: b.machine.steal - a.machine.steal,
    others: Math.max(
      0,
      machineBusy -
        (target ?? 0) -
        tigerbeetle -
        loadGenerator -
        Object.values(extra).reduce((sum, s) => sum + s, 0),
    ),
    machineColumns: minus(b.machine.columns, a.machine.columns) as CpuUsed['machineColumns'],
    forks: b.machine.forks - a.machine.forks,
    heaviestOthers: topConsumers(a.processes, b.processes, wallS, ours),
    allConsumers: topConsumers(a.processes, b.processes, wallS, new Set(), {
      limit: Number.POSITIVE_INFINITY,
      minCores: 0.005,
      digits: 3,
    }),
  };
}
