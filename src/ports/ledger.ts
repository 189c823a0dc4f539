/**
 * The ledger's narrow interface: the money operations of a Mojaloop hub, each one atomic.
 *
 * Two implementations keep the same semantics: `TigerBeetleLedger` (each command becomes one
 * linked chain of TigerBeetle transfers) and `EmbeddedLedger` (an in-process model used when no
 * cluster is configured, and as the oracle of the differential test). Callers hand over batches;
 * outcome i answers command i, and a refused command changes nothing.
 */

/** Participants and the hub are named; accounts are derived from (name, currency). */
export interface AccountRef {
  participant: string;
  currency: string;
}

export interface HubAccountRef {
  currency: string;
  type: 'HUB_RECONCILIATION' | 'HUB_MULTILATERAL_SETTLEMENT';
}

export type LedgerCommand =
  /** Hub accounts of a currency (reconciliation, multilateral settlement, net debit cap source). */
  | { kind: 'openHub'; currency: string }
  /** A participant's accounts in a currency; open (active) from the start. */
  | { kind: 'openParticipant'; participant: string; currency: string }
  /**
   * Raise (delta > 0) or lower (delta < 0) the net debit cap. Lowering below what is in use is
   * refused.
   */
  | { kind: 'adjustNdc'; id: bigint; participant: string; currency: string; delta: bigint }
  /**
   * Raise (amount > 0: owes the scheme more) or lower the position against the hub's multilateral
   * settlement account, never refused for cover: an initial position, or a settlement step.
   */
  | {
      kind: 'adjustPosition';
      id: bigint;
      participant: string;
      currency: string;
      amount: bigint;
      purpose: 'initial' | 'settlement';
    }
  | { kind: 'fundsIn'; id: bigint; participant: string; currency: string; amount: bigint }
  /**
   * Two-phase funds out: reserve, then commit or abort the reservation `id`. A commit refused
   * (an inactive account) is refused for good under its id: `attempt` (absent: 0) numbers the
   * tries, each under an id of its own; the reservation keeps commit and abort exclusive.
   */
  | { kind: 'fundsOutReserve'; id: bigint; participant: string; currency: string; amount: bigint }
  | {
      kind: 'fundsOutCommit';
      id: bigint;
      participant: string;
      currency: string;
      amount: bigint;
      attempt?: number;
    }
  | { kind: 'fundsOutAbort'; id: bigint; participant: string; currency: string; amount: bigint }
  /** Deactivated accounts take part in no new transfer or funds movement until reactivated. */
  | { kind: 'setActive'; id: bigint; participant: string; currency: string; active: boolean }
  /**
   * Reserve `amount` of the payer's liquidity and net debit cap for the payee. The reservation
   * expires by itself `timeoutSeconds` after the ledger accepted it. `payloadHash` makes a retry
   * with a different payload (same id) a `modified` refusal inside the ledger.
   */
  | {
      kind: 'prepare';
      id: bigint;
      payer: string;
      payee: string;
      currency: string;
      amount: bigint;
      timeoutSeconds: number;
      payloadHash: bigint;
    }
  /**
   * Post (commit) or void (abort) a prepared reservation. `amount` must be the prepared one: the
   * embedded ledger refuses another (`invalid`); TigerBeetle refuses a void of another but would
   * post less as a partial post, and the adapter does not look the amount up on the hot path.
   * `linked` is another reservation (an FX conversion the transfer depends on) posted or voided
   * first in the same chain: both or neither.
   * `gross`: settled at once (GROSS models), liquidity moving from payer to payee in the same
   * chain; else the commit lands in the settlement window the ledger has not yet cut in its
   * currency when it saves it (closeWindow).
   */
  | {
      kind: 'commit';
      id: bigint;
      payer: string;
      payee: string;
      currency: string;
      amount: bigint;
      linked?: Reservation & { gross?: boolean };
      gross?: boolean;
    }
  | {
      kind: 'abort';
      id: bigint;
      payer: string;
      payee: string;
      currency: string;
      amount: bigint;
      linked?: Reservation;
    }
  /**
   * Cuts settlement window `window` in a currency: the NET commits the ledger saved in it since its
   * previous cut (any window's) are this window's, those after the next's. Once per window and
   * currency: again is `exists`. Cuts of several currencies in one execute share a request, so no
   * commit falls between them (an FX commit's two currencies land in one window).
   */
  | { kind: 'closeWindow'; window: number; currency: string }
  /**
   * A settlement's decision, made once and for good before any of its commit steps or abort
   * steps is sent: the same decision again is `exists`, the other one `modified` (refused), so a
   * commit step and an abort step of one settlement can never both be made. `id` is derived
   * from the settlement (rules.ts decisionCommand); `currency` names the hub accounts it is
   * booked between (amount 0: it moves nothing).
   */
  | { kind: 'decideSettlement'; id: bigint; currency: string; decision: SettlementDecision };

/** What a settlement's decision says: its commit steps may be made, or its abort's. */
export type SettlementDecision = 'commit' | 'abort';

/** A prepared reservation as a commit or abort names it. */
export interface Reservation {
  id: bigint;
  payer: string;
  payee: string;
  currency: string;
  amount: bigint;
}

/** Why a command was refused. The same set for both implementations. */
export type LedgerRefusal =
  | 'exists' // this very command was applied before: an idempotent retry
  | 'modified' // the id was used before for something else
  | 'failed_before' // the id was refused before and ids are never reused
  | 'insufficient_liquidity'
  | 'limit_exceeded'
  | 'inactive' // an account involved is deactivated
  | 'not_found' // an account or the reservation does not exist
  | 'already_committed'
  | 'already_aborted'
  | 'expired'
  | 'invalid'; // the command contradicts the ledger's records (another reservation's parties or amount): a bug upstream

export type LedgerOutcome = { ok: true } | { ok: false; refusal: LedgerRefusal };

export const OK: LedgerOutcome = Object.freeze({ ok: true });
export const refused = (refusal: LedgerRefusal): LedgerOutcome => ({ ok: false, refusal });

/** A participant's money in one currency, in minor units, with Mojaloop's meanings. */
export interface ParticipantBalance {
  /** Liquidity cover: funds deposited less funds withdrawn (committed). */
  liquidity: bigint;
  /** Funds out reserved but not yet committed or aborted. */
  fundsOutReserved: bigint;
  /**
   * What the participant owes the scheme: sent less received, committed, plus any initial position.
   */
  position: bigint;
  /** Prepared, not yet committed, aborted or expired. */
  reserved: bigint;
  /** Net debit cap currently granted. */
  netDebitCap: bigint;
  /** False while deactivated. */
  active: boolean;
}

/**
 * A participant's part of a settlement window in a currency: `net` = sent less received (positive
 * = net sender, as central-settlement's netAmount), `volume` = sent plus received (non-zero: it
 * took part in the window, even where its transfers cancelled out to a net of 0).
 */
export interface WindowNet {
  net: bigint;
  volume: bigint;
}

/**
 * Where a prepared transfer stands in the ledger; `settled`: committed with its GROSS settlement
 * legs in the same chain.
 */
export type LedgerTransferState =
  | 'reserved'
  | 'committed'
  | 'settled'
  | 'aborted'
  | 'expired'
  | 'unknown';

/**
 * A request's bound on its waits for the ledger, all of its calls together: `performance.now()`
 * by which each call is answered, or fails as a timeout does (LedgerUnavailableError). A request
 * that asks the ledger more than once (a retried prepare found there, then its state read) would
 * otherwise wait LEDGER_TIMEOUT_MS per call. Without it, a call has LEDGER_TIMEOUT_MS of its own.
 */
export type LedgerDeadline = number;

export interface Ledger {
  readonly name: 'tigerbeetle' | 'embedded';
  /** Applies the commands in order; each is atomic on its own. */
  execute(commands: readonly LedgerCommand[], deadline?: LedgerDeadline): Promise<LedgerOutcome[]>;
  /** Balances for each ref, or undefined where the participant has no accounts in that currency. */
  balances(refs: readonly AccountRef[]): Promise<(ParticipantBalance | undefined)[]>;
  /** The hub's accounts' balances (debits less credits, posted), 0 where not opened. */
  hubBalances(refs: readonly HubAccountRef[]): Promise<bigint[]>;
  /** The ledger's own state of prepared transfers. */
  transferStates(ids: readonly bigint[], deadline?: LedgerDeadline): Promise<LedgerTransferState[]>;
  /**
   * When the ledger posted or voided each prepared transfer: epoch ms by its own clock, rounded
   * up (never before the finish); undefined where it did neither (open, expired or unknown).
   * What bounds the wait for another instance's record of a finish (domain/finish-elsewhere.ts).
   */
  finishedAt(ids: readonly bigint[], deadline?: LedgerDeadline): Promise<(number | undefined)[]>;
  /**
   * Whether an `adjustPosition` was applied under each id: a settlement step the metadata may not
   * know of (a lost answer, a crash).
   */
  positionsAdjusted(ids: readonly bigint[]): Promise<boolean[]>;
  /**
   * Each participant's net and volume of NET commits in a settlement window: between the window's
   * cut in the currency and the cut before it; a window not cut there yet, since the latest cut.
   * Zero where it moved nothing.
   */
  windowNets(window: number, refs: readonly AccountRef[]): Promise<WindowNet[]>;
  /**
   * Per currency, whether a NET commit landed in a settlement window (bounded as windowNets').
   */
  windowMoved(window: number, currencies: readonly string[]): Promise<boolean[]>;
  /**
   * Per currency, whether a GROSS commit was saved since the ledger's latest window cut in it
   * (ever, where none was cut): the window not yet cut holds it.
   */
  grossSinceWindowClose(currencies: readonly string[]): Promise<boolean[]>;
  /** The settlement window the ledger cut last, in any currency; undefined: none. */
  latestCutWindow(): Promise<number | undefined>;
  /**
   * The identity of the ledger's history (docs/decisions/0007-ledger-identity.md): recorded once,
   * at the first start of a hub, and in its metadata too; undefined: none recorded (a ledger new,
   * or written before identities).
   */
  identity(): Promise<bigint | undefined>;
  /**
   * Records `identity` unless the ledger holds one already, and answers the one it holds: this
   * one, or another that a concurrent first start recorded before it.
   */
  recordIdentity(identity: bigint): Promise<bigint>;
  /**
   * The ledger model the ledger was written under (docs/decisions/0008): LEDGER_MODEL for this
   * version's; MODEL_BEFORE_THREE_EVENTS where it holds accounts of the model before, which
   * recorded none; undefined where it holds neither (a new ledger).
   */
  ledgerModel(): Promise<number | undefined>;
  /** Records LEDGER_MODEL unless a model is recorded; answers the one held. */
  recordLedgerModel(): Promise<number>;
  /** Whether the hub's accounts of each currency are opened (`openHub`). */
  hubsOpened(currencies: readonly string[]): Promise<boolean[]>;
  /**
   * Why this process's connection to the ledger answers nothing again though the service did not
   * close it (the cluster evicted its TigerBeetle client): a fault only a restart mends, which
   * /live reports. Undefined: none; a ledger with no such connection need not implement it.
   */
  lost?(): string | undefined;
  close(): Promise<void>;
}

/**
 * The ledger model this version writes: the 3-event model (docs/decisions/0008). A ledger written
 * under another is refused at start; one written before it is migrated (docs/operations.md).
 */
export const LEDGER_MODEL = 2;
/** The model before the 3-event one: 8 events per transfer, a limit ledger and window accounts. */
export const MODEL_BEFORE_THREE_EVENTS = 1;

/** TigerBeetle's default maximum events per request (message size 1 MiB, 128-byte events). */
export const TIGERBEETLE_MAX_BATCH = 8189;
/**
 * The most events one ledger command becomes: a dependent transfer's GROSS commit (for the FX
 * conversion and the transfer each, the post, the receipt and the settling leg), or a position
 * raised by an admin (a guard, a debt and its sweep on each of two sides, CAP's closing).
 */
export const MAX_EVENTS_PER_COMMAND = 6;
/** The most commands one ledger request may carry. */
export const MAX_BATCH_COMMANDS = Math.floor(TIGERBEETLE_MAX_BATCH / MAX_EVENTS_PER_COMMAND);

/** The ledger did not answer within the caller's bound: the command's outcome is unknown. */
export class LedgerUnavailableError extends Error {
  constructor(reason: string) {
    super(`ledger unavailable: ${reason}`);
    this.name = 'LedgerUnavailableError';
  }
}
