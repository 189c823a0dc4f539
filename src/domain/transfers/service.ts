/**
 * The FSPIOP transfer flow: prepare, fulfil (commit / reserve / reject), error, get and expiry.
 * Validation follows central-ledger's order; the money moves in exactly one ledger command per
 * step (see ledger/account-model.ts), so no lock protects any amount here.
 */
import { LedgerUnavailableError } from '../../ports/ledger';
import type {
  Ledger,
  LedgerCommand,
  LedgerDeadline,
  LedgerOutcome,
  LedgerRefusal,
  LedgerTransferState,
} from '../../ports/ledger';
import { bounded } from '../../util/batch-queue';
import { noFault, type Fault, type FaultPoint } from '../../util/fault';
import { validFulfilment } from '../shared/condition';
import type { Warn } from '../open-records/expiry-sweep';
import type { Dependency, TransferDependencies } from './dependencies';
import {
  FspiopCode,
  FspiopError,
  TransferAbortedError,
  fspiopError,
  validationError,
} from '../shared/errors';
import type { ErrorInformation } from '../../ports/metadata';
import { FinishElsewhere, FinishedElsewhere } from '../open-records/finish-elsewhere';
import { hashOf } from '../shared/hashing';
import { canonicalTransferId, transferIdToU128 } from '../shared/ids';
import { KeyedMutex } from '../../util/keyed-mutex';
import { OpenRecords } from '../open-records/open-records';
import type { FundsRecord, MetadataStore, Participant, TransferRecord } from '../../ports/metadata';
import { formatAmount, parseAmount, requireCurrency } from '../shared/money';
import { TransferInternalState, apiStateOf, isFinal } from '../../ports/states';
import {
  finishLost,
  internalStateOf,
  placedCommit,
  identifiedPrepare,
  checkedReservation,
  prepareChecks,
  prepareCommand,
  recoveredReservation,
  type IdentifiedPrepare,
  type PreparedReservation,
  refusalError,
  refuseRepeatedRefusal,
  repeatedFinish,
  type CommitPlacement,
  type Delivery,
  type FulfilRequest,
  type PrepareRequest,
  type TransferResult,
} from './rules';

// The request and answer shapes live with the stateless rules; the flow's callers import them from
// here.
export type {
  Delivery,
  FulfilRequest,
  PrepareRequest,
  TransferResult,
  TransferView,
} from './rules';
export { finishView, viewOf } from './rules';

/**
 * What identifies one fulfil or error request: its body's hash (by kind) and the message it came
 * in; until when it may wait for another instance's record of it (FinishElsewhere.deadline), and
 * for the ledger, all of its calls together.
 */
interface Finish {
  hash: string;
  origin: string | undefined;
  deadline: number;
  ledgerDeadline: LedgerDeadline;
}

/** A fulfil or error as it came. */
interface FinishRequest {
  transferId: string;
  delivery: Delivery;
  kind: 'fulfil' | 'error';
  body: unknown;
}

/** A prepare under way: its payload's hash, and its answer once the ledger's is recorded. */
interface Preparing {
  payloadHash: string;
  answer(): Promise<TransferResult>;
}

/** A prepare of a line (prepareLine) that goes to the ledger with the line. */
interface LineMember {
  prepare: IdentifiedPrepare;
  /** Its place in the line as asked. */
  index: number;
  record: TransferRecord;
  command: Extract<LedgerCommand, { kind: 'prepare' }>;
  entry: Preparing;
}

/** A commit of a line (fulfilLine) that goes to the ledger with the line. */
interface LineCommit {
  index: number;
  record: TransferRecord;
  request: FulfilRequest;
  finish: Finish;
}

/** A line's dependency asked for and refused: that prepare goes its own way. */
const REFUSED = Symbol('refused');

export interface TransferServiceOptions {
  /** Settlement windows; without, commits land in none (unit tests of the transfer flow). */
  placement?: CommitPlacement;
  now?: () => number;
  /** Tests only: where the process may be killed (util/fault.ts). */
  fault?: Fault;
  /**
   * Bound on a fulfil or error request that waits behind another of the same transfer (a
   * client's retry while its first attempt is still at the ledger): the ledger's own timeout,
   * so no answer takes longer than LEDGER_TIMEOUT_MS.
   */
  requestTimeoutMs?: number;
  /**
   * How long a fulfil or error request (an FXP's withdrawal with its dependent transfer's abort)
   * waits in all for another instance's record of a finish the ledger has
   * (open-records/finish-elsewhere.ts); then, undecided, it fails with FinishPendingError, to be
   * asked again. Unset: until that record can no longer land.
   */
  finishWaitMs?: number;
  /**
   * Where final records dropped unwritten during a long store outage are reported (FinalWrites).
   */
  warn?: Warn;
  /**
   * Transfers that spend another's money (FX conversions, src/domain/fx) are resolved through
   * these hooks; without, none can be prepared.
   */
  dependencies?: TransferDependencies;
}

export class TransferService {
  private readonly open: OpenRecords<TransferRecord>;
  /** Prepares still waiting for the ledger: an identical request awaits the same answer. */
  private readonly preparing = new Map<string, Preparing>();
  private readonly finishing = new KeyedMutex();
  /** Also FxService's, for its conversions' withdrawals: the same store, ledger and bound. */
  readonly elsewhere: FinishElsewhere;
  private readonly now: () => number;
  private readonly fault: Fault;
  private readonly requestTimeoutMs: number;
  private readonly dependencies: TransferDependencies | undefined;
  private readonly placement: CommitPlacement | undefined;

  constructor(
    private readonly store: MetadataStore,
    private readonly ledger: Ledger,
    options: TransferServiceOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.fault = options.fault ?? noFault;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 5000;
    this.placement = options.placement;
    this.dependencies = options.dependencies;
    this.open = new OpenRecords<TransferRecord>(
      {
        kind: 'transfer',
        idOf: (record) => record.transferId,
        ledgerIdOf: transferIdToU128,
        stateOf: internalStateOf,
        loadOpen: () => store.openTransfers(),
        read: (ids) => store.transfers(ids),
        save: (records) => store.saveTransfers(records),
        faults: { afterNotify: 'expiry.after-notify', afterRecord: 'expiry.after-metadata' },
        repairsBeforeDue: true,
      },
      {
        store,
        ledger,
        fault: this.fault,
        now: this.now,
        turns: this.finishing,
        warn: options.warn,
      },
    );
    this.elsewhere = new FinishElsewhere(store, ledger, {
      ledgerTimeoutMs: this.requestTimeoutMs,
      ...(options.finishWaitMs === undefined ? {} : { waitAtMostMs: options.finishWaitMs }),
      now: this.now,
    });
  }

  /**
   * A prepare in one pass: identified (parse), checked, its ledger command built, executed and
   * recorded (prepareOnce, reserve). An identical prepare arriving while one is at the ledger
   * waits for its answer.
   * @param origin the delivered message this request came in (Kafka), to recognise its redelivery.
   */
  async prepare(
    source: string | undefined,
    request: PrepareRequest,
    origin?: string,
  ): Promise<TransferResult> {
    const prepare = identifiedPrepare(request, origin, this.ledgerDeadline());
    const { transferId, payloadHash } = prepare;
    const pending = this.preparing.get(transferId);
    if (pending !== undefined) {
      const first = await pending.answer().then(
        (result) => ({ record: result.record }),
        (error: unknown) => ({ error }),
      );
      if ('record' in first) return this.duplicatePrepare(first.record, prepare);
      // An identical prepare refused while this one waited: the same refusal, whatever it was.
      if (pending.payloadHash === payloadHash) throw first.error;
      // Another payload that failed: this one goes its own way, and the ledger tells which came
      // first.
    }
    // Registered before anything is awaited, so that an identical prepare arriving meanwhile waits
    // for this answer.
    const attempt = this.prepareOnce(source, prepare);
    const entry = { payloadHash, answer: () => attempt };
    this.preparing.set(transferId, entry);
    try {
      return await attempt;
    } finally {
      if (this.preparing.get(transferId) === entry) this.preparing.delete(transferId);
    }
  }

  /**
   * A line of prepares (a bulk's members) in one pass, each as prepare() would take it: checked in
   * turn against participants read once for the line; those new and accepted handed to the ledger
   * in one call, in the line's order (where the payer's liquidity does not cover them all, the
   * first-listed are reserved: the ledger applies a call's commands in order), and their
   * reservations recorded in one write. Any other (an id known or still at the ledger, a refusal
   * before the ledger, a refusal by it) goes prepare()'s own way from where it stands. Answers in
   * the line's order: each transfer's result or its refusal (an FspiopError); any other failure
   * rejects the line once every prepare of it has settled.
   */
  async prepareLine(
    source: string | undefined,
    requests: readonly PrepareRequest[],
    origin?: string,
  ): Promise<(TransferResult | FspiopError)[]> {
    const ledgerDeadline = this.ledgerDeadline();
    const prepares = requests.map((request) => identifiedPrepare(request, origin, ledgerDeadline));
    const [dependencies, participants] = await Promise.all([
      this.lineDependencies(prepares),
      this.participantsOf(requests),
    ]);
    const answers: Promise<TransferResult>[] = new Array(prepares.length);
    const line: LineMember[] = [];
    // What the line's ledger call will answer, for a prepare of the same id that waits for it.
    let lineAnswered!: (reserved: Promise<Promise<TransferResult>[]>) => void;
    const answeredLater = new Promise<Promise<TransferResult>[]>((resolve) => {
      lineAnswered = resolve;
    });
    answeredLater.catch(() => undefined);
    prepares.forEach((prepare, index) => {
      const dependency = dependencies[index];
      const reservation = this.lineReservation(prepare, { source, dependency, participants });
      if (reservation === undefined) {
        answers[index] = this.prepare(source, requests[index]!, origin);
        return;
      }
      const k = line.length;
      const member: LineMember = {
        prepare,
        index,
        record: this.receivedRecord(
          prepare,
          (dependency as Dependency | undefined)?.commitRequestId,
        ),
        command: prepareCommand(prepare, reservation),
        entry: {
          payloadHash: prepare.payloadHash,
          answer: () => answeredLater.then((results) => results[k]!),
        },
      };
      // Registered at once: a later prepare of the same id, in this line or not, waits for it.
      this.preparing.set(prepare.transferId, member.entry);
      line.push(member);
    });
    const reserved = this.reserveLine(line);
    lineAnswered(reserved);
    line.forEach((member, k) => {
      answers[member.index] = reserved.then((results) => results[k]!);
    });
    const settled = await Promise.allSettled(answers);
    for (const { prepare, entry } of line)
      if (this.preparing.get(prepare.transferId) === entry)
        this.preparing.delete(prepare.transferId);
    return refusalsOrResults(settled);
  }

  /** Each prepare's dependency (FX), or REFUSED where asking refused it; none without hooks. */
  private async lineDependencies(
    prepares: readonly IdentifiedPrepare[],
  ): Promise<(Dependency | typeof REFUSED | undefined)[]> {
    const hooks = this.dependencies;
    if (hooks === undefined) return [];
    return Promise.all(
      prepares.map((prepare) =>
        hooks.forPrepare(prepare.transferId).catch((error: unknown): typeof REFUSED => {
          if (error instanceof FspiopError) return REFUSED;
          throw error;
        }),
      ),
    );
  }

  /** The participants a line's prepares name, each read once. */
  private async participantsOf(
    requests: readonly PrepareRequest[],
  ): Promise<Map<string, Participant | undefined>> {
    const names = new Set<string>();
    for (const request of requests) names.add(request.payerFsp).add(request.payeeFsp);
    const found = await Promise.all([...names].map((name) => this.store.participant(name)));
    return new Map([...names].map((name, i) => [name, found[i]]));
  }

  /**
   * A prepare of a line checked as prepareOnce checks it, its reservation; undefined where it goes
   * prepare()'s own way (its id known or under way, its dependency or its checks refused).
   */
  private lineReservation(
    prepare: IdentifiedPrepare,
    checking: {
      source: string | undefined;
      dependency: Dependency | typeof REFUSED | undefined;
      participants: Map<string, Participant | undefined>;
    },
  ): PreparedReservation | undefined {
    const { transferId, request } = prepare;
    const { source, dependency, participants } = checking;
    if (dependency === REFUSED || this.preparing.has(transferId)) return undefined;
    if (this.open.get(transferId) !== undefined) return undefined;
    try {
      return checkedReservation({
        now: this.now,
        source,
        request,
        dependency,
        payer: participants.get(request.payerFsp),
        payee: participants.get(request.payeeFsp),
      });
    } catch (error) {
      if (error instanceof FspiopError) return undefined;
      throw error;
    }
  }

  /**
   * A line's reservations in one ledger call; those the ledger made recorded in one write, any
   * other outcome as reserve records it.
   */
  private async reserveLine(line: readonly LineMember[]): Promise<Promise<TransferResult>[]> {
    if (line.length === 0) return [];
    const outcomes = await this.ledger.execute(line.map((member) => member.command));
    const made = line.filter((_, k) => outcomes[k]!.ok);
    if (made.length > 0) {
      this.fault('prepare.after-ledger');
      for (const { record } of made) record.state = TransferInternalState.RESERVED;
      // Watched only once stored, as reserve's.
      await this.store.saveTransfers(made.map((member) => member.record));
      for (const { record } of made) this.open.follow(record);
      this.fault('prepare.after-metadata');
    }
    return line.map(({ prepare, record, command }, k) => {
      const outcome = outcomes[k]!;
      if (outcome.ok) return Promise.resolve({ record, duplicate: false, redelivery: false });
      return this.recordRefusal(prepare, { record, command, outcome });
    });
  }

  /**
   * Most prepares are new, and the ledger knows every id it has seen: the metadata is read only
   * when the ledger says the id is not new, or when the request is refused before reaching the
   * ledger (a duplicate is answered as a duplicate whatever else changed since).
   */
  private async prepareOnce(
    source: string | undefined,
    prepare: IdentifiedPrepare,
  ): Promise<TransferResult> {
    const open = this.open.get(prepare.transferId);
    if (open !== undefined) return this.duplicatePrepare(open, prepare);
    let dependency: Dependency | undefined;
    let reservation: PreparedReservation;
    try {
      dependency = await this.dependencies?.forPrepare(prepare.transferId);
      reservation = await prepareChecks({
        store: this.store,
        now: this.now,
        source,
        request: prepare.request,
        dependency,
      });
    } catch (refusal) {
      return this.refusedBeforeLedger(prepare, { refusal, dependency });
    }
    const command = prepareCommand(prepare, reservation);
    return this.reserve(prepare, { command, dependsOn: dependency?.commitRequestId });
  }

  /**
   * A prepare refused before the ledger (by now past its expiration, say) is still answered as the
   * transfer its id names, if there is one: the store's record, or, where a crash came between the
   * ledger's write and the metadata's, the ledger's. The ledger's word wins: the same payload is
   * that transfer, answered as such and written to the metadata now; another payload under its id
   * is 3106. The ledger creates nothing here: the id exists, so the command can only be `exists`
   * or `modified`. A new id: the refusal.
   */
  private async refusedBeforeLedger(
    prepare: IdentifiedPrepare,
    refused: { refusal: unknown; dependency: Dependency | undefined },
  ): Promise<TransferResult> {
    const { transferId } = prepare;
    const known = await this.stored(transferId);
    if (known !== undefined) return this.duplicatePrepare(known, prepare);
    const [state] = await this.ledger.transferStates(
      [transferIdToU128(transferId)],
      prepare.ledgerDeadline,
    );
    if (state === 'unknown') throw refused.refusal;
    const reservation = recoveredReservation(prepare.request, refused.dependency);
    // Unreadable amounts could never have been reserved: the id holds another transfer.
    if (reservation === undefined)
      throw fspiopError(
        FspiopCode.MODIFIED_REQUEST,
        `transfer ${transferId} was prepared with another payload`,
      );
    const command = prepareCommand(prepare, reservation);
    return this.reserve(prepare, { command, dependsOn: refused.dependency?.commitRequestId });
  }

  /** A prepare of a known id: the same transfer's state as the ledger has it, or 3106. */
  private async duplicatePrepare(
    known: TransferRecord,
    prepare: IdentifiedPrepare,
  ): Promise<TransferResult> {
    const { transferId, origin } = prepare;
    if (known.payloadHash !== prepare.payloadHash)
      throw fspiopError(
        FspiopCode.MODIFIED_REQUEST,
        `transfer ${transferId} was prepared with another payload`,
      );
    const previous = await this.open.reconciled(known, 'outside its turn', prepare.ledgerDeadline);
    refuseRepeatedRefusal(previous, origin);
    const sameMessage = origin !== undefined && previous.prepareOrigin === origin;
    // Answered as the first time only while the transfer is still open: once final, its payee has
    // answered the first forward (or it expired, and the forward no longer matters), and sending it
    // again would only draw a second fulfil. A plain duplicate then: its current state.
    return {
      record: previous,
      duplicate: true,
      redelivery: sameMessage && !isFinal(previous.state),
    };
  }

  /**
   * Executes a prepare's command and records what the ledger did: the reservation, a transfer the
   * ledger already had (written now), or its refusal.
   */
  private async reserve(
    prepare: IdentifiedPrepare,
    reserving: {
      command: Extract<LedgerCommand, { kind: 'prepare' }>;
      dependsOn: string | undefined;
    },
  ): Promise<TransferResult> {
    const { command, dependsOn } = reserving;
    const record = this.receivedRecord(prepare, dependsOn);
    const outcome = await this.execute(command, prepare.ledgerDeadline);
    if (!outcome.ok) return this.recordRefusal(prepare, { record, command, outcome });
    this.fault('prepare.after-ledger');
    record.state = TransferInternalState.RESERVED;
    // Watched only once stored: a retry of a prepare whose write failed then finds no open copy
    // to answer from, reaches the ledger (`exists`) and writes the record. Its payee learns of
    // it from this answer, so no fulfil can come while the write is under way.
    await this.open.save(record);
    this.fault('prepare.after-metadata');
    return { record, duplicate: false, redelivery: false };
  }

  /** A prepare's record before the ledger's answer. */
  private receivedRecord(
    prepare: IdentifiedPrepare,
    dependsOn: string | undefined,
  ): TransferRecord {
    const { request, payloadHash, origin } = prepare;
    const currency = requireCurrency(request.amount.currency);
    return {
      transferId: request.transferId,
      payerFsp: request.payerFsp,
      payeeFsp: request.payeeFsp,
      amount: formatAmount(parseAmount(request.amount.amount, currency), currency),
      currency: request.amount.currency,
      condition: request.condition,
      ilpPacket: request.ilpPacket,
      expiration: request.expiration,
      extensionList: request.extensionList,
      payloadHash,
      state: TransferInternalState.RECEIVED_PREPARE,
      createdAt: new Date(this.now()).toISOString(),
      ...(origin === undefined ? {} : { prepareOrigin: origin }),
      ...(dependsOn === undefined ? {} : { dependsOn }),
    };
  }

  /**
   * What a prepare the ledger did not make is: a transfer the ledger already had (written now), or
   * a refusal (recorded where central-ledger records it).
   */
  private async recordRefusal(
    prepare: IdentifiedPrepare,
    refused: {
      record: TransferRecord;
      command: Extract<LedgerCommand, { kind: 'prepare' }>;
      outcome: Extract<LedgerOutcome, { ok: false }>;
    },
  ): Promise<TransferResult> {
    const { request, origin } = prepare;
    const { record, command, outcome } = refused;
    if (outcome.refusal === 'exists' || outcome.refusal === 'failed_before') {
      const known = await this.stored(request.transferId);
      if (known !== undefined) return this.duplicatePrepare(known, prepare);
    }
    switch (outcome.refusal) {
      case 'exists': {
        // The ledger has it and the metadata does not (a crash between the two, or another
        // instance's metadata write still under way): the ledger knows its state.
        const [state] = await this.ledger.transferStates([command.id], prepare.ledgerDeadline);
        record.state = internalStateOf(state!) ?? TransferInternalState.RESERVED;
        // Write it now (watched once written, as above). Its first delivery was never answered, so
        // a message (Kafka) gets the answer of a first delivery.
        await this.open.save(record);
        return {
          record,
          duplicate: true,
          redelivery: origin !== undefined && !isFinal(record.state),
        };
      }
      case 'modified':
        throw fspiopError(
          FspiopCode.MODIFIED_REQUEST,
          `transfer ${request.transferId} was prepared with another payload`,
        );
      case 'insufficient_liquidity':
      case 'limit_exceeded': {
        const error = fspiopError(
          outcome.refusal === 'insufficient_liquidity'
            ? FspiopCode.PAYER_INSUFFICIENT_LIQUIDITY
            : FspiopCode.PAYER_LIMIT_ERROR,
        );
        // Recorded, as central-ledger does, so a retry of the same prepare gets the same answer.
        record.state = TransferInternalState.ABORTED_REJECTED;
        record.errorInformation = error.toErrorInformation();
        await this.open.finalWrites.writeRefusal(record);
        throw error;
      }
      default:
        throw refusalError(outcome.refusal, request.transferId);
    }
  }

  /**
   * Commit (COMMITTED, or RESERVED with API v1.1's PATCH to the payee). ABORTED changes nothing:
   * central-ledger takes it (ml-api-adapter's action REJECT) through the fulfil checks and then
   * only logs it, so the reservation holds until the payee's PUT …/error or the expiry.
   */
  async fulfil(
    transferId: string,
    delivery: Delivery,
    request: FulfilRequest,
  ): Promise<TransferResult> {
    return this.finish(
      { transferId, delivery, kind: 'fulfil', body: request },
      async (record, finish) => {
        if (request.transferState === 'ABORTED')
          return { record, duplicate: false, redelivery: false, ignored: true };
        if (!validFulfilment(request.fulfilment, record.condition))
          return this.rejected(record, finish, 'invalid fulfilment');
        return this.commit(record, finish, {
          fulfilment: request.fulfilment!,
          completedTimestamp: request.completedTimestamp,
          extensionList: request.extensionList ?? record.extensionList,
        });
      },
    );
  }

  /**
   * A payee's commits of many transfers (a bulk's results) in one pass, each as fulfil() would
   * take it: a transfer this process holds reserved, nothing else under way for it, the request
   * from its payee to its payer, not expired, its fulfilment matching, is committed with the
   * others in one ledger call (each in the settlement window it belongs to) and recorded with them
   * in one write, each under its own turn; any other, or one the ledger refused in the call, goes
   * fulfil()'s own way. Answers in the line's order: each transfer's result or its refusal (an
   * FspiopError); any other failure rejects the line once every commit of it has settled.
   */
  async fulfilLine(
    delivery: Delivery,
    commits: readonly { transferId: string; request: FulfilRequest }[],
  ): Promise<(TransferResult | FspiopError)[]> {
    const answers: Promise<TransferResult>[] = new Array(commits.length);
    const line: LineCommit[] = [];
    const now = this.now();
    commits.forEach(({ transferId, request }, index) => {
      const id = canonicalTransferId(transferId);
      const record = this.finishing.held(id) ? undefined : this.open.get(id);
      if (record === undefined || !committable(record, { delivery, request, now })) {
        answers[index] = this.fulfil(transferId, delivery, request);
        return;
      }
      const finish = this.newFinish({ kind: 'fulfil', body: request, origin: delivery.origin });
      line.push({ index, record, request, finish });
    });
    const committed = this.inTurns(
      line.map(({ record }) => record.transferId),
      () => this.commitLine(line),
    );
    line.forEach(({ index, record }, k) => {
      // Refused in the line (a window closed under it, expired meanwhile, finished elsewhere):
      // fulfil() asks the ledger again and answers as it does, once the line's turns are free.
      answers[index] = committed.then(
        (results) =>
          results[k] ?? this.fulfil(record.transferId, delivery, commits[index]!.request),
      );
    });
    return refusalsOrResults(await Promise.allSettled(answers));
  }

  /** `work` holding the turns of these transfers (ids canonical, none held now). */
  private async inTurns<T>(ids: readonly string[], work: () => Promise<T>): Promise<T> {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // Each taken at once (no turn is held, so none waits): a finish arriving meanwhile waits.
    const turns = ids.map((id) => this.finishing.run(id, () => released));
    try {
      return await work();
    } finally {
      release();
      await Promise.all(turns);
    }
  }

  /**
   * A line's commits in one ledger call; those the ledger made recorded in one write and
   * answered, any other undefined.
   */
  private async commitLine(line: readonly LineCommit[]): Promise<(TransferResult | undefined)[]> {
    if (line.length === 0) return [];
    const models = new Map<string, Promise<boolean>>();
    const grossIn = (currency: string): Promise<boolean> => {
      let gross = models.get(currency);
      if (gross === undefined) {
        gross = this.placement?.settlesAtOnce(currency) ?? Promise.resolve(false);
        models.set(currency, gross);
      }
      return gross;
    };
    const gross = await Promise.all(line.map(({ record }) => grossIn(record.currency)));
    const outcomes = await this.ledger.execute(
      line.map(({ record }, k) => ({
        kind: 'commit',
        ...this.money(record, undefined),
        gross: gross[k]!,
      })),
    );
    const saved: (TransferRecord | undefined)[] = line.map(({ record, request, finish }, k) => {
      if (!outcomes[k]!.ok) return undefined;
      const details = {
        fulfilment: request.fulfilment,
        completedTimestamp: request.completedTimestamp,
        extensionList: request.extensionList ?? record.extensionList,
      };
      const change = commitChange(details, gross[k]!, this.now);
      return changed(record, change, finishFields(finish));
    });
    const made = saved.filter((record) => record !== undefined);
    if (made.length > 0) {
      this.fault('fulfil.after-ledger');
      line.forEach(({ record }, k) => {
        if (saved[k] !== undefined) this.open.forget(record);
      });
      await this.store.saveTransfers(made);
      this.fault('fulfil.after-metadata');
    }
    return saved.map((record) =>
      record === undefined ? undefined : { record, duplicate: false, redelivery: false },
    );
  }

  /** The payee's PUT /transfers/{id}/error: abort and release the reservation. */
  async error(
    transferId: string,
    delivery: Delivery,
    body: { errorInformation: ErrorInformation },
  ): Promise<TransferResult> {
    return this.finish({ transferId, delivery, kind: 'error', body }, (record, finish) =>
      this.abort(record, finish, TransferInternalState.ABORTED_ERROR, body.errorInformation),
    );
  }

  /** Prepare and commit in one call, for the /jmeter load endpoints (fulfilment optional there). */
  async commitTrusted(transferId: string, fulfilment: string | undefined): Promise<TransferResult> {
    const record = await this.require(transferId);
    const delivery: Delivery = { source: record.payeeFsp, destination: record.payerFsp };
    if (fulfilment !== undefined)
      return this.fulfil(transferId, delivery, { transferState: 'COMMITTED', fulfilment });
    const body: FulfilRequest = { transferState: 'COMMITTED' };
    return this.finish({ transferId, delivery, kind: 'fulfil', body }, (open, finish) =>
      this.commit(open, finish, {}),
    );
  }

  async get(transferId: string, source: string | undefined): Promise<TransferRecord> {
    const found = await this.lookup(transferId, source);
    if (found.transfer === undefined) throw transferNotFound(transferId);
    return found.transfer;
  }

  /**
   * What GET /transfers/{id} reads: a transfer its payer or payee asks for, else a funds movement
   * its participant asks for (central-ledger keeps those as transfers too, between the Hub's
   * reconciliation account and the participant's settlement account, so a DFSP reads their
   * state as any transfer's). Anyone else is refused as central-ledger refuses a requester with
   * no part in the transfer (3000), an unknown id 3208.
   */
  async lookup(
    transferId: string,
    source: string | undefined,
  ): Promise<
    { transfer: TransferRecord; funds?: never } | { transfer?: never; funds: FundsRecord }
  > {
    const id = canonicalTransferId(transferId);
    const record = await this.find(id);
    if (record !== undefined) {
      if (source !== record.payerFsp && source !== record.payeeFsp) throw notAParty(transferId);
      return { transfer: await this.open.reconciled(record, 'outside its turn') };
    }
    // Funds movements are kept under the id as the admin request spelt it.
    const funds = (await this.store.fundsRecord(id)) ?? (await this.store.fundsRecord(transferId));
    if (funds === undefined) throw transferNotFound(transferId);
    if (funds.participant !== source) throw notAParty(transferId);
    return { funds };
  }

  private async ledgerState(
    record: TransferRecord,
    deadline?: LedgerDeadline,
  ): Promise<LedgerTransferState> {
    const [state] = await this.ledger.transferStates(
      [transferIdToU128(record.transferId)],
      deadline,
    );
    return state!;
  }

  /**
   * Loads the transfers left open by an earlier run (or another instance), to watch their expiry.
   */
  loadOpen(): Promise<number> {
    return this.open.load();
  }

  /**
   * Watches the reservations overdue in a shared store that no live instance is telling
   * (open-records.ts).
   */
  adoptOverdue(overdueByMs: number): Promise<void> {
    return this.open.adoptOverdue(overdueByMs);
  }

  /** In a process that does not sweep: lets go of what another process sweeps (open-records.ts). */
  handOverDue(): Promise<void> {
    return this.open.handOverDue();
  }

  /**
   * Records and tells the expiries that are due (open-records.ts). A dependent transfer's
   * conversion is released before the expiry is told: a failed release fails the sweep untold, and
   * the next one releases again (idempotent in the ledger) rather than telling twice.
   */
  expireDue(notify?: (expired: TransferRecord[]) => Promise<void>): Promise<TransferRecord[]> {
    return this.open.expireDue(async (expired) => {
      const dependent = expired.filter((record) => record.dependsOn !== undefined);
      if (dependent.length > 0) await this.dependencies!.expired(dependent);
      await notify?.(expired);
    });
  }

  /** The record of a transfer, from memory when this instance has it open. */
  private async find(transferId: string): Promise<TransferRecord | undefined> {
    return this.open.get(transferId) ?? this.stored(transferId);
  }

  private async stored(transferId: string): Promise<TransferRecord | undefined> {
    return (await this.store.transfers([transferId]))[0];
  }

  /** A transfer's record whoever asks (admin and load-test routes); 3208 when unknown. */
  recordOf(transferId: string): Promise<TransferRecord> {
    return this.require(transferId);
  }

  private async require(transferId: string): Promise<TransferRecord> {
    const record = await this.find(canonicalTransferId(transferId));
    if (record === undefined) throw transferNotFound(transferId);
    return record;
  }

  /** A finish's identity (its kind's hash of the body, for duplicates) and its deadline. */
  private newFinish(
    asked: Pick<FinishRequest, 'kind' | 'body'> & { origin: string | undefined },
  ): Finish {
    return {
      hash: `${asked.kind}:${hashOf(asked.body)}`,
      origin: asked.origin,
      deadline: this.elsewhere.deadline(),
      ledgerDeadline: this.ledgerDeadline(),
    };
  }

  /** A request's bound on its ledger calls together: LEDGER_TIMEOUT_MS from its start. */
  ledgerDeadline(): LedgerDeadline {
    return performance.now() + this.requestTimeoutMs;
  }

  /**
   * The checks every fulfil and error share (transfer known, right parties, duplicate, still
   * reserved, not expired), serialised per transfer so two finishes never race.
   */
  private finish(
    request: FinishRequest,
    change: (record: TransferRecord, finish: Finish) => Promise<TransferResult>,
  ): Promise<TransferResult> {
    const { kind, body } = request;
    const { source, destination, origin } = request.delivery;
    const id = canonicalTransferId(request.transferId);
    // Behind another request of this transfer (a retry while the first attempt is at the ledger),
    // the wait for it counts against the same bound as the ledger's: the outcome is then unknown
    // (2003), the retry idempotent.
    const contended = this.finishing.held(id);
    // Fulfils and error callbacks are duplicates only of their own kind, as in central-ledger.
    const finish = this.newFinish({ kind, body, origin });
    // Checked again against the finisher's record when another instance finished it meanwhile.
    const checked = async (record: TransferRecord): Promise<TransferResult> => {
      if (source !== record.payeeFsp)
        throw validationError('FSPIOP-Source header does not match the payee FSP');
      // Its own message again (Kafka), answered as the first time: a wrong destination's first
      // answer was an abort, not the 3100 below.
      if (
        origin !== undefined &&
        record.finishOrigin === origin &&
        record.finishHash === finish.hash
      )
        return repeatedFinish(record, origin);
      if (destination !== undefined && destination !== record.payerFsp) {
        const wrongDestination = 'FSPIOP-Destination header does not match the payer FSP';
        if (isFinal(record.state)) throw validationError(wrongDestination);
        return this.rejected(record, finish, wrongDestination);
      }
      if (record.finishHash?.startsWith(`${kind}:`)) {
        if (record.finishHash !== finish.hash)
          throw fspiopError(
            FspiopCode.MODIFIED_REQUEST,
            `transfer ${id} was already finished with another payload`,
          );
        return repeatedFinish(record, origin);
      }
      if (
        record.state === TransferInternalState.RESERVED &&
        Date.parse(record.expiration) <= this.now()
      ) {
        // Expired by this clock, but a crash may have lost the metadata of a finish the ledger made
        // in time: only the ledger can tell. Still reserved (its timeout is in whole seconds) or
        // released, it is expired: 3303, and the record stays RESERVED for the sweep, which tells
        // payer and payee (as central-ledger's timeout handler does after a late fulfil).
        const state = await this.ledgerState(record, finish.ledgerDeadline);
        if (state === 'reserved' || state === 'expired')
          throw fspiopError(FspiopCode.TRANSFER_EXPIRED);
      }
      if (record.state === TransferInternalState.EXPIRED_RESERVED)
        throw fspiopError(FspiopCode.TRANSFER_EXPIRED);
      // A finish the ledger made whose own record a crash lost goes through the ledger again: the
      // same kind of finish is `exists` there and is recorded now; the other kind is refused.
      if (record.state !== TransferInternalState.RESERVED && !finishLost(record))
        throw validationError(`transfer is ${apiStateOf(record.state)}, not RESERVED`);
      return change(record, finish);
    };
    const work = this.finishing.run(id, async () => {
      try {
        return await checked(await this.require(id));
      } catch (error) {
        if (error instanceof FinishedElsewhere) return checked(error.record as TransferRecord);
        throw error;
      }
    });
    return contended
      ? bounded(work, this.requestTimeoutMs, (reason) => new LedgerUnavailableError(reason))
      : work;
  }

  private async commit(
    record: TransferRecord,
    finish: Finish,
    details: {
      fulfilment?: string;
      completedTimestamp?: string | undefined;
      extensionList?: unknown;
    },
  ): Promise<TransferResult> {
    const dependency = await this.dependencyOf(record);
    const { outcome, gross } = await placedCommit(
      (command) => this.execute(command, finish.ledgerDeadline),
      this.placement,
      this.money(record, dependency),
      dependency?.linked,
    );
    if (
      !outcome.ok &&
      dependency !== undefined &&
      CONVERSION_GONE.includes(outcome.refusal) &&
      (await this.ledgerState(record, finish.ledgerDeadline)) === 'reserved'
    )
      return this.conversionGone(record, finish, dependency);
    if (!outcome.ok && outcome.refusal !== 'exists')
      return this.refusedFinish(record, outcome.refusal, finish);
    if (!outcome.ok) await this.finishedElsewhere(record, finish);
    this.fault('fulfil.after-ledger');
    // Settled or not is the ledger's: a commit found done (`exists`) may have been placed under
    // another model.
    const settled = outcome.ok
      ? gross
      : (await this.ledgerState(record, finish.ledgerDeadline)) === 'settled';
    return this.finished(record, finish, {
      outcome: 'committed',
      fault: 'fulfil.after-metadata',
      change: commitChange(details, settled, this.now),
    });
  }

  /**
   * Aborted for `reason` (ABORTED_REJECTED, recorded as this finish's, so its redelivery is told
   * the same), then TransferAbortedError tells payee and payer.
   */
  private async rejected(record: TransferRecord, finish: Finish, reason: string): Promise<never> {
    const error = new TransferAbortedError(reason);
    await this.abort(
      record,
      finish,
      TransferInternalState.ABORTED_REJECTED,
      error.toErrorInformation(),
    );
    throw error;
  }

  private async abort(
    record: TransferRecord,
    finish: Finish,
    state: TransferInternalState,
    errorInformation: ErrorInformation | undefined,
  ): Promise<TransferResult> {
    const dependency = await this.dependencyOf(record);
    let outcome = await this.execute(
      {
        kind: 'abort',
        ...this.money(record, dependency),
        ...(dependency === undefined ? {} : { linked: dependency.linked }),
      },
      finish.ledgerDeadline,
    );
    // The conversion already released by itself (it expired): the transfer alone is left to void.
    if (dependency !== undefined && !outcome.ok && CONVERSION_GONE.includes(outcome.refusal))
      outcome = await this.execute(
        { kind: 'abort', ...this.money(record, dependency) },
        finish.ledgerDeadline,
      );
    if (!outcome.ok && outcome.refusal !== 'exists')
      return this.refusedFinish(record, outcome.refusal, finish);
    if (!outcome.ok) await this.finishedElsewhere(record, finish);
    this.fault('abort.after-ledger');
    return this.finished(record, finish, {
      outcome: 'aborted',
      fault: 'abort.after-metadata',
      change: { state, ...(errorInformation === undefined ? {} : { errorInformation }) },
    });
  }

  /**
   * The chain was refused for the conversion alone (the transfer still reserved): a withdrawal
   * that came while this transfer's prepare was between the ledger and the store found nothing
   * to abort with it. The transfer, which can no longer be paid, is voided alone and recorded
   * aborted; TransferAbortedError tells payee and payer (Kafka: abort-validation), as
   * central-ledger's fx-abort tells the dependent transfer's parties.
   */
  private async conversionGone(
    record: TransferRecord,
    finish: Finish,
    dependency: Dependency,
  ): Promise<never> {
    const outcome = await this.execute(
      { kind: 'abort', ...this.money(record, dependency) },
      finish.ledgerDeadline,
    );
    if (!outcome.ok && outcome.refusal !== 'exists')
      return this.refusedFinish(record, outcome.refusal, finish);
    if (!outcome.ok) await this.finishedElsewhere(record, finish);
    const error = new TransferAbortedError('Related FX Transfer was aborted');
    // Not `finished`: the conversion was finished by its own withdrawal or expiry, whose record
    // stays as it is.
    await this.saveFinished(record, {
      state: TransferInternalState.ABORTED_REJECTED,
      errorInformation: error.toErrorInformation(),
      ...finishFields(finish),
    });
    throw error;
  }

  /**
   * The ledger had this finish already (`exists`): a crash lost its record, or another instance
   * finished the transfer (its record maybe still on its way: awaited, finish-elsewhere.ts). In
   * the latter case the finisher's record wins and the request is checked again against it (a
   * duplicate, 3106, or not RESERVED). Called under the finish's lock and writing nothing, it
   * races no repair here. Undecided at the request's `deadline`: FinishPendingError.
   */
  private async finishedElsewhere(record: TransferRecord, finish: Finish): Promise<void> {
    if (record.finishHash !== undefined) return;
    const what = `transfer ${record.transferId}`;
    const ledgerId = transferIdToU128(record.transferId);
    const { deadline, ledgerDeadline } = finish;
    const asked = { ledgerId, what, deadline, ledgerDeadline };
    const stored = await this.elsewhere.recorded(asked, async () => {
      const stored = await this.stored(record.transferId);
      // One repaired from the ledger (no finish hash) is not the finisher's.
      return stored?.finishHash === undefined ? undefined : stored;
    });
    if (stored === undefined) return;
    this.open.forget(record);
    throw new FinishedElsewhere(stored, what);
  }

  /** A finish the ledger refused: the transfer was finished elsewhere, or expired. */
  private async refusedFinish(
    record: TransferRecord,
    refusal: LedgerRefusal,
    finish: Finish,
  ): Promise<never> {
    switch (refusal) {
      case 'expired':
        // Left RESERVED: the sweep records the expiry and tells payer and payee.
        throw fspiopError(FspiopCode.TRANSFER_EXPIRED);
      case 'already_committed': {
        const state =
          internalStateOf(await this.ledgerState(record, finish.ledgerDeadline)) ??
          TransferInternalState.COMMITTED;
        await this.saveFinished(record, { state });
        throw validationError(`transfer is ${apiStateOf(state)}, not RESERVED`);
      }
      case 'already_aborted':
        await this.saveFinished(record, { state: TransferInternalState.ABORTED_REJECTED });
        throw validationError('transfer is ABORTED, not RESERVED');
      default:
        throw refusalError(refusal, record.transferId);
    }
  }

  /** Saves what a finish did, with what identifies it as a duplicate or a redelivery later. */
  private async finished(
    record: TransferRecord,
    finish: Finish,
    done: {
      outcome: 'committed' | 'aborted';
      /** Where the process may be killed once the record is saved. */
      fault: FaultPoint;
      change: Partial<TransferRecord>;
    },
  ): Promise<TransferResult> {
    const { outcome, fault, change } = done;
    const saved = await this.saveFinished(record, { ...change, ...finishFields(finish) });
    this.fault(fault);
    const conversion =
      saved.dependsOn === undefined ? undefined : await this.dependencies!.settled(saved, outcome);
    return {
      record: saved,
      duplicate: false,
      redelivery: false,
      ...(conversion === undefined ? {} : { conversion }),
    };
  }

  private async dependencyOf(record: TransferRecord): Promise<Dependency | undefined> {
    if (record.dependsOn === undefined) return undefined;
    if (this.dependencies === undefined)
      throw new Error(
        `transfer ${record.transferId} depends on ${record.dependsOn} and no dependency hooks were given`,
      );
    return this.dependencies.of(record);
  }

  /**
   * The conversion's FXP withdrew (src/domain/fx): its dependent transfer, if still reserved, is
   * aborted with it in one chain. Undefined where there is nothing to abort (not prepared, or
   * finished). `within`: the withdrawal's bounds (its Finish).
   */
  async abortDependent(
    transferId: string,
    commitRequestId: string,
    errorInformation: ErrorInformation,
    within: Pick<Finish, 'deadline' | 'ledgerDeadline'>,
  ): Promise<TransferResult | undefined> {
    return this.finishing.run(transferId, async () => {
      const record = await this.find(transferId);
      if (
        record === undefined ||
        record.dependsOn !== commitRequestId ||
        record.state !== TransferInternalState.RESERVED
      )
        return undefined;
      // Aborted by another instance (its record found): nothing to abort here; that chain voided
      // the conversion too.
      return this.abort(
        record,
        { hash: `error:${hashOf({ errorInformation })}`, origin: undefined, ...within },
        TransferInternalState.ABORTED_ERROR,
        errorInformation,
      ).catch((error: unknown) =>
        error instanceof FinishedElsewhere ? undefined : Promise.reject(error),
      );
    });
  }

  private async saveFinished(
    record: TransferRecord,
    change: Partial<TransferRecord>,
  ): Promise<TransferRecord> {
    const finished = changed(record, change);
    this.open.forget(record);
    await this.store.saveTransfers([finished]);
    return finished;
  }

  /**
   * The reservation a transfer's commit or abort names: its own, or the one its dependency made.
   */
  private money(
    record: TransferRecord,
    dependency: Dependency | undefined,
  ): { id: bigint; payer: string; payee: string; currency: string; amount: bigint } {
    const id = transferIdToU128(record.transferId);
    if (dependency !== undefined)
      return {
        id,
        payer: dependency.payer,
        payee: record.payeeFsp,
        currency: dependency.currency,
        amount: dependency.amount,
      };
    return {
      id,
      payer: record.payerFsp,
      payee: record.payeeFsp,
      currency: record.currency,
      amount: parseAmount(record.amount, requireCurrency(record.currency)),
    };
  }

  private async execute(command: LedgerCommand, deadline: LedgerDeadline): Promise<LedgerOutcome> {
    const [outcome] = await this.ledger.execute([command], deadline);
    return outcome!;
  }
}

/**
 * Ledger refusals of a dependent transfer's chain that may be its conversion's alone (withdrawn, or
 * released by its timeout).
 */
const CONVERSION_GONE: readonly LedgerRefusal[] = ['already_aborted', 'expired'];

/**
 * A record with changes, as `{ ...record, ...changes }` makes it: by Object.assign, which V8 does
 * several times faster for a record of this size (the spread cost ~6 µs a record here).
 */
function changed(
  record: TransferRecord,
  ...changes: readonly Partial<TransferRecord>[]
): TransferRecord {
  return Object.assign({}, record, ...changes);
}

/** What a commit records, the finish's own fields aside. */
function commitChange(
  details: {
    fulfilment?: string | undefined;
    completedTimestamp?: string | undefined;
    extensionList?: unknown;
  },
  settled: boolean,
  now: () => number,
): Partial<TransferRecord> {
  return {
    state: settled ? TransferInternalState.SETTLED : TransferInternalState.COMMITTED,
    ...(details.fulfilment === undefined ? {} : { fulfilment: details.fulfilment }),
    completedTimestamp: details.completedTimestamp ?? new Date(now()).toISOString(),
    ...(details.extensionList === undefined ? {} : { extensionList: details.extensionList }),
  };
}

/**
 * Whether fulfil() would commit this open record at once, with nothing to ask anyone: a COMMITTED
 * from its payee to its payer (or no destination), nothing finished, reserved and not expired by
 * this clock, no dependency, the fulfilment matching its condition. Anything else goes fulfil()'s
 * own way.
 */
function committable(
  record: TransferRecord,
  asked: { delivery: Delivery; request: FulfilRequest; now: number },
): boolean {
  const { delivery, request, now } = asked;
  return (
    request.transferState === 'COMMITTED' &&
    delivery.source === record.payeeFsp &&
    (delivery.destination === undefined || delivery.destination === record.payerFsp) &&
    record.state === TransferInternalState.RESERVED &&
    record.finishHash === undefined &&
    record.dependsOn === undefined &&
    Date.parse(record.expiration) > now &&
    validFulfilment(request.fulfilment, record.condition)
  );
}

/** What identifies a finish in the record, for recognising its duplicates and redeliveries. */
function finishFields(finish: Finish): Pick<TransferRecord, 'finishHash' | 'finishOrigin'> {
  return {
    finishHash: finish.hash,
    ...(finish.origin === undefined ? {} : { finishOrigin: finish.origin }),
  };
}

/**
 * A line's answers: each result, or its refusal (an FspiopError); any other failure thrown (the
 * first).
 */
function refusalsOrResults(
  settled: readonly PromiseSettledResult<TransferResult>[],
): (TransferResult | FspiopError)[] {
  return settled.map((outcome) => {
    if (outcome.status === 'fulfilled') return outcome.value;
    if (outcome.reason instanceof FspiopError) return outcome.reason;
    throw outcome.reason;
  });
}

function notAParty(transferId: string): FspiopError {
  return fspiopError(
    FspiopCode.GENERIC_CLIENT,
    `requester is not a party to the transfer ${transferId}`,
  );
}

function transferNotFound(transferId: string): FspiopError {
  return fspiopError(FspiopCode.TRANSFER_ID_NOT_FOUND, `Transfer ${transferId} not found`);
}
