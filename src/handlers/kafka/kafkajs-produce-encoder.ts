/**
 * kafkajs encodes a produce request through a chain of growing buffers: each record in an
 * encoder of its own (512 bytes, then a zero-filled copy at the next power of two), the batch's
 * body grown by doubling, then copied into the batch, the partition, the topic and the request,
 * each a fresh zero-filled buffer. For the ~4.6 KB notifications the service produces that is
 * ~25 µs a message, most of it allocating and zeroing memory (bench/produce-encoding-cost.ts):
 * ~2 messages a transfer, a sixth of the Kafka path's main thread.
 *
 * The request's size is known before a byte is written, so here it is written once into one
 * buffer, byte for byte what kafkajs writes (test/unit/kafkajs-produce-encoder.test.ts compares
 * them), for the requests the service sends: no compression, records without headers or
 * timestamps of their own. Any other request goes through kafkajs's own encoder.
 *
 * kafkajs takes its Produce v3 request (v4–v7 are v3 with another version number) from
 * `src/protocol/requests/produce/v3/request` when a producer first sends; replacing that module's
 * export before then gives every produce request this encoder. Only the kafkajs version read for
 * this is patched, as the idle-loop mend (kafkajs-idle-loop.ts) is.
 */
import { crc32c } from './kafkajs-crc32c';
import { replaceKafkajsExport } from './kafkajs-idle-loop';

/** A message as kafkajs's producer hands it to the request, after choosing its partition. */
export interface ProduceMessage {
  key?: Buffer | string | null;
  value: Buffer | string | null;
  headers?: Record<string, unknown> | undefined;
  timestamp?: number | string | undefined;
}

export interface ProducePartition {
  partition: number;
  firstSequence?: number | undefined;
  messages: ProduceMessage[];
}

export interface ProduceTopic {
  topic: string;
  partitions: ProducePartition[];
}

/** A 64-bit integer as kafkajs takes one (src/utils/long's `fromValue`). */
type Int64Like = bigint | number | string | { value: bigint };

/** What kafkajs passes the Produce v3 request (its fields left out or undefined alike). */
export interface ProduceRequestArgs {
  acks: number;
  timeout: number;
  transactionalId?: string | null | undefined;
  producerId?: Int64Like | undefined;
  producerEpoch?: number | undefined;
  compression?: number | undefined;
  topicData: ProduceTopic[];
}

/** The part of kafkajs's Encoder (src/protocol/encoder) its request framing reads. */
interface KafkajsEncoder {
  buf: Buffer;
  offset: number;
}

interface ProduceRequest {
  apiKey: number;
  apiVersion: number;
  apiName: string;
  expectResponse: () => boolean;
  encode: () => Promise<KafkajsEncoder>;
}

type ProduceRequestModule = (args: ProduceRequestArgs) => ProduceRequest;

const PRODUCE_API_KEY = 0;
/** The record batch format (v2, "magic" 2) of every Kafka since 0.11. */
const RECORD_BATCH_MAGIC = 2;
const TRANSACTIONAL_ATTRIBUTE = 16;
/** First offset (8), batch length (4), partition leader epoch (4), magic (1), CRC (4). */
const BATCH_HEADER_BYTES = 21;
/** Attributes (2), last offset delta (4), first and max timestamps (8 + 8), producer id (8),
 * producer epoch (2), first sequence (4), record count (4): the part the CRC starts with. */
const BATCH_BODY_HEADER_BYTES = 40;
/** kafkajs's producer id when none was given: not idempotent. */
const NO_PRODUCER_ID = -1n;

function int64(value: Int64Like | undefined): bigint {
  if (value === undefined) return NO_PRODUCER_ID;
  return typeof value === 'object' ? value.value : BigInt(value);
}

/** Whether this module writes `args` exactly as kafkajs would; else kafkajs's encoder does. */
export function encodable(args: ProduceRequestArgs): boolean {
  if ((args.compression ?? 0) !== 0) return false;
  for (const { partitions } of args.topicData)
    for (const { messages } of partitions) {
      if (messages.length === 0) return false;
      for (const message of messages)
        if (
          message.timestamp != null ||
          (message.headers !== undefined && Object.keys(message.headers).length > 0) ||
          !bytesLike(message.key) ||
          !bytesLike(message.value)
        )
          return false;
    }
  return true;
}

function bytesLike(value: unknown): boolean {
  return value == null || typeof value === 'string' || Buffer.isBuffer(value);
}

/** A record's key or value: its UTF-8 length, or -1 for none (null). */
function lengthOf(bytes: Buffer | string | null | undefined): number {
  if (bytes == null) return -1;
  return typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length;
}

/** Bytes of `value` as a zig-zag varint (Kafka's signed varint). */
function varIntSize(value: number): number {
  let unsigned = zigZag(value);
  let bytes = 1;
  while ((unsigned & 0xffffff80) !== 0) {
    bytes++;
    unsigned >>>= 7;
  }
  return bytes;
}

function zigZag(value: number): number {
  return (value << 1) ^ (value >> 31);
}

/**
 * Produce v3's body (what follows the request header), written once: transactional id, acks,
 * timeout, then per topic its partitions' record batches. `now` stands for the batches' time, as
 * kafkajs reads `Date.now()` once per partition. Call only where `encodable(args)`.
 */
export function encodeProduceRequest(args: ProduceRequestArgs, now = Date.now): Buffer {
  const { transactionalId } = args;
  const producerId = int64(args.producerId);
  // As kafkajs: an empty id is written, but the batches are not marked transactional.
  const attributes = transactionalId ? TRANSACTIONAL_ATTRIBUTE : 0;
  // The sizes first: each record's body (after its key's and value's lengths), each batch, the
  // whole request; the lengths are read back in the same order as the records are written.
  const sizes: number[] = [];
  let total = 2 + (transactionalId == null ? 0 : Buffer.byteLength(transactionalId)) + 2 + 4 + 4;
  for (const { topic, partitions } of args.topicData) {
    total += 2 + Buffer.byteLength(topic) + 4;
    for (const { messages } of partitions) {
      let batch = BATCH_HEADER_BYTES + BATCH_BODY_HEADER_BYTES;
      messages.forEach((message, offsetDelta) => {
        const key = lengthOf(message.key);
        const value = lengthOf(message.value);
        // Attributes (1), timestamp delta 0 (1), offset delta, key, value, no headers (1).
        const body =
          3 +
          varIntSize(offsetDelta) +
          varIntSize(key) +
          Math.max(key, 0) +
          varIntSize(value) +
          Math.max(value, 0);
        sizes.push(key, value, body);
        batch += varIntSize(body) + body;
      });
      total += 4 + 4 + batch;
    }
  }
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  const writeVarInt = (value: number): void => {
    let unsigned = zigZag(value);
    while ((unsigned & 0xffffff80) !== 0) {
      out[at++] = (unsigned & 0x7f) | 0x80;
      unsigned >>>= 7;
    }
    out[at++] = unsigned & 0x7f;
  };
  const writeBytes = (bytes: Buffer | string | null | undefined, length: number): void => {
    writeVarInt(length);
    if (typeof bytes === 'string') at += out.write(bytes, at, 'utf8');
    else if (bytes != null) at += bytes.copy(out, at);
  };
  const writeString = (text: string): void => {
    at = out.writeInt16BE(Buffer.byteLength(text), at);
    at += out.write(text, at, 'utf8');
  };
  if (transactionalId != null) writeString(transactionalId);
  else at = out.writeInt16BE(-1, at);
  at = out.writeInt16BE(args.acks, at);
  at = out.writeInt32BE(args.timeout, at);
  at = out.writeInt32BE(args.topicData.length, at);
  let sized = 0;
  for (const { topic, partitions } of args.topicData) {
    writeString(topic);
    at = out.writeInt32BE(partitions.length, at);
    for (const { partition, firstSequence, messages } of partitions) {
      const timestamp = BigInt(now());
      at = out.writeInt32BE(partition, at);
      const sizeAt = at;
      at += 4;
      const batchStart = at;
      at = out.writeBigInt64BE(0n, at);
      const lengthAt = at;
      at += 4;
      at = out.writeInt32BE(0, at);
      at = out.writeInt8(RECORD_BATCH_MAGIC, at);
      const crcAt = at;
      at += 4;
      const bodyStart = at;
      at = out.writeInt16BE(attributes, at);
      at = out.writeInt32BE(messages.length - 1, at);
      at = out.writeBigInt64BE(timestamp, at);
      at = out.writeBigInt64BE(timestamp, at);
      at = out.writeBigInt64BE(producerId, at);
      at = out.writeInt16BE(args.producerEpoch ?? 0, at);
      at = out.writeInt32BE(firstSequence ?? 0, at);
      at = out.writeInt32BE(messages.length, at);
      messages.forEach((message, offsetDelta) => {
        const key = sizes[sized++]!;
        const value = sizes[sized++]!;
        writeVarInt(sizes[sized++]!);
        out[at++] = 0; // attributes
        out[at++] = 0; // timestamp delta: every record at the batch's time
        writeVarInt(offsetDelta);
        writeBytes(message.key, key);
        writeBytes(message.value, value);
        out[at++] = 0; // no headers
      });
      out.writeInt32BE(at - batchStart, sizeAt);
      out.writeInt32BE(at - lengthAt - 4, lengthAt);
      out.writeUInt32BE(crc32c(out.subarray(bodyStart, at)), crcAt);
    }
  }
  if (at !== total) throw new Error(`produce request: wrote ${at} bytes of ${total}`);
  return out;
}

/**
 * Gives kafkajs's producer this encoder for the requests it can write, once per process; call it
 * before any client produces. Whether it took: false for another kafkajs version, or when the
 * request module was already loaded (its users keep that one).
 */
export function speedUpKafkajsProduce(): boolean {
  return replaceKafkajsExport(
    'src/protocol/requests/produce/v3/request',
    (kafkajsRequest: ProduceRequestModule) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const Encoder = require('kafkajs/src/protocol/encoder') as new (
        size: number,
      ) => KafkajsEncoder;
      const leanRequest = (args: ProduceRequestArgs): ProduceRequest => {
        if (!encodable(args)) return kafkajsRequest(args);
        return {
          apiKey: PRODUCE_API_KEY,
          apiVersion: 3,
          apiName: 'Produce',
          expectResponse: () => args.acks !== 0,
          encode: async () => {
            // An Encoder over the finished bytes, for kafkajs's framing to copy in.
            const encoder = new Encoder(0);
            encoder.buf = encodeProduceRequest(args);
            encoder.offset = encoder.buf.length;
            return encoder;
          },
        };
      };
      // kafkajs's own kept beside it: for the tests and the benchmark.
      return Object.assign(leanRequest, { kafkajs: kafkajsRequest });
    },
  );
}
