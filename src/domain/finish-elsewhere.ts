/**
 * A finish (commit or abort) the ledger already had — its command answered `exists` — while the
 * store shows none: a crash lost its record, or another instance made it and its write is still
 * on the way (in Kafka mode ml-api-adapter produces without a key, so a resent fulfil can reach
 * any instance; no lock spans instances). Taken for lost while the other instance's write is
 * under way, it would be recorded and told again as a new finish: a second commit notification
 * (and an FX conversion's), a retry with another body accepted instead of 3106. So where other
 * instances write the store, its record is looked for until their write can no longer land.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Ledger } from '../ledger/ledger';
import { transferIdToU128 } from './ids';
import type { MetadataStore, TransferRecord } from './metadata';

/** How often the store is read again for another instance's record of a finish the ledger has. */
export const FINISH_POLL_MS = 100;

export class FinishElsewhere {
  /** How long after the ledger's post or void another instance's record of it may still land; 0: none can. */
  private readonly landsWithinMs: number;

  /**
   * @param ledgerTimeoutMs the bound on a ledger answer (LEDGER_TIMEOUT_MS): the finisher's ledger
   * call was made after it asked, so its answer came at most this long after the ledger's post,
   * and its write was asked at once (TransferService.finished).
   */
  constructor(
    private readonly store: MetadataStore,
    private readonly ledger: Ledger,
    ledgerTimeoutMs: number,
    private readonly now: () => number,
  ) {
    // One instance per store (memory, journal): its own finishes of a transfer are serialised
    // (TransferService's `finishing`), so a missing record is a lost one at once.
    this.landsWithinMs = store.writeTimeoutMs === undefined ? 0 : ledgerTimeoutMs + store.writeTimeoutMs;
  }

  /**
   * The stored record of the transfer's finish; undefined once no other instance's write of it
   * can land any more (a lost one, to be recorded by the caller). Only this rare path waits, and
   * it waits least for a retry long after the finish (a crash's): the ledger tells when it was.
   */
  async recorded(transferId: string): Promise<TransferRecord | undefined> {
    let stored = await this.read(transferId);
    if (stored !== undefined || this.landsWithinMs === 0) return stored;
    const [finishedAt] = await this.ledger.finishedAt([transferIdToU128(transferId)]);
    // Counted in polls at the start: a clock that stands still (a test's) cannot make it endless.
    const polls = Math.ceil(((finishedAt ?? this.now()) + this.landsWithinMs - this.now()) / FINISH_POLL_MS);
    for (let poll = 0; poll < polls && stored === undefined; poll++) {
      await sleep(FINISH_POLL_MS);
      stored = await this.read(transferId);
    }
    return stored;
  }

  /** A record with a finish: one repaired from the ledger (no finish hash) is not the finisher's. */
  private async read(transferId: string): Promise<TransferRecord | undefined> {
    const [stored] = await this.store.transfers([transferId]);
    return stored?.finishHash === undefined ? undefined : stored;
  }
}

/** Thrown inside a finish to check the request again against another instance's record of it. */
export class FinishedElsewhere extends Error {
  constructor(readonly record: TransferRecord) {
    super(`transfer ${record.transferId} was finished by another instance`);
  }
}
