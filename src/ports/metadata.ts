/**
 * Metadata: everything the API must keep that is not money. Balances are never here; the
 * ledger is the system of record for every amount and every transfer's money state.
 */
import type { TransferInternalState } from './states';

/** FSPIOP's errorInformation, as stored with a refused or aborted record. */
export interface ErrorInformation {
  errorCode: string;
  errorDescription: string;
  extensionList?: unknown;
}

export type HubAccountType = 'HUB_RECONCILIATION' | 'HUB_MULTILATERAL_SETTLEMENT';

export interface HubAccount {
  id: number;
  type: HubAccountType;
  currency: string;
  createdDate: string;
}

export interface SettlementModel {
  name: string;
  settlementGranularity: 'GROSS' | 'NET';
  settlementInterchange: 'BILATERAL' | 'MULTILATERAL';
  settlementDelay: 'IMMEDIATE' | 'DEFERRED';
  currency: string | null;
  requireLiquidityCheck: boolean;
  ledgerAccountType: string;
  autoPositionReset: boolean;
  settlementAccountType: string;
}

export interface ParticipantCurrency {
  currency: string;
  /** Mojaloop-style numeric ids of the participant's POSITION and SETTLEMENT accounts. */
  positionAccountId: number;
  settlementAccountId: number;
  positionAccountActive: boolean;
  createdDate: string;
  /** Net debit cap as configured; undefined until initialPositionAndLimits. */
  netDebitCap: { value: string; alarmPercentage: number } | undefined;
}

export interface Participant {
  name: string;
  id: number;
  isActive: boolean;
  /**
   * A proxy participant (FSPIOP v2 interscheme), as central-ledger v17+ records it; absent: false.
   */
  isProxy?: boolean;
  created: string;
  createdBy: string;
  currencies: ParticipantCurrency[];
  endpoints: { type: string; value: string }[];
}

/**
 * An admin funds movement, kept so a retried request is recognised and a funds-out can be finished.
 */
export interface FundsRecord {
  transferId: string;
  participant: string;
  currency: string;
  action: 'recordFundsIn' | 'recordFundsOutPrepareReserve';
  amount: string;
  state: 'RESERVED' | 'COMMITTED' | 'ABORTED';
  payloadHash: string;
  /**
   * The ledger id (decimal u128) it used, where not the transferId's own: a retry after a refusal.
   */
  ledgerId?: string;
}

export interface TransferRecord {
  transferId: string;
  payerFsp: string;
  payeeFsp: string;
  amount: string;
  currency: string;
  condition: string;
  ilpPacket: string;
  expiration: string;
  extensionList: unknown;
  /** Hash of the prepare body: the same id with another body is a modified request (3106). */
  payloadHash: string;
  state: TransferInternalState;
  createdAt: string;
  fulfilment?: string;
  completedTimestamp?: string;
  /** Hash of the fulfil or error body that finished the transfer, for duplicate detection. */
  finishHash?: string;
  /**
   * Which delivered message (Kafka topic/partition/offset) prepared or finished the transfer, so
   * that the same message delivered again is answered as the first time, not as a duplicate.
   */
  prepareOrigin?: string;
  finishOrigin?: string;
  errorInformation?: ErrorInformation;
  /** The commitRequestId of the FX conversion whose target amount this transfer spends (src/fx). */
  dependsOn?: string;
}

/** An fxTransfer's states: a transfer's, plus the FXP's agreement waiting for its transfer. */
export type FxInternalState = TransferInternalState | 'RECEIVED_FULFIL_DEPENDENT';

/**
 * What an expiry claim is on: a transfer (by transferId) or an FX conversion (by commitRequestId).
 */
export type ExpiryKind = 'transfer' | 'fx';

/** An FX conversion (POST /fxTransfers) and where it stands; its money is in the ledger. */
export interface FxTransferRecord {
  commitRequestId: string;
  determiningTransferId: string;
  initiatingFsp: string;
  counterPartyFsp: string;
  sourceAmount: { amount: string; currency: string };
  targetAmount: { amount: string; currency: string };
  condition: string;
  expiration: string;
  /** Hash of the prepare body (3106 for the same id with another body). */
  payloadHash: string;
  state: FxInternalState;
  createdAt: string;
  fulfilment?: string;
  completedTimestamp?: string;
  extensionList?: unknown;
  /** Hash of the FXP's PUT (or PUT …/error) body that answered it, for duplicates. */
  finishHash?: string;
  prepareOrigin?: string;
  finishOrigin?: string;
  errorInformation?: ErrorInformation;
}

/**
 * Settlement windows (central-settlement's settlementWindow, settlementWindowContent and its
 * aggregation).
 */
export type WindowState =
  | 'OPEN'
  | 'PROCESSING'
  | 'CLOSED'
  | 'PENDING_SETTLEMENT'
  | 'SETTLED'
  | 'ABORTED';

/**
 * A closed window's content per (ledger account type, currency), with each participant account's
 * net as the ledger gave it.
 */
export interface WindowContentRecord {
  id: number;
  ledgerAccountType: 'POSITION';
  currency: string;
  state: WindowState;
  createdDate: string;
  changedDate: string;
  settlementId: number | null;
  /**
   * Net per participant POSITION account in minor units (positive: net sender); 0 nets are kept
   * out.
   */
  nets: { participant: string; participantId: number; accountId: number; amount: string }[];
}

/** `version` counts saves: a save from a stale read is refused (two instances, one winner). */
export interface SettlementWindowRecord {
  id: number;
  state: WindowState;
  reason: string;
  createdDate: string;
  changedDate: string;
  content: WindowContentRecord[];
  version: number;
}

export type SettlementState =
  | 'PENDING_SETTLEMENT'
  | 'PS_TRANSFERS_RECORDED'
  | 'PS_TRANSFERS_RESERVED'
  | 'PS_TRANSFERS_COMMITTED'
  | 'SETTLING'
  | 'SETTLED'
  | 'ABORTED';

/**
 * A participant POSITION account in a settlement (central-settlement's
 * settlementParticipantCurrency).
 */
export interface SettlementAccountRecord {
  participant: string;
  participantId: number;
  accountId: number;
  currency: string;
  /** Minor units; positive: net sender. */
  netAmount: string;
  state: SettlementState;
  reason: string;
  externalReference?: string;
  createdDate: string;
  changedDate: string;
}

export interface SettlementRecord {
  id: number;
  model: string;
  state: SettlementState;
  reason: string;
  externalReference?: string;
  createdDate: string;
  changedDate: string;
  windowIds: number[];
  accounts: SettlementAccountRecord[];
  version: number;
}

/** Windows and a settlement written together (new ones: id 0, version 0), or not at all. */
export interface SettlementWrite {
  windows: SettlementWindowRecord[];
  settlement?: SettlementRecord;
}

/** The metadata store cannot be reached or did not answer in time (→ FSPIOP 2003). */
export class MetadataUnavailableError extends Error {
  constructor(reason: string) {
    super(`metadata store unavailable: ${reason}`);
    this.name = 'MetadataUnavailableError';
  }
}

/**
 * Where metadata lives. The embedded implementation keeps it in memory; the MySQL one (behind
 * a config flag) in the database. Reads of a transfer the same instance prepared come from
 * memory either way.
 */
export interface MetadataStore {
  hubAccounts(): Promise<HubAccount[]>;
  addHubAccount(account: Omit<HubAccount, 'id'>): Promise<HubAccount>;
  settlementModels(): Promise<SettlementModel[]>;
  addSettlementModel(model: SettlementModel): Promise<void>;
  participants(): Promise<Participant[]>;
  /**
   * Read-only (may be shared and frozen): clone before changing it. A store may answer from a
   * short-lived cache of this instance's (MySQL: PARTICIPANT_CACHE_MS); `fresh` reads the stored
   * participant itself, with every change another instance saved: what a change of it starts from.
   * Names are matched ignoring case, as central-ledger's (its participant table's collation):
   * `DFSPA` finds `dfspa`'s record, which keeps its own name.
   */
  participant(name: string, options?: { fresh?: boolean }): Promise<Participant | undefined>;
  /** Saves a participant as given (creating it when new); ids are assigned with nextId. */
  saveParticipant(participant: Participant): Promise<void>;
  nextId(): Promise<number>;
  fundsRecord(transferId: string): Promise<FundsRecord | undefined>;
  saveFundsRecord(record: FundsRecord): Promise<void>;
  transfers(ids: readonly string[]): Promise<(TransferRecord | undefined)[]>;
  saveTransfers(records: readonly TransferRecord[]): Promise<void>;
  /**
   * Transfers not yet final (RECEIVED_PREPARE or RESERVED), to watch for expiry after a restart.
   */
  openTransfers(): Promise<TransferRecord[]>;
  /**
   * Where several instances share the store and each sweeps the open transfers (kind 'transfer')
   * or FX conversions (kind 'fx', by commitRequestId) it knows: of these the ledger released,
   * which this instance tells both parties about (`mine`: it holds their claim until it records
   * them expired, or the claim lapses) and which are already recorded final elsewhere
   * (`recorded`: to forget); the rest another instance is telling.
   * Absent (one instance per store): every one is this instance's.
   */
  claimExpiries?(
    kind: ExpiryKind,
    ids: readonly string[],
  ): Promise<{ mine: string[]; recorded: string[] }>;
  /**
   * Where several instances share the store: the ids of open transfers (conversions) that expired
   * before `beforeMs` and whose expiry no live instance has claimed, at most `limit`, oldest first.
   * The instance that prepared one may be gone for good; whoever finds it takes it over.
   * Absent (one instance per store): that instance watches every open record already.
   */
  overdue?(kind: ExpiryKind, beforeMs: number, limit: number): Promise<string[]>;
  /**
   * Where several instances share the store: the bound on a saveTransfers caller's wait (ms). By
   * then another instance's write has landed, or its request was answered as failed; until then
   * a finish the ledger shows and the store lacks may be that write on its way
   * (domain/finish-elsewhere.ts). Absent (one instance per store): nothing else writes it.
   */
  readonly writeTimeoutMs?: number;
  fxTransfers(commitRequestIds: readonly string[]): Promise<(FxTransferRecord | undefined)[]>;
  /** The conversion each transfer depends on (its determiningTransferId), if any. */
  fxTransfersDetermining(transferIds: readonly string[]): Promise<(FxTransferRecord | undefined)[]>;
  saveFxTransfers(records: readonly FxTransferRecord[]): Promise<void>;
  /**
   * Where several instances share the store: claims the determining transfer for the conversion
   * `commitRequestId` unless another conversion holds it — one claim wins across instances — and
   * answers the holder. A claim stands for good, as a conversion's record does (a crash between
   * the claim and the ledger keeps the transfer for that conversion's retry), unless given back.
   * Absent (one instance per store): FxService's lock per determining transfer and the records
   * suffice.
   */
  claimDetermining?(determiningTransferId: string, commitRequestId: string): Promise<string>;
  /**
   * Gives back the claim of `commitRequestId` (nothing reserved and nothing recorded); another
   * conversion's is kept.
   */
  releaseDetermining?(determiningTransferId: string, commitRequestId: string): Promise<void>;
  /** Conversions not yet final, to watch for expiry after a restart. */
  openFxTransfers(): Promise<FxTransferRecord[]>;
  /** Settlement windows by id (all when no ids), in id order. */
  settlementWindows(ids?: readonly number[]): Promise<SettlementWindowRecord[]>;
  /** The OPEN window; the first one ('initial window') when there is none yet. */
  openSettlementWindow(): Promise<SettlementWindowRecord>;
  /** Settlements by id (all when no ids), in id order. */
  settlements(ids?: readonly number[]): Promise<SettlementRecord[]>;
  /**
   * Saves windows and a settlement atomically, each only if its stored version is the one it was
   * read with; new records get their ids (window content naming settlement 0 gets the new
   * settlement's). Undefined, nothing written, when one changed meanwhile.
   */
  writeSettlement(write: SettlementWrite): Promise<SettlementWrite | undefined>;
  /**
   * Runs `work` in settlement `id`'s turn: while no other turn of that settlement runs, in this
   * process or in any instance sharing the store. A change of a settlement moves money in the
   * ledger before it saves (src/settlement/settlements.ts), so the version check of the save
   * alone cannot keep two changes apart: the second would find the ledger already moved by
   * one the metadata does not show yet. A wait too long for a turn (MySQL: another instance
   * held it throughout) throws MetadataUnavailableError.
   */
  settlementTurn<T>(id: number, work: () => Promise<T>): Promise<T>;
  /**
   * Runs `work` in participant `name`'s turn, as settlementTurn does a settlement's (the same
   * waits and deadline): every admin change of a participant (its record, its ledger accounts'
   * activity and limit, its funds movements) reads it and the ledger and then writes both, so two
   * changes at once on two instances would each write what it read before the other's write.
   * The Hub's name is the turn of hub accounts and settlement models too.
   */
  participantTurn<T>(name: string, work: () => Promise<T>): Promise<T>;
  /**
   * Gives the OPEN window (the store's highest) the higher id `id`, nothing else changed, if it is
   * still as read; later windows number on from it. For a store that is new to a ledger already
   * holding windows (src/settlement/windows.ts start). Undefined, nothing written, when it changed.
   */
  renumberOpenWindow(
    open: SettlementWindowRecord,
    id: number,
  ): Promise<SettlementWindowRecord | undefined>;
  /**
   * The identity of the ledger this metadata was written with (docs/decisions/0007): recorded
   * once, after the ledger holds it; undefined: none recorded (a store new, or written before
   * identities).
   */
  ledgerIdentity(): Promise<bigint | undefined>;
  /**
   * Records `identity` unless the store holds one already, and answers the one it holds: one
   * record across every instance sharing the store.
   */
  recordLedgerIdentity(identity: bigint): Promise<bigint>;
  /** Whether the store answers now (for /health). */
  healthy(): Promise<boolean>;
  readonly name: string;
  close(): Promise<void>;
}
