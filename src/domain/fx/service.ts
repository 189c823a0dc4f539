/**
 * FX conversions (FSPIOP v2.0 /fxTransfers), payer-side as central-ledger v19 does them, with the
 * money atomic in the ledger (README.md, "FX transfers"):
 *  - prepare: a reservation initiating FSP → FXP of sourceAmount in the source currency (the same
 *    ledger command as a transfer's prepare: 4001 / 4200 alike);
 *  - the FXP's RESERVED (or COMMITTED) answer moves nothing: RECEIVED_FULFIL_DEPENDENT;
 *  - the dependent transfer reserves targetAmount from the FXP's target-currency position, and its
 *    commit or abort posts or voids both reservations in one chain (the TransferDependencies
 * hooks);
 *  - the FXP's withdrawal voids the conversion, and its dependent transfer with it if prepared;
 *  - expiry: the ledger's own timeout; the sweep tells both parties once.
 */
import { validFulfilment } from '../shared/condition';
import type { Dependency, TransferDependencies } from '../transfers/dependencies';
import {
  FspiopCode,
  FspiopError,
  TransferAbortedError,
  fspiopError,
  validationError,
} from '../shared/errors';
import type { ErrorInformation } from '../../ports/metadata';
import {
  FinalWrites,
  OneSweepAtATime,
  claimExpired,
  readDue,
  type Warn,
} from '../open-records/expiry-sweep';
import { FinishedElsewhere } from '../open-records/finish-elsewhere';
import { hashOf, hashToU128 } from '../shared/hashing';
import { canonicalTransferId } from '../shared/ids';
import { KeyedMutex } from '../../util/keyed-mutex';
import { OVERDUE_PER_PASS } from '../open-records/open-transfers';
import { Watchlist } from '../open-records/watchlist';
import type {
  FxInternalState,
  FxTransferRecord,
  MetadataStore,
  TransferRecord,
} from '../../ports/metadata';
import { parseAmount, requireCurrency } from '../shared/money';
import { TransferInternalState } from '../../ports/states';
import {
  MAX_TIMEOUT_SECONDS,
  expiredChange,
  internalStateOf,
  refusalError,
  repeatedFinish,
} from '../transfers/rules';
import type { TransferResult, TransferService } from '../transfers/service';
import type { Ledger, LedgerCommand, LedgerOutcome } from '../../ports/ledger';
import { noFault, type Fault } from '../../util/fault';
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

export class FxService implements TransferDependencies {
  /** Conversions not yet final that this instance knows (RESERVED, RECEIVED_FULFIL_DEPENDENT). */
  private readonly open: Watchlist<FxTransferRecord>;
  /**
   * determiningTransferId → commitRequestId of the open ones: asked at every transfer's prepare.
   */
  private readonly openByTransfer = new Map<string, string>();
  private readonly serial = new KeyedMutex();
  private readonly sweeps = new OneSweepAtATime();
  /** Told expiries and refusals whose write failed: written by the next sweep. */
  private readonly finalWrites: FinalWrites<FxTransferRecord>;
  /**
   * Per determiningTransferId, held by a prepare from its "one conversion per transfer" check until
   * its record is saved, so two conversions for one transfer on this instance are never both
   * accepted (across instances sharing the store, its claimDetermining picks one). Always taken
   * inside the conversion's `serial` lock and never the other way round.
   */
  private readonly determining = new KeyedMutex();

  constructor(
    private readonly store: MetadataStore,
    private readonly ledger: Ledger,
    private readonly transfers: TransferService,
    private readonly options: { now?: () => number; fault?: Fault; warn?: Warn } = {},
  ) {
    transfers.attach(this);
    this.finalWrites = new FinalWrites(
      (records) => store.saveFxTransfers(records),
      (record) => record.commitRequestId,
      options.warn,
    );
    this.open = new Watchlist(
      (record) => Date.parse(record.expiration),
      () => this.now(),
    );
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private fault(point: Parameters<Fault>[0]): void {
    (this.options.fault ?? noFault)(point);
  }

  async loadOpen(): Promise<number> {
    const open = await this.store.openFxTransfers();
    this.watchUnchecked(open);
    return open.length;
  }

  /**
   * As transfers' (domain/open-transfers.ts): conversions overdue in a shared store that no live
   * instance is telling.
   */
  async adoptOverdue(overdueByMs: number): Promise<void> {
    const overdue =
      (await this.store.overdue?.('fx', this.now() - overdueByMs, OVERDUE_PER_PASS)) ?? [];
    const unwatched = overdue.filter((id) => this.open.get(id) === undefined);
    if (unwatched.length > 0) this.watchUnchecked(await this.store.fxTransfers(unwatched));
  }

  /** Watched from the next sweep on, which reads the ledger for each: their records may lag it. */
  private watchUnchecked(records: readonly (FxTransferRecord | undefined)[]): void {
    for (const record of records) {
      if (
        record?.state !== TransferInternalState.RESERVED &&
        record?.state !== RECEIVED_FULFIL_DEPENDENT
      )
        continue;
      this.close(record);
      this.open.setUnchecked(record.commitRequestId, record);
    }
  }

  /** POST /fxTransfers (initiating FSP). */
  async prepare(
    source: string | undefined,
    request: FxPrepareRequest,
    origin?: string,
  ): Promise<FxResult> {
    const id = canonicalTransferId(request.commitRequestId);
    const payloadHash = hashOf(request);
    return this.serial.run(id, async () => {
      const known = await this.find(id);
      if (known !== undefined) return this.duplicatePrepare(known, payloadHash, origin);
      const [initiating, fxp] = await Promise.all([
        this.store.participant(request.initiatingFsp),
        this.store.participant(request.counterPartyFsp),
      ]);
      const expiresAt = validateFxPrepare(source, request, initiating, fxp, this.now());
      const determiningTransferId = canonicalTransferId(request.determiningTransferId!);
      return this.determining.run(determiningTransferId, () =>
        this.reserve(request, id, determiningTransferId, expiresAt, payloadHash, origin),
      );
    });
  }

  /**
   * The conversion's reservation and record, under its own and its determining transfer's locks.
   */
  private async reserve(
    request: FxPrepareRequest,
    id: string,
    determiningTransferId: string,
    expiresAt: number,
    payloadHash: string,
    origin: string | undefined,
  ): Promise<FxResult> {
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
      sourceAmount: request.sourceAmount,
      targetAmount: request.targetAmount,
      condition: request.condition,
      expiration: request.expiration!,
      payloadHash,
      state: TransferInternalState.RECEIVED_PREPARE,
      createdAt: new Date(this.now()).toISOString(),
      ...(request.extensionList === undefined ? {} : { extensionList: request.extensionList }),
      ...(origin === undefined ? {} : { prepareOrigin: origin }),
    };
    const timeoutSeconds = Math.min(
      MAX_TIMEOUT_SECONDS,
      Math.ceil((expiresAt - this.now()) / 1000),
    );
    const outcome = await this.execute({
      kind: 'prepare',
      ...sourceReservation(record),
      timeoutSeconds,
      payloadHash: hashToU128(payloadHash),
    });
    if (outcome.ok || outcome.refusal === 'exists') {
      this.fault('fx-prepare.after-ledger');
      const [state] = outcome.ok
        ? ['reserved' as const]
        : await this.ledger.transferStates([fxLedgerId(id)]);
      const saved = await this.save({
        ...record,
        state: internalStateOf(state!) ?? TransferInternalState.RESERVED,
      });
      this.fault('fx-prepare.after-metadata');
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
      await this.finalWrites.writeRefusal({
        ...record,
        state: TransferInternalState.ABORTED_REJECTED,
        errorInformation: error.toErrorInformation(),
      });
      throw error;
    }
    // Nothing reserved and nothing recorded: the transfer is free again, as the check of records
    // has it on
    // one instance. Not after `modified`: the ledger holds this id's reservation of another
    // payload, which
    // may be the claim's own (its record lost to a crash).
    if (outcome.refusal !== 'modified')
      await this.store.releaseDetermining?.(determiningTransferId, id);
    throw refusalError(outcome.refusal, id);
  }

  private async duplicatePrepare(
    known: FxTransferRecord,
    payloadHash: string,
    origin: string | undefined,
  ): Promise<FxResult> {
    if (known.payloadHash !== payloadHash)
      throw fspiopError(
        FspiopCode.MODIFIED_REQUEST,
        `fxTransfer ${known.commitRequestId} was prepared with another payload`,
      );
    const record = await this.reconciled(known);
    const sameMessage = origin !== undefined && record.prepareOrigin === origin;
    // The same message refused by the ledger the first time: so is this one.
    if (
      sameMessage &&
      record.state === TransferInternalState.ABORTED_REJECTED &&
      record.errorInformation !== undefined &&
      record.finishHash === undefined
    ) {
      throw new FspiopError(
        record.errorInformation.errorCode as FspiopCode,
        record.errorInformation.errorDescription.replace(/^[^-]*- /, ''),
      );
    }
    return { record, duplicate: true, redelivery: sameMessage && !isFinalFx(record.state) };
  }

  /**
   * PUT /fxTransfers/{id} (the FXP). RESERVED, and COMMITTED too (the Hub commits with the
   * dependent transfer), record the FXP's agreement and move nothing; ABORTED withdraws.
   */
  async fulfil(
    commitRequestId: string,
    source: string | undefined,
    destination: string | undefined,
    request: FxFulfilRequest,
    origin?: string,
  ): Promise<FxResult> {
    return this.finish(
      commitRequestId,
      source,
      destination,
      'fulfil',
      request,
      origin,
      async (record, finishHash) => {
        if (request.conversionState === 'ABORTED')
          return this.withdraw(
            record,
            finishHash,
            origin,
            TransferInternalState.ABORTED_REJECTED,
            undefined,
          );
        if (request.conversionState === 'RECEIVED')
          throw validationError('conversionState RECEIVED is not an answer to an fxTransfer');
        // As central-ledger: the fulfilment is checked when present.
        if (
          request.fulfilment !== undefined &&
          !validFulfilment(request.fulfilment, record.condition)
        ) {
          const error = new TransferAbortedError('invalid fulfilment');
          await this.withdraw(
            record,
            finishHash,
            origin,
            TransferInternalState.ABORTED_REJECTED,
            error.toErrorInformation(),
          );
          throw error;
        }
        const saved = await this.save({
          ...record,
          state: RECEIVED_FULFIL_DEPENDENT,
          finishHash,
          completedTimestamp: request.completedTimestamp ?? new Date(this.now()).toISOString(),
          ...(request.fulfilment === undefined ? {} : { fulfilment: request.fulfilment }),
          ...(request.extensionList === undefined ? {} : { extensionList: request.extensionList }),
          ...(origin === undefined ? {} : { finishOrigin: origin }),
        });
        return { record: saved, duplicate: false, redelivery: false };
      },
    );
  }

  /**
   * PUT /fxTransfers/{id}/error (the FXP withdraws), also after its dependent transfer was
   * prepared.
   */
  async error(
    commitRequestId: string,
    source: string | undefined,
    destination: string | undefined,
    body: { errorInformation: ErrorInformation },
    origin?: string,
  ): Promise<FxResult> {
    return this.finish(
      commitRequestId,
      source,
      destination,
      'error',
      body,
      origin,
      (record, finishHash) =>
        this.withdraw(
          record,
          finishHash,
          origin,
          TransferInternalState.ABORTED_ERROR,
          body.errorInformation,
        ),
    );
  }

  /** A conversion's record whoever asks (the Kafka mode's refusals); 3208 when unknown. */
  async recordOf(commitRequestId: string): Promise<FxTransferRecord> {
    const record = await this.find(canonicalTransferId(commitRequestId));
    if (record === undefined) throw notFound(commitRequestId);
    return record;
  }

  /** GET /fxTransfers/{id}: either party; unknown 3208, anyone else 3000 (central-ledger). */
  async get(commitRequestId: string, source: string | undefined): Promise<FxTransferRecord> {
    const record = await this.find(canonicalTransferId(commitRequestId));
    if (record === undefined) throw notFound(commitRequestId);
    if (source !== record.initiatingFsp && source !== record.counterPartyFsp)
      throw fspiopError(FspiopCode.GENERIC_CLIENT, 'requester is not a party to this fxTransfer');
    return this.reconciled(record, 'outside its turn');
  }

  /**
   * The sweep (shared reading with transfers', domain/expiry-sweep.ts): conversions the ledger
   * released by itself are told to both parties by `notify`, then recorded EXPIRED_RESERVED (a
   * failed record is retried by the next sweep without telling again: FinalWrites); a crash
   * between the two tells again with the same event id, never a third time. Also a
   * conversion the FXP agreed to whose transfer never came. Those watched longest are asked about
   * too (domain/watchlist.ts): the ones another instance finished are let go of. Never two sweeps
   * at once (OneSweepAtATime).
   */
  expireDue(
    notify: (expired: FxTransferRecord[]) => Promise<void> = async () => {},
  ): Promise<FxTransferRecord[]> {
    return this.sweeps.run(() => this.sweep(notify));
  }

  private async sweep(
    notify: (expired: FxTransferRecord[]) => Promise<void>,
  ): Promise<FxTransferRecord[]> {
    await this.finalWrites.write();
    const now = this.now();
    const { due, rechecked } = this.open.select(now);
    if (due.length === 0 && rechecked.length === 0) return [];
    const reading = await readDue(this.ledger, [...due, ...rechecked], (r) =>
      fxLedgerId(r.commitRequestId),
    );
    const isDue = new Set(due);
    const finishedElsewhere = new Set(
      reading.finished.filter((f) => !isDue.has(f.record)).map((f) => f.record),
    );
    await this.letGoOfFinishedElsewhere([...finishedElsewhere], now);
    const released = new Set(reading.expired);
    for (const record of rechecked)
      if (!released.has(record) && !finishedElsewhere.has(record))
        this.open.watchAgain(record.commitRequestId, now);
    const claim = await claimExpired(this.store, 'fx', reading.expired, (r) => r.commitRequestId);
    for (const record of claim.recorded) this.forget(record);
    // Due and finished: a finish whose record a crash lost, recorded as the ledger has it.
    const repaired = reading.finished.filter((f) => isDue.has(f.record));
    if (repaired.length > 0)
      await this.store.saveFxTransfers(
        repaired.map(({ record, state }) =>
          this.close({
            ...record,
            state:
              state === TransferInternalState.ABORTED_REJECTED
                ? TransferInternalState.ABORTED_ERROR
                : state,
          }),
        ),
      );
    for (const record of due) this.open.checked(record.commitRequestId);
    if (claim.mine.length === 0) return [];
    const expired = claim.mine.map((record) => ({ ...record, ...expiredChange() }));
    await notify(expired);
    this.fault('fx-expiry.after-notify');
    for (const record of expired) this.forget(record);
    await this.finalWrites.write(expired);
    return expired;
  }

  /**
   * Finished in the ledger before their expiration: by another instance (the dependent transfer's
   * fulfil went there), or by a finish under way here. Let go of once the store has them final;
   * never written from here, where a finish under way may be about to write its own record (one
   * whose record a crash lost is repaired when it falls due, as before).
   */
  private async letGoOfFinishedElsewhere(
    finished: readonly FxTransferRecord[],
    now: number,
  ): Promise<void> {
    if (finished.length === 0) return;
    const stored = await this.store.fxTransfers(finished.map((r) => r.commitRequestId));
    for (const [i, record] of finished.entries()) {
      const final = stored[i];
      if (final !== undefined && isFinalFx(final.state)) this.forget(record);
      else this.open.watchAgain(record.commitRequestId, now);
    }
  }

  // --- TransferDependencies: the dependent transfer's hooks -------------------------------------

  async forPrepare(transferId: string): Promise<Dependency | undefined> {
    const openId = this.openByTransfer.get(transferId);
    const open = openId === undefined ? undefined : this.open.get(openId);
    const record =
      open !== undefined
        ? await this.fresher(open)
        : (await this.store.fxTransfersDetermining([transferId]))[0];
    if (record === undefined) return undefined;
    if (record.state !== RECEIVED_FULFIL_DEPENDENT)
      throw validationError('Related FX Transfer is not fulfilled');
    return this.dependencyOf(record);
  }

  async of(transfer: TransferRecord): Promise<Dependency> {
    const record = await this.find(transfer.dependsOn!);
    if (record === undefined)
      throw new Error(
        `transfer ${transfer.transferId} depends on the unknown fxTransfer ${transfer.dependsOn}`,
      );
    return this.dependencyOf(record);
  }

  async settled(
    transfer: TransferRecord,
    outcome: 'committed' | 'aborted',
  ): Promise<FxTransferRecord> {
    const record = await this.find(transfer.dependsOn!);
    if (record === undefined)
      throw new Error(
        `transfer ${transfer.transferId} depends on the unknown fxTransfer ${transfer.dependsOn}`,
      );
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

  private dependencyOf(record: FxTransferRecord): Dependency {
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

  // --- internals ---------------------------------------------------------------------------------

  /** The checks the FXP's PUT and PUT …/error share, serialised per conversion. */
  private finish(
    commitRequestId: string,
    source: string | undefined,
    destination: string | undefined,
    kind: 'fulfil' | 'error',
    body: unknown,
    origin: string | undefined,
    change: (record: FxTransferRecord, finishHash: string) => Promise<FxResult>,
  ): Promise<FxResult> {
    const id = canonicalTransferId(commitRequestId);
    const finishHash = `${kind}:${hashOf(body)}`;
    // Checked again against another instance's record of a withdrawal the ledger has
    // (withdrawnElsewhere).
    const checked = async (record: FxTransferRecord): Promise<FxResult> => {
      if (record.finishHash?.startsWith(`${kind}:`)) {
        if (record.finishHash !== finishHash)
          throw fspiopError(
            FspiopCode.MODIFIED_REQUEST,
            `fxTransfer ${id} was already answered with another payload`,
          );
        return repeatedFinish(record, origin);
      }
      const wrongParty =
        source !== record.counterPartyFsp
          ? 'FSPIOP-Source header does not match the counter party FSP'
          : destination !== undefined && destination !== record.initiatingFsp
            ? 'FSPIOP-Destination header does not match the initiating FSP'
            : undefined;
      if (wrongParty !== undefined) {
        if (record.state !== TransferInternalState.RESERVED) throw validationError(wrongParty);
        // As central-ledger: the conversion is aborted and the initiating FSP told; recorded as
        // this finish's, so its redelivery is told the same.
        const error = new TransferAbortedError(wrongParty);
        await this.withdraw(
          record,
          finishHash,
          origin,
          TransferInternalState.ABORTED_REJECTED,
          error.toErrorInformation(),
        );
        throw error;
      }
      const open =
        record.state === TransferInternalState.RESERVED ||
        (kind === 'error' && record.state === RECEIVED_FULFIL_DEPENDENT);
      if (open && Date.parse(record.expiration) <= this.now())
        throw fspiopError(FspiopCode.TRANSFER_EXPIRED);
      if (record.state === TransferInternalState.EXPIRED_RESERVED)
        throw fspiopError(FspiopCode.TRANSFER_EXPIRED);
      // A withdrawal the ledger made whose own record a crash lost (repaired from the ledger):
      // recorded now.
      const lost = kind === 'error' && withdrawalLost(record);
      if (!open && !lost) throw validationError(`fxTransfer is ${record.state}, not RESERVED`);
      return change(record, finishHash);
    };
    return this.serial.run(id, async () => {
      const found = await this.find(id);
      if (found === undefined) throw notFound(commitRequestId);
      const record = await this.reconciled(found);
      try {
        // Its own finish already recorded (a resend of the FXP's agreement to a conversion since
        // aborted): nothing to wait for.
        const waits = withdrawalLost(record) && record.finishHash !== finishHash;
        return await checked(waits ? ((await this.withdrawnElsewhere(record)) ?? record) : record);
      } catch (error) {
        if (error instanceof FinishedElsewhere) return checked(error.record as FxTransferRecord);
        throw error;
      }
    });
  }

  /**
   * The record of a withdrawal the ledger has and the record read lacks: another instance's, maybe
   * on its way to the store (domain/finish-elsewhere.ts); undefined once none can land any more (a
   * crash lost it). Repairs from the ledger and the dependent transfer's settling keep the finish
   * hash the conversion had (none, or the FXP's agreement's): only another finish's counts.
   */
  private async withdrawnElsewhere(
    record: FxTransferRecord,
  ): Promise<FxTransferRecord | undefined> {
    const id = record.commitRequestId;
    const stored = await this.transfers.elsewhere.recorded(fxLedgerId(id), async () => {
      const [stored] = await this.store.fxTransfers([id]);
      return stored !== undefined &&
        isFinalFx(stored.state) &&
        stored.finishHash !== record.finishHash
        ? stored
        : undefined;
    });
    return stored === undefined ? undefined : this.close(stored);
  }

  /**
   * Voids the conversion — with its dependent transfer in one chain when that was prepared and
   * is still reserved — and records the abort. A conversion whose transfer committed first is
   * COMMITTED: 3100.
   */
  private async withdraw(
    record: FxTransferRecord,
    finishHash: string | undefined,
    origin: string | undefined,
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
      );
    }
    if (transfer === undefined && !inLedger) {
      const outcome = await this.execute({ kind: 'abort', ...sourceReservation(record) });
      if (!outcome.ok && outcome.refusal !== 'exists') {
        if (outcome.refusal === 'expired') throw fspiopError(FspiopCode.TRANSFER_EXPIRED);
        if (outcome.refusal === 'already_committed') {
          await this.save({ ...record, state: TransferInternalState.COMMITTED });
          throw validationError('fxTransfer is COMMITTED, not RESERVED');
        }
        throw refusalError(outcome.refusal, record.commitRequestId);
      }
      // The ledger had this withdrawal: another instance's, whose record wins, or one a crash lost
      // (recorded now).
      const stored = outcome.ok ? undefined : await this.withdrawnElsewhere(record);
      if (stored !== undefined)
        throw new FinishedElsewhere(stored, `fxTransfer ${record.commitRequestId}`);
    }
    this.fault('fx-abort.after-ledger');
    const saved = await this.save({
      ...record,
      state,
      completedTimestamp: new Date(this.now()).toISOString(),
      ...(finishHash === undefined ? {} : { finishHash }),
      ...(origin === undefined ? {} : { finishOrigin: origin }),
      ...(errorInformation === undefined ? {} : { errorInformation }),
    });
    return {
      record: saved,
      duplicate: false,
      redelivery: false,
      ...(transfer === undefined ? {} : { transfer }),
    };
  }

  /**
   * A record not final may lag the ledger (another instance, a crash): the ledger's state wins.
   * Prepares and finishes call this in the conversion's turn, holding a record read in it; a GET
   * reads outside it, so its repair takes the turn and writes only where the store still lacks a
   * final record. Else a finish of this instance that the ledger already shows, recorded while the
   * GET asked the ledger, would be overwritten from the GET's older read: its error, fulfilment and
   * finish hash gone, and a retry of that finish recorded and answered anew.
   */
  private async reconciled(
    record: FxTransferRecord,
    read: 'in its turn' | 'outside its turn' = 'in its turn',
  ): Promise<FxTransferRecord> {
    if (isFinalFx(record.state)) return record;
    const [ledgerState] = await this.ledger.transferStates([fxLedgerId(record.commitRequestId)]);
    const state = internalStateOf(ledgerState!);
    if (state === undefined || state === TransferInternalState.RESERVED) return record;
    // Released by the ledger's timeout: reported expired, recorded (and told) by the sweep.
    if (state === TransferInternalState.EXPIRED_RESERVED) return { ...record, ...expiredChange() };
    const repaired = {
      ...record,
      state:
        state === TransferInternalState.ABORTED_REJECTED
          ? TransferInternalState.ABORTED_ERROR
          : state,
    };
    if (read === 'in its turn') return this.save(repaired);
    return this.serial.run(record.commitRequestId, async () => {
      const [stored] = await this.store.fxTransfers([record.commitRequestId]);
      if (stored !== undefined && isFinalFx(stored.state)) return this.close(stored);
      // From the record as stored now: the FXP's answer recorded since the GET's read stays.
      return this.save({ ...(stored ?? record), state: repaired.state });
    });
  }

  private async find(commitRequestId: string): Promise<FxTransferRecord | undefined> {
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
    if (
      stored === undefined ||
      !(stored.state === RECEIVED_FULFIL_DEPENDENT || isFinalFx(stored.state))
    )
      return open;
    this.close(stored);
    return stored;
  }

  /**
   * Stored first, then the open set follows: a write that fails leaves the open copy as it was, so
   * the retry makes the change again and writes it (an open copy ahead of the store would answer
   * the retry as a duplicate, never written).
   */
  private async save(record: FxTransferRecord): Promise<FxTransferRecord> {
    await this.store.saveFxTransfers([record]);
    return this.close(record);
  }

  /** Keeps the open set in step with a record about to be saved. */
  private close(record: FxTransferRecord): FxTransferRecord {
    if (isFinalFx(record.state) || record.state === TransferInternalState.RECEIVED_PREPARE) {
      this.forget(record);
    } else {
      this.open.set(record.commitRequestId, record);
      this.openByTransfer.set(record.determiningTransferId, record.commitRequestId);
    }
    return record;
  }

  /** Out of the open set: final, or recorded final by another instance. */
  private forget(record: FxTransferRecord): void {
    this.open.delete(record.commitRequestId);
    this.openByTransfer.delete(record.determiningTransferId);
  }

  private async execute(command: LedgerCommand): Promise<LedgerOutcome> {
    const [outcome] = await this.ledger.execute([command]);
    return outcome!;
  }
}
