/**
 * Mojaloop's Kafka envelope, as ml-api-adapter writes it to topic-transfer-* and reads it back
 * from topic-notification-event (test/fixtures/kafka/README.md lists the sources).
 */
import { hash, randomUUID } from 'node:crypto';
import type { ErrorInformation } from '../../ports/metadata';

/**
 * central-ledger's name for itself in `from` and FSPIOP-Source; ml-api-adapter matches it exactly.
 */
export const HUB = 'Hub';

export interface EventState {
  status: 'success' | 'error';
  code: number | string;
  description: string;
}

export interface MojaloopMessage {
  id: string;
  from: string;
  to?: string;
  type: string;
  content: {
    uriParams?: { id?: string };
    headers: Record<string, string>;
    payload: unknown;
    context?: Record<string, unknown>;
  };
  metadata: {
    correlationId?: string;
    event: {
      id?: string;
      responseTo?: string;
      type: string;
      action: string;
      createdAt?: string;
      state?: EventState;
    };
    trace?: unknown;
    'protocol.createdAt'?: number;
  };
}

export class MessageError extends Error {
  override name = 'MessageError';
}

const SUCCESS: EventState = { status: 'success', code: 0, description: 'action successful' };

/** Parses a Kafka record's value; MessageError names what is missing. */
export function parseMessage(value: Buffer | null): MojaloopMessage {
  if (value === null) throw new MessageError('empty message');
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    throw new MessageError('message is not JSON');
  }
  const message = parsed as Partial<MojaloopMessage>;
  if (message === null || typeof message !== 'object')
    throw new MessageError('message is not an object');
  if (typeof message.content !== 'object' || message.content === null)
    throw new MessageError('content missing');
  if (typeof message.content.headers !== 'object' || message.content.headers === null)
    throw new MessageError('content.headers missing');
  if (
    typeof message.metadata?.event?.action !== 'string' ||
    typeof message.metadata.event.type !== 'string'
  )
    throw new MessageError('metadata.event type/action missing');
  return message as MojaloopMessage;
}

/**
 * The transfer (or bulk) id a message is about, if it can be told. A bulk prepare names its bulk
 * only in its payload: its id is the object store's key of its items.
 */
export function transferIdOf(message: Partial<MojaloopMessage>): string | undefined {
  const fromUri = message.content?.uriParams?.id;
  if (typeof fromUri === 'string' && fromUri.length > 0) return fromUri;
  if (message.metadata?.event?.type === 'bulk-prepare') return bulkIdOfPrepare(message);
  return typeof message.id === 'string' && message.id.length > 0 ? message.id : undefined;
}

function bulkIdOfPrepare(message: Partial<MojaloopMessage>): string | undefined {
  try {
    const id = decodePayload(message.content?.payload)['bulkTransferId'];
    return typeof id === 'string' && id.length > 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/** A header by its lower-case name (ml-api-adapter keeps Hapi's lower-case keys; be lenient). */
export function header(message: MojaloopMessage, name: string): string | undefined {
  const headers = message.content.headers;
  const value =
    headers[name] ?? Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return typeof value === 'string' ? value : undefined;
}

/** The payload as an object: a `data:<type>;base64,<bytes>` URI of JSON, or already an object. */
export function decodePayload(payload: unknown): Record<string, unknown> {
  if (typeof payload === 'object' && payload !== null && !Array.isArray(payload))
    return payload as Record<string, unknown>;
  if (typeof payload !== 'string')
    throw new MessageError('payload is neither a data URI nor an object');
  const match = /^data:[^,]*?(;base64)?,(.*)$/s.exec(payload);
  if (match === null) throw new MessageError('payload is not a data URI');
  let decoded: unknown;
  try {
    // decodeURIComponent throws URIError on a bad escape: the sender's fault like bad JSON (3101).
    decoded = JSON.parse(
      match[1] === undefined
        ? decodeURIComponent(match[2]!)
        : Buffer.from(match[2]!, 'base64').toString('utf8'),
    );
  } catch {
    throw new MessageError('payload data URI does not hold JSON');
  }
  if (typeof decoded !== 'object' || decoded === null || Array.isArray(decoded))
    throw new MessageError('payload is not a JSON object');
  return decoded as Record<string, unknown>;
}

/**
 * A notification answering `incoming`: a new event id responding to the incoming one, the same
 * correlation id, and the given action, parties, payload and state. Messages from the Hub get
 * FSPIOP-Source `Hub` and FSPIOP-Destination set to the receiver; other headers stay as the
 * DFSP sent them (ml-api-adapter rewrites the rest on the way out).
 */
export function notification(
  incoming: MojaloopMessage,
  transferId: string,
  out: {
    action: string;
    from: string;
    to: string;
    payload?: unknown;
    error?: ErrorInformation;
    keepContext: boolean;
    context?: Record<string, unknown>;
  },
): MojaloopMessage {
  const headers = { ...incoming.content.headers };
  if (out.from === HUB) {
    for (const key of Object.keys(headers))
      if (/^fspiop-(source|destination)$/i.test(key)) delete headers[key];
    headers['fspiop-source'] = HUB;
    headers['fspiop-destination'] = out.to;
  }
  const state: EventState =
    out.error === undefined
      ? SUCCESS
      : { status: 'error', code: out.error.errorCode, description: out.error.errorDescription };
  const content: MojaloopMessage['content'] = {
    uriParams: { id: transferId },
    headers,
    payload:
      out.error === undefined
        ? (out.payload ?? incoming.content.payload)
        : { errorInformation: out.error },
  };
  if (out.keepContext) content.context = { ...(incoming.content.context ?? {}), ...out.context };
  return {
    id: transferId,
    from: out.from,
    to: out.to,
    type: incoming.type ?? 'application/json',
    content,
    metadata: {
      correlationId: transferId,
      event: {
        id: randomUUID(),
        ...(incoming.metadata.event.id === undefined
          ? {}
          : { responseTo: incoming.metadata.event.id }),
        type: 'notification',
        action: out.action,
        createdAt: incoming.metadata.event.createdAt ?? new Date().toISOString(),
        state,
      },
      ...(incoming.metadata.trace === undefined ? {} : { trace: incoming.metadata.trace }),
      'protocol.createdAt': Date.now(),
    },
  };
}

/**
 * The timeout-reserved notification (fx-timeout-reserved for a conversion), to payer and payee at
 * once.
 */
export function timeoutNotification(
  transfer: { transferId: string; payerFsp: string; payeeFsp: string },
  error: ErrorInformation,
  now = new Date(),
  resource: FspiopResource = 'transfers',
): MojaloopMessage {
  const action = resource === 'transfers' ? 'timeout-reserved' : 'fx-timeout-reserved';
  return hubNotification({
    id: transfer.transferId,
    from: HUB,
    to: transfer.payerFsp,
    resource,
    action,
    error,
    // ml-api-adapter tells both parties from these.
    context: { payer: transfer.payerFsp, payee: transfer.payeeFsp },
    // One expiry, one event id: told again after a crash (between the notification and its
    // record), it is recognisably the same event.
    eventId: stableUuid(`${action}:${transfer.transferId}`),
    now,
  });
}

export type FspiopResource = 'transfers' | 'fxTransfers';

/**
 * A notification no incoming message answers (an expiry, a PATCH to an FXP, a transfer aborted by
 * its conversion), built from scratch as central-ledger's handlers do, with the resource's headers.
 */
export function hubNotification(out: {
  id: string;
  from: string;
  to: string;
  resource: FspiopResource;
  action: string;
  context: Record<string, unknown>;
  error?: ErrorInformation;
  payload?: unknown;
  eventId?: string;
  now?: Date;
}): MojaloopMessage {
  const now = out.now ?? new Date();
  const version = out.resource === 'transfers' ? '1.0' : '2.0';
  const state: EventState =
    out.error === undefined
      ? SUCCESS
      : { status: 'error', code: out.error.errorCode, description: out.error.errorDescription };
  return {
    id: out.id,
    from: out.from,
    to: out.to,
    type: `application/vnd.interoperability.${out.resource}+json;version=${version}`,
    content: {
      uriParams: { id: out.id },
      headers: {
        accept: `application/vnd.interoperability.${out.resource}+json;version=${version.split('.')[0]}`,
        'content-type': `application/vnd.interoperability.${out.resource}+json;version=${version}`,
        date: now.toUTCString(),
        'fspiop-source': HUB,
        'fspiop-destination': out.to,
      },
      payload: out.error === undefined ? out.payload : { errorInformation: out.error },
      context: out.context,
    },
    metadata: {
      correlationId: out.id,
      event: {
        id: out.eventId ?? randomUUID(),
        type: 'notification',
        action: out.action,
        createdAt: now.toISOString(),
        state,
      },
      'protocol.createdAt': now.getTime(),
    },
  };
}

/** A UUID (version 8, RFC 9562's custom layout) derived from `text`: the same text, the same id. */
export function stableUuid(text: string): string {
  // The digest's first 16 bytes in hex (no Buffer: several per transfer), with the version
  // nibble (byte 6's high one) set to 8 and the variant bits (byte 8's top two) to 10.
  const hex = hash('sha256', text, 'hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  const groups = [
    hex.slice(0, 8),
    hex.slice(8, 12),
    `8${hex.slice(13, 16)}`,
    `${variant}${hex.slice(17, 20)}`,
    hex.slice(20, 32),
  ];
  return groups.join('-');
}
