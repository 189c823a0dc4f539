/**
 * The candidate 3-event ledger model of issue 29 (docs/decisions/0008-three-event-model.md),
 * proved on a real cluster before it is built: raw tigerbeetle-node transfers, no service.
 *
 * One ledger per currency. Per participant: POSITION (debits_must_not_exceed_credits, history):
 * credits − debits = liquidity − position; CAP (credits_must_not_exceed_debits, history):
 * debits − credits = net debit cap − position; DEBT and CAP_DEBT, the uncovered part of an admin
 * debit as today. A prepare is ONE pending POSITION(payer) → CAP(payer): TigerBeetle checks its
 * debit side (the liquidity check, 4001) and its credit side (the cap check, 4200), pending
 * amounts included. A commit posts it and moves the payee's side, CAP(payee) → POSITION(payee).
 * A debt closes the debtor's CAP, so that a chain built without the sweeps cannot name it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import {
  AccountFilterFlags,
  AccountFlags,
  CreateAccountStatus,
  CreateTransferStatus,
  TransferFlags,
  createClient,
  id as timeOrderedId,
  type Account,
  type Client,
  type Transfer,
} from 'tigerbeetle-node';
import { account, transfer } from '../src/ledger/tigerbeetle-records';
import { useRealCluster } from './support/real-cluster';

const LEDGER = 9840;
const AMOUNT_MAX = (1n << 128n) - 1n;
const Code = {
  TRANSFER: 1,
  FUNDS_IN: 2,
  CAP: 4,
  INITIAL_POSITION: 5,
  CLOSE: 6,
  SWEEP: 7,
  CUT: 12,
};

const cluster = useRealCluster('the 3-event ledger model', 1);

/** A participant's accounts in the candidate model. */
interface Party {
  settlement: bigint;
  position: bigint;
  cap: bigint;
  debt: bigint;
  capDebt: bigint;
}

interface Model {
  client: Client;
  hub: { settlement: bigint; ndc: bigint };
  /** One linked chain; the statuses by name (created, exceeds_credits …). */
  chain(events: Transfer[]): Promise<string[]>;
  open(): Promise<Party>;
  /** A participant opened with this liquidity (funds in) and net debit cap. */
  funded(liquidity: bigint, cap: bigint): Promise<Party>;
  fundsIn(p: Party, amount: bigint): Promise<void>;
  /** Debits the hub's cap account, credits nothing of the participant's position: cap granted. */
  grantCap(p: Party, amount: bigint): Promise<void>;
  prepare(
    payer: Party,
    amount: bigint,
    options?: { timeout?: number; swept?: boolean },
  ): {
    id: bigint;
    events: Transfer[];
  };
  commit(payer: Party, payee: Party, pending: { id: bigint; amount: bigint }): Transfer[];
  /** Mojaloop's figures from the balances: liquidity, position as reported, headrooms. */
  figures(p: Party): Promise<{ liquidity: bigint; position: bigint; cap: bigint }>;
  /** A pending closing transfer of amount 0 from the participant's CAP: it closes CAP. */
  closing(p: Party): Transfer;
  /** The void of CAP's latest closing transfer (found as the service would: by code, reversed). */
  reopening(p: Party): Promise<Transfer>;
  capClosed(p: Party): Promise<boolean>;
  /** What the participant owes on DEBT and on CAP_DEBT. */
  debts(p: Party): Promise<{ position: bigint; cap: bigint }>;
  /** Waits (at most 30 s) until the participant's reservations have expired: position 0. */
  expired(p: Party): Promise<void>;
}

/** A balancing repayment of a debt: as much as the debt claims and the account can give. */
function sweepOf(debit: bigint, credit: bigint): Transfer {
  return transfer({
    id: randomId(),
    ledger: LEDGER,
    code: Code.SWEEP,
    debit,
    credit,
    amount: AMOUNT_MAX,
    flags: TransferFlags.balancing_debit | TransferFlags.balancing_credit,
  });
}

/**
 * An initial position never refused for cover: booked on the debts, each swept from what its
 * account can give (as today's model does).
 */
function initialPosition(hub: Model['hub'], p: Party, amount: bigint): Transfer[] {
  const booked = (debit: bigint, credit: bigint): Transfer =>
    transfer({
      id: timeOrderedId(),
      ledger: LEDGER,
      code: Code.INITIAL_POSITION,
      debit,
      credit,
      amount,
    });
  return [
    booked(p.debt, hub.settlement),
    sweepOf(p.position, p.debt),
    booked(hub.ndc, p.capDebt),
    sweepOf(p.capDebt, p.cap),
  ];
}

function randomId(): bigint {
  return BigInt(`0x${randomBytes(16).toString('hex')}`);
}

async function model(): Promise<Model> {
  const running = cluster.current()!;
  const client = createClient({
    cluster_id: running.clusterId,
    replica_addresses: running.addresses,
  });
  const newAccount = (flags: number): Account =>
    account({ id: randomId(), ledger: LEDGER, code: 1, flags });
  const hubAccounts = [newAccount(0), newAccount(0)];
  assert.deepEqual(
    (await client.createAccounts(hubAccounts)).map((r) => CreateAccountStatus[r.status]),
    ['created', 'created'],
  );
  const hub = { settlement: hubAccounts[0]!.id, ndc: hubAccounts[1]!.id };
  const chain = async (events: Transfer[]): Promise<string[]> => {
    for (let i = 0; i < events.length - 1; i++) events[i]!.flags |= TransferFlags.linked;
    return (await client.createTransfers(events)).map((r) => CreateTransferStatus[r.status]!);
  };
  const move = (debit: bigint, credit: bigint, amount: bigint, code: number): Transfer =>
    transfer({ id: timeOrderedId(), ledger: LEDGER, code, debit, credit, amount });
  const balances = async (id: bigint): Promise<Account> => {
    const [found] = await client.lookupAccounts([id]);
    return found!;
  };
  // Closing CAP and reopening it: an event of amount 0 from CAP to the hub's cap account.
  const closeEvent = (p: Party, flags: number): Transfer =>
    transfer({
      id: randomId(),
      ledger: LEDGER,
      code: Code.CLOSE,
      debit: p.cap,
      credit: hub.ndc,
      amount: 0n,
      flags,
    });
  const built: Model = {
    client,
    hub,
    chain,
    async open() {
      const dmnec = AccountFlags.debits_must_not_exceed_credits;
      const cmned = AccountFlags.credits_must_not_exceed_debits;
      const accounts = [
        newAccount(0),
        newAccount(dmnec | AccountFlags.history),
        newAccount(cmned | AccountFlags.history),
        newAccount(cmned),
        newAccount(dmnec),
      ];
      const results = await client.createAccounts(accounts);
      assert.ok(results.every((r) => r.status === CreateAccountStatus.created));
      const [settlement, position, cap, debt, capDebt] = accounts.map((a) => a.id) as bigint[];
      return {
        settlement: settlement!,
        position: position!,
        cap: cap!,
        debt: debt!,
        capDebt: capDebt!,
      };
    },
    async funded(liquidity, cap) {
      const p = await built.open();
      if (liquidity > 0n) await built.fundsIn(p, liquidity);
      await built.grantCap(p, cap);
      return p;
    },
    async fundsIn(p, amount) {
      assert.deepEqual(await chain([move(p.settlement, p.position, amount, Code.FUNDS_IN)]), [
        'created',
      ]);
    },
    async grantCap(p, amount) {
      assert.deepEqual(await chain([move(p.cap, hub.ndc, amount, Code.CAP)]), ['created']);
    },
    prepare(payer, amount, options = {}) {
      const id = randomId();
      const pending: Transfer = {
        ...transfer({
          id,
          ledger: LEDGER,
          code: Code.TRANSFER,
          debit: payer.position,
          credit: payer.cap,
          amount,
          flags: TransferFlags.pending,
        }),
        timeout: options.timeout ?? 60,
      };
      if (options.swept !== true) return { id, events: [pending] };
      return {
        id,
        events: [sweepOf(payer.position, payer.debt), sweepOf(payer.capDebt, payer.cap), pending],
      };
    },
    commit(payer, payee, pending) {
      return [
        transfer({
          id: randomId(),
          ledger: LEDGER,
          code: Code.TRANSFER,
          debit: payer.position,
          credit: payer.cap,
          amount: pending.amount,
          flags: TransferFlags.post_pending_transfer,
          pendingId: pending.id,
        }),
        move(payee.cap, payee.position, pending.amount, Code.TRANSFER),
      ];
    },
    async figures(p) {
      const [settlement, position, cap, debt, capDebt] = await Promise.all(
        [p.settlement, p.position, p.cap, p.debt, p.capDebt].map(balances),
      );
      const liquidity = settlement!.debits_posted - settlement!.credits_posted;
      const debtOwed = debt!.debits_posted - debt!.credits_posted;
      const committed = liquidity - (position!.credits_posted - position!.debits_posted) + debtOwed;
      const capDebtOwed = capDebt!.credits_posted - capDebt!.debits_posted;
      return {
        liquidity,
        // As central-ledger reports it: committed plus prepared, unfinished transfers.
        position: committed + position!.debits_pending,
        cap: cap!.debits_posted - cap!.credits_posted - capDebtOwed + committed,
      };
    },
    closing(p) {
      return closeEvent(p, TransferFlags.pending | TransferFlags.closing_debit);
    },
    async reopening(p) {
      const [latest] = await client.getAccountTransfers({
        account_id: p.cap,
        user_data_128: 0n,
        user_data_64: 0n,
        user_data_32: 0,
        code: Code.CLOSE,
        timestamp_min: 0n,
        timestamp_max: 0n,
        limit: 1,
        flags: AccountFilterFlags.debits | AccountFilterFlags.reversed,
      });
      assert.ok(latest !== undefined && (latest.flags & TransferFlags.closing_debit) !== 0);
      return { ...closeEvent(p, TransferFlags.void_pending_transfer), pending_id: latest.id };
    },
    async capClosed(p) {
      return ((await balances(p.cap)).flags & AccountFlags.closed) !== 0;
    },
    async debts(p) {
      const [debt, capDebt] = await Promise.all([balances(p.debt), balances(p.capDebt)]);
      return {
        position: debt.debits_posted - debt.credits_posted,
        cap: capDebt.credits_posted - capDebt.debits_posted,
      };
    },
    async expired(p) {
      const deadline = Date.now() + 30_000;
      while ((await built.figures(p)).position !== 0n) {
        assert.ok(Date.now() < deadline, 'the reservation never expired');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
  };
  return built;
}

test('the 3-event model on a real cluster', async (t) => {
  if (cluster.current() === undefined) return t.skip('no TigerBeetle server binary');
  const m = await model();
  try {
    await t.test('liquidity on the debit side: 4001, prepared amounts included', async () => {
      const a = await m.funded(500n, 1000n);
      const first = m.prepare(a, 450n);
      assert.deepEqual(await m.chain(first.events), ['created']);
      assert.deepEqual(await m.chain(m.prepare(a, 100n).events), ['exceeds_credits']);
      assert.deepEqual(await m.figures(a), { liquidity: 500n, position: 450n, cap: 1000n });
    });

    await t.test('the cap on the credit side: 4200, prepared amounts included', async () => {
      const b = await m.funded(500n, 300n);
      assert.deepEqual(await m.chain(m.prepare(b, 200n).events), ['created']);
      assert.deepEqual(await m.chain(m.prepare(b, 150n).events), ['exceeds_debits']);
      assert.deepEqual(await m.chain(m.prepare(b, 100n).events), ['created']);
    });

    await t.test('both breached: exceeds_credits (4001) first, as central-ledger', async () => {
      const c = await m.funded(100n, 50n);
      assert.deepEqual(await m.chain(m.prepare(c, 200n).events), ['exceeds_credits']);
      // The liquidity alone would pass: the cap refuses.
      assert.deepEqual(await m.chain(m.prepare(c, 80n).events), ['exceeds_debits']);
    });

    await t.test('a commit (2 events) moves both parties; positions as reported', async () => {
      const a = await m.funded(500n, 1000n);
      const b = await m.funded(0n, 200n);
      const prepared = m.prepare(a, 100n);
      assert.deepEqual(await m.chain(prepared.events), ['created']);
      assert.deepEqual(await m.figures(a), { liquidity: 500n, position: 100n, cap: 1000n });
      assert.deepEqual(await m.chain(m.commit(a, b, { id: prepared.id, amount: 100n })), [
        'created',
        'created',
      ]);
      assert.deepEqual(await m.figures(a), { liquidity: 500n, position: 100n, cap: 1000n });
      assert.deepEqual(await m.figures(b), { liquidity: 0n, position: -100n, cap: 200n });
      // b may now send what it received (liquidity 0 + 100), within its cap.
      assert.deepEqual(await m.chain(m.prepare(b, 101n).events), ['exceeds_credits']);
      assert.deepEqual(await m.chain(m.prepare(b, 100n).events), ['created']);
    });

    await t.test('expiry: no event, both checks released; a late post is refused', async () => {
      const a = await m.funded(100n, 100n);
      const b = await m.open();
      const prepared = m.prepare(a, 100n, { timeout: 1 });
      assert.deepEqual(await m.chain(prepared.events), ['created']);
      assert.deepEqual(await m.chain(m.prepare(a, 1n).events), ['exceeds_credits']);
      await m.expired(a);
      assert.deepEqual(await m.chain(m.commit(a, b, { id: prepared.id, amount: 100n })), [
        'pending_transfer_expired',
        'linked_event_failed',
      ]);
      assert.deepEqual(await m.chain(m.prepare(a, 100n).events), ['created']);
    });

    await t.test('window nets from balance history, one zero-amount cut per window', async () => {
      const a = await m.funded(1000n, 1000n);
      const b = await m.funded(0n, 1000n);
      const cut = async (): Promise<bigint> => {
        const event = transfer({
          id: timeOrderedId(),
          ledger: LEDGER,
          code: Code.CUT,
          debit: m.hub.settlement,
          credit: m.hub.ndc,
          amount: 0n,
        });
        const [result] = await m.client.createTransfers([event]);
        assert.equal(result!.status, CreateTransferStatus.created);
        return result!.timestamp;
      };
      const pay = async (payer: Party, payee: Party, amount: bigint): Promise<bigint> => {
        const prepared = m.prepare(payer, amount);
        assert.deepEqual(await m.chain(prepared.events), ['created']);
        const results = await m.client.createTransfers(
          m.commit(payer, payee, { id: prepared.id, amount }).map((e, i) => ({
            ...e,
            flags: e.flags | (i === 0 ? TransferFlags.linked : 0),
          })),
        );
        assert.ok(results.every((r) => r.status === CreateTransferStatus.created));
        return results[0]!.timestamp;
      };
      // The CAP account's posted net at a cut: its latest history entry at or before it.
      const netAt = async (p: Party, at: bigint): Promise<bigint> => {
        const [entry] = await m.client.getAccountBalances({
          account_id: p.cap,
          user_data_128: 0n,
          user_data_64: 0n,
          user_data_32: 0,
          code: 0,
          timestamp_min: 0n,
          timestamp_max: at,
          limit: 1,
          flags:
            AccountFilterFlags.debits | AccountFilterFlags.credits | AccountFilterFlags.reversed,
        });
        return entry === undefined ? 0n : entry.credits_posted - entry.debits_posted;
      };
      const opened = await cut();
      const committed = await pay(a, b, 100n);
      await pay(b, a, 30n);
      await m.fundsIn(a, 50n); // an admin move on POSITION only: not in the CAP nets
      assert.deepEqual(await m.chain(m.prepare(a, 7n).events), ['created']); // prepared only
      const closed = await cut();
      const late = await pay(a, b, 5n); // after the cut: the next window's
      assert.ok(opened < committed && committed < closed && closed < late);
      // The grants before the window cancel out; the net sender's net is positive.
      const net = async (p: Party): Promise<bigint> =>
        (await netAt(p, closed)) - (await netAt(p, opened));
      assert.equal(await net(a), 70n);
      assert.equal(await net(b), -70n);
    });

    await t.test('debts: without the sweeps a participant in a hole could send', async () => {
      const a = await m.funded(1000n, 1000n);
      const c = await m.funded(0n, 100n);
      // Initial position 200, no liquidity, cap 100: booked on the debts, then swept (as today).
      assert.deepEqual(await m.chain(initialPosition(m.hub, c, 200n)), [
        'created',
        'created',
        'created',
        'created',
      ]);
      assert.deepEqual(await m.figures(c), { liquidity: 0n, position: 200n, cap: 100n });
      // c receives 50 and gets funds in 400: position 150, liquidity 400, cap 100.
      const received = m.prepare(a, 50n);
      assert.deepEqual(await m.chain(received.events), ['created']);
      assert.deepEqual(await m.chain(m.commit(a, c, { id: received.id, amount: 50n })), [
        'created',
        'created',
      ]);
      await m.fundsIn(c, 400n);
      assert.deepEqual(await m.figures(c), { liquidity: 400n, position: 150n, cap: 100n });
      // central-ledger: cap 100 − position 150 < 40: 4200. The swept prepare says so ...
      assert.deepEqual(await m.chain(m.prepare(c, 40n, { swept: true }).events), [
        'linked_event_failed',
        'linked_event_failed',
        'exceeds_debits',
      ]);
      // ... a prepare without them spends what the debts claim.
      assert.deepEqual(await m.chain(m.prepare(c, 40n).events), ['created']);
    });

    // Decision 0008, "Debts": the chain that books a debt also closes the debtor's CAP. Every
    // prepare and every receipt names CAP, so a chain built without the sweeps (by an instance
    // that never heard of the debt) is refused by the ledger itself; the debtor's own chains
    // reopen CAP first (a void: TigerBeetle's one exception for a closed account) and sweep.
    const debtor = await m.funded(0n, 100n);
    const payer = await m.funded(1000n, 1000n);

    await t.test('debts close CAP: a prepare without the sweeps is refused, for good', async () => {
      assert.deepEqual(
        await m.chain([...initialPosition(m.hub, debtor, 200n), m.closing(debtor)]),
        Array(5).fill('created'),
      );
      // Funds in name POSITION only: taken while CAP is closed, and claimed by the debt.
      await m.fundsIn(debtor, 400n);
      assert.deepEqual(await m.figures(debtor), { liquidity: 400n, position: 200n, cap: 100n });
      const stale = m.prepare(debtor, 40n);
      assert.deepEqual(await m.chain(stale.events), ['credit_account_already_closed']);
      // The refused id is refused for good: the debtor's own chain needs an id of its own.
      assert.deepEqual(await m.chain(stale.events), ['id_already_failed']);
      // The debtor's chain: reopen, both sweeps, the pending. Its liquidity debt is repaid from
      // the 400, its cap debt (100 of 200) is not: 4200, as central-ledger (cap 100 − position
      // 200 < 40), and the whole chain, reopening included, is undone.
      const swept = m.prepare(debtor, 40n, { swept: true });
      assert.deepEqual(await m.chain([await m.reopening(debtor), ...swept.events]), [
        'linked_event_failed',
        'linked_event_failed',
        'linked_event_failed',
        'exceeds_debits',
      ]);
      assert.equal(await m.capClosed(debtor), true);
      assert.deepEqual(await m.debts(debtor), { position: 200n, cap: 100n });
    });

    await t.test('a receipt of a debtor: refused stale, the debtor chain re-closes', async () => {
      const prepared = m.prepare(payer, 150n);
      assert.deepEqual(await m.chain(prepared.events), ['created']);
      const [post, receipt] = m.commit(payer, debtor, { id: prepared.id, amount: 150n });
      assert.deepEqual(await m.chain([post!, receipt!]), [
        'linked_event_failed',
        'debit_account_already_closed',
      ]);
      // The post failed only by its link: its id is free. The receipt takes a new id (it is
      // never looked up by id), the sweeps repay what they can and CAP closes again, whatever
      // is left of the debts (a chain cannot branch on them).
      assert.deepEqual(
        await m.chain([
          post!,
          await m.reopening(debtor),
          { ...receipt!, id: timeOrderedId() },
          sweepOf(debtor.position, debtor.debt),
          sweepOf(debtor.capDebt, debtor.cap),
          m.closing(debtor),
        ]),
        Array(6).fill('created'),
      );
      assert.deepEqual(await m.figures(debtor), { liquidity: 400n, position: 50n, cap: 100n });
      assert.deepEqual(await m.debts(debtor), { position: 0n, cap: 0n });
      assert.equal(await m.capClosed(debtor), true);
    });

    await t.test('the debtor chain of a prepare reopens CAP once the debts are paid', async () => {
      assert.deepEqual(await m.chain(m.prepare(debtor, 10n).events), [
        'credit_account_already_closed',
      ]);
      // Created only where both sweeps left the debts at 0: a debt left leaves its account at
      // no headroom, and the pending (amount > 0) is refused. So a created chain leaves CAP open.
      const swept = m.prepare(debtor, 10n, { swept: true });
      assert.deepEqual(
        await m.chain([await m.reopening(debtor), ...swept.events]),
        Array(4).fill('created'),
      );
      assert.equal(await m.capClosed(debtor), false);
      assert.deepEqual(await m.chain(m.prepare(debtor, 10n).events), ['created']);
      assert.deepEqual(await m.figures(debtor), { liquidity: 400n, position: 70n, cap: 100n });
    });

    await t.test(
      'a reservation whose payer fell into debt: post refused, void or expiry release',
      async () => {
        const d = await m.funded(100n, 100n);
        const kept = m.prepare(d, 60n);
        const expiring = m.prepare(d, 30n, { timeout: 1 });
        assert.deepEqual(await m.chain(kept.events), ['created']);
        assert.deepEqual(await m.chain(expiring.events), ['created']);
        // The cap lowered by 100: booked on CAP_DEBT, swept (pending credits count: 10 of 100
        // headroom is free), CAP closed.
        assert.deepEqual(
          await m.chain([
            transfer({
              id: timeOrderedId(),
              ledger: LEDGER,
              code: Code.CAP,
              debit: m.hub.ndc,
              credit: d.capDebt,
              amount: 100n,
            }),
            sweepOf(d.capDebt, d.cap),
            m.closing(d),
          ]),
          Array(3).fill('created'),
        );
        assert.deepEqual(await m.debts(d), { position: 0n, cap: 90n });
        // The post credits the closed CAP: refused (the commit's debtor chain would reopen first).
        const [post] = m.commit(d, payer, { id: kept.id, amount: 60n });
        assert.deepEqual(await m.chain([post!]), ['credit_account_already_closed']);
        // A void is the one transfer a closed account takes; the expiry needs no transfer.
        const voided = transfer({
          id: randomId(),
          ledger: LEDGER,
          code: Code.TRANSFER,
          debit: d.position,
          credit: d.cap,
          amount: 60n,
          flags: TransferFlags.void_pending_transfer,
          pendingId: kept.id,
        });
        assert.deepEqual(await m.chain([voided]), ['created']);
        await m.expired(d);
        assert.deepEqual(await m.figures(d), { liquidity: 100n, position: 0n, cap: 0n });
      },
    );
  } finally {
    m.client.destroy();
  }
});
