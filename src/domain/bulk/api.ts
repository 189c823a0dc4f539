/**
 * What the bulk flow (service.ts) takes and answers: requests as bulk-api-adapter's messages carry
 * them, and notices — who is told what — that the Kafka edge (src/handlers/kafka/bulk.ts) turns
 * into bulk-api-adapter's result documents and notification events.
 */
import type { ErrorInformation } from '../../ports/metadata';
import type { BulkRecord } from '../../ports/bulk';

/** Where a request came from: its FSPIOP headers and the delivered message. */
export interface BulkDelivery {
  /** FSPIOP-Source. */
  source: string;
  /** FSPIOP-Destination. */
  destination: string | undefined;
  /** The message's id: the object store's key of its items (prepare) or results (fulfil). */
  messageId: string;
  /** Where it was read (topic:partition:offset): the same message delivered again. */
  origin: string | undefined;
  /** The request's HTTP headers, as the message carries them. */
  headers: Record<string, string>;
}

/** A `POST /bulkTransfers`, as bulk-api-adapter puts it on `topic-bulk-prepare`. */
export interface BulkPrepareBody {
  bulkTransferId: string;
  bulkQuoteId: string;
  payerFsp: string;
  payeeFsp: string;
  expiration: string;
  extensionList?: unknown;
  /** bulk-api-adapter's hash of the whole request (items included). */
  hash: string;
}

/** A payee's `PUT /bulkTransfers/{id}`, as on `topic-bulk-fulfil` (action bulk-commit). */
export interface BulkFulfilBody {
  bulkTransferId: string;
  bulkTransferState?: string;
  completedTimestamp?: string;
  extensionList?: unknown;
  /** How many results bulk-api-adapter saved (it does not wait for the saves to land). */
  count?: number;
  hash: string;
}

/** A payee's `PUT /bulkTransfers/{id}/error` (action bulk-abort). */
export interface BulkErrorBody {
  bulkTransferId: string;
  errorInformation: ErrorInformation;
  extensionList?: unknown;
  hash: string;
}

/** One transfer's line in a callback: fulfilled, or why not. */
export type IndividualResult =
  | { transferId: string; fulfilment: string; extensionList?: unknown }
  | { transferId: string; errorInformation: ErrorInformation; extensionList?: unknown };

/** A member as the payee's `POST /bulkTransfers` lists it. */
export interface ForwardedTransfer {
  transferId: string;
  transferAmount: { amount: string; currency: string };
  ilpPacket: string;
  condition: string;
  extensionList?: unknown;
}

/** FSPIOP's bulkTransferState enumeration. */
export type BulkApiState =
  | 'RECEIVED'
  | 'PENDING'
  | 'ACCEPTED'
  | 'PROCESSING'
  | 'COMPLETED'
  | 'REJECTED';

/** Why a notice is sent: the edge picks the event's action from it. */
export type NoticeCause = 'prepare' | 'fulfil' | 'expiry' | 'duplicate' | 'get';

/**
 * Who is told what. `forward`: the payee's `POST /bulkTransfers` with the reserved transfers.
 * `state`: a `PUT /bulkTransfers/{id}` with the bulk's state and, where known, each transfer's
 * result. `error`: a `PUT /bulkTransfers/{id}/error`.
 */
export type BulkNotice =
  | {
      kind: 'forward';
      to: string;
      bulk: BulkRecord;
      transfers: ForwardedTransfer[];
    }
  | {
      kind: 'state';
      cause: NoticeCause;
      to: string;
      bulk: BulkRecord;
      bulkTransferState: BulkApiState;
      completedTimestamp?: string;
      /** Absent while the bulk is PROCESSING (a GET then tells only the state). */
      results?: IndividualResult[];
    }
  | {
      kind: 'error';
      cause: NoticeCause;
      to: string;
      bulkTransferId: string;
      errorInformation: ErrorInformation;
    };

/**
 * The bulk flow. Each call is safe to repeat: the same message delivered again (after a crash,
 * say) finishes what the first delivery began and gives the same notices. Refusals of a whole
 * request are FspiopErrors thrown (the edge tells the sender); infrastructure failures are thrown
 * as they are (the message is delivered again).
 */
export interface BulkApi {
  prepare(delivery: BulkDelivery, body: BulkPrepareBody): Promise<BulkNotice[]>;
  fulfil(delivery: BulkDelivery, body: BulkFulfilBody): Promise<BulkNotice[]>;
  error(delivery: BulkDelivery, body: BulkErrorBody): Promise<BulkNotice[]>;
  /** `GET /bulkTransfers/{id}` by `requester`; [] for a requester that is no participant. */
  get(bulkTransferId: string, requester: string): Promise<BulkNotice[]>;
  /**
   * Of transfers the expiry sweep released, those that belong to no bulk: a bulk's members are
   * told with their bulk (finishExpired), never one by one.
   */
  withoutMembers<T extends { transferId: string }>(records: readonly T[]): Promise<T[]>;
  /**
   * Bulks past their expiration: every outstanding member expired (the ledger releases them), and
   * each such bulk's final notices to its payer and payee. No message redelivers this step, so
   * with `notify` a bulk's notices are told (notify resolved) before its end is recorded: a crash
   * between the two tells them again on the next call, never not at all. Without, they are
   * recorded first and returned (a crash before they go out loses them).
   */
  finishExpired(notify?: (notices: BulkNotice[]) => Promise<void>): Promise<BulkNotice[]>;
}
