/**
 * Settlements over closed windows (DEFERRED NET): creation from the windows' content (the nets
 * the ledger gave at close), the per-account state machine with its money moved in the ledger,
 * and abort. Refusals as central-settlement words them; a refused transition changes nothing.
 * Order of writes: the ledger first (ids derived per step, so a repeat is `exists`), then the
 * metadata under a version check, then the answer. The changes of one settlement (its PUTs and
 * its abort) take turns (MetadataStore.settlementTurn, across instances too) and read it anew in
 * theirs: a step's money and its save are never split by another change of the settlement.
 * Turns alone cannot keep commit and abort apart: a ledger request that timed out ends its turn
 * while the TigerBeetle client still retries it, so a step can land after another change's turn.
 * So the ledger decides: before a settlement's first commit step and before its abort's steps,
 * the settlement's decision (commit or abort) is made in the ledger, once and for good
 * (decisionCommand: one id per settlement; the same decision again is `exists`, the other is
 * refused). It is a request of its own, answered before any step is sent — not linked first in
 * the steps' chain, where a repeat's `exists` (every PUT committing another account of the
 * settlement repeats it) would fail the chain — so no commit step is ever sent unless the commit
 * decision stands, and no abort step unless the abort decision does: a step landing late finds
 * its own decision there. A decision that timed out sends no step; the next try repeats it
 * (`exists`, or refused if the other decision landed meanwhile).
 */
import { FspiopCode, FspiopError, validationError } from '../shared/errors';
import { reportedPosition } from '../participants/service';
import type {
  MetadataStore,
  SettlementAccountRecord,
  SettlementRecord,
  SettlementState,
  SettlementWindowRecord,
  WindowContentRecord,
} from '../../ports/metadata';
import type { Ledger, SettlementDecision } from '../../ports/ledger';
import { noFault, type Fault } from '../../util/fault';
import type { SettlementEvents } from './events';
import {
  decisionCommand,
  settlementStateOf,
  stepCommand,
  stepOf,
  transitionRefusal,
} from './rules';
import { modelOf, settlesAtOnce, type WindowService } from './windows';

/**
 * Attempts at a save that lost a race with another save of the same records: a settlement's
 * changes take turns, but its windows may be saved meanwhile by another settlement taking their
 * content of another currency.
 */
const SAVE_ATTEMPTS = 5;

/**
 * The reason saved on a settlement a PUT found aborted in the ledger only (the abort's own reason
 * was not saved).
 */
const ABORTED_IN_LEDGER = "aborted: the ledger holds the settlement's abort decision";

export interface AccountChange {
  id: number;
  state: SettlementState;
  reason: string;
  externalReference?: string;
}

/**
 * One account's answer inside a PUT: its new view, or why it was refused (HTTP 200 either way, as
 * central-settlement).
 */
export type AccountChangeResult =
  | { account: SettlementAccountRecord }
  | { id: number; error: FspiopError };

/** A PUT's answer: the settlement saved, and per participant its accounts' results. */
export type AccountsChanged = {
  settlement: SettlementRecord;
  results: { participantId: number; results: AccountChangeResult[] }[];
};

export interface SettlementServiceOptions {
  /** Default: noFault. */
  fault?: Fault;
  /** Where the service's notifications go (default: none are sent). */
  events?: SettlementEvents;
}

export class SettlementService {
  private readonly fault: Fault;
  private readonly events: SettlementEvents | undefined;

  constructor(
    private readonly store: MetadataStore,
    private readonly ledger: Ledger,
    private readonly windows: WindowService,
    options: SettlementServiceOptions = {},
  ) {
    this.fault = options.fault ?? noFault;
    this.events = options.events;
  }

  async create(body: {
    settlementModel: string;
    reason: string;
    settlementWindows: { id: number }[];
  }): Promise<SettlementRecord> {
    const models = await this.windows.settlementModels();
    const model = models.find((m) => m.name.toUpperCase() === body.settlementModel.toUpperCase());
    if (model === undefined)
      throw validationError(`Settlement model not found: ${body.settlementModel}`);
    if (settlesAtOnce(model))
      throw validationError('Settlement can not be created for GROSS or IMMEDIATE models');
    const ids = body.settlementWindows.map((w) => w.id);
    for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt++) {
      const windows = await this.store.settlementWindows(ids);
      // A currency goes to its own model, else to the default one.
      const covers = (currency: string): boolean =>
        model.currency === null ? modelOf(models, currency) === model : model.currency === currency;
      // Content the settlement takes: of its model, CLOSED or ABORTED (freed by an aborted one).
      const takes = (c: WindowContentRecord): boolean =>
        covers(c.currency) && (c.state === 'CLOSED' || c.state === 'ABORTED');
      const applicable = (w: SettlementWindowRecord): boolean =>
        ['CLOSED', 'ABORTED', 'PENDING_SETTLEMENT'].includes(w.state) && w.content.some(takes);
      const inapplicable = ids.filter((id) => !windows.some((w) => w.id === id && applicable(w)));
      if (inapplicable.length > 0)
        throw validationError(`Inapplicable windows ${inapplicable.join(', ')}`);
      const now = new Date().toISOString();
      const nets = new Map<number, SettlementAccountRecord>();
      for (const window of windows) {
        for (const content of window.content) {
          if (!takes(content)) continue;
          for (const net of content.nets) {
            const known = nets.get(net.accountId);
            const amount = BigInt(net.amount) + BigInt(known?.netAmount ?? '0');
            nets.set(
              net.accountId,
              known ?? {
                participant: net.participant,
                participantId: net.participantId,
                accountId: net.accountId,
                currency: content.currency,
                netAmount: '0',
                state: 'PENDING_SETTLEMENT',
                reason: body.reason,
                createdDate: now,
                changedDate: now,
              },
            );
            nets.get(net.accountId)!.netAmount = amount.toString();
          }
        }
      }
      const settlement: SettlementRecord = {
        id: 0,
        model: model.name,
        state: 'PENDING_SETTLEMENT',
        reason: body.reason,
        createdDate: now,
        changedDate: now,
        windowIds: ids,
        accounts: [...nets.values()].sort((a, b) => a.accountId - b.accountId),
        version: 0,
      };
      // Content taken by this settlement names it with id 0 until the store gives the settlement
      // its id, in the same write.
      const pending = windows.map((w) => ({
        ...w,
        state: 'PENDING_SETTLEMENT' as const,
        changedDate: now,
        content: w.content.map((c) =>
          takes(c)
            ? { ...c, state: 'PENDING_SETTLEMENT' as const, settlementId: 0, changedDate: now }
            : c,
        ),
      }));
      // Written only if no window changed since it was read: two settlements never take one window.
      const saved = await this.store.writeSettlement({ settlement, windows: pending });
      if (saved !== undefined) return saved.settlement!;
    }
    throw validationError(`Inapplicable windows ${ids.join(', ')}`);
  }

  list(): Promise<SettlementRecord[]> {
    return this.store.settlements();
  }

  async get(id: number): Promise<SettlementRecord> {
    const [settlement] = await this.store.settlements([id]);
    if (settlement === undefined) throw validationError(`Settlement with ID '${id}' not found`);
    return settlement;
  }

  /**
   * PUT …/settlements/{id} with participants: each account's change, then the settlement and its
   * windows follow. In the settlement's turn (as the abort), the settlement read once it is ours.
   */
  changeAccounts(
    id: number,
    participants: { id: number; accounts: AccountChange[] }[],
  ): Promise<AccountsChanged> {
    return this.inTurnThenNotify(id, (told) => this.changeAccountsInTurn(id, participants, told));
  }

  private async changeAccountsInTurn(
    id: number,
    participants: { id: number; accounts: AccountChange[] }[],
    told: SettlementAccountRecord[],
  ): Promise<AccountsChanged> {
    for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt++) {
      const settlement = await this.get(id);
      const seen = new Set<number>();
      const accepted: { account: SettlementAccountRecord; change: AccountChange }[] = [];
      const results = participants.map((participant) => ({
        participantId: participant.id,
        results: participant.accounts.map((change): AccountChangeResult => {
          const refuse = (why: string): AccountChangeResult => ({
            id: change.id,
            error: new FspiopError(FspiopCode.GENERIC_CLIENT, why),
          });
          const account = settlement.accounts.find((a) => a.accountId === change.id);
          if (account === undefined) return refuse('Account not found');
          if (account.participantId !== participant.id)
            return refuse('Participant and account mismatch');
          if (seen.has(change.id)) return refuse('Account already processed once');
          seen.add(change.id);
          const refusal = transitionRefusal(settlement.state, account.state, change.state);
          if (refusal !== undefined) return refuse(refusal);
          accepted.push({ account, change });
          return { account };
        }),
      }));
      // A commit is decided in the ledger before any commit step is sent. The ledger holding the
      // abort instead (an abort whose save was lost or is still to come): the abort is finished,
      // and the settlement read again, ABORTED, refuses the changes as on any aborted settlement.
      const committing = accepted.some(
        ({ account, change }) =>
          change.state === 'PS_TRANSFERS_COMMITTED' && account.state !== 'PS_TRANSFERS_COMMITTED',
      );
      if (committing && !(await this.decide(settlement, 'commit'))) {
        await this.finishAbort(settlement, ABORTED_IN_LEDGER, undefined, told);
        continue;
      }
      // The money first, all of it in one ledger request; a step repeated after a crash is
      // `exists`.
      const moves = accepted.flatMap(({ account, change }) => {
        const step = change.state === account.state ? undefined : stepOf(change.state);
        const command = step === undefined ? undefined : stepCommand(settlement, account, step);
        return command === undefined ? [] : [{ accountId: account.accountId, command }];
      });
      const refusedMoney = new Map<number, string>();
      const outcomes =
        moves.length === 0 ? [] : await this.ledger.execute(moves.map((m) => m.command));
      outcomes.forEach((outcome, i) => {
        if (!outcome.ok && outcome.refusal !== 'exists')
          refusedMoney.set(moves[i]!.accountId, outcome.refusal);
      });
      if (moves.length > 0) this.fault('settlement.after-ledger');
      const now = new Date().toISOString();
      const changeOf = new Map(accepted.map((a) => [a.account.accountId, a.change]));
      const changed = settlement.accounts.map((account) => {
        const change = changeOf.get(account.accountId);
        if (change === undefined || refusedMoney.has(account.accountId)) return account;
        const restated = change.state === account.state;
        return {
          ...account,
          state: change.state,
          reason: change.reason,
          changedDate: restated ? account.changedDate : now,
          ...(change.externalReference === undefined
            ? {}
            : { externalReference: change.externalReference }),
        };
      });
      const state = settlementStateOf(settlement.state, changed);
      const next: SettlementRecord = {
        ...settlement,
        accounts: changed,
        state,
        changedDate: state === settlement.state ? settlement.changedDate : now,
      };
      const newlySettled = changed.some(
        (a, i) => a.state === 'SETTLED' && settlement.accounts[i]!.state !== 'SETTLED',
      );
      const windows = newlySettled ? await this.windowsFollowing(next, 'SETTLED', now) : [];
      const saved = await this.store.writeSettlement({ settlement: next, windows });
      if (saved === undefined) continue;
      this.fault('settlement.after-metadata');
      const before = new Map(settlement.accounts.map((a) => [a.accountId, a]));
      told.push(
        ...moves.filter((m) => !refusedMoney.has(m.accountId)).map((m) => before.get(m.accountId)!),
      );
      const byAccount = new Map(saved.settlement!.accounts.map((a) => [a.accountId, a]));
      return {
        settlement: saved.settlement!,
        results: results.map((p) => ({
          participantId: p.participantId,
          results: p.results.map((r) => {
            if (!('account' in r)) return r;
            const why = refusedMoney.get(r.account.accountId);
            return why === undefined
              ? { account: byAccount.get(r.account.accountId)! }
              : {
                  id: r.account.accountId,
                  error: new FspiopError(
                    FspiopCode.GENERIC_CLIENT,
                    `State change not allowed: the ledger refused (${why})`,
                  ),
                };
          }),
        })),
      };
    }
    throw new FspiopError(
      FspiopCode.SERVICE_UNAVAILABLE,
      `settlement ${id} kept changing; try again`,
    );
  }

  /**
   * Abort, allowed until an account is committed — in the metadata or in the ledger: a commit
   * step made there but not recorded (a crash, a lost answer) counts, and is recorded first; and
   * so does the ledger's commit decision alone (a commit step sent may still land). Otherwise
   * the abort decision is made in the ledger, then the abort's steps (finishAbort).
   * In the settlement's turn: no PUT of it runs between the ledger's answers and this save (a
   * PUT queued behind it then finds it ABORTED; one ahead of it has saved its commit, and the
   * abort is refused); a step of an earlier change that timed out and lands late is kept apart by
   * the decision, not by the turn.
   */
  abort(
    id: number,
    reason: string,
    externalReference: string | undefined,
  ): Promise<SettlementRecord> {
    return this.inTurnThenNotify(id, (told) =>
      this.abortInTurn(id, reason, externalReference, told),
    );
  }

  private async abortInTurn(
    id: number,
    reason: string,
    externalReference: string | undefined,
    told: SettlementAccountRecord[],
  ): Promise<SettlementRecord> {
    for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt++) {
      const settlement = await this.get(id);
      if (['PS_TRANSFERS_COMMITTED', 'SETTLING', 'SETTLED'].includes(settlement.state)) {
        throw validationError(
          `State change is not allowed for settlement '${id}' in state '${settlement.state}'`,
        );
      }
      const unrecorded = await this.unrecordedCommits(settlement);
      if (unrecorded.length > 0 && !(await this.recordCommits(settlement, unrecorded, told)))
        continue;
      // The ledger holding the commit decision refuses the abort even where no commit step has
      // landed yet (one sent may still land: its request timed out, the client retries it).
      const committed =
        unrecorded.length > 0 ||
        settlement.accounts.some((a) => a.state === 'PS_TRANSFERS_COMMITTED');
      if (committed || !(await this.decide(settlement, 'abort'))) {
        throw validationError(
          `At least one settlement transfer is committed for settlement '${id}'. Aborting is not allowed.`,
        );
      }
      const saved = await this.finishAbort(settlement, reason, externalReference, told);
      if (saved !== undefined) return saved;
    }
    throw new FspiopError(
      FspiopCode.SERVICE_UNAVAILABLE,
      `settlement ${id} kept changing; try again`,
    );
  }

  /**
   * Makes the settlement's decision in the ledger (or finds it made): true where it is
   * `decision` (made now, or before: `exists`), false where the ledger holds the other one.
   * A settlement of no account has no decision to make: true.
   */
  private async decide(
    settlement: SettlementRecord,
    decision: SettlementDecision,
  ): Promise<boolean> {
    const command = decisionCommand(settlement, decision);
    if (command === undefined) return true;
    const [outcome] = await this.ledger.execute([command]);
    if (outcome!.ok || outcome!.refusal === 'exists') return true;
    if (outcome!.refusal === 'modified') return false;
    throw new FspiopError(
      FspiopCode.INTERNAL,
      `the ledger refused settlement ${settlement.id}'s ${decision} decision (${outcome!.refusal})`,
    );
  }

  /**
   * The abort, once the ledger holds its decision: reserved recipients' positions back (the
   * reserve is repeated first, `exists` where it happened, so a reserve whose metadata a crash
   * lost is undone too), accounts and windows ABORTED, the windows free for a new settlement.
   * Undefined: the settlement changed meanwhile (read it again).
   */
  private async finishAbort(
    settlement: SettlementRecord,
    reason: string,
    externalReference: string | undefined,
    told: SettlementAccountRecord[],
  ): Promise<SettlementRecord | undefined> {
    if (
      settlement.state === 'PS_TRANSFERS_RECORDED' ||
      settlement.state === 'PS_TRANSFERS_RESERVED'
    ) {
      const commands = settlement.accounts
        .flatMap((a) => [
          stepCommand(settlement, a, 'reserve'),
          stepCommand(settlement, a, 'abort'),
        ])
        .filter((c): c is NonNullable<typeof c> => c !== undefined);
      for (const outcome of commands.length === 0 ? [] : await this.ledger.execute(commands)) {
        if (!outcome.ok && outcome.refusal !== 'exists')
          throw new FspiopError(
            FspiopCode.INTERNAL,
            `the ledger refused the abort (${outcome.refusal})`,
          );
      }
      this.fault('settlement.after-ledger');
    }
    const now = new Date().toISOString();
    const next: SettlementRecord = {
      ...settlement,
      state: 'ABORTED',
      reason,
      changedDate: now,
      ...(externalReference === undefined ? {} : { externalReference }),
      accounts: settlement.accounts.map((a) => ({
        ...a,
        state: 'ABORTED' as const,
        reason,
        changedDate: now,
      })),
    };
    const windows =
      settlement.state === 'ABORTED' ? [] : await this.windowsFollowing(next, 'ABORTED', now);
    if ((await this.store.writeSettlement({ settlement: next, windows })) === undefined)
      return undefined;
    this.fault('settlement.after-metadata');
    told.push(
      ...settlement.accounts.filter(
        (a) =>
          a.state === 'PS_TRANSFERS_RESERVED' && stepCommand(settlement, a, 'abort') !== undefined,
      ),
    );
    return next;
  }

  /**
   * The accounts whose commit step the ledger made while the metadata has them short of
   * COMMITTED. Only a RESERVED settlement can have any: a commit is accepted from no other state.
   */
  private async unrecordedCommits(
    settlement: SettlementRecord,
  ): Promise<SettlementAccountRecord[]> {
    if (settlement.state !== 'PS_TRANSFERS_RESERVED') return [];
    const steps = settlement.accounts.flatMap((account) => {
      const command = stepCommand(settlement, account, 'commit');
      return command === undefined || account.state === 'PS_TRANSFERS_COMMITTED'
        ? []
        : [{ account, id: command.id }];
    });
    if (steps.length === 0) return [];
    const made = await this.ledger.positionsAdjusted(steps.map((s) => s.id));
    return steps.filter((_, i) => made[i]).map((s) => s.account);
  }

  /**
   * The ledger wins: the accounts it committed read PS_TRANSFERS_COMMITTED (and their DFSPs are
   * told their positions, which the lost PUT never did). False: the settlement changed meanwhile.
   */
  private async recordCommits(
    settlement: SettlementRecord,
    committed: readonly SettlementAccountRecord[],
    told: SettlementAccountRecord[],
  ): Promise<boolean> {
    const now = new Date().toISOString();
    const ids = new Set(committed.map((a) => a.accountId));
    const accounts = settlement.accounts.map((a) =>
      ids.has(a.accountId)
        ? { ...a, state: 'PS_TRANSFERS_COMMITTED' as const, changedDate: now }
        : a,
    );
    const state = settlementStateOf(settlement.state, accounts);
    const next: SettlementRecord = {
      ...settlement,
      accounts,
      state,
      changedDate: state === settlement.state ? settlement.changedDate : now,
    };
    if ((await this.store.writeSettlement({ settlement: next, windows: [] })) === undefined)
      return false;
    told.push(...committed);
    return true;
  }

  /**
   * `work` in the settlement's turn; the DFSPs whose positions it moved (those it put in `told`,
   * saved) are told after the turn ends, so a slow produce never holds the settlement's lock. A
   * change refused after it saved some (an abort recording a lost commit) tells them too, its
   * refusal unchanged whatever the telling meets.
   */
  private async inTurnThenNotify<T>(
    id: number,
    work: (told: SettlementAccountRecord[]) => Promise<T>,
  ): Promise<T> {
    const told: SettlementAccountRecord[] = [];
    let answer: T;
    try {
      answer = await this.store.settlementTurn(id, () => work(told));
    } catch (error) {
      await this.notifyPositions(told).catch(() => undefined);
      throw error;
    }
    await this.notifyPositions(told);
    return answer;
  }

  /**
   * Tells each DFSP whose position a step moved its position now, as central-settlement does
   * (after the step is saved here; central-settlement produces inside its transaction, before
   * the commit: neither tells exactly once). Sent again when a step is repeated after a crash
   * before its save; lost if the crash comes between the save and this.
   */
  private async notifyPositions(accounts: readonly SettlementAccountRecord[]): Promise<void> {
    if (this.events === undefined || accounts.length === 0) return;
    const balances = await this.ledger.balances(
      accounts.map((a) => ({ participant: a.participant, currency: a.currency })),
    );
    const changes = accounts.flatMap((a, i) => {
      const balance = balances[i];
      return balance === undefined
        ? []
        : [
            {
              participant: a.participant,
              currency: a.currency,
              position: reportedPosition(balance),
            },
          ];
    });
    await this.events.positionsChanged(changes);
  }

  /**
   * The settlement's windows after accounts of it SETTLED, or after it ABORTED. Settled: each
   * content of it whose accounts are all SETTLED is SETTLED (central-settlement's aggregation
   * rows, so one currency's content settles while another's accounts are still committed), and a
   * window once all its content is. Aborted: its content is ABORTED and free again, its windows
   * ABORTED. Only the windows that changed.
   */
  private async windowsFollowing(
    settlement: SettlementRecord,
    state: 'SETTLED' | 'ABORTED',
    now: string,
  ): Promise<SettlementWindowRecord[]> {
    const settled = new Set(
      settlement.accounts.filter((a) => a.state === 'SETTLED').map((a) => a.accountId),
    );
    const follows = (c: WindowContentRecord): boolean =>
      c.settlementId === settlement.id &&
      c.state !== state &&
      (state === 'ABORTED' || c.nets.every((n) => settled.has(n.accountId)));
    const windows = await this.store.settlementWindows(settlement.windowIds);
    return windows.flatMap((w) => {
      if (!w.content.some(follows)) return [];
      const content = w.content.map((c) =>
        follows(c)
          ? {
              ...c,
              state,
              changedDate: now,
              ...(state === 'ABORTED' ? { settlementId: null } : {}),
            }
          : c,
      );
      return [{ ...w, content, state: windowStateAfter(state, w, content), changedDate: now }];
    });
  }
}

/** A window's state once its content follows a settlement's `state`. */
function windowStateAfter(
  state: 'SETTLED' | 'ABORTED',
  window: SettlementWindowRecord,
  content: readonly WindowContentRecord[],
): SettlementWindowRecord['state'] {
  if (state === 'ABORTED') return 'ABORTED';
  return content.every((c) => c.state === 'SETTLED') ? 'SETTLED' : window.state;
}
