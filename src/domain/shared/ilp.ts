/**
 * Interledger packets as carried in Mojaloop's `ilpPacket`: ILPv1 payment packets (type 1, what
 * FSPIOP 1.x DFSPs, Mojaloop's simulators and test collections send: base64 starting `AYI`) and
 * ILPv4 Prepare packets (type 12, `DI`).
 *
 * GET /transactions/{id} answers with the transaction object that the quote's
 * ILP packet carries, so the hub must open the packet it stored with the
 * transfer. The packet is base64url (some producers use standard base64 with
 * padding) of an OER encoding: the type (UInt8), then a variable-length octet
 * string, the envelope, holding
 *
 *   ILPv1 payment (type 1), as the `ilp-packet` library's v1 codec writes it:
 *     amount               UInt64, big-endian
 *     account              variable-length IA5 string (the ILP address)
 *     data                 variable-length octet string
 *     extensions           anything after data (one 0 byte in practice), ignored as that codec does
 *
 *   ILPv4 Prepare (type 12):
 *     amount               UInt64, big-endian
 *     expiresAt            17 ASCII digits, GeneralizedTime YYYYMMDDHHmmssSSS in UTC
 *     executionCondition   32 bytes
 *     destination          variable-length IA5 string (the ILP address)
 *     data                 variable-length octet string
 *
 * A variable-length prefix is a single byte n < 0x80 giving the length, or
 * 0x80 | k followed by the length in k big-endian bytes.
 *
 * Packets come from participants, so they are untrusted: every length is
 * checked against the bytes actually present before anything is read, and
 * anything not exactly of this shape is rejected with IlpDecodeError.
 * central-ledger checks nothing in the packet against the transfer (amount,
 * condition), neither at prepare nor here, and neither does this service.
 */

import { TextDecoder } from 'node:util';

export interface IlpPrepare {
  /** Amount in the ILP packet's own units; not interpreted here. */
  amount: bigint;
  /** ISO 8601 UTC timestamp with milliseconds, e.g. 2024-12-05T16:08:03.907Z. */
  expiresAt: string;
  /** base64url without padding, as Mojaloop's `condition` field. */
  executionCondition: string;
  destination: string;
  data: Buffer;
}

/** An ILPv1 payment packet. */
export interface IlpPayment {
  /** Amount in the packet's own units; not interpreted here. */
  amount: bigint;
  account: string;
  data: Buffer;
}

export class IlpDecodeError extends Error {
  override name = 'IlpDecodeError';
}

const ILP_PAYMENT_TYPE = 1;
const ILP_PREPARE_TYPE = 12;
const AMOUNT_BYTES = 8;
const INTERLEDGER_TIME_BYTES = 17;
const EXECUTION_CONDITION_BYTES = 32;
const MAX_UINT64 = (1n << 64n) - 1n;
/**
 * Longest length-of-length accepted: 4 bytes already describe 4 GiB, far more
 * than any request body, and keeps the decoded length exact in a number.
 */
const MAX_LENGTH_OF_LENGTH = 4;

const BASE64_OR_BASE64URL = /^[A-Za-z0-9+/_-]*={0,2}$/;
const INTERLEDGER_TIME = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{3})$/;
const ISO_8601_TIMESTAMP =
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?(?:Z|[+-]\d{2}:\d{2})$/;
const IA5_STRING = /^\p{ASCII}*$/u;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Sequential reader over OER bytes that never reads past the end. */
class OerReader {
  private offset = 0;

  constructor(private readonly bytes: Buffer) {}

  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  readBytes(length: number, field: string): Buffer {
    if (length > this.remaining) {
      throw new IlpDecodeError(
        `ILP packet truncated: ${field} needs ${length} bytes but only ${this.remaining} remain`,
      );
    }
    const slice = this.bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    return slice;
  }

  readUInt8(field: string): number {
    return this.readBytes(1, field)[0] as number;
  }

  readLengthPrefix(field: string): number {
    const first = this.readUInt8(`${field} length`);
    if (first < 0x80) {
      return first;
    }
    const lengthOfLength = first & 0x7f;
    if (lengthOfLength === 0 || lengthOfLength > MAX_LENGTH_OF_LENGTH) {
      throw new IlpDecodeError(
        `ILP packet has a bad ${field} length: length-of-length ${lengthOfLength} is not in 1..${MAX_LENGTH_OF_LENGTH}`,
      );
    }
    const lengthBytes = this.readBytes(lengthOfLength, `${field} length`);
    let length = 0;
    for (const byte of lengthBytes) {
      length = length * 256 + byte;
    }
    // OER requires the shortest form, as the reference ilp-packet decoder
    // enforces; accepting others would give one packet several encodings.
    if (length < 0x80 || lengthBytes[0] === 0) {
      throw new IlpDecodeError(
        `ILP packet has a bad ${field} length: ${length} is not minimally encoded`,
      );
    }
    return length;
  }

  readVarOctetString(field: string): Buffer {
    return this.readBytes(this.readLengthPrefix(field), field);
  }
}

/**
 * Decodes base64url or standard base64, padded or not, or returns undefined.
 * Buffer.from alone would silently skip invalid characters. The amount of
 * padding is not checked: real packets carry too much (central-ledger's own
 * test packet is base64url with '==' where one '=' is due), and central-ledger
 * reads them.
 */
function base64ToBytes(text: string): Buffer | undefined {
  const unpaddedLength = text.replace(/=+$/, '').length;
  if (!BASE64_OR_BASE64URL.test(text) || unpaddedLength % 4 === 1) {
    return undefined;
  }
  return Buffer.from(text, 'base64');
}

function parseInterledgerTime(bytes: Buffer): string {
  const text = bytes.toString('latin1');
  const fields = INTERLEDGER_TIME.exec(text);
  if (fields === null) {
    throw new IlpDecodeError(
      `ILP expiresAt ${JSON.stringify(text)} is not GeneralizedTime YYYYMMDDHHmmssSSS`,
    );
  }
  const [, year, month, day, hour, minute, second, millisecond] = fields;
  const iso = `${year}-${month}-${day}T${hour}:${minute}:${second}.${millisecond}Z`;
  // Date rolls impossible fields over (Feb 30 becomes Mar 1) or rejects them,
  // so only a real instant survives the round trip unchanged.
  const instant = new Date(iso);
  if (Number.isNaN(instant.getTime()) || instant.toISOString() !== iso) {
    throw new IlpDecodeError(`ILP expiresAt ${text} is not a valid date and time`);
  }
  return iso;
}

function formatInterledgerTime(expiresAt: string): string {
  const instant = ISO_8601_TIMESTAMP.test(expiresAt) ? new Date(expiresAt) : undefined;
  if (instant === undefined || Number.isNaN(instant.getTime())) {
    throw new RangeError(`expiresAt ${JSON.stringify(expiresAt)} is not an ISO 8601 timestamp`);
  }
  const generalizedTime = instant.toISOString().replace(/[-:T.Z]/g, '');
  // A year past 9999 (reachable through a negative UTC offset) has no 17-digit form.
  if (generalizedTime.length !== INTERLEDGER_TIME_BYTES) {
    throw new RangeError(`expiresAt ${expiresAt} is outside the years GeneralizedTime can express`);
  }
  return generalizedTime;
}

function encodeVarOctetString(bytes: Buffer): Buffer {
  if (bytes.length < 0x80) {
    return Buffer.concat([Buffer.from([bytes.length]), bytes]);
  }
  const lengthBytes: number[] = [];
  for (let rest = bytes.length; rest > 0; rest = Math.floor(rest / 256)) {
    lengthBytes.unshift(rest % 256);
  }
  return Buffer.concat([Buffer.from([0x80 | lengthBytes.length, ...lengthBytes]), bytes]);
}

/** The packet's type and a reader over its envelope, which must end the packet. */
function openPacket(ilpPacket: string): { type: number; envelope: OerReader } {
  const packetBytes = base64ToBytes(ilpPacket);
  if (packetBytes === undefined) {
    throw new IlpDecodeError('ILP packet is not base64url or base64');
  }
  const packet = new OerReader(packetBytes);
  const type = packet.readUInt8('packet type');
  const envelope = new OerReader(packet.readVarOctetString('envelope'));
  if (packet.remaining !== 0) {
    throw new IlpDecodeError(
      `ILP packet has ${packet.remaining} trailing bytes after the envelope`,
    );
  }
  return { type, envelope };
}

function readAmount(envelope: OerReader): bigint {
  return envelope.readBytes(AMOUNT_BYTES, 'amount').readBigUInt64BE(0);
}

function readAddress(envelope: OerReader, field: string): string {
  const address = envelope.readVarOctetString(field).toString('latin1');
  if (!IA5_STRING.test(address)) {
    throw new IlpDecodeError(`ILP ${field} is not an IA5 (7-bit ASCII) string`);
  }
  return address;
}

function readPayment(envelope: OerReader): IlpPayment {
  const amount = readAmount(envelope);
  const account = readAddress(envelope, 'account');
  const data = envelope.readVarOctetString('data');
  return { amount, account, data };
}

function readPrepare(envelope: OerReader): IlpPrepare {
  const amount = readAmount(envelope);
  const expiresAt = parseInterledgerTime(envelope.readBytes(INTERLEDGER_TIME_BYTES, 'expiresAt'));
  const executionCondition = envelope
    .readBytes(EXECUTION_CONDITION_BYTES, 'executionCondition')
    .toString('base64url');
  const destination = readAddress(envelope, 'destination');
  const data = envelope.readVarOctetString('data');
  if (envelope.remaining !== 0) {
    throw new IlpDecodeError(`ILP envelope has ${envelope.remaining} trailing bytes after data`);
  }
  return { amount, expiresAt, executionCondition, destination, data };
}

export function decodeIlpPrepare(ilpPacket: string): IlpPrepare {
  const { type, envelope } = openPacket(ilpPacket);
  if (type !== ILP_PREPARE_TYPE) {
    throw new IlpDecodeError(
      `ILP packet type is ${type}, expected ${ILP_PREPARE_TYPE} (ILPv4 Prepare)`,
    );
  }
  return readPrepare(envelope);
}

/** Either kind of packet Mojaloop carries, told apart by its type. */
export type IlpPacket = ({ version: 1 } & IlpPayment) | ({ version: 4 } & IlpPrepare);

export function decodeIlpPacket(ilpPacket: string): IlpPacket {
  const { type, envelope } = openPacket(ilpPacket);
  if (type === ILP_PAYMENT_TYPE) return { version: 1, ...readPayment(envelope) };
  if (type === ILP_PREPARE_TYPE) return { version: 4, ...readPrepare(envelope) };
  throw new IlpDecodeError(
    `ILP packet type is ${type}, expected ${ILP_PAYMENT_TYPE} (ILPv1 payment) or ${ILP_PREPARE_TYPE} (ILPv4 Prepare)`,
  );
}

/**
 * The Mojaloop transaction object carried in the packet's data: normally the
 * ASCII of base64url-encoded JSON, but some producers put the JSON in directly.
 */
export function decodeIlpTransaction(ilpPacket: string): Record<string, unknown> {
  const dataText = decodeUtf8(decodeIlpPacket(ilpPacket).data);
  let json: string;
  // A base64 alphabet has no '{', so the two forms cannot be confused.
  if (dataText.trimStart().startsWith('{')) {
    json = dataText;
  } else {
    const jsonBytes = base64ToBytes(dataText);
    if (jsonBytes === undefined) {
      throw new IlpDecodeError('ILP data is neither JSON nor base64url-encoded JSON');
    }
    json = decodeUtf8(jsonBytes);
  }

  let transaction: unknown;
  try {
    transaction = JSON.parse(json);
  } catch (error) {
    throw new IlpDecodeError('ILP data is not valid JSON', { cause: error });
  }
  if (typeof transaction !== 'object' || transaction === null || Array.isArray(transaction)) {
    throw new IlpDecodeError('ILP data is JSON but not a JSON object');
  }
  return transaction as Record<string, unknown>;
}

function decodeUtf8(bytes: Buffer): string {
  try {
    return strictUtf8.decode(bytes);
  } catch (error) {
    throw new IlpDecodeError('ILP data is not valid UTF-8', { cause: error });
  }
}

/** Serialises an ILPv4 Prepare to base64url, the form Mojaloop sends. */
export function encodeIlpPrepare(prepare: IlpPrepare): string {
  if (prepare.amount < 0n || prepare.amount > MAX_UINT64) {
    throw new RangeError(`amount ${prepare.amount} does not fit in a UInt64`);
  }
  const condition = base64ToBytes(prepare.executionCondition);
  if (condition === undefined || condition.length !== EXECUTION_CONDITION_BYTES) {
    throw new RangeError(
      `executionCondition must be base64url of ${EXECUTION_CONDITION_BYTES} bytes`,
    );
  }
  if (!IA5_STRING.test(prepare.destination)) {
    throw new RangeError('destination must be an IA5 (7-bit ASCII) string');
  }

  const amount = Buffer.alloc(AMOUNT_BYTES);
  amount.writeBigUInt64BE(prepare.amount);
  const envelope = Buffer.concat([
    amount,
    Buffer.from(formatInterledgerTime(prepare.expiresAt), 'latin1'),
    condition,
    encodeVarOctetString(Buffer.from(prepare.destination, 'latin1')),
    encodeVarOctetString(prepare.data),
  ]);
  return Buffer.concat([Buffer.from([ILP_PREPARE_TYPE]), encodeVarOctetString(envelope)]).toString(
    'base64url',
  );
}
