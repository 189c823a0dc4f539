/**
 * The ledger identity check (docs/decisions/0007): every case of what the metadata and the ledger
 * hold, over the embedded ledger and the in-memory store.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  LedgerIdentity,
  LedgerMismatchError,
  verifyLedgerIdentity,
} from '../../src/domain/participants/ledger-identity';
import { EmbeddedLedger } from '../../src/ledger/embedded';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import type { Ledger } from '../../src/ports/ledger';

const PLACES = { ledger: 'the ledger at L', metadata: 'the metadata at M' };

/** A hub as today's code writes it: hub accounts and a participant, in the ledger first. */
async function writeHub(ledger: Ledger, store: MemoryMetadataStore): Promise<void> {
  await ledger.execute([
    { kind: 'openHub', currency: 'USD' },
    { kind: 'openParticipant', participant: 'payer', currency: 'USD' },
  ]);
  await store.addHubAccount({ type: 'HUB_RECONCILIATION', currency: 'USD', createdDate: 'now' });
  await store.saveParticipant({
    name: 'payer',
    id: await store.nextId(),
    isActive: true,
    created: 'now',
    createdBy: 'test',
    currencies: [
      {
        currency: 'USD',
        positionAccountId: await store.nextId(),
        settlementAccountId: await store.nextId(),
        positionAccountActive: true,
        createdDate: 'now',
        netDebitCap: undefined,
      },
    ],
    endpoints: [],
  });
}

async function mismatchOf(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    assert.ok(error instanceof LedgerMismatchError, String(error));
    return error.message;
  }
  assert.fail('no mismatch');
}

test('a new hub records one identity in both; the next start matches it', async () => {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  const first = await verifyLedgerIdentity(ledger, store, PLACES);
  assert.equal(first.outcome, 'created');
  assert.equal(await ledger.identity(), first.identity);
  assert.equal(await store.ledgerIdentity(), first.identity);
  assert.deepEqual(await verifyLedgerIdentity(ledger, store, PLACES), {
    identity: first.identity,
    outcome: 'matched',
  });
});

test('instances starting at once over one store and one ledger record one identity', async () => {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  const checks = await Promise.all(
    Array.from({ length: 4 }, () => verifyLedgerIdentity(ledger, store, PLACES)),
  );
  assert.equal(new Set(checks.map((c) => c.identity)).size, 1);
  assert.equal(await store.ledgerIdentity(), checks[0]!.identity);
  assert.equal(await ledger.identity(), checks[0]!.identity);
});

test('another instance records both between this one’s two reads: one identity, no mismatch', async () => {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  // The ledger read answers what the ledger held when asked; another instance's whole first start
  // then runs before it returns.
  let other: Promise<unknown> | undefined;
  const racing = Object.create(ledger) as Ledger;
  racing.identity = async () => {
    const held = await ledger.identity();
    other ??= verifyLedgerIdentity(ledger, store, PLACES);
    await other;
    return held;
  };
  const racingStore = Object.create(store) as MemoryMetadataStore;
  // A metadata read under way while the ledger is read answers after the other's start.
  racingStore.ledgerIdentity = async () => {
    await new Promise((resolve) => setTimeout(resolve, 0));
    await other;
    return store.ledgerIdentity();
  };
  const check = await verifyLedgerIdentity(racing, racingStore, PLACES);
  assert.equal(check.identity, await ledger.identity());
  assert.equal(await store.ledgerIdentity(), check.identity);
});

test('a crash between the ledger and the metadata: the next start takes the ledger’s', async () => {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  await ledger.recordIdentity(42n);
  assert.deepEqual(await verifyLedgerIdentity(ledger, store, PLACES), {
    identity: 42n,
    outcome: 'joined',
  });
  assert.equal(await store.ledgerIdentity(), 42n);
});

test('metadata with an identity over a ledger with none, or another: refused, nothing recorded', async () => {
  const store = new MemoryMetadataStore();
  await store.recordLedgerIdentity(7n);
  const fresh = new EmbeddedLedger();
  const none = await mismatchOf(verifyLedgerIdentity(fresh, store, PLACES));
  assert.match(none, /^the ledger at L is not the ledger the metadata at M was written with/);
  assert.match(none, /records ledger identity 0x0{31}7, the ledger holds none/);
  assert.match(none, /Point the service at the ledger this metadata was written with/);
  assert.equal(await fresh.identity(), undefined);

  const other = new EmbeddedLedger();
  await other.recordIdentity(8n);
  assert.match(
    await mismatchOf(verifyLedgerIdentity(other, store, PLACES)),
    /the ledger holds 0x0{31}8 \(another hub’s\)/,
  );
});

test('a deployment from before identities: adopted where the ledger holds its accounts', async () => {
  const ledger = new EmbeddedLedger();
  const store = new MemoryMetadataStore();
  await writeHub(ledger, store);
  const adopted = await verifyLedgerIdentity(ledger, store, PLACES);
  assert.equal(adopted.outcome, 'adopted');
  assert.equal(await ledger.identity(), adopted.identity);
  assert.equal(await store.ledgerIdentity(), adopted.identity);
});

test('a deployment from before identities over a ledger without its accounts: refused', async () => {
  const store = new MemoryMetadataStore();
  await writeHub(new EmbeddedLedger(), store);
  const fresh = new EmbeddedLedger();
  const message = await mismatchOf(verifyLedgerIdentity(fresh, store, PLACES));
  assert.match(message, /records no ledger identity \(written before identities\)/);
  assert.match(message, /accounts the ledger does not hold \(Hub USD, payer USD\)/);
  // Nothing written to the ledger that is not ours.
  assert.equal(await fresh.identity(), undefined);
  assert.equal(await store.ledgerIdentity(), undefined);
});

test('recheck: a ledger replaced after the start is a mismatch', async () => {
  let current: Ledger = new EmbeddedLedger();
  const switching = new Proxy({} as Ledger, {
    get: (_, key) => {
      const value = current[key as keyof Ledger];
      return typeof value === 'function' ? value.bind(current) : value;
    },
  });
  const identity = new LedgerIdentity(switching, new MemoryMetadataStore(), PLACES);
  await identity.recheck(); // nothing verified yet: nothing to compare
  await identity.verify();
  await identity.recheck();
  current = new EmbeddedLedger();
  assert.match(await mismatchOf(identity.recheck()), /the ledger holds none/);
});

test('the journal store’s compaction keeps the identity: its snapshot carries it', async () => {
  const store = new MemoryMetadataStore();
  await store.recordLedgerIdentity(5n);
  const restored = new MemoryMetadataStore();
  restored.restore(store.snapshot());
  assert.equal(await restored.ledgerIdentity(), 5n);
  // The first stands: a later one is answered with it.
  assert.equal(await restored.recordLedgerIdentity(6n), 5n);
});
