/**
 * An abort and a PUT committing the same settlement, in flight at once, forced into a chosen
 * order rather than left to timing. Each can be held where the other could slip in between its
 * ledger and its metadata: the abort just after the ledger answered its check (no commit step
 * there yet), the PUT just after its commit step moved the money, before its save (where
 * FAULT_POINT `settlement.after-ledger` sits). The first is sent and held; the second is sent,
 * and the first let go once the second either reached its own hold (the changes of a settlement
 * do not take turns: it overtook) or asked for the settlement's turn (MetadataStore
 * settlementTurn: it waits behind); the first is answered, then the second is let go.
 * Money: A pays B 300, so A is the net sender (its commit step lowers its position) and B the
 * net recipient (reserved, then put back by an abort).
 */
import assert from 'node:assert/strict';
import type {
  MetadataStore,
  SettlementAccountRecord,
  SettlementRecord,
  SettlementWrite,
} from '../../src/ports/metadata';
import { LedgerUnavailableError } from '../../src/ports/ledger';
import type { Ledger, LedgerCommand } from '../../src/ports/ledger';
import { stepCommand } from '../../src/domain/settlement/rules';
import { deferred } from './deferred';
import { errorCode, type Hub } from './settlement-hub';
import { type Answer } from './service-process';

export type Change = 'abort' | 'commit';

/** One hold point: passed at once unless armed; armed, it holds the first caller until released. */
class Hold {
  readonly reached = deferred();
  readonly released = deferred();
  private armed = true;
  wasReached = false;

  async pass(): Promise<void> {
    if (!this.armed) return;
    this.armed = false;
    this.wasReached = true;
    this.reached.resolve();
    await this.released.promise;
  }

  disarm(): void {
    this.armed = false;
    this.released.resolve();
  }
}

/** Wraps `target`, replacing the methods given (bound to the target); the rest as they are. */
function intercepted<T extends object>(target: T, methods: Partial<Record<keyof T, unknown>>): T {
  return new Proxy(target, {
    get(inner, key) {
      if (key in methods) return methods[key as keyof T];
      const value: unknown = Reflect.get(inner, key);
      return typeof value === 'function' ? value.bind(inner) : value;
    },
  });
}

export class SettlementRace {
  private holds: Record<Change, Hold> = { abort: new Hold(), commit: new Hold() };
  /** Told when a change asks for a settlement's turn. */
  private onTurn: (() => void) | undefined;

  constructor() {
    this.holds.abort.disarm();
    this.holds.commit.disarm();
  }

  /** The ledger, the abort held after its check (the only caller of positionsAdjusted). */
  ledger(inner: Ledger): Ledger {
    return intercepted(inner, {
      positionsAdjusted: async (ids: readonly bigint[]) => {
        const made = await inner.positionsAdjusted(ids);
        await this.holds.abort.pass();
        return made;
      },
    });
  }

  /** The store, the PUT held before saving a commit, and every request for a turn reported. */
  store(inner: MetadataStore): MetadataStore {
    return intercepted(inner, {
      writeSettlement: async (write: SettlementWrite) => {
        if (write.settlement?.accounts.some((a) => a.state === 'PS_TRANSFERS_COMMITTED'))
          await this.holds.commit.pass();
        return inner.writeSettlement(write);
      },
      settlementTurn: (id: number, work: () => Promise<unknown>) => {
        this.onTurn?.();
        return inner.settlementTurn(id, work);
      },
    });
  }

  /** Sends `first`, then the other while `first` is held; answers both. */
  async run(
    first: Change,
    send: Record<Change, () => Promise<Answer>>,
  ): Promise<Record<Change, Answer>> {
    const second: Change = first === 'abort' ? 'commit' : 'abort';
    this.holds = { abort: new Hold(), commit: new Hold() };
    const held = this.holds[first];
    try {
      const firstAnswer = send[first]();
      const early = firstAnswer.then((a) =>
        assert.ok(
          held.wasReached,
          `the ${first} was answered before it reached its hold: ${a.text}`,
        ),
      );
      await Promise.race([held.reached.promise, early]);
      const arrived = deferred();
      this.onTurn = () => arrived.resolve();
      const secondAnswer = send[second]();
      await Promise.race([arrived.promise, this.holds[second].reached.promise, secondAnswer]);
      this.onTurn = undefined;
      held.disarm();
      const answers = { [first]: await firstAnswer } as Record<Change, Answer>;
      this.holds[second].disarm();
      answers[second] = await secondAnswer;
      return answers;
    } finally {
      this.onTurn = undefined;
      for (const hold of Object.values(this.holds)) hold.disarm();
    }
  }
}

/**
 * A pays B 300, the window closed and settled up to PS_TRANSFERS_RESERVED: the settlement, its
 * sender and recipient accounts, the positions before it, and `settle` (a new settlement over the
 * window).
 */
async function reservedSettlement(
  hub: Hub,
  store: MetadataStore,
): Promise<{
  id: number;
  reserved: SettlementRecord;
  sender: SettlementAccountRecord;
  recipient: SettlementAccountRecord;
  unsettled: string[];
  settle: () => Promise<number>;
}> {
  await hub.onboardHub();
  for (const short of ['A', 'B']) await hub.onboard(short, '1000', '1000');
  assert.equal((await hub.transfer('A', 'B', '300', 'commit')).status, 201);
  const window = await hub.openWindowId();
  assert.equal(
    (
      await hub.v2('POST', `/settlementWindows/${window}`, {
        state: 'CLOSED',
        reason: 'end of day',
      })
    ).status,
    200,
  );
  const settle = async (): Promise<number> => {
    const created = await hub.v2('POST', '/settlements', {
      settlementModel: 'DEFERREDNETUSD',
      reason: 'r',
      settlementWindows: [{ id: window }],
    });
    assert.equal(created.status, 200, created.text);
    return created.body.id as number;
  };
  const id = await settle();
  await hub.settleAll(id, 'PS_TRANSFERS_RECORDED');
  const unsettled = await hub.positions('A', 'B');
  await hub.settleAll(id, 'PS_TRANSFERS_RESERVED');
  const [reserved] = await store.settlements([id]);
  const sender = reserved!.accounts.find((a) => BigInt(a.netAmount) > 0n)!;
  const recipient = reserved!.accounts.find((a) => BigInt(a.netAmount) < 0n)!;
  return { id, reserved: reserved!, sender, recipient, unsettled, settle };
}

/**
 * A settlement RESERVED, then its abort (through `via.abort`) and a PUT committing the sender
 * (through `via.commit`) raced, `first` first; checks that metadata and ledger agree and that
 * finishing (the settlement, or a new one over the freed window) moves the money exactly once.
 * `ledger` and `store` are read directly (unheld) for the check.
 */
export async function abortRacingCommit(
  first: Change,
  race: SettlementRace,
  via: Record<Change, Hub>,
  ledger: Ledger,
  store: MetadataStore,
): Promise<void> {
  const hub = via.abort;
  const { id, reserved, sender, unsettled, settle } = await reservedSettlement(hub, store);
  const commitStep = stepCommand(reserved, sender, 'commit')!.id;

  const answers = await race.run(first, {
    abort: () =>
      via.abort.v2('PUT', `/settlements/${id}`, { state: 'ABORTED', reason: 'wrong figures' }),
    commit: () =>
      via.commit.v2('PUT', `/settlements/${id}`, {
        participants: [
          {
            id: sender.participantId,
            accounts: [{ id: sender.accountId, state: 'PS_TRANSFERS_COMMITTED', reason: 'paid' }],
          },
        ],
      }),
  });
  const [committedInLedger] = await ledger.positionsAdjusted([commitStep]);
  const after = (await hub.v2('GET', `/settlements/${id}`)).body;
  const states = Object.fromEntries(
    after.participants.flatMap((p: any) =>
      p.accounts.map((a: any) => [a.netSettlementAmount.amount, a.state]),
    ),
  );
  const commitResult = answers.commit.body?.participants?.[0]?.accounts?.[0];
  assert.equal(answers.commit.status, 200, answers.commit.text);

  if (first === 'abort') {
    assert.equal(answers.abort.status, 200, answers.abort.text);
    assert.equal(after.state, 'ABORTED');
    assert.equal(
      committedInLedger,
      false,
      'the metadata says ABORTED: the ledger must hold no commit step of the settlement',
    );
    assert.match(
      JSON.stringify(commitResult?.errorInformation),
      /State change not allowed/,
      'the PUT, after the abort, is refused as on an ABORTED settlement',
    );
    assert.deepEqual(
      await hub.positions('A', 'B'),
      unsettled,
      'the abort put every position back; nothing else moved',
    );
    // The window is free again: settled anew, the sender's money moves once.
    const again = await settle();
    for (const state of [
      'PS_TRANSFERS_RECORDED',
      'PS_TRANSFERS_RESERVED',
      'PS_TRANSFERS_COMMITTED',
      'SETTLED',
    ])
      await hub.settleAll(again, state);
  } else {
    assert.equal(commitResult?.errorInformation, undefined, answers.commit.text);
    assert.equal(answers.abort.status, 400, answers.abort.text);
    assert.equal(errorCode(answers.abort), '3100');
    assert.match(
      answers.abort.text,
      new RegExp(
        `At least one settlement transfer is committed for settlement '${id}'. Aborting is not allowed.`,
      ),
    );
    assert.equal(committedInLedger, true);
    assert.deepEqual(
      states,
      { 300: 'PS_TRANSFERS_COMMITTED', [-300]: 'PS_TRANSFERS_RESERVED' },
      'the metadata shows the commit the ledger made',
    );
    for (const state of ['PS_TRANSFERS_COMMITTED', 'SETTLED']) await hub.settleAll(id, state);
  }
  assert.deepEqual(
    await hub.positions('A', 'B'),
    ['0', '0'],
    'settled: the money moved exactly once',
  );
}

/**
 * A ledger request that times out for its caller and lands later: the first request `late`
 * matches is answered at once with the error the service's ledger queue gives on LEDGER_TIMEOUT_MS
 * (the caller's turn ends) and applied only when `land` is called — as the TigerBeetle client
 * keeps retrying a request already sent while the cluster is slow or partitioned.
 */
export class LateRequest {
  private held: (readonly LedgerCommand[])[] = [];
  private late: ((commands: readonly LedgerCommand[]) => boolean) | undefined;

  /** From now on, the first request `late` matches is held. */
  arm(late: (commands: readonly LedgerCommand[]) => boolean): void {
    this.late = late;
  }

  ledger(inner: Ledger): Ledger {
    return intercepted(inner, {
      execute: async (commands: readonly LedgerCommand[]) => {
        if (this.late?.(commands) === true) {
          this.late = undefined;
          this.held.push([...commands]);
          throw new LedgerUnavailableError('timed out after 5000 ms');
        }
        return inner.execute(commands);
      },
    });
  }

  /** Applies the held request to `inner` (the ledger unwrapped); whether one was held. */
  async land(inner: Ledger): Promise<boolean> {
    const held = this.held.splice(0);
    for (const commands of held) await inner.execute(commands);
    return held.length > 0;
  }
}

/**
 * A settlement RESERVED; the `late` change (a PUT committing the sender, or the abort) sends
 * its request — its decision, or its steps — that times out and lands only after the other
 * change was answered (`part`: which request of the late change is the late one; before the
 * ledger decided, a change had no decision: its steps were its first request). Checks that the
 * ledger never holds both a commit step and an abort step of the settlement, that metadata and
 * ledger agree once the late request landed, and that finishing (the settlement, or a new one
 * over the freed window) moves the money exactly once.
 */
export async function lateRequestAcrossChange(
  late: Change,
  part: 'decision' | 'steps',
  hub: Hub,
  ledger: Ledger,
  store: MetadataStore,
  request: LateRequest,
): Promise<void> {
  const { id, reserved, sender, recipient, unsettled, settle } = await reservedSettlement(
    hub,
    store,
  );
  const commitStep = stepCommand(reserved, sender, 'commit')!.id;
  const abortStep = stepCommand(reserved, recipient, 'abort')!.id;
  const lateStep = late === 'commit' ? commitStep : abortStep;
  request.arm((commands) =>
    commands.some(
      (c) =>
        (c.kind === 'adjustPosition' && c.id === lateStep) ||
        (part === 'decision' && c.kind === 'decideSettlement' && c.decision === late),
    ),
  );

  const send: Record<Change, () => Promise<Answer>> = {
    abort: () => hub.v2('PUT', `/settlements/${id}`, { state: 'ABORTED', reason: 'wrong figures' }),
    commit: () =>
      hub.v2('PUT', `/settlements/${id}`, {
        participants: [
          {
            id: sender.participantId,
            accounts: [{ id: sender.accountId, state: 'PS_TRANSFERS_COMMITTED', reason: 'paid' }],
          },
        ],
      }),
  };
  const timedOut = await send[late]();
  assert.notEqual(
    timedOut.status,
    200,
    `the ${late} whose request timed out failed: ${timedOut.text}`,
  );
  const other = await send[late === 'commit' ? 'abort' : 'commit']();
  assert.ok(other.status === 200 || errorCode(other) === '3100', other.text);
  assert.ok(await request.land(ledger), `the ${late}'s ${part} request was held and landed late`);

  const [committed, aborted] = await ledger.positionsAdjusted([commitStep, abortStep]);
  assert.equal(
    committed === true && aborted === true,
    false,
    'the ledger holds both a commit step and an abort step of the settlement',
  );
  const [after] = await store.settlements([id]);
  if (after!.state === 'ABORTED') {
    assert.equal(
      committed,
      false,
      'the metadata says ABORTED: the ledger must hold no commit step of the settlement',
    );
    assert.equal(aborted, true);
    assert.deepEqual(
      await hub.positions('A', 'B'),
      unsettled,
      'the abort put every position back; nothing else moved',
    );
    const again = await settle();
    for (const state of [
      'PS_TRANSFERS_RECORDED',
      'PS_TRANSFERS_RESERVED',
      'PS_TRANSFERS_COMMITTED',
      'SETTLED',
    ])
      await hub.settleAll(again, state);
  } else {
    assert.equal(
      aborted,
      false,
      `the metadata says ${after!.state}: the ledger must hold no abort step of the settlement`,
    );
    // A commit step that landed after its PUT failed is recorded by the PUT repeated (`exists`).
    for (const state of ['PS_TRANSFERS_COMMITTED', 'SETTLED']) await hub.settleAll(id, state);
    assert.equal((await hub.v2('GET', `/settlements/${id}`)).body.state, 'SETTLED');
  }
  assert.deepEqual(
    await hub.positions('A', 'B'),
    ['0', '0'],
    'settled: the money moved exactly once',
  );
}
