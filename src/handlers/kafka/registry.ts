/**
 * The handlers of the transfer topics' messages, keyed by the event's type and action: the
 * transfers' (transfers.ts) and the conversions' (fx.ts) register here, and each message is
 * answered by its own, or refused.
 */
import type { FastifyBaseLogger } from 'fastify';
import { FspiopCode, FspiopError } from '../../domain/shared/errors';
import type { Inbound } from './inbound';
import { MessageError, type MojaloopMessage } from './messages';
import { refusal } from './notifications';

/** The notifications answering one message; infrastructure failures are thrown. */
export type MessageHandler = (inbound: Inbound) => Promise<MojaloopMessage[]>;

export class HandlerRegistry {
  private readonly handlers = new Map<string, MessageHandler>();

  constructor(private readonly log: FastifyBaseLogger) {}

  register(type: string, actions: readonly string[], handler: MessageHandler): void {
    for (const action of actions) {
      const key = `${type}/${action}`;
      if (this.handlers.has(key)) throw new Error(`two handlers for ${key}`);
      this.handlers.set(key, handler);
    }
  }

  /**
   * The notifications answering one message: its handler's, or a refusal of a malformed message
   * (3101) or of a request its handler refused (an FSPIOP error).
   */
  async answer(inbound: Inbound): Promise<MojaloopMessage[]> {
    const { type, action } = inbound.message.metadata.event;
    try {
      const handler = this.handlers.get(`${type}/${action}`);
      if (handler === undefined) throw new MessageError(`unknown event ${type}/${action}`);
      return await handler(inbound);
    } catch (error) {
      if (error instanceof MessageError)
        return [this.refuse(inbound, new FspiopError(FspiopCode.MALFORMED_SYNTAX, error.message))];
      if (error instanceof FspiopError) return [this.refuse(inbound, error)];
      // Anything else (an outage, a full disk, a deadlock, a raw ledger client error, a fault of
      // ours) may have struck after the money moved: an error answer could contradict the ledger.
      // The batch fails uncommitted and its redelivery is answered as things then are. No cap on
      // the attempts: no answer given without the failing part is sure to be true, and a stalled
      // partition shows (consumer lag, kafkajs logging each failure) where a wrong one does not.
      throw error;
    }
  }

  /** The error notification refusing a message, to its sender. */
  refuse(inbound: Inbound, error: FspiopError): MojaloopMessage {
    const { type, action } = inbound.message.metadata.event;
    this.log.info(
      { transferId: inbound.transferId, type, action, code: error.code, detail: error.message },
      'kafka message refused',
    );
    return refusal(inbound, error);
  }
}
