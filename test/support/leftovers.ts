/**
 * Servers and temporary directories a test harness started: killed and removed when the test
 * process exits, even when a test crashed or forgot to stop them. A server must never outlive
 * its test run (a TigerBeetle replica holds ~2.4 GB, a Kafka broker ~400 MB, their data GBs).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export const live = new Set<ChildProcess>();
export const liveDirs = new Set<string>();

// 'exit' handlers must be synchronous; SIGKILL and rmSync are.
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
  for (const dir of liveDirs) fs.rmSync(dir, { recursive: true, force: true });
});
