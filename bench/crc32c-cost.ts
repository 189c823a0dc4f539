/**
 * The CRC-32C kafkajs computes over every record batch the service produces, timed in one process:
 * kafkajs's own function (a byte at a time) against the service's (src/handlers/kafka/
 * kafkajs-crc32c.ts, eight bytes at a time), alternating round by round; the first round of each
 * is a warm-up. A pure function of CPU, as bench/digest-cost.ts.
 *
 *   npx tsx bench/crc32c-cost.ts [--bytes B] [--batches N] [--rounds R]
 *
 * --bytes is a batch's size: by default 44,700, the mean of 891 batches (39.8 MB for 6,500
 * transfers) counted in the service during `bench/kafka.ts --one-replica --transfers 6000`.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { crc32c } from '../src/handlers/kafka/kafkajs-crc32c';
import { flags, runMain } from './common';
import { alternate, cpuNsPerUnit, median } from './cpu-arms';

type Checksum = (bytes: Uint8Array) => number;

const requireKafkajs = createRequire(require.resolve('kafkajs/package.json'));

/** CPU ns per batch over `batches` batches. */
function time(checksum: Checksum, batch: Buffer, batches: number): Promise<number> {
  let sink = 0;
  const ns = cpuNsPerUnit(batches, () => (sink ^= checksum(batch)));
  // Printed nowhere: kept so that the work is not optimised away.
  if (sink === -1) process.stdout.write('\n');
  return ns;
}

async function main(): Promise<void> {
  const { number } = flags(process.argv.slice(2));
  const bytes = number('--bytes', 44_700, true);
  const batches = number('--batches', 5_000, true);
  const rounds = number('--rounds', 6, true);
  const arms: [string, Checksum][] = [
    ['kafkajs 2.2.4 (byte at a time)', requireKafkajs('./src/protocol/recordBatch/crc32C')],
    ['this checkout (slicing-by-8)', crc32c],
  ];
  // Base64 text, as the notifications' payloads are.
  const batch = Buffer.from(randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64')).subarray(
    0,
    bytes,
  );
  for (const [, checksum] of arms)
    if (checksum(batch) !== arms[0]![1](batch)) throw new Error('the checksums differ');
  const byArm = await alternate(arms, rounds, ([, checksum]) => time(checksum, batch, batches));
  const figures = arms.map((arm) => byArm.get(arm)!);
  const medians = figures.map(median);
  arms.forEach(([name], i) => {
    const ns = figures[i]!;
    process.stdout.write(
      `${name}: median ${(medians[i]! / 1000).toFixed(1)} µs CPU per ${bytes}-byte batch, ` +
        `${(medians[i]! / bytes).toFixed(2)} ns a byte (rounds ` +
        `${ns.map((n) => (n / 1000).toFixed(1)).join(' ')})\n`,
    );
  });
  process.stdout.write(`kafkajs ÷ this checkout: ${(medians[0]! / medians[1]!).toFixed(2)}×\n`);
}

runMain(main);
