/**
 * What Mojaloop's Testing Toolkit golden path asks of central-ledger beyond the HTTP scenario
 * suite (issue 30), run against the embedded ledger and a real TigerBeetle cluster
 * (test/golden-path-*.test.ts) so both backends answer alike.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { encodeIlpPrepare } from '../../src/domain/shared/ilp';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import type { MetadataStore } from '../../src/ports/metadata';
import { FxClient, headers, injecting } from './fx-client';
import { onboard } from './onboard';
import type { Backend } from './scenarios';

export function goldenPathSuite(label: string, backend: () => Backend | undefined): void {
  describe(`golden path compatibility (${label})`, () => {
    let service: Service;
    let fx: FxClient;
    let store: MetadataStore;
    let expiryGraceMs = 0;
    const run = randomBytes(3).toString('hex');

    const call = async (options: InjectOptions): Promise<LightMyRequestResponse> =>
      service.app.inject(options);
    const json = (response: LightMyRequestResponse): any =>
      response.body.length === 0 ? undefined : JSON.parse(response.body);
    const accounts = async (name: string, currency: string): Promise<any[]> =>
      json(await call({ method: 'GET', url: `/participants/${name}/accounts` })).filter(
        (account: any) => account.currency === currency,
      );
    const accountValue = async (name: string, currency: string, type: string): Promise<string> =>
      String((await accounts(name, currency)).find((a) => a.ledgerAccountType === type).value);
    const settlementAccountId = async (name: string, currency: string): Promise<number> =>
      (await accounts(name, currency)).find((a) => a.ledgerAccountType === 'SETTLEMENT').id;

    const newCondition = (): { fulfilment: string; condition: string } => {
      const preimage = randomBytes(32);
      return {
        fulfilment: preimage.toString('base64url'),
        condition: createHash('sha256').update(preimage).digest('base64url'),
      };
    };
    const prepareBody = (
      payer: string,
      payee: string,
      amount: { amount: string; currency: string },
      condition: string,
    ): Record<string, unknown> => ({
      transferId: randomUUID(),
      payerFsp: payer,
      payeeFsp: payee,
      amount,
      ilpPacket: encodeIlpPrepare({
        amount: 100n,
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
        executionCondition: condition,
        destination: `g.${payee}`,
        data: Buffer.from(
          Buffer.from(JSON.stringify({ transactionId: randomUUID(), amount })).toString(
            'base64url',
          ),
        ),
      }),
      condition,
      expiration: new Date(Date.now() + 60_000).toISOString(),
    });

    const prepare = async (body: Record<string, unknown>): Promise<void> => {
      const prepared = await call({
        method: 'POST',
        url: '/transfers',
        payload: body,
        headers: { 'fspiop-source': body['payerFsp'] as string },
      });
      assert.equal(prepared.statusCode, 201, prepared.body);
    };

    before(async () => {
      const chosen = backend();
      if (chosen === undefined) return;
      expiryGraceMs = chosen.expiryGraceMs;
      store = chosen.store === undefined ? new MemoryMetadataStore() : await chosen.store();
      // The expiry test sweeps by itself, to see what each sweep tells: the service's own sweep,
      // left at its second, would now and then take the expiry first and tell it elsewhere.
      const config = loadConfig({ LOG_LEVEL: 'silent', EXPIRY_SWEEP_MS: '60000' });
      service = await buildService(config, {
        ledger: chosen.ledger(),
        store,
      });
      fx = new FxClient(injecting(service.app), FxClient.parties(run));
      await fx.onboard();
    });
    after(async () => {
      await service?.close();
    });

    test("XXX, the suite's own currency, onboards and transfers like USD", async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const payer = `xpayer${run}`;
      const payee = `xpayee${run}`;
      await onboard((options) => call(options), [payer, payee], '1000', 1000, 'XXX');
      const { fulfilment, condition } = newCondition();
      const body = prepareBody(payer, payee, { amount: '10.1234', currency: 'XXX' }, condition);
      await prepare(body);
      const committed = await call({
        method: 'PUT',
        url: `/transfers/${body.transferId}`,
        payload: { transferState: 'COMMITTED', fulfilment, completedTimestamp: new Date() },
        headers: { 'fspiop-source': payee, 'fspiop-destination': payer },
      });
      assert.equal(json(committed).transferState, 'COMMITTED', committed.body);
      assert.equal(await accountValue(payer, 'XXX', 'POSITION'), '10.1234');
      assert.equal(await accountValue(payee, 'XXX', 'POSITION'), '-10.1234');
      assert.equal(await accountValue(payer, 'XXX', 'SETTLEMENT'), '-1000');
    });

    test('FSPIOP bodies take properties the API does not name, as ml-api-adapter forwards them', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const { A, B } = fx.parties;
      // Every FX prepare of the Testing Toolkit's golden path carries amountType.
      const p = fx.payment();
      const prepared = await fx.fxPrepare(p, {
        ...p.body,
        amountType: 'SEND',
        sourceAmount: { amount: '100', currency: 'USD', note: 'x' },
      });
      assert.equal(prepared.status, 201, JSON.stringify(prepared.body));
      assert.equal((await fx.fxAnswer(p)).body.conversionState, 'RESERVED');
      const [stored] = await store.fxTransfers([p.commitRequestId]);
      assert.deepEqual(
        stored?.sourceAmount,
        { amount: '100', currency: 'USD' },
        'nothing else kept',
      );

      const { fulfilment, condition } = newCondition();
      // F holds TZS liquidity: a plain TZS transfer F → B.
      const body = prepareBody(fx.parties.F, B, { amount: '1', currency: 'TZS' }, condition);
      const transfer = {
        ...body,
        surprise: true,
        extensionList: { extension: [{ key: 'k', value: 'v', note: 'x' }], more: 1 },
      };
      await prepare(transfer);
      const committed = await call({
        method: 'PUT',
        url: `/transfers/${body.transferId}`,
        payload: { transferState: 'COMMITTED', fulfilment, completedTimestamp: new Date(), x: 1 },
        headers: headers(B, fx.parties.F),
      });
      assert.equal(json(committed).transferState, 'COMMITTED', committed.body);

      const rejected = prepareBody(fx.parties.F, B, { amount: '1', currency: 'TZS' }, condition);
      await prepare(rejected);
      const errored = await call({
        method: 'PUT',
        url: `/transfers/${rejected.transferId}/error`,
        payload: { errorInformation: { errorCode: '5100', errorDescription: 'no', x: 1 }, y: 2 },
        headers: headers(B, fx.parties.F),
      });
      assert.equal(json(errored).transferState, 'ABORTED', errored.body);

      // central-ledger's admin API (Joi) still refuses what it does not name, inside too.
      const settlement = await settlementAccountId(A, 'USD');
      const funds = (extra: Record<string, unknown>) =>
        call({
          method: 'POST',
          url: `/participants/${A}/accounts/${settlement}`,
          payload: {
            transferId: randomUUID(),
            externalReference: 'ref',
            action: 'recordFundsIn',
            reason: 'deposit',
            amount: { amount: '1', currency: 'USD' },
            ...extra,
          },
        });
      for (const extra of [
        { x: 1 },
        { amount: { amount: '1', currency: 'USD', x: 1 } },
        { extensionList: { extension: [{ key: 'k', value: 'v', x: 1 }] } },
      ]) {
        const refused = await funds(extra);
        assert.equal(refused.statusCode, 400, JSON.stringify(extra));
        assert.equal(json(refused).errorInformation.errorCode, '3101', refused.body);
      }
    });

    test("a payee's transferState ABORTED changes nothing; its PUT …/error aborts", async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const { F, B } = fx.parties;
      const before = await fx.position(F, 'TZS');
      const { fulfilment, condition } = newCondition();
      const body = prepareBody(F, B, { amount: '3', currency: 'TZS' }, condition);
      await prepare(body);
      const held = await fx.position(F, 'TZS');
      assert.equal(BigInt(held) - BigInt(before), 3n);
      const rejected = await call({
        method: 'PUT',
        url: `/transfers/${body.transferId}`,
        payload: { transferState: 'ABORTED', fulfilment, completedTimestamp: new Date() },
        headers: headers(B, F),
      });
      assert.equal(rejected.statusCode, 200, rejected.body);
      assert.equal(json(rejected).transferState, 'RESERVED');
      // The Testing Toolkit reads the position about 30 ms later.
      await new Promise((resolve) => setTimeout(resolve, 30));
      assert.equal(await fx.position(F, 'TZS'), held, 'the reservation holds');
      const got = await call({
        method: 'GET',
        url: `/transfers/${body.transferId}`,
        headers: { 'fspiop-source': F },
      });
      assert.equal(json(got).transferState, 'RESERVED');
      const aborted = await call({
        method: 'PUT',
        url: `/transfers/${body.transferId}/error`,
        payload: { errorInformation: { errorCode: '5101', errorDescription: 'limit reached' } },
        headers: headers(B, F),
      });
      assert.equal(json(aborted).transferState, 'ABORTED', aborted.body);
      assert.equal(await fx.position(F, 'TZS'), before);
    });

    test('funds in and out are transfers: their DFSP reads their state with GET /transfers/{id}, another DFSP is refused 3000', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const { A, S } = fx.parties;
      const account = await settlementAccountId(A, 'USD');
      const funds = async (payload: Record<string, unknown>, url = ''): Promise<void> => {
        const response = await call({
          method: url === '' ? 'POST' : 'PUT',
          url: `/participants/${A}/accounts/${account}${url}`,
          payload,
        });
        assert.equal(response.statusCode, 202, response.body);
      };
      const movement = (action: string, transferId: string = randomUUID()) => ({
        transferId,
        externalReference: 'ref',
        action,
        reason: 'reason',
        amount: { amount: '5', currency: 'USD' },
      });
      const fundsIn = movement('recordFundsIn');
      // As the admin request spelt it: central-ledger's ids compare without case.
      const reserved = movement('recordFundsOutPrepareReserve', randomUUID().toUpperCase());
      const committed = movement('recordFundsOutPrepareReserve');
      const aborted = movement('recordFundsOutPrepareReserve');
      for (const body of [fundsIn, reserved, committed, aborted]) await funds(body);
      const finish = { reason: 'r', externalReference: 'r' };
      await funds(
        { ...finish, action: 'recordFundsOutCommit' },
        `/transfers/${committed.transferId}`,
      );
      await funds({ ...finish, action: 'recordFundsOutAbort' }, `/transfers/${aborted.transferId}`);
      const get = (id: string, source: string) =>
        call({ method: 'GET', url: `/transfers/${id}`, headers: { 'fspiop-source': source } });
      for (const [id, state] of [
        [fundsIn.transferId, 'COMMITTED'],
        [reserved.transferId, 'RESERVED'],
        [committed.transferId, 'COMMITTED'],
        [aborted.transferId, 'ABORTED'],
      ] as const) {
        const got = await get(id, A);
        assert.equal(got.statusCode, 200, got.body);
        assert.deepEqual(json(got), { transferId: id, transferState: state });
        // As central-ledger: a DFSP with no part in a transfer it knows is refused 3000.
        const outsider = await get(id, S);
        assert.equal(outsider.statusCode, 400, outsider.body);
        assert.equal(json(outsider).errorInformation.errorCode, '3000', outsider.body);
      }
      // An ordinary transfer likewise; an unknown id is 3208 whoever asks.
      const { condition } = newCondition();
      const body = prepareBody(
        fx.parties.F,
        fx.parties.B,
        { amount: '1', currency: 'TZS' },
        condition,
      );
      await prepare(body);
      const stranger = await get(body.transferId as string, S);
      assert.equal(json(stranger).errorInformation.errorCode, '3000', stranger.body);
      const unknown = await get(randomUUID(), A);
      assert.equal(json(unknown).errorInformation.errorCode, '3208', unknown.body);
    });

    test("a dependent transfer's expiry releases its conversion with it", async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const { A, F } = fx.parties;
      const [usdBefore, tzsBefore] = [await fx.position(A, 'USD'), await fx.position(F, 'TZS')];
      // The conversion would hold a minute; its transfer expires in a second and a half.
      const p = fx.payment('100', '265000', 60_000);
      assert.equal((await fx.fxPrepare(p)).status, 201);
      assert.equal((await fx.fxAnswer(p)).body.conversionState, 'RESERVED');
      assert.equal((await fx.prepare(p, '265000', 1500)).status, 201);
      const told: string[] = [];
      const deadline = Date.now() + 5000 + expiryGraceMs;
      while ((await fx.fxGet(p)).body.conversionState !== 'ABORTED') {
        assert.ok(Date.now() < deadline, 'the conversion was never released');
        await service.transfers.expireDue();
        await service.fx.expireDue(async (expired) => {
          told.push(...expired.map((record) => record.commitRequestId));
        });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      assert.equal((await fx.transferGet(p)).body.transferState, 'ABORTED');
      assert.deepEqual(told, [p.commitRequestId], 'its parties are told it expired');
      assert.equal(await fx.position(A, 'USD'), usdBefore, "the payer's conversion is released");
      assert.equal(await fx.position(F, 'TZS'), tzsBefore);
    });
  });
}
