/**
 * A MySQL write that times out is cancelled on the server (a real MariaDB started here; skipped
 * loudly without one): held behind another session's row lock past the query timeout, the write
 * is answered MetadataUnavailableError within the store's write bound, no statement of it is still
 * running on the server, and once the lock is released it never lands — the bound on a write's
 * landing that other instances rely on (MetadataStore.writeTimeoutMs) holds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../src/config/config';
import { MySqlMetadataStore } from '../src/metadata/mysql';
import { rowOf } from '../src/metadata/mysql-rows';
import { MetadataUnavailableError, type TransferRecord } from '../src/ports/metadata';
import { TransferInternalState } from '../src/ports/states';
import { knexOn, useMariaDb } from './support/mariadb';
import { mysqlEnv } from './support/service-process';

const server = useMariaDb('a timed-out MySQL write cancelled on the server');

const QUERY_TIMEOUT_MS = 500;
const CONNECT_TIMEOUT_MS = 1000;
/** Long enough for a write still running on the server to land once the lock is free. */
const LANDING_MS = 2000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function transfer(transferId: string): TransferRecord {
  return {
    transferId,
    payerFsp: 'dfspa',
    payeeFsp: 'dfspb',
    amount: '10',
    currency: 'USD',
    condition: 'GRzLaTP7DJ9t4P-a_BA0WA9wzzlsugf00-Tn6kESAfM',
    ilpPacket: 'AYIBgQAAAAAAAASwNGxldmVsb25lLmRmc3BiLm1lcg',
    expiration: '2030-01-01T00:00:00.000Z',
    extensionList: undefined,
    payloadHash: 'hash',
    state: TransferInternalState.RESERVED,
    createdAt: '2026-01-01T00:00:00.000Z',
  };
}

test('a write held behind a lock past the query timeout is killed, never to land', async (t) => {
  const mariadb = server.current();
  if (mariadb === undefined) return t.skip('no MariaDB here');
  const database = await mariadb.createDatabase();
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    ...mysqlEnv(mariadb, database),
    MYSQL_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    MYSQL_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
  }).mysql;
  const store = new MySqlMetadataStore(config);
  const holder = knexOn(mariadb, database);
  t.after(() => Promise.all([store.close(), holder.destroy()]));
  await store.migrate();
  const held = transfer('00000000-0000-4000-8000-000000000001');
  // Another session's uncommitted insert of the same key: the store's upsert waits for its lock.
  const lock = await holder.transaction();
  await lock('transfers').insert(rowOf({ ...held, state: TransferInternalState.RECEIVED_PREPARE }));

  const asked = performance.now();
  const error = await store.saveTransfers([held]).then(
    () => undefined,
    (reason: unknown) => reason,
  );
  const answeredMs = performance.now() - asked;
  assert.ok(
    error instanceof MetadataUnavailableError,
    `answered MetadataUnavailableError: ${String(error)}`,
  );
  assert.ok(
    answeredMs <= store.writeTimeoutMs + 500,
    `answered in ${Math.round(answeredMs)} ms, bound ${store.writeTimeoutMs} ms`,
  );
  const running = (await holder.raw(
    "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE info LIKE 'insert into `transfers`%'",
  )) as [{ n: number | string }[]];
  assert.equal(Number(running[0][0]!.n), 0, 'no statement of the write still runs on the server');

  await lock.rollback();
  await sleep(LANDING_MS);
  assert.deepEqual(await store.transfers([held.transferId]), [undefined], 'the write never landed');

  // The pool's connections outlived the kills: the next write lands.
  await store.saveTransfers([held]);
  assert.equal((await store.transfers([held.transferId]))[0]?.state, 'RESERVED');
});
