/**
 * A produce request as the service's notification producer sends it, encoded in one process by
 * kafkajs's own encoder and by the service's (src/handlers/kafka/kafkajs-produce-encoder.ts),
 * alternating round by round, kafkajs's request framing included, both with the service's
 * CRC-32C. A pure function of CPU, as bench/crc32c-cost.ts.
 *
 *   npx tsx bench/produce-encoding-cost.ts [--messages N] [--bytes B] [--requests R] [--rounds R]
 *
 * By default a request of 8 messages of 4,600 bytes over 4 partitions: a prepare's forward is
 * ~4.6 KB (bench/kafka.ts prints the sizes), and the service's requests held 44,700 bytes on
 * average during `bench/kafka.ts --one-replica --transfers 6000` (bench/crc32c-cost.ts).
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { speedUpKafkajsCrc32c } from '../src/handlers/kafka/kafkajs-crc32c';
import {
  speedUpKafkajsProduce,
  type ProduceRequestArgs,
} from '../src/handlers/kafka/kafkajs-produce-encoder';
import { flags, runMain } from './common';
import { alternate, cpuNsPerUnit, median } from './cpu-arms';

const PARTITIONS = 4;

interface Encoded {
  encode: () => Promise<unknown>;
}
type Request = (args: ProduceRequestArgs) => Encoded;
type Framing = (framed: {
  correlationId: number;
  clientId: string;
  request: Encoded & { apiKey: number; apiVersion: number };
}) => Promise<{ buffer: Buffer }>;

const requireKafkajs = createRequire(require.resolve('kafkajs/package.json'));

async function main(): Promise<void> {
  const { number } = flags(process.argv.slice(2));
  const messages = number('--messages', 8, true);
  const bytes = number('--bytes', 4_600, true);
  const requests = number('--requests', 2_000, true);
  const rounds = number('--rounds', 6, true);
  if (!speedUpKafkajsCrc32c() || !speedUpKafkajsProduce())
    throw new Error('kafkajs is not the version the service patches');
  const lean = requireKafkajs('./src/protocol/requests/produce/v3/request') as Request & {
    kafkajs: Request;
  };
  const frame = requireKafkajs('./src/protocol/request') as Framing;
  // JSON with base64 inside, as the notifications are.
  const value = JSON.stringify({ payload: randomBytes(bytes).toString('base64') }).slice(0, bytes);
  const args: ProduceRequestArgs = {
    acks: -1,
    timeout: 30_000,
    producerId: '8021',
    producerEpoch: 0,
    topicData: [
      {
        topic: 'topic-notification-event',
        partitions: Array.from({ length: PARTITIONS }, (_, partition) => ({
          partition,
          firstSequence: 0,
          messages: Array.from({ length: Math.ceil(messages / PARTITIONS) }, (__, i) => ({
            key: `${partition}-${i}`,
            value,
          })),
        })),
      },
    ],
  };
  const arms: [string, Request][] = [
    ['kafkajs 2.2.4', lean.kafkajs],
    ['this checkout', lean],
  ];
  const encodeOnce = async (request: Request): Promise<Buffer> =>
    (await frame({ correlationId: 1, clientId: 'bench', request: request(args) as never })).buffer;
  const sizes = await Promise.all(arms.map(([, request]) => encodeOnce(request)));
  if (sizes[0]!.length !== sizes[1]!.length) throw new Error('the requests differ in size');
  const byArm = await alternate(arms, rounds, ([, request]) =>
    cpuNsPerUnit(requests, () => encodeOnce(request)),
  );
  const sent = PARTITIONS * Math.ceil(messages / PARTITIONS);
  const medians = arms.map((arm) => median(byArm.get(arm)!));
  arms.forEach(([name], i) => {
    const ns = byArm.get(arms[i]!)!;
    process.stdout.write(
      `${name}: median ${(medians[i]! / 1000).toFixed(1)} µs CPU per request of ${sent} ` +
        `messages (${sizes[0]!.length} bytes), ${(medians[i]! / sent / 1000).toFixed(2)} µs a ` +
        `message (rounds ${ns.map((n) => (n / 1000).toFixed(1)).join(' ')})\n`,
    );
  });
  process.stdout.write(`kafkajs ÷ this checkout: ${(medians[0]! / medians[1]!).toFixed(2)}×\n`);
}

runMain(main);
