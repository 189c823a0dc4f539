/**
 * The bulk transfer flow: a bulk's members go through the transfer flow (src/domain/transfers)
 * each as an ordinary transfer, all at once, so that the ledger's batch queue takes a bulk's
 * reservations, and then its commits, in a handful of requests. The bulk's own record
 * (BulkStore) says which transfers are its own, what was refused before the ledger and where the
 * bulk stands; each member's result is read from its transfer. Every step is safe to repeat: the
 * same message delivered again (after a kill -9 anywhere) redoes its step, the transfer flow
 * answering what is already done as duplicates, and gives the same notices. Steps on a bulk take
 * turns in this process; across processes its saves are optimistic (BulkStore.save), a step that
 * came second being redone on the record as it is now.
 *
 * central-ledger's bugs (reference mojaloop-bulk.md §12) are fixed here: the final state comes
 * from all the results (COMPLETED if one committed), a bulk refused whole at prepare is answered
 * at once (whoever was refused), a wrong fulfilment aborts its transfer only, a bulk never stays
 * open past its expiration (finishExpired), and a transfer id already taken is refused for that
 * transfer.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BulkMember, BulkObjectStore, BulkRecord, BulkStore } from '../../ports/bulk';
import type { ErrorInformation, TransferRecord } from '../../ports/metadata';
import { isFinal } from '../../ports/states';
import { KeyedMutex } from '../../util/keyed-mutex';
import { FspiopCode, FspiopError, fspiopError, validationError } from '../shared/errors';
import { canonicalTransferId } from '../shared/ids';
import type {
  FulfilRequest,
  PrepareRequest,
  TransferResult,
  TransferService,
} from '../transfers/service';
import type {
  BulkApi,
  BulkDelivery,
  BulkErrorBody,
  BulkFulfilBody,
  BulkNotice,
  BulkPrepareBody,
} from './api';
import {
  errorNotice,
  finalNotices,
  finalState,
  forwardNotice,
  memberOutcome,
  stateNotice,
  type MemberOutcome,
} from './results';
import {
  asErrorInformation,
  bulkApiState,
  checkPrepare,
  forwardedMembers,
  fulfilRefusal,
  isFinalBulk,
  isPreparing,
  membersOf,
  sameMessage,
  type ParticipantLookup,
} from './rules';

/** central-ledger's MAX_FULFIL_TIMEOUT_DURATION_SECONDS default: a PUT's completedTimestamp age. */
export const MAX_FULFIL_AGE_MS = 300_000;
/**
 * How long a payee's PUT waits for its results in the object store: bulk-api-adapter answers the
 * payee and produces the message without awaiting their saves. What is there by then is applied;
 * a member whose result never landed stays reserved and expires with the bulk.
 */
export const RESULTS_WAIT_MS = 5000;
const RESULTS_POLL_MS = 20;
const RESULTS_POLL_MAX_MS = 500;
/**
 * A member unknown to the transfer flow this long after the bulk's expiration was never reserved
 * (a prepare cut short): the ledger's reservations outlive an expiration by under a second (whole
 * seconds of timeout), so none of its can still be held.
 */
export const UNPREPARED_GRACE_MS = 5000;
/** Bulks past their expiration finished per finishExpired call, oldest first. */
export const EXPIRED_BULKS_PER_PASS = 100;
/** Saves in a row that may come second (another process saved the bulk first) before giving up. */
const MAX_SAVE_CONFLICTS = 8;

/** A step whose save came second: redone on the record as stored now. */
const CONFLICT = Symbol('conflict');
type StepAnswer = BulkNotice[] | typeof CONFLICT;

export interface BulkServiceOptions {
  transfers: TransferService;
  store: BulkStore;
  objects: BulkObjectStore;
  /** The participants as the transfer flow checks them (MetadataStore.participant). */
  participant: ParticipantLookup;
  /** The Hub's name: a payee's PUT may be addressed to it. */
  hubName: string;
  now?: () => number;
  maxFulfilAgeMs?: number;
  /** Tests: RESULTS_WAIT_MS. */
  resultsWaitMs?: number;
}

export class BulkService implements BulkApi {
  private readonly transfers: TransferService;
  private readonly store: BulkStore;
  private readonly objects: BulkObjectStore;
  private readonly participant: ParticipantLookup;
  private readonly hubName: string;
  private readonly now: () => number;
  private readonly maxFulfilAgeMs: number;
  private readonly resultsWaitMs: number;
  private readonly turns = new KeyedMutex();

  constructor(options: BulkServiceOptions) {
    this.transfers = options.transfers;
    this.store = options.store;
    this.objects = options.objects;
    this.participant = options.participant;
    this.hubName = options.hubName;
    this.now = options.now ?? Date.now;
    this.maxFulfilAgeMs = options.maxFulfilAgeMs ?? MAX_FULFIL_AGE_MS;
    this.resultsWaitMs = options.resultsWaitMs ?? RESULTS_WAIT_MS;
  }

  prepare(delivery: BulkDelivery, body: BulkPrepareBody): Promise<BulkNotice[]> {
    return this.inTurn(body.bulkTransferId, async () => {
      const known = await this.store.bulk(body.bulkTransferId);
      if (known !== undefined) return this.preparedBefore(known, delivery, body);
      let members: BulkMember[];
      try {
        await checkPrepare({ delivery, body, now: this.now(), participant: this.participant });
        members = membersOf(await this.objects.individualTransfers(delivery.messageId));
      } catch (error) {
        if (!(error instanceof FspiopError)) throw error;
        const invalid = this.newRecord(delivery, body, {
          state: 'INVALID',
          members: [],
          errorInformation: error.toErrorInformation(),
          finishedBy: 'prepare',
          completedTimestamp: this.isoNow(),
        });
        if (!(await this.store.create(invalid))) return CONFLICT;
        return [invalidNotice(invalid, delivery, 'prepare')];
      }
      const record = this.newRecord(delivery, body, { state: 'RECEIVED', members });
      if (!(await this.store.create(record))) return CONFLICT;
      return this.reserveMembers(record);
    });
  }

  /**
   * A prepare of a known bulk: its own message again resumes it (or repeats what its end told);
   * another with the same hash is told a final bulk's outcome; another hash is 3106.
   */
  private async preparedBefore(
    known: BulkRecord,
    delivery: BulkDelivery,
    body: BulkPrepareBody,
  ): Promise<StepAnswer> {
    if (known.prepareHash !== body.hash)
      throw fspiopError(
        FspiopCode.MODIFIED_REQUEST,
        `bulk transfer ${known.bulkTransferId} was prepared with another payload`,
      );
    const recorded = { messageId: known.prepareMessageId, origin: known.prepareOrigin };
    if (sameMessage(recorded, delivery)) {
      if (isPreparing(known.state)) return this.reserveMembers(known);
      if (known.state === 'INVALID') return [invalidNotice(known, delivery, 'prepare')];
      if (known.state === 'ACCEPTED') return [forwardNotice(known)];
      // Ended at prepare: told again. Moved on since: its forward was answered, not sent again.
      return known.finishedBy === 'prepare' ? finalNotices(known, await this.outcomes(known)) : [];
    }
    if (!isFinalBulk(known.state)) return [];
    if (known.state === 'INVALID') return [invalidNotice(known, delivery, 'duplicate')];
    const outcomes = await this.outcomes(known);
    return [stateNotice(known, { party: 'payer', cause: 'duplicate', outcomes })];
  }

  /**
   * Every member not refused yet goes to the transfer flow as one line (TransferService.
   * prepareLine): each checked as a single transfer is, and those accepted reserved in one ledger
   * call in the bulk's order (where the payer's liquidity does not cover them all, the
   * first-listed are reserved) and recorded in one write; how many bulks run together is the
   * caller's (the Kafka edge's). A member the ledger already holds for this bulk (a resumed
   * prepare) comes back a duplicate of its own prepare (the same origin): not a refusal. Then
   * ACCEPTED and forwarded to the payee, or, none reserved, REJECTED and told to the payer at once.
   */
  private async reserveMembers(record: BulkRecord): Promise<StepAnswer> {
    const origin = memberPrepareOrigin(record);
    const open = record.members.filter((member) => member.refusal === undefined);
    const answers = await this.transfers.prepareLine(
      record.payerFsp,
      open.map((member) => memberRequest(record, member)),
      origin,
    );
    const refusalOf = new Map<BulkMember, ErrorInformation>();
    const taken: string[] = [];
    open.forEach((member, i) => {
      const answer = answers[i]!;
      const refusal = memberRefusal(answer, member, origin);
      if (refusal === undefined) return;
      refusalOf.set(member, refusal);
      if (refusal.errorCode === FspiopCode.MODIFIED_REQUEST) taken.push(member.transferId);
    });
    // Their ids are other transfers' (3106): this bulk does not claim them. Before the save, so
    // that a crash between the two redoes both.
    await this.store.disclaim(record.bulkTransferId, taken);
    // The members as they were unless one was refused now (saved again only then).
    const members =
      refusalOf.size === 0
        ? record.members
        : record.members.map((member) => {
            const refusal = refusalOf.get(member);
            return refusal === undefined ? member : { ...member, refusal };
          });
    const reserved = members.some((member) => member.refusal === undefined);
    const saved = await this.save(
      record,
      reserved
        ? { members, state: 'ACCEPTED' }
        : {
            members,
            state: 'REJECTED',
            finishedBy: 'prepare',
            completedTimestamp: this.isoNow(),
          },
    );
    if (saved === undefined) return CONFLICT;
    return reserved ? [forwardNotice(saved)] : finalNotices(saved, await this.outcomes(saved));
  }

  fulfil(delivery: BulkDelivery, body: BulkFulfilBody): Promise<BulkNotice[]> {
    return this.inTurn(body.bulkTransferId, async () => {
      const record = await this.answerable(body.bulkTransferId, delivery);
      if (record.fulfilHash !== undefined)
        return this.answeredBefore(record, delivery, { hash: body.hash, count: body.count });
      // A wrong PUT from the payee aborts the bulk, as central-ledger does (and as the transfer
      // flow does a transfer's): the payer learns why.
      const refusal = fulfilRefusal({
        record,
        destination: delivery.destination,
        completedTimestamp: body.completedTimestamp,
        hubName: this.hubName,
        now: this.now(),
        maxAgeMs: this.maxFulfilAgeMs,
      });
      // A refused PUT's own timestamp may be what was wrong with it: the bulk ends now.
      const completedTimestamp =
        refusal === undefined ? (body.completedTimestamp ?? this.isoNow()) : this.isoNow();
      const saved = await this.save(record, {
        ...answerFields(delivery, body.hash),
        completedTimestamp,
        ...(body.extensionList === undefined ? {} : { fulfilExtensionList: body.extensionList }),
        ...(refusal === undefined ? {} : { errorInformation: refusal }),
      });
      if (saved === undefined) return CONFLICT;
      return refusal === undefined
        ? this.applyResults(saved, body.count)
        : this.abortMembers(saved);
    });
  }

  error(delivery: BulkDelivery, body: BulkErrorBody): Promise<BulkNotice[]> {
    return this.inTurn(body.bulkTransferId, async () => {
      const record = await this.answerable(body.bulkTransferId, delivery);
      if (record.fulfilHash !== undefined)
        return this.answeredBefore(record, delivery, { hash: body.hash, count: undefined });
      const saved = await this.save(record, {
        ...answerFields(delivery, body.hash),
        completedTimestamp: this.isoNow(),
        errorInformation: body.errorInformation,
        ...(body.extensionList === undefined ? {} : { fulfilExtensionList: body.extensionList }),
      });
      if (saved === undefined) return CONFLICT;
      return this.abortMembers(saved);
    });
  }

  /**
   * The bulk a payee's PUT (or PUT …/error) names, refused to its sender alone (nothing aborted)
   * where it is unknown (3210), the sender is not its payee, or it is not waiting for an answer.
   */
  private async answerable(bulkTransferId: string, delivery: BulkDelivery): Promise<BulkRecord> {
    const record = await this.store.bulk(bulkTransferId);
    if (record === undefined)
      throw fspiopError(FspiopCode.BULK_TRANSFER_ID_NOT_FOUND, `bulk transfer ${bulkTransferId}`);
    if (delivery.source !== record.payeeFsp)
      throw validationError('FSPIOP-Source header does not match the payee FSP');
    if (record.fulfilHash === undefined && record.state !== 'ACCEPTED')
      throw validationError(
        `bulk transfer ${bulkTransferId} is ${bulkApiState(record.state)}, not ACCEPTED`,
      );
    return record;
  }

  /**
   * A PUT to a bulk already answered: another hash is 3106; another message with the same hash,
   * nothing; its own message again resumes it, or repeats what it told if it ended the bulk.
   */
  private async answeredBefore(
    record: BulkRecord,
    delivery: BulkDelivery,
    request: { hash: string; count: number | undefined },
  ): Promise<StepAnswer> {
    if (record.fulfilHash !== request.hash)
      throw fspiopError(
        FspiopCode.MODIFIED_REQUEST,
        `bulk transfer ${record.bulkTransferId} was already answered with another payload`,
      );
    const recorded = { messageId: record.fulfilMessageId, origin: record.fulfilOrigin };
    if (!sameMessage(recorded, delivery)) return [];
    if (!isFinalBulk(record.state))
      return record.errorInformation === undefined
        ? this.applyResults(record, request.count)
        : this.abortMembers(record);
    const endedHere = record.finishedBy === 'fulfil' || record.finishedBy === 'error';
    return endedHere ? finalNotices(record, await this.outcomes(record)) : [];
  }

  /**
   * The payee's results, each applied to its transfer at once: a fulfilment commits it, an
   * errorInformation aborts it, a result with neither aborts it with 3100. A refusal (a wrong
   * fulfilment aborts that transfer; an expired one stays for the expiry) touches no other.
   * Results naming no transfer the payee was given are ignored.
   */
  private async applyResults(record: BulkRecord, count: number | undefined): Promise<StepAnswer> {
    const results = await this.payeeResults(record.fulfilMessageId!, count);
    const given = new Map(
      forwardedMembers(record).map((member) => [canonicalTransferId(member.transferId), member]),
    );
    const delivery = this.memberDelivery(record);
    const commits: { transferId: string; request: FulfilRequest }[] = [];
    const aborts: Promise<TransferRecord | undefined>[] = [];
    for (const result of results) {
      const id = result['transferId'];
      const member = typeof id === 'string' ? given.get(canonicalTransferId(id)) : undefined;
      if (member === undefined) continue;
      const errorInformation = asErrorInformation(result['errorInformation']);
      const fulfilment = result['fulfilment'];
      if (errorInformation === undefined && typeof fulfilment === 'string') {
        commits.push({
          transferId: member.transferId,
          request: {
            transferState: 'COMMITTED',
            fulfilment,
            ...(record.completedTimestamp === undefined
              ? {}
              : { completedTimestamp: record.completedTimestamp }),
            ...(result['extensionList'] === undefined
              ? {}
              : { extensionList: result['extensionList'] }),
          },
        });
        continue;
      }
      const reason =
        errorInformation ??
        validationError(
          `the result for ${member.transferId} has neither fulfilment nor errorInformation`,
        ).toErrorInformation();
      aborts.push(
        refusedOrDone(
          this.transfers.error(member.transferId, delivery, { errorInformation: reason }),
        ),
      );
    }
    const [committed, aborted] = await Promise.all([
      this.transfers.fulfilLine(delivery, commits),
      allSettled(aborts),
    ]);
    const answered = [
      ...committed.map((answer) => (answer instanceof FspiopError ? undefined : answer.record)),
      ...aborted,
    ];
    return this.finishIfDone(record, 'fulfil', answered);
  }

  /** Every transfer the payee was given, aborted with the bulk's errorInformation. */
  private async abortMembers(record: BulkRecord): Promise<StepAnswer> {
    const delivery = this.memberDelivery(record);
    const errorInformation = record.errorInformation!;
    const answered = await allSettled(
      forwardedMembers(record).map((member) =>
        refusedOrDone(this.transfers.error(member.transferId, delivery, { errorInformation })),
      ),
    );
    return this.finishIfDone(record, 'error', answered);
  }

  /**
   * The payee's answer as each transfer's: from the payee to the payer, whatever the PUT was
   * addressed to (the Hub, say), under an origin of this bulk's answer.
   */
  private memberDelivery(record: BulkRecord): {
    source: string;
    destination: string;
    origin: string;
  } {
    return {
      source: record.payeeFsp,
      destination: record.payerFsp,
      origin: `bulk-answer:${record.bulkTransferId}:${record.fulfilMessageId}`,
    };
  }

  /**
   * The results of a PUT from the object store, waiting (RESULTS_WAIT_MS at most) for all `count`
   * bulk-api-adapter saved without awaiting.
   */
  private async payeeResults(
    messageId: string,
    count: number | undefined,
  ): Promise<Record<string, unknown>[]> {
    const deadline = Date.now() + this.resultsWaitMs;
    for (let pause = RESULTS_POLL_MS; ; pause = Math.min(pause * 2, RESULTS_POLL_MAX_MS)) {
      const results = await this.objects.individualTransferFulfils(messageId);
      if (count === undefined || results.length >= count || Date.now() >= deadline) return results;
      await sleep(Math.min(pause, Math.max(0, deadline - Date.now())));
    }
  }

  /**
   * Ends the bulk once every member is final, its state from all the results; until then it waits
   * (PENDING_FULFIL) for the members left open, which expire with the bulk (finishExpired).
   * `answered`: the transfers this step's finishes answered with.
   */
  private async finishIfDone(
    record: BulkRecord,
    by: 'fulfil' | 'error',
    answered: readonly (TransferRecord | undefined)[],
  ): Promise<StepAnswer> {
    const outcomes = await this.outcomes(record, answered);
    if (outcomes.some((outcome) => !outcome.final)) {
      if (record.state === 'PENDING_FULFIL') return [];
      return (await this.save(record, { state: 'PENDING_FULFIL' })) === undefined ? CONFLICT : [];
    }
    const finished = this.finished(record, outcomes, by);
    return (await this.store.save(finished, record)) ? finalNotices(finished, outcomes) : CONFLICT;
  }

  /** The bulk ended by `by`, its state from all the results: the next version, not yet saved. */
  private finished(
    record: BulkRecord,
    outcomes: readonly MemberOutcome[],
    by: NonNullable<BulkRecord['finishedBy']>,
  ): BulkRecord {
    return {
      ...record,
      state: finalState(outcomes),
      finishedBy: by,
      completedTimestamp: record.completedTimestamp ?? this.isoNow(),
      version: record.version + 1,
    };
  }

  async get(bulkTransferId: string, requester: string): Promise<BulkNotice[]> {
    if ((await this.participant(requester)) === undefined) return [];
    const record = await this.store.bulk(bulkTransferId);
    if (record === undefined)
      throw fspiopError(FspiopCode.BULK_TRANSFER_ID_NOT_FOUND, `bulk transfer ${bulkTransferId}`);
    if (requester !== record.payerFsp && requester !== record.payeeFsp)
      throw fspiopError(
        FspiopCode.GENERIC_CLIENT,
        'the requester is neither the payer nor the payee of the bulk transfer',
      );
    const bulkTransferState = bulkApiState(record.state);
    if (bulkTransferState === 'PROCESSING')
      return [{ kind: 'state', cause: 'get', to: requester, bulk: record, bulkTransferState }];
    const outcomes = await this.outcomes(record);
    const party = requester === record.payerFsp ? 'payer' : 'payee';
    return [stateNotice(record, { party, cause: 'get', outcomes })];
  }

  async withoutMembers<T extends { transferId: string }>(records: readonly T[]): Promise<T[]> {
    if (records.length === 0) return [];
    const bulkOf = await this.store.bulksOf(records.map((record) => record.transferId));
    // Each bulk's members, read once, as canonical ids. A member refused as another transfer's id
    // is not that transfer: its expiry is its own.
    const membersOf = new Map<string, Set<string>>();
    await Promise.all(
      [...new Set(bulkOf.values())].map(async (bulkTransferId) => {
        const bulk = await this.store.bulk(bulkTransferId);
        const reserved = (bulk?.members ?? []).filter((member) => member.refusal === undefined);
        membersOf.set(
          bulkTransferId,
          new Set(reserved.map((member) => canonicalTransferId(member.transferId))),
        );
      }),
    );
    const isMember = (transferId: string): boolean =>
      membersOf.get(bulkOf.get(transferId) ?? '')?.has(canonicalTransferId(transferId)) ?? false;
    return records.filter((record) => !isMember(record.transferId));
  }

  async finishExpired(notify?: (notices: BulkNotice[]) => Promise<void>): Promise<BulkNotice[]> {
    const due = await this.store.openExpiredBefore(this.now(), EXPIRED_BULKS_PER_PASS);
    const notices: BulkNotice[] = [];
    for (const { bulkTransferId } of due)
      notices.push(
        ...(await this.inTurn(bulkTransferId, () => this.expire(bulkTransferId, notify))),
      );
    return notices;
  }

  /**
   * A bulk past its expiration ended once every member is final (those still reserved expire in
   * the ledger by themselves), told, then recorded; left for the next call while any is open.
   */
  private async expire(
    bulkTransferId: string,
    notify: ((notices: BulkNotice[]) => Promise<void>) | undefined,
  ): Promise<StepAnswer> {
    const record = await this.store.bulk(bulkTransferId);
    if (record === undefined || isFinalBulk(record.state)) return [];
    if (Date.parse(record.expiration) > this.now()) return [];
    const outcomes = await this.outcomes(record);
    if (outcomes.some((outcome) => !outcome.final)) return [];
    const finished = this.finished(record, outcomes, 'expiry');
    const notices = finalNotices(finished, outcomes);
    await notify?.(notices);
    return (await this.store.save(finished, record)) ? notices : CONFLICT;
  }

  /**
   * Each member's outcome, as the transfer flow reads it (the ledger's word for a transfer not
   * final in the store: TransferService.lookup reconciles it). `answered`: transfers a finish of
   * this step answered with; one final there is what a read would find (a final record is never
   * reconciled), so it is not read again.
   */
  private async outcomes(
    record: BulkRecord,
    answered: readonly (TransferRecord | undefined)[] = [],
  ): Promise<MemberOutcome[]> {
    const pastPreparing = this.now() >= Date.parse(record.expiration) + UNPREPARED_GRACE_MS;
    const final = new Map<string, TransferRecord>();
    for (const transfer of answered)
      if (transfer !== undefined && isFinal(transfer.state))
        final.set(canonicalTransferId(transfer.transferId), transfer);
    return allSettled(
      record.members.map(async (member) => {
        if (member.refusal !== undefined) return memberOutcome(member, undefined, pastPreparing);
        const transfer =
          final.get(canonicalTransferId(member.transferId)) ??
          (await this.transfers.lookup(member.transferId, record.payerFsp).then(
            (found) => found.transfer,
            (error: unknown) => (isUnknownTransfer(error) ? undefined : Promise.reject(error)),
          ));
        return memberOutcome(member, transfer, pastPreparing);
      }),
    );
  }

  /** A step on a bulk, in its turn, redone while its save comes second. */
  private inTurn(bulkTransferId: string, step: () => Promise<StepAnswer>): Promise<BulkNotice[]> {
    return this.turns.run(bulkTransferId, async () => {
      for (let conflicts = 1; ; conflicts++) {
        const answer = await step();
        if (answer !== CONFLICT) return answer;
        if (conflicts >= MAX_SAVE_CONFLICTS)
          throw new Error(`bulk transfer ${bulkTransferId}: ${conflicts} saves came second`);
      }
    });
  }

  /** The record changed and saved over the copy it was read as; undefined if another came first. */
  private async save(
    record: BulkRecord,
    change: Partial<BulkRecord>,
  ): Promise<BulkRecord | undefined> {
    const next = { ...record, ...change, version: record.version + 1 };
    return (await this.store.save(next, record)) ? next : undefined;
  }

  private newRecord(
    delivery: BulkDelivery,
    body: BulkPrepareBody,
    start: Pick<BulkRecord, 'state' | 'members'> & Partial<BulkRecord>,
  ): BulkRecord {
    return {
      bulkTransferId: body.bulkTransferId,
      bulkQuoteId: body.bulkQuoteId,
      payerFsp: body.payerFsp,
      payeeFsp: body.payeeFsp,
      expiration: body.expiration,
      ...(body.extensionList === undefined ? {} : { extensionList: body.extensionList }),
      prepareHash: body.hash,
      prepareMessageId: delivery.messageId,
      ...(delivery.origin === undefined ? {} : { prepareOrigin: delivery.origin }),
      headers: delivery.headers,
      createdAt: this.isoNow(),
      version: 1,
      ...start,
    };
  }

  private isoNow(): string {
    return new Date(this.now()).toISOString();
  }
}

/**
 * The origin each member's prepare carries: its bulk's, whatever message delivered it, so that a
 * transfer the ledger holds under a member's id is known for this bulk's own (its prepareOrigin).
 */
function memberPrepareOrigin(record: BulkRecord): string {
  return `bulk-prepare:${record.bulkTransferId}`;
}

/**
 * Why a member's prepare was refused, if it was: its transfer flow's refusal, or, a duplicate of a
 * transfer not prepared as this bulk's member, its id taken.
 */
function memberRefusal(
  answer: TransferResult | FspiopError,
  member: BulkMember,
  origin: string,
): ErrorInformation | undefined {
  if (answer instanceof FspiopError) return answer.toErrorInformation();
  if (answer.duplicate && answer.record.prepareOrigin !== origin) return takenId(member.transferId);
  return undefined;
}

/** A member's prepare, as its own transfer's. */
function memberRequest(record: BulkRecord, member: BulkMember): PrepareRequest {
  return {
    transferId: member.transferId,
    payerFsp: record.payerFsp,
    payeeFsp: record.payeeFsp,
    amount: { amount: member.amount, currency: member.currency },
    ilpPacket: member.ilpPacket,
    condition: member.condition,
    expiration: record.expiration,
    ...(member.extensionList === undefined ? {} : { extensionList: member.extensionList }),
  };
}

/** A member whose id another transfer holds (a single transfer's, another bulk's): 3106. */
function takenId(transferId: string): ErrorInformation {
  return fspiopError(
    FspiopCode.MODIFIED_REQUEST,
    `transfer id ${transferId} belongs to another transfer`,
  ).toErrorInformation();
}

/** A prepare refused whole: told to its sender. */
function invalidNotice(
  record: BulkRecord,
  delivery: BulkDelivery,
  cause: 'prepare' | 'duplicate',
): BulkNotice {
  return errorNotice(record, {
    to: delivery.source,
    cause,
    errorInformation: record.errorInformation!,
  });
}

/** What identifies a payee's answer: its hash, for duplicates, and its message, for redelivery. */
function answerFields(delivery: BulkDelivery, hash: string): Partial<BulkRecord> {
  return {
    state: 'PROCESSING',
    fulfilHash: hash,
    fulfilMessageId: delivery.messageId,
    ...(delivery.origin === undefined ? {} : { fulfilOrigin: delivery.origin }),
  };
}

/**
 * A transfer's finish, its refusal (an FspiopError) being an outcome its record tells: the
 * transfer it answered with, or undefined if refused.
 */
async function refusedOrDone(
  finish: Promise<{ record: TransferRecord }>,
): Promise<TransferRecord | undefined> {
  try {
    return (await finish).record;
  } catch (error) {
    if (!(error instanceof FspiopError)) throw error;
    return undefined;
  }
}

function isUnknownTransfer(error: unknown): boolean {
  return error instanceof FspiopError && error.code === FspiopCode.TRANSFER_ID_NOT_FOUND;
}

/**
 * Every promise's value once all have settled: a failure (the ledger or a store unavailable)
 * rejects only then, so that no member's work is still under way when the step is given up.
 */
async function allSettled<T>(work: readonly (T | Promise<T>)[]): Promise<T[]> {
  const settled = await Promise.allSettled(work);
  const failure = settled.find((outcome) => outcome.status === 'rejected');
  if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<T>).value);
}
