/**
 * JSON schemas of the request bodies, shared by routes and the OpenAPI document. Shapes follow
 * central-ledger's admin API and FSPIOP v1.1. Admin bodies refuse unknown properties (3101), as
 * central-ledger's Joi route validation does. FSPIOP bodies take them, at every level:
 * ml-api-adapter validates them against its OpenAPI document, which names no
 * `additionalProperties`, and forwards them whole, and central-ledger reads the properties it
 * knows (the Testing Toolkit's FX prepares carry `amountType`). Amount precision, currencies,
 * conditions and dates are checked by the domain, in central-ledger's order, so they answer 3100
 * like central-ledger does.
 */
export const name = { type: 'string', minLength: 2, maxLength: 30 } as const;
export const currency = { type: 'string', pattern: '^[A-Z]{3}$' } as const;
export const transferId = {
  type: 'string',
  pattern:
    '^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-7][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25})$',
} as const;
const decimal = { anyOf: [{ type: 'string', maxLength: 40 }, { type: 'number' }] } as const;
export const money = {
  type: 'object',
  required: ['amount', 'currency'],
  properties: { amount: { type: 'string', maxLength: 40 }, currency },
} as const;
export const extensionList = {
  type: 'object',
  required: ['extension'],
  properties: {
    extension: {
      type: 'array',
      minItems: 1,
      maxItems: 16,
      items: {
        type: 'object',
        required: ['key', 'value'],
        properties: {
          key: { type: 'string', minLength: 1, maxLength: 32 },
          value: { type: 'string', minLength: 1, maxLength: 128 },
        },
      },
    },
  },
} as const;
/** The extension list of central-ledger's admin API, whose Joi refuses unknown keys inside. */
const adminExtensionList = {
  ...extensionList,
  additionalProperties: false,
  properties: {
    extension: {
      ...extensionList.properties.extension,
      items: { ...extensionList.properties.extension.items, additionalProperties: false },
    },
  },
} as const;
export const errorInformation = {
  type: 'object',
  required: ['errorCode', 'errorDescription'],
  properties: {
    errorCode: { type: 'string', pattern: '^[1-9]\\d{3}$' },
    errorDescription: { type: 'string', minLength: 1, maxLength: 128 },
    extensionList,
  },
} as const;

export const prepareBody = {
  type: 'object',
  required: [
    'transferId',
    'payerFsp',
    'payeeFsp',
    'amount',
    'ilpPacket',
    'condition',
    'expiration',
  ],
  properties: {
    transferId,
    payerFsp: { type: 'string', minLength: 1, maxLength: 32 },
    payeeFsp: { type: 'string', minLength: 1, maxLength: 32 },
    amount: money,
    ilpPacket: { type: 'string', minLength: 1, maxLength: 32768, pattern: '^[A-Za-z0-9_=+/-]+$' },
    condition: { type: 'string', maxLength: 48 },
    expiration: { type: 'string', maxLength: 40 },
    extensionList,
  },
} as const;

export const fulfilBody = {
  type: 'object',
  required: ['transferState'],
  properties: {
    transferState: { type: 'string', enum: ['COMMITTED', 'RESERVED', 'ABORTED'] },
    fulfilment: { type: 'string', maxLength: 48 },
    completedTimestamp: { type: 'string', maxLength: 40 },
    extensionList,
  },
} as const;

export const errorBody = {
  type: 'object',
  required: ['errorInformation'],
  properties: { errorInformation },
} as const;

/**
 * Any type name: central-ledger answers an unknown or non-hub type with 3003, not a schema error.
 */
export const hubAccountBody = {
  type: 'object',
  additionalProperties: false,
  required: ['currency', 'type'],
  properties: { currency, type: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

export const settlementModelBody = {
  type: 'object',
  additionalProperties: false,
  required: [
    'name',
    'settlementGranularity',
    'settlementInterchange',
    'settlementDelay',
    'requireLiquidityCheck',
    'ledgerAccountType',
    'autoPositionReset',
    'settlementAccountType',
  ],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 50 },
    settlementGranularity: { type: 'string', enum: ['GROSS', 'NET'] },
    settlementInterchange: { type: 'string', enum: ['BILATERAL', 'MULTILATERAL'] },
    settlementDelay: { type: 'string', enum: ['IMMEDIATE', 'DEFERRED'] },
    currency: { anyOf: [currency, { type: 'null' }] },
    requireLiquidityCheck: { type: 'boolean' },
    ledgerAccountType: { type: 'string', enum: ['POSITION', 'SETTLEMENT', 'INTERCHANGE_FEE'] },
    autoPositionReset: { type: 'boolean' },
    settlementAccountType: { type: 'string', enum: ['SETTLEMENT', 'INTERCHANGE_FEE_SETTLEMENT'] },
  },
} as const;

export const participantBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'currency'],
  // isProxy as central-ledger's Joi takes it: booleans, 0/1, '0'/'1', '' (false) or null.
  properties: {
    name,
    currency,
    isProxy: {
      anyOf: [
        { type: 'boolean' },
        { type: 'integer', enum: [0, 1] },
        { type: 'string', enum: ['0', '1', ''] },
        { type: 'null' },
      ],
    },
  },
} as const;

export const isActiveBody = {
  type: 'object',
  additionalProperties: false,
  required: ['isActive'],
  properties: { isActive: { anyOf: [{ type: 'boolean' }, { type: 'integer', enum: [0, 1] }] } },
} as const;

const limit = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'value'],
  properties: {
    type: { type: 'string', enum: ['NET_DEBIT_CAP'] },
    value: decimal,
    alarmPercentage: { type: 'number', minimum: 0, maximum: 100 },
  },
} as const;

export const initialPositionAndLimitsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['currency', 'limit'],
  properties: { currency, limit, initialPosition: decimal },
} as const;

export const limitsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['currency', 'limit'],
  properties: { currency, limit },
} as const;

export const fundsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['transferId', 'externalReference', 'action', 'reason', 'amount'],
  properties: {
    transferId,
    externalReference: { type: 'string', maxLength: 256 },
    action: { type: 'string', enum: ['recordFundsIn', 'recordFundsOutPrepareReserve'] },
    reason: { type: 'string', maxLength: 512 },
    // central-ledger's Joi number(): a JSON number or a numeric string, read exactly.
    amount: {
      ...money,
      additionalProperties: false,
      properties: { ...money.properties, amount: decimal },
    },
    extensionList: adminExtensionList,
  },
} as const;

export const limitQuery = {
  type: 'object',
  properties: { currency, type: { type: 'string', maxLength: 64 } },
} as const;

export const fundsFinishBody = {
  type: 'object',
  additionalProperties: false,
  required: ['action', 'reason'],
  properties: {
    action: { type: 'string', enum: ['recordFundsOutCommit', 'recordFundsOutAbort'] },
    reason: { type: 'string', maxLength: 512 },
    externalReference: { type: 'string', maxLength: 256 },
  },
} as const;

export const endpointBody = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'value'],
  properties: {
    type: { type: 'string', minLength: 1, maxLength: 64 },
    value: { type: 'string', minLength: 1, maxLength: 512 },
  },
} as const;

export const jmeterParticipantBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'currency'],
  properties: { name, currency, newlyCreated: { type: 'boolean' } },
} as const;

export const jmeterPrepareBody = {
  ...prepareBody,
  properties: {
    ...prepareBody.properties,
    fulfil: { type: 'boolean' },
    reject: { type: 'boolean' },
    fulfilment: { type: 'string', maxLength: 48 },
  },
  required: [...prepareBody.required, 'fulfil'],
} as const;

export const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', maxLength: 64 } },
} as const;
export const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', maxLength: 64 } },
} as const;
