/**
 * The Kafka edge of bulk transfers (src/handlers/kafka/bulk.ts, bulk-notices.ts) over a fake bulk
 * flow: bulk-api-adapter's messages read, the flow's notices told as its notification handler
 * reads them (results documents saved first), refusals to the sender, the same ids on redelivery.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import type { BulkApi, BulkDelivery, BulkNotice, BulkPrepareBody } from '../../src/domain/bulk/api';
import { FspiopCode, FspiopError } from '../../src/domain/shared/errors';
import { BulkMessages } from '../../src/handlers/kafka/bulk';
import { Inbound } from '../../src/handlers/kafka/inbound';
import { transferIdOf, type MojaloopMessage } from '../../src/handlers/kafka/messages';
import { HandlerRegistry } from '../../src/handlers/kafka/registry';
import type { BulkRecord, BulkTransferResultDocument } from '../../src/ports/bulk';

const log = pino({ level: 'silent' });
const BULK = 'b1f2a0c4-0000-4000-8000-000000000001';
const MESSAGE = 'c0ffee00-0000-4000-8000-000000000002';

const bulkRecord: BulkRecord = {
  bulkTransferId: BULK,
  bulkQuoteId: 'q1',
  payerFsp: 'payerfsp',
  payeeFsp: 'payeefsp',
  expiration: '2030-01-01T00:00:00.000Z',
  prepareHash: 'h',
  prepareMessageId: MESSAGE,
  state: 'ACCEPTED',
  members: [],
  headers: {
    'content-type': 'application/vnd.interoperability.bulkTransfers+json;version=1.1',
    'fspiop-source': 'payerfsp',
    'fspiop-destination': 'payeefsp',
  },
  createdAt: '2029-12-31T00:00:00.000Z',
  version: 3,
};

const forward: BulkNotice = {
  kind: 'forward',
  to: 'payeefsp',
  bulk: bulkRecord,
  transfers: [
    {
      transferId: 't1',
      transferAmount: { amount: '300', currency: 'USD' },
      ilpPacket: 'p',
      condition: 'c',
    },
  ],
};

function finalTo(to: string): BulkNotice {
  return {
    kind: 'state',
    cause: 'fulfil',
    to,
    bulk: bulkRecord,
    bulkTransferState: 'COMPLETED',
    completedTimestamp: '2029-12-31T00:00:01.000Z',
    results: [
      { transferId: 't1', fulfilment: 'f' },
      { transferId: 't2', errorInformation: { errorCode: '5100', errorDescription: 'no' } },
    ],
  };
}

/** A bulk flow answering each call with what `answers` says, recording what it was given. */
function fakeFlow(answers: Partial<Record<keyof BulkApi, () => BulkNotice[]>>) {
  const calls: { method: string; delivery?: BulkDelivery; body?: unknown; args?: unknown[] }[] = [];
  const answer = (method: keyof BulkApi): BulkNotice[] => {
    const make = answers[method];
    if (make === undefined) throw new Error(`unexpected ${method}`);
    return make();
  };
  const api: BulkApi = {
    async prepare(delivery, body) {
      calls.push({ method: 'prepare', delivery, body });
      return answer('prepare');
    },
    async fulfil(delivery, body) {
      calls.push({ method: 'fulfil', delivery, body });
      return answer('fulfil');
    },
    async error(delivery, body) {
      calls.push({ method: 'error', delivery, body });
      return answer('error');
    },
    async get(bulkTransferId, requester) {
      calls.push({ method: 'get', args: [bulkTransferId, requester] });
      return answer('get');
    },
    async withoutMembers(records) {
      return [...records];
    },
    async finishExpired() {
      return [];
    },
  };
  return { api, calls };
}

function resultStore(failing = false) {
  const saved: BulkTransferResultDocument[] = [];
  return {
    saved,
    async saveResult(doc: BulkTransferResultDocument) {
      if (failing) throw new Error('object store down');
      saved.push(doc);
    },
  };
}

function edge(api: BulkApi, results = resultStore()) {
  const registry = new HandlerRegistry(log);
  new BulkMessages(api, results).register(registry);
  const answer = (message: MojaloopMessage, offset = 7) =>
    registry.answer(new Inbound(message, transferIdOf(message)!, `topic-bulk:0:${offset}`));
  return { answer, results };
}

function dataUri(payload: unknown): string {
  return `data:application/vnd.interoperability.bulkTransfers+json;version=1.1;base64,${Buffer.from(
    JSON.stringify(payload),
  ).toString('base64')}`;
}

const prepareBody: BulkPrepareBody = {
  bulkTransferId: BULK,
  bulkQuoteId: 'q1',
  payerFsp: 'payerfsp',
  payeeFsp: 'payeefsp',
  expiration: '2030-01-01T00:00:00.000Z',
  hash: 'h',
};

/** As bulk-api-adapter writes a POST /bulkTransfers to topic-bulk-prepare. */
function prepareMessage(payload: unknown = prepareBody): MojaloopMessage {
  return {
    id: MESSAGE,
    from: 'payerfsp',
    to: 'payeefsp',
    type: 'application/json',
    content: {
      headers: {
        'content-type': 'application/vnd.interoperability.bulkTransfers+json;version=1.1',
        'content-length': '1234',
        'fspiop-source': 'payerfsp',
        'fspiop-destination': 'payeefsp',
        'fspiop-signature': 'sig',
      },
      payload: dataUri(payload),
    },
    metadata: { event: { id: 'e1', type: 'bulk-prepare', action: 'bulk-prepare' } },
  };
}

function fulfilMessage(action: 'bulk-commit' | 'bulk-abort', payload: unknown): MojaloopMessage {
  return {
    id: 'd00d0000-0000-4000-8000-000000000003',
    from: 'payeefsp',
    to: 'payerfsp',
    type: 'application/json',
    content: {
      uriParams: { id: BULK },
      headers: { 'fspiop-source': 'payeefsp', 'fspiop-destination': 'payerfsp' },
      payload: dataUri(payload),
    },
    metadata: { event: { id: 'e2', type: 'bulk-fulfil', action } },
  };
}

function getMessage(requester: string): MojaloopMessage {
  return {
    id: 'e0e00000-0000-4000-8000-000000000004',
    from: requester,
    to: 'Hub',
    type: 'application/json',
    content: {
      uriParams: { id: BULK },
      headers: { 'fspiop-source': requester, 'content-type': 'application/json' },
      payload: undefined,
    },
    metadata: { event: { id: 'e3', type: 'bulk', action: 'get' } },
  };
}

test('a bulk prepare is keyed by its bulk id and read into the flow', async () => {
  assert.equal(transferIdOf(prepareMessage()), BULK);
  const flow = fakeFlow({ prepare: () => [forward] });
  const { answer } = edge(flow.api);
  await answer(prepareMessage({ ...prepareBody, extensionList: { extension: [] } }));
  assert.equal(flow.calls.length, 1);
  const { delivery, body } = flow.calls[0]!;
  assert.deepEqual(body, { ...prepareBody, extensionList: { extension: [] } });
  assert.equal(delivery!.source, 'payerfsp');
  assert.equal(delivery!.destination, 'payeefsp');
  assert.equal(delivery!.messageId, MESSAGE);
  assert.equal(delivery!.origin, 'topic-bulk:0:7');
});

test("forward: the payee's POST as bulk-api-adapter reads it, its document saved", async () => {
  const { answer, results } = edge(fakeFlow({ prepare: () => [forward] }).api);
  const [message, ...rest] = await answer(prepareMessage());
  assert.equal(rest.length, 0);
  assert.equal(message!.metadata.event.action, 'bulk-prepare');
  assert.equal(message!.metadata.event.state?.status, 'success');
  assert.equal(message!.from, 'Hub');
  assert.equal(message!.to, 'payeefsp');
  assert.equal(message!.content.headers['fspiop-source'], 'Hub');
  assert.equal(message!.content.headers['fspiop-destination'], 'payeefsp');
  assert.equal(message!.content.headers['content-length'], undefined);
  assert.equal(message!.content.headers['fspiop-signature'], undefined);
  assert.deepEqual(message!.content.payload, {
    bulkTransferId: BULK,
    bulkQuoteId: 'q1',
    payerFsp: 'payerfsp',
    payeeFsp: 'payeefsp',
    expiration: '2030-01-01T00:00:00.000Z',
  });
  assert.equal(results.saved.length, 1);
  const doc = results.saved[0]!;
  assert.equal(doc.messageId, message!.id);
  assert.equal(doc.destination, 'payeefsp');
  assert.equal(doc.bulkTransferId, BULK);
  assert.deepEqual(doc.individualTransferResults, [
    {
      transferId: 't1',
      transferAmount: { amount: '300', currency: 'USD' },
      ilpPacket: 'p',
      condition: 'c',
      extensionList: { extension: [] },
    },
  ]);
});

test('the final state: bulk-commit to each party with its own document', async () => {
  const flow = fakeFlow({ fulfil: () => [finalTo('payerfsp'), finalTo('payeefsp')] });
  const { answer, results } = edge(flow.api);
  const fulfil = { bulkTransferId: BULK, bulkTransferState: 'COMPLETED', count: 2, hash: 'x' };
  const messages = await answer(fulfilMessage('bulk-commit', fulfil));
  assert.equal(flow.calls[0]!.method, 'fulfil');
  assert.deepEqual(
    messages.map((m) => [m.metadata.event.action, m.to]),
    [
      ['bulk-commit', 'payerfsp'],
      ['bulk-commit', 'payeefsp'],
    ],
  );
  assert.deepEqual(messages[0]!.content.payload, {
    bulkTransferId: BULK,
    bulkTransferState: 'COMPLETED',
    completedTimestamp: '2029-12-31T00:00:01.000Z',
  });
  assert.deepEqual(
    results.saved.map((d) => [d.messageId, d.destination, d.bulkTransferState]),
    messages.map((m) => [m.id, m.to, 'COMPLETED']),
  );
  assert.notEqual(messages[0]!.id, messages[1]!.id);
  assert.equal(results.saved[0]!.individualTransferResults.length, 2);
});

test("a payee's PUT …/error goes to the flow's error; its final error is bulk-abort", async () => {
  const errorInformation = { errorCode: '5100', errorDescription: 'payee refused' };
  const flow = fakeFlow({
    error: () => [
      { kind: 'error', cause: 'fulfil', to: 'payerfsp', bulkTransferId: BULK, errorInformation },
    ],
  });
  const { answer, results } = edge(flow.api);
  const [message] = await answer(
    fulfilMessage('bulk-abort', { bulkTransferId: BULK, errorInformation, hash: 'x' }),
  );
  assert.equal(flow.calls[0]!.method, 'error');
  assert.equal(message!.metadata.event.action, 'bulk-abort');
  assert.equal(message!.metadata.event.state?.status, 'error');
  assert.equal(message!.content.uriParams?.id, BULK);
  assert.deepEqual(message!.content.payload, { errorInformation });
  assert.equal(results.saved.length, 0);
});

test('GET and duplicates carry their lists in the event, no document', async () => {
  const got: BulkNotice = {
    kind: 'state',
    cause: 'get',
    to: 'payeefsp',
    bulk: bulkRecord,
    bulkTransferState: 'PROCESSING',
  };
  const flow = fakeFlow({
    get: () => [got],
    prepare: () => [{ ...finalTo('payerfsp'), cause: 'duplicate' }],
  });
  const { answer, results } = edge(flow.api);
  const [get] = await answer(getMessage('payeefsp'));
  assert.deepEqual(flow.calls[0]!.args, [BULK, 'payeefsp']);
  assert.equal(get!.metadata.event.action, 'bulk-get');
  assert.deepEqual(get!.content.payload, { bulkTransferId: BULK, bulkTransferState: 'PROCESSING' });
  const [duplicate] = await answer(prepareMessage());
  assert.equal(duplicate!.metadata.event.action, 'bulk-prepare-duplicate');
  const payload = duplicate!.content.payload as Record<string, unknown>;
  assert.equal((payload['individualTransferResults'] as unknown[]).length, 2);
  assert.equal(results.saved.length, 0);
});

test('refusals go to the sender as PUT …/error under its topic’s action', async () => {
  const refuse = (code: FspiopCode) => () => {
    throw new FspiopError(code, 'refused');
  };
  const { answer } = edge(
    fakeFlow({
      prepare: refuse(FspiopCode.MODIFIED_REQUEST),
      fulfil: refuse(FspiopCode.VALIDATION),
      error: refuse(FspiopCode.MODIFIED_REQUEST),
      get: refuse(FspiopCode.GENERIC_CLIENT),
    }).api,
  );
  const errorInformation = { errorCode: '5100', errorDescription: 'x' };
  const cases: [MojaloopMessage, string, string][] = [
    [prepareMessage(), 'bulk-prepare', 'payerfsp'],
    [fulfilMessage('bulk-commit', { bulkTransferId: BULK, hash: 'x' }), 'bulk-commit', 'payeefsp'],
    [
      fulfilMessage('bulk-abort', { bulkTransferId: BULK, errorInformation, hash: 'x' }),
      'bulk-abort',
      'payeefsp',
    ],
    [getMessage('otherfsp'), 'bulk-get', 'otherfsp'],
  ];
  for (const [message, action, to] of cases) {
    const [refusal, ...rest] = await answer(message);
    assert.equal(rest.length, 0);
    assert.equal(refusal!.metadata.event.action, action, action);
    assert.equal(refusal!.metadata.event.state?.status, 'error');
    assert.equal(refusal!.to, to);
    assert.equal(refusal!.content.headers['fspiop-destination'], to);
    assert.equal(refusal!.content.uriParams?.id, BULK);
    const payload = refusal!.content.payload as { errorInformation: { errorCode: string } };
    assert.match(payload.errorInformation.errorCode, /^\d{4}$/);
  }
});

test('a malformed payload is refused (3101) without reaching the flow', async () => {
  const flow = fakeFlow({});
  const { answer } = edge(flow.api);
  const [refusal] = await answer(prepareMessage({ ...prepareBody, payerFsp: 42 }));
  assert.equal(flow.calls.length, 0);
  assert.equal(refusal!.metadata.event.action, 'bulk-prepare');
  const payload = refusal!.content.payload as { errorInformation: { errorCode: string } };
  assert.equal(payload.errorInformation.errorCode, '3101');
  const [mismatch] = await answer(
    fulfilMessage('bulk-commit', { bulkTransferId: 'another', hash: 'x' }),
  );
  assert.equal(mismatch!.metadata.event.action, 'bulk-commit');
  assert.equal(flow.calls.length, 0);
});

test('delivered again: the same messages and documents, under the same ids', async () => {
  const flow = fakeFlow({ fulfil: () => [finalTo('payerfsp'), finalTo('payeefsp')] });
  const { answer, results } = edge(flow.api);
  const fulfil = fulfilMessage('bulk-commit', { bulkTransferId: BULK, hash: 'x' });
  const first = await answer(fulfil);
  const again = await answer(fulfil);
  assert.deepEqual(
    again.map((m) => [m.id, m.metadata.event.id]),
    first.map((m) => [m.id, m.metadata.event.id]),
  );
  assert.deepEqual(results.saved.slice(2), results.saved.slice(0, 2));
});

test('an object store that fails fails the message (delivered again), no event out', async () => {
  const { answer } = edge(fakeFlow({ prepare: () => [forward] }).api, resultStore(true));
  await assert.rejects(answer(prepareMessage()), /object store down/);
});
