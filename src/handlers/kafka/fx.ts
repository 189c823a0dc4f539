/**
 * Kafka drop-in mode for FX: the fx-* actions ml-api-adapter writes on the transfer topics, and
 * the notifications central-ledger answers them with (docs: shared reference mojaloop-fx.md §3),
 * so that ml-api-adapter makes the same callbacks. The transport (src/kafka/transport.ts) routes
 * the messages here and handles errors, delivery and offsets as for transfers.
 */
import type { ValidateFunction } from 'ajv';
import { TransferAbortedError } from '../../domain/shared/errors';
import type { ErrorInformation } from '../../ports/metadata';
import type { FxTransferRecord, TransferRecord } from '../../ports/metadata';
import {
  HUB,
  decodePayload,
  header,
  hubNotification,
  notification,
  type MojaloopMessage,
} from './messages';
import {
  conversionStateOf,
  viewOfFx,
  type FxFulfilRequest,
  type FxPrepareRequest,
} from '../../domain/fx/rules';
import type { FxResult, FxService } from '../../domain/fx/service';

export const FX_FULFIL_ACTIONS = ['fx-reserve', 'fx-commit', 'fx-reject', 'fx-abort'];

/** The transport's schema check: the payload, or a MessageError (3101). */
type Validated = (
  validate: ValidateFunction,
  payload: Record<string, unknown>,
) => Record<string, unknown>;

export class FxMessages {
  constructor(
    private readonly fx: FxService,
    private readonly validators: {
      prepare: ValidateFunction;
      fulfil: ValidateFunction;
      error: ValidateFunction;
    },
    private readonly validated: Validated,
  ) {}

  async prepare(
    message: MojaloopMessage,
    payload: Record<string, unknown>,
    id: string,
    source: string,
    origin: string,
  ): Promise<MojaloopMessage[]> {
    const body = this.validated(this.validators.prepare, payload) as unknown as FxPrepareRequest;
    const result = await this.fx.prepare(source, body, origin);
    if (!result.duplicate || result.redelivery) {
      // Forwarded to the FXP as it came (ml-api-adapter replays the original bytes from the
      // context).
      return [
        notification(message, id, {
          action: 'fx-prepare',
          from: body.initiatingFsp,
          to: body.counterPartyFsp,
          keepContext: true,
        }),
      ];
    }
    if (result.record.state === 'RECEIVED_PREPARE') return [];
    return [
      notification(message, id, {
        action: 'fx-prepare-duplicate',
        from: HUB,
        to: source,
        payload: callbackView(result.record),
        keepContext: true,
      }),
    ];
  }

  /** The FXP's PUT (fx-reserve, fx-commit, fx-reject) or PUT …/error (fx-abort). */
  async fulfil(
    message: MojaloopMessage,
    id: string,
    source: string,
    origin: string,
  ): Promise<MojaloopMessage[]> {
    const action = message.metadata.event.action;
    const destination = header(message, 'fspiop-destination');
    const payload = decodePayload(message.content.payload);
    let result: FxResult;
    try {
      if (action === 'fx-abort') {
        result = await this.fx.error(
          id,
          { source, destination, origin },
          this.validated(this.validators.error, payload) as { errorInformation: ErrorInformation },
        );
      } else {
        result = await this.fx.fulfil(
          id,
          { source, destination, origin },
          this.validated(this.validators.fulfil, payload) as unknown as FxFulfilRequest,
        );
      }
    } catch (error) {
      if (!(error instanceof TransferAbortedError)) throw error;
      // Invalid fulfilment or wrong headers: the conversion was aborted, its initiating FSP is
      // told.
      const record = await this.fx.recordOf(id);
      return [
        notification(message, id, {
          action: 'fx-abort-validation',
          from: HUB,
          to: record.initiatingFsp,
          error: error.toErrorInformation(),
          keepContext: true,
        }),
      ];
    }
    const { record } = result;
    if (result.duplicate && !result.redelivery) {
      return [
        notification(message, id, {
          action: action === 'fx-abort' ? 'fx-abort-duplicate' : 'fx-fulfil-duplicate',
          from: HUB,
          to: source,
          payload: callbackView(record),
          keepContext: true,
        }),
      ];
    }
    const to = record.initiatingFsp;
    if (action === 'fx-abort') {
      // The FXP's error body to the initiating FSP, the Hub's copy to the FXP; the dependent
      // transfer's parties, if it was aborted with it.
      return [
        notification(message, id, {
          action: 'fx-abort',
          from: record.counterPartyFsp,
          to,
          keepContext: true,
          context: { isOriginalId: true },
        }),
        ...(result.transfer === undefined ? [] : [abortedByConversion(result.transfer.record)]),
      ];
    }
    // fx-reserve: the initiating FSP gets the FXP's body. fx-commit and fx-reject (central-ledger
    // drops both): the same, and ml-api-adapter's copy back to the FXP tells it the outcome.
    return [
      notification(message, id, { action, from: record.counterPartyFsp, to, keepContext: true }),
      ...(result.transfer === undefined ? [] : [abortedByConversion(result.transfer.record)]),
    ];
  }

  recordOf(commitRequestId: string): Promise<FxTransferRecord> {
    return this.fx.recordOf(commitRequestId);
  }

  async get(message: MojaloopMessage, id: string, source: string): Promise<MojaloopMessage[]> {
    const record = await this.fx.get(id, source);
    return [
      notification(message, id, {
        action: 'fx-get',
        from: HUB,
        to: source,
        payload: callbackView(record),
        keepContext: false,
      }),
    ];
  }
}

/**
 * The PATCH to the FXP when its conversion's dependent transfer commits or aborts, with the
 * spec's body `{conversionState, completedTimestamp}`: no original payload in the context, so
 * ml-api-adapter sends this one (central-ledger's context makes it send the payee's answer).
 */
export function conversionNotice(record: FxTransferRecord): MojaloopMessage {
  return hubNotification({
    id: record.commitRequestId,
    from: HUB,
    to: record.counterPartyFsp,
    resource: 'fxTransfers',
    action: 'fx-notify',
    context: {},
    payload: {
      conversionState: conversionStateOf(record.state),
      completedTimestamp: record.completedTimestamp ?? record.createdAt,
    },
  });
}

/**
 * A dependent transfer aborted because its FXP withdrew: payer and payee each get PUT
 * /transfers/{id}/error.
 */
function abortedByConversion(transfer: TransferRecord): MojaloopMessage {
  return hubNotification({
    id: transfer.transferId,
    from: transfer.payeeFsp,
    to: transfer.payerFsp,
    resource: 'transfers',
    action: 'abort-validation',
    context: {},
    error: transfer.errorInformation!,
  });
}

/** central-ledger's toFulfil for a conversion: what PUT /fxTransfers/{id} callbacks carry. */
function callbackView(record: FxTransferRecord): Record<string, unknown> {
  const { commitRequestId: _id, errorInformation: _error, ...view } = viewOfFx(record);
  return view;
}
