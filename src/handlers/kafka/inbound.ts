/**
 * A message taken from a transfer topic, as its handler gets it: the envelope, the transfer it is
 * about, its sender, and where it was read (what tells a redelivery).
 */
import { decodePayload, header, type MojaloopMessage } from './messages';

export class Inbound {
  /** FSPIOP-Source, else the envelope's `from`. */
  readonly source: string;
  private decoded: Record<string, unknown> | undefined;

  constructor(
    readonly message: MojaloopMessage,
    readonly transferId: string,
    /** topic:partition:offset. */
    readonly origin: string,
  ) {
    this.source = header(message, 'fspiop-source') ?? message.from;
  }

  /** The payload as an object (decoded once); a MessageError where it cannot be read. */
  payload(): Record<string, unknown> {
    this.decoded ??= decodePayload(this.message.content.payload);
    return this.decoded;
  }

  /**
   * Whether the payload names no transferId: as central-ledger, what tells an FX prepare sent
   * under the transfers' action. A payload that cannot be read counts as naming one.
   */
  lacksTransferId(): boolean {
    try {
      return !('transferId' in this.payload());
    } catch {
      return false;
    }
  }
}
