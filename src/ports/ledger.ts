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
   * `settlement`: the window the commit lands in (NET models), or settled at once (GROSS); none:
   * neither.
   */
  | {
      kind: 'commit';
      id: bigint;
      payer: string;
      payee: string;
      currency: string;
      amount: bigint;
      linked?: Reservation & { settlement?: CommitSettlement };
      settlement?: CommitSettlement;
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
   * A settlement window's accounts in a currency (its gate and the participants'); those that exist
   * are left as they are.
   */
  | { kind: 'openWindow'; window: number; currency: string; participants: readonly string[] }
  /**
   * Closes the window's gate in a currency for good: commits aimed at it are refused
   * `window_closed`.
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

/**
 * A NET commit lands in settlement window `window`; a GROSS one settles at once, liquidity moving
 * from payer to payee. Trying again after `window_closed` or `window_missing` is the same command
 * with another (or the same) window: the window legs' events take new ids every try.
 */
export type CommitSettlement = { window: number } | { gross: true };

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
  | 'window_closed' // the commit's settlement window is closed: commit again under the OPEN one
  | 'window_missing' // a window account of the commit is not opened yet
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
 * A participant's window account: `net` = debits less credits (positive = net sender, as
 * central-settlement's netAmount), `volume` = debits plus credits (non-zero: it took part in the
 * window, even where its transfers cancelled out to a net of 0).
 */
export interface WindowNet {
  net: bigint;
  volume: bigint;
}

export interface LatestWindow {
  window: number;
  /** No gate of it is closed: commits still land in it. */
  open: boolean;
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

export interface Ledger {
  readonly name: 'tigerbeetle' | 'embedded';
  /** Applies the commands in order; each is atomic on its own. */
  execute(commands: readonly LedgerCommand[]): Promise<LedgerOutcome[]>;
  /** Balances for each ref, or undefined where the participant has no accounts in that currency. */
  balances(refs: readonly AccountRef[]): Promise<(ParticipantBalance | undefined)[]>;
  /** The hub's accounts' balances (debits less credits, posted), 0 where not opened. */
  hubBalances(refs: readonly HubAccountRef[]): Promise<bigint[]>;
  /** The ledger's own state of prepared transfers. */
  transferStates(ids: readonly bigint[]): Promise<LedgerTransferState[]>;
  /**
   * When the ledger posted or voided each prepared transfer: epoch ms by its own clock, rounded
   * up (never before the finish); undefined where it did neither (open, expired or unknown).
   * What bounds the wait for another instance's record of a finish (domain/finish-elsewhere.ts).
   */
  finishedAt(ids: readonly bigint[]): Promise<(number | undefined)[]>;
  /**
   * Whether an `adjustPosition` was applied under each id: a settlement step the metadata may not
   * know of (a lost answer, a crash).
   */
  positionsAdjusted(ids: readonly bigint[]): Promise<boolean[]>;
  /** Each participant's net and volume in a settlement window; zero where it has no account. */
  windowNets(window: number, refs: readonly AccountRef[]): Promise<WindowNet[]>;
  /**
   * What a settlement window moved in each currency (its gate's debits), 0 where it has no gate.
   */
  windowVolumes(window: number, currencies: readonly string[]): Promise<bigint[]>;
  /**
   * Per currency, whether a GROSS commit was saved since the ledger last closed a window's gate
   * in it (ever, where none was closed): the open window holds a commit that has no window legs.
   */
  grossSinceWindowClose(currencies: readonly string[]): Promise<boolean[]>;
  /**
   * The highest settlement window with a gate in the ledger (any currency), and whether it is still
   * open; undefined: none.
   */
  latestWindow(): Promise<LatestWindow | undefined>;
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

/** TigerBeetle's default maximum events per request (message size 1 MiB, 128-byte events). */
export const TIGERBEETLE_MAX_BATCH = 8189;
/**
 * The most events one ledger command becomes: a dependent transfer's commit (the FX conversion's
 * two posts and its two window legs, the transfer's two posts and two window legs).
 */
export const MAX_EVENTS_PER_COMMAND = 8;
/** The most commands one ledger request may carry. */
export const MAX_BATCH_COMMANDS = Math.floor(TIGERBEETLE_MAX_BATCH / MAX_EVENTS_PER_COMMAND);

/** The ledger did not answer within the caller's bound: the command's outcome is unknown. */
export class LedgerUnavailableError extends Error {
  constructor(reason: string) {
    super(`ledger unavailable: ${reason}`);
    this.name = 'LedgerUnavailableError';
  }
}
