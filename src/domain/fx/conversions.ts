/**
 * The FX conversions' records as this instance holds them — the open ones watched by the engine
 * of open records (their load, sweep and repair), the rest read from the store — and what the
 * dependent transfer's flow asks of them (the TransferDependencies hooks). Built before the
 * transfer service, which is given it; the FX request flow (service.ts) works on it.
 */
import type { Ledger, LedgerDeadline } from '../../ports/ledger';
import type { FxTransferRecord, MetadataStore, TransferRecord } from '../../ports/metadata';
import { TransferInternalState } from '../../ports/states';
import { noFault, type Fault } from '../../util/fault';
import { KeyedMutex } from '../../util/keyed-mutex';
import type { Warn } from '../open-records/expiry-sweep';
import { OpenRecords } from '../open-records/open-records';
import { parseAmount, requireCurrency } from '../shared/money';
import { validationError } from '../shared/errors';
import type { Dependency, TransferDependencies } from '../transfers/dependencies';
import {
  RECEIVED_FULFIL_DEPENDENT,
  conversionStateInLedger,
  fxLedgerId,
  isFinalFx,
  sourceReservation,
} from './rules';

export interface FxConversionsOptions {
  now?: () => number;
  /** Tests only: where the process may be killed (util/fault.ts). */
  fault?: Fault;
  /**
   * Where final records dropped unwritten during a long store outage are reported (FinalWrites).
   */
  warn?: Warn;
}

export class FxConversions implements TransferDependencies {
  /** Each conversion's turn: its prepare, its finishes and a repair of it run one at a time. */
  readonly turns = new KeyedMutex();
  readonly now: () => number;
  readonly fault: Fault;
  /** Conversions not yet final that this instance knows (RESERVED, RECEIVED_FULFIL_DEPENDENT). */
  private readonly open: OpenRecords<FxTransferRecord>;

  constructor(
    readonly store: MetadataStore,
    readonly ledger: Ledger,
    options: FxConversionsOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.fault = options.fault ?? noFault;
    this.open = new OpenRecords<FxTransferRecord>(
      {
        kind: 'fx',
        idOf: (record) => record.commitRequestId,
        ledgerIdOf: fxLedgerId,
        stateOf: conversionStateInLedger,
        // Asked at every transfer's prepare (forPrepare).
        indexOf: (record) => record.determiningTransferId,
        loadOpen: () => store.openFxTransfers(),
        read: (ids) => store.fxTransfers(ids),
        save: (records) => store.saveFxTransfers(records),
        faults: { afterNotify: 'fx-expiry.after-notify' },
        repairsBeforeDue: false,
      },
      { store, ledger, fault: this.fault, now: this.now, turns: this.turns, warn: options.warn },
    );
  }

  loadOpen(): Promise<number> {
    return this.open.load();
  }

  /** Conversions overdue in a shared store that no live instance is telling (open-records.ts). */
  adoptOverdue(overdueByMs: number): Promise<void> {
    return this.open.adoptOverdue(overdueByMs);
  }

  /**
   * The sweep (open-records.ts): conversions the ledger released by itself are told to both
   * parties by `notify`, then recorded EXPIRED_RESERVED; also a conversion the FXP agreed to whose
   * transfer never came.
   */
  expireDue(notify?: (expired: FxTransferRecord[]) => Promise<void>): Promise<FxTransferRecord[]> {
    return this.open.expireDue(notify);
  }

  /** In a process that does not sweep: lets go of what another process sweeps (open-records.ts). */
  handOverDue(): Promise<void> {
    return this.open.handOverDue();
  }

  /** The conversion's finalWrites: a refused prepare's record, written by the next sweep if not. */
  writeRefusal(record: FxTransferRecord): Promise<void> {
    return this.open.finalWrites.writeRefusal(record);
  }

  /**
   * A record not final may lag the ledger (another instance, a crash): the ledger's state wins.
   * Prepares and finishes call this in the conversion's turn, holding a record read in it; a GET
   * reads outside it, so its repair takes the turn and writes only where the store still lacks a
   * final record. Else a finish of this instance that the ledger already shows, recorded while the
   * GET asked the ledger, would be overwritten from the GET's older read: its error, fulfilment and
   * finish hash gone, and a retry of that finish recorded and answered anew.
   */
  reconciled(
    record: FxTransferRecord,
    read: 'in its turn' | 'outside its turn' = 'in its turn',
    deadline?: LedgerDeadline,
  ): Promise<FxTransferRecord> {
    return this.open.reconciled(record, read, deadline);
  }

  async find(commitRequestId: string): Promise<FxTransferRecord | undefined> {
    const open = this.open.get(commitRequestId);
    return open !== undefined
      ? this.fresher(open)
      : (await this.store.fxTransfers([commitRequestId]))[0];
  }

  /**
   * The open copy, or what another instance recorded since: the FXP's answer (and its agreement
   * lapsing or being withdrawn) moves nothing in the ledger, so while this copy says RESERVED only
   * the store can tell that the FXP answered elsewhere. Only a later state is taken from it (a
   * write of this instance may still be on its way there).
   */
  private async fresher(open: FxTransferRecord): Promise<FxTransferRecord> {
    if (open.state !== TransferInternalState.RESERVED) return open;
    const [stored] = await this.store.fxTransfers([open.commitRequestId]);
    const answered =
      stored !== undefined &&
      (stored.state === RECEIVED_FULFIL_DEPENDENT || isFinalFx(stored.state));
    if (!answered) return open;
    this.open.follow(stored);
    return stored;
  }

  /** Stored first, then the open set follows (OpenRecords.save says why). */
  save(record: FxTransferRecord): Promise<FxTransferRecord> {
    return this.open.save(record);
  }

  /** Keeps the open set in step with a record another instance saved. */
  follow(record: FxTransferRecord): FxTransferRecord {
    return this.open.follow(record);
  }

  // --- TransferDependencies: the dependent transfer's hooks -------------------------------------

  async forPrepare(transferId: string): Promise<Dependency | undefined> {
    const open = this.open.getByIndex(transferId);
    const record =
      open !== undefined
        ? await this.fresher(open)
        : (await this.store.fxTransfersDetermining([transferId]))[0];
    if (record === undefined) return undefined;
    if (record.state !== RECEIVED_FULFIL_DEPENDENT)
      throw validationError('Related FX Transfer is not fulfilled');
    return dependencyOf(record);
  }

  async of(transfer: TransferRecord): Promise<Dependency> {
    return dependencyOf(await this.dependedOn(transfer));
  }

  async settled(
    transfer: TransferRecord,
    outcome: 'committed' | 'aborted',
  ): Promise<FxTransferRecord> {
    const record = await this.dependedOn(transfer);
    // Both legs are in the ledger already (one chain); a crash here leaves the conversion to the
    // sweep's repair.
    this.fault('fx-settle.before-metadata');
    const state =
      outcome === 'committed'
        ? TransferInternalState.COMMITTED
        : TransferInternalState.ABORTED_ERROR;
    return this.save({
      ...record,
      state,
      completedTimestamp: transfer.completedTimestamp ?? new Date(this.now()).toISOString(),
    });
  }

  /**
   * Each conversion the FXP agreed to is voided with its expired transfer, as central-ledger times
   * both out together (the conversion's own timeout would hold the payer's reservation until its
   * later expiration); the next sweep tells it and records it expired (OpenRecords.releasedEarly).
   */
  async expired(transfers: readonly TransferRecord[]): Promise<void> {
    for (const transfer of transfers) {
      await this.turns.run(transfer.dependsOn!, async () => {
        const record = await this.find(transfer.dependsOn!);
        if (record?.state !== RECEIVED_FULFIL_DEPENDENT) return;
        const [outcome] = await this.ledger.execute([
          { kind: 'abort', ...sourceReservation(record) },
        ]);
        // `exists`: voided by a sweep that failed before telling. `expired`: released by its own
        // timeout meanwhile, which the sweep finds by itself.
        if (outcome!.ok || outcome!.refusal === 'exists') this.open.releasedEarly(record);
      });
    }
  }

  private async dependedOn(transfer: TransferRecord): Promise<FxTransferRecord> {
    const record = await this.find(transfer.dependsOn!);
    if (record === undefined)
      throw new Error(
        `transfer ${transfer.transferId} depends on the unknown fxTransfer ${transfer.dependsOn}`,
      );
    return record;
  }
}

function dependencyOf(record: FxTransferRecord): Dependency {
  const currency = requireCurrency(record.targetAmount.currency);
  return {
    commitRequestId: record.commitRequestId,
    payer: record.counterPartyFsp,
    currency: currency.code,
    amount: parseAmount(record.targetAmount.amount, currency),
    expiresAtMs: Date.parse(record.expiration),
    linked: sourceReservation(record),
  };
}
