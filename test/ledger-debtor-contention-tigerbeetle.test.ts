/**
 * A debtor's chain contended in every round (src/ledger/tigerbeetle.ts, sendChains): another
 * writer reopens and closes the debtor's CAP anew between each lookup of its closing transfer and
 * the request that voids it. Past DEBTOR_ROUNDS the batch fails as a timeout does
 * (LedgerUnavailableError): nothing of the command applied, its outcome unknown to the caller,
 * whose retry then goes through as a first try would (the prepare's DEBTOR_TRY record).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CreateTransferStatus, TransferFlags, type Transfer } from 'tigerbeetle-node';
import { TransferCode, sweptReservationId } from '../src/ledger/account-model';
import { capClosing, capToHub } from '../src/ledger/tigerbeetle-chains';
import { LedgerUnavailableError, type LedgerCommand } from '../src/ports/ledger';
import { useRealCluster } from './support/real-cluster';

const cluster = useRealCluster('the contended debtor test', 1);

const USD = 'USD';
const DEBTOR = { participant: 'debtor', currency: USD };
const PAYEE = { participant: 'payee', currency: USD };

/** The void of a CAP's closing transfer: the event every debtor's chain opens with. */
function isCapReopening(event: Transfer): boolean {
  return (
    event.code === TransferCode.CLOSE && (event.flags & TransferFlags.void_pending_transfer) !== 0
  );
}

test('a debtor chain contended in every round fails unknown, applies nothing', async (t) => {
  if (cluster.current() === undefined) return t.skip('no TigerBeetle server binary');
  const ledger = cluster.ledger();
  try {
    const setup: LedgerCommand[] = [
      { kind: 'openHub', currency: USD },
      { kind: 'openParticipant', ...DEBTOR },
      { kind: 'openParticipant', ...PAYEE },
      { kind: 'adjustNdc', id: 11n, ...DEBTOR, delta: 1_000n },
      // An initial position with no liquidity to cover it: a debt, and CAP closed with it.
      { kind: 'adjustPosition', id: 12n, ...DEBTOR, amount: 200n, purpose: 'initial' },
      // Liquidity that the debt claims first; what is left covers the prepare below.
      { kind: 'fundsIn', id: 13n, ...DEBTOR, amount: 400n },
    ];
    assert.deepEqual(
      (await ledger.execute(setup)).map((o) => o.ok),
      setup.map(() => true),
    );
    const before = await ledger.balances([DEBTOR, PAYEE]);

    // Another writer, before every request carrying a debtor's chain: the CAP that chain reopens
    // is reopened and closed anew, so its void names a closing transfer already voided.
    const client = (ledger as unknown as { client: { createTransfers: Create } }).client;
    type Create = (batch: Transfer[]) => Promise<{ status: CreateTransferStatus }[]>;
    const createTransfers = client.createTransfers;
    let interfered = 0;
    client.createTransfers = async (batch) => {
      const reopening = batch.find(isCapReopening);
      if (reopening !== undefined) {
        const reopenedElsewhere = capToHub(DEBTOR, {
          code: TransferCode.CLOSE,
          flags: TransferFlags.void_pending_transfer | TransferFlags.linked,
          pendingId: reopening.pending_id,
        });
        const results = await createTransfers([reopenedElsewhere, capClosing(DEBTOR)]);
        assert.deepEqual(
          results.map((r) => r.status),
          [CreateTransferStatus.created, CreateTransferStatus.created],
          'the other writer reopened CAP and closed it anew',
        );
        interfered++;
      }
      return createTransfers(batch);
    };

    const prepare: LedgerCommand = {
      kind: 'prepare',
      id: 21n,
      payer: DEBTOR.participant,
      payee: PAYEE.participant,
      currency: USD,
      amount: 40n,
      timeoutSeconds: 60,
      payloadHash: 99n,
    };
    await assert.rejects(ledger.execute([prepare]), (error: unknown) => {
      assert.ok(error instanceof LedgerUnavailableError, String(error));
      assert.match(error.message, /debtors' chains met a CAP closed anew/);
      return true;
    });
    // The plain chain refused for the closed CAP, then a debtor's chain in each later round.
    assert.equal(interfered, 3, 'contended in rounds 2 to 4 (DEBTOR_ROUNDS)');
    assert.deepEqual(
      await ledger.transferStates([prepare.id, sweptReservationId(prepare.id)]),
      ['unknown', 'unknown'],
      'no reservation under either id',
    );
    assert.deepEqual(await ledger.balances([DEBTOR, PAYEE]), before, 'no figure moved');

    // The writer gone, the caller's retry. The first try's plain chain burnt the transfer id (a
    // closed CAP refuses it, and TigerBeetle never takes a refused id again); its DEBTOR_TRY record
    // tells that burn from a refusal of the command's own: the retry goes the debtor's way.
    client.createTransfers = createTransfers;
    assert.deepEqual(await ledger.execute([prepare]), [{ ok: true }]);
    assert.deepEqual(await ledger.transferStates([prepare.id]), ['reserved']);
    const [debtor] = await ledger.balances([DEBTOR]);
    assert.equal(debtor!.reserved, 40n, 'the retry reserved the prepare');
    assert.deepEqual(await ledger.execute([prepare]), [{ ok: false, refusal: 'exists' }]);

    // A prepare refused for a reason of its own stays refused: no DEBTOR_TRY behind its burnt id.
    const tooMuch: LedgerCommand = { ...prepare, id: 23n, amount: 1_000_000n };
    const [first] = await ledger.execute([tooMuch]);
    assert.equal(first!.ok, false, 'more than the debtor has');
    assert.deepEqual(await ledger.execute([tooMuch]), [{ ok: false, refusal: 'failed_before' }]);
  } finally {
    await ledger.close();
  }
});
