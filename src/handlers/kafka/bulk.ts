/**
 * Kafka drop-in mode for bulk transfers: the messages bulk-api-adapter writes to
 * topic-bulk-prepare (bulk-prepare), topic-bulk-fulfil (bulk-commit for a payee's PUT, bulk-abort
 * for its PUT …/error) and topic-bulk-get (bulk/get), run through the bulk flow (BulkApi), and its
 * notices told as bulk-api-adapter's notification handler reads them (bulk-notices.ts): each
 * results document saved before the event naming it is produced. They go through the transfer
 * topics' machinery (transport.ts: chunks, per-bulk order, offsets committed once the answers are
 * produced, malformed messages, the same message delivered again).
 */
import Ajv from 'ajv';
import type {
  BulkApi,
  BulkDelivery,
  BulkErrorBody,
  BulkFulfilBody,
  BulkNotice,
  BulkPrepareBody,
} from '../../domain/bulk/api';
import type { BulkResultStore } from '../../ports/bulk';
import type { FromSchema } from '../../util/json-schema';
import { bulkOutgoing } from './bulk-notices';
import type { Inbound } from './inbound';
import { header, MessageError, type MojaloopMessage } from './messages';
import { PayloadReader } from './payloads';
import type { HandlerRegistry } from './registry';

const text = { type: 'string', minLength: 1 } as const;

const prepareSchema = {
  type: 'object',
  required: ['bulkTransferId', 'bulkQuoteId', 'payerFsp', 'payeeFsp', 'expiration', 'hash'],
  properties: {
    bulkTransferId: text,
    bulkQuoteId: text,
    payerFsp: text,
    payeeFsp: text,
    expiration: text,
    hash: text,
  },
} as const;

const fulfilSchema = {
  type: 'object',
  required: ['bulkTransferId', 'hash'],
  properties: {
    bulkTransferId: text,
    bulkTransferState: { type: 'string' },
    completedTimestamp: { type: 'string' },
    count: { type: 'integer' },
    hash: text,
  },
} as const;

const errorSchema = {
  type: 'object',
  required: ['bulkTransferId', 'errorInformation', 'hash'],
  properties: {
    bulkTransferId: text,
    errorInformation: {
      type: 'object',
      required: ['errorCode', 'errorDescription'],
      properties: { errorCode: { type: 'string' }, errorDescription: { type: 'string' } },
    },
    hash: text,
  },
} as const;

/** Readers of bulk-api-adapter's payloads: what the flow needs of them, typed. */
function bulkPayloadReaders() {
  const ajv = new Ajv({ allErrors: false, coerceTypes: false });
  const reader = <Schema extends object>(schema: Schema): PayloadReader<FromSchema<Schema>> =>
    new PayloadReader(ajv.compile<FromSchema<Schema>>(schema));
  return {
    prepare: reader(prepareSchema),
    fulfil: reader(fulfilSchema),
    error: reader(errorSchema),
  };
}

export class BulkMessages {
  private readonly payloads = bulkPayloadReaders();

  constructor(
    private readonly bulk: BulkApi,
    private readonly results: BulkResultStore,
  ) {}

  register(registry: HandlerRegistry): void {
    registry.register('bulk-prepare', ['bulk-prepare'], (inbound) => this.prepare(inbound));
    registry.register('bulk-fulfil', ['bulk-commit', 'bulk-abort'], (inbound) =>
      this.fulfil(inbound),
    );
    registry.register('bulk', ['get'], (inbound) => this.get(inbound));
  }

  /**
   * The events telling `notices`, their results documents saved first (a document already there
   * from an earlier delivery stands). `headers`: those of the request answered, if any.
   */
  async tell(
    notices: readonly BulkNotice[],
    headers?: Record<string, string>,
  ): Promise<MojaloopMessage[]> {
    const outgoing = notices.map((notice) => bulkOutgoing(notice, headers));
    await Promise.all(
      outgoing.flatMap(({ result }) =>
        result === undefined ? [] : [this.results.saveResult(result)],
      ),
    );
    return outgoing.map(({ message }) => message);
  }

  private async prepare(inbound: Inbound): Promise<MojaloopMessage[]> {
    const payload = inbound.payload();
    const body: BulkPrepareBody = {
      ...this.payloads.prepare.read(payload),
      ...extensions(payload),
    };
    const delivery = deliveryOf(inbound);
    return this.tell(await this.bulk.prepare(delivery, body), delivery.headers);
  }

  private async fulfil(inbound: Inbound): Promise<MojaloopMessage[]> {
    const payload = inbound.payload();
    const delivery = deliveryOf(inbound);
    if (payload['bulkTransferId'] !== inbound.transferId)
      throw new MessageError('payload bulkTransferId is not the one of the URI');
    let notices: BulkNotice[];
    if (inbound.message.metadata.event.action === 'bulk-abort') {
      const body: BulkErrorBody = { ...this.payloads.error.read(payload), ...extensions(payload) };
      notices = await this.bulk.error(delivery, body);
    } else {
      const body: BulkFulfilBody = {
        ...this.payloads.fulfil.read(payload),
        ...extensions(payload),
      };
      notices = await this.bulk.fulfil(delivery, body);
    }
    return this.tell(notices, delivery.headers);
  }

  private async get(inbound: Inbound): Promise<MojaloopMessage[]> {
    const notices = await this.bulk.get(inbound.transferId, inbound.source);
    return this.tell(notices, inbound.message.content.headers);
  }
}

function deliveryOf({ message, source, origin }: Inbound): BulkDelivery {
  return {
    source,
    destination: header(message, 'fspiop-destination'),
    messageId: message.id,
    origin,
    headers: message.content.headers,
  };
}

/** The payload's extensionList, where it has one (any shape: the flow passes it on). */
function extensions(payload: Record<string, unknown>): { extensionList?: unknown } {
  return payload['extensionList'] === undefined ? {} : { extensionList: payload['extensionList'] };
}
