/**
 * Messages exactly as ml-api-adapter writes them to topic-transfer-*, built from the fixtures in
 * test/fixtures/kafka/in (the prepare one is a real capture) with a new transfer's values.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeIlpPrepare } from '../../src/domain/shared/ilp';

const FIXTURES = join(__dirname, '..', 'fixtures', 'kafka', 'in');
const CONTENT_TYPE = 'application/vnd.interoperability.transfers+json;version=1.1';

function fixture(name: string): any {
  return JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), 'utf8'));
}

function dataUri(body: unknown, contentType = CONTENT_TYPE): string {
  return `data:${contentType};base64,${Buffer.from(JSON.stringify(body)).toString('base64')}`;
}

export interface TestTransfer {
  transferId: string;
  payer: string;
  payee: string;
  amount: string;
  currency: string;
  fulfilment: string;
  condition: string;
  expiration: string;
  body: Record<string, unknown>;
}

export function newTransfer(
  payer: string,
  payee: string,
  amount: string,
  currency = 'USD',
  expiresInMs = 600_000,
): TestTransfer {
  const preimage = randomBytes(32);
  const transfer = {
    transferId: randomUUID(),
    payer,
    payee,
    amount,
    currency,
    fulfilment: preimage.toString('base64url'),
    condition: createHash('sha256').update(preimage).digest('base64url'),
    expiration: new Date(Date.now() + expiresInMs).toISOString(),
  };
  const ilpPacket = encodeIlpPrepare({
    amount: 1n,
    expiresAt: transfer.expiration,
    executionCondition: transfer.condition,
    destination: `g.${payee}`,
    data: Buffer.from(
      Buffer.from(
        JSON.stringify({ transactionId: randomUUID(), amount: { amount, currency } }),
      ).toString('base64url'),
    ),
  });
  return {
    ...transfer,
    body: {
      transferId: transfer.transferId,
      payerFsp: payer,
      payeeFsp: payee,
      amount: { amount, currency },
      ilpPacket,
      condition: transfer.condition,
      expiration: transfer.expiration,
    },
  };
}

/**
 * Fills a fixture envelope: ids, parties, headers and the body as a data-URI (payload and context
 * alike).
 */
function envelope(
  template: any,
  transferId: string,
  from: string,
  to: string,
  body: unknown,
  eventType: string,
  action: string,
  contentType = CONTENT_TYPE,
): any {
  const message = structuredClone(template);
  message.id = transferId;
  message.from = from;
  message.to = to;
  message.content.uriParams = { id: transferId };
  message.content.headers['fspiop-source'] = from;
  message.content.headers['fspiop-destination'] = to;
  message.content.headers.date = new Date().toUTCString();
  message.content.headers['content-type'] = contentType;
  if (body !== undefined) {
    const uri = dataUri(body, contentType);
    message.content.payload = uri;
    message.content.headers['content-length'] = String(Buffer.byteLength(JSON.stringify(body)));
    message.content.context = { originalRequestId: randomUUID(), originalRequestPayload: uri };
  }
  message.metadata.correlationId = transferId;
  message.metadata.event = {
    ...message.metadata.event,
    type: eventType,
    action,
    createdAt: new Date().toISOString(),
  };
  delete message.metadata.event.id;
  return message;
}

export function prepareMessage(
  transfer: TestTransfer,
  overrides: { body?: Record<string, unknown>; source?: string } = {},
): any {
  return envelope(
    fixture('prepare'),
    transfer.transferId,
    overrides.source ?? transfer.payer,
    transfer.payee,
    overrides.body ?? transfer.body,
    'prepare',
    'prepare',
  );
}

export function fulfilMessage(
  transfer: TestTransfer,
  action: 'commit' | 'reserve' | 'reject',
  overrides: { fulfilment?: string; source?: string } = {},
): any {
  const transferState = { commit: 'COMMITTED', reserve: 'RESERVED', reject: 'ABORTED' }[action];
  const body =
    action === 'reject'
      ? { transferState, completedTimestamp: new Date().toISOString() }
      : {
          transferState,
          fulfilment: overrides.fulfilment ?? transfer.fulfilment,
          completedTimestamp: new Date().toISOString(),
        };
  return envelope(
    fixture('fulfil-commit'),
    transfer.transferId,
    overrides.source ?? transfer.payee,
    transfer.payer,
    body,
    'fulfil',
    action,
  );
}

export function abortMessage(
  transfer: TestTransfer,
  errorCode = '5100',
  errorDescription = 'Payee rejected',
): any {
  return envelope(
    fixture('fulfil-abort'),
    transfer.transferId,
    transfer.payee,
    transfer.payer,
    { errorInformation: { errorCode, errorDescription } },
    'fulfil',
    'abort',
  );
}

export function getMessage(transfer: TestTransfer, requester: string): any {
  const message = envelope(
    fixture('get'),
    transfer.transferId,
    requester,
    requester === transfer.payer ? transfer.payee : transfer.payer,
    undefined,
    'get',
    'get',
  );
  message.content.payload = {};
  return message;
}

const FX_CONTENT_TYPE = 'application/vnd.interoperability.fxTransfers+json;version=2.0';

/**
 * An fx message as ml-api-adapter 16.10.1 writes it: the transfers' envelope with the fx- action
 * and the fxTransfers media type.
 */
export function fxMessage(
  kind: 'prepare' | 'fulfil' | 'get',
  action: string,
  commitRequestId: string,
  from: string,
  to: string,
  body: unknown,
): any {
  const fulfil = action === 'fx-abort' ? 'fulfil-abort' : 'fulfil-commit';
  const template = kind === 'prepare' || kind === 'get' ? kind : fulfil;
  const message = envelope(
    fixture(template),
    commitRequestId,
    from,
    to,
    body,
    kind,
    action,
    FX_CONTENT_TYPE,
  );
  if (body === undefined) message.content.payload = {};
  return message;
}
