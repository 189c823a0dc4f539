/**
 * The bulk object store (src/metadata/mongo-bulk.ts) on a real FerretDB: bulk-api-adapter's
 * collections read and written in object-store-lib's shapes, the service's bulk records saved
 * optimistically, the members index, the expired bulks. Skips loudly without FerretDB.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { MongoClient, ObjectId } from 'mongodb';
import { MongoBulkStore } from '../src/metadata/mongo-bulk';
import type { BulkRecord } from '../src/ports/bulk';
import { ferretDbForTests, type RunningFerretDb } from './support/ferretdb';

let server: RunningFerretDb | undefined;
let store: MongoBulkStore | undefined;
let client: MongoClient | undefined;
const DATABASE = 'mlos';

before(async () => {
  server = await ferretDbForTests('bulk object store tests');
  if (server === undefined) return;
  store = await MongoBulkStore.open({ url: server.url, database: DATABASE });
  client = await new MongoClient(server.url).connect();
});

after(async () => {
  await store?.close();
  await client?.close();
  await server?.stop();
});

function record(overrides: Partial<BulkRecord> = {}): BulkRecord {
  const bulkTransferId = randomUUID();
  return {
    bulkTransferId,
    bulkQuoteId: randomUUID(),
    payerFsp: 'payerfsp',
    payeeFsp: 'payeefsp',
    expiration: '2030-01-01T00:00:00.000Z',
    prepareHash: 'hash',
    prepareMessageId: randomUUID(),
    state: 'RECEIVED',
    members: [
      { transferId: randomUUID(), amount: '1.5', currency: 'USD', ilpPacket: 'p', condition: 'c' },
    ],
    headers: { 'fspiop-source': 'payerfsp' },
    createdAt: new Date().toISOString(),
    version: 1,
    ...overrides,
  };
}

test('a bulk is created once and saved only over the version it was read at', async (t) => {
  if (store === undefined) return t.skip('no FerretDB');
  const bulk = record();
  assert.equal(await store.create(bulk), true);
  assert.equal(await store.create({ ...bulk, bulkQuoteId: 'other' }), false);
  assert.deepEqual(await store.bulk(bulk.bulkTransferId), bulk);
  const accepted = { ...bulk, state: 'ACCEPTED' as const, version: 2 };
  assert.equal(await store.save(accepted, bulk), true);
  // A second writer that read version 1 too comes second.
  assert.equal(await store.save({ ...bulk, state: 'REJECTED', version: 2 }, bulk), false);
  assert.deepEqual(await store.bulk(bulk.bulkTransferId), accepted);
  assert.equal(await store.bulk(randomUUID()), undefined);
});

test('a save given the copy it was made from writes its changes, and only over that version', async (t) => {
  if (store === undefined) return t.skip('no FerretDB');
  const bulk = record({ errorInformation: { errorCode: '3100', errorDescription: 'x' } });
  assert.equal(await store.create(bulk), true);
  const { errorInformation, ...rest } = bulk;
  void errorInformation;
  const members = [{ ...bulk.members[0]!, refusal: { errorCode: '4001', errorDescription: 'y' } }];
  const accepted: BulkRecord = { ...rest, state: 'ACCEPTED', members, version: 2 };
  assert.equal(await store.save(accepted, bulk), true);
  assert.deepEqual(await store.bulk(bulk.bulkTransferId), accepted);
  assert.equal(await store.save({ ...bulk, state: 'REJECTED', version: 2 }, bulk), false);
  // One that came second with other members leaves no list of them behind.
  const lists = client!.db(DATABASE).collection('tbBulkMemberLists');
  const listed = await lists.countDocuments();
  assert.equal(await store.save({ ...bulk, members: [], version: 2 }, bulk), false);
  assert.equal(await lists.countDocuments(), listed);
  const expiration = '2029-01-01T00:00:00.000Z';
  const moved: BulkRecord = { ...accepted, expiration, state: 'PENDING_FULFIL', version: 3 };
  assert.equal(await store.save(moved, accepted), true);
  assert.deepEqual(await store.bulk(bulk.bulkTransferId), moved);
  const due = await store.openExpiredBefore(Date.parse('2029-06-01T00:00:00.000Z'), 1000);
  assert.ok(due.some((found) => found.bulkTransferId === bulk.bulkTransferId));
});

test('a bulk whose members list is missing is refused, not read forever', async (t) => {
  if (store === undefined) return t.skip('no FerretDB');
  const bulkTransferId = randomUUID();
  // A final bulk, so that no expiry query of another test meets it.
  const { members, ...rest } = record({ bulkTransferId, state: 'COMPLETED' });
  void members;
  const document = { ...rest, _id: bulkTransferId, expiresAtMs: 0, membersId: randomUUID() };
  await client!.db(DATABASE).collection<typeof document>('tbBulkTransfers').insertOne(document);
  await assert.rejects(store.bulk(bulkTransferId), /members' list .* is missing/);
});

test('members are indexed by transfer id, the first bulk keeping a shared id', async (t) => {
  if (store === undefined) return t.skip('no FerretDB');
  const first = record();
  const shared = first.members[0]!;
  const second = record({ members: [shared, { ...shared, transferId: randomUUID() }] });
  assert.equal(await store.create(first), true);
  assert.equal(await store.create(second), true);
  const unknown = randomUUID();
  const found = await store.bulksOf([shared.transferId, second.members[1]!.transferId, unknown]);
  assert.deepEqual(
    found,
    new Map([
      [shared.transferId, first.bulkTransferId],
      [second.members[1]!.transferId, second.bulkTransferId],
    ]),
  );
  assert.deepEqual(await store.bulksOf([]), new Map());
});

test('members disclaimed by their bulk are no longer named its own, another bulk keeps its', async (t) => {
  if (store === undefined) return t.skip('no FerretDB');
  const first = record();
  const shared = first.members[0]!;
  const own = { ...shared, transferId: randomUUID() };
  const taken = { ...shared, transferId: randomUUID() };
  const second = record({ members: [shared, own, taken] });
  assert.equal(await store.create(first), true);
  assert.equal(await store.create(second), true);
  await store.disclaim(second.bulkTransferId, [shared.transferId, taken.transferId]);
  await store.disclaim(second.bulkTransferId, []);
  assert.deepEqual(
    await store.bulksOf([shared.transferId, own.transferId, taken.transferId]),
    new Map([
      [shared.transferId, first.bulkTransferId],
      [own.transferId, second.bulkTransferId],
    ]),
  );
  // Its record still lists them.
  assert.deepEqual(
    (await store.bulk(second.bulkTransferId))?.members.map((member) => member.transferId),
    [shared.transferId, own.transferId, taken.transferId],
  );
});

test('open bulks past a time are listed, final ones never', async (t) => {
  if (store === undefined) return t.skip('no FerretDB');
  const expiration = '2001-01-01T00:00:00.000Z';
  const open = record({ expiration, state: 'PENDING_FULFIL' });
  const done = record({ expiration, state: 'COMPLETED' });
  const later = record({ expiration: '2001-01-02T00:00:00.000Z', state: 'ACCEPTED' });
  for (const bulk of [open, done, later]) await store.create(bulk);
  const before = Date.parse('2001-01-01T12:00:00.000Z');
  const found = await store.openExpiredBefore(before, 10);
  assert.deepEqual(
    found.map((b) => b.bulkTransferId),
    [open.bulkTransferId],
  );
  assert.equal((await store.openExpiredBefore(Date.parse('2001-01-03'), 1)).length, 1);
});

test("bulk-api-adapter's items are read by message id, its results written once", async (t) => {
  if (store === undefined || client === undefined) return t.skip('no FerretDB');
  const db = client.db(DATABASE);
  const messageId = randomUUID();
  const items = [1, 2, 3].map((n) => ({ transferId: `t${n}`, transferAmount: { amount: `${n}` } }));
  // As object-store-lib (mongoose) saves them: one document per item, its id made in the bulk's
  // order, the writes concurrent (bulk-api-adapter's Promise.all), so they may land in any order.
  const documents = items.map((payload) => ({ _id: new ObjectId(), messageId, payload, __v: 0 }));
  for (const document of documents.reverse())
    await db.collection('individualTransfers').insertOne(document);
  await db
    .collection('individualTransfers')
    .insertOne({ messageId: randomUUID(), payload: { transferId: 'other' } });
  const read = await store.individualTransfers(messageId);
  assert.deepEqual(
    read.map((p) => p['transferId']),
    ['t1', 't2', 't3'],
  );
  await db
    .collection('individualTransferFulfils')
    .insertOne({ messageId, bulkTransferId: 'b', payload: { transferId: 't1', fulfilment: 'f' } });
  assert.deepEqual(await store.individualTransferFulfils(messageId), [
    { transferId: 't1', fulfilment: 'f' },
  ]);

  const result = {
    messageId,
    destination: 'payeefsp',
    headers: { 'fspiop-source': 'Hub' },
    bulkTransferId: 'b',
    bulkTransferState: 'COMPLETED',
    individualTransferResults: [{ transferId: 't1', fulfilment: 'f' }],
  };
  await store.saveResult(result);
  // Delivered again: the first stands, nothing thrown.
  await store.saveResult({ ...result, bulkTransferState: 'REJECTED' });
  const saved = await db.collection('bulkTransferResults').find({ messageId }).toArray();
  assert.equal(saved.length, 1);
  assert.equal(saved[0]!['bulkTransferState'], 'COMPLETED');
  assert.equal(await store.healthy(), true);
});
