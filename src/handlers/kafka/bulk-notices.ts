/**
 * Bulk notices (src/domain/bulk/api.ts) as bulk-api-adapter's notification handler reads them
 * (its src/handlers/notification/index.js, v17.2.6): an event on topic-notification-event whose
 * action and state pick the callback, and, for the two callbacks that carry per-transfer lists
 * it does not find in the event, a `bulkTransferResults` document it reads back by the event's
 * id and receiver.
 *
 * | notice                          | action                 | callback                         |
 * |---------------------------------|------------------------|----------------------------------|
 * | forward                         | bulk-prepare           | POST /bulkTransfers (results doc)|
 * | state: prepare, fulfil, expiry  | bulk-commit            | PUT /bulkTransfers/{id} (doc)    |
 * | state: duplicate                | bulk-prepare-duplicate | PUT /bulkTransfers/{id}          |
 * | state: get                      | bulk-get               | PUT /bulkTransfers/{id}          |
 * | error: prepare, duplicate       | bulk-prepare, error    | PUT /bulkTransfers/{id}/error    |
 * | error: get                      | bulk-get, error        | PUT /bulkTransfers/{id}/error    |
 * | error: fulfil, expiry           | bulk-abort             | PUT /bulkTransfers/{id}/error    |
 *
 * A message's id (the document's key) is derived from the bulk, the notice and its receiver, and
 * its event id from that: told again (a redelivery, a sweep after a crash), the same notice is the
 * same message, and its document is already there (E11000, taken as saved).
 */
import { FspiopCode, type FspiopError } from '../../domain/shared/errors';
import type { BulkNotice, IndividualResult, NoticeCause } from '../../domain/bulk/api';
import type { ErrorInformation } from '../../ports/metadata';
import type { BulkRecord, BulkTransferResultDocument } from '../../ports/bulk';
import type { Inbound } from './inbound';
import { HUB, stableUuid, type EventState, type MojaloopMessage } from './messages';

/** The event types of bulk-api-adapter's messages (topic-bulk-prepare, -fulfil, -get). */
export const BULK_EVENT_TYPES: readonly string[] = ['bulk-prepare', 'bulk-fulfil', 'bulk'];

/** A notice's event, and the results document bulk-api-adapter reads for it (if any). */
export interface BulkOutgoing {
  message: MojaloopMessage;
  result?: BulkTransferResultDocument;
}

/** Headers of a notice no request of its receiver carries (an expiry, an error without a bulk). */
const BULK_CONTENT_TYPE = 'application/vnd.interoperability.bulkTransfers+json;version=1.1';

/** The event and results document telling `notice`; `headers` those of the request answered. */
export function bulkOutgoing(
  notice: BulkNotice,
  headers: Record<string, string> | undefined,
  now = new Date(),
): BulkOutgoing {
  switch (notice.kind) {
    case 'forward': {
      const { bulk, to, transfers } = notice;
      const messageId = stableUuid(`bulk-forward:${bulk.bulkTransferId}:${to}`);
      const payload = {
        bulkTransferId: bulk.bulkTransferId,
        bulkQuoteId: bulk.bulkQuoteId,
        payerFsp: bulk.payerFsp,
        payeeFsp: bulk.payeeFsp,
        expiration: bulk.expiration,
        ...defined('extensionList', bulk.extensionList),
      };
      const message = event({
        messageId,
        bulkTransferId: bulk.bulkTransferId,
        to,
        action: 'bulk-prepare',
        headers: headers ?? bulk.headers,
        payload,
        now,
      });
      const results = transfers.map((transfer) => withExtensionList(transfer));
      return { message, result: resultDocument(message, bulk, 'ACCEPTED', results) };
    }
    case 'state':
      return stateOutgoing(notice, headers, now);
    case 'error': {
      const action = errorAction(notice.cause);
      const message = event({
        messageId: stableUuid(`bulk-error:${notice.bulkTransferId}:${notice.cause}:${notice.to}`),
        bulkTransferId: notice.bulkTransferId,
        to: notice.to,
        action,
        headers,
        payload: { errorInformation: notice.errorInformation },
        error: notice.errorInformation,
        now,
      });
      return { message };
    }
  }
}

function stateOutgoing(
  notice: Extract<BulkNotice, { kind: 'state' }>,
  headers: Record<string, string> | undefined,
  now: Date,
): BulkOutgoing {
  const { bulk, to, cause, bulkTransferState, completedTimestamp, results } = notice;
  // The payee's own extensions where it answered, else the payer's.
  const extensionList = bulk.fulfilExtensionList ?? bulk.extensionList;
  const state = {
    bulkTransferId: bulk.bulkTransferId,
    bulkTransferState,
    ...defined('completedTimestamp', completedTimestamp),
  };
  const messageId = stableUuid(`bulk-state:${bulk.bulkTransferId}:${cause}:${to}`);
  const base = { messageId, bulkTransferId: bulk.bulkTransferId, to, now };
  if (cause === 'duplicate' || cause === 'get') {
    const payload = {
      ...state,
      ...defined('individualTransferResults', results),
      ...defined('extensionList', extensionList),
    };
    const action = cause === 'get' ? 'bulk-get' : 'bulk-prepare-duplicate';
    return { message: event({ ...base, action, headers: headers ?? bulk.headers, payload }) };
  }
  const payload = { ...state, ...defined('extensionList', extensionList) };
  const message = event({
    ...base,
    action: 'bulk-commit',
    headers: headers ?? bulk.headers,
    payload,
  });
  const listed = (results ?? []).map((result) => withExtensionList(result));
  return { message, result: resultDocument(message, bulk, bulkTransferState, listed) };
}

function errorAction(cause: NoticeCause): string {
  switch (cause) {
    case 'prepare':
    case 'duplicate':
      return 'bulk-prepare';
    case 'get':
      return 'bulk-get';
    case 'fulfil':
    case 'expiry':
      return 'bulk-abort';
  }
}

/**
 * The refusal of a bulk-api-adapter message (a malformed one, or a request the bulk flow
 * refused), to its sender: `PUT /bulkTransfers/{id}/error` under the action its topic's answers
 * take (central-ledger's: bulk-prepare, bulk-commit for anything on the fulfil topic, bulk-get).
 */
export function bulkRefusal(inbound: Inbound, error: FspiopError): MojaloopMessage {
  const { type, action } = inbound.message.metadata.event;
  const errorInformation = error.toErrorInformation();
  const refusedAction = refusalAction(type, action, error.code);
  return event({
    messageId: stableUuid(`bulk-refusal:${inbound.origin}`),
    bulkTransferId: inbound.transferId,
    to: inbound.source,
    action: refusedAction,
    headers: inbound.message.content.headers,
    payload: { errorInformation },
    error: errorInformation,
    now: new Date(),
  });
}

function refusalAction(type: string, action: string, code: FspiopCode): string {
  if (type === 'bulk') return 'bulk-get';
  if (type === 'bulk-prepare') return 'bulk-prepare';
  // A modified fulfil (3106) is answered under its own action, as central-ledger does.
  return code === FspiopCode.MODIFIED_REQUEST ? action : 'bulk-commit';
}

const SUCCESS: EventState = { status: 'success', code: 0, description: 'action successful' };

function event(out: {
  messageId: string;
  bulkTransferId: string;
  to: string;
  action: string;
  headers: Record<string, string> | undefined;
  payload: Record<string, unknown>;
  error?: ErrorInformation;
  now: Date;
}): MojaloopMessage {
  const state: EventState =
    out.error === undefined
      ? SUCCESS
      : { status: 'error', code: out.error.errorCode, description: out.error.errorDescription };
  const headers = hubHeaders(out.headers, out.to, out.now);
  return {
    id: out.messageId,
    from: HUB,
    to: out.to,
    type: headers['content-type'] ?? BULK_CONTENT_TYPE,
    content: { uriParams: { id: out.bulkTransferId }, headers, payload: out.payload },
    metadata: {
      correlationId: out.bulkTransferId,
      event: {
        id: stableUuid(`event:${out.messageId}:${out.action}`),
        type: 'notification',
        action: out.action,
        createdAt: out.now.toISOString(),
        state,
      },
      'protocol.createdAt': out.now.getTime(),
    },
  };
}

/**
 * The request's headers (the FSPIOP version its parties speak) from the Hub to `to`: bulk-api-
 * adapter sets FSPIOP-Source itself and keeps FSPIOP-Destination from here. The length and the
 * signature were the request's own.
 */
function hubHeaders(
  from: Record<string, string> | undefined,
  to: string,
  now: Date,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(from ?? {}))
    if (!/^(fspiop-(source|destination|signature)|content-length)$/i.test(key))
      headers[key.toLowerCase()] = value;
  headers['content-type'] ??= BULK_CONTENT_TYPE;
  headers['date'] ??= now.toUTCString();
  headers['fspiop-source'] = HUB;
  headers['fspiop-destination'] = to;
  return headers;
}

function resultDocument(
  message: MojaloopMessage,
  bulk: BulkRecord,
  bulkTransferState: string,
  individualTransferResults: Record<string, unknown>[],
): BulkTransferResultDocument {
  return {
    messageId: message.id,
    destination: message.to!,
    headers: message.content.headers,
    bulkTransferId: bulk.bulkTransferId,
    bulkTransferState,
    individualTransferResults,
    ...defined('extensionList', bulk.extensionList),
  };
}

/**
 * An item as object-store-lib's schema holds it: bulk-api-adapter reads `extensionList.extension`
 * of every item back (and drops an empty one), so an item without extensions gets an empty list.
 */
function withExtensionList(
  item: IndividualResult | { transferId: string; extensionList?: unknown },
): Record<string, unknown> {
  return { ...item, extensionList: item.extensionList ?? { extension: [] } };
}

function defined<K extends string>(key: K, value: unknown): Partial<Record<K, unknown>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, unknown>);
}
