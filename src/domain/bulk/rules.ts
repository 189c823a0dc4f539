/**
 * The rules of the bulk flow that need no state: central-ledger's checks of a bulk prepare and of
 * a payee's PUT, a bulk's members read from bulk-api-adapter's items, a bulk's states as the API
 * shows them, and which message a request is.
 */
import type { BulkInternalState, BulkMember, BulkRecord } from '../../ports/bulk';
import type { ErrorInformation, Participant } from '../../ports/metadata';
import { FspiopCode, fspiopError, validationError } from '../shared/errors';
import { canonicalTransferId } from '../shared/ids';
import { parseExpiration } from '../transfers/rules';
import type { BulkApiState, BulkDelivery, BulkPrepareBody, ForwardedTransfer } from './api';

/** The API's bound on a bulk's individual transfers (its swagger's maxItems). */
export const MAX_MEMBERS = 1000;

export type ParticipantLookup = (name: string) => Promise<Participant | undefined>;

/** central-ledger's bulkTransferState seed: each internal state's FSPIOP enumeration. */
const API_STATE: Record<BulkInternalState, BulkApiState> = {
  RECEIVED: 'RECEIVED',
  PENDING_PREPARE: 'PENDING',
  ACCEPTED: 'ACCEPTED',
  PROCESSING: 'PROCESSING',
  PENDING_FULFIL: 'PROCESSING',
  COMPLETED: 'COMPLETED',
  REJECTED: 'REJECTED',
  INVALID: 'REJECTED',
};

export function bulkApiState(state: BulkInternalState): BulkApiState {
  return API_STATE[state];
}

/** A final bulk never changes again (BulkStore.openExpiredBefore skips them). */
export function isFinalBulk(state: BulkInternalState): boolean {
  return state === 'COMPLETED' || state === 'REJECTED' || state === 'INVALID';
}

/** Its prepare has not yet been through every member (a crash may have cut it short). */
export function isPreparing(state: BulkInternalState): boolean {
  return state === 'RECEIVED' || state === 'PENDING_PREPARE';
}

/**
 * Whether `delivery` is the message a step recorded (by its id, the object store's key, or where
 * it was read): the same message delivered again, whose step is resumed, not a client's resend.
 */
export function sameMessage(
  recorded: { messageId: string | undefined; origin: string | undefined },
  delivery: BulkDelivery,
): boolean {
  if (recorded.messageId !== undefined && recorded.messageId === delivery.messageId) return true;
  return recorded.origin !== undefined && recorded.origin === delivery.origin;
}

/**
 * central-ledger's checks of a bulk prepare, in its order (CL bulk/shared/validator.js); the
 * first failure wins. One difference: an expiration already past is refused here, where
 * central-ledger lets through any of today's and refuses each transfer after.
 */
export async function checkPrepare(check: {
  delivery: BulkDelivery;
  body: BulkPrepareBody;
  now: number;
  participant: ParticipantLookup;
}): Promise<void> {
  const { delivery, body, now, participant } = check;
  if (delivery.source !== body.payerFsp)
    throw validationError('FSPIOP-Source header does not match the payer FSP');
  if (parseExpiration(body.expiration) <= now)
    throw validationError('expiration date is in the past');
  if (body.payerFsp.toLowerCase() === body.payeeFsp.toLowerCase())
    throw validationError('payer FSP and payee FSP must be different');
  if (!(await isActive(participant, body.payerFsp)))
    throw fspiopError(FspiopCode.PAYER_FSP_ID_NOT_FOUND, `payer FSP ${body.payerFsp}`);
  const payees = [body.payeeFsp, delivery.destination ?? body.payeeFsp];
  for (const payee of payees)
    if (!(await isActive(participant, payee)))
      throw fspiopError(FspiopCode.PAYEE_FSP_ID_NOT_FOUND, `payee FSP ${payee}`);
}

async function isActive(participant: ParticipantLookup, name: string): Promise<boolean> {
  return (await participant(name))?.isActive === true;
}

/**
 * A payee's PUT checked as central-ledger does (CL bulk/fulfil/handler.js), once its
 * FSPIOP-Source is known to be the payee's: FSPIOP-Destination the payer or the Hub, a
 * completedTimestamp neither in the future nor older than `maxAgeMs`. The refusal, if any.
 */
export function fulfilRefusal(check: {
  record: BulkRecord;
  destination: string | undefined;
  completedTimestamp: string | undefined;
  hubName: string;
  now: number;
  maxAgeMs: number;
}): ErrorInformation | undefined {
  const { record, destination, completedTimestamp, hubName, now, maxAgeMs } = check;
  if (destination !== undefined && destination !== record.payerFsp && destination !== hubName)
    return validationError(
      'FSPIOP-Destination header does not match the payer FSP',
    ).toErrorInformation();
  if (completedTimestamp === undefined) return undefined;
  const completedAt = Date.parse(completedTimestamp);
  if (Number.isNaN(completedAt))
    return validationError('completedTimestamp is not a date-time').toErrorInformation();
  if (completedAt > now)
    return validationError(
      'Bulk transfer fulfil failed validation - future timestamp was provided',
    ).toErrorInformation();
  if (completedAt < now - maxAgeMs)
    return validationError(
      'Bulk transfer fulfil failed validation - completedTimestamp exceeded the maximum timeout duration',
    ).toErrorInformation();
  return undefined;
}

/**
 * A bulk's members from its items (the object store's `individualTransfers`, in its order). An
 * item that cannot be a transfer (a field missing), or whose transferId an earlier item of the
 * bulk already has, is refused (3100) as that member; the first of a repeated id stands. A bulk
 * with no item, more than MAX_MEMBERS or an item without a transferId is refused whole (3100).
 */
export function membersOf(items: readonly Record<string, unknown>[]): BulkMember[] {
  if (items.length === 0) throw validationError('the bulk has no individual transfers');
  if (items.length > MAX_MEMBERS)
    throw validationError(`the bulk has more than ${MAX_MEMBERS} individual transfers`);
  const seen = new Set<string>();
  return items.map((item, index) => {
    const transferId = item['transferId'];
    if (typeof transferId !== 'string' || transferId === '')
      throw validationError(`individual transfer ${index + 1} has no transferId`);
    const member = memberOf(transferId, item);
    const id = canonicalTransferId(transferId);
    if (seen.has(id) && member.refusal === undefined)
      member.refusal = validationError(
        `transferId ${transferId} is repeated in the bulk`,
      ).toErrorInformation();
    seen.add(id);
    return member;
  });
}

function memberOf(transferId: string, item: Record<string, unknown>): BulkMember {
  const amount = item['transferAmount'] as Record<string, unknown> | undefined;
  const text = (value: unknown): string | undefined =>
    typeof value === 'string' ? value : undefined;
  const fields = {
    amount: text(amount?.['amount']),
    currency: text(amount?.['currency']),
    ilpPacket: text(item['ilpPacket']),
    condition: text(item['condition']),
  };
  const missing = Object.entries(fields).find(([, value]) => value === undefined)?.[0];
  return {
    transferId,
    amount: fields.amount ?? '',
    currency: fields.currency ?? '',
    ilpPacket: fields.ilpPacket ?? '',
    condition: fields.condition ?? '',
    ...(item['extensionList'] === undefined ? {} : { extensionList: item['extensionList'] }),
    ...(missing === undefined
      ? {}
      : {
          refusal: validationError(`transfer ${transferId} has no ${missing}`).toErrorInformation(),
        }),
  };
}

/** The members the ledger was given (all but those refused before it): the payee's list. */
export function forwardedMembers(record: BulkRecord): BulkMember[] {
  return record.members.filter((member) => member.refusal === undefined);
}

export function forwardedTransfer(member: BulkMember): ForwardedTransfer {
  return {
    transferId: member.transferId,
    transferAmount: { amount: member.amount, currency: member.currency },
    ilpPacket: member.ilpPacket,
    condition: member.condition,
    ...(member.extensionList === undefined ? {} : { extensionList: member.extensionList }),
  };
}

/** An object the payee sent as errorInformation, if it is one. */
export function asErrorInformation(value: unknown): ErrorInformation | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { errorCode, errorDescription, extensionList } = value as Record<string, unknown>;
  if (typeof errorCode !== 'string' || typeof errorDescription !== 'string') return undefined;
  return { errorCode, errorDescription, ...(extensionList === undefined ? {} : { extensionList }) };
}
