/**
 * Kafka drop-in mode for transfers: prepare, fulfil (commit, reserve, reject, abort) and get on
 * the transfer topics, run through the same TransferService as HTTP, and the notifications
 * central-ledger answers them with, so that ml-api-adapter makes the same callbacks.
 */
import { TransferAbortedError } from '../../domain/shared/errors';
import type { TransferRecord } from '../../ports/metadata';
import { viewOf, type TransferService } from '../../domain/transfers/service';
import { conversionNotice, type FxMessages } from './fx';
import type { Inbound } from './inbound';
import { HUB, header, notification, type MojaloopMessage } from './messages';
import { prepareAnswer } from './notifications';
import type { PayloadReaders } from './payloads';
import type { HandlerRegistry } from './registry';

export class TransferMessages {
  constructor(
    private readonly transfers: TransferService,
    private readonly fx: FxMessages,
    private readonly payloads: PayloadReaders,
  ) {}

  register(registry: HandlerRegistry): void {
    registry.register('prepare', ['prepare'], (inbound) => this.prepare(inbound));
    registry.register('fulfil', ['commit', 'reserve', 'reject', 'abort'], (inbound) =>
      this.fulfil(inbound),
    );
    registry.register('get', ['get'], (inbound) => this.get(inbound));
  }

  private async prepare(inbound: Inbound): Promise<MojaloopMessage[]> {
    // As central-ledger: a prepare without a transferId is an fx prepare.
    if (inbound.lacksTransferId()) return this.fx.prepare(inbound);
    const body = this.payloads.prepare.read(inbound.payload());
    const result = await this.transfers.prepare(inbound.source, body, inbound.origin);
    return prepareAnswer(inbound, result, {
      action: 'prepare',
      from: body.payerFsp,
      to: body.payeeFsp,
      view: () => fulfilView(result.record),
    });
  }

  private async fulfil(inbound: Inbound): Promise<MojaloopMessage[]> {
    const { message, transferId, source, origin } = inbound;
    const action = message.metadata.event.action;
    const destination = header(message, 'fspiop-destination');
    const payload = inbound.payload();
    let result;
    try {
      if (action === 'abort') {
        const body = this.payloads.error.read(payload);
        result = await this.transfers.error(transferId, { source, destination, origin }, body);
      } else {
        const body = this.payloads.fulfil.read(payload);
        result = await this.transfers.fulfil(transferId, { source, destination, origin }, body);
      }
    } catch (error) {
      if (!(error instanceof TransferAbortedError)) throw error;
      return this.abortedByValidation(inbound, error);
    }
    if (result.ignored === true) return [];
    const { record } = result;
    // A dependent transfer committed or aborted its conversion with it: the FXP's PATCH first, as
    // central-ledger.
    const notice = result.conversion === undefined ? [] : [conversionNotice(result.conversion)];
    if (result.duplicate && !result.redelivery) {
      return [
        notification(message, transferId, {
          action: action === 'abort' ? 'abort-duplicate' : 'fulfil-duplicate',
          from: HUB,
          to: source,
          payload: fulfilView(record),
          keepContext: true,
        }),
      ];
    }
    if (action === 'reserve') {
      // API v1.1: the payer gets the final state, the payee a PATCH (ml-api-adapter makes both
      // calls from this one message).
      return [
        ...notice,
        notification(message, transferId, {
          action: 'reserve',
          from: record.payeeFsp,
          to: record.payerFsp,
          payload: fulfilView(record, 'commit'),
          keepContext: true,
        }),
      ];
    }
    return [
      ...notice,
      notification(message, transferId, {
        action,
        from: record.payeeFsp,
        to: record.payerFsp,
        keepContext: true,
      }),
    ];
  }

  /**
   * The fulfil aborted the transfer (an invalid fulfilment, wrong headers): the payer learns it
   * from the Hub, the payee that its fulfil failed.
   */
  private async abortedByValidation(
    { message, transferId, source }: Inbound,
    error: TransferAbortedError,
  ): Promise<MojaloopMessage[]> {
    const record = await this.transfers.recordOf(transferId);
    const conversion =
      record.dependsOn === undefined ? undefined : await this.fx.recordOf(record.dependsOn);
    return [
      ...(conversion === undefined ? [] : [conversionNotice(conversion)]),
      notification(message, transferId, {
        action: 'abort-validation',
        from: HUB,
        to: record.payerFsp,
        error: error.toErrorInformation(),
        keepContext: true,
      }),
      notification(message, transferId, {
        action: 'commit',
        from: HUB,
        to: source,
        error: error.toErrorInformation(),
        keepContext: true,
      }),
    ];
  }

  private async get({ message, transferId, source }: Inbound): Promise<MojaloopMessage[]> {
    const found = await this.transfers.lookup(transferId, source);
    return [
      notification(message, transferId, {
        action: 'get',
        from: HUB,
        to: source,
        payload:
          found.transfer === undefined
            ? { transferState: found.funds.state }
            : fulfilView(found.transfer),
        keepContext: false,
      }),
    ];
  }
}

/** central-ledger's `toFulfil`: what PUT /transfers/{id} callbacks carry. */
function fulfilView(record: TransferRecord, at: 'now' | 'commit' = 'now'): Record<string, unknown> {
  const view = viewOf(record, at);
  return {
    completedTimestamp: view.completedTimestamp ?? record.createdAt,
    transferState: view.transferState,
    ...(view.fulfilment === undefined ? {} : { fulfilment: view.fulfilment }),
    ...(view.extensionList === undefined ? {} : { extensionList: view.extensionList }),
  };
}
