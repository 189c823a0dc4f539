/**
 * Notifications shared by the handlers and the transport: a prepare's answer (a transfer's or a
 * conversion's), a refused message, an expiry; and the event ids every answer is given, so that a
 * redelivery is answered under the same ones.
 */
import { FspiopCode, FspiopError } from '../../domain/shared/errors';
import type { FxTransferRecord, TransferRecord } from '../../ports/metadata';
import { BULK_EVENT_TYPES, bulkRefusal } from './bulk-notices';
import type { Inbound } from './inbound';
import {
  HUB,
  notification,
  stableUuid,
  timeoutNotification,
  type MojaloopMessage,
} from './messages';

/** What a prepare came to, as far as its answer depends on it. */
interface PrepareOutcome {
  duplicate: boolean;
  redelivery: boolean;
  record: { state: string };
}

/**
 * The answer to a prepare: when new or delivered again, the prepare forwarded to its receiver as
 * it came, context included (ml-api-adapter replays the original bytes from it); nothing for a
 * duplicate of one still being prepared; else, to the sender, the state it is in (`view`).
 */
export function prepareAnswer(
  { message, transferId, source }: Inbound,
  outcome: PrepareOutcome,
  answer: {
    action: 'prepare' | 'fx-prepare';
    from: string;
    to: string;
    view: () => Record<string, unknown>;
  },
): MojaloopMessage[] {
  const { action, from, to } = answer;
  if (!outcome.duplicate || outcome.redelivery)
    return [notification(message, transferId, { action, from, to, keepContext: true })];
  if (outcome.record.state === 'RECEIVED_PREPARE') return [];
  return [
    notification(message, transferId, {
      action: `${action}-duplicate`,
      from: HUB,
      to: source,
      payload: answer.view(),
      keepContext: true,
    }),
  ];
}

/**
 * An error notification to whoever sent the message, from the Hub, under the action that
 * ml-api-adapter turns into a PUT to the sender's /error callback: `prepare` and `get` for their
 * topics, `commit` for anything on the fulfil topic, the *-duplicate actions for 3106; bulk-api-
 * adapter's messages as it reads them (bulk-notices.ts).
 */
export function refusal(inbound: Inbound, error: FspiopError): MojaloopMessage {
  const { type, action } = inbound.message.metadata.event;
  if (BULK_EVENT_TYPES.includes(type)) return bulkRefusal(inbound, error);
  const prepareFamily = type !== 'get' && type !== 'fulfil';
  // FX messages are answered under the fx- actions (an FXP's refused PUT: fx-commit, which
  // ml-api-adapter delivers, where central-ledger's fx-reserve is dropped).
  const fx = action.startsWith('fx-') || (prepareFamily && inbound.lacksTransferId());
  return notification(inbound.message, inbound.transferId, {
    action: `${fx ? 'fx-' : ''}${refusedAction(type, action, error.code)}`,
    from: HUB,
    to: inbound.source,
    error: error.toErrorInformation(),
    keepContext: type !== 'get',
  });
}

function refusedAction(type: string, action: string, code: FspiopCode): string {
  if (type === 'get') return 'get';
  if (type !== 'fulfil') return 'prepare';
  if (code !== FspiopCode.MODIFIED_REQUEST) return 'commit';
  return action.endsWith('abort') ? 'abort-duplicate' : 'fulfil-duplicate';
}

/** Tells payer and payee that their reservation expired. */
export function expiryNotifications(records: TransferRecord[]): MojaloopMessage[] {
  const error = new FspiopError(FspiopCode.TRANSFER_EXPIRED).toErrorInformation();
  return records.map((record) => timeoutNotification(record, error));
}

/** Tells the initiating FSP and the FXP that their conversion expired (fx-timeout-reserved). */
export function fxExpiryNotifications(records: FxTransferRecord[]): MojaloopMessage[] {
  const error = new FspiopError(FspiopCode.TRANSFER_EXPIRED).toErrorInformation();
  return records.map((record) =>
    timeoutNotification(
      {
        transferId: record.commitRequestId,
        payerFsp: record.initiatingFsp,
        payeeFsp: record.counterPartyFsp,
      },
      error,
      new Date(),
      'fxTransfers',
    ),
  );
}

/**
 * Gives the answers to the message at `origin` event ids derived from it: a redelivered message
 * is answered under the same ids, so a consumer can tell a repeated notification from a new one.
 */
export function withEventIds(answers: MojaloopMessage[], origin: string): MojaloopMessage[] {
  answers.forEach((answer, index) => {
    answer.metadata.event.id = stableUuid(
      `${origin}:${index}:${answer.metadata.event.action}:${answer.to}`,
    );
  });
  return answers;
}
