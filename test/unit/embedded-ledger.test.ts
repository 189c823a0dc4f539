import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { EmbeddedLedger } from '../../src/ledger/embedded';
import type {
  LedgerCommand,
  LedgerOutcome,
  LedgerRefusal,
  ParticipantBalance,
} from '../../src/ports/ledger';

const USD = 'USD';
const PAYER = 'payerfsp';
const PAYEE = 'payeefsp';

class Harness {
  now = 1_700_000_000_000;
  readonly ledger = new EmbeddedLedger(() => this.now);
  private nextId = 1000n;

  id(): bigint {
    return this.nextId++;
  }

  async run(command: LedgerCommand): Promise<LedgerOutcome> {
    const outcomes = await this.ledger.execute([command]);
    assert.equal(outcomes.length, 1);
    return outcomes[0]!;
  }

  async ok(command: LedgerCommand): Promise<void> {
    assert.deepEqual(await this.run(command), { ok: true }, `${command.kind} should succeed`);
  }

  async refusedWith(command: LedgerCommand, refusal: LedgerRefusal): Promise<void> {
    assert.deepEqual(
      await this.run(command),
      { ok: false, refusal },
      `${command.kind} should be refused with ${refusal}`,
    );
  }

  async balance(participant: string, currency = USD): Promise<ParticipantBalance> {
    const [balance] = await this.ledger.balances([{ participant, currency }]);
    assert.ok(balance, `${participant} has no ${currency} accounts`);
    return balance;
  }

  async state(id: bigint): Promise<string> {
    const [state] = await this.ledger.transferStates([id]);
    return state!;
  }

  fundsIn(participant: string, amount: bigint, id = this.id()): LedgerCommand {
    return { kind: 'fundsIn', id, participant, currency: USD, amount };
  }

  adjustNdc(participant: string, delta: bigint, id = this.id()): LedgerCommand {
    return { kind: 'adjustNdc', id, participant, currency: USD, delta };
  }

  prepare(
    amount: bigint,
    id = this.id(),
    options: { payer?: string; payee?: string; timeoutSeconds?: number; payloadHash?: bigint } = {},
  ): LedgerCommand & { kind: 'prepare' } {
    return {
      kind: 'prepare',
      id,
      payer: options.payer ?? PAYER,
      payee: options.payee ?? PAYEE,
      currency: USD,
      amount,
      timeoutSeconds: options.timeoutSeconds ?? 60,
      payloadHash: options.payloadHash ?? 77n,
    };
  }

  commit(prepared: { id: bigint; amount: bigint; payer: string; payee: string }): LedgerCommand {
    return {
      kind: 'commit',
      id: prepared.id,
      payer: prepared.payer,
      payee: prepared.payee,
      currency: USD,
      amount: prepared.amount,
    };
  }

  abort(prepared: { id: bigint; amount: bigint; payer: string; payee: string }): LedgerCommand {
    return {
      kind: 'abort',
      id: prepared.id,
      payer: prepared.payer,
      payee: prepared.payee,
      currency: USD,
      amount: prepared.amount,
    };
  }

  fundsOut(
    kind: 'fundsOutReserve' | 'fundsOutCommit' | 'fundsOutAbort',
    participant: string,
    amount: bigint,
    id: bigint,
  ): LedgerCommand {
    return { kind, id, participant, currency: USD, amount };
  }

  setActive(participant: string, active: boolean, id = this.id()): LedgerCommand {
    return { kind: 'setActive', id, participant, currency: USD, active };
  }

  /** Hub, payer and payee in USD; the payer with `liquidity` funds in and a cap of `ndc`. */
  /**
   * Funds the payee (once more each call) and commits a transfer of `amount` from it to the payer.
   */
  async payeePays(amount: bigint): Promise<void> {
    await this.ok(this.fundsIn(PAYEE, amount));
    await this.ok(this.adjustNdc(PAYEE, amount));
    const received = this.prepare(amount, this.id(), { payer: PAYEE, payee: PAYER });
    await this.ok(received);
    await this.ok(this.commit(received));
  }

  static async withParticipants(liquidity: bigint, ndc: bigint): Promise<Harness> {
    const h = new Harness();
    await h.ok({ kind: 'openHub', currency: USD });
    await h.ok({ kind: 'openParticipant', participant: PAYER, currency: USD });
    await h.ok({ kind: 'openParticipant', participant: PAYEE, currency: USD });
    if (liquidity > 0n) await h.ok(h.fundsIn(PAYER, liquidity));
    if (ndc > 0n) await h.ok(h.adjustNdc(PAYER, ndc));
    return h;
  }
}

function figures(b: ParticipantBalance): Omit<ParticipantBalance, 'active'> {
  return {
    liquidity: b.liquidity,
    fundsOutReserved: b.fundsOutReserved,
    position: b.position,
    reserved: b.reserved,
    netDebitCap: b.netDebitCap,
  };
}

test('opening the hub and participants; a repeat is exists; balances start at zero', async () => {
  const h = new Harness();
  assert.equal(h.ledger.name, 'embedded');
  await h.ok({ kind: 'openHub', currency: USD });
  await h.refusedWith({ kind: 'openHub', currency: USD }, 'exists');
  await h.ok({ kind: 'openHub', currency: 'EUR' });
  await h.ok({ kind: 'openParticipant', participant: PAYER, currency: USD });
  await h.refusedWith({ kind: 'openParticipant', participant: PAYER, currency: USD }, 'exists');
  await h.ok({ kind: 'openParticipant', participant: PAYER, currency: 'EUR' });
  assert.deepEqual(await h.balance(PAYER), {
    liquidity: 0n,
    fundsOutReserved: 0n,
    position: 0n,
    reserved: 0n,
    netDebitCap: 0n,
    active: true,
  });
  assert.deepEqual(
    await h.ledger.balances([
      { participant: PAYEE, currency: USD },
      { participant: PAYER, currency: 'JPY' },
      { participant: PAYER, currency: 'EUR' },
    ]),
    [
      undefined,
      undefined,
      {
        liquidity: 0n,
        fundsOutReserved: 0n,
        position: 0n,
        reserved: 0n,
        netDebitCap: 0n,
        active: true,
      },
    ],
  );
});

test('balances returns a copy', async () => {
  const h = await Harness.withParticipants(100n, 50n);
  const balance = await h.balance(PAYER);
  balance.liquidity = 1n;
  assert.equal((await h.balance(PAYER)).liquidity, 100n);
});

test('fundsIn raises liquidity once per id', async () => {
  const h = await Harness.withParticipants(0n, 0n);
  const command = h.fundsIn(PAYER, 250n);
  await h.ok(command);
  await h.refusedWith(command, 'exists');
  await h.refusedWith({ ...command, amount: 251n } as LedgerCommand, 'modified');
  await h.refusedWith({ ...command, participant: PAYEE } as LedgerCommand, 'modified');
  await h.ok(h.fundsIn(PAYER, 50n));
  assert.equal((await h.balance(PAYER)).liquidity, 300n);
  await h.refusedWith(h.fundsIn('nobody', 10n), 'not_found');
});

test('adjustNdc raises and lowers the cap; it needs the hub and the participant', async () => {
  const h = await Harness.withParticipants(0n, 0n);
  const raise = h.adjustNdc(PAYER, 500n);
  await h.ok(raise);
  await h.refusedWith(raise, 'exists');
  await h.refusedWith({ ...raise, delta: 400n } as LedgerCommand, 'modified');
  await h.ok(h.adjustNdc(PAYER, -200n));
  assert.equal((await h.balance(PAYER)).netDebitCap, 300n);
  await h.ok(h.adjustNdc(PAYER, 0n));
  assert.equal((await h.balance(PAYER)).netDebitCap, 300n);
  await h.refusedWith(h.adjustNdc('nobody', 10n), 'not_found');

  const noHub = new Harness();
  await noHub.ok({ kind: 'openParticipant', participant: PAYER, currency: USD });
  await noHub.refusedWith(noHub.adjustNdc(PAYER, 10n), 'not_found');
});

test('prepare checks liquidity first, then the net debit cap, each against position + reserved', async () => {
  const h = await Harness.withParticipants(100n, 50n);
  // Over both: liquidity is reported.
  await h.refusedWith(h.prepare(120n), 'insufficient_liquidity');
  // Within liquidity, over the cap.
  await h.refusedWith(h.prepare(51n), 'limit_exceeded');
  // Exactly the cap headroom is allowed.
  const first = h.prepare(30n);
  await h.ok(first);
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 100n,
    fundsOutReserved: 0n,
    position: 0n,
    reserved: 30n,
    netDebitCap: 50n,
  });
  await h.refusedWith(h.prepare(21n), 'limit_exceeded');
  await h.ok(h.prepare(20n));
  assert.equal((await h.balance(PAYER)).reserved, 50n);
  await h.refusedWith(h.prepare(1n), 'limit_exceeded');
  // With more cap, liquidity binds: 100 - (0 + 50) = 50 left.
  await h.ok(h.adjustNdc(PAYER, 1000n));
  await h.refusedWith(h.prepare(51n), 'insufficient_liquidity');
  await h.ok(h.prepare(50n));
  await h.refusedWith(h.prepare(1n), 'insufficient_liquidity');
  // The payee's figures did not move.
  assert.deepEqual(figures(await h.balance(PAYEE)), {
    liquidity: 0n,
    fundsOutReserved: 0n,
    position: 0n,
    reserved: 0n,
    netDebitCap: 0n,
  });
});

test('an unknown payer is not_found at prepare, an unknown payee at commit', async () => {
  const h = await Harness.withParticipants(100n, 100n);
  await h.refusedWith(h.prepare(10n, h.id(), { payer: 'nobody' }), 'not_found');
  assert.equal((await h.balance(PAYER)).reserved, 0n);
  // A reservation names the payer's accounts only (the service checks the payee before).
  const toNobody = h.prepare(10n, h.id(), { payee: 'nobody' });
  await h.ok(toNobody);
  await h.refusedWith(h.commit(toNobody), 'not_found');
  await h.ok(h.abort(toNobody));
  assert.equal((await h.balance(PAYER)).reserved, 0n);
});

test('commit moves the position from payer to payee and releases the reservation', async () => {
  const h = await Harness.withParticipants(1000n, 500n);
  const transfer = h.prepare(200n);
  await h.ok(transfer);
  assert.equal(await h.state(transfer.id), 'reserved');
  await h.ok(h.commit(transfer));
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 1000n,
    fundsOutReserved: 0n,
    position: 200n,
    reserved: 0n,
    netDebitCap: 500n,
  });
  assert.deepEqual(figures(await h.balance(PAYEE)), {
    liquidity: 0n,
    fundsOutReserved: 0n,
    position: -200n,
    reserved: 0n,
    netDebitCap: 0n,
  });
  assert.equal(await h.state(transfer.id), 'committed');
  // Retrying the commit is exists; a different commit under the same id is modified; abort is too
  // late.
  await h.refusedWith(h.commit(transfer), 'exists');
  await h.refusedWith(h.commit({ ...transfer, amount: 199n }), 'modified');
  await h.refusedWith(h.abort(transfer), 'already_committed');
  assert.equal((await h.balance(PAYER)).position, 200n);
  // The committed position now counts against both limits: 500 - 200 = 300 of cap remains.
  await h.refusedWith(h.prepare(301n), 'limit_exceeded');
  await h.ok(h.prepare(300n));
});

test('the payee can spend what it received: a negative position is headroom', async () => {
  const h = await Harness.withParticipants(1000n, 1000n);
  const transfer = h.prepare(400n);
  await h.ok(transfer);
  await h.ok(h.commit(transfer));
  // The payee has no liquidity and no cap, but a position of -400: 0 - (-400) = 400 on both limits.
  await h.ok(h.prepare(400n, h.id(), { payer: PAYEE, payee: PAYER }));
  await h.refusedWith(
    h.prepare(1n, h.id(), { payer: PAYEE, payee: PAYER }),
    'insufficient_liquidity',
  );
  // With liquidity added, the cap binds.
  await h.ok(h.fundsIn(PAYEE, 100n));
  await h.refusedWith(h.prepare(1n, h.id(), { payer: PAYEE, payee: PAYER }), 'limit_exceeded');
});

test('abort releases the reservation without moving positions', async () => {
  const h = await Harness.withParticipants(1000n, 500n);
  const transfer = h.prepare(200n);
  await h.ok(transfer);
  await h.ok(h.abort(transfer));
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 1000n,
    fundsOutReserved: 0n,
    position: 0n,
    reserved: 0n,
    netDebitCap: 500n,
  });
  assert.equal((await h.balance(PAYEE)).position, 0n);
  assert.equal(await h.state(transfer.id), 'aborted');
  await h.refusedWith(h.abort(transfer), 'exists');
  await h.refusedWith(h.commit(transfer), 'already_aborted');
  // Commit or abort of an id never prepared.
  const never = h.prepare(1n);
  await h.refusedWith(h.commit(never), 'not_found');
  await h.refusedWith(h.abort(h.prepare(1n)), 'not_found');
});

test('a reservation expires timeoutSeconds after it was accepted', async () => {
  const h = await Harness.withParticipants(1000n, 500n);
  const transfer = h.prepare(300n, h.id(), { timeoutSeconds: 30 });
  await h.ok(transfer);
  h.now += 29_999;
  assert.equal(await h.state(transfer.id), 'reserved');
  assert.equal((await h.balance(PAYER)).reserved, 300n);
  h.now += 1;
  assert.equal(await h.state(transfer.id), 'expired');
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 1000n,
    fundsOutReserved: 0n,
    position: 0n,
    reserved: 0n,
    netDebitCap: 500n,
  });
  await h.refusedWith(h.commit(transfer), 'expired');
  await h.refusedWith(h.abort(transfer), 'expired');
  // Expiry does not poison the commit's id (TigerBeetle leaves it free): a retry is expired again.
  await h.refusedWith(h.commit(transfer), 'expired');
  assert.equal((await h.balance(PAYER)).position, 0n);
  // The released headroom is usable again, and a retried prepare of the expired transfer is exists.
  await h.ok(h.prepare(500n));
  await h.refusedWith(transfer, 'exists');
});

test('expiry happens before the commands of the batch that observes it', async () => {
  const h = await Harness.withParticipants(100n, 100n);
  const transfer = h.prepare(100n, h.id(), { timeoutSeconds: 1 });
  await h.ok(transfer);
  h.now += 1000;
  const outcomes = await h.ledger.execute([h.commit(transfer), h.prepare(100n)]);
  assert.deepEqual(outcomes, [{ ok: false, refusal: 'expired' }, { ok: true }]);
});

test('a retried prepare is exists; the same id with another payload is modified', async () => {
  const h = await Harness.withParticipants(1000n, 1000n);
  const transfer = h.prepare(100n, h.id(), { payloadHash: 1n });
  await h.ok(transfer);
  await h.refusedWith(transfer, 'exists');
  await h.refusedWith({ ...transfer, payloadHash: 2n }, 'modified');
  await h.refusedWith({ ...transfer, amount: 101n }, 'modified');
  await h.refusedWith({ ...transfer, payee: PAYER, payer: PAYEE }, 'modified');
  // A different timeout alone is the same transfer.
  await h.refusedWith({ ...transfer, timeoutSeconds: 5 }, 'exists');
  assert.equal((await h.balance(PAYER)).reserved, 100n);
  // An id used by another kind of command is modified too.
  await h.refusedWith(h.fundsIn(PAYER, 100n, transfer.id), 'modified');
});

test('an id refused for insufficient liquidity stays failed even after funds arrive', async () => {
  const h = await Harness.withParticipants(50n, 1000n);
  const transfer = h.prepare(100n);
  await h.refusedWith(transfer, 'insufficient_liquidity');
  await h.ok(h.fundsIn(PAYER, 1000n));
  await h.refusedWith(transfer, 'failed_before');
  await h.refusedWith({ ...transfer, payloadHash: 999n }, 'failed_before');
  assert.equal(await h.state(transfer.id), 'unknown');
  await h.ok(h.prepare(100n));
  // Likewise for limit_exceeded.
  const overCap = h.prepare(2000n);
  await h.ok(h.fundsIn(PAYER, 5000n));
  await h.refusedWith(overCap, 'limit_exceeded');
  await h.ok(h.adjustNdc(PAYER, 5000n));
  await h.refusedWith(overCap, 'failed_before');
});

test('refused ids spill to disk with the others and stay failed there', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'embedded-poisoned-'));
  const ledger = new EmbeddedLedger(Date.now, { dir, hotEntries: 4 });
  try {
    const setup: LedgerCommand[] = [
      { kind: 'openHub', currency: USD },
      { kind: 'openParticipant', participant: PAYER, currency: USD },
      { kind: 'openParticipant', participant: PAYEE, currency: USD },
      { kind: 'adjustNdc', id: 1n, participant: PAYER, currency: USD, delta: 10_000n },
    ];
    assert.ok((await ledger.execute(setup)).every((o) => o.ok));
    // No liquidity: every prepare is refused, its id poisoned; far more than the hot tier holds.
    const prepares: LedgerCommand[] = Array.from({ length: 100 }, (_, i) => ({
      kind: 'prepare',
      id: 100n + BigInt(i),
      payer: PAYER,
      payee: PAYEE,
      currency: USD,
      amount: 10n,
      timeoutSeconds: 60,
      payloadHash: 1n,
    }));
    assert.deepEqual(
      await ledger.execute(prepares),
      prepares.map(() => ({ ok: false, refusal: 'insufficient_liquidity' })),
    );
    assert.deepEqual(
      await ledger.execute([
        { kind: 'fundsIn', id: 2n, participant: PAYER, currency: USD, amount: 10_000n },
      ]),
      [{ ok: true }],
    );
    assert.deepEqual(
      await ledger.execute(prepares),
      prepares.map(() => ({ ok: false, refusal: 'failed_before' })),
    );
  } finally {
    await ledger.close();
    assert.deepEqual(readdirSync(dir), [], 'run files are unlinked');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('funds out: reserve limited by liquidity headroom, commit lowers liquidity, abort releases', async () => {
  const h = await Harness.withParticipants(1000n, 1000n);
  const transfer = h.prepare(300n);
  await h.ok(transfer);
  // Headroom: 1000 - (0 + 300) = 700.
  await h.refusedWith(h.fundsOut('fundsOutReserve', PAYER, 701n, h.id()), 'insufficient_liquidity');
  const out = h.id();
  await h.ok(h.fundsOut('fundsOutReserve', PAYER, 600n, out));
  await h.refusedWith(h.fundsOut('fundsOutReserve', PAYER, 600n, out), 'exists');
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 1000n,
    fundsOutReserved: 600n,
    position: 0n,
    reserved: 300n,
    netDebitCap: 1000n,
  });
  // Funds out reserved counts against a prepare's liquidity too: 1000 - 300 - 600 = 100.
  await h.refusedWith(h.prepare(101n), 'insufficient_liquidity');
  // A funds-out reservation does not expire.
  h.now += 10 * 24 * 3600 * 1000;
  assert.equal((await h.balance(PAYER)).fundsOutReserved, 600n);
  assert.equal(await h.state(out), 'unknown');
  await h.ok(h.fundsOut('fundsOutCommit', PAYER, 600n, out));
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 400n,
    fundsOutReserved: 0n,
    position: 0n,
    reserved: 0n,
    netDebitCap: 1000n,
  });
  await h.refusedWith(h.fundsOut('fundsOutCommit', PAYER, 600n, out), 'exists');
  await h.refusedWith(h.fundsOut('fundsOutAbort', PAYER, 600n, out), 'already_committed');

  const second = h.id();
  await h.ok(h.fundsOut('fundsOutReserve', PAYER, 400n, second));
  await h.refusedWith(h.fundsOut('fundsOutReserve', PAYER, 1n, h.id()), 'insufficient_liquidity');
  await h.ok(h.fundsOut('fundsOutAbort', PAYER, 400n, second));
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 400n,
    fundsOutReserved: 0n,
    position: 0n,
    reserved: 0n,
    netDebitCap: 1000n,
  });
  await h.refusedWith(h.fundsOut('fundsOutCommit', PAYER, 400n, second), 'already_aborted');
  await h.refusedWith(h.fundsOut('fundsOutCommit', PAYER, 1n, h.id()), 'not_found');
  // A transfer id is not a funds-out reservation, nor the other way round.
  const t = h.prepare(10n);
  await h.ok(t);
  await h.refusedWith(h.fundsOut('fundsOutCommit', PAYER, 10n, t.id), 'not_found');
  await h.refusedWith(
    h.commit({ id: second, amount: 400n, payer: PAYER, payee: PAYEE }),
    'not_found',
  );
});

test('funds out against a committed position: headroom is liquidity minus position', async () => {
  const h = await Harness.withParticipants(1000n, 1000n);
  const transfer = h.prepare(250n);
  await h.ok(transfer);
  await h.ok(h.commit(transfer));
  await h.refusedWith(h.fundsOut('fundsOutReserve', PAYER, 751n, h.id()), 'insufficient_liquidity');
  await h.ok(h.fundsOut('fundsOutReserve', PAYER, 750n, h.id()));
});

test('lowering the cap below position + reserved is accepted and stops sending until the position falls under it', async () => {
  const h = await Harness.withParticipants(1000n, 500n);
  const committed = h.prepare(100n);
  await h.ok(committed);
  await h.ok(h.commit(committed));
  const open = h.prepare(200n);
  await h.ok(open);
  // In use: 100 + 200 = 300 of 500; the cap goes to 100, 200 below what is in use.
  await h.ok(h.adjustNdc(PAYER, -400n));
  assert.equal((await h.balance(PAYER)).netDebitCap, 100n);
  await h.refusedWith(h.prepare(1n), 'limit_exceeded');
  // The open reservation expires: 100 in use against a cap of 100, still nothing to send.
  await h.ok(h.abort(open));
  await h.refusedWith(h.prepare(1n), 'limit_exceeded');
  // Receiving 150 brings the position to -50: 150 of headroom.
  await h.payeePays(150n);
  await h.refusedWith(h.prepare(151n), 'limit_exceeded');
  await h.ok(h.prepare(150n));
  // Raising the cap below zero and back: accepted either way.
  await h.ok(h.adjustNdc(PAYER, -1000n));
  assert.equal((await h.balance(PAYER)).netDebitCap, -900n);
});

test('deactivation refuses new transfers and funds movements until reactivated', async () => {
  const h = await Harness.withParticipants(1000n, 1000n);
  const before = h.prepare(100n);
  await h.ok(before);
  await h.ok(h.fundsIn(PAYEE, 10n));
  await h.ok(h.adjustNdc(PAYEE, 10n));
  await h.ok(h.setActive(PAYER, false));
  assert.equal((await h.balance(PAYER)).active, false);
  await h.refusedWith(h.prepare(10n), 'inactive');
  // A reservation for it names the payer's accounts only; its commit meets the closed account.
  const toInactive = h.prepare(10n, h.id(), { payer: PAYEE, payee: PAYER });
  await h.ok(toInactive);
  await h.refusedWith(h.commit(toInactive), 'inactive');
  await h.ok(h.abort(toInactive));
  await h.refusedWith(h.fundsIn(PAYER, 10n), 'inactive');
  await h.refusedWith(h.fundsOut('fundsOutReserve', PAYER, 10n, h.id()), 'inactive');
  const blockedCommit = h.commit(before);
  await h.refusedWith(blockedCommit, 'inactive');
  // Deactivating again is a no-op.
  await h.ok(h.setActive(PAYER, false));
  await h.ok(h.setActive(PAYER, true));
  assert.equal((await h.balance(PAYER)).active, true);
  // The refused commit's id stays refused; the transfer can still be aborted.
  await h.refusedWith(blockedCommit, 'failed_before');
  await h.ok(h.abort(before));
  await h.ok(h.prepare(10n));
  await h.ok(h.fundsIn(PAYER, 10n));
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 1010n,
    fundsOutReserved: 0n,
    position: 0n,
    reserved: 10n,
    netDebitCap: 1000n,
  });
  await h.refusedWith(h.setActive('nobody', false), 'not_found');
});

test('an inactive payee refuses commits, not aborts; a refused commit may be sent again', async () => {
  const h = await Harness.withParticipants(1000n, 1000n);
  const transfer = h.prepare(100n);
  await h.ok(transfer);
  await h.ok(h.setActive(PAYEE, false));
  const commit = h.commit(transfer);
  await h.refusedWith(commit, 'inactive');
  // The receipt refused it, not the post: the post's id is not burnt (its event failed by link).
  await h.ok(h.setActive(PAYEE, true));
  await h.ok(commit);
  await h.ok(h.setActive(PAYEE, false));
  const other = h.prepare(10n);
  await h.ok(other);
  await h.ok(h.abort(other));
  assert.equal((await h.balance(PAYER)).reserved, 0n);
});

test('setActive is idempotent by id', async () => {
  const h = await Harness.withParticipants(0n, 0n);
  const off = h.setActive(PAYER, false);
  await h.ok(off);
  await h.ok(h.setActive(PAYER, true));
  const offAgain = h.setActive(PAYER, false);
  await h.ok(offAgain);
  await h.ok(h.setActive(PAYER, true));
  // Reusing an id of an applied deactivation deactivates nothing: it is exists.
  await h.refusedWith(off, 'exists');
  assert.equal((await h.balance(PAYER)).active, true);
});

test('initial positions need neither liquidity nor cap: above them, the participant receives but cannot send', async () => {
  const h = await Harness.withParticipants(500n, 300n);
  const owes = {
    kind: 'adjustPosition',
    id: h.id(),
    participant: PAYER,
    currency: USD,
    amount: 800n,
    purpose: 'initial',
  } as const;
  await h.ok(owes);
  await h.refusedWith(owes, 'exists');
  await h.refusedWith({ ...owes, amount: 799n }, 'modified');
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 500n,
    fundsOutReserved: 0n,
    position: 800n,
    reserved: 0n,
    netDebitCap: 300n,
  });
  await h.refusedWith(h.prepare(1n), 'insufficient_liquidity');
  await h.refusedWith(h.fundsOut('fundsOutReserve', PAYER, 1n, h.id()), 'insufficient_liquidity');
  // Funds in 400: liquidity 900 against a position of 800, but the cap (300) is still exceeded.
  await h.ok(h.fundsIn(PAYER, 400n));
  await h.refusedWith(h.prepare(1n), 'limit_exceeded');
  // Receiving 600 brings the position to 200: 100 below the cap, 700 of liquidity headroom.
  await h.payeePays(600n);
  await h.refusedWith(h.prepare(101n), 'limit_exceeded');
  await h.ok(h.prepare(100n));

  await h.ok({
    kind: 'adjustPosition',
    id: h.id(),
    participant: PAYEE,
    currency: USD,
    amount: -700n,
    purpose: 'initial',
  });
  assert.equal((await h.balance(PAYEE)).position, 600n - 700n);
  await h.ok({
    kind: 'adjustPosition',
    id: h.id(),
    participant: PAYEE,
    currency: USD,
    amount: 0n,
    purpose: 'initial',
  });

  await h.refusedWith(
    {
      kind: 'adjustPosition',
      id: h.id(),
      participant: 'nobody',
      currency: USD,
      amount: 1n,
      purpose: 'initial',
    },
    'not_found',
  );
  await h.ok(h.setActive(PAYEE, false));
  await h.refusedWith(
    {
      kind: 'adjustPosition',
      id: h.id(),
      participant: PAYEE,
      currency: USD,
      amount: -1n,
      purpose: 'initial',
    },
    'inactive',
  );
  await h.refusedWith(
    {
      kind: 'adjustPosition',
      id: h.id(),
      participant: PAYEE,
      currency: USD,
      amount: 1n,
      purpose: 'initial',
    },
    'inactive',
  );
});

test('transferStates answers each id: reserved, committed, aborted, expired or unknown; finishedAt when committed or aborted', async () => {
  const h = await Harness.withParticipants(1000n, 1000n);
  const reserved = h.prepare(1n, h.id(), { timeoutSeconds: 3600 });
  const committed = h.prepare(2n, h.id(), { timeoutSeconds: 3600 });
  const aborted = h.prepare(3n, h.id(), { timeoutSeconds: 3600 });
  const expiring = h.prepare(4n, h.id(), { timeoutSeconds: 1 });
  const outcomes = await h.ledger.execute([
    reserved,
    committed,
    aborted,
    expiring,
    h.commit(committed),
    h.abort(aborted),
  ]);
  assert.ok(outcomes.every((o) => o.ok));
  const finished = Math.ceil(h.now / 1000) * 1000;
  h.now += 1000;
  assert.deepEqual(
    await h.ledger.transferStates([reserved.id, committed.id, aborted.id, expiring.id, 424242n]),
    ['reserved', 'committed', 'aborted', 'expired', 'unknown'],
  );
  // In whole seconds, rounded up: never before the finish. An expiry is nobody's finish.
  assert.deepEqual(
    await h.ledger.finishedAt([reserved.id, committed.id, aborted.id, expiring.id, 424242n]),
    [undefined, finished, finished, undefined, undefined],
  );
  assert.equal((await h.balance(PAYER)).reserved, 1n);
});

test('a batch applies its commands in order, each atomic on its own', async () => {
  const h = await Harness.withParticipants(0n, 1000n);
  const transfer = h.prepare(100n);
  const outcomes = await h.ledger.execute([
    h.prepare(100n), // no liquidity yet
    h.fundsIn(PAYER, 150n),
    transfer, // sees the funds in
    h.prepare(100n), // 150 - 100 = 50 left
    h.commit(transfer),
  ]);
  assert.deepEqual(outcomes, [
    { ok: false, refusal: 'insufficient_liquidity' },
    { ok: true },
    { ok: true },
    { ok: false, refusal: 'insufficient_liquidity' },
    { ok: true },
  ]);
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 150n,
    fundsOutReserved: 0n,
    position: 100n,
    reserved: 0n,
    netDebitCap: 1000n,
  });
  assert.deepEqual(await h.ledger.execute([]), []);
});

test('a finished reservation keeps only its id, state and terms: later posts and voids are refused as before', async () => {
  const h = await Harness.withParticipants(1000n, 1000n);
  const committed = h.prepare(100n);
  await h.ok(committed);
  await h.ok(h.commit(committed));
  // Other terms than the reservation's are invalid, the same terms too late.
  await h.refusedWith(h.abort({ ...committed, amount: 99n }), 'invalid');
  await h.refusedWith(h.abort({ ...committed, payee: PAYER, payer: PAYEE }), 'invalid');
  await h.refusedWith(h.abort(committed), 'already_committed');
  // A command of another kind under a finished transfer's id (its own id, not its first event's) is
  // modified.
  await h.refusedWith(h.fundsIn(PAYER, 5n, committed.id), 'modified');
  // A funds-out finished is not a transfer.
  const out = h.id();
  await h.ok(h.fundsOut('fundsOutReserve', PAYER, 10n, out));
  await h.ok(h.fundsOut('fundsOutAbort', PAYER, 10n, out));
  assert.equal(await h.state(out), 'unknown');
  await h.refusedWith(h.fundsOut('fundsOutCommit', PAYER, 11n, out), 'invalid');
  await h.refusedWith(h.fundsOut('fundsOutCommit', PAYER, 10n, out), 'already_aborted');
  await h.refusedWith(h.commit({ id: out, amount: 10n, payer: PAYER, payee: PAYER }), 'not_found');
});

test("a dependent transfer's finish is exists only when its own post or void is; a conversion finished alone refuses it as it left it", async () => {
  for (const kind of ['abort', 'commit'] as const) {
    const h = await Harness.withParticipants(1000n, 1000n);
    const fx = h.prepare(100n);
    const tx = h.prepare(200n);
    await h.ok(fx);
    await h.ok(tx);
    const finish = kind === 'abort' ? h.abort.bind(h) : h.commit.bind(h);
    await h.ok(finish(fx));
    const dependent = {
      ...finish(tx),
      linked: { id: fx.id, payer: fx.payer, payee: fx.payee, currency: USD, amount: fx.amount },
    } as LedgerCommand;
    await h.refusedWith(dependent, kind === 'abort' ? 'already_aborted' : 'already_committed');
    assert.equal(await h.state(tx.id), 'reserved');
    await h.ok(finish(tx));
    await h.refusedWith(dependent, 'exists');
    await h.refusedWith({ ...dependent, amount: 201n } as LedgerCommand, 'modified');
    // Both finished together: the conversion alone is a retry of its part.
    const fx2 = h.prepare(10n);
    const tx2 = h.prepare(20n);
    await h.ok(fx2);
    await h.ok(tx2);
    await h.ok({
      ...finish(tx2),
      linked: { id: fx2.id, payer: fx2.payer, payee: fx2.payee, currency: USD, amount: fx2.amount },
    } as LedgerCommand);
    await h.refusedWith(finish(fx2), 'exists');
  }
});

test('a funds out commit refused while inactive succeeds under its next attempt once reactivated', async () => {
  const h = await Harness.withParticipants(1000n, 0n);
  const id = h.id();
  await h.ok(h.fundsOut('fundsOutReserve', PAYER, 300n, id));
  await h.ok(h.setActive(PAYER, false));
  const commit = h.fundsOut('fundsOutCommit', PAYER, 300n, id);
  await h.refusedWith(commit, 'inactive');
  await h.ok(h.setActive(PAYER, true));
  await h.refusedWith(commit, 'failed_before');
  await h.ok({ ...commit, attempt: 1 } as LedgerCommand);
  await h.refusedWith({ ...commit, attempt: 1 } as LedgerCommand, 'exists');
  assert.deepEqual(figures(await h.balance(PAYER)), {
    liquidity: 700n,
    fundsOutReserved: 0n,
    position: 0n,
    reserved: 0n,
    netDebitCap: 0n,
  });
});
