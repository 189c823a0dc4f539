/**
 * Prepares that must reach the ledger in a given order: a bulk's members, so that where the
 * payer's liquidity does not cover them all, the first-listed are reserved (as central-ledger's
 * prepare handlers take a bulk's transfers from its one partition in order). Each prepare still
 * runs its checks concurrently with the others; only the hand-over of its command to the ledger
 * waits for the turn before it, and the ledger applies one batch's commands in order.
 */
export interface LedgerTurn {
  /** Settles once every earlier prepare of the line has gone to the ledger or never will. */
  readonly ready: Promise<void>;
  /** This prepare has gone to the ledger or never will: the next may go. Idempotent. */
  pass(): void;
}

/** A line of `count` turns, the first ready at once. */
export function ledgerTurns(count: number): LedgerTurn[] {
  const turns: LedgerTurn[] = [];
  let ready: Promise<void> = Promise.resolve();
  for (let index = 0; index < count; index++) {
    let pass!: () => void;
    const passed = new Promise<void>((resolve) => {
      pass = resolve;
    });
    turns.push({ ready, pass });
    ready = passed;
  }
  return turns;
}
