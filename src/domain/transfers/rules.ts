/**
 * The rules of the transfer flow that need no state: how ledger states, expiries and lost
 * finishes read as transfer states, central-ledger's prepare checks and refusal codes, and
 * where a commit lands for settlement.
 */
import type {
  LedgerCommand,
  LedgerDeadline,
  LedgerOutcome,
  LedgerRefusal,
  LedgerTransferState,
  Reservation,
} from '../../ports/ledger';
import { parseCondition } from '../shared/condition';
import type { Dependency } from './dependencies';
import {
  FspiopCode,
  FspiopError,
  TransferAbortedError,
  fspiopError,
  validationError,
} from '../shared/errors';
import { hashOf, hashToU128 } from '../shared/hashing';
import { canonicalTransferId, transferIdToU128 } from '../shared/ids';
import type {
  ErrorInformation,
  FxTransferRecord,
  MetadataStore,
  Participant,
  TransferRecord,
} from '../../ports/metadata';
import { parseAmount, requireCurrency } from '../shared/money';
import { TransferInternalState, apiStateOf, type TransferApiState } from '../../ports/states';

export interface PrepareRequest {
  transferId: string;
  payerFsp: string;
  payeeFsp: string;
  amount: { amount: string; currency: string };
  ilpPacket: string;
  condition: string;
  expiration: string;
  extensionList?: unknown;
}

export interface FulfilRequest {
  transferState: 'COMMITTED' | 'RESERVED' | 'ABORTED';
  fulfilment?: string;
  completedTimestamp?: string;
  extensionList?: unknown;
}

/**
 * How a fulfil or error came (a transfer's or a conversion's): its FSPIOP-Source and
 * FSPIOP-Destination headers, and the delivered message (Kafka) it came in, to recognise its
 * redelivery.
 */
export interface Delivery {
  source: string | undefined;
  destination: string | undefined;
  origin?: string | undefined;
}

/** What a transfer request ended in: the transfer's state, and whether this request changed it. */
export interface TransferResult {
  record: TransferRecord;
  /** An earlier request already did this; nothing changed now. */
  duplicate: boolean;
  /** The very message that did it was delivered again (after a crash): answer as the first time. */
  redelivery: boolean;
  /** The FX conversion this request committed or aborted with the transfer (its FXP is told). */
  conversion?: FxTransferRecord;
  /** The request changed nothing and nobody is told (a payee's transferState ABORTED). */
  ignored?: boolean;
}

/** The FSPIOP view of a transfer (GET /transfers/{id} and every success answer). */
export interface TransferView {
  transferId: string;
  transferState: TransferApiState;
  fulfilment?: string;
  completedTimestamp?: string;
  extensionList?: unknown;
  errorInformation?: ErrorInformation;
}

/**
 * The FSPIOP view of a transfer (GET /transfers/{id} and every success answer). `at: 'commit'`
 * is the answer to the commit itself: central-ledger tells the commit as COMMITTED, and its
 * GROSS settlement (SETTLED) comes after it, so only later reads show SETTLED.
 */
export function viewOf(record: TransferRecord, at: 'now' | 'commit' = 'now'): TransferView {
  const settledAfter = at === 'commit' && record.state === TransferInternalState.SETTLED;
  const view: TransferView = {
    transferId: record.transferId,
    transferState: settledAfter ? 'COMMITTED' : apiStateOf(record.state),
  };
  if (record.fulfilment !== undefined) view.fulfilment = record.fulfilment;
  if (record.completedTimestamp !== undefined) view.completedTimestamp = record.completedTimestamp;
  if (record.extensionList !== undefined) view.extensionList = record.extensionList;
  if (record.errorInformation !== undefined) view.errorInformation = record.errorInformation;
  return view;
}

/**
 * A finishing request's answer: as the commit told it, or, to a duplicate, as the transfer reads
 * now (central-ledger's resend).
 */
export function finishView(
  result: Pick<TransferResult, 'record' | 'duplicate' | 'redelivery'>,
): TransferView {
  return viewOf(result.record, result.duplicate && !result.redelivery ? 'now' : 'commit');
}

/** The internal state a ledger state stands for; undefined where the ledger knows nothing. */
export function internalStateOf(state: LedgerTransferState): TransferInternalState | undefined {
  switch (state) {
    case 'reserved':
      return TransferInternalState.RESERVED;
    case 'committed':
      return TransferInternalState.COMMITTED;
    case 'settled':
      return TransferInternalState.SETTLED;
    case 'aborted':
      return TransferInternalState.ABORTED_REJECTED;
    case 'expired':
      return TransferInternalState.EXPIRED_RESERVED;
    case 'unknown':
      return undefined;
  }
}

/** What an expiry records. */
export function expiredChange(): Pick<TransferRecord, 'state' | 'errorInformation'> {
  return {
    state: TransferInternalState.EXPIRED_RESERVED,
    errorInformation: fspiopError(FspiopCode.TRANSFER_EXPIRED).toErrorInformation(),
  };
}

/**
 * Finished in the ledger (committed, or aborted without a refusal) with no finish recorded: the
 * metadata was repaired from the ledger after a crash lost the finishing request's own write.
 */
export function finishLost(record: TransferRecord): boolean {
  if (record.finishHash !== undefined) return false;
  return (
    record.state === TransferInternalState.COMMITTED ||
    record.state === TransferInternalState.SETTLED ||
    (record.state === TransferInternalState.ABORTED_REJECTED &&
      record.errorInformation === undefined)
  );
}

/**
 * A finish of the kind already recorded, with the same payload: a duplicate, or its own message
 * delivered again (the same origin). A redelivered fulfil or error whose first answer was an
 * abort (an invalid fulfilment, a wrong party; the only ABORTED_REJECTED with an error
 * description a finish records) is answered as that abort again, not as the success a
 * redelivery otherwise repeats. Transfers and conversions alike.
 */
export function repeatedFinish<
  R extends { state: string; finishOrigin?: string; errorInformation?: ErrorInformation },
>(record: R, origin: string | undefined): { record: R; duplicate: true; redelivery: boolean } {
  const redelivery = origin !== undefined && record.finishOrigin === origin;
  if (
    redelivery &&
    record.state === TransferInternalState.ABORTED_REJECTED &&
    record.errorInformation !== undefined
  ) {
    throw new TransferAbortedError(
      record.errorInformation.errorDescription.replace(/^[^-]*- /, ''),
    );
  }
  return { record, duplicate: true, redelivery };
}

/**
 * A prepare's own message delivered again (the same origin) whose first delivery the ledger
 * refused, with no finish since: refused again with that refusal. Transfers and conversions alike.
 */
export function refuseRepeatedRefusal(
  record: {
    state: string;
    prepareOrigin?: string;
    finishHash?: string;
    errorInformation?: ErrorInformation;
  },
  origin: string | undefined,
): void {
  const sameMessage = origin !== undefined && record.prepareOrigin === origin;
  const refusedFirst =
    record.state === TransferInternalState.ABORTED_REJECTED && record.finishHash === undefined;
  if (sameMessage && refusedFirst && record.errorInformation !== undefined) {
    throw new FspiopError(
      record.errorInformation.errorCode as FspiopCode,
      record.errorInformation.errorDescription.replace(/^[^-]*- /, ''),
    );
  }
}

export function activeParticipant(
  participant: Participant | undefined,
  role: 'Payer' | 'Payee',
  name: string,
): void {
  if (participant === undefined) throw validationError(`${role} FSP ${name} not found`);
  if (!participant.isActive) throw validationError(`${role} FSP ${name} is not active`);
}

export function activeAccount(
  participant: Participant,
  currency: string,
  role: 'Payer' | 'Payee',
): void {
  const account = participant.currencies.find((c) => c.currency === currency);
  if (account === undefined) throw validationError(`${role} FSP has no account in ${currency}`);
  if (!account.positionAccountActive)
    throw validationError(`${role} FSP's ${currency} account is not active`);
  if (role === 'Payer' && account.netDebitCap === undefined)
    throw validationError(`${role} FSP has no net debit cap in ${currency}`);
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

export function parseExpiration(text: string): number {
  const ms = ISO_DATE_TIME.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms))
    throw validationError(`expiration ${JSON.stringify(text)} is not an ISO 8601 date-time`);
  return ms;
}

export function refusalError(refusal: LedgerRefusal, transferId: string): FspiopError {
  switch (refusal) {
    case 'inactive':
      return validationError('a participant account of this transfer is not active');
    case 'not_found':
      return validationError('a participant account of this transfer does not exist');
    case 'failed_before':
      return validationError(`transfer id ${transferId} was used by a refused transfer`);
    case 'modified':
      return fspiopError(FspiopCode.MODIFIED_REQUEST);
    default:
      return fspiopError(FspiopCode.INTERNAL, `ledger refused ${transferId}: ${refusal}`);
  }
}

/** Longest reservation a prepare may ask for; TigerBeetle's timeout is a u32 of seconds. */
export const MAX_TIMEOUT_SECONDS = 2 ** 32 - 1;

/** A prepare as it came, identified: by its canonical id, its payload's hash and its message. */
export interface IdentifiedPrepare {
  transferId: string;
  payloadHash: string;
  /** Under its canonical id. */
  request: PrepareRequest;
  /** The delivered message it came in (Kafka), to recognise its redelivery. */
  origin: string | undefined;
  /** Its bound on the ledger, all of its calls together (TransferService.ledgerDeadline). */
  ledgerDeadline: LedgerDeadline;
}

export function identifiedPrepare(
  request: PrepareRequest,
  origin: string | undefined,
  ledgerDeadline: LedgerDeadline,
): IdentifiedPrepare {
  const transferId = canonicalTransferId(request.transferId);
  const payloadHash = hashOf(request);
  return { transferId, payloadHash, request: { ...request, transferId }, origin, ledgerDeadline };
}

/** What a prepare reserves, from whom to whom, and for how long. */
export interface PreparedReservation {
  payer: string;
  payee: string;
  currency: string;
  amount: bigint;
  timeoutSeconds: number;
}

/** The ledger command of a prepare: what the ledger compares a retry against (not the timeout). */
export function prepareCommand(
  prepare: Pick<IdentifiedPrepare, 'transferId' | 'payloadHash'>,
  reservation: PreparedReservation,
): Extract<LedgerCommand, { kind: 'prepare' }> {
  return {
    kind: 'prepare',
    id: transferIdToU128(prepare.transferId),
    payer: reservation.payer,
    payee: reservation.payee,
    currency: reservation.currency,
    amount: reservation.amount,
    timeoutSeconds: Math.min(MAX_TIMEOUT_SECONDS, reservation.timeoutSeconds),
    payloadHash: hashToU128(prepare.payloadHash),
  };
}

/**
 * central-ledger's prepare checks, in its order; the first failure wins. The participants are the
 * store's. A dependent transfer (`dependency`) reserves its conversion's target leg.
 */
export async function prepareChecks(check: {
  store: Pick<MetadataStore, 'participant'>;
  now: () => number;
  source: string | undefined;
  request: PrepareRequest;
  dependency: Dependency | undefined;
}): Promise<PreparedReservation> {
  const { store, request } = check;
  const [payer, payee] = await Promise.all([
    store.participant(request.payerFsp),
    store.participant(request.payeeFsp),
  ]);
  return checkedReservation({ ...check, payer, payee });
}

/** prepareChecks on participants already read (a line of prepares reads each once). */
export function checkedReservation(check: {
  now: () => number;
  source: string | undefined;
  request: PrepareRequest;
  dependency: Dependency | undefined;
  payer: Participant | undefined;
  payee: Participant | undefined;
}): PreparedReservation {
  const { now, source, request, dependency, payer, payee } = check;
  if (source !== request.payerFsp)
    throw validationError('FSPIOP-Source header does not match the payer FSP');
  const currency = requireCurrency(request.amount.currency);
  const amount = parseAmount(request.amount.amount, currency);
  activeParticipant(payer, 'Payer', request.payerFsp);
  activeParticipant(payee, 'Payee', request.payeeFsp);
  parseCondition(request.condition);
  const expiresAt = parseExpiration(request.expiration);
  const remainingMs = expiresAt - now();
  if (remainingMs <= 0) throw validationError('expiration date is in the past');
  if (request.payerFsp === request.payeeFsp)
    throw validationError('payer FSP and payee FSP must be different');
  // A dependent transfer's payer needs no account in its currency: the FXP's pays (central-ledger).
  if (dependency === undefined) activeAccount(payer!, currency.code, 'Payer');
  activeAccount(payee!, currency.code, 'Payee');
  const money = dependency ?? {
    payer: request.payerFsp,
    currency: currency.code,
    amount,
    expiresAtMs: expiresAt,
  };
  // Never outliving its conversion: whole seconds, rounded down when the conversion's expiration is
  // the bound.
  const timeoutSeconds =
    expiresAt <= money.expiresAtMs
      ? Math.ceil(remainingMs / 1000)
      : Math.floor((money.expiresAtMs - now()) / 1000);
  if (timeoutSeconds <= 0) throw validationError('Related FX Transfer is not fulfilled');
  return {
    payer: money.payer,
    payee: request.payeeFsp,
    currency: money.currency,
    amount: money.amount,
    timeoutSeconds,
  };
}

/**
 * The reservation an earlier prepare of this request made, for its command to be compared by the
 * ledger (which ignores the timeout: 1 s here); undefined where its amount is unreadable, so that
 * none can have been made.
 */
export function recoveredReservation(
  request: PrepareRequest,
  dependency: Dependency | undefined,
): PreparedReservation | undefined {
  try {
    const currency = requireCurrency(request.amount.currency);
    const money = dependency ?? {
      payer: request.payerFsp,
      currency: currency.code,
      amount: parseAmount(request.amount.amount, currency),
    };
    return {
      payer: money.payer,
      payee: request.payeeFsp,
      currency: money.currency,
      amount: money.amount,
      timeoutSeconds: 1,
    };
  } catch {
    return undefined;
  }
}

/** How commits settle (src/domain/settlement/windows.ts): at once (GROSS), or in a window. */
export interface CommitPlacement {
  settlesAtOnce(currency: string): Promise<boolean>;
}

/**
 * A commit, settled at once where its currency's model is GROSS; else it lands in the window the
 * ledger has not yet cut when it saves it (docs/settlement.md). A dependent transfer's FX
 * conversion (`linked`) is posted in the same chain, so it lands in the same window in its own
 * currency, and each currency's window nets to 0. `gross`: the commit carried GROSS settlement
 * legs.
 */
export async function placedCommit(
  execute: (command: LedgerCommand) => Promise<LedgerOutcome>,
  placement: CommitPlacement | undefined,
  money: Reservation,
  linked?: Reservation,
): Promise<{ outcome: LedgerOutcome; gross: boolean }> {
  const gross = (await placement?.settlesAtOnce(money.currency)) ?? false;
  const linkedGross =
    linked === undefined ? false : ((await placement?.settlesAtOnce(linked.currency)) ?? false);
  const outcome = await execute({
    kind: 'commit',
    ...money,
    gross,
    ...(linked === undefined ? {} : { linked: { ...linked, gross: linkedGross } }),
  });
  return { outcome, gross };
}
