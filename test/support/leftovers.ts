/**
 * Servers and temporary directories a test harness started: killed and removed when the test
 * process exits, even when a test crashed or forgot to stop them. A server must never outlive
 * its test run (a TigerBeetle replica holds ~2.4 GB, a Kafka broker ~400 MB, their data GBs).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const live = new Set<ChildProcess>();
export const liveDirs = new Set<string>();

// 'exit' handlers must be synchronous; SIGKILL and rmSync are.
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
  for (const dir of liveDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** Kills `child` with the test process if it is still running then. */
export function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once('exit', () => live.delete(child));
  // Without a listener a spawn failure would be an uncaught 'error' event; the harness's
  // readiness check reports it instead.
  child.on('error', () => live.delete(child));
  return child;
}

/** SIGTERM (a controlled shutdown), then SIGKILL after `graceMs`; resolves once it has exited. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  child.ref(); // keep the event loop alive until the exit event arrives
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  try {
    await exited;
  } finally {
    clearTimeout(timer);
  }
}

/** A temporary directory of the test's own (`prefix` names it), removed with the process. */
export function scratchDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  liveDirs.add(dir);
  return dir;
}

export function removeScratch(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
  liveDirs.delete(dir);
}
