import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  IlpDecodeError,
  type IlpPrepare,
  decodeIlpPacket,
  decodeIlpPrepare,
  decodeIlpTransaction,
  encodeIlpPrepare,
} from '../src/domain/shared/ilp';
import { CENTRAL_LEDGER_PACKET, GOLDEN_PATH_PACKET, PSK_PACKET } from './fixtures/ilp-v1';

const CONDITION = 'GIxd5xcohkmnnXolpTv_OxwpyaH__Oiq49JTvCo8pyA';

const mojaloopTransaction = {
  transactionId: 'a8323bc6-c228-4df2-ae82-e5a997baf898',
  quoteId: '382987a8-75ce-4037-b500-c475e08c1727',
  payee: { partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '123', fspId: 'payeefsp' } },
  payer: { partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '456', fspId: 'payerfsp' } },
  amount: { amount: '10.5', currency: 'USD' },
  transactionType: { scenario: 'TRANSFER', initiator: 'PAYER', initiatorType: 'CONSUMER' },
};

/** Packet data the way Mojaloop builds it: the ASCII of base64url(JSON). */
function mojaloopData(transaction: object): Buffer {
  return Buffer.from(
    Buffer.from(JSON.stringify(transaction), 'utf8').toString('base64url'),
    'ascii',
  );
}

function prepare(overrides: Partial<IlpPrepare> = {}): IlpPrepare {
  return {
    amount: 1050n,
    expiresAt: '2024-12-05T16:08:03.907Z',
    executionCondition: CONDITION,
    destination: 'g.payeefsp.msisdn.123',
    data: Buffer.from('{"a":1}'),
    ...overrides,
  };
}

/** A small valid packet's bytes: its envelope is under 128 bytes, so byte 1 is its length. */
function smallPacketBytes(): Buffer {
  const bytes = Buffer.from(encodeIlpPrepare(prepare()), 'base64url');
  assert.equal(bytes[1], bytes.length - 2);
  return bytes;
}

function base64url(bytes: Buffer | number[]): string {
  return Buffer.from(bytes).toString('base64url');
}

/** Envelope bytes up to (not including) the destination. */
function envelopeHead(expiresAt = '20241205160803907'): Buffer {
  return Buffer.concat([Buffer.alloc(8), Buffer.from(expiresAt, 'latin1'), Buffer.alloc(32)]);
}

/** Packet with a hand-built envelope of fewer than 128 bytes. */
function packetWithEnvelope(envelope: Buffer, type = 12): string {
  assert.ok(envelope.length < 0x80);
  return base64url(Buffer.concat([Buffer.from([type, envelope.length]), envelope]));
}

// Captured from a Mojaloop testing-toolkit quote (ILPv4 Prepare produced by the
// reference ilp-packet library), so it checks interoperability both ways.
const CAPTURED_MOJALOOP_PACKET =
  'DIICtgAAAAAAD0JAMjAyNDEyMDUxNjA4MDM5MDcYjF3nFyiGSaedeiWlO_87HCnJof_86Krj0lO8KjynIApnLm1vamFsb29wggJv' +
  'ZXlKeGRXOTBaVWxrSWpvaU1ERktSVUpUTmpsV1N6WkJSVUU0VkVkQlNrVXpXa0U1UlVnaUxDSjBjbUZ1YzJGamRHbHZia2xr' +
  'SWpvaU1ERktSVUpUTmpsV1N6WkJSVUU0VkVkQlNrVXpXa0U1UlVvaUxDSjBjbUZ1YzJGamRHbHZibFI1Y0dVaU9uc2ljMk5s' +
  'Ym1GeWFXOGlPaUpVVWtGT1UwWkZVaUlzSW1sdWFYUnBZWFJ2Y2lJNklsQkJXVVZTSWl3aWFXNXBkR2xoZEc5eVZIbHdaU0k2' +
  'SWtKVlUwbE9SVk5USW4wc0luQmhlV1ZsSWpwN0luQmhjblI1U1dSSmJtWnZJanA3SW5CaGNuUjVTV1JVZVhCbElqb2lUVk5K' +
  'VTBST0lpd2ljR0Z5ZEhsSlpHVnVkR2xtYVdWeUlqb2lNamMzTVRNNE1ETTVNVElpTENKbWMzQkpaQ0k2SW5CaGVXVmxabk53' +
  'SW4xOUxDSndZWGxsY2lJNmV5SndZWEowZVVsa1NXNW1ieUk2ZXlKd1lYSjBlVWxrVkhsd1pTSTZJazFUU1ZORVRpSXNJbkJo' +
  'Y25SNVNXUmxiblJwWm1sbGNpSTZJalEwTVRJek5EVTJOemc1SWl3aVpuTndTV1FpT2lKMFpYTjBhVzVuZEc5dmJHdHBkR1Jt' +
  'YzNBaWZYMHNJbVY0Y0dseVlYUnBiMjRpT2lJeU1ESTBMVEV5TFRBMVZERTJPakE0T2pBekxqa3dOMW9pTENKaGJXOTFiblFp' +
  'T25zaVlXMXZkVzUwSWpvaU1UQXdJaXdpWTNWeWNtVnVZM2tpT2lKWVdGZ2lmWDA';

test('encode then decode round-trips every field', () => {
  const original = prepare({ data: mojaloopData(mojaloopTransaction) });
  assert.deepEqual(decodeIlpPrepare(encodeIlpPrepare(original)), original);
});

test('amount round-trips across the whole UInt64 range', () => {
  for (const amount of [0n, 1n, 2n ** 53n + 1n, 2n ** 64n - 1n]) {
    assert.equal(decodeIlpPrepare(encodeIlpPrepare(prepare({ amount }))).amount, amount);
  }
});

test('expiresAt with a UTC offset is stored and decoded as UTC', () => {
  const packet = encodeIlpPrepare(prepare({ expiresAt: '2016-05-24T08:38:08.699-04:00' }));
  assert.equal(decodeIlpPrepare(packet).expiresAt, '2016-05-24T12:38:08.699Z');
});

test('decodes a captured Mojaloop packet and re-encodes it byte for byte', () => {
  const decoded = decodeIlpPrepare(CAPTURED_MOJALOOP_PACKET);
  assert.equal(decoded.amount, 1000000n);
  assert.equal(decoded.expiresAt, '2024-12-05T16:08:03.907Z');
  assert.equal(decoded.executionCondition, CONDITION);
  assert.equal(decoded.destination, 'g.mojaloop');
  assert.equal(encodeIlpPrepare(decoded), CAPTURED_MOJALOOP_PACKET);

  const transaction = decodeIlpTransaction(CAPTURED_MOJALOOP_PACKET);
  assert.equal(transaction.transactionId, '01JEBS69VK6AEA8TGAJE3ZA9EJ');
  assert.equal(transaction.quoteId, '01JEBS69VK6AEA8TGAJE3ZA9EH');
  assert.deepEqual(transaction.amount, { amount: '100', currency: 'XXX' });
  assert.deepEqual(transaction.payee, {
    partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '27713803912', fspId: 'payeefsp' },
  });
});

test('decodes the transaction from a Mojaloop-style packet', () => {
  const packet = encodeIlpPrepare(prepare({ data: mojaloopData(mojaloopTransaction) }));
  assert.deepEqual(decodeIlpTransaction(packet), mojaloopTransaction);
});

test('accepts standard base64 with padding as well as base64url', () => {
  const packet = encodeIlpPrepare(prepare({ data: mojaloopData(mojaloopTransaction) }));
  const standard = Buffer.from(packet, 'base64url').toString('base64');
  assert.match(standard, /[+/=]/);
  assert.deepEqual(decodeIlpTransaction(standard), mojaloopTransaction);

  const paddedData = Buffer.from(
    Buffer.from(JSON.stringify(mojaloopTransaction)).toString('base64'),
    'ascii',
  );
  assert.deepEqual(
    decodeIlpTransaction(encodeIlpPrepare(prepare({ data: paddedData }))),
    mojaloopTransaction,
  );
});

test('accepts raw JSON in data', () => {
  const data = Buffer.from(` ${JSON.stringify({ ...mojaloopTransaction, note: 'café' })}`, 'utf8');
  const transaction = decodeIlpTransaction(encodeIlpPrepare(prepare({ data })));
  assert.deepEqual(transaction, { ...mojaloopTransaction, note: 'café' });
});

test('long length prefixes: two- and three-byte lengths round-trip', () => {
  const cases: Array<[dataLength: number, envelopeLengthBytes: number]> = [
    [128, 1],
    [256, 2],
    [70_000, 3],
  ];
  for (const [dataLength, envelopeLengthBytes] of cases) {
    const data = Buffer.alloc(dataLength, 0x61);
    const packet = encodeIlpPrepare(prepare({ data }));
    const bytes = Buffer.from(packet, 'base64url');
    assert.equal(bytes[1], 0x80 | envelopeLengthBytes, `envelope prefix for ${dataLength}`);
    assert.equal(bytes.readUIntBE(2, envelopeLengthBytes), bytes.length - 2 - envelopeLengthBytes);
    assert.deepEqual(decodeIlpPrepare(packet).data, data);
  }
});

test('long destination length prefix round-trips', () => {
  const destination = `g.payeefsp.${'x'.repeat(300)}`;
  assert.equal(
    decodeIlpPrepare(encodeIlpPrepare(prepare({ destination }))).destination,
    destination,
  );
});

test('rejects packets that are not base64 or base64url', () => {
  for (const packet of ['', 'DIIC tgAA', 'DI*C', 'DIICt', 'DIICt=', 'DI=C']) {
    assert.throws(() => decodeIlpPrepare(packet), IlpDecodeError, JSON.stringify(packet));
  }
});

test('rejects a wrong packet type', () => {
  const bytes = smallPacketBytes();
  for (const type of [1, 13, 14]) {
    bytes[0] = type;
    assert.throws(() => decodeIlpPrepare(base64url(bytes)), {
      name: 'IlpDecodeError',
      message: /type is/,
    });
  }
});

test('rejects truncated packets', () => {
  const bytes = smallPacketBytes();
  for (let length = 0; length < bytes.length; length += 1) {
    assert.throws(
      () => decodeIlpPrepare(base64url(bytes.subarray(0, length))),
      IlpDecodeError,
      `${length} bytes`,
    );
  }
  // Envelope length consistent with the packet, but too short for its fields.
  assert.throws(() => decodeIlpPrepare(packetWithEnvelope(Buffer.alloc(20))), {
    name: 'IlpDecodeError',
    message: /truncated: expiresAt/,
  });
  assert.throws(() => decodeIlpPrepare(packetWithEnvelope(envelopeHead())), {
    name: 'IlpDecodeError',
    message: /truncated: destination length/,
  });
  // Destination claims more bytes than the envelope holds.
  const shortDestination = Buffer.concat([envelopeHead(), Buffer.from([5, 0x67])]);
  assert.throws(() => decodeIlpPrepare(packetWithEnvelope(shortDestination)), {
    name: 'IlpDecodeError',
    message: /truncated: destination needs 5/,
  });
});

test('rejects trailing bytes after the envelope and inside it', () => {
  const bytes = smallPacketBytes();
  assert.throws(() => decodeIlpPrepare(base64url(Buffer.concat([bytes, Buffer.from([0])]))), {
    name: 'IlpDecodeError',
    message: /trailing bytes after the envelope/,
  });
  const envelope = Buffer.concat([bytes.subarray(2), Buffer.from([0])]);
  assert.throws(() => decodeIlpPrepare(packetWithEnvelope(envelope)), {
    name: 'IlpDecodeError',
    message: /trailing bytes after data/,
  });
});

test('rejects bad length prefixes', () => {
  const cases: Array<[description: string, bytes: number[]]> = [
    ['length-of-length zero', [12, 0x80]],
    ['length-of-length too large', [12, 0x85, 0, 0, 0, 0, 1]],
    ['length bytes missing', [12, 0x82, 0x01]],
    ['non-minimal: short length in long form', [12, 0x81, 0x05, 0, 0, 0, 0, 0]],
    ['non-minimal: leading zero byte', [12, 0x82, 0x00, 0x90, ...new Array<number>(0x90).fill(0)]],
    ['length beyond the packet', [12, 0x84, 0xff, 0xff, 0xff, 0xff, 0]],
  ];
  for (const [description, bytes] of cases) {
    assert.throws(() => decodeIlpPrepare(base64url(bytes)), IlpDecodeError, description);
  }
});

test('rejects malformed expiresAt', () => {
  for (const expiresAt of [
    '2024120516080390Z',
    '2024-12-05T16:08',
    '20241305160803907',
    '20240230160803907',
    '20241205246003907',
  ]) {
    const envelope = Buffer.concat([envelopeHead(expiresAt), Buffer.from([1, 0x67, 0])]);
    assert.throws(() => decodeIlpPrepare(packetWithEnvelope(envelope)), {
      name: 'IlpDecodeError',
      message: /expiresAt/,
    });
  }
});

test('rejects a destination that is not IA5', () => {
  const envelope = Buffer.concat([envelopeHead(), Buffer.from([2, 0x67, 0xe9, 0])]);
  assert.throws(() => decodeIlpPrepare(packetWithEnvelope(envelope)), {
    name: 'IlpDecodeError',
    message: /IA5/,
  });
});

test('rejects data that is not a JSON object', () => {
  const cases: Array<[description: string, data: Buffer]> = [
    ['empty', Buffer.alloc(0)],
    ['base64url of text', Buffer.from(Buffer.from('not json').toString('base64url'))],
    ['base64url of an array', Buffer.from(Buffer.from('[1,2]').toString('base64url'))],
    ['base64url of null', Buffer.from(Buffer.from('null').toString('base64url'))],
    ['base64url of a string', Buffer.from(Buffer.from('"x"').toString('base64url'))],
    ['raw broken JSON', Buffer.from('{"transactionId":')],
    ['raw array', Buffer.from('[{"a":1}]')],
    ['not base64', Buffer.from('hello world!')],
    ['invalid UTF-8', Buffer.from([0xff, 0xfe])],
    ['base64url of invalid UTF-8', Buffer.from(Buffer.from([0x7b, 0xff]).toString('base64url'))],
  ];
  for (const [description, data] of cases) {
    const packet = encodeIlpPrepare(prepare({ data }));
    assert.throws(() => decodeIlpTransaction(packet), IlpDecodeError, description);
  }
});

test('encode rejects values the packet cannot carry', () => {
  const cases: Array<[description: string, overrides: Partial<IlpPrepare>]> = [
    ['negative amount', { amount: -1n }],
    ['amount above UInt64', { amount: 2n ** 64n }],
    ['condition of 31 bytes', { executionCondition: Buffer.alloc(31).toString('base64url') }],
    ['condition not base64', { executionCondition: `${CONDITION.slice(1)}!` }],
    ['expiresAt without zone', { expiresAt: '2024-12-05T16:08:03.907' }],
    ['expiresAt not a date', { expiresAt: 'tomorrow' }],
    ['expiresAt impossible month', { expiresAt: '2024-13-05T16:08:03.907Z' }],
    ['expiresAt past year 9999 in UTC', { expiresAt: '9999-12-31T23:00:00.000-05:00' }],
    ['non-ASCII destination', { destination: 'g.payée' }],
  ];
  for (const [description, overrides] of cases) {
    assert.throws(() => encodeIlpPrepare(prepare(overrides)), RangeError, description);
  }
});

test("ILPv1: decodes the payment packets of central-ledger's tests and Mojaloop's Golden Path collection", () => {
  const centralLedger = decodeIlpPacket(CENTRAL_LEDGER_PACKET);
  assert.equal(centralLedger.version, 1);
  assert.equal(centralLedger.amount, 123423n);
  assert.ok(
    centralLedger.version === 1 && centralLedger.account === 'g.payeefsp.msisdn.22556999125',
  );
  // What central-ledger's own test expects GET /transactions to answer for this packet.
  assert.deepEqual(decodeIlpTransaction(CENTRAL_LEDGER_PACKET), {
    transactionId: '55d8206e-80b7-48c4-994c-d066401a0bc8',
    quoteId: '1d98b4d1-fc55-46d8-85d6-89c30caab446',
    payee: {
      partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '22556999125', fspId: 'payeefsp' },
    },
    payer: {
      partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '22507008181', fspId: 'payerfsp' },
      personalInfo: {
        complexName: { firstName: 'Mats', lastName: 'Hagman' },
        dateOfBirth: '1983-10-25',
      },
    },
    amount: { currency: 'USD', amount: 1234.23 },
    transactionType: { scenario: 'TRANSFER', initiator: 'PAYER', initiatorType: 'CONSUMER' },
  });

  const goldenPath = decodeIlpPacket(GOLDEN_PATH_PACKET);
  assert.ok(goldenPath.version === 1 && goldenPath.account === 'g.simdfsp2.msisdn.27713803915');
  assert.equal(goldenPath.amount, 2000n);
  const transaction = decodeIlpTransaction(GOLDEN_PATH_PACKET);
  assert.equal(transaction.transactionId, '9678a1c6-9ef6-47dd-a2de-44c9b3920a7b');
  assert.deepEqual(transaction.amount, { amount: '20', currency: 'EUR' });
  // Standard base64 of the same bytes decodes alike.
  assert.deepEqual(
    decodeIlpTransaction(Buffer.from(GOLDEN_PATH_PACKET, 'base64url').toString('base64')),
    transaction,
  );
});

test('ILPv1: a payment whose data is no Mojaloop transaction decodes as a packet, not as a transaction', () => {
  const psk = decodeIlpPacket(PSK_PACKET);
  assert.ok(psk.version === 1 && psk.account.startsWith('levelone.dfsp1.mer.'));
  assert.equal(psk.amount, 1200n);
  assert.match(psk.data.toString('latin1'), /^PSK\/1\.0\n/);
  assert.throws(() => decodeIlpTransaction(PSK_PACKET), IlpDecodeError);
});

test('ILPv1: decodeIlpPacket tells the versions apart; truncated payments and other types are refused', () => {
  assert.equal(decodeIlpPacket(CAPTURED_MOJALOOP_PACKET).version, 4);
  assert.throws(() => decodeIlpPrepare(GOLDEN_PATH_PACKET), {
    name: 'IlpDecodeError',
    message: /type is 1, expected 12/,
  });
  const bytes = Buffer.from(GOLDEN_PATH_PACKET, 'base64url');
  for (const type of [0, 2, 8, 13]) {
    assert.throws(
      () => decodeIlpPacket(base64url(Buffer.concat([Buffer.from([type]), bytes.subarray(1)]))),
      { name: 'IlpDecodeError', message: /expected 1 \(ILPv1 payment\) or 12/ },
    );
  }
  // Envelopes that end inside the amount, the account or the data.
  for (const [envelope, field] of [
    [Buffer.alloc(5), /amount/],
    [Buffer.concat([Buffer.alloc(8), Buffer.from([9, 0x67])]), /account/],
    [Buffer.concat([Buffer.alloc(8), Buffer.from([1, 0x67, 4, 0x7b])]), /data/],
  ] as const) {
    assert.throws(() => decodeIlpPacket(packetWithEnvelope(envelope, 1)), {
      name: 'IlpDecodeError',
      message: field,
    });
  }
  assert.throws(
    () =>
      decodeIlpPacket(
        packetWithEnvelope(Buffer.concat([Buffer.alloc(8), Buffer.from([2, 0x67, 0xe9, 0])]), 1),
      ),
    { name: 'IlpDecodeError', message: /account is not an IA5/ },
  );
  // Bytes after the data are extensions (one 0 byte in every real packet), ignored as ilp-packet
  // does.
  const withExtensions = Buffer.concat([
    Buffer.alloc(8),
    Buffer.from([1, 0x67, 2, 0x7b, 0x7d, 0, 1, 2]),
  ]);
  assert.deepEqual(decodeIlpPacket(packetWithEnvelope(withExtensions, 1)).data, Buffer.from('{}'));
});
