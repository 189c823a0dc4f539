/**
 * FX conversions (FSPIOP v2.0 /fxTransfers), payer-side as central-ledger v19 does them, with the
 * money atomic in the ledger (docs/fx.md):
 *  - prepare: a reservation initiating FSP → FXP of sourceAmount in the source currency (the same
 *    ledger command as a transfer's prepare: 4001 / 4200 alike);
 *  - the FXP's RESERVED (or COMMITTED) answer moves nothing: RECEIVED_FULFIL_DEPENDENT;
 *  - the dependent transfer reserves targetAmount from the FXP's target-currency position, and its
 *    commit or abort posts or voids both reservations in one chain (the TransferDependencies
 *    hooks, conversions.ts);
 *  - the FXP's withdrawal (PUT …/error) voids the conversion, and its dependent transfer with it
 *    if prepared; its PUT with conversionState ABORTED changes nothing, as in central-ledger;
 *  - expiry: the ledger's own timeout; the sweep tells both parties once.
 */
import { validFulfilment } from '../shared/condition';
import {
  FspiopCode,
  FspiopError,
  TransferAbortedError,
  fspiopError,
  validationError,
} from '../shared/errors';
import type { ErrorInformation } from '../../ports/metadata';
import { FinishedElsewhere } from '../open-records/finish-elsewhere';
import { hashOf, hashToU128 } from '../shared/hashing';
import { canonicalTransferId } from '../shared/ids';
import { KeyedMutex } from '../../util/keyed-mutex';
import type { FxInternalState, FxTransferRecord, MetadataStore } from '../../ports/metadata';
import { TransferInternalState } from '../../ports/states';
import {
  MAX_TIMEOUT_SECONDS,
  internalStateOf,
  refusalError,
  refuseRepeatedRefusal,
  repeatedFinish,
} from '../transfers/rules';
import type { Delivery, TransferResult, TransferService } from '../transfers/service';
import type { Ledger, LedgerCommand, LedgerDeadline, LedgerOutcome } from '../../ports/ledger';
import type { FxConversions } from './conversions';
import {
  RECEIVED_FULFIL_DEPENDENT,
  fxLedgerId,
  isFinalFx,
  notFound,
  sourceReservation,
  validateFxPrepare,
  type FxFulfilRequest,
  type FxPrepareRequest,
} from './rules';

/**
 * Aborted in the ledger with no withdrawal recorded: repaired from the ledger, or by the dependent
 * transfer's abort. The FXP's withdrawal may be another instance's, its record on its way.
 */
function withdrawalLost(record: FxTransferRecord): boolean {
  return (
    record.state === TransferInternalState.ABORTED_ERROR && record.errorInformation === undefined
  );
}

/** One conversion per determining transfer: `owner` has it. */
function alreadyConverted(owner: string): FspiopError {
  return validationError(`determining transfer already has the fxTransfer ${owner}`);
}

export interface FxResult {
  record: FxTransferRecord;
  /** An earlier request already did this; nothing changed now. */
  duplicate: boolean;
  /** The very message that did it was delivered again (after a crash): answer as the first time. */
  redelivery: boolean;
  /** The dependent transfer the FXP's withdrawal aborted with the conversion. */
  transfer?: TransferResult;
}

/** A prepare that passed its checks, on its way to the ledger. */
interface CheckedPrepare {
  request: FxPrepareRequest;
  id: string;
  determiningTransferId: string;
  expiresAt: number;
  payloadHash: string;
  origin: string | undefined;
  /** Its bound on the ledger, all of its calls together (TransferService.ledgerDeadline). */
  ledgerDeadline: LedgerDeadline;
}

/**
 * What identifies one of the FXP's answers: its body's hash (by kind), the message it came in; and
 * until when it may wait for other instances' records (FinishElsewhere.deadline) and for the
 * ledger: its dependent transfer's abort and its own void share both.
 */
interface Finish {
  hash: string;
  origin: string | undefined;
  deadline: number;
  ledgerDeadline: LedgerDeadline;
}

/** One of the FXP's answers to a conversion (PUT, PUT …/error), as it came. */
interface FinishRequest {
  commitRequestId: string;
  delivery: Delivery;
  kind: 'fulfil' | 'error';
  body: unknown;
}

export class FxService {
  private readonly store: MetadataStore;
  private readonly ledger: Ledger;
  /**
   * Per determiningTransferId, held by a prepare from its "one conversion per transfer" check until
   * its record is saved, so two conversions for one transfer on this instance are never both
   * accepted (across instances sharing the store, its claimDetermining picks one). Always taken
   * inside the conversion's turn and never the other way round.
   */
  private readonly determining = new KeyedMutex();

  /**
   * @param conversions the conversions' records, which `transfers` was given as its dependencies
   * @param transfers whose dependent transfer a withdrawal aborts with the conversion
   */
  constructor(
    private readonly conversions: FxConversions,
    private readonly transfers: TransferService,
  ) {
    this.store = conversions.store;
    this.ledger = conversions.ledger;
  }

  loadOpen(): Promise<number> {
    return this.conversions.loadOpen();
  }

  /** Conversions overdue in a shared store that no live instance is telling (open-records.ts). */
  adoptOverdue(overdueByMs: number): Promise<void> {
    return this.conversions.adoptOverdue(overdueByMs);
  }

  /** Records and tells the conversions' expiries that are due (conversions.ts). */
  expireDue(notify?: (expired: FxTransferRecord[]) => Promise<void>): Promise<FxTransferRecord[]> {
    return this.conversions.expireDue(notify);
  }

  /** In a process that does not sweep: lets go of what another process sweeps (open-records.ts). */
  handOverDue(): Promise<void> {
    return this.conversions.handOverDue();
  }

  /** POST /fxTransfers (initiating FSP). */
  async prepare(
    source: string | undefined,
    request: FxPrepareRequest,
    origin?: string,
  ): Promise<FxResult> {
    const id = canonicalTransferId(request.commitRequestId);
    const payloadHash = hashOf(request);
    const ledgerDeadline = this.transfers.ledgerDeadline();
    return this.conversions.turns.run(id, async () => {
      const known = await this.conversions.find(id);
      if (known !== undefined)
        return this.duplicatePrepare(known, { payloadHash, origin, ledgerDeadline });
      const [initiating, fxp] = await Promise.all([
        this.store.participant(request.initiatingFsp),
        this.store.participant(request.counterPartyFsp),
      ]);
      const expiresAt = validateFxPrepare(source, request, {
        initiating,
        fxp,
        now: this.conversions.now(),
      });
      const determiningTransferId = canonicalTransferId(request.determiningTransferId!);
      return this.determining.run(determiningTransferId, () =>
        this.reserve({
          request,
          id,
          determiningTransferId,
          expiresAt,
          payloadHash,
          origin,
          ledgerDeadline,
        }),
      );
    });
  }

  /**
   * The conversion's reservation and record, under its own and its determining transfer's locks.
   */
  private async reserve(prepare: CheckedPrepare): Promise<FxResult> {
    const { request, id, determiningTransferId, expiresAt, payloadHash, origin, ledgerDeadline } =
      prepare;
    // Payee-side conversion (the transfer first) is not supported; one conversion per transfer.
    const [[transfer], [other]] = await Promise.all([
      this.store.transfers([determiningTransferId]),
      this.store.fxTransfersDetermining([determiningTransferId]),
    ]);
    if (transfer !== undefined)
      throw validationError(
        'determining transfer already exists: payee-side conversion is not supported',
      );
    if (other !== undefined) throw alreadyConverted(other.commitRequestId);
    // Instances sharing the store each passed the check above on their own: the claim picks one.
    const owner = (await this.store.claimDetermining?.(determiningTransferId, id)) ?? id;
    if (owner !== id) throw alreadyConverted(owner);
    const record: FxTransferRecord = {
      commitRequestId: id,
      determiningTransferId,
      initiatingFsp: request.initiatingFsp,
      counterPartyFsp: request.counterPartyFsp,
      // Only what the API names: a body may carry other properties, inside its amounts too.
      sourceAmount: {
        amount: request.sourceAmount.amount,
        currency: request.sourceAmount.currency,
      },
      targetAmount: {
        amount: request.targetAmount.amount,
        currency: request.targetAmount.currency,
      },
      condition: request.condition,
      expiration: request.expiration!,
      payloadHash,
      state: TransferInternalState.RECEIVED_PREPARE,
      createdAt: new Date(this.conversions.now()).toISOString(),
      ...(request.extensionList === undefined ? {} : { extensionList: request.extensionList }),
      ...(origin === undefined ? {} : { prepareOrigin: origin }),
    };
    const timeoutSeconds = Math.min(
      MAX_TIMEOUT_SECONDS,
      Math.ceil((expiresAt - this.conversions.now()) / 1000),
    );
    const outcome = await this.execute(
      {
        kind: 'prepare',
        ...sourceReservation(record),
        timeoutSeconds,
        payloadHash: hashToU128(payloadHash),
      },
      ledgerDeadline,
    );
    if (outcome.ok || outcome.refusal === 'exists') {
      this.conversions.fault('fx-prepare.after-ledger');
      const [state] = outcome.ok
        ? ['reserved' as const]
        : await this.ledger.transferStates([fxLedgerId(id)], ledgerDeadline);
      const saved = await this.conversions.save({
        ...record,
        state: internalStateOf(state!) ?? TransferInternalState.RESERVED,
      });
      this.conversions.fault('fx-prepare.after-metadata');
      // Found in the ledger only (a crash before the metadata): its first delivery was never
      // answered.
      return {
        record: saved,
        duplicate: !outcome.ok,
        redelivery: !outcome.ok && origin !== undefined && !isFinalFx(saved.state),
      };
    }
    if (outcome.refusal === 'insufficient_liquidity' || outcome.refusal === 'limit_exceeded') {
      const error = fspiopError(
        outcome.refusal === 'insufficient_liquidity'
          ? FspiopCode.PAYER_INSUFFICIENT_LIQUIDITY
          : FspiopCode.PAYER_LIMIT_ERROR,
      );
      await this.conversions.writeRefusal({
        ...record,
        state: TransferInternalState.ABORTED_REJECTED,
        errorInformation: error.toErrorInformation(),
      });
      throw error;
    }
    // Nothing reserved and nothing recorded: the transfer is free again, as the check of records
    // has it on one instance. Not after `modified`: the ledger holds this id's reservation of
    // another payload, which may be the claim's own (its record lost to a crash).
    if (outcome.refusal !== 'modified')
      await this.store.releaseDetermining?.(determiningTransferId, id);
    throw refusalError(outcome.refusal, id);
  }

  private async duplicatePrepare(
    known: FxTransferRecord,
    asked: Pick<CheckedPrepare, 'payloadHash' | 'origin' | 'ledgerDeadline'>,
  ): Promise<FxResult> {
    const { payloadHash, origin, ledgerDeadline } = asked;
    if (known.payloadHash !== payloadHash)
      throw fspiopError(
        FspiopCode.MODIFIED_REQUEST,
        `fxTransfer ${known.commitRequestId} was prepared with another payload`,
      );
    const record = await this.conversions.reconciled(known, 'in its turn', ledgerDeadline);
    refuseRepeatedRefusal(record, origin);
    const sameMessage = origin !== undefined && record.prepareOrigin === origin;
    return { record, duplicate: true, redelivery: sameMessage && !isFinalFx(record.state) };
  }

  /**
   * PUT /fxTransfers/{id} (the FXP). RESERVED, and COMMITTED too (the Hub commits with the
   * dependent transfer), record the FXP's agreement and move nothing. ABORTED changes nothing:
   * central-ledger v19.14 drops it (ml-api-adapter's fx-reject is not among the actions its fx
   * fulfil handler takes), so the conversion stays as it is until the FXP's PUT …/error or its
   * expiry; the answer is the conversion as its party reads it.
   */
  async fulfil(
    commitRequestId: string,
    delivery: Delivery,
    request: FxFulfilRequest,
  ): Promise<FxResult> {
    if (request.conversionState === 'ABORTED')
      return {
        record: await this.get(commitRequestId, delivery.source),
        duplicate: false,
        redelivery: false,
      };
    const finishRequest: FinishRequest = {
      commitRequestId,
      delivery,
      kind: 'fulfil',
      body: request,
    };
    return this.finish(finishRequest, async (record, finish) => {
      if (request.conversionState === 'RECEIVED')
        throw validationError('conversionState RECEIVED is not an answer to an fxTransfer');
      // As central-ledger: the fulfilment is checked when present.
      if (
        request.fulfilment !== undefined &&
        !validFulfilment(request.fulfilment, record.condition)
      ) {
        return this.rejected(record, finish, 'invalid fulfilment');
      }
      const saved = await this.conversions.save({
        ...record,
        state: RECEIVED_FULFIL_DEPENDENT,
        finishHash: finish.hash,
        completedTimestamp:
          request.completedTimestamp ?? new Date(this.conversions.now()).toISOString(),
        ...(request.fulfilment === undefined ? {} : { fulfilment: request.fulfilment }),
        ...(request.extensionList === undefined ? {} : { extensionList: request.extensionList }),
        ...(finish.origin === undefined ? {} : { finishOrigin: finish.origin }),
      });
      return { record: saved, duplicate: false, redelivery: false };
    });
  }

  /**
   * PUT /fxTransfers/{id}/error (the FXP withdraws), also after its dependent transfer was
   * prepared.
   */
  async error(
    commitRequestId: string,
    delivery: Delivery,
    body: { errorInformation: ErrorInformation },
  ): Promise<FxResult> {
    const finishRequest: FinishRequest = { commitRequestId, delivery, kind: 'error', body };
    return this.finish(finishRequest, (record, finish) =>
      this.withdraw(record, finish, TransferInternalState.ABORTED_ERROR, body.errorInformation),
    );
  }

  /** A conversion's record whoever asks (the Kafka mode's refusals); 3208 when unknown. */
  async recordOf(commitRequestId: string): Promise<FxTransferRecord> {
    const record = await this.conversions.find(canonicalTransferId(commitRequestId));
    if (record === undefined) throw notFound(commitRequestId);
    return record;
  }

  /** GET /fxTransfers/{id}: either party; unknown 3208, anyone else 3000 (central-ledger). */
  async get(commitRequestId: string, source: string | undefined): Promise<FxTransferRecord> {
    const record = await this.conversions.find(canonicalTransferId(commitRequestId));
    if (record === undefined) throw notFound(commitRequestId);
    if (source !== record.initiatingFsp && source !== record.counterPartyFsp)
      throw fspiopError(FspiopCode.GENERIC_CLIENT, 'requester is not a party to this fxTransfer');
    return this.conversions.reconciled(record, 'outside its turn');
  }

  // --- internals ---------------------------------------------------------------------------------

  /** The checks the FXP's PUT and PUT …/error share, serialised per conversion. */
  private finish(
    request: FinishRequest,
    change: (record: FxTransferRecord, finish: Finish) => Promise<FxResult>,
  ): Promise<FxResult> {
    const { commitRequestId, kind } = request;
    const { source, destination, origin } = request.delivery;
    const id = canonicalTransferId(commitRequestId);
    const finish: Finish = {
      hash: `${kind}:${hashOf(request.body)}`,
      origin,
      deadline: this.transfers.elsewhere.deadline(),
      ledgerDeadline: this.transfers.ledgerDeadline(),
    };
    // Checked again against another instance's record of a withdrawal the ledger has
    // (withdrawnElsewhere).
    const checked = async (record: FxTransferRecord): Promise<FxResult> => {
      if (record.finishHash?.startsWith(`${kind}:`)) {
        if (record.finishHash !== finish.hash)
          throw fspiopError(
            FspiopCode.MODIFIED_REQUEST,
            `fxTransfer ${id} was already answered with another payload`,
          );
        return repeatedFinish(record, origin);
      }
      const wrongParty = wrongPartyOf(record, source, destination);
      if (wrongParty !== undefined) {
        if (record.state !== TransferInternalState.RESERVED) throw validationError(wrongParty);
        return this.rejected(record, finish, wrongParty);
      }
      const open =
        record.state === TransferInternalState.RESERVED ||
        (kind === 'error' && record.state === RECEIVED_FULFIL_DEPENDENT);
      if (open && Date.parse(record.expiration) <= this.conversions.now())
        throw fspiopError(FspiopCode.TRANSFER_EXPIRED);
      if (record.state === TransferInternalState.EXPIRED_RESERVED)
        throw fspiopError(FspiopCode.TRANSFER_EXPIRED);
      // A withdrawal the ledger made whose own record a crash lost (repaired from the ledger):
      // recorded now.
      const lost = kind === 'error' && withdrawalLost(record);
      if (!open && !lost) throw validationError(`fxTransfer is ${record.state}, not RESERVED`);
      return change(record, finish);
    };
    return this.conversions.turns.run(id, async () => {
      const found = await this.conversions.find(id);
      if (found === undefined) throw notFound(commitRequestId);
      const record = await this.conversions.reconciled(found, 'in its turn', finish.ledgerDeadline);
      try {
        // Its own finish already recorded (a resend of the FXP's agreement to a conversion since
        // aborted): nothing to wait for.
        const waits = withdrawalLost(record) && record.finishHash !== finish.hash;
        return await checked(
          waits ? ((await this.withdrawnElsewhere(record, finish)) ?? record) : record,
        );
      } catch (error) {
        if (error instanceof FinishedElsewhere) return checked(error.record as FxTransferRecord);
        throw error;
      }
    });
  }

  /**
   * The record of a withdrawal the ledger has and the record read lacks: another instance's, maybe
   * on its way to the store (open-records/finish-elsewhere.ts); undefined once none can land any
   * more (a crash lost it). Repairs from the ledger and the dependent transfer's settling keep the
   * finish hash the conversion had (none, or the FXP's agreement's): only another finish's counts.
   * Undecided at the withdrawal's `deadline`: FinishPendingError.
   */
  private async withdrawnElsewhere(
    record: FxTransferRecord,
    { deadline, ledgerDeadline }: Finish,
  ): Promise<FxTransferRecord | undefined> {
    const id = record.commitRequestId;
    const asked = { ledgerId: fxLedgerId(id), what: `fxTransfer ${id}`, deadline, ledgerDeadline };
    const stored = await this.transfers.elsewhere.recorded(asked, async () => {
      const [stored] = await this.store.fxTransfers([id]);
      const anotherFinish =
        stored !== undefined && isFinalFx(stored.state) && stored.finishHash !== record.finishHash;
      return anotherFinish ? stored : undefined;
    });
    return stored === undefined ? undefined : this.conversions.follow(stored);
  }

  /**
   * As central-ledger: the conversion is aborted for `reason` and the initiating FSP told
   * (TransferAbortedError); recorded as this finish's, so its redelivery is told the same.
   */
  private async rejected(record: FxTransferRecord, finish: Finish, reason: string): Promise<never> {
    const error = new TransferAbortedError(reason);
    await this.withdraw(
      record,
      finish,
      TransferInternalState.ABORTED_REJECTED,
      error.toErrorInformation(),
    );
    throw error;
  }

  /**
   * Voids the conversion — with its dependent transfer in one chain when that was prepared and
   * is still reserved — and records the abort. A conversion whose transfer committed first is
   * COMMITTED: 3100.
   */
  private async withdraw(
    record: FxTransferRecord,
    finish: Finish,
    state: FxInternalState,
    errorInformation: ErrorInformation | undefined,
  ): Promise<FxResult> {
    let transfer: TransferResult | undefined;
    const inLedger = isFinalFx(record.state);
    if (record.state === RECEIVED_FULFIL_DEPENDENT) {
      const error =
        errorInformation ??
        new FspiopError(
          FspiopCode.VALIDATION,
          'Related FX Transfer was aborted by the FXP',
        ).toErrorInformation();
      transfer = await this.transfers.abortDependent(
        record.determiningTransferId,
        record.commitRequestId,
        error,
        finish,
      );
    }
    if (transfer === undefined && !inLedger) {
      const outcome = await this.execute(
        { kind: 'abort', ...sourceReservation(record) },
        finish.ledgerDeadline,
      );
      if (!outcome.ok && outcome.refusal !== 'exists') {
        if (outcome.refusal === 'expired') throw fspiopError(FspiopCode.TRANSFER_EXPIRED);
        if (outcome.refusal === 'already_committed') {
          await this.conversions.save({ ...record, state: TransferInternalState.COMMITTED });
          throw validationError('fxTransfer is COMMITTED, not RESERVED');
        }
        throw refusalError(outcome.refusal, record.commitRequestId);
      }
      // The ledger had this withdrawal: another instance's, whose record wins, or one a crash lost
      // (recorded now).
      const stored = outcome.ok ? undefined : await this.withdrawnElsewhere(record, finish);
      if (stored !== undefined)
        throw new FinishedElsewhere(stored, `fxTransfer ${record.commitRequestId}`);
    }
    this.conversions.fault('fx-abort.after-ledger');
    const saved = await this.conversions.save({
      ...record,
      state,
      completedTimestamp: new Date(this.conversions.now()).toISOString(),
      finishHash: finish.hash,
      ...(finish.origin === undefined ? {} : { finishOrigin: finish.origin }),
      ...(errorInformation === undefined ? {} : { errorInformation }),
    });
    return {
      record: saved,
      duplicate: false,
      redelivery: false,
      ...(transfer === undefined ? {} : { transfer }),
    };
  }

  private async execute(command: LedgerCommand, deadline: LedgerDeadline): Promise<LedgerOutcome> {
    const [outcome] = await this.ledger.execute([command], deadline);
    return outcome!;
  }
}

/** The header naming the wrong party to answer this conversion, if one does. */
function wrongPartyOf(
  record: FxTransferRecord,
  source: string | undefined,
  destination: string | undefined,
): string | undefined {
  if (source !== record.counterPartyFsp)
    return 'FSPIOP-Source header does not match the counter party FSP';
  if (destination !== undefined && destination !== record.initiatingFsp)
    return 'FSPIOP-Destination header does not match the initiating FSP';
  return undefined;
}
