/**
 * Response schemas of every route, for the OpenAPI document (/openapi.json). They are attached
 * by an onRoute hook from the table below, so route files stay as they are, and they document
 * only: the serializer compiler ignores them and replies are JSON.stringify'd as without a
 * schema, so no field a client relies on is dropped or coerced and the hot path does no extra
 * work (fast-json-stringify would drop properties a schema does not list, e.g. a transaction's
 * own fields or an extensionList's).
 */
import type { FastifyInstance } from 'fastify';
import { errorInformation, extensionList } from '../schemas/transfers';

type Schema = Record<string, unknown>;
type Responses = Record<string, Schema>;

const text = { type: 'string' } as const;
const decimal = {
  type: 'string',
  description: 'decimal amount as a string (FSPIOP, /jmeter)',
} as const;
const amount = {
  type: 'number',
  description: 'exact decimal amount written as a JSON number literal, as central-ledger answers',
} as const;
const flag = { type: 'integer', enum: [0, 1] } as const;
const array = (items: Schema): Schema => ({ type: 'array', items });
const object = (
  properties: Record<string, Schema>,
  required = Object.keys(properties),
): Schema => ({ type: 'object', required, properties });
const empty = { description: 'No content', type: 'null' } as const;

const fspiopError = (description: string): Schema => ({
  description,
  ...object({ errorInformation }),
});
/** What any route can answer besides its own success (handlers/errors.ts, domain/errors.ts). */
const ERRORS: Responses = {
  400: fspiopError('FSPIOP error: 3xxx validation or syntax, 4xxx payer, 6xxx settlement'),
  404: fspiopError('3002 Unknown URI'),
  405: fspiopError('3000 Method Not Allowed (the Allow header lists the methods of the path)'),
  414: fspiopError('3000 URI too long'),
  500: fspiopError('2001 Internal server error'),
  503: fspiopError('2003 Service currently unavailable (ledger or metadata store)'),
};

const transfer = object(
  {
    transferId: text,
    transferState: {
      type: 'string',
      enum: ['RECEIVED', 'RESERVED', 'COMMITTED', 'SETTLED', 'ABORTED'],
    },
    fulfilment: text,
    completedTimestamp: text,
    extensionList,
    errorInformation,
  },
  ['transferId', 'transferState'],
);
const fxTransfer = object(
  {
    commitRequestId: text,
    conversionState: { type: 'string', enum: ['RECEIVED', 'RESERVED', 'COMMITTED', 'ABORTED'] },
    fulfilment: text,
    completedTimestamp: text,
    errorInformation,
  },
  ['commitRequestId', 'conversionState', 'completedTimestamp'],
);
const accountOf = (money: Schema): Schema =>
  object({
    id: { type: 'integer' },
    ledgerAccountType: text,
    currency: text,
    isActive: flag,
    value: money,
    reservedValue: money,
    changedDate: text,
  });
const account = accountOf(amount);
const position = object({ currency: text, value: amount, changedDate: text });
const limit = object({
  currency: text,
  limit: object({ type: text, value: amount, alarmPercentage: { type: 'number' } }),
});
const participant = object({
  name: text,
  id: { type: 'string', description: 'the participant URL' },
  created: text,
  isActive: flag,
  links: object({ self: text }),
  accounts: array(
    object({
      id: { type: 'integer' },
      ledgerAccountType: text,
      currency: text,
      isActive: flag,
      createdDate: text,
      createdBy: text,
    }),
  ),
  isProxy: flag,
});
const settlementModel = object({
  name: text,
  settlementGranularity: text,
  settlementInterchange: text,
  settlementDelay: text,
  currency: { type: ['string', 'null'] },
  requireLiquidityCheck: { type: 'boolean' },
  ledgerAccountType: text,
  autoPositionReset: { type: 'boolean' },
  settlementAccountType: text,
});
const health = object({
  status: text,
  uptime: { type: 'number' },
  startTime: text,
  versionNumber: text,
  services: array(object({ name: text, status: text })),
});
const live = object({ status: text, faults: array(text) }, ['status']);
const transaction = {
  type: 'object',
  description: "the Mojaloop transaction object the transfer's ILP packet carries",
  additionalProperties: true,
} as const;
const endpoint = object({ type: text, value: text });
const jmeterParticipant = object({ name: text, currency: text, newlyCreated: { type: 'boolean' } });

const healthAnswers = { 200: health, 502: { ...health, description: 'a service is DOWN' } };

/** Success answers by `METHOD url` as the routes are registered. */
const SUCCESS: Record<string, Responses> = {
  'GET /health': healthAnswers,
  'GET /v2/health': healthAnswers,
  'GET /live': { 200: live, 503: { ...live, description: 'a fault only a restart mends' } },
  'GET /enums': { 200: { type: 'object', additionalProperties: { type: 'object' } } },
  'GET /ledgerAccountTypes': {
    200: array(
      object({
        id: { type: 'integer' },
        name: text,
        description: text,
        isActive: flag,
        isSettleable: { type: 'boolean' },
      }),
    ),
  },
  'POST /participants/:name/accounts': {
    201: { ...participant, description: 'the Hub, with its accounts' },
  },
  'POST /settlementModels': { 201: empty },
  'GET /settlementModels': { 200: array(settlementModel) },
  'GET /settlementModels/:name': { 200: settlementModel },
  'POST /participants': { 201: participant },
  'GET /participants': { 200: array(participant) },
  'GET /participants/:name': { 200: participant },
  'PUT /participants/:name': { 200: participant },
  'POST /participants/:name/initialPositionAndLimits': { 201: empty },
  'GET /participants/limits': {
    200: array({
      ...limit,
      required: ['name', 'currency', 'limit'],
      properties: { name: text, ...(limit.properties as Schema) },
    }),
  },
  'GET /participants/:name/limits': { 200: array(limit) },
  'PUT /participants/:name/limits': { 200: limit },
  'GET /participants/:name/positions': {
    200: {
      description: 'a list; one position when ?currency= is given',
      oneOf: [array(position), position],
    },
  },
  'GET /participants/:name/accounts': { 200: array(account) },
  'PUT /participants/:name/accounts/:id': { 200: empty },
  'POST /participants/:name/accounts/:id': { 202: empty },
  'PUT /participants/:name/accounts/:id/transfers/:transferId': { 202: empty },
  'POST /participants/:name/endpoints': { 201: empty },
  'GET /participants/:name/endpoints': { 200: array(endpoint) },
  'GET /transactions/:id': { 200: transaction },
  'POST /transfers': {
    201: transfer,
    200: { ...transfer, description: 'a duplicate: the current state' },
  },
  'PUT /transfers/:id': { 200: transfer },
  'PUT /transfers/:id/error': { 200: transfer },
  'GET /transfers/:id': { 200: transfer },
  'POST /fxTransfers': {
    201: fxTransfer,
    200: { ...fxTransfer, description: 'a duplicate: the current state' },
  },
  'PUT /fxTransfers/:id': { 200: fxTransfer },
  'PUT /fxTransfers/:id/error': { 200: fxTransfer },
  'GET /fxTransfers/:id': { 200: fxTransfer },
  'POST /jmeter/participants/create': { 200: jmeterParticipant },
  'GET /jmeter/participants/:name': {
    200: object({ name: text, isActive: { type: 'boolean' }, accounts: array(accountOf(decimal)) }),
  },
  'GET /jmeter/participants/:name/transfers/:id': {
    200: {
      ...transfer,
      properties: {
        ...(transfer.properties as Schema),
        amount: object({ amount: decimal, currency: text }),
      },
    },
  },
  'GET /jmeter/transactions/ilp/:id': { 200: transaction },
  'POST /jmeter/transfers/prepare': {
    201: transfer,
    200: { ...transfer, description: 'a duplicate: the current state' },
  },
};

export function documentResponses(app: FastifyInstance): void {
  // Replies are serialised as without a schema (see above).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.addHook('onRoute', (route) => {
    const schema = route.schema ?? {};
    if ((schema as { hide?: boolean }).hide === true || route.method === 'HEAD') return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const success =
      methods
        .map((method) => SUCCESS[`${method} ${route.url}`])
        .find((found) => found !== undefined) ?? {};
    // A route may document its own success answers (the settlement API's, in settlement.ts).
    route.schema = {
      ...schema,
      response: { ...ERRORS, ...success, ...((schema as { response?: Responses }).response ?? {}) },
    };
  });
}
