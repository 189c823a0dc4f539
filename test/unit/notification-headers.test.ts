/**
 * The headers of the notifications the Hub writes itself, as central-ledger v19.14 writes them:
 * an expiry carries central-services-shared's SwitchDefaultHeaders (the resource's default
 * version, transfers 1.0 and fxTransfers 2.0, from the Hub to the payer), and the answer to a GET
 * keeps the DFSP's own headers (its content-type version included) with the Hub as source and
 * the DFSP as destination (Kafka.proceed's fromSwitch). ml-api-adapter v16.10.1 then writes the
 * version of a Hub callback's content-type from its own PROTOCOL_VERSIONS (README, "golden path").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FspiopCode, FspiopError } from '../../src/domain/shared/errors';
import { HUB, notification, type MojaloopMessage } from '../../src/handlers/kafka/messages';
import { expiryNotifications, fxExpiryNotifications } from '../../src/handlers/kafka/notifications';
import type { FxTransferRecord, TransferRecord } from '../../src/ports/metadata';

const TRANSFER = '5f9f6c1e-8f0a-4b7e-9a39-3c1f0a000001';

function resourceHeaders(resource: string, version: string): Record<string, string> {
  return {
    accept: `application/vnd.interoperability.${resource}+json;version=${version.split('.')[0]}`,
    'content-type': `application/vnd.interoperability.${resource}+json;version=${version}`,
  };
}

test("a transfer's expiry: SwitchDefaultHeaders at transfers 1.0, Hub to payer", () => {
  const record = { transferId: TRANSFER, payerFsp: 'payerfsp', payeeFsp: 'payeefsp' };
  const [expiry] = expiryNotifications([record as TransferRecord]);
  const { date, ...headers } = expiry!.content.headers;
  assert.deepEqual(headers, {
    ...resourceHeaders('transfers', '1.0'),
    'fspiop-source': HUB,
    'fspiop-destination': 'payerfsp',
  });
  assert.ok(!Number.isNaN(Date.parse(date!)));
  assert.equal(expiry!.type, 'application/vnd.interoperability.transfers+json;version=1.0');
  assert.deepEqual(expiry!.content.context, { payer: 'payerfsp', payee: 'payeefsp' });
});

test("a conversion's expiry: SwitchDefaultHeaders at fxTransfers 2.0, Hub to the initiator", () => {
  const record = { commitRequestId: TRANSFER, initiatingFsp: 'payerfsp', counterPartyFsp: 'fxp' };
  const [expiry] = fxExpiryNotifications([record as FxTransferRecord]);
  const { date: _date, ...headers } = expiry!.content.headers;
  assert.deepEqual(headers, {
    ...resourceHeaders('fxTransfers', '2.0'),
    'fspiop-source': HUB,
    'fspiop-destination': 'payerfsp',
  });
  assert.deepEqual(expiry!.content.context, { payer: 'payerfsp', payee: 'fxp' });
});

test("the answer to a GET keeps the DFSP's headers, from the Hub to the DFSP", () => {
  const get: MojaloopMessage = {
    id: TRANSFER,
    from: 'payerfsp',
    to: 'payeefsp',
    type: 'application/json',
    content: {
      uriParams: { id: TRANSFER },
      headers: {
        accept: 'application/vnd.interoperability.transfers+json;version=1.1',
        'content-type': 'application/vnd.interoperability.transfers+json;version=1.1',
        date: 'Fri, 27 Nov 2026 20:00:00 GMT',
        'FSPIOP-Source': 'payerfsp',
        'FSPIOP-Destination': 'payeefsp',
      },
      payload: {},
    },
    metadata: { event: { id: 'e1', type: 'get', action: 'get' } },
  };
  for (const answer of [
    notification(get, TRANSFER, {
      action: 'get',
      from: HUB,
      to: 'payerfsp',
      payload: { transferState: 'ABORTED' },
      keepContext: false,
    }),
    notification(get, TRANSFER, {
      action: 'get',
      from: HUB,
      to: 'payerfsp',
      error: new FspiopError(FspiopCode.TRANSFER_ID_NOT_FOUND).toErrorInformation(),
      keepContext: false,
    }),
  ])
    assert.deepEqual(answer.content.headers, {
      accept: 'application/vnd.interoperability.transfers+json;version=1.1',
      'content-type': 'application/vnd.interoperability.transfers+json;version=1.1',
      date: 'Fri, 27 Nov 2026 20:00:00 GMT',
      'fspiop-source': HUB,
      'fspiop-destination': 'payerfsp',
    });
});
