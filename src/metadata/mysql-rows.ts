/** Transfer records as rows of MySQL's `transfers` table, and back. */
import type { TransferRecord } from '../ports/metadata';
import type { TransferInternalState } from '../ports/states';

export type TransferRow = {
  transfer_id: string;
  payer_fsp: string;
  payee_fsp: string;
  amount: string;
  currency: string;
  ilp_condition: string;
  ilp_packet: string;
  expiration: string;
  extension_list: string | null;
  payload_hash: string;
  state: string;
  created_at: string;
  fulfilment: string | null;
  completed_timestamp: string | null;
  finish_hash: string | null;
  error_information: string | null;
  prepare_origin: string | null;
  finish_origin: string | null;
  depends_on: string | null;
};

/** A row to write: with the expiration as a number, written only (no record reads it back). */
export function rowOf(record: TransferRecord): TransferRow & { expires_at_ms: number | null } {
  return {
    transfer_id: record.transferId,
    payer_fsp: record.payerFsp,
    payee_fsp: record.payeeFsp,
    amount: record.amount,
    currency: record.currency,
    ilp_condition: record.condition,
    ilp_packet: record.ilpPacket,
    expiration: record.expiration,
    extension_list:
      record.extensionList === undefined ? null : JSON.stringify(record.extensionList),
    payload_hash: record.payloadHash,
    state: record.state,
    created_at: record.createdAt,
    fulfilment: record.fulfilment ?? null,
    completed_timestamp: record.completedTimestamp ?? null,
    finish_hash: record.finishHash ?? null,
    error_information:
      record.errorInformation === undefined ? null : JSON.stringify(record.errorInformation),
    prepare_origin: record.prepareOrigin ?? null,
    finish_origin: record.finishOrigin ?? null,
    depends_on: record.dependsOn ?? null,
    expires_at_ms: expiresAtMs(record.expiration),
  };
}

/**
 * An expiration as the takeover of overdue reservations compares it (MySqlMetadataStore.overdue).
 */
export function expiresAtMs(expiration: string): number | null {
  const ms = Date.parse(expiration);
  return Number.isNaN(ms) ? null : ms;
}

export function recordOf(row: TransferRow): TransferRecord {
  const record: TransferRecord = {
    transferId: row.transfer_id,
    payerFsp: row.payer_fsp,
    payeeFsp: row.payee_fsp,
    amount: row.amount,
    currency: row.currency,
    condition: row.ilp_condition,
    ilpPacket: row.ilp_packet,
    expiration: row.expiration,
    extensionList: row.extension_list === null ? undefined : JSON.parse(row.extension_list),
    payloadHash: row.payload_hash,
    state: row.state as TransferInternalState,
    createdAt: row.created_at,
  };
  if (row.fulfilment !== null) record.fulfilment = row.fulfilment;
  if (row.completed_timestamp !== null) record.completedTimestamp = row.completed_timestamp;
  if (row.finish_hash !== null) record.finishHash = row.finish_hash;
  if (row.error_information !== null) record.errorInformation = JSON.parse(row.error_information);
  if (row.prepare_origin !== null) record.prepareOrigin = row.prepare_origin;
  if (row.finish_origin !== null) record.finishOrigin = row.finish_origin;
  if (row.depends_on !== null) record.dependsOn = row.depends_on;
  return record;
}
