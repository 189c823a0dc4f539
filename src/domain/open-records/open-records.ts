/**
 * The records not yet final that this instance watches — transfers' reservations, FX conversions'
 * (RESERVED, and RECEIVED_FULFIL_DEPENDENT once the FXP agreed) — and what it does with them, one
 * engine for every kind: loading them at start, taking over overdue ones, the sweep that records
 * their expiry, and the repair of a record the ledger shows finished (the ledger wins). Requests
 * read an open record from here, not the store; once final it leaves memory (the store answers
 * for it). Which of them a sweep asks the ledger about, and why those watched longest too:
 * watchlist.ts.
 */
import type { Ledger, LedgerDeadline, LedgerTransferState } from '../../ports/ledger';
import type { ExpiryKind, FxInternalState, MetadataStore } from '../../ports/metadata';
import { RECEIVED_FULFIL_DEPENDENT, TransferInternalState, isFinalFx } from '../../ports/states';
import type { Fault, FaultPoint } from '../../util/fault';
import type { KeyedMutex } from '../../util/keyed-mutex';
import { expiredChange } from '../transfers/rules';
import { FinalWrites, OneSweepAtATime, claimExpired, readDue, type Warn } from './expiry-sweep';
import { Watchlist } from './watchlist';

/** Overdue records taken over a pass (adoptOverdue): one indexed read of the store's. */
export const OVERDUE_PER_PASS = 1000;

/** What the engine needs of a record: a transfer's states are a conversion's but one. */
export interface OpenRecord {
  state: FxInternalState;
  expiration: string;
}

/** What differs between the kinds of records the engine watches. */
export interface OpenRecordKind<R extends OpenRecord> {
  /** What the store's expiry claims and overdue lists call them. */
  kind: ExpiryKind;
  idOf(record: R): string;
  ledgerIdOf(id: string): bigint;
  /** The state a record has when the ledger's is `state`; undefined where the ledger has none. */
  stateOf(state: LedgerTransferState): TransferInternalState | undefined;
  /** A second key an open record is found by (a conversion's determining transfer). */
  indexOf?(record: R): string;
  /** The store's records of this kind not yet final, by id, and their write. */
  loadOpen(): Promise<R[]>;
  read(ids: readonly string[]): Promise<(R | undefined)[]>;
  save(records: readonly R[]): Promise<void>;
  /** Where the process may be killed: after an expiry is told, and after it is recorded. */
  faults: { afterNotify: FaultPoint; afterRecord?: FaultPoint };
  /**
   * A record the ledger finished before its expiration while the store's is not final: repaired
   * at once (a transfer: every finish of it holds its turn, which the repair takes), or watched
   * again until the store has it final, repaired only once due (a conversion: the dependent
   * transfer's commit posts it under the transfer's turn, its record on the way).
   */
  repairsBeforeDue: boolean;
}

export interface OpenRecordsOptions {
  store: MetadataStore;
  ledger: Ledger;
  fault: Fault;
  now: () => number;
  /** The finishes of this instance, per record: a repair waits for one under way. */
  turns: KeyedMutex;
  /** Where final records dropped unwritten during a long store outage are reported. */
  warn: Warn | undefined;
}

/** Watched while it may still change in the ledger. */
function isOpen(state: FxInternalState): boolean {
  return state === TransferInternalState.RESERVED || state === RECEIVED_FULFIL_DEPENDENT;
}

export class OpenRecords<R extends OpenRecord> {
  private readonly watched: Watchlist<R>;
  /** indexOf(record) → id of the open ones. */
  private readonly byIndex = new Map<string, string>();
  private readonly sweeps = new OneSweepAtATime();
  /** Released before the ledger's timeout (releasedEarly), by id: told by the next sweep. */
  private readonly released = new Map<string, R>();
  /** Told expiries and refusals whose write failed: written by the next sweep. */
  readonly finalWrites: FinalWrites<R>;
  private readonly store: MetadataStore;
  private readonly ledger: Ledger;
  private readonly fault: Fault;
  private readonly now: () => number;
  private readonly turns: KeyedMutex;

  constructor(
    private readonly kind: OpenRecordKind<R>,
    options: OpenRecordsOptions,
  ) {
    ({
      store: this.store,
      ledger: this.ledger,
      fault: this.fault,
      now: this.now,
      turns: this.turns,
    } = options);
    this.watched = new Watchlist((record) => Date.parse(record.expiration), options.now);
    this.finalWrites = new FinalWrites((records) => kind.save(records), kind.idOf, options.warn);
  }

  get(id: string): R | undefined {
    return this.watched.get(id);
  }

  /** The open record under a second key (OpenRecordKind.indexOf). */
  getByIndex(key: string): R | undefined {
    const id = this.byIndex.get(key);
    return id === undefined ? undefined : this.watched.get(id);
  }

  /** Keeps the open set in step with a record saved (or about to be): watched while open. */
  follow(record: R): R {
    if (!isOpen(record.state)) {
      this.forget(record);
      return record;
    }
    const id = this.kind.idOf(record);
    this.watched.set(id, record);
    if (this.kind.indexOf !== undefined) this.byIndex.set(this.kind.indexOf(record), id);
    return record;
  }

  /** Out of the open set: final, or recorded final by another instance. */
  forget(record: R): void {
    this.watched.delete(this.kind.idOf(record));
    if (this.kind.indexOf !== undefined) this.byIndex.delete(this.kind.indexOf(record));
  }

  /** Told, or recorded by another instance, expired: out of the open and the released records. */
  private expiryDone(record: R): void {
    this.forget(record);
    this.released.delete(this.kind.idOf(record));
  }

  /**
   * Stored first, then the open set follows: a write that fails leaves the open copy as it was, so
   * the retry makes the change again and writes it (an open copy ahead of the store would answer
   * the retry as a duplicate, never written).
   */
  async save(record: R): Promise<R> {
    await this.kind.save([record]);
    return this.follow(record);
  }

  /**
   * Loads the records left open by an earlier run (or another instance), to watch their expiry.
   * Their metadata may lag the ledger: the first sweep reads the ledger for every one (not at
   * start, so that a start does not need the ledger), and every request about one of them reads
   * it before answering.
   */
  async load(): Promise<number> {
    const open = await this.kind.loadOpen();
    this.watchUnchecked(open);
    return open.length;
  }

  /**
   * Takes over, from a store shared by several instances, records overdue by `overdueByMs` that no
   * live instance is telling: only the instance that prepared one watches it, and that one may be
   * gone for good (scaled down). The sweep then treats them as loaded at start; the expiry claims
   * keep each told once. At most OVERDUE_PER_PASS a pass.
   */
  async adoptOverdue(overdueByMs: number): Promise<void> {
    const overdue =
      (await this.store.overdue?.(this.kind.kind, this.now() - overdueByMs, OVERDUE_PER_PASS)) ??
      [];
    const unwatched = overdue.filter((id) => this.watched.get(id) === undefined);
    if (unwatched.length > 0) this.watchUnchecked(await this.kind.read(unwatched));
  }

  /** Watched from the next sweep on, which reads the ledger for each: their records may lag it. */
  private watchUnchecked(records: readonly (R | undefined)[]): void {
    for (const record of records) {
      if (record === undefined || !isOpen(record.state)) continue;
      this.follow(record);
      this.watched.setUnchecked(this.kind.idOf(record), record);
    }
  }

  /**
   * The one place an expiry is recorded. For records past their expiration (and, after a restart,
   * every record loaded open) it reads the ledger: what the ledger released by itself is told to
   * both parties by `notify`, then recorded EXPIRED_RESERVED, so it leaves the sweep only once
   * told (a failed notify is tried again next sweep; a failed record too, without telling again:
   * FinalWrites; a crash between the two tells again, with the same event id). What the ledger
   * posted or voided is let go of: another instance's record of it is kept as it is; missing (a
   * finish whose metadata write a crash lost), it is recorded as the ledger has it and never
   * reported expired. The records watched longest are read too (watchlist.ts says why). Never two
   * sweeps at once (OneSweepAtATime).
   */
  expireDue(notify: (expired: R[]) => Promise<void> = async () => {}): Promise<R[]> {
    return this.sweeps.run(() => this.sweep(notify));
  }

  /**
   * A record whose reservation its owner released before the ledger's timeout would (a conversion
   * voided with its expired dependent transfer): the next sweep tells it and records it expired,
   * as one the ledger released by itself, without asking the ledger (which reads it voided, a
   * finish to repair untold).
   */
  releasedEarly(record: R): void {
    this.released.set(this.kind.idOf(record), record);
  }

  /**
   * The pass of a process that does not sweep (another one tells the expiries: its roles), every
   * EXPIRY_SWEEP_MS: memory holds what is in flight here, not every record until a sweep that
   * never comes. Final records left unwritten are written; those watched longest are read from the
   * ledger and let go of once finished, as the sweep does (a lost finish repaired); those due, or
   * found released by the ledger, are handed over: forgotten here, taken over from the store by
   * the sweeping process (adoptOverdue), which tells them. Never two passes at once.
   */
  async handOverDue(): Promise<void> {
    await this.sweeps.run(async () => {
      await this.finalWrites.write();
      const now = this.now();
      const { due, rechecked } = this.watched.select(now);
      for (const record of due) this.forget(record);
      if (rechecked.length > 0)
        for (const record of await this.readLedger({ due: [], rechecked, now }))
          this.forget(record);
      return [];
    });
  }

  private async sweep(notify: (expired: R[]) => Promise<void>): Promise<R[]> {
    await this.finalWrites.write();
    const now = this.now();
    const released = [...this.released.values()];
    const selected = this.watched.select(now);
    const unreleased = (record: R): boolean => !this.released.has(this.kind.idOf(record));
    const due = selected.due.filter(unreleased);
    const rechecked = selected.rechecked.filter(unreleased);
    if (due.length === 0 && rechecked.length === 0 && released.length === 0) return [];
    const claim = await claimExpired(
      this.store,
      this.kind.kind,
      [...(await this.readLedger({ due, rechecked, now })), ...released],
      this.kind.idOf,
    );
    for (const record of claim.recorded) this.expiryDone(record);
    const expired = claim.mine.map((record) => ({ ...record, ...expiredChange() }));
    if (expired.length === 0) return [];
    await notify(expired);
    this.fault(this.kind.faults.afterNotify);
    for (const record of expired) this.expiryDone(record);
    await this.finalWrites.write(expired);
    if (this.kind.faults.afterRecord !== undefined) this.fault(this.kind.faults.afterRecord);
    return expired;
  }

  /**
   * Reads the ledger for the records due and those rechecked: lets go of the finished, watches
   * again those rechecked and found open. Returns those the ledger released by itself.
   */
  private async readLedger(selected: { due: R[]; rechecked: R[]; now: number }): Promise<R[]> {
    const { due, rechecked, now } = selected;
    if (due.length === 0 && rechecked.length === 0) return [];
    const reading = await readDue({
      ledger: this.ledger,
      due: [...due, ...rechecked],
      ledgerIdOf: (record) => this.kind.ledgerIdOf(this.kind.idOf(record)),
      stateOf: this.kind.stateOf,
    });
    await this.letGoOfFinished(reading.finished, { due: new Set(due), now });
    // Found open: asked about again RECHECK_AFTER_MS from now.
    const settled = new Set([...reading.expired, ...reading.finished.map((f) => f.record)]);
    for (const record of rechecked)
      if (!settled.has(record)) this.watched.watchAgain(this.kind.idOf(record), now);
    for (const record of due) this.watched.checked(this.kind.idOf(record));
    return reading.expired;
  }

  /**
   * Finished in the ledger: let go of. Most were finished by another instance, whose record (with
   * the fulfilment) is kept as it is; one the store does not have final is repaired (or, before it
   * is due, watched again where the kind says so: OpenRecordKind.repairsBeforeDue).
   */
  private async letGoOfFinished(
    finished: readonly { record: R; state: TransferInternalState }[],
    sweep: { due: ReadonlySet<R>; now: number },
  ): Promise<void> {
    if (finished.length === 0) return;
    const stored = await this.kind.read(finished.map((f) => this.kind.idOf(f.record)));
    for (const [i, { record, state }] of finished.entries()) {
      if (isFinalRecord(stored[i])) this.forget(record);
      else if (this.kind.repairsBeforeDue || sweep.due.has(record))
        await this.repair(record, state);
      else this.watched.watchAgain(this.kind.idOf(record), sweep.now);
    }
  }

  /**
   * A record not final may lag the ledger (finished by another instance, or a crash between the
   * ledger write and the metadata write): the ledger's state wins, and a finish found there
   * repairs the metadata. An expiry is reported but left to the sweep to record, which tells both
   * parties. A caller `in its turn` (holding the record's turn, its record read in it) has the
   * repair written at once; any other waits for the turn (repair).
   */
  async reconciled(
    record: R,
    read: 'in its turn' | 'outside its turn',
    deadline?: LedgerDeadline,
  ): Promise<R> {
    if (isFinalFx(record.state)) return record;
    const [ledgerState] = await this.ledger.transferStates(
      [this.kind.ledgerIdOf(this.kind.idOf(record))],
      deadline,
    );
    const state = this.kind.stateOf(ledgerState!);
    // Still reserved in the ledger (where a conversion the FXP agreed to stays): the record stands.
    if (state === undefined || state === TransferInternalState.RESERVED) return record;
    if (state === TransferInternalState.EXPIRED_RESERVED) return { ...record, ...expiredChange() };
    if (read === 'in its turn') return this.save({ ...record, state });
    return this.repair(record, state);
  }

  /**
   * A finish the ledger has and the store lacks (the sweep's, a GET's, a duplicate prepare's
   * finding), recorded as the ledger has it and no longer watched — behind any finish of the
   * record under way on this instance, whose record then stands. Written after that finish's own
   * (a read of the store from before it), the repair would erase the fulfilment, error and finish
   * hash (the memory store keeps whatever comes last; MySQL's upsert refuses it), and a retry of
   * that finish would be recorded and answered anew. From the record as stored now: an answer
   * recorded since the caller's read (a conversion's FXP's) stays. Returns the record.
   */
  private repair(record: R, state: TransferInternalState): Promise<R> {
    const id = this.kind.idOf(record);
    return this.turns.run(id, async () => {
      const [stored] = await this.kind.read([id]);
      if (isFinalRecord(stored)) return this.follow(stored);
      return this.save({ ...(stored ?? record), state });
    });
  }
}

function isFinalRecord<R extends OpenRecord>(record: R | undefined): record is R {
  return record !== undefined && isFinalFx(record.state);
}
