import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  fspiopError,
  FspiopCode,
  FspiopError,
  httpStatusOf,
  validationError,
} from '../../src/domain/shared/errors';

test('httpStatusOf maps each code class to its HTTP status', () => {
  const cases: Array<[string, number]> = [
    ['1000', 503],
    ['1001', 503],
    ['1100', 503],
    ['2000', 500],
    ['2001', 500],
    ['2002', 501],
    ['2003', 503],
    ['3002', 404],
    ['3000', 400],
    ['3100', 400],
    ['3106', 400],
    ['3208', 400],
    ['3303', 400],
    ['4001', 400],
    ['4200', 400],
    ['5000', 400],
    ['5105', 400],
    ['6000', 400],
  ];
  for (const [code, status] of cases) assert.equal(httpStatusOf(code), status, code);
});

test('every catalogue code has the status of its class, or its own as central-services-error-handling gives it', () => {
  const own: Record<string, number> = { '2002': 501, '2003': 503, '3002': 404 };
  for (const code of Object.values(FspiopCode)) {
    const expected = own[code] ?? (code.startsWith('1') ? 503 : code.startsWith('2') ? 500 : 400);
    assert.equal(new FspiopError(code).httpStatus, expected, code);
  }
});

test('FspiopError message is the description, then " - detail" when given', () => {
  const bare = new FspiopError(FspiopCode.PAYER_INSUFFICIENT_LIQUIDITY);
  assert.equal(bare.message, 'Payer FSP insufficient liquidity');
  assert.equal(bare.detail, undefined);
  assert.equal(bare.code, '4001');
  assert.equal(bare.name, 'FspiopError');
  assert.ok(bare instanceof Error);

  const detailed = new FspiopError(FspiopCode.TRANSFER_ID_NOT_FOUND, 'transfer abc');
  assert.equal(detailed.message, 'Transfer ID not found - transfer abc');
  assert.equal(detailed.detail, 'transfer abc');
  assert.equal(detailed.httpStatus, 400);

  // An empty detail is still a detail.
  assert.equal(new FspiopError(FspiopCode.INTERNAL, '').message, 'Internal server error - ');
});

test('toErrorInformation and toApiBody carry code and message only', () => {
  const error = new FspiopError(FspiopCode.MODIFIED_REQUEST, 'payload differs');
  assert.deepEqual(error.toErrorInformation(), {
    errorCode: '3106',
    errorDescription: 'Modified request - payload differs',
  });
  assert.deepEqual(error.toApiBody(), {
    errorInformation: { errorCode: '3106', errorDescription: 'Modified request - payload differs' },
  });
  assert.deepEqual(new FspiopError(FspiopCode.SERVICE_UNAVAILABLE).toApiBody(), {
    errorInformation: { errorCode: '2003', errorDescription: 'Service currently unavailable' },
  });
  // The body survives JSON as is (no class instances, no bigint).
  assert.deepEqual(JSON.parse(JSON.stringify(error.toApiBody())), error.toApiBody());
});

test('helpers build the expected codes', () => {
  const v = validationError('bad amount');
  assert.equal(v.code, '3100');
  assert.equal(v.message, 'Generic validation error - bad amount');
  const f = fspiopError(FspiopCode.PAYER_LIMIT_ERROR, 'over cap');
  assert.ok(f instanceof FspiopError);
  assert.equal(f.message, 'Payer limit error - over cap');
  assert.equal(fspiopError(FspiopCode.NOT_IMPLEMENTED).httpStatus, 501);
});
