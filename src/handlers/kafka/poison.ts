/**
 * Messages that cannot be parsed into Mojaloop's envelope: never handled, never retried (they
 * would fail the same way every time and hold up their partition), but answered with an error
 * where what is readable of them names a sender and a transfer; otherwise logged and skipped.
 */
import type { FastifyBaseLogger } from 'fastify';
import { FspiopCode, FspiopError } from '../../domain/shared/errors';
import { Inbound } from './inbound';
import { transferIdOf, type MojaloopMessage } from './messages';
import type { HandlerRegistry } from './registry';

export interface MalformedMessage {
  value: Buffer | null;
  /** topic:partition:offset. */
  origin: string;
  /** What parsing it failed with. */
  reason: Error;
}

/** The refusal of a malformed message, or undefined where no party can be told about it. */
export function answerMalformed(
  { value, origin, reason }: MalformedMessage,
  handling: { registry: HandlerRegistry; log: FastifyBaseLogger },
): MojaloopMessage | undefined {
  const readable = salvage(value);
  if (readable === undefined) {
    handling.log.warn(
      { origin, reason: reason.message },
      'skipped a Kafka message no party can be told about',
    );
    return undefined;
  }
  handling.log.warn(
    { origin, transferId: readable.transferId, reason: reason.message },
    'malformed Kafka message',
  );
  return handling.registry.refuse(
    new Inbound(readable.message, readable.transferId, origin),
    new FspiopError(FspiopCode.MALFORMED_SYNTAX, reason.message),
  );
}

/**
 * What can be read of a malformed message: an envelope naming its sender and transfer (no
 * payload), with its event's type and action where it has them (else a prepare's).
 */
function salvage(
  value: Buffer | null,
): { message: MojaloopMessage; transferId: string } | undefined {
  let partial: Partial<MojaloopMessage> | null;
  try {
    partial = JSON.parse(value?.toString('utf8') ?? 'null') as Partial<MojaloopMessage> | null;
  } catch {
    return undefined;
  }
  if (partial === null) return undefined;
  const transferId = transferIdOf(partial);
  const sender = partial.content?.headers?.['fspiop-source'] ?? partial.from;
  if (transferId === undefined || typeof sender !== 'string') return undefined;
  const event = partial.metadata?.event;
  const headers = partial.content?.headers;
  const message: MojaloopMessage = {
    id: transferId,
    from: sender,
    type: typeof partial.type === 'string' ? partial.type : 'application/json',
    content: {
      headers: typeof headers === 'object' && headers !== null ? headers : {},
      payload: undefined,
    },
    metadata: {
      event: {
        type: typeof event?.type === 'string' ? event.type : 'prepare',
        action: typeof event?.action === 'string' ? event.action : 'prepare',
        ...(typeof event?.id === 'string' ? { id: event.id } : {}),
      },
    },
  };
  return { message, transferId };
}
