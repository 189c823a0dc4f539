/**
 * FSPIOP v2.0 fxTransfers bodies (api-snippets fspiop/v2_0 FxTransfersPostRequest,
 * FxTransfersIDPutResponse), shared by the HTTP routes and the Kafka mode. As the transfers'
 * schemas: properties the API does not name taken, as ml-api-adapter takes and forwards them
 * (the Testing Toolkit's `amountType`); amounts, currencies, conditions and dates checked by
 * the domain in central-ledger's order (3100).
 */
import { extensionList, money, transferId } from './transfers';

export const fxPrepareBody = {
  type: 'object',
  required: [
    'commitRequestId',
    'initiatingFsp',
    'counterPartyFsp',
    'sourceAmount',
    'targetAmount',
    'condition',
  ],
  properties: {
    commitRequestId: transferId,
    determiningTransferId: transferId,
    initiatingFsp: { type: 'string', minLength: 1, maxLength: 32 },
    counterPartyFsp: { type: 'string', minLength: 1, maxLength: 32 },
    sourceAmount: money,
    targetAmount: money,
    condition: { type: 'string', maxLength: 48 },
    expiration: { type: 'string', maxLength: 40 },
    extensionList,
  },
} as const;

export const fxFulfilBody = {
  type: 'object',
  required: ['conversionState'],
  properties: {
    conversionState: { type: 'string', enum: ['RECEIVED', 'RESERVED', 'COMMITTED', 'ABORTED'] },
    fulfilment: { type: 'string', maxLength: 48 },
    completedTimestamp: { type: 'string', maxLength: 40 },
    extensionList,
  },
} as const;
