/**
 * Differential test: seeded random sequences of ledger commands (onboarding, funds in and out,
 * prepare, commit, abort, expiry, duplicates, modified retries, deactivation, limit changes) go
 * to the embedded ledger and to a real TigerBeetle cluster; both must answer every command
 * alike and agree on every balance and transfer state. After each sequence the books must
 * balance: TigerBeetle's debits equal its credits on every ledger, and the Mojaloop positions
 * of all participants sum to the initial positions given. Commits land in settlement windows
 * (or settle at once, GROSS), windows are cut (and cut again: exists), and settlement steps,
 * cap changes and debts' sweeps move the CAPs whose history gives the nets: both ledgers agree
 * on every window's nets, whether a NET commit landed in it, and whether a GROSS commit was saved
 * since the last cut.
 * Settlement decisions (commit or abort, once per settlement id) are made, repeated (`exists`)
 * and contradicted (`modified`) alike, also in a currency with no hub accounts (refused for good).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { EmbeddedLedger } from '../src/ledger/embedded';
import type { Ledger, LedgerCommand, LedgerOutcome } from '../src/ports/ledger';
import { useRealCluster } from './support/real-cluster';
import { mulberry32 } from './support/prng';

const cluster = useRealCluster('the differential test');

const SEEDS = [1, 2, 3, 4];
const STEPS_PER_SEED = 160;
/** Each seed runs on a currency of its own, so hub accounts start fresh in both ledgers. */
const CURRENCIES = ['EUR', 'KES', 'TZS', 'XOF', 'GHS', 'INR'];

interface Prepared {
  id: bigint;
  payer: string;
  payee: string;
  amount: bigint;
  payloadHash: bigint;
  timeoutSeconds: number;
}

for (const seed of SEEDS) {
  test(`differential: seed ${seed}`, { timeout: 120_000 }, async (t) => {
    if (cluster.current() === undefined) return t.skip('no TigerBeetle server binary');
    const random = mulberry32(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const amount = (max: number): bigint => BigInt(1 + Math.floor(random() * max));
    const freshId = (): bigint => BigInt('0x' + randomBytes(16).toString('hex')) | 1n;
    const currency = CURRENCIES[seed % CURRENCIES.length]!;
    const run = randomBytes(3).toString('hex');
    const names = ['a', 'b', 'c', 'd'].map((n) => `dfsp${n}${run}`);

    const embedded = new EmbeddedLedger();
    const tigerbeetle = cluster.ledger();
    const ledgers: Ledger[] = [embedded, tigerbeetle];
    const prepared: Prepared[] = [];
    const fundsOut: { id: bigint; participant: string; amount: bigint }[] = [];
    let initialPositions = 0n;
    let sleeps = 0;
    // The seeds share one cluster, whose windows are the hub's whatever the currency: a window
    // not cut in a currency is empty there once a later one was cut in any. Each seed numbers its
    // windows above the seeds' before it, as one hub does.
    const firstWindow = seed * 100_000;
    let window = firstWindow;
    /** A few settlements' decision ids, so that decisions repeat and contradict each other. */
    const decisions = [freshId(), freshId(), freshId()];

    const newPrepare = (timeoutSeconds: number): LedgerCommand => {
      const payer = pick(names);
      const payee = pick(names.filter((n2) => n2 !== payer));
      const p: Prepared = {
        id: freshId(),
        payer,
        payee,
        amount: amount(900),
        payloadHash: freshId(),
        timeoutSeconds,
      };
      prepared.push(p);
      return { kind: 'prepare', currency, ...p };
    };
    const both = async (commands: LedgerCommand[], what: string): Promise<LedgerOutcome[]> => {
      const [expected, actual] = await Promise.all(ledgers.map((l) => l.execute(commands)));
      assert.deepEqual(actual, expected, `seed ${seed}, ${what}: TigerBeetle answered differently`);
      return expected!;
    };
    /**
     * 1-second reservations, then past them: both ledgers must have released them by themselves.
     * Made only here, so that no other step runs while one is about to expire (the two ledgers'
     * clocks differ by milliseconds: a step at that moment could see one released and the other
     * not, however correct both are). Their later finishes are refused `expired` alike.
     */
    const expireShortReservations = async (when: string): Promise<void> => {
      sleeps++;
      await both(
        Array.from({ length: 1 + Math.floor(random() * 3) }, () => newPrepare(1)),
        `${when}: short prepares`,
      );
      await new Promise((resolve) => setTimeout(resolve, 2600));
      await compareBalances(`${when}: after expiry`);
    };
    const compareBalances = async (when: string): Promise<void> => {
      const refs = names.map((participant) => ({ participant, currency }));
      const [expected, actual] = await Promise.all(ledgers.map((l) => l.balances(refs)));
      assert.deepEqual(actual, expected, `seed ${seed}, ${when}: balances differ`);
      const ids = prepared.map((p) => p.id);
      const [expectedStates, actualStates] = await Promise.all(
        ledgers.map((l) => l.transferStates(ids)),
      );
      assert.deepEqual(
        actualStates,
        expectedStates,
        `seed ${seed}, ${when}: transfer states differ`,
      );
      const hubRefs = [
        { currency, type: 'HUB_MULTILATERAL_SETTLEMENT' as const },
        { currency, type: 'HUB_RECONCILIATION' as const },
      ];
      const [expectedHub, actualHub] = await Promise.all(
        ledgers.map((l) => l.hubBalances(hubRefs)),
      );
      assert.deepEqual(actualHub, expectedHub, `seed ${seed}, ${when}: hub balances differ`);
      for (let w = firstWindow; w <= window; w++) {
        const [expectedNets, actualNets] = await Promise.all(
          ledgers.map((l) => l.windowNets(w, refs)),
        );
        assert.deepEqual(
          actualNets,
          expectedNets,
          `seed ${seed}, ${when}: window ${w} nets differ`,
        );
        assert.equal(
          actualNets?.reduce((a, b) => a + b.net, 0n),
          0n,
          `window ${w}: nets sum to 0`,
        );
        const [expectedMoved, actualMoved] = await Promise.all(
          ledgers.map((l) => l.windowMoved(w, [currency])),
        );
        assert.deepEqual(
          actualMoved,
          expectedMoved,
          `seed ${seed}, ${when}: whether window ${w} moved differs`,
        );
      }
      const [expectedGross, actualGross] = await Promise.all(
        ledgers.map((l) => l.grossSinceWindowClose([currency])),
      );
      assert.deepEqual(
        actualGross,
        expectedGross,
        `seed ${seed}, ${when}: GROSS commits since the last window close differ`,
      );
    };

    try {
      await both([{ kind: 'openHub', currency }], 'open hub');
      await both(
        names.map((participant) => ({ kind: 'openParticipant' as const, participant, currency })),
        'open participants',
      );
      await both([{ kind: 'openParticipant', participant: names[0]!, currency }], 'open again');
      for (const participant of names) {
        await both(
          [{ kind: 'adjustNdc', id: freshId(), participant, currency, delta: amount(5000) }],
          'grant cap',
        );
        await both(
          [{ kind: 'fundsIn', id: freshId(), participant, currency, amount: amount(4000) }],
          'funds in',
        );
        if (random() < 0.5) {
          // Up to well above the liquidity (4000) and the cap (5000): a debt the participant must
          // earn back.
          const initial = BigInt(Math.floor(random() * 12000) - 3000);
          initialPositions += initial;
          await both(
            [
              {
                kind: 'adjustPosition',
                id: freshId(),
                participant,
                currency,
                amount: initial,
                purpose: 'initial',
              },
            ],
            'initial position',
          );
        }
      }
      await compareBalances('after onboarding');

      for (let step = 0; step < STEPS_PER_SEED; step++) {
        const roll = random();
        const participant = pick(names);
        if (roll < 0.3) {
          // A batch of prepares in one request, as concurrent HTTP requests would arrive.
          const batch: LedgerCommand[] = [];
          for (let i = 0, n = 1 + Math.floor(random() * 4); i < n; i++) batch.push(newPrepare(300));
          await both(batch, `step ${step}: prepares`);
        } else if (roll < 0.5 && prepared.length > 0) {
          const p = pick(prepared);
          // Mostly NET (into the window not yet cut), sometimes GROSS.
          const gross = random() < 0.15;
          const finish: LedgerCommand =
            random() < 0.65
              ? {
                  kind: 'commit',
                  id: p.id,
                  payer: p.payer,
                  payee: p.payee,
                  currency,
                  amount: p.amount,
                  gross,
                }
              : {
                  kind: 'abort',
                  id: p.id,
                  payer: p.payer,
                  payee: p.payee,
                  currency,
                  amount: p.amount,
                };
          await both([finish], `step ${step}: finish`);
        } else if (roll < 0.58 && prepared.length > 0) {
          const p = pick(prepared);
          const modified = random() < 0.5;
          await both(
            [
              {
                kind: 'prepare',
                currency,
                ...p,
                payloadHash: modified ? p.payloadHash + 1n : p.payloadHash,
                timeoutSeconds: p.timeoutSeconds + (random() < 0.5 ? 0 : 7),
              },
            ],
            `step ${step}: retried prepare`,
          );
        } else if (roll < 0.66) {
          await both(
            [{ kind: 'fundsIn', id: freshId(), participant, currency, amount: amount(800) }],
            `step ${step}: funds in`,
          );
        } else if (roll < 0.74) {
          const out = { id: freshId(), participant, amount: amount(1500) };
          fundsOut.push(out);
          await both([{ kind: 'fundsOutReserve', currency, ...out }], `step ${step}: funds out`);
        } else if (roll < 0.8 && fundsOut.length > 0) {
          const out = pick(fundsOut);
          await both(
            [{ kind: random() < 0.5 ? 'fundsOutCommit' : 'fundsOutAbort', currency, ...out }],
            `step ${step}: finish funds out`,
          );
        } else if (roll < 0.87) {
          // Lowering is never refused, even below what is in use (or below zero).
          const delta = BigInt(Math.floor(random() * 9000) - 6000);
          await both(
            [{ kind: 'adjustNdc', id: freshId(), participant, currency, delta }],
            `step ${step}: adjust cap`,
          );
        } else if (roll < 0.93) {
          await both(
            [{ kind: 'setActive', id: freshId(), participant, currency, active: random() < 0.6 }],
            `step ${step}: activation`,
          );
        } else if (roll < 0.95 && sleeps < 2) {
          await expireShortReservations(`step ${step}`);
        } else if (roll < 0.97) {
          // A window is cut (again, sometimes: exists).
          await both(
            [{ kind: 'closeWindow', window, currency }],
            `step ${step}: close window ${window}`,
          );
          if (random() < 0.8) window++;
        } else if (roll < 0.985) {
          const settled = BigInt(Math.floor(random() * 3000) - 1500);
          const [outcome] = await both(
            [
              {
                kind: 'adjustPosition',
                id: freshId(),
                participant,
                currency,
                amount: settled,
                purpose: 'settlement',
              },
            ],
            `step ${step}: settlement step`,
          );
          if (outcome!.ok) initialPositions += settled;
          await both(
            [
              {
                kind: 'decideSettlement',
                id: pick(decisions),
                currency,
                decision: random() < 0.5 ? 'commit' : 'abort',
              },
            ],
            `step ${step}: a settlement's decision`,
          );
        } else {
          await compareBalances(`step ${step}`);
        }
      }
      if (sleeps === 0) await expireShortReservations('at the end');
      for (const participant of names)
        await both(
          [{ kind: 'setActive', id: freshId(), participant, currency, active: true }],
          'reactivate',
        );
      const decided = freshId();
      const expected = [
        { ok: true },
        { ok: false, refusal: 'exists' },
        { ok: false, refusal: 'modified' },
      ];
      for (const [i, decision] of (['abort', 'abort', 'commit'] as const).entries()) {
        const [outcome] = await both(
          [{ kind: 'decideSettlement', id: decided, currency, decision }],
          `a settlement decided ${decision}`,
        );
        assert.deepEqual(
          outcome,
          expected[i],
          `the decision ${decision}, ${i === 0 ? 'made' : 'repeated'}`,
        );
      }
      const noHub = freshId();
      for (const when of ['first', 'again'])
        await both(
          [{ kind: 'decideSettlement', id: noHub, currency: 'MWK', decision: 'commit' }],
          `a decision with no hub accounts (${when})`,
        );
      await compareBalances('at the end');

      // A GROSS commit is seen since the last window close, until the next close.
      const [payer, payee] = names as [string, string];
      await both(
        [
          { kind: 'fundsIn', id: freshId(), participant: payer, currency, amount: 1_000_000n },
          { kind: 'adjustNdc', id: freshId(), participant: payer, currency, delta: 1_000_000n },
        ],
        'cover for a GROSS transfer',
      );
      const gross = { id: freshId(), payer, payee, currency, amount: 1n };
      await both(
        [
          { kind: 'prepare', ...gross, timeoutSeconds: 300, payloadHash: 1n },
          { kind: 'commit', ...gross, gross: true },
        ],
        'a GROSS transfer',
      );
      await compareBalances('after a GROSS commit');
      assert.deepEqual(await tigerbeetle.grossSinceWindowClose([currency]), [true]);
      await both(
        [
          { kind: 'closeWindow', window, currency },
          { kind: 'closeWindow', window: window + 1, currency },
        ],
        'closing the windows',
      );
      await compareBalances('after closing the windows');
      assert.deepEqual(await tigerbeetle.grossSinceWindowClose([currency]), [false]);

      const balances = await tigerbeetle.balances(
        names.map((participant) => ({ participant, currency })),
      );
      const positions = balances.reduce((sum, b) => sum + b!.position, 0n);
      assert.equal(
        positions,
        initialPositions,
        'positions sum to the initial positions: every transfer moved as much to one side as from the other',
      );
      const books = await tigerbeetle.trialBalance(currency);
      assert.equal(books.debits, books.credits, `ledger ${books.ledger}: debits equal credits`);
    } finally {
      await tigerbeetle.close();
    }
  });
}
