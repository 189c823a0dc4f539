/**
 * A finish (commit or abort) the ledger already had — its command answered `exists` — while the
 * store shows none: a crash lost its record, or another instance made it and its write is still
 * on the way (in Kafka mode ml-api-adapter produces without a key, so a resent fulfil can reach
 * any instance; no lock spans instances). Taken for lost while the other instance's write is
 * under way, it would be recorded and told again as a new finish: a second commit notification
 * (and an FX conversion's), an FXP's withdrawal of a conversion told twice, a retry with another
 * body accepted instead of 3106. So where other instances write the store, its record is looked
 * for until their write can no longer land.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Ledger } from '../../ports/ledger';
import type { MetadataStore } from '../../ports/metadata';

/** How often the store is read again for another instance's record of a finish the ledger has. */
export const FINISH_POLL_MS = 100;

export class FinishElsewhere {
  /**
   * How long after the ledger's post or void another instance's record of it may still land; 0:
   * none can.
   */
  private readonly landsWithinMs: number;

  /**
   * @param ledgerTimeoutMs the bound on a ledger answer (LEDGER_TIMEOUT_MS): the finisher's ledger
   * call was made after it asked, so its answer came at most this long after the ledger's post,
   * and its write was asked at once (TransferService.finished, FxService.withdraw).
   */
  constructor(
    store: MetadataStore,
    private readonly ledger: Ledger,
    ledgerTimeoutMs: number,
    private readonly now: () => number,
  ) {
    // One instance per store (memory, journal): its own finishes of a transfer (a conversion) are
    // serialised (TransferService's `finishing`, FxConversions' `turns`), so a missing record is a
    // lost one at once.
    this.landsWithinMs =
      store.writeTimeoutMs === undefined ? 0 : ledgerTimeoutMs + store.writeTimeoutMs;
  }

  /**
   * The stored record of a finish the ledger has under `ledgerId` (a transfer's or a conversion's),
   * as `read` finds it: undefined from `read` while the finisher's record is not there (a repair
   * from the ledger is not), and from here once no other instance's write of it can land any more
   * (a lost one, to be recorded by the caller). Only this rare path waits, and it waits least for
   * a retry long after the finish (a crash's): the ledger tells when it was.
   */
  async recorded<R>(ledgerId: bigint, read: () => Promise<R | undefined>): Promise<R | undefined> {
    let stored = await read();
    if (stored !== undefined || this.landsWithinMs === 0) return stored;
    const [finishedAt] = await this.ledger.finishedAt([ledgerId]);
    // Counted in polls at the start: a clock that stands still (a test's) cannot make it endless.
    const polls = Math.ceil(
      ((finishedAt ?? this.now()) + this.landsWithinMs - this.now()) / FINISH_POLL_MS,
    );
    for (let poll = 0; poll < polls && stored === undefined; poll++) {
      await sleep(FINISH_POLL_MS);
      stored = await read();
    }
    return stored;
  }
}

/** Thrown inside a finish to check the request again against another instance's record of it. */
export class FinishedElsewhere<R> extends Error {
  constructor(
    readonly record: R,
    what: string,
  ) {
    super(`${what} was finished by another instance`);
  }
}
