/**
 * A finish (commit or abort) the ledger already had — its command answered `exists` — while the
 * store shows none: a crash lost its record, or another instance made it and its write is still
 * on the way (in Kafka mode ml-api-adapter produces without a key, so a resent fulfil can reach
 * any instance; no lock spans instances). Taken for lost while the other instance's write is
 * under way, it would be recorded and told again as a new finish: a second commit notification
 * (and an FX conversion's), an FXP's withdrawal of a conversion told twice, a retry with another
 * body accepted instead of 3106. So where other instances write the store, its record is looked
 * for until their write can no longer land.
 *
 * That can be long (LEDGER_TIMEOUT_MS plus a MySQL write's bound: ~25 s by default), too long for
 * one answer: inside a Kafka batch the consumer would be silent to its group beyond its session
 * timeout. So a request waits at most `waitAtMostMs` in all, from its start (a conversion's
 * withdrawal too, whose dependent transfer's abort and its own void may each find one); past it,
 * undecided, it fails with FinishPendingError, writing nothing: asked again (HTTP 2003, a Kafka
 * chunk handed over again), it goes on waiting where the ledger's finish time says it stands.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Ledger, LedgerDeadline } from '../../ports/ledger';
import { MetadataUnavailableError, type MetadataStore } from '../../ports/metadata';

/** How often the store is read again for another instance's record of a finish the ledger has. */
export const FINISH_POLL_MS = 100;

export interface FinishElsewhereOptions {
  /**
   * The bound on a ledger answer (LEDGER_TIMEOUT_MS): the finisher's ledger call was made after it
   * asked, so its answer came at most this long after the ledger's post, and its write was asked
   * at once (TransferService.finished, FxService.withdraw).
   */
  ledgerTimeoutMs: number;
  /** How long one request waits for such records in all; unset: until none can land. */
  waitAtMostMs?: number;
  now: () => number;
}

export class FinishElsewhere {
  /**
   * How long after the ledger's post or void another instance's record of it may still land; 0:
   * none can.
   */
  private readonly landsWithinMs: number;
  private readonly waitAtMostMs: number;
  private readonly now: () => number;

  constructor(
    store: MetadataStore,
    private readonly ledger: Ledger,
    options: FinishElsewhereOptions,
  ) {
    // One instance per store (memory, journal): its own finishes of a transfer (a conversion) are
    // serialised (TransferService's `finishing`, FxConversions' `turns`), so a missing record is a
    // lost one at once.
    this.landsWithinMs =
      store.writeTimeoutMs === undefined ? 0 : options.ledgerTimeoutMs + store.writeTimeoutMs;
    this.waitAtMostMs = options.waitAtMostMs ?? Infinity;
    this.now = options.now;
  }

  /** Until when a request starting now may wait for other instances' records (`recorded`). */
  deadline(): number {
    return this.now() + this.waitAtMostMs;
  }

  /**
   * The stored record of a finish the ledger has under `ledgerId` (`what`: a transfer's or a
   * conversion's), as `read` finds it: undefined from `read` while the finisher's record is not
   * there (a repair from the ledger is not), and from here once no other instance's write of it
   * can land any more (a lost one, to be recorded by the caller). Only this rare path waits, and
   * it waits least for a retry long after the finish (a crash's): the ledger tells when it was.
   * Still undecided at the request's `deadline`: FinishPendingError.
   */
  async recorded<R>(
    asked: { ledgerId: bigint; what: string; deadline: number; ledgerDeadline: LedgerDeadline },
    read: () => Promise<R | undefined>,
  ): Promise<R | undefined> {
    const { ledgerId, what, deadline, ledgerDeadline } = asked;
    let stored = await read();
    if (stored !== undefined || this.landsWithinMs === 0) return stored;
    const [finishedAt] = await this.ledger.finishedAt([ledgerId], ledgerDeadline);
    // Counted in polls at the start: a clock that stands still (a test's) cannot make it endless.
    const now = this.now();
    const polls = Math.max(
      0,
      Math.ceil(((finishedAt ?? now) + this.landsWithinMs - now) / FINISH_POLL_MS),
    );
    const allowed = Math.max(0, Math.min(polls, Math.floor((deadline - now) / FINISH_POLL_MS)));
    for (let poll = 0; poll < allowed && stored === undefined; poll++) {
      await sleep(FINISH_POLL_MS);
      stored = await read();
    }
    if (stored === undefined && allowed < polls) throw new FinishPendingError(what);
    return stored;
  }
}

/**
 * A request's bound reached while another instance's record of a finish the ledger has may still
 * land: nothing was written, and the request, asked again, is answered once that is decided.
 */
export class FinishPendingError extends MetadataUnavailableError {
  constructor(what: string) {
    super(`${what} was finished in the ledger and another instance's record of it may still land`);
    this.name = 'FinishPendingError';
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
