/**
 * CPU time and memory of processes from /proc (Linux): utime+stime from /proc/<pid>/stat and the
 * peak resident set (VmHWM) from /proc/<pid>/status.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU seconds (user + system) a process has used so far; undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat are utime and stime; here field 3 (state) is index 0.
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

/** Sum of cpuSeconds over several processes (those gone count 0). */
export function cpuSecondsOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);
}

/** A /proc/<pid>/status field in kB (VmHWM = peak RSS, VmRSS = current RSS), in MiB. */
export function memoryMiB(pid: number, field: 'VmHWM' | 'VmRSS' = 'VmHWM'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
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

/**
 * CPU seconds of the whole machine so far (all cores), from /proc/stat: busy (user, nice, system,
 * irq, softirq), steal (time the hypervisor gave this VM's CPUs to others) and total.
 */
export function machineCpuSeconds(): { busy: number; steal: number; total: number } {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [, ...values] = line.trim().split(/\s+/);
  const t = values.map(Number);
  // user nice system idle iowait irq softirq steal (guest time is inside user).
  const at = (i: number): number => t[i] ?? 0;
  const busy = at(0) + at(1) + at(2) + at(5) + at(6);
  const total = busy + at(3) + at(4) + at(7);
  return { busy: busy / clockTicks(), steal: at(7) / clockTicks(), total: total / clockTicks() };
}

/** CPU seconds per thread name of a process (/proc/<pid>/task/<tid>/stat), threads of one name summed. */
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
    const name = tid === String(pid) ? 'main' : text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const seconds = (Number(fields[11]) + Number(fields[12])) / clockTicks();
    byName.set(name, (byName.get(name) ?? 0) + seconds);
  }
  return byName;
}

/** CPU seconds so far of every process on the machine, with a short name (comm, or the script for node/java). */
export function allProcesses(): Map<number, { name: string; cpu: number }> {
  const table = new Map<number, { name: string; cpu: number }>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      const cpu = (Number(fields[11]) + Number(fields[12])) / clockTicks();
      let name = comm;
      if (comm === 'node' || comm === 'java' || comm.startsWith('MainThread')) {
        const args = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter((a) => a.length > 0);
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

/** The heaviest processes between two snapshots, excluding some pids: "name cores" strings. */
export function topConsumers(before: Map<number, { name: string; cpu: number }>, after: Map<number, { name: string; cpu: number }>, seconds: number, exclude: ReadonlySet<number>, limit = 3): string[] {
  const used: { name: string; cores: number }[] = [];
  for (const [pid, now] of after) {
    if (exclude.has(pid)) continue;
    const cores = (now.cpu - (before.get(pid)?.cpu ?? 0)) / seconds;
    if (cores >= 0.02) used.push({ name: `${now.name}[${pid}]`, cores });
  }
  return used.sort((a, b) => b.cores - a.cores).slice(0, limit).map((u) => `${u.name} ${u.cores.toFixed(2)}`);
}
