import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';

import { BatchingLedger, type BatchingOptions } from '../../src/ledger/batching';
import { LEDGER_MODEL, LedgerUnavailableError } from '../../src/ports/ledger';
import {
  OK,
  refused,
  type AccountRef,
  type Ledger,
  type LedgerCommand,
  type LedgerOutcome,
  type LedgerTransferState,
  type ParticipantBalance,
  type WindowNet,
} from '../../src/ports/ledger';
import { deferred, settle, type Deferred } from '../support/deferred';

/** The fake's answer depends on the command, so that a misrouted outcome shows. */
function answerOf(command: LedgerCommand): LedgerOutcome {
  if (command.kind === 'fundsOutReserve') return refused('insufficient_liquidity');
  if (command.kind === 'fundsIn' && command.amount % 2n === 1n) return refused('inactive');
  return OK;
}

let nextId = 1n;
function fundsIn(amount = 2n): LedgerCommand {
  return { kind: 'fundsIn', id: nextId++, participant: 'dfsp', currency: 'USD', amount };
}
function fundsOut(): LedgerCommand {
  return {
    kind: 'fundsOutReserve',
    id: nextId++,
    participant: 'dfsp',
    currency: 'USD',
    amount: 5n,
  };
}
function commands(n: number): LedgerCommand[] {
  return Array.from({ length: n }, (_, i) => (i % 3 === 2 ? fundsOut() : fundsIn(BigInt(i))));
}
function idsOf(batch: readonly LedgerCommand[]): bigint[] {
  return batch.map((c) => (c as { id: bigint }).id);
}

class FakeLedger implements Ledger {
  readonly name = 'tigerbeetle' as const;
  readonly batches: LedgerCommand[][] = [];
  /** When true, each execute waits until the test settles it through `held`. */
  hold = false;
  readonly held: Deferred<void>[] = [];
  /**
   * Execute calls still to fail, in order: an Error to throw, or a wrong outcome count ('ok': that
   * call succeeds).
   */
  readonly failures: ('throw' | 'short' | 'ok')[] = [];
  inFlight = 0;
  maxInFlight = 0;
  closed = false;
  balanceGate: Promise<void> | undefined;

  async execute(batch: readonly LedgerCommand[]): Promise<LedgerOutcome[]> {
    this.batches.push([...batch]);
    const number = this.batches.length;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const failure = this.failures.shift();
    try {
      if (this.hold) {
        const gate = deferred();
        this.held.push(gate);
        await gate.promise;
      } else {
        await tick();
      }
      if (failure === 'throw') throw new Error(`batch ${number} failed`);
      const outcomes = batch.map(answerOf);
      return failure === 'short' ? outcomes.slice(1) : outcomes;
    } finally {
      this.inFlight--;
    }
  }

  async hubBalances(refs: readonly unknown[]): Promise<bigint[]> {
    return refs.map(() => 0n);
  }

  async windowNets(_window: number, refs: readonly unknown[]): Promise<WindowNet[]> {
    return refs.map(() => ({ net: 0n, volume: 0n }));
  }

  async windowMoved(_window: number, currencies: readonly unknown[]): Promise<boolean[]> {
    return currencies.map(() => false);
  }

  async grossSinceWindowClose(currencies: readonly unknown[]): Promise<boolean[]> {
    return currencies.map(() => false);
  }

  async latestCutWindow(): Promise<undefined> {
    return undefined;
  }

  async identity(): Promise<undefined> {
    return undefined;
  }

  async recordIdentity(identity: bigint): Promise<bigint> {
    return identity;
  }

  async ledgerModel(): Promise<number> {
    return LEDGER_MODEL;
  }

  async recordLedgerModel(): Promise<number> {
    return LEDGER_MODEL;
  }

  async hubsOpened(currencies: readonly string[]): Promise<boolean[]> {
    return currencies.map(() => true);
  }

  async balances(refs: readonly AccountRef[]): Promise<(ParticipantBalance | undefined)[]> {
    if (this.balanceGate !== undefined) await this.balanceGate;
    return refs.map((r) => ({
      liquidity: BigInt(r.participant.length),
      fundsOutReserved: 0n,
      position: 0n,
      reserved: 0n,
      netDebitCap: 0n,
      active: true,
    }));
  }

  async transferStates(ids: readonly bigint[]): Promise<LedgerTransferState[]> {
    if (this.balanceGate !== undefined) await this.balanceGate;
    return ids.map((id) => (id % 2n === 0n ? 'committed' : 'reserved'));
  }

  async finishedAt(ids: readonly bigint[]): Promise<(number | undefined)[]> {
    if (this.balanceGate !== undefined) await this.balanceGate;
    return ids.map((id) => (id % 2n === 0n ? Number(id) : undefined));
  }

  async positionsAdjusted(ids: readonly bigint[]): Promise<boolean[]> {
    return ids.map(() => false);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

const OPTIONS: BatchingOptions = {
  maxBatchCommands: 100,
  maxInFlight: 1,
  lingerMs: 0,
  maxQueuedCommands: 1000,
  timeoutMs: 2000,
};

function setup(options: Partial<BatchingOptions> = {}): {
  fake: FakeLedger;
  ledger: BatchingLedger;
} {
  const fake = new FakeLedger();
  return { fake, ledger: new BatchingLedger(fake, { ...OPTIONS, ...options }) };
}

function assertUnavailable(error: unknown, pattern: RegExp): boolean {
  assert.ok(
    error instanceof LedgerUnavailableError,
    `expected LedgerUnavailableError, got ${String(error)}`,
  );
  assert.equal(error.name, 'LedgerUnavailableError');
  assert.match(error.message, pattern);
  return true;
}

test('calls issued in the same tick coalesce into one inner batch, in order, with outcomes routed back', async () => {
  const { fake, ledger } = setup();
  assert.equal(ledger.name, 'tigerbeetle');
  const groups = [commands(1), commands(3), commands(2), commands(5), commands(1)];
  const results = await Promise.all(groups.map((g) => ledger.execute(g)));
  assert.equal(fake.batches.length, 1);
  assert.deepEqual(idsOf(fake.batches[0]!), idsOf(groups.flat()));
  for (let i = 0; i < groups.length; i++)
    assert.deepEqual(results[i], groups[i]!.map(answerOf), `caller ${i}`);
  // The answers really differ by command, so routing is tested.
  assert.ok(results.flat().some((o) => !o.ok) && results.flat().some((o) => o.ok));
});

test('an empty call answers at once without a ledger request', async () => {
  const { fake, ledger } = setup();
  assert.deepEqual(await ledger.execute([]), []);
  assert.equal(fake.batches.length, 0);
});

test('maxBatchCommands splits batches between callers, never inside one', async () => {
  const { fake, ledger } = setup({ maxBatchCommands: 5, maxInFlight: 4 });
  const a = commands(3);
  const b = commands(3);
  const c = commands(2);
  const results = await Promise.all([ledger.execute(a), ledger.execute(b), ledger.execute(c)]);
  assert.deepEqual(fake.batches.map(idsOf), [idsOf(a), idsOf([...b, ...c])]);
  assert.deepEqual(results, [a.map(answerOf), b.map(answerOf), c.map(answerOf)]);
});

test('random caller sizes: every batch within the limit, each caller whole and in FIFO order', async () => {
  let seed = 12345;
  const random = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const { fake, ledger } = setup({ maxBatchCommands: 7, maxInFlight: 2 });
  const groups = Array.from({ length: 60 }, () => commands(1 + Math.floor(random() * 7)));
  const results = await Promise.all(groups.map((g) => ledger.execute(g)));
  for (let i = 0; i < groups.length; i++) assert.deepEqual(results[i], groups[i]!.map(answerOf));
  for (const batch of fake.batches) assert.ok(batch.length <= 7 && batch.length > 0);
  assert.deepEqual(idsOf(fake.batches.flat()), idsOf(groups.flat()));
  for (const group of groups) {
    const holder = fake.batches.find((batch) => batch.includes(group[0]!))!;
    const start = holder.indexOf(group[0]!);
    assert.deepEqual(idsOf(holder.slice(start, start + group.length)), idsOf(group));
  }
  assert.ok(fake.batches.length < groups.length, 'some callers shared a batch');
});

test('a caller with more commands than one batch holds is sent in batches, each once the one before is answered', async () => {
  const { fake, ledger } = setup({ maxBatchCommands: 3, maxInFlight: 2 });
  fake.hold = true;
  const many = commands(8);
  const result = ledger.execute(many);
  for (const expected of [many.slice(0, 3), many.slice(3, 6), many.slice(6)]) {
    await settle();
    // A free slot stays unused: the next chunk must not overtake the one in flight.
    assert.equal(fake.inFlight, 1);
    assert.deepEqual(idsOf(fake.batches.at(-1)!), idsOf(expected));
    fake.held.at(-1)!.resolve();
  }
  assert.deepEqual(await result, many.map(answerOf));
  assert.equal(fake.batches.length, 3);

  // At the default limit too: a start-up opening more participant accounts than 1,000.
  const { fake: fake1000, ledger: ledger1000 } = setup({
    maxBatchCommands: 1000,
    maxQueuedCommands: 1000,
  });
  const opening = commands(2500);
  assert.deepEqual(await ledger1000.execute(opening), opening.map(answerOf));
  assert.deepEqual(
    fake1000.batches.map((b) => b.length),
    [1000, 1000, 500],
  );
  assert.deepEqual(idsOf(fake1000.batches.flat()), idsOf(opening));
});

test('a failed chunk fails its caller and sends no later chunk', async () => {
  const { fake, ledger } = setup({ maxBatchCommands: 3 });
  fake.failures.push('ok', 'throw');
  await assert.rejects(ledger.execute(commands(9)), /batch 2 failed/);
  await settle();
  assert.equal(fake.batches.length, 2);
});

test('maxInFlight bounds concurrent inner calls; arrivals meanwhile form the next batch', async () => {
  const { fake, ledger } = setup({ maxBatchCommands: 2, maxInFlight: 2 });
  fake.hold = true;
  const groups = [commands(2), commands(2), commands(2), commands(1), commands(1)];
  const results = groups.map((g) => ledger.execute(g));
  await settle();
  assert.equal(fake.inFlight, 2);
  assert.equal(fake.batches.length, 2);
  fake.held[0]!.resolve();
  await settle();
  assert.equal(fake.inFlight, 2);
  assert.equal(fake.batches.length, 3);
  fake.held[1]!.resolve();
  await settle();
  // Both remaining single commands went out together.
  assert.deepEqual(fake.batches.map(idsOf), [
    idsOf(groups[0]!),
    idsOf(groups[1]!),
    idsOf(groups[2]!),
    idsOf([...groups[3]!, ...groups[4]!]),
  ]);
  fake.held[2]!.resolve();
  fake.held[3]!.resolve();
  assert.deepEqual(
    await Promise.all(results),
    groups.map((g) => g.map(answerOf)),
  );
  assert.equal(fake.maxInFlight, 2);

  const { fake: fake1, ledger: ledger1 } = setup({ maxInFlight: 1 });
  fake1.hold = true;
  const first = ledger1.execute(commands(1));
  await settle();
  const later = [commands(1), commands(2), commands(1)];
  const laterResults = later.map((g) => ledger1.execute(g));
  await settle();
  assert.equal(fake1.batches.length, 1, 'nothing more is sent while the only slot is busy');
  fake1.held[0]!.resolve();
  await settle();
  assert.equal(fake1.batches.length, 2);
  assert.deepEqual(idsOf(fake1.batches[1]!), idsOf(later.flat()));
  fake1.held[1]!.resolve();
  await first;
  assert.deepEqual(
    await Promise.all(laterResults),
    later.map((g) => g.map(answerOf)),
  );
  assert.equal(fake1.maxInFlight, 1);
});

test('a failing inner batch rejects exactly its own callers', async () => {
  const { fake, ledger } = setup({ maxBatchCommands: 3, maxInFlight: 2 });
  fake.failures.push('throw');
  const a = commands(2);
  const b = commands(1);
  const c = commands(3);
  const [ra, rb, rc] = await Promise.allSettled([
    ledger.execute(a),
    ledger.execute(b),
    ledger.execute(c),
  ]);
  assert.deepEqual(fake.batches.map(idsOf), [idsOf([...a, ...b]), idsOf(c)]);
  assert.equal(ra!.status, 'rejected');
  assert.equal(rb!.status, 'rejected');
  assert.match(String((ra as PromiseRejectedResult).reason), /batch 1 failed/);
  assert.equal((ra as PromiseRejectedResult).reason, (rb as PromiseRejectedResult).reason);
  assert.deepEqual(rc, { status: 'fulfilled', value: c.map(answerOf) });
  assert.equal(ledger.stats().failedBatches, 1);
  // The ledger keeps working afterwards.
  const d = commands(2);
  assert.deepEqual(await ledger.execute(d), d.map(answerOf));
});

test('an answer with the wrong number of outcomes fails the whole batch', async () => {
  const { fake, ledger } = setup();
  fake.failures.push('short');
  const results = await Promise.allSettled([
    ledger.execute(commands(2)),
    ledger.execute(commands(1)),
  ]);
  for (const result of results) {
    assert.equal(result.status, 'rejected');
    assert.match(
      String((result as PromiseRejectedResult).reason),
      /executor answered 2 outcomes for 3 items/,
    );
  }
});

test('a hanging inner call times callers out; a caller still queued is dropped and never sent', async () => {
  const { fake, ledger } = setup({ timeoutMs: 50, maxQueuedCommands: 3 });
  fake.hold = true;
  const started = Date.now();
  const sent = ledger.execute(commands(1));
  await settle();
  assert.equal(fake.batches.length, 1);
  const queued = commands(3);
  const waiting = ledger.execute(queued);
  await assert.rejects(sent, (error: unknown) =>
    assertUnavailable(error, /no answer within 50 ms/),
  );
  await assert.rejects(waiting, (error: unknown) =>
    assertUnavailable(error, /no answer within 50 ms/),
  );
  assert.ok(Date.now() - started >= 45, 'waited about timeoutMs');
  assert.equal(ledger.stats().timeouts, 2);
  // The ledger answers late: the queued caller is gone, so nothing else goes out.
  fake.held[0]!.resolve();
  await settle();
  assert.equal(fake.batches.length, 1);
  assert.ok(!fake.batches.flat().some((c) => queued.includes(c)));
  // The dropped commands no longer count against maxQueuedCommands.
  fake.hold = false;
  const next = commands(3);
  assert.deepEqual(await ledger.execute(next), next.map(answerOf));
  assert.deepEqual(idsOf(fake.batches[1]!), idsOf(next));
});

test('each caller times out at its own deadline, and no timer is left once every caller is answered', async () => {
  const { fake, ledger } = setup({ timeoutMs: 80 });
  fake.hold = true;
  const timers = (): number =>
    process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
  const before = timers();
  const started = performance.now();
  const first = ledger.execute(commands(1));
  await sleep(40);
  const second = ledger.execute(commands(1));
  const rejectedAt = async (call: Promise<unknown>): Promise<number> => {
    await assert.rejects(call, (error: unknown) =>
      assertUnavailable(error, /no answer within 80 ms/),
    );
    return performance.now() - started;
  };
  const [firstAt, secondAt] = await Promise.all([rejectedAt(first), rejectedAt(second)]);
  // Never before its own deadline (the second's is 40 ms after the first's); the upper bound only
  // catches a caller left waiting, generous because the machine may be busy.
  assert.ok(firstAt >= 79 && firstAt < 5000, `first answered after ${firstAt} ms`);
  assert.ok(secondAt >= 119 && secondAt < 5000, `second answered after ${secondAt} ms`);
  assert.equal(ledger.stats().timeouts, 2);
  // Answered callers leave no timer behind (a timer per queue, armed only while someone waits).
  fake.held.splice(0).forEach((gate) => gate.resolve());
  fake.hold = false;
  for (let round = 0; round < 50; round++) await ledger.execute(commands(1 + (round % 3)));
  assert.equal(timers(), before);
});

test("a caller's own deadline, sooner than timeoutMs, bounds its wait: queued, it is dropped unsent", async () => {
  const { fake, ledger } = setup({ timeoutMs: 5_000 });
  fake.hold = true;
  const started = performance.now();
  const sent = ledger.execute(commands(1), started + 60);
  await settle();
  assert.equal(fake.batches.length, 1);
  // Behind the busy slot: its deadline comes while it is still queued.
  const queued = commands(2);
  const waiting = ledger.execute(queued, started + 60);
  const rejectedAt = async (call: Promise<unknown>): Promise<number> => {
    await assert.rejects(call, (error: unknown) => assertUnavailable(error, /by the deadline/));
    return performance.now() - started;
  };
  const [sentAt, waitingAt] = await Promise.all([rejectedAt(sent), rejectedAt(waiting)]);
  // At the deadline (a timer may fire a few ms early by the event loop's cached clock); the upper
  // bound, far below timeoutMs, catches timeoutMs applying instead.
  for (const at of [sentAt, waitingAt]) assert.ok(at >= 50 && at < 2_500, `answered at ${at} ms`);
  assert.equal(ledger.stats().timeouts, 2);
  fake.held[0]!.resolve();
  await settle();
  assert.equal(fake.batches.length, 1, 'the queued caller was never sent');
  // A deadline already past: refused at once, nothing sent; lookups as well, never asked.
  fake.hold = false;
  await assert.rejects(ledger.execute(commands(1), performance.now()), (error: unknown) =>
    assertUnavailable(error, /no time left/),
  );
  const gate = deferred();
  fake.balanceGate = gate.promise;
  await assert.rejects(ledger.transferStates([1n], performance.now() + 40), (error: unknown) =>
    assertUnavailable(error, /no answer within/),
  );
  await assert.rejects(ledger.finishedAt([1n], performance.now() - 1), (error: unknown) =>
    assertUnavailable(error, /no time left/),
  );
  gate.resolve();
  assert.equal(fake.batches.length, 1);
  // A later deadline than timeoutMs changes nothing; the callers' deadlines reach the executor.
  assert.deepEqual(await ledger.execute(queued, performance.now() + 60_000), queued.map(answerOf));
});

test('maxQueuedCommands refuses at once while the queue is full', async () => {
  const { fake, ledger } = setup({ maxQueuedCommands: 4 });
  fake.hold = true;
  const a = commands(3);
  const ra = ledger.execute(a);
  let refusedAt: number | undefined;
  const rb = ledger.execute(commands(2)).catch((error: unknown) => {
    refusedAt = fake.batches.length;
    throw error;
  });
  await assert.rejects(rb, (error: unknown) => assertUnavailable(error, /more than 4 queued/));
  assert.equal(refusedAt, 0, 'refused before anything was sent');
  const c = commands(1);
  const rc = ledger.execute(c); // 3 + 1 = 4 fits
  await settle();
  assert.deepEqual(idsOf(fake.batches[0]!), idsOf([...a, ...c]));
  // Sent commands no longer count as queued: 4 more fit while the batch is in flight.
  const d = commands(4);
  const rd = ledger.execute(d);
  await assert.rejects(ledger.execute(commands(1)), LedgerUnavailableError);
  fake.held[0]!.resolve();
  await settle();
  fake.held[1]!.resolve();
  assert.deepEqual(await ra, a.map(answerOf));
  assert.deepEqual(await rc, c.map(answerOf));
  assert.deepEqual(await rd, d.map(answerOf));
});

test('stats count batches, commands, the largest batch, and observers see each batch', async () => {
  const { fake, ledger } = setup({ maxBatchCommands: 4, maxInFlight: 1 });
  const observed: number[] = [];
  ledger.batchObservers.push((size, latencyMs) => {
    assert.ok(latencyMs >= 0);
    observed.push(size);
  });
  fake.failures.push('throw');
  await Promise.allSettled([
    ledger.execute(commands(3)),
    ledger.execute(commands(2)),
    ledger.execute(commands(2)),
    ledger.execute(commands(1)),
  ]);
  const stats = ledger.stats();
  assert.equal(stats.batches, 3);
  assert.equal(stats.items, 8);
  assert.equal(stats.maxBatch, 4);
  assert.equal(stats.failedBatches, 1);
  assert.equal(stats.timeouts, 0);
  assert.ok(stats.totalLatencyMs >= stats.maxLatencyMs && stats.maxLatencyMs >= 0);
  assert.deepEqual(observed, [3, 4, 1]);
  assert.deepEqual(
    fake.batches.map((b) => b.length),
    [3, 4, 1],
  );
  // stats() is a copy.
  stats.batches = 99;
  assert.equal(ledger.stats().batches, 3);
});

test('lingerMs lets a lone call wait for company', async () => {
  const { fake, ledger } = setup({ lingerMs: 40 });
  const a = ledger.execute(commands(1));
  await sleep(5);
  assert.equal(fake.batches.length, 0);
  const b = ledger.execute(commands(1));
  await Promise.all([a, b]);
  assert.equal(fake.batches.length, 1);
  assert.equal(fake.batches[0]!.length, 2);
});

test('close rejects queued callers, lets sent ones finish and closes the inner ledger', async () => {
  const { fake, ledger } = setup();
  fake.hold = true;
  const a = commands(1);
  const sent = ledger.execute(a);
  await settle();
  const queued = ledger.execute(commands(2));
  await ledger.close();
  assert.equal(fake.closed, true);
  await assert.rejects(queued, (error: unknown) =>
    assertUnavailable(error, /ledger unavailable: closed/),
  );
  fake.held[0]!.resolve();
  assert.deepEqual(await sent, a.map(answerOf));
  await settle();
  assert.equal(fake.batches.length, 1);
});

test('balances, transferStates and finishedAt pass through, bounded by timeoutMs', async () => {
  const { fake, ledger } = setup({ timeoutMs: 50 });
  assert.deepEqual(await ledger.balances([{ participant: 'abc', currency: 'USD' }]), [
    {
      liquidity: 3n,
      fundsOutReserved: 0n,
      position: 0n,
      reserved: 0n,
      netDebitCap: 0n,
      active: true,
    },
  ]);
  assert.deepEqual(await ledger.transferStates([1n, 2n]), ['reserved', 'committed']);
  assert.deepEqual(await ledger.finishedAt([1n, 2n]), [undefined, 2]);
  const gate = deferred();
  fake.balanceGate = gate.promise;
  await assert.rejects(
    ledger.balances([{ participant: 'abc', currency: 'USD' }]),
    (error: unknown) => assertUnavailable(error, /50 ms/),
  );
  await assert.rejects(ledger.transferStates([1n]), (error: unknown) =>
    assertUnavailable(error, /50 ms/),
  );
  await assert.rejects(ledger.finishedAt([1n]), (error: unknown) =>
    assertUnavailable(error, /50 ms/),
  );
  gate.resolve();
});

test('the constructor refuses non-positive limits', () => {
  const fake = new FakeLedger();
  for (const bad of [
    { maxBatchCommands: 0 },
    { maxInFlight: 0 },
    { timeoutMs: 0 },
    { lingerMs: -1 },
    { maxQueuedCommands: 0 },
  ]) {
    assert.throws(
      () => new BatchingLedger(fake, { ...OPTIONS, ...bad }),
      /batch queue limits must be positive/,
      JSON.stringify(bad),
    );
  }
});

test('the adaptive linger is on only with a maxLingerMs above lingerMs', async () => {
  const adaptive = { latencyBudgetMs: 1000, growAtCommands: 2 };
  for (const [options, grows] of [
    [{ adaptive }, false],
    [{ adaptive: { ...adaptive, maxLingerMs: 0 } }, false],
    [{ adaptive: { ...adaptive, maxLingerMs: 4 } }, true],
  ] as const) {
    const { ledger } = setup(options);
    for (let i = 0; i < 3; i++)
      await Promise.all([ledger.execute(commands(1)), ledger.execute(commands(1))]);
    assert.equal(ledger.stats().lingerMs, grows ? 1.5 : 0, JSON.stringify(options));
  }
});
