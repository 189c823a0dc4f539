/**
 * The body schemas as the Kafka transport compiles them (Ajv, no coercion): what ml-api-adapter
 * forwards passes, properties its OpenAPI document does not name included; the admin API's
 * bodies refuse them as central-ledger's Joi does.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import Ajv from 'ajv';
import { fxFulfilBody, fxPrepareBody } from '../../src/handlers/schemas/fx';
import * as schemas from '../../src/handlers/schemas/transfers';

const ajv = new Ajv({ allErrors: false, coerceTypes: false });

test("the Testing Toolkit's FX prepare, amountType and all, passes as ml-api-adapter forwards it", () => {
  const validate = ajv.compile(fxPrepareBody);
  const body = {
    commitRequestId: randomUUID(),
    determiningTransferId: randomUUID(),
    initiatingFsp: 'testingtoolkitdfsp',
    counterPartyFsp: 'testfxp',
    amountType: 'SEND',
    sourceAmount: { currency: 'XXX', amount: '100' },
    targetAmount: { currency: 'XTS', amount: '200' },
    condition: 'GRzLaTP7DJ9t4P-a_BA0WA9wzzlsugf00-Tn6kESAfM',
    expiration: new Date().toISOString(),
  };
  assert.ok(validate(body), JSON.stringify(validate.errors));
});

test('FSPIOP bodies take unnamed properties at every level; the required ones stay required', () => {
  const extension = { extension: [{ key: 'k', value: 'v', x: 1 }], y: 2 };
  const cases: [object, unknown][] = [
    [
      schemas.prepareBody,
      {
        transferId: randomUUID(),
        payerFsp: 'a',
        payeeFsp: 'b',
        amount: { amount: '1', currency: 'USD', x: 1 },
        ilpPacket: 'AYIB',
        condition: 'c',
        expiration: 'e',
        extensionList: extension,
        x: 1,
      },
    ],
    [schemas.fulfilBody, { transferState: 'COMMITTED', extensionList: extension, x: 1 }],
    [schemas.errorBody, { errorInformation: { errorCode: '5100', errorDescription: 'd', x: 1 } }],
    [fxFulfilBody, { conversionState: 'RESERVED', x: 1 }],
  ];
  for (const [schema, body] of cases) {
    const validate = ajv.compile(schema);
    assert.ok(validate(body), JSON.stringify(validate.errors));
    assert.equal(validate({ x: 1 }), false, 'a body without its required properties');
  }
});

test("the admin API's bodies refuse unnamed properties, inside too", () => {
  const validate = ajv.compile(schemas.fundsBody);
  const funds = {
    transferId: randomUUID(),
    externalReference: 'r',
    action: 'recordFundsIn',
    reason: 'r',
    amount: { amount: '1', currency: 'USD' },
  };
  assert.ok(validate(funds), JSON.stringify(validate.errors));
  for (const extra of [
    { x: 1 },
    { amount: { amount: '1', currency: 'USD', x: 1 } },
    { extensionList: { extension: [{ key: 'k', value: 'v' }], x: 1 } },
    { extensionList: { extension: [{ key: 'k', value: 'v', x: 1 }] } },
  ])
    assert.equal(validate({ ...funds, ...extra }), false, JSON.stringify(extra));
  assert.equal(ajv.compile(schemas.participantBody)({ name: 'abc', currency: 'USD', x: 1 }), false);
});
