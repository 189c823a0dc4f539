/**
 * A ledger that is not ours (issue 28, item 1), on the embedded ledger: its journal swapped under
 * the metadata's (a fresh one, another hub's, and the reverse), a deployment from before
 * identities adopted or refused, the process refusing to start, and a ledger replaced under a
 * running service noticed by /health. The TigerBeetle and MySQL cases:
 * ledger-identity-tigerbeetle.test.ts.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { buildService, type Service } from '../src/app';
import { loadConfig } from '../src/config/config';
import { LedgerMismatchError } from '../src/domain/participants/ledger-identity';
import { EmbeddedLedger } from '../src/ledger/embedded';
import { JournaledLedger } from '../src/ledger/journaled';
import { JournalMetadataStore } from '../src/metadata/journal';
import { MemoryMetadataStore } from '../src/metadata/memory';
import type { Ledger } from '../src/ports/ledger';
import type { MetadataStore } from '../src/ports/metadata';
import { liveDirs } from './support/leftovers';
import { freePort } from './support/net';
import { onboard } from './support/onboard';
import { startProcess, stopProcess } from './support/service-process';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) {
    rmSync(dir, { recursive: true, force: true });
    liveDirs.delete(dir);
  }
});

/** A DATA_DIR of its own, holding copies of `journals` (each [from dir, file name]). */
function dataDir(...journals: [string, 'ledger.journal' | 'metadata.journal'][]): string {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-identity-'));
  dirs.push(dir);
  liveDirs.add(dir);
  for (const [from, name] of journals) copyFileSync(join(from, name), join(dir, name));
  return dir;
}

const configOf = (dir: string) => loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dir });

const inject =
  (service: Service) =>
  async (options: { method: 'POST' | 'GET'; url: string; payload?: object }) =>
    service.app.inject(options);

/** A hub in `dir`: hub accounts, a model, two funded participants. */
async function hubIn(dir: string, parts: { ledger?: Ledger; store?: MetadataStore } = {}) {
  const service = await buildService(configOf(dir), parts);
  try {
    await onboard(inject(service), ['payer', 'payee'], '1000', 1000);
  } finally {
    await service.close();
  }
}

/**
 * The store as code from before identities wrote it: every write but an identity goes through,
 * and none is ever recorded or found.
 */
function beforeIdentities<T extends Ledger | MetadataStore>(target: T): T {
  const absent: Record<string, unknown> = {
    identity: async () => undefined,
    recordIdentity: async (identity: bigint) => identity,
    ledgerIdentity: async () => undefined,
    recordLedgerIdentity: async (identity: bigint) => identity,
  };
  return new Proxy(target, {
    get: (object, key) => {
      if (typeof key === 'string' && key in absent) return absent[key];
      const value = Reflect.get(object, key) as unknown;
      return typeof value === 'function' ? value.bind(object) : value;
    },
  });
}

async function refusal(dir: string): Promise<string> {
  try {
    const service = await buildService(configOf(dir));
    await service.close();
  } catch (error) {
    assert.ok(error instanceof LedgerMismatchError, String(error));
    return error.message;
  }
  assert.fail('the service started');
}

test('the embedded ledger’s journal swapped: refused both ways, a new metadata store joins', async () => {
  const hubA = dataDir();
  const hubB = dataDir();
  await hubIn(hubA);
  await hubIn(hubB);

  // A's metadata over a fresh ledger journal: the case on the embedded ledger.
  const freshLedger = dataDir([hubA, 'metadata.journal']);
  const none = await refusal(freshLedger);
  assert.match(
    none,
    /^the embedded ledger in \S+ledger\.journal is not the ledger the metadata in \S+metadata\.journal was written with: the metadata records ledger identity 0x[0-9a-f]{32}, the ledger holds none/,
  );
  assert.match(none, /Point the service at the ledger this metadata was written with/);
  // Nothing was written to it: a refused start leaves a ledger as it found it.
  const untouched = await JournaledLedger.open(freshLedger);
  assert.equal(await untouched.identity(), undefined);
  assert.deepEqual(await untouched.balances([{ participant: 'payer', currency: 'USD' }]), [
    undefined,
  ]);
  await untouched.close();

  // A's ledger with B's metadata, and the reverse.
  for (const [ledgerOf, metadataOf] of [
    [hubA, hubB],
    [hubB, hubA],
  ] as const) {
    const swapped = dataDir([ledgerOf, 'ledger.journal'], [metadataOf, 'metadata.journal']);
    assert.match(
      await refusal(swapped),
      /the metadata records ledger identity 0x[0-9a-f]{32}, the ledger holds 0x[0-9a-f]{32} \(another hub’s\)/,
    );
  }

  // A new metadata store over A's ledger: it takes the ledger's identity (its windows align).
  const newStore = dataDir([hubA, 'ledger.journal']);
  const ledger = await JournaledLedger.open(newStore);
  const store = await JournalMetadataStore.open(newStore);
  const service = await buildService(configOf(newStore), { ledger, store });
  try {
    const identity = await ledger.identity();
    assert.notEqual(identity, undefined);
    assert.equal(await store.ledgerIdentity(), identity);
  } finally {
    await service.close();
  }
});

test('a deployment from before identities: adopted over its own ledger, refused over a fresh one', async () => {
  const dir = dataDir();
  await hubIn(dir, {
    ledger: beforeIdentities(await JournaledLedger.open(dir)),
    store: beforeIdentities(await JournalMetadataStore.open(dir)),
  });
  assert.doesNotMatch(readFileSync(join(dir, 'metadata.journal'), 'utf8'), /ledgerIdentity/);
  // Copied before the upgrade adopts it.
  const freshLedger = dataDir([dir, 'metadata.journal']);

  const ledger = await JournaledLedger.open(dir);
  const store = await JournalMetadataStore.open(dir);
  const service = await buildService(configOf(dir), { ledger, store });
  try {
    const identity = await ledger.identity();
    assert.notEqual(identity, undefined);
    assert.equal(await store.ledgerIdentity(), identity);
    // Its books as they were.
    const accounts = JSON.parse(
      (await service.app.inject({ method: 'GET', url: '/participants/payer/accounts' })).body,
    );
    const settlement = accounts.find(
      (a: { ledgerAccountType: string }) => a.ledgerAccountType === 'SETTLEMENT',
    );
    assert.equal(settlement.value, -1000);
  } finally {
    await service.close();
  }

  const message = await refusal(freshLedger);
  assert.match(message, /the metadata records no ledger identity \(written before identities\)/);
  assert.match(
    message,
    /accounts the ledger does not hold \(Hub USD, payer USD, payee USD\); the ledger holds no identity\./,
  );
});

test('the process refuses to start on another hub’s embedded ledger, with the message', async () => {
  const hubA = dataDir();
  const hubB = dataDir();
  await hubIn(hubA);
  await hubIn(hubB);
  const swapped = dataDir([hubA, 'ledger.journal'], [hubB, 'metadata.journal']);
  const port = await freePort();
  const logFile = join(swapped, 'service.log');
  const started = startProcess(
    'service',
    ['--import', 'tsx', join(__dirname, '..', 'src', 'main.ts')],
    {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      LEDGER_BACKEND: 'embedded',
      LOG_LEVEL: 'warn',
      DATA_DIR: swapped,
    },
    port,
    logFile,
    '/live',
  );
  await assert.rejects(started.then(stopProcess), /service exited while starting/);
  assert.match(
    readFileSync(logFile, 'utf8'),
    /failed to start: LedgerMismatchError: the embedded ledger in \S+ is not the ledger the metadata in \S+ was written with/,
  );
});

test('a ledger replaced under a running service: /health DOWN naming it, every route 2003', async () => {
  let current: Ledger = new EmbeddedLedger();
  const replaceable = new Proxy({} as Ledger, {
    get: (_, key) => {
      const value = current[key as keyof Ledger];
      return typeof value === 'function' ? value.bind(current) : value;
    },
  });
  const service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
    ledger: replaceable,
    store: new MemoryMetadataStore(),
  });
  try {
    await onboard(inject(service), ['payer', 'payee'], '1000', 1000);
    assert.equal((await service.app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
    current = new EmbeddedLedger();

    const health = await service.app.inject({ method: 'GET', url: '/health' });
    assert.equal(health.statusCode, 503, health.body);
    const body = JSON.parse(health.body);
    assert.equal(body.status, 'DOWN');
    assert.match(body.reason, /^not serving: the embedded ledger in \S+ is not the ledger/);
    assert.deepEqual(
      body.services.find((s: { name: string }) => s.name === 'ledger:embedded'),
      { name: 'ledger:embedded', status: 'DOWN' },
    );
    for (const request of [
      { method: 'GET' as const, url: '/participants/payer/accounts' },
      { method: 'POST' as const, url: '/participants', payload: { name: 'new', currency: 'USD' } },
    ]) {
      const refused = await service.app.inject(request);
      assert.equal(refused.statusCode, 503, refused.body);
      const error = JSON.parse(refused.body).errorInformation;
      assert.equal(error.errorCode, '2003');
      assert.match(error.errorDescription, /the ledger is not the one this metadata was written/);
    }
    assert.equal((await service.app.inject({ method: 'GET', url: '/live' })).statusCode, 200);
  } finally {
    await service.close();
  }
});
