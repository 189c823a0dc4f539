/**
 * Kafka drop-in mode for FX: the fx-* actions ml-api-adapter writes on the transfer topics, and
 * the notifications central-ledger answers them with (docs: shared reference mojaloop-fx.md §3),
 * so that ml-api-adapter makes the same callbacks. They are registered by type and action
 * (registry.ts); errors, delivery and offsets are handled as for transfers.
 */
import { TransferAbortedError } from '../../domain/shared/errors';
import type { FxTransferRecord, TransferRecord } from '../../ports/metadata';
import { conversionStateOf, viewOfFx } from '../../domain/fx/rules';
import type { FxResult, FxService } from '../../domain/fx/service';
import type { Inbound } from './inbound';
import { HUB, header, hubNotification, notification, type MojaloopMessage } from './messages';
import { prepareAnswer } from './notifications';
import type { PayloadReaders } from './payloads';
import type { HandlerRegistry } from './registry';

export class FxMessages {
  constructor(
    private readonly fx: FxService,
    private readonly payloads: PayloadReaders,
  ) {}

  register(registry: HandlerRegistry): void {
    registry.register('prepare', ['fx-prepare'], (inbound) => this.prepare(inbound));
    registry.register('fulfil', ['fx-reserve', 'fx-commit', 'fx-abort'], (inbound) =>
      this.fulfil(inbound),
    );
    // The FXP's conversionState ABORTED: central-ledger v19.14's fx fulfil handler drops the
    // action before reading anything (no change, no notification).
    registry.register('fulfil', ['fx-reject'], async () => []);
    registry.register('get', ['fx-get'], (inbound) => this.get(inbound));
  }

  /** The initiating FSP's POST /fxTransfers (also sent as a prepare without a transferId). */
  async prepare(inbound: Inbound): Promise<MojaloopMessage[]> {
    const body = this.payloads.fxPrepare.read(inbound.payload());
    const result = await this.fx.prepare(inbound.source, body, inbound.origin);
    return prepareAnswer(inbound, result, {
      action: 'fx-prepare',
      from: body.initiatingFsp,
      to: body.counterPartyFsp,
      view: () => callbackView(result.record),
    });
  }

  /** The FXP's PUT (fx-reserve, fx-commit) or PUT …/error (fx-abort). */
  private async fulfil(inbound: Inbound): Promise<MojaloopMessage[]> {
    const { message, transferId: id, source, origin } = inbound;
    const action = message.metadata.event.action;
    const destination = header(message, 'fspiop-destination');
    const payload = inbound.payload();
    let result: FxResult;
    try {
      if (action === 'fx-abort') {
        result = await this.fx.error(
          id,
          { source, destination, origin },
          this.payloads.error.read(payload),
        );
      } else {
        result = await this.fx.fulfil(
          id,
          { source, destination, origin },
          this.payloads.fxFulfil.read(payload),
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
    // fx-reserve: the initiating FSP gets the FXP's body. fx-commit (central-ledger drops it): the
    // same, and ml-api-adapter's copy back to the FXP tells it the outcome.
    return [
      notification(message, id, { action, from: record.counterPartyFsp, to, keepContext: true }),
      ...(result.transfer === undefined ? [] : [abortedByConversion(result.transfer.record)]),
    ];
  }

  recordOf(commitRequestId: string): Promise<FxTransferRecord> {
    return this.fx.recordOf(commitRequestId);
  }

  private async get({ message, transferId: id, source }: Inbound): Promise<MojaloopMessage[]> {
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
  const view = viewOfFx(record);
  return {
    conversionState: view.conversionState,
    completedTimestamp: view.completedTimestamp,
    ...(view.fulfilment === undefined ? {} : { fulfilment: view.fulfilment }),
  };
}
