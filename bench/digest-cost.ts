/**
 * The digest work every complete FSPIOP transfer does in the service, timed in one process: the
 * two body hashes (a ~1 KB prepare with its ILP packet, the fulfil) and the three ledger ids
 * derived from the transfer id (two sweeps, the post). A pure
 * function of CPU, so it resolves differences the service benchmarks on this shared machine
 * cannot (their CPU per transfer moves ±20 % between runs).
 *
 *   npx tsx bench/digest-cost.ts [--base-dir DIR] [--transfers N] [--rounds R]
 *
 * --base-dir DIR times another checkout's functions too (e.g. `git archive <commit>` extracted
 * there), alternating with this one's round by round; the first round of each is a warm-up.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { flags, runMain } from './common';
import { alternate, cpuNsPerUnit, median } from './cpu-arms';

type Hashing = typeof import('../src/domain/shared/hashing');
type AccountModel = typeof import('../src/ledger/account-model');
interface Arm {
  name: string;
  hashing: Hashing;
  model: AccountModel;
}

const PURPOSES = ['sweep', 'sweep-cap', 'post'] as const;
const BODIES = 1024;

async function armOf(name: string, dir: string): Promise<Arm> {
  return {
    name,
    hashing: (await import(path.join(dir, 'src/domain/shared/hashing'))) as Hashing,
    model: (await import(path.join(dir, 'src/ledger/account-model'))) as AccountModel,
  };
}

function bodies(): { prepares: unknown[]; fulfils: unknown[]; ids: bigint[] } {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const ilpPacket = Array.from({ length: 900 }, (_, i) => alphabet[(i * 37) % 64]).join('');
  const prepares: unknown[] = [];
  const fulfils: unknown[] = [];
  const ids: bigint[] = [];
  for (let i = 0; i < BODIES; i++) {
    const transferId = randomUUID();
    // Parsed from text, as the service gets them.
    const prepare = {
      transferId,
      payerFsp: 'benchp0',
      payeeFsp: 'benchp3',
      amount: { amount: `${(i % 500) + 1}.25`, currency: 'USD' },
      ilpPacket,
      condition: 'c'.repeat(43),
      expiration: '2026-11-28T00:00:00.000Z',
    };
    prepares.push(JSON.parse(JSON.stringify(prepare)));
    const fulfil = { transferState: 'COMMITTED', fulfilment: 'f'.repeat(43) };
    fulfils.push(JSON.parse(JSON.stringify({ ...fulfil, completedTimestamp: prepare.expiration })));
    ids.push(BigInt(`0x${transferId.replace(/-/g, '')}`));
  }
  return { prepares, fulfils, ids };
}

/** CPU ns per transfer over `transfers` transfers. */
function time(arm: Arm, work: ReturnType<typeof bodies>, transfers: number): Promise<number> {
  let sink = 0n;
  const ns = cpuNsPerUnit(transfers, (i) => {
    const at = i % BODIES;
    sink += BigInt(arm.hashing.hashOf(work.prepares[at]).length);
    sink += BigInt(arm.hashing.hashOf(work.fulfils[at]).length);
    for (const purpose of PURPOSES) sink ^= arm.model.derivedTransferId(work.ids[at]!, purpose);
  });
  // Printed nowhere: kept so that the work is not optimised away.
  if (sink === -1n) process.stdout.write('\n');
  return ns;
}

async function main(): Promise<void> {
  const { value, number } = flags(process.argv.slice(2));
  const transfers = number('--transfers', 50_000, true);
  const rounds = number('--rounds', 6, true);
  const baseDir = value('--base-dir');
  const arms = [await armOf('this checkout', path.join(__dirname, '..'))];
  if (baseDir !== undefined) arms.unshift(await armOf(`base ${baseDir}`, path.resolve(baseDir)));
  const work = bodies();
  const figures = await alternate(arms, rounds, (arm) => time(arm, work, transfers));
  for (const [arm, ns] of figures) {
    process.stdout.write(
      `${arm.name}: median ${median(ns).toFixed(0)} ns CPU per transfer ` +
        `(2 body hashes + 6 derived ids; rounds ${ns.map((n) => n.toFixed(0)).join(' ')})\n`,
    );
  }
}

runMain(main);
