/**
 * The embedded ledger made durable: every batch of commands is written to DATA_DIR/ledger.journal
 * with the time it was applied, before it is applied, and replayed at start with that same time.
 * The embedded ledger is deterministic given its clock, so the replay rebuilds exactly the
 * balances, reservations (and their expiries) and idempotency records it had.
 */
import { join } from 'node:path';
import { DATA_TABLE_HOT_ENTRIES } from '../config/config';
import { Journal } from '../util/journal';
import { EmbeddedLedger } from './embedded';
import type {
  AccountRef,
  HubAccountRef,
  Ledger,
  LedgerCommand,
  LedgerOutcome,
  LedgerTransferState,
  ParticipantBalance,
  WindowNet,
} from '../ports/ledger';

interface Entry {
  atMs: number;
  commands: LedgerCommand[];
  /** The command semantics the entry was applied under (absent: 1, before debts existed). */
  model?: number;
  /** The ledger's identity, recorded by this entry (its commands: none). */
  identity?: bigint;
}

/**
 * Replaying a command log is only faithful under the semantics that wrote it. Model 2 accepts
 * an initial position above liquidity and a cap below the position, which model 1 refused.
 * Model 3 names the initial position `adjustPosition` and has settlement windows. Model 4 is the
 * 3-event model (docs/decisions/0008): a commit names no window (a close cuts one), the payee is
 * checked at the commit, and a debtor's chains sweep.
 */
const LEDGER_MODEL = 4;

export class JournaledLedger implements Ledger {
  readonly name = 'embedded' as const;
  /** Set while a batch is applied, so the ledger sees the time that the journal records. */
  private appliedAt: number | undefined;
  private readonly ledger: EmbeddedLedger;
  /**
   * Batches are journalled and applied one after another, so the journal's order is the ledger's.
   */
  private tail: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly journal: Journal,
    spill: { dir: string; hotEntries: number },
  ) {
    // Its id tables spill to DATA_DIR beyond `hotEntries`: a cache the replay below rebuilds.
    this.ledger = new EmbeddedLedger(() => this.appliedAt ?? Date.now(), spill);
  }

  static async open(
    dataDir: string,
    hotEntries = DATA_TABLE_HOT_ENTRIES,
  ): Promise<JournaledLedger> {
    const journal = Journal.open(join(dataDir, 'ledger.journal'), { bigints: true });
    const ledger = new JournaledLedger(journal, { dir: dataDir, hotEntries });
    journal.forEach((value) => {
      const entry = value as Entry;
      if ((entry.model ?? 1) !== LEDGER_MODEL) {
        throw new Error(
          `${join(dataDir, 'ledger.journal')} was written under ledger model ${entry.model ?? 1}, this version replays model ${LEDGER_MODEL}: start with an empty DATA_DIR (the embedded ledger is for development; production uses TigerBeetle)`,
        );
      }
      ledger.applyNow(entry);
    });
    return ledger;
  }

  execute(commands: readonly LedgerCommand[]): Promise<LedgerOutcome[]> {
    const run = this.tail.then(async () => {
      const entry: Entry = { atMs: Date.now(), commands: [...commands], model: LEDGER_MODEL };
      await this.journal.append([entry]);
      return this.applyNow(entry);
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Journalled like a batch, in the same order: once, only while none is recorded. */
  recordIdentity(identity: bigint): Promise<bigint> {
    const run = this.tail.then(async () => {
      const recorded = await this.ledger.identity();
      if (recorded !== undefined) return recorded;
      const entry: Entry = { atMs: Date.now(), commands: [], model: LEDGER_MODEL, identity };
      await this.journal.append([entry]);
      this.applyNow(entry);
      return identity;
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  identity(): Promise<bigint | undefined> {
    return this.ledger.identity();
  }

  ledgerModel(): Promise<number | undefined> {
    return this.ledger.ledgerModel();
  }

  recordLedgerModel(): Promise<number> {
    return this.ledger.recordLedgerModel();
  }

  hubsOpened(currencies: readonly string[]): Promise<boolean[]> {
    return this.ledger.hubsOpened(currencies);
  }

  balances(refs: readonly AccountRef[]): Promise<(ParticipantBalance | undefined)[]> {
    return this.ledger.balances(refs);
  }

  hubBalances(refs: readonly HubAccountRef[]): Promise<bigint[]> {
    return this.ledger.hubBalances(refs);
  }

  transferStates(ids: readonly bigint[]): Promise<LedgerTransferState[]> {
    return this.ledger.transferStates(ids);
  }

  finishedAt(ids: readonly bigint[]): Promise<(number | undefined)[]> {
    return this.ledger.finishedAt(ids);
  }

  positionsAdjusted(ids: readonly bigint[]): Promise<boolean[]> {
    return this.ledger.positionsAdjusted(ids);
  }

  windowNets(window: number, refs: readonly AccountRef[]): Promise<WindowNet[]> {
    return this.ledger.windowNets(window, refs);
  }

  windowMoved(window: number, currencies: readonly string[]): Promise<boolean[]> {
    return this.ledger.windowMoved(window, currencies);
  }

  grossSinceWindowClose(currencies: readonly string[]): Promise<boolean[]> {
    return this.ledger.grossSinceWindowClose(currencies);
  }

  latestCutWindow(): Promise<number | undefined> {
    return this.ledger.latestCutWindow();
  }

  async close(): Promise<void> {
    await this.tail;
    this.journal.close();
    await this.ledger.close();
  }

  private applyNow(entry: Entry): LedgerOutcome[] {
    this.appliedAt = entry.atMs;
    try {
      if (entry.identity !== undefined) this.ledger.recordIdentityNow(entry.identity);
      return this.ledger.executeNow(entry.commands);
    } finally {
      this.appliedAt = undefined;
    }
  }
}
