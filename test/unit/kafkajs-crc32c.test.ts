import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';

import { crc32c, speedUpKafkajsCrc32c } from '../../src/handlers/kafka/kafkajs-crc32c';

const requireKafkajs = createRequire(require.resolve('kafkajs/package.json'));
/** kafkajs's own byte-at-a-time function: the inner module, which the patch leaves alone. */
const kafkajsCrc32c = requireKafkajs('./src/protocol/recordBatch/crc32C/crc32C') as (
  bytes: Uint8Array,
) => number;

test('crc32c gives the CRC-32C check value and kafkajs’s own checksum, at every length', () => {
  assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283, 'the catalogued check value');
  assert.equal(crc32c(Buffer.alloc(0)), 0);
  const bytes = randomBytes(12_345);
  // Every length up to 300 (every remainder of the 8-byte steps), each from an odd offset too.
  for (let length = 0; length <= 300; length++) {
    for (const offset of [0, 3]) {
      const slice = bytes.subarray(offset, offset + length);
      assert.equal(crc32c(slice), kafkajsCrc32c(slice), `${length} bytes from ${offset}`);
    }
  }
  assert.equal(crc32c(bytes), kafkajsCrc32c(bytes), 'a notification-sized batch');
  assert.equal(crc32c(Buffer.alloc(4096, 0xff)), kafkajsCrc32c(Buffer.alloc(4096, 0xff)));
});

test('patched, kafkajs’s record batch encoder writes the same CRC with crc32c', async () => {
  assert.equal(speedUpKafkajsCrc32c(), true);
  assert.equal(requireKafkajs('./src/protocol/recordBatch/crc32C'), crc32c);
  assert.equal(speedUpKafkajsCrc32c(), true, 'a second transport finds it done');
  const { RecordBatch } = requireKafkajs('./src/protocol/recordBatch/v0') as {
    RecordBatch: (batch: { records: unknown[] }) => Promise<{ buffer: Buffer }>;
  };
  const Record = requireKafkajs('./src/protocol/recordBatch/record/v0') as (record: {
    key: string;
    value: string;
  }) => unknown;
  const { buffer } = await RecordBatch({
    records: [Record({ key: 'k', value: randomBytes(3000).toString('base64') })],
  });
  // First offset (8), length (4), leader epoch (4), magic (1), then the CRC of all that follows.
  const CRC_AT = 17;
  const body = buffer.subarray(CRC_AT + 4);
  assert.ok(body.length > 3000);
  assert.equal(buffer.readUInt32BE(CRC_AT), kafkajsCrc32c(body));
});
