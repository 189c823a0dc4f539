/**
 * The Kafka messages central-settlement produces, in Mojaloop's envelope:
 *  - `settlement-transfer-position-change` on the notification topic to a DFSP whose position a
 *    settlement step moved (PS_TRANSFERS_RESERVED: net recipients; PS_TRANSFERS_COMMITTED: net
 *    senders; an abort: reserved recipients back), payload `{currency, value, changedDate}` with
 *    `value` the position after the step (CS:src/models/settlement/facade.js
 *    getNotificationMessage, settlementTransfersReserve/Commit/Abort);
 *  - deferredsettlement/close on `topic-deferredsettlement-close` for a window close, payload
 *    `{settlementWindowId, reason, headers}` (CS:src/domain/settlementWindow process).
 * Built here from the settlement domain's events; produced through whatever `SettlementPublisher`
 * the service was given (Kafka's transport, or none when Kafka is off).
 */
import { randomUUID } from 'node:crypto';
import { formatAmount, requireCurrency } from '../../domain/shared/money';
import { HUB_NAME as HUB } from '../../domain/participants/service';
import type { PositionChange, SettlementEvents } from '../../domain/settlement/events';
import type { MojaloopMessage } from './messages';

const SUCCESS = { status: 'success' as const, code: 0, description: 'action successful' };

/** Produces messages on a topic; resolves once the broker has them. */
export interface SettlementPublisher {
  publish(topic: 'notification' | 'settlementClose', messages: MojaloopMessage[]): Promise<void>;
}

/** The settlement domain's events, told as the messages above through `publisher`. */
export function settlementEventsOver(publisher: SettlementPublisher): SettlementEvents {
  return {
    positionsChanged: (changes) =>
      publisher.publish(
        'notification',
        changes.map((change) => positionChangeNotification(change)),
      ),
    windowClosed: (event) =>
      publisher.publish('settlementClose', [
        windowCloseMessage(event.settlementWindowId, event.reason, event.headers),
      ]),
  };
}

/**
 * The `settlement-transfer-position-change` notification to the DFSP (topic-notification-event).
 */
export function positionChangeNotification(
  change: PositionChange,
  now = new Date(),
): MojaloopMessage {
  const at = now.toISOString();
  return {
    id: randomUUID(),
    from: HUB,
    to: change.participant,
    type: 'application/json',
    content: {
      headers: {
        'Content-Type': 'application/json',
        Date: at,
        'FSPIOP-Source': HUB,
        'FSPIOP-Destination': change.participant,
      },
      payload: {
        currency: change.currency,
        value: jsonAmount(change.position, change.currency),
        changedDate: at,
      },
    },
    metadata: {
      event: {
        id: randomUUID(),
        type: 'notification',
        action: 'settlement-transfer-position-change',
        createdAt: at,
        state: SUCCESS,
      },
    },
  };
}

/** The deferredsettlement/close event of a window close (topic-deferredsettlement-close). */
export function windowCloseMessage(
  settlementWindowId: number,
  reason: string,
  headers: Record<string, string>,
  now = new Date(),
): MojaloopMessage {
  return {
    id: randomUUID(),
    from: HUB,
    to: HUB,
    type: 'application/json',
    content: { headers, payload: { settlementWindowId, reason, headers } },
    metadata: {
      event: {
        id: randomUUID(),
        type: 'deferredsettlement',
        action: 'close',
        createdAt: now.toISOString(),
        state: SUCCESS,
      },
    },
  };
}

/**
 * central-settlement's value is a JSON number (MLNumber.toNumber()); a number here only where
 * it reads back as exactly the amount, else the exact decimal text.
 */
function jsonAmount(amount: bigint, currency: string): number | string {
  const text = formatAmount(amount, requireCurrency(currency));
  const number = Number(text);
  return String(number) === text ? number : text;
}
