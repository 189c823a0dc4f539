/**
 * Scripted cases where the TigerBeetle adapter once answered otherwise than the embedded ledger
 * (its oracle): each runs on both, one command batch at a time, and both must give the expected
 * outcomes, balances and transfer states. One replica: nothing here is about replication.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { EmbeddedLedger } from '../src/ledger/embedded';
import {
  OK,
  refused,
  type Ledger,
  type LedgerCommand,
  type LedgerOutcome,
  type LedgerRefusal,
} from '../src/ports/ledger';
import { useRealCluster } from './support/real-cluster';

const cluster = useRealCluster('the ledger agreement cases', 1);

const freshId = (): bigint => BigInt('0x' + randomBytes(16).toString('hex')) | 1n;

/**
 * Both ledgers with a hub and two participants (funded, with a cap) in a currency of the case's
 * own.
 */
async function setUp(
  t: { skip: (why: string) => void },
  currency: string,
): Promise<
  | {
      run: (
        commands: LedgerCommand[],
        expected: (LedgerOutcome | LedgerRefusal)[],
        what: string,
      ) => Promise<void>;
      ledgers: Ledger[];
      names: [string, string];
    }
  | undefined
> {
  if (cluster.current() === undefined) {
    t.skip('no TigerBeetle server binary');
    return undefined;
  }
  const ledgers: Ledger[] = [new EmbeddedLedger(), cluster.ledger()];
  const run = async (
    commands: LedgerCommand[],
    expected: (LedgerOutcome | LedgerRefusal)[],
    what: string,
  ): Promise<void> => {
    const want = expected.map((e) => (typeof e === 'string' ? refused(e) : e));
    const [embedded, tigerbeetle] = await Promise.all(ledgers.map((l) => l.execute(commands)));
    assert.deepEqual(embedded, want, `${what}: embedded`);
    assert.deepEqual(tigerbeetle, want, `${what}: TigerBeetle`);
    const refs = names.map((participant) => ({ participant, currency }));
    const [eb, tb] = await Promise.all(ledgers.map((l) => l.balances(refs)));
    assert.deepEqual(tb, eb, `${what}: balances`);
  };
  const run6 = randomBytes(3).toString('hex');
  const names: [string, string] = [`a${run6}`, `b${run6}`];
  await run([{ kind: 'openHub', currency }], [OK], 'open hub');
  for (const participant of names) {
    await run([{ kind: 'openParticipant', participant, currency }], [OK], 'open participant');
    await run(
      [{ kind: 'fundsIn', id: freshId(), participant, currency, amount: 10_000n }],
      [OK],
      'funds in',
    );
    await run(
      [{ kind: 'adjustNdc', id: freshId(), participant, currency, delta: 10_000n }],
      [OK],
      'cap',
    );
  }
  return { run, ledgers, names };
}

async function states(ledgers: Ledger[], ids: bigint[]): Promise<string[]> {
  const [embedded, tigerbeetle] = await Promise.all(ledgers.map((l) => l.transferStates(ids)));
  assert.deepEqual(tigerbeetle, embedded, 'transfer states');
  return embedded!;
}

test(
  'a funds out is finished for exactly its reserved amount; a retried reserve is compared',
  { timeout: 60_000 },
  async (t) => {
    const currency = 'EUR';
    const setup = await setUp(t, currency);
    if (setup === undefined) return;
    const {
      run,
      ledgers,
      names: [w, b],
    } = setup;
    try {
      const id = freshId();
      await run(
        [{ kind: 'fundsOutReserve', id, participant: w, currency, amount: 500n }],
        [OK],
        'reserve 500',
      );
      await run(
        [{ kind: 'fundsOutReserve', id, participant: w, currency, amount: 500n }],
        ['exists'],
        'the same reserve again',
      );
      await run(
        [{ kind: 'fundsOutReserve', id, participant: w, currency, amount: 300n }],
        ['modified'],
        'reserve 300 under its id',
      );
      await run(
        [{ kind: 'fundsOutCommit', id, participant: w, currency, amount: 300n }],
        ['invalid'],
        'commit 300 of 500',
      );
      await run(
        [{ kind: 'fundsOutAbort', id, participant: w, currency, amount: 300n }],
        ['invalid'],
        'abort 300 of 500',
      );
      await run(
        [{ kind: 'fundsOutCommit', id, participant: w, currency, amount: 500n }],
        [OK],
        'commit 500',
      );
      await run(
        [{ kind: 'fundsOutCommit', id, participant: w, currency, amount: 300n }],
        ['modified'],
        'commit 300 again',
      );

      const prepare: LedgerCommand = {
        kind: 'prepare',
        id: freshId(),
        payer: w,
        payee: b,
        currency,
        amount: 400n,
        timeoutSeconds: 60,
        payloadHash: 5n,
      };
      await run([prepare], [OK], 'prepare 400');
      await run(
        [{ kind: 'fundsOutReserve', id: prepare.id, participant: w, currency, amount: 400n }],
        ['modified'],
        "a reserve under the prepare's id",
      );
      const finish = { id: prepare.id, payer: w, payee: b, currency };
      // A commit's amount is the caller's to get right (LedgerCommand 'commit'): not checked here.
      await run([{ kind: 'abort', ...finish, amount: 300n }], ['invalid'], 'abort 300 of 400');
      assert.deepEqual(await states(ledgers, [prepare.id]), ['reserved']);
      await run([{ kind: 'commit', ...finish, amount: 400n }], [OK], 'commit 400');
      assert.deepEqual(await states(ledgers, [prepare.id]), ['committed']);
    } finally {
      await ledgers[1]!.close();
    }
  },
);

test(
  "a dependent transfer's finish is exists only when its own post or void is; a conversion finished alone refuses it as it left it",
  { timeout: 60_000 },
  async (t) => {
    const currency = 'KES';
    const setup = await setUp(t, currency);
    if (setup === undefined) return;
    const {
      run,
      ledgers,
      names: [a, b],
    } = setup;
    const prepare = (amount: bigint): LedgerCommand & { kind: 'prepare' } => ({
      kind: 'prepare',
      id: freshId(),
      payer: a,
      payee: b,
      currency,
      amount,
      timeoutSeconds: 60,
      payloadHash: 9n,
    });
    const reservation = (p: { id: bigint; amount: bigint }) => ({
      id: p.id,
      payer: a,
      payee: b,
      currency,
      amount: p.amount,
    });
    try {
      for (const kind of ['abort', 'commit'] as const) {
        const fx = prepare(100n);
        const tx = prepare(200n);
        await run([fx, tx], [OK, OK], 'prepare the conversion and the transfer');
        await run([{ kind, ...reservation(fx) }], [OK], `${kind} the conversion alone`);
        const dependent: LedgerCommand = { kind, ...reservation(tx), linked: reservation(fx) };
        await run(
          [dependent],
          [kind === 'abort' ? 'already_aborted' : 'already_committed'],
          `${kind} the transfer with its finished conversion`,
        );
        assert.deepEqual(await states(ledgers, [tx.id]), ['reserved']);
        await run([{ kind, ...reservation(tx) }], [OK], `${kind} the transfer alone`);
        await run([dependent], ['exists'], `${kind} the transfer with its conversion again`);
        await run(
          [{ kind, ...reservation(tx), amount: 201n, linked: reservation(fx) }],
          ['modified'],
          `${kind} it again for another amount`,
        );
      }
      const fx = prepare(100n);
      const tx = prepare(200n);
      await run([fx, tx], [OK, OK], 'prepare another pair');
      const dependent: LedgerCommand = {
        kind: 'commit',
        ...reservation(tx),
        linked: reservation(fx),
      };
      await run([dependent], [OK], 'commit both');
      await run([dependent], ['exists'], 'commit both again');
      await run(
        [{ kind: 'commit', ...reservation(fx) }],
        ['exists'],
        'commit the conversion alone after',
      );
      assert.deepEqual(await states(ledgers, [fx.id, tx.id]), ['committed', 'committed']);
    } finally {
      await ledgers[1]!.close();
    }
  },
);

test(
  'a funds out commit refused while the account was inactive succeeds under its next attempt once reactivated',
  { timeout: 60_000 },
  async (t) => {
    const currency = 'TZS';
    const setup = await setUp(t, currency);
    if (setup === undefined) return;
    const {
      run,
      ledgers,
      names: [z],
    } = setup;
    try {
      const id = freshId();
      const commit = {
        kind: 'fundsOutCommit' as const,
        id,
        participant: z,
        currency,
        amount: 700n,
      };
      await run(
        [{ kind: 'fundsOutReserve', id, participant: z, currency, amount: 700n }],
        [OK],
        'reserve',
      );
      await run(
        [{ kind: 'setActive', id: freshId(), participant: z, currency, active: false }],
        [OK],
        'deactivate',
      );
      await run([commit], ['inactive'], 'commit while inactive');
      await run(
        [{ kind: 'setActive', id: freshId(), participant: z, currency, active: true }],
        [OK],
        'reactivate',
      );
      await run([commit], ['failed_before'], 'commit again under the refused id');
      await run([{ ...commit, attempt: 1 }], [OK], 'commit under the next attempt');
      await run([{ ...commit, attempt: 1 }], ['exists'], 'that again');
      await run([{ ...commit, attempt: 2 }], ['already_committed'], 'a later attempt');
      await run(
        [{ kind: 'fundsOutAbort', id, participant: z, currency, amount: 700n }],
        ['already_committed'],
        'abort after',
      );
    } finally {
      await ledgers[1]!.close();
    }
  },
);

test(
  'a batch is applied in command order: a later command sees what an earlier one did',
  { timeout: 60_000 },
  async (t) => {
    const currency = 'UGX';
    const setup = await setUp(t, currency);
    if (setup === undefined) return;
    const {
      run,
      ledgers,
      names: [a],
    } = setup;
    const setActive = (active: boolean): LedgerCommand => ({
      kind: 'setActive',
      id: freshId(),
      participant: a,
      currency,
      active,
    });
    try {
      await run([setActive(false), setActive(true)], [OK, OK], 'deactivate and reactivate');
      await run([setActive(false), setActive(false)], [OK, OK], 'deactivate twice');
      await run([setActive(true), setActive(true)], [OK, OK], 'reactivate twice');
      const [embedded, tigerbeetle] = await Promise.all(
        ledgers.map((l) => l.balances([{ participant: a, currency }])),
      );
      assert.equal(embedded![0]!.active, true);
      assert.deepEqual(tigerbeetle, embedded);
      const late = `c${randomBytes(3).toString('hex')}`;
      await run(
        [
          { kind: 'fundsIn', id: freshId(), participant: late, currency, amount: 100n },
          { kind: 'openParticipant', participant: late, currency },
        ],
        ['not_found', OK],
        'funds in before its account is opened',
      );
      await run(
        [
          { kind: 'fundsIn', id: freshId(), participant: late, currency, amount: 100n },
          setActive(false),
          { kind: 'fundsIn', id: freshId(), participant: a, currency, amount: 100n },
        ],
        [OK, OK, 'inactive'],
        'funds in after a deactivation',
      );
      const out = { participant: late, currency, id: freshId() };
      await run(
        [
          { kind: 'fundsOutReserve', ...out, amount: 100n },
          { kind: 'fundsOutCommit', ...out, amount: 60n },
        ],
        [OK, 'invalid'],
        'a funds out reserved and committed for less in one batch',
      );
    } finally {
      await ledgers[1]!.close();
    }
  },
);

test(
  'a deactivation or reactivation racing another instance for the same account is OK, as applied one after the other',
  { timeout: 60_000 },
  async (t) => {
    const currency = 'RWF';
    const setup = await setUp(t, currency);
    if (setup === undefined) return;
    const {
      ledgers,
      names: [a],
    } = setup;
    const other = cluster.ledger();
    try {
      for (const active of [false, true]) {
        const commands = [0, 1].map(
          (): LedgerCommand => ({
            kind: 'setActive',
            id: freshId(),
            participant: a,
            currency,
            active,
          }),
        );
        assert.deepEqual(
          await ledgers[0]!.execute(commands),
          [OK, OK],
          'embedded, one after the other',
        );
        assert.deepEqual(
          await Promise.all([ledgers[1]!.execute([commands[0]!]), other.execute([commands[1]!])]),
          [[OK], [OK]],
          `TigerBeetle, racing (active: ${active})`,
        );
        const [embedded, tigerbeetle] = await Promise.all(
          ledgers.map((l) => l.balances([{ participant: a, currency }])),
        );
        assert.equal(tigerbeetle![0]!.active, active);
        assert.deepEqual(tigerbeetle, embedded);
      }
    } finally {
      await ledgers[1]!.close();
      await other.close();
    }
  },
);

test(
  "a dependent transfer's GROSS commit after the transfer expired: expired, the conversion kept",
  { timeout: 60_000 },
  async (t) => {
    const currency = 'GHS';
    const setup = await setUp(t, currency);
    if (setup === undefined) return;
    const {
      run,
      ledgers,
      names: [a, b],
    } = setup;
    const prepare = (
      amount: bigint,
      timeoutSeconds: number,
    ): LedgerCommand & { kind: 'prepare' } => ({
      kind: 'prepare',
      id: freshId(),
      payer: a,
      payee: b,
      currency,
      amount,
      timeoutSeconds,
      payloadHash: 3n,
    });
    const reservation = (p: { id: bigint; amount: bigint }) => ({
      id: p.id,
      payer: a,
      payee: b,
      currency,
      amount: p.amount,
    });
    try {
      const fx = prepare(100n, 60);
      const tx = prepare(200n, 1);
      await run([fx, tx], [OK, OK], 'prepare the conversion and a transfer that expires');
      await new Promise((resolve) => setTimeout(resolve, 2500));
      // Both posts come before either's settling legs; the transfer's refuses, and with it the
      // chain: the conversion stays reserved.
      await run(
        [
          {
            kind: 'commit',
            ...reservation(tx),
            linked: { ...reservation(fx), gross: true },
            gross: true,
          },
        ],
        ['expired'],
        'commit both after the expiry',
      );
      assert.deepEqual(await states(ledgers, [fx.id, tx.id]), ['reserved', 'expired']);
    } finally {
      await ledgers[1]!.close();
    }
  },
);

test(
  'an id used by one kind of command is modified for another, whichever of its events carries it',
  { timeout: 60_000 },
  async (t) => {
    const currency = 'ZMW';
    const setup = await setUp(t, currency);
    if (setup === undefined) return;
    const {
      run,
      ledgers,
      names: [a, b],
    } = setup;
    try {
      const id = freshId();
      await run(
        [{ kind: 'fundsIn', id, participant: a, currency, amount: 100n }],
        [OK],
        'funds in',
      );
      await run(
        [
          {
            kind: 'prepare',
            id,
            payer: a,
            payee: b,
            currency,
            amount: 100n,
            timeoutSeconds: 60,
            payloadHash: 1n,
          },
        ],
        ['modified'],
        "a prepare under the funds in's id",
      );
      await run(
        [{ kind: 'fundsOutReserve', id, participant: a, currency, amount: 100n }],
        ['modified'],
        "a funds out reserve under the funds in's id",
      );
    } finally {
      await ledgers[1]!.close();
    }
  },
);

test(
  'finishedAt: when the ledger posted or voided a transfer (never before it), none for one open or unknown',
  { timeout: 60_000 },
  async (t) => {
    const currency = 'MWK';
    const setup = await setUp(t, currency);
    if (setup === undefined) return;
    const {
      run,
      ledgers,
      names: [a, b],
    } = setup;
    const prepare = (amount: bigint): LedgerCommand & { kind: 'prepare' } => ({
      kind: 'prepare',
      id: freshId(),
      payer: a,
      payee: b,
      currency,
      amount,
      timeoutSeconds: 60,
      payloadHash: 4n,
    });
    const reservation = (p: { id: bigint; amount: bigint }) => ({
      id: p.id,
      payer: a,
      payee: b,
      currency,
      amount: p.amount,
    });
    try {
      const [committed, aborted, open, fx, dependent] = [
        prepare(10n),
        prepare(20n),
        prepare(30n),
        prepare(40n),
        prepare(50n),
      ];
      await run([committed, aborted, open, fx, dependent], [OK, OK, OK, OK, OK], 'prepare');
      const before = Date.now();
      await run(
        [
          { kind: 'commit', ...reservation(committed) },
          { kind: 'abort', ...reservation(aborted) },
          { kind: 'commit', ...reservation(dependent), linked: reservation(fx) },
        ],
        [OK, OK, OK],
        'finish',
      );
      const after = Date.now();
      for (const ledger of ledgers) {
        const times = await ledger.finishedAt([
          committed.id,
          aborted.id,
          fx.id,
          dependent.id,
          open.id,
          freshId(),
        ]);
        assert.deepEqual(
          times.slice(4),
          [undefined, undefined],
          `${ledger.name}: open and unknown`,
        );
        // The embedded ledger keeps whole seconds, rounded up.
        for (const at of times.slice(0, 4))
          assert.ok(
            at !== undefined && at >= before && at <= Math.ceil(after / 1000) * 1000 + 1,
            `${ledger.name}: ${at} not in [${before}, ${after}]`,
          );
      }
    } finally {
      await ledgers[1]!.close();
    }
  },
);

test(
  "a debt closes the debtor's CAP: its prepares, receipts and finishes take the debtor's way, and retries are told",
  { timeout: 60_000 },
  async (t) => {
    const currency = 'NGN';
    const setup = await setUp(t, currency);
    if (setup === undefined) return;
    const {
      run,
      ledgers,
      names: [a, b],
    } = setup;
    const prepare = (payer: string, payee: string, amount: bigint) =>
      ({
        kind: 'prepare',
        id: freshId(),
        payer,
        payee,
        currency,
        amount,
        timeoutSeconds: 60,
        payloadHash: 7n,
      }) as const;
    const finish = (
      kind: 'commit' | 'abort',
      p: { id: bigint; payer: string; payee: string; amount: bigint },
    ): LedgerCommand => ({
      kind,
      id: p.id,
      payer: p.payer,
      payee: p.payee,
      currency,
      amount: p.amount,
    });
    const cap = (participant: string, delta: bigint): LedgerCommand => ({
      kind: 'adjustNdc',
      id: freshId(),
      participant,
      currency,
      delta,
    });
    try {
      // b's cap lowered past its headroom: 500 of cap debt, b's CAP closed.
      await run([cap(b, -10_500n)], [OK], 'lower b below its headroom');
      const refused4200 = prepare(b, a, 10n);
      await run([refused4200], ['limit_exceeded'], "b's prepare: the debtor's chain, 4200");
      await run([refused4200], ['failed_before'], 'the same prepare again');
      // A receipt of b's: the commit goes the debtor's way, repays the cap debt, closes CAP again.
      // Six in one request: each debtor's chain reopens the CAP the one before it closed again
      // (without that, one would be made per request).
      const toB = [200n, 200n, 100n, 100n, 50n, 50n].map((amount) => prepare(a, b, amount));
      await run(toB, Array(6).fill(OK), 'a prepares six to b');
      await run(
        toB.map((p) => finish('commit', p)),
        Array(6).fill(OK),
        "six commits at once: b's receipts repay its cap debt",
      );
      await run([finish('commit', toB[0]!)], ['exists'], 'a commit again');
      // b now owes nothing: its prepare is the debtor's chain once (reopening CAP), then plain;
      // two at once, the second after the first has reopened CAP.
      const fromB = prepare(b, a, 100n);
      const alsoFromB = prepare(b, a, 20n);
      await run([fromB, alsoFromB], [OK, OK], "b's prepares reopen its CAP");
      await run([alsoFromB], ['exists'], 'the second prepare again');
      await run([fromB], ['exists'], 'the same prepare again');
      assert.deepEqual(await states(ledgers, [fromB.id]), ['reserved']);
      // Settled at once (GROSS): its leg's id follows the reservation's.
      const grossCommit: LedgerCommand = {
        ...(finish('commit', fromB) as LedgerCommand & { kind: 'commit' }),
        gross: true,
      };
      await run([grossCommit], [OK], "GROSS commit of the debtor's reservation");
      await run([grossCommit], ['exists'], 'the same commit again');
      assert.deepEqual(await states(ledgers, [fromB.id]), ['settled']);
      await run([prepare(b, a, 50n)], [OK], "b's next prepare, plain (headroom 100)");
      // a falls into debt with two reservations open: one is committed (its post meets a's
      // closed CAP), one aborted (a void passes a closed account).
      const kept = prepare(a, b, 100n);
      const dropped = prepare(a, b, 50n);
      await run([kept, dropped], [OK, OK], 'a prepares twice');
      await run([cap(a, -20_000n)], [OK], 'lower a below its headroom');
      await run([finish('commit', kept)], [OK], "commit: a's post the debtor's way");
      await run([finish('commit', kept)], ['exists'], 'the same commit again');
      await run([finish('abort', dropped)], [OK], 'abort: the void passes');
      await run([prepare(a, b, 10n)], ['limit_exceeded'], "a's prepare while it owes");
      // Raised back: the admin move meets the closed CAP, repays, and reopens it (no debt left).
      await run([cap(a, 30_000n)], [OK], 'raise a above its use');
      await run([prepare(a, b, 10n)], [OK], "a's prepare, plain again");
      assert.deepEqual(await states(ledgers, [kept.id, dropped.id]), ['committed', 'aborted']);
    } finally {
      await ledgers[1]!.close();
    }
  },
);
