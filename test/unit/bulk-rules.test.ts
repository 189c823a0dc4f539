/**
 * The bulk flow's stateless rules: central-ledger's checks, members from the object store's
 * items, states, and what each party is told of the results.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BulkDelivery, BulkPrepareBody } from '../../src/domain/bulk/api';
import { finalNotices, finalState, memberOutcome, resultsFor } from '../../src/domain/bulk/results';
import {
  asErrorInformation,
  bulkApiState,
  checkPrepare,
  fulfilRefusal,
  MAX_MEMBERS,
  membersOf,
  sameMessage,
} from '../../src/domain/bulk/rules';
import { FspiopError } from '../../src/domain/shared/errors';
import type { BulkMember, BulkRecord } from '../../src/ports/bulk';
import type { Participant, TransferRecord } from '../../src/ports/metadata';

const NOW = Date.parse('2026-11-27T12:00:00.000Z');
const ID1 = '7d3c2b6e-8f0a-4c1d-9e2f-3a4b5c6d7e8f';
const ID2 = '0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0';

const item = (
  transferId: unknown,
  extra: Record<string, unknown> = {},
): Record<string, unknown> => ({
  transferId,
  transferAmount: { amount: '10', currency: 'USD' },
  ilpPacket: 'packet',
  condition: 'condition',
  ...extra,
});

const member = (transferId: string, refusal?: BulkMember['refusal']): BulkMember => ({
  transferId,
  amount: '1',
  currency: 'USD',
  ilpPacket: 'p',
  condition: 'c',
  ...(refusal === undefined ? {} : { refusal }),
});

const record = (members: BulkMember[], change: Partial<BulkRecord> = {}): BulkRecord => ({
  bulkTransferId: 'bulk',
  bulkQuoteId: 'quote',
  payerFsp: 'payer',
  payeeFsp: 'payee',
  expiration: new Date(NOW + 60_000).toISOString(),
  prepareHash: 'h',
  prepareMessageId: 'm1',
  state: 'ACCEPTED',
  members,
  headers: {},
  createdAt: new Date(NOW).toISOString(),
  version: 1,
  ...change,
});

const refusedCode = (error: unknown): string =>
  error instanceof FspiopError ? error.code : 'not an FspiopError';

test('members: items in order, a repeated id refused 3100 after the first, a missing field 3100', () => {
  const members = membersOf([
    item(ID1),
    item(ID2, { condition: undefined }),
    item(ID1.toUpperCase(), { extensionList: { extension: [] } }),
  ]);
  assert.deepEqual(
    members.map((m) => [m.transferId, m.refusal?.errorCode]),
    [
      [ID1, undefined],
      [ID2, '3100'],
      [ID1.toUpperCase(), '3100'],
    ],
  );
  assert.match(members[1]!.refusal!.errorDescription, /no condition/);
  assert.match(members[2]!.refusal!.errorDescription, /repeated/);
  assert.deepEqual(members[2]!.extensionList, { extension: [] });
  assert.equal(members[0]!.amount, '10');
});

test('members: none, too many, or an item without a transferId refuse the bulk whole (3100)', () => {
  for (const items of [
    [],
    Array.from({ length: MAX_MEMBERS + 1 }, () => item(ID1)),
    [item(ID1), item(undefined)],
  ])
    assert.throws(
      () => membersOf(items),
      (error) => refusedCode(error) === '3100',
    );
});

test("prepare checks in central-ledger's order, the first failure winning", async () => {
  const known: Record<string, Participant> = {
    payer: { isActive: true } as Participant,
    payee: { isActive: true } as Participant,
    asleep: { isActive: false } as Participant,
  };
  const participant = async (name: string): Promise<Participant | undefined> => known[name];
  const body: BulkPrepareBody = {
    bulkTransferId: 'b',
    bulkQuoteId: 'q',
    payerFsp: 'payer',
    payeeFsp: 'payee',
    expiration: new Date(NOW + 1000).toISOString(),
    hash: 'h',
  };
  const delivery: BulkDelivery = {
    source: 'payer',
    destination: 'payee',
    messageId: 'm',
    origin: undefined,
    headers: {},
  };
  const check = async (
    changedBody: Partial<BulkPrepareBody>,
    changedDelivery: Partial<BulkDelivery> = {},
  ): Promise<string> =>
    checkPrepare({
      body: { ...body, ...changedBody },
      delivery: { ...delivery, ...changedDelivery },
      now: NOW,
      participant,
    }).then(
      () => 'valid',
      (error: unknown) => refusedCode(error),
    );
  assert.equal(await check({}), 'valid');
  assert.equal(await check({ payerFsp: 'asleep', payeeFsp: 'asleep' }), '3100');
  assert.equal(await check({ expiration: new Date(NOW).toISOString() }), '3100');
  assert.equal(await check({ expiration: 'tomorrow' }), '3100');
  assert.equal(await check({ payeeFsp: 'PAYER' }), '3100');
  assert.equal(await check({ payerFsp: 'asleep' }, { source: 'asleep' }), '3202');
  assert.equal(await check({ payerFsp: 'nobody' }, { source: 'nobody' }), '3202');
  assert.equal(await check({ payeeFsp: 'asleep' }), '3203');
  assert.equal(await check({}, { destination: 'nobody' }), '3203');
});

test("a payee's PUT: addressed to the payer or the Hub, completed neither later nor long ago", () => {
  const refusal = (
    destination: string | undefined,
    completedTimestamp: string | undefined,
  ): string | undefined =>
    fulfilRefusal({
      record: record([]),
      destination,
      completedTimestamp,
      hubName: 'Hub',
      now: NOW,
      maxAgeMs: 300_000,
    })?.errorDescription;
  const at = (offsetMs: number): string => new Date(NOW + offsetMs).toISOString();
  assert.equal(refusal('payer', at(-1000)), undefined);
  assert.equal(refusal('Hub', at(-300_000)), undefined);
  assert.equal(refusal(undefined, undefined), undefined);
  assert.match(refusal('other', at(0))!, /FSPIOP-Destination/);
  assert.match(refusal('payer', at(1))!, /future timestamp/);
  assert.match(refusal('payer', at(-300_001))!, /maximum timeout duration/);
  assert.match(refusal('payer', 'yesterday')!, /not a date-time/);
});

test("bulk states as the API shows them (central-ledger's seed)", () => {
  assert.deepEqual(
    (
      [
        'RECEIVED',
        'PENDING_PREPARE',
        'ACCEPTED',
        'PROCESSING',
        'PENDING_FULFIL',
        'COMPLETED',
        'REJECTED',
        'INVALID',
      ] as const
    ).map(bulkApiState),
    [
      'RECEIVED',
      'PENDING',
      'ACCEPTED',
      'PROCESSING',
      'PROCESSING',
      'COMPLETED',
      'REJECTED',
      'REJECTED',
    ],
  );
});

test('the same message: by its id or where it was read', () => {
  const delivery: BulkDelivery = {
    source: 's',
    destination: undefined,
    messageId: 'm',
    origin: 't:0:1',
    headers: {},
  };
  assert.ok(sameMessage({ messageId: 'm', origin: undefined }, delivery));
  assert.ok(sameMessage({ messageId: 'x', origin: 't:0:1' }, delivery));
  assert.ok(!sameMessage({ messageId: 'x', origin: undefined }, delivery));
  assert.ok(!sameMessage({ messageId: undefined, origin: 't:0:2' }, delivery));
});

test("a member's outcome is its transfer's; a refusal its own; never prepared, open until past", () => {
  const transfer = (change: Partial<TransferRecord>): TransferRecord =>
    ({ transferId: ID1, state: 'RESERVED', ...change }) as TransferRecord;
  const refusal = { errorCode: '4001', errorDescription: 'no money' };
  const brief = (m: BulkMember, t: TransferRecord | undefined, past = false): unknown => {
    const outcome = memberOutcome(m, t, past);
    if (!outcome.final) return 'open';
    return 'fulfilment' in outcome.result
      ? outcome.result.fulfilment
      : outcome.result.errorInformation.errorCode;
  };
  assert.equal(brief(member(ID1, refusal), undefined), '4001');
  assert.equal(brief(member(ID1), undefined), 'open');
  assert.equal(brief(member(ID1), undefined, true), '3303');
  assert.equal(brief(member(ID1), transfer({})), 'open');
  assert.equal(brief(member(ID1), transfer({ state: 'COMMITTED', fulfilment: 'f' })), 'f');
  assert.equal(brief(member(ID1), transfer({ state: 'SETTLED', fulfilment: 'g' })), 'g');
  // Committed, its fulfilment not yet recorded (a crash): open until the resumed fulfil writes it.
  assert.equal(brief(member(ID1), transfer({ state: 'COMMITTED' })), 'open');
  assert.equal(
    brief(member(ID1), transfer({ state: 'ABORTED_ERROR', errorInformation: refusal })),
    '4001',
  );
  assert.equal(brief(member(ID1), transfer({ state: 'ABORTED_REJECTED' })), '2001');
  assert.equal(
    brief(
      member(ID1),
      transfer({
        state: 'EXPIRED_RESERVED',
        errorInformation: { errorCode: '3303', errorDescription: 'Transfer expired' },
      }),
    ),
    '3303',
  );
});

test('the final state comes from all results: COMPLETED if any committed', () => {
  const committed = memberOutcome(
    member(ID1),
    { transferId: ID1, state: 'COMMITTED', fulfilment: 'f' } as TransferRecord,
    false,
  );
  const failed = memberOutcome(
    member(ID2, { errorCode: '5100', errorDescription: 'no' }),
    undefined,
    false,
  );
  assert.equal(finalState([failed, committed]), 'COMPLETED');
  assert.equal(finalState([committed, failed]), 'COMPLETED');
  assert.equal(finalState([failed]), 'REJECTED');
});

test('who is told what: the payer every result, the payee those it was given', () => {
  const refused = member(ID2, { errorCode: '4001', errorDescription: 'no money' });
  const bulk = record([member(ID1), refused], {
    state: 'COMPLETED',
    finishedBy: 'fulfil',
    completedTimestamp: 'at',
  });
  const outcomes = [
    memberOutcome(
      member(ID1),
      { transferId: ID1, state: 'COMMITTED', fulfilment: 'f' } as TransferRecord,
      false,
    ),
    memberOutcome(refused, undefined, false),
  ];
  assert.deepEqual(
    resultsFor(bulk, outcomes, 'payee').map((r) => r.transferId),
    [ID1],
  );
  assert.deepEqual(
    resultsFor(bulk, outcomes, 'payer').map((r) => r.transferId),
    [ID1, ID2],
  );
  const told = (change: Partial<BulkRecord>): unknown =>
    finalNotices({ ...bulk, ...change }, outcomes).map((n) => [
      n.kind,
      n.to,
      n.kind === 'forward' ? undefined : n.cause,
    ]);
  assert.deepEqual(told({}), [
    ['state', 'payer', 'fulfil'],
    ['state', 'payee', 'fulfil'],
  ]);
  assert.deepEqual(told({ finishedBy: 'expiry' }), [
    ['state', 'payer', 'expiry'],
    ['state', 'payee', 'expiry'],
  ]);
  assert.deepEqual(told({ finishedBy: 'prepare', state: 'REJECTED' }), [
    ['state', 'payer', 'prepare'],
  ]);
  const errorInformation = { errorCode: '5101', errorDescription: 'no' };
  assert.deepEqual(told({ finishedBy: 'error', state: 'REJECTED', errorInformation }), [
    ['error', 'payer', 'fulfil'],
    ['error', 'payee', 'fulfil'],
  ]);
  // A payee's error on a bulk one of whose transfers had committed: the results, not the error.
  assert.deepEqual(told({ finishedBy: 'error', errorInformation }), [
    ['state', 'payer', 'fulfil'],
    ['state', 'payee', 'fulfil'],
  ]);
});

test("a payee's errorInformation is taken only as FSPIOP's shape", () => {
  assert.deepEqual(asErrorInformation({ errorCode: '5100', errorDescription: 'd' }), {
    errorCode: '5100',
    errorDescription: 'd',
  });
  assert.equal(asErrorInformation({ errorCode: 5100, errorDescription: 'd' }), undefined);
  assert.equal(asErrorInformation('5100'), undefined);
});
