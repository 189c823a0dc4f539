/**
 * Bulk transfers' stores. Bulk is on only where an object store (MongoDB, or FerretDB) is
 * configured: bulk-api-adapter writes the individual transfers and the payee's results there, keyed
 * by the Kafka message's id, and reads back the results the notifications it turns into callbacks
 * carry (BulkObjectStore). The service keeps its own record of each bulk in the same store
 * (BulkStore): which transfers it holds, what was refused before the ledger, where it stands. The
 * money of each transfer is the ledger's, and its state the transfer flow's (src/domain/transfers):
 * a bulk record never says a transfer committed, only which transfers are its own.
 */
import type { ErrorInformation } from './metadata';

/**
 * A bulk's own states, central-ledger's (its bulkTransferState seed): each shows as an FSPIOP
 * enumeration (RECEIVED, PENDING, ACCEPTED, PROCESSING, COMPLETED, REJECTED).
 */
export type BulkInternalState =
  | 'RECEIVED'
  | 'PENDING_PREPARE'
  | 'ACCEPTED'
  | 'PROCESSING'
  | 'PENDING_FULFIL'
  | 'COMPLETED'
  | 'REJECTED'
  | 'INVALID';

/** One individual transfer of a bulk, as the payer sent it (amounts as decimal text). */
export interface BulkMember {
  transferId: string;
  amount: string;
  currency: string;
  ilpPacket: string;
  condition: string;
  extensionList?: unknown;
  /**
   * Refused before its money moved (at prepare: 4001, 3100, a duplicate id, ...): never reached
   * the ledger, so no transfer record tells it. Unset for a transfer the ledger holds.
   */
  refusal?: ErrorInformation;
}

export interface BulkRecord {
  bulkTransferId: string;
  bulkQuoteId: string;
  payerFsp: string;
  payeeFsp: string;
  /** ISO 8601, shared by every member. */
  expiration: string;
  extensionList?: unknown;
  /** The prepare's hash (bulk-api-adapter's, or ours of the body): another hash is 3106. */
  prepareHash: string;
  /** The prepare message's id (the object store's key of its items) and where it was read. */
  prepareMessageId: string;
  prepareOrigin?: string;
  state: BulkInternalState;
  members: BulkMember[];
  /** The payee's PUT (or PUT …/error): its hash, message and completedTimestamp. */
  fulfilHash?: string;
  fulfilMessageId?: string;
  fulfilOrigin?: string;
  completedTimestamp?: string;
  fulfilExtensionList?: unknown;
  /**
   * Which step ended the bulk (set with its final state): the notices it gave are that step's, so
   * a redelivery of that step's message gives them again, and of any other message none.
   */
  finishedBy?: 'prepare' | 'fulfil' | 'error' | 'expiry';
  /** A payee's `PUT …/error`, or a refusal of the whole bulk (INVALID). */
  errorInformation?: ErrorInformation;
  /**
   * The headers of the request that created it (the FSPIOP version its parties speak), for the
   * notifications.
   */
  headers: Record<string, string>;
  createdAt: string;
  /** Bumped by every save: a save over a newer copy is refused (BulkStore.save). */
  version: number;
}

export interface BulkStore {
  bulk(bulkTransferId: string): Promise<BulkRecord | undefined>;
  /**
   * Records a new bulk with its members (version 1); false, and nothing written, if the id is
   * known. A member's transferId in another bulk is not refused here (the prepare refuses it).
   */
  create(record: BulkRecord): Promise<boolean>;
  /**
   * Replaces the bulk stored at `record.version - 1` with `record`; false, and nothing written,
   * if another save came first (the caller reads it again and redoes its step). `previous`: the
   * copy `record` was made from: only the fields whose values are not the very same as its are
   * written (a thousand members are not written again for a state).
   */
  save(record: BulkRecord, previous: BulkRecord): Promise<boolean>;
  /** Open bulks (not COMPLETED, REJECTED, INVALID) whose expiration is before `beforeMs`. */
  openExpiredBefore(beforeMs: number, limit: number): Promise<BulkRecord[]>;
  /** Of these transfer ids, those that are members of a bulk, each with its bulk's id. */
  bulksOf(transferIds: readonly string[]): Promise<Map<string, string>>;
  /**
   * Members of this bulk refused because their ids are other transfers' (a single transfer's,
   * another bulk's): bulksOf no longer names this bulk for them (a bulk that holds one keeps it).
   * They stay in its record, whose results list their refusal.
   */
  disclaim(bulkTransferId: string, transferIds: readonly string[]): Promise<void>;
}

/** The collections bulk-api-adapter writes, read by a message's id (its `messageId`). */
export interface BulkObjectStore {
  /**
   * `individualTransfers`: the payloads of a bulk prepare's items, in the bulk's order (their
   * ids'), so that members that do not all fit the payer's liquidity are reserved first-listed.
   */
  individualTransfers(messageId: string): Promise<Record<string, unknown>[]>;
  /** `individualTransferFulfils`: the payloads of a payee's PUT's results. */
  individualTransferFulfils(messageId: string): Promise<Record<string, unknown>[]>;
}

/**
 * What a bulk-api-adapter notification carries to the party it calls, beside the event
 * (object-store-lib's `bulkTransferResults`): read back by the event's id and its receiver.
 */
export interface BulkTransferResultDocument {
  messageId: string;
  destination: string;
  headers: Record<string, string>;
  bulkTransferId: string;
  bulkTransferState: string;
  individualTransferResults: Record<string, unknown>[];
  extensionList?: unknown;
}

/** `bulkTransferResults`, written before the notification that names a document is produced. */
export interface BulkResultStore {
  /** Saves `doc`; one already saved under its (messageId, destination) stands (a redelivery). */
  saveResult(doc: BulkTransferResultDocument): Promise<void>;
}
