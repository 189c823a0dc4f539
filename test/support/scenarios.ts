/**
 * The HTTP scenario suite: every route of the admin, FSPIOP and /jmeter APIs with its success
 * and error answers. It runs unchanged against the embedded ledger and against a real
 * TigerBeetle cluster (test/http-*.test.ts), so both backends must answer alike.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { METHODS } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { encodeIlpPrepare } from '../../src/domain/shared/ilp';
import type { MetadataStore } from '../../src/ports/metadata';
import type { Ledger } from '../../src/ports/ledger';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { GOLDEN_PATH_PACKET, PSK_PACKET } from '../fixtures/ilp-v1';

export interface Backend {
  /** A fresh ledger client for one service instance. */
  ledger(): Ledger;
  /** The metadata store of that instance (in memory unless given). */
  store?(): Promise<MetadataStore>;
  /** Seconds a ledger may take past an expiration before it has released the reservation. */
  expiryGraceMs: number;
}

const CURRENCY = 'USD';

export function httpScenarioSuite(label: string, backend: () => Backend | undefined): void {
  describe(`HTTP scenarios (${label})`, () => {
    let service: Service;
    const run = randomBytes(3).toString('hex');
    const payer = `payer${run}`;
    const payee = `payee${run}`;
    let expiryGraceMs = 0;

    const call = async (options: InjectOptions): Promise<LightMyRequestResponse> =>
      service.app.inject(options);
    const json = (response: LightMyRequestResponse): any =>
      response.body.length === 0 ? undefined : JSON.parse(response.body);
    const expectError = (response: LightMyRequestResponse, code: string, status = 400): void => {
      assert.equal(response.statusCode, status, response.body);
      assert.equal(json(response).errorInformation.errorCode, code, response.body);
    };
    const accounts = async (name: string): Promise<any[]> =>
      json(await call({ method: 'GET', url: `/participants/${name}/accounts` }));
    const settlementAccountId = async (name: string): Promise<number> =>
      (await accounts(name)).find((a) => a.ledgerAccountType === 'SETTLEMENT').id;
    const positionAccountId = async (name: string): Promise<number> =>
      (await accounts(name)).find((a) => a.ledgerAccountType === 'POSITION').id;
    /**
     * The POSITION account's value (prepared transfers included, as central-ledger reports it) and
     * the SETTLEMENT account's (minus the liquidity not reserved for funds out), as exact text.
     */
    const position = async (name: string): Promise<{ value: string; liquidity: string }> => {
      const list = await accounts(name);
      const pos = list.find((a) => a.ledgerAccountType === 'POSITION');
      const settlement = list.find((a) => a.ledgerAccountType === 'SETTLEMENT');
      assert.equal(typeof pos.value, 'number', 'amounts are JSON numbers');
      assert.deepEqual(
        [pos.reservedValue, settlement.reservedValue],
        [0, 0],
        'reservedValue reads 0 between position batches',
      );
      return { value: String(pos.value), liquidity: String(settlement.value) };
    };
    const fundsIn = async (
      name: string,
      amount: string,
      transferId = randomUUID(),
    ): Promise<LightMyRequestResponse> =>
      call({
        method: 'POST',
        url: `/participants/${name}/accounts/${await settlementAccountId(name)}`,
        payload: {
          transferId,
          externalReference: 'ref',
          action: 'recordFundsIn',
          reason: 'deposit',
          amount: { amount, currency: CURRENCY },
        },
      });

    const newCondition = (): { fulfilment: string; condition: string } => {
      const preimage = randomBytes(32);
      return {
        fulfilment: preimage.toString('base64url'),
        condition: createHash('sha256').update(preimage).digest('base64url'),
      };
    };
    const ilpPacket = (amount: string, currency = CURRENCY): string =>
      encodeIlpPrepare({
        amount: 100n,
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
        executionCondition: randomBytes(32).toString('base64url'),
        destination: `g.${payee}`,
        data: Buffer.from(
          Buffer.from(
            JSON.stringify({
              transactionId: randomUUID(),
              quoteId: randomUUID(),
              amount: { amount, currency },
            }),
          ).toString('base64url'),
        ),
      });
    const prepareBody = (
      overrides: Record<string, unknown> = {},
      condition = newCondition().condition,
    ): Record<string, unknown> => ({
      transferId: randomUUID(),
      payerFsp: payer,
      payeeFsp: payee,
      amount: { amount: '10', currency: CURRENCY },
      ilpPacket: ilpPacket('10'),
      condition,
      expiration: new Date(Date.now() + 60_000).toISOString(),
      ...overrides,
    });
    /** Sends a prepare as the payer, as `source`, or (null) without FSPIOP-Source. */
    const prepare = (
      body: Record<string, unknown>,
      source: string | null = body.payerFsp as string,
    ): Promise<LightMyRequestResponse> =>
      call({
        method: 'POST',
        url: '/transfers',
        payload: body,
        headers: source === null ? {} : { 'fspiop-source': source },
      });
    const fulfil = (
      id: string,
      body: Record<string, unknown>,
      source = payee,
      destination = payer,
    ): Promise<LightMyRequestResponse> =>
      call({
        method: 'PUT',
        url: `/transfers/${id}`,
        payload: body,
        headers: { 'fspiop-source': source, 'fspiop-destination': destination },
      });

    before(async () => {
      const chosen = backend();
      if (chosen === undefined) return;
      expiryGraceMs = chosen.expiryGraceMs;
      const store = chosen.store === undefined ? new MemoryMetadataStore() : await chosen.store();
      service = await buildService(loadConfig({ LOG_LEVEL: 'silent', JMETER_ENABLED: 'true' }), {
        ledger: chosen.ledger(),
        store,
      });
    });
    after(async () => {
      await service?.close();
    });

    test('onboarding: hub accounts, settlement model, participants, limits, funds in', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT']) {
        assert.equal(
          (
            await call({
              method: 'POST',
              url: '/participants/Hub/accounts',
              payload: { currency: CURRENCY, type },
            })
          ).statusCode,
          201,
        );
      }
      // central-ledger answers every hub account refusal with 3003.
      expectError(
        await call({
          method: 'POST',
          url: '/participants/Hub/accounts',
          payload: { currency: CURRENCY, type: 'HUB_RECONCILIATION' },
        }),
        '3003',
      );
      expectError(
        await call({
          method: 'POST',
          url: '/participants/someone/accounts',
          payload: { currency: CURRENCY, type: 'HUB_RECONCILIATION' },
        }),
        '3003',
      );
      expectError(
        await call({
          method: 'POST',
          url: '/participants/Hub/accounts',
          payload: { currency: CURRENCY, type: 'SETTLEMENT' },
        }),
        '3003',
      );
      expectError(
        await call({
          method: 'POST',
          url: '/participants/Hub/accounts',
          payload: { currency: CURRENCY, type: 'NO_SUCH_TYPE' },
        }),
        '3003',
      );
      const hubAccounts = json(await call({ method: 'GET', url: '/participants/Hub/accounts' }));
      assert.deepEqual(
        hubAccounts
          .filter((a: any) => a.currency === CURRENCY)
          .map((a: any) => [a.ledgerAccountType, a.value, a.reservedValue])
          .sort(),
        [
          ['HUB_MULTILATERAL_SETTLEMENT', 0, 0],
          ['HUB_RECONCILIATION', 0, 0],
        ],
      );
      const hubEmail = {
        type: 'SETTLEMENT_TRANSFER_POSITION_CHANGE_EMAIL',
        value: 'hub@example.com',
      };
      assert.equal(
        (await call({ method: 'POST', url: '/participants/Hub/endpoints', payload: hubEmail }))
          .statusCode,
        201,
      );
      assert.deepEqual(json(await call({ method: 'GET', url: '/participants/Hub/endpoints' })), [
        hubEmail,
      ]);
      // Names are found as MySQL's default collation finds them in central-ledger: `hub` is the
      // Hub.
      const breach = { type: 'NET_DEBIT_CAP_THRESHOLD_BREACH_EMAIL', value: 'ops@example.com' };
      assert.equal(
        (await call({ method: 'POST', url: '/participants/hub/endpoints', payload: breach }))
          .statusCode,
        201,
      );
      const byType = (list: { type: string }[]) =>
        [...list].sort((x, y) => x.type.localeCompare(y.type));
      assert.deepEqual(
        byType(json(await call({ method: 'GET', url: '/participants/Hub/endpoints' }))),
        byType([hubEmail, breach]),
      );
      assert.equal(
        json(await call({ method: 'GET', url: '/participants/hub/accounts' })).length,
        hubAccounts.length,
      );
      expectError(
        await call({
          method: 'POST',
          url: '/participants/Hub/accounts',
          payload: { currency: 'ABC', type: 'HUB_RECONCILIATION' },
        }),
        '3100',
      );
      expectError(
        await call({
          method: 'POST',
          url: '/participants/Hub/accounts',
          payload: { currency: 'usd', type: 'HUB_RECONCILIATION' },
        }),
        '3101',
      );

      const noModel = await call({
        method: 'POST',
        url: '/participants',
        payload: { name: payer, currency: CURRENCY },
      });
      expectError(noModel, '6000');
      assert.match(
        json(noModel).errorInformation.errorDescription,
        /Unable to find a matching or default, Settlement Model/,
      );
      const model = {
        name: 'DEFERREDNET',
        settlementGranularity: 'NET',
        settlementInterchange: 'MULTILATERAL',
        settlementDelay: 'DEFERRED',
        currency: CURRENCY,
        requireLiquidityCheck: true,
        ledgerAccountType: 'POSITION',
        autoPositionReset: true,
        settlementAccountType: 'SETTLEMENT',
      };
      assert.equal(
        (await call({ method: 'POST', url: '/settlementModels', payload: model })).statusCode,
        201,
      );
      expectError(await call({ method: 'POST', url: '/settlementModels', payload: model }), '3000');
      assert.equal(json(await call({ method: 'GET', url: '/settlementModels' })).length, 1);
      assert.equal(
        json(await call({ method: 'GET', url: '/settlementModels/DEFERREDNET' }))
          .settlementGranularity,
        'NET',
      );
      expectError(await call({ method: 'GET', url: '/settlementModels/none' }), '3200');

      expectError(
        await call({
          method: 'POST',
          url: '/participants',
          payload: { name: payer, currency: 'EUR' },
        }),
        '3003',
      );
      expectError(
        await call({
          method: 'POST',
          url: '/participants',
          payload: { name: 'x', currency: CURRENCY },
        }),
        '3101',
      );
      expectError(
        await call({
          method: 'POST',
          url: '/participants',
          payload: { name: payer, currency: CURRENCY, extra: 1 },
        }),
        '3101',
      );
      for (const name of [payer, payee]) {
        // isProxy as central-ledger's Joi takes it (false, 0, '0', null…): not a proxy.
        const created = await call({
          method: 'POST',
          url: '/participants',
          payload: { name, currency: CURRENCY, isProxy: name === payer ? false : '0' },
        });
        assert.equal(created.statusCode, 201, created.body);
        const entity = json(created);
        assert.equal(entity.name, name);
        assert.equal(entity.isActive, 1);
        assert.equal(entity.isProxy, 0);
        assert.deepEqual(entity.accounts.map((a: any) => a.ledgerAccountType).sort(), [
          'POSITION',
          'SETTLEMENT',
        ]);
      }
      expectError(
        await call({
          method: 'POST',
          url: '/participants',
          payload: { name: payer, currency: CURRENCY },
        }),
        '3000',
      );
      const all = json(await call({ method: 'GET', url: '/participants' }));
      assert.ok(all.some((p: any) => p.name === 'Hub' && p.accounts.length === 2));
      assert.ok(all.some((p: any) => p.name === payer));
      assert.ok(
        !json(await call({ method: 'GET', url: '/participants?isProxy=true' })).some(
          (p: any) => p.name === payer,
        ),
        '?isProxy lists proxies only',
      );
      expectError(
        await call({
          method: 'POST',
          url: '/participants',
          payload: { name: `x${payer}`, currency: CURRENCY, isProxy: 'yes' },
        }),
        '3101',
      );
      expectError(await call({ method: 'GET', url: '/participants/nobody' }), '3200');

      for (const name of [payer, payee]) {
        const limits = await call({
          method: 'POST',
          url: `/participants/${name}/initialPositionAndLimits`,
          payload: {
            currency: CURRENCY,
            limit: { type: 'NET_DEBIT_CAP', value: 1000 },
            initialPosition: 0,
          },
        });
        assert.equal(limits.statusCode, 201, limits.body);
      }
      expectError(
        await call({
          method: 'POST',
          url: `/participants/${payer}/initialPositionAndLimits`,
          payload: { currency: CURRENCY, limit: { type: 'NET_DEBIT_CAP', value: 1000 } },
        }),
        '2001',
        500,
      );
      assert.deepEqual(json(await call({ method: 'GET', url: `/participants/${payer}/limits` })), [
        { currency: CURRENCY, limit: { type: 'NET_DEBIT_CAP', value: 1000, alarmPercentage: 10 } },
      ]);
      const allLimits = json(
        await call({ method: 'GET', url: `/participants/limits?currency=${CURRENCY}` }),
      );
      assert.deepEqual(
        allLimits.filter((l: any) => l.name === payer || l.name === payee).length,
        2,
      );
      assert.deepEqual(
        allLimits.find((l: any) => l.name === payer),
        {
          name: payer,
          currency: CURRENCY,
          limit: { type: 'NET_DEBIT_CAP', value: 1000, alarmPercentage: 10 },
        },
      );

      const hubReconciliation = async (): Promise<number> =>
        json(await call({ method: 'GET', url: '/participants/Hub/accounts' })).find(
          (a: any) => a.ledgerAccountType === 'HUB_RECONCILIATION' && a.currency === CURRENCY,
        ).value;
      const reconciliationBefore = await hubReconciliation();
      assert.equal((await fundsIn(payer, '500.25')).statusCode, 202);
      assert.deepEqual(await position(payer), { value: '0', liquidity: '-500.25' });
      // As in central-ledger, HUB_RECONCILIATION is the counterpart of every funds in.
      assert.equal(await hubReconciliation(), reconciliationBefore + 500.25);
      const depositId = randomUUID();
      assert.equal((await fundsIn(payee, '100', depositId)).statusCode, 202);
      assert.equal(
        (await fundsIn(payee, '100', depositId)).statusCode,
        202,
        'a retried funds in is accepted once',
      );
      assert.equal((await position(payee)).liquidity, '-100');
      expectError(await fundsIn(payee, '101', depositId), '3106');
      expectError(await fundsIn(payee, '1.001'), '3100');

      assert.equal(
        (
          await call({
            method: 'POST',
            url: `/participants/${payer}/endpoints`,
            payload: { type: 'FSPIOP_CALLBACK_URL_TRANSFER_POST', value: 'http://payer/transfers' },
          })
        ).statusCode,
        201,
      );
      assert.deepEqual(
        json(await call({ method: 'GET', url: `/participants/${payer}/endpoints` })),
        [{ type: 'FSPIOP_CALLBACK_URL_TRANSFER_POST', value: 'http://payer/transfers' }],
      );
      assert.equal(
        json(
          await call({
            method: 'GET',
            url: `/participants/${payer}/positions?currency=${CURRENCY}`,
          }),
        ).value,
        0,
      );
    });

    test('prepare and commit move the positions exactly; GET and duplicates', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const { fulfilment, condition } = newCondition();
      const body = prepareBody({ amount: { amount: '100.5', currency: CURRENCY } }, condition);
      const prepared = await prepare(body);
      assert.equal(prepared.statusCode, 201, prepared.body);
      assert.equal(json(prepared).transferState, 'RESERVED');
      // A prepared transfer is in its payer's position at once.
      assert.deepEqual(await position(payer), { value: '100.5', liquidity: '-500.25' });
      assert.equal(
        json(
          await call({
            method: 'GET',
            url: `/participants/${payer}/positions?currency=${CURRENCY}`,
          }),
        ).value,
        100.5,
      );

      const again = await prepare(body);
      assert.equal(again.statusCode, 200);
      assert.equal(json(again).transferState, 'RESERVED');
      expectError(
        await prepare({ ...body, amount: { amount: '100.6', currency: CURRENCY } }),
        '3106',
      );
      expectError(await prepare({ ...body, ilpPacket: ilpPacket('11') }), '3106');

      const committed = await fulfil(body.transferId as string, {
        transferState: 'COMMITTED',
        fulfilment,
        completedTimestamp: new Date().toISOString(),
      });
      assert.equal(committed.statusCode, 200, committed.body);
      assert.equal(json(committed).transferState, 'COMMITTED');
      assert.deepEqual(await position(payer), { value: '100.5', liquidity: '-500.25' });
      assert.equal((await position(payee)).value, '-100.5');

      const fulfilAgain = await fulfil(body.transferId as string, {
        transferState: 'COMMITTED',
        fulfilment,
        completedTimestamp: json(committed).completedTimestamp,
      });
      assert.equal(fulfilAgain.statusCode, 200, 'an identical fulfil is a duplicate');
      expectError(
        await fulfil(body.transferId as string, {
          transferState: 'COMMITTED',
          fulfilment: newCondition().fulfilment,
        }),
        '3106',
      );
      assert.equal(
        json(await prepare(body)).transferState,
        'COMMITTED',
        'a duplicate prepare reports the current state',
      );

      const got = await call({
        method: 'GET',
        url: `/transfers/${body.transferId}`,
        headers: { 'fspiop-source': payer },
      });
      assert.equal(json(got).transferState, 'COMMITTED');
      assert.equal(json(got).fulfilment, fulfilment);
      // Not a party to it: central-ledger's 3000.
      expectError(
        await call({
          method: 'GET',
          url: `/transfers/${body.transferId}`,
          headers: { 'fspiop-source': 'outsider' },
        }),
        '3000',
      );
      expectError(
        await call({
          method: 'GET',
          url: `/transfers/${randomUUID()}`,
          headers: { 'fspiop-source': payer },
        }),
        '3208',
      );

      const transaction = json(
        await call({ method: 'GET', url: `/transactions/${body.transferId}` }),
      );
      assert.deepEqual(transaction.amount, { amount: '10', currency: CURRENCY });
      assert.equal(
        json(await call({ method: 'GET', url: `/participants/${payer}/positions` }))[0].value,
        100.5,
      );
    });

    test("ILPv1 payment packets (FSPIOP 1.x, Mojaloop's test collections) are stored and decoded like ILPv4 ones", async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const body = prepareBody({ ilpPacket: GOLDEN_PATH_PACKET });
      assert.equal((await prepare(body)).statusCode, 201);
      for (const url of [
        `/transactions/${body.transferId}`,
        `/jmeter/transactions/ilp/${body.transferId}`,
      ]) {
        const transaction = await call({ method: 'GET', url });
        assert.equal(transaction.statusCode, 200, transaction.body);
        assert.equal(json(transaction).transactionId, '9678a1c6-9ef6-47dd-a2de-44c9b3920a7b');
        assert.deepEqual(json(transaction).amount, { amount: '20', currency: 'EUR' });
      }
      // A packet that is no Mojaloop transaction is stored (central-ledger checks nothing in it)
      // and cannot be read back as one.
      const psk = prepareBody({ ilpPacket: PSK_PACKET });
      assert.equal((await prepare(psk)).statusCode, 201);
      expectError(await call({ method: 'GET', url: `/transactions/${psk.transferId}` }), '3100');
      expectError(await call({ method: 'GET', url: `/transactions/${randomUUID()}` }), '3208');
      for (const id of [body.transferId, psk.transferId]) {
        assert.equal(
          (
            await call({
              method: 'PUT',
              url: `/transfers/${id}/error`,
              payload: { errorInformation: { errorCode: '5104', errorDescription: 'rejected' } },
              headers: { 'fspiop-source': payee, 'fspiop-destination': payer },
            })
          ).statusCode,
          200,
        );
      }
    });

    test('bad input answers the right FSPIOP error and changes no balance', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const before = [await position(payer), await position(payee)];
      const cases: [string, () => Promise<LightMyRequestResponse>, string][] = [
        ['wrong FSPIOP-Source', () => prepare(prepareBody(), payee), '3100'],
        ['missing FSPIOP-Source', () => prepare(prepareBody(), null), '3101'],
        [
          'unknown currency',
          () => prepare(prepareBody({ amount: { amount: '1', currency: 'ABC' } })),
          '3100',
        ],
        [
          'too many decimals',
          () => prepare(prepareBody({ amount: { amount: '1.001', currency: CURRENCY } })),
          '3100',
        ],
        [
          'zero amount',
          () => prepare(prepareBody({ amount: { amount: '0', currency: CURRENCY } })),
          '3100',
        ],
        [
          'negative amount',
          () => prepare(prepareBody({ amount: { amount: '-5', currency: CURRENCY } })),
          '3100',
        ],
        [
          'exponent',
          () => prepare(prepareBody({ amount: { amount: '1e2', currency: CURRENCY } })),
          '3100',
        ],
        [
          '19 digits',
          () =>
            prepare(prepareBody({ amount: { amount: '1234567890123456789', currency: CURRENCY } })),
          '3100',
        ],
        [
          'amount as number',
          () => prepare(prepareBody({ amount: { amount: 5, currency: CURRENCY } })),
          '3101',
        ],
        ['unknown payer', () => prepare(prepareBody({ payerFsp: 'ghost' }), 'ghost'), '3100'],
        ['unknown payee', () => prepare(prepareBody({ payeeFsp: 'ghost' })), '3100'],
        ['bad condition', () => prepare(prepareBody({ condition: 'abc' })), '3100'],
        [
          'expired',
          () => prepare(prepareBody({ expiration: new Date(Date.now() - 1000).toISOString() })),
          '3100',
        ],
        ['malformed expiration', () => prepare(prepareBody({ expiration: 'tomorrow' })), '3100'],
        ['payer = payee', () => prepare(prepareBody({ payeeFsp: payer })), '3100'],
        [
          'currency without account',
          () => prepare(prepareBody({ amount: { amount: '1', currency: 'EUR' } })),
          '3100',
        ],
        ['missing field', () => prepare({ ...prepareBody(), condition: undefined }), '3101'],
        ['bad transfer id', () => prepare(prepareBody({ transferId: 'not-a-uuid' })), '3101'],
        [
          'malformed JSON',
          () =>
            call({
              method: 'POST',
              url: '/transfers',
              payload: '{"transferId":',
              headers: { 'content-type': 'application/json', 'fspiop-source': payer },
            }),
          '3000',
        ],
        ['body too large', () => prepare(prepareBody({ ilpPacket: 'A'.repeat(70_000) })), '3104'],
        [
          'liquidity',
          () => prepare(prepareBody({ amount: { amount: '450', currency: CURRENCY } })),
          '4001',
        ],
        [
          'fulfil of unknown transfer',
          () =>
            fulfil(randomUUID(), {
              transferState: 'COMMITTED',
              fulfilment: newCondition().fulfilment,
            }),
          '3208',
        ],
        [
          'funds out beyond liquidity',
          async () =>
            call({
              method: 'POST',
              url: `/participants/${payer}/accounts/${await settlementAccountId(payer)}`,
              payload: {
                transferId: randomUUID(),
                externalReference: 'r',
                action: 'recordFundsOutPrepareReserve',
                reason: 'out',
                amount: { amount: '400', currency: CURRENCY },
              },
            }),
          '4001',
        ],
      ];
      for (const [name, send, code] of cases) {
        const response = await send();
        assert.equal(
          json(response)?.errorInformation?.errorCode,
          code,
          `${name}: ${response.body}`,
        );
        assert.equal(response.statusCode, 400, name);
      }
      assert.deepEqual([await position(payer), await position(payee)], before);
    });

    test('net debit cap: 4200 above the cap, limits adjust by the difference', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      // payee: liquidity 100, position -100.5 → liquidity headroom 200.5; cap 1000 → cap headroom
      // 1100.5
      assert.equal(
        (
          await call({
            method: 'PUT',
            url: `/participants/${payee}/limits`,
            payload: { currency: CURRENCY, limit: { type: 'NET_DEBIT_CAP', value: 50 } },
          })
        ).statusCode,
        200,
      );
      expectError(
        await prepare(
          prepareBody({
            payerFsp: payee,
            payeeFsp: payer,
            amount: { amount: '151', currency: CURRENCY },
          }),
        ),
        '4200',
      );
      const fits = await prepare(
        prepareBody({
          payerFsp: payee,
          payeeFsp: payer,
          amount: { amount: '150.5', currency: CURRENCY },
        }),
      );
      assert.equal(fits.statusCode, 201, fits.body);
      // The reported position (50) is exactly the cap: nothing more fits, and a prepare of cap −
      // position would.
      assert.equal((await position(payee)).value, '50');
      expectError(
        await prepare(
          prepareBody({
            payerFsp: payee,
            payeeFsp: payer,
            amount: { amount: '0.01', currency: CURRENCY },
          }),
        ),
        '4200',
      );
      // A cap below the position is accepted, as central-ledger does: the payee can receive, not
      // send.
      const below = await call({
        method: 'PUT',
        url: `/participants/${payee}/limits`,
        payload: {
          currency: CURRENCY,
          limit: { type: 'NET_DEBIT_CAP', value: 49, alarmPercentage: 5 },
        },
      });
      assert.equal(below.statusCode, 200, below.body);
      assert.deepEqual(json(below), {
        currency: CURRENCY,
        limit: { type: 'NET_DEBIT_CAP', value: 49, alarmPercentage: 5 },
      });
      expectError(
        await prepare(
          prepareBody({
            payerFsp: payee,
            payeeFsp: payer,
            amount: { amount: '0.01', currency: CURRENCY },
          }),
        ),
        '4200',
      );
      const abort = await call({
        method: 'PUT',
        url: `/transfers/${json(fits).transferId}/error`,
        payload: { errorInformation: { errorCode: '5100', errorDescription: 'payee rejected' } },
        headers: { 'fspiop-source': payer, 'fspiop-destination': payee },
      });
      assert.equal(abort.statusCode, 200, abort.body);
      assert.equal(json(abort).transferState, 'ABORTED');
      assert.equal(json(abort).errorInformation.errorCode, '5100');
      assert.equal((await position(payee)).value, '-100.5');
      assert.equal(
        (
          await call({
            method: 'PUT',
            url: `/participants/${payee}/limits`,
            payload: { currency: CURRENCY, limit: { type: 'NET_DEBIT_CAP', value: 1000 } },
          })
        ).statusCode,
        200,
      );
      assert.equal(
        json(
          await call({ method: 'GET', url: `/participants/${payee}/limits?currency=${CURRENCY}` }),
        )[0].limit.value,
        1000,
      );
    });

    test('fulfil: wrong parties, bad fulfilment, reject, RESERVED, error callback', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const { fulfilment, condition } = newCondition();
      const body = prepareBody({}, condition);
      assert.equal((await prepare(body)).statusCode, 201);
      const id = body.transferId as string;
      expectError(await fulfil(id, { transferState: 'COMMITTED', fulfilment }, 'outsider'), '3100');
      expectError(
        await fulfil(id, { transferState: 'COMMITTED', fulfilment }, payer, payee),
        '3100',
      );
      assert.equal(
        json(
          await call({
            method: 'GET',
            url: `/transfers/${id}`,
            headers: { 'fspiop-source': payee },
          }),
        ).transferState,
        'RESERVED',
        'a fulfil from the wrong party changes nothing',
      );
      const reserved = await fulfil(id, { transferState: 'RESERVED', fulfilment });
      assert.equal(json(reserved).transferState, 'COMMITTED', reserved.body);
      expectError(
        await call({
          method: 'PUT',
          url: `/transfers/${id}/error`,
          payload: { errorInformation: { errorCode: '5100', errorDescription: 'late' } },
          headers: { 'fspiop-source': payee, 'fspiop-destination': payer },
        }),
        '3100',
      );

      const bad = prepareBody();
      assert.equal((await prepare(bad)).statusCode, 201);
      const beforeBad = await position(payer);
      expectError(
        await fulfil(bad.transferId as string, {
          transferState: 'COMMITTED',
          fulfilment: newCondition().fulfilment,
        }),
        '3100',
      );
      assert.equal(
        json(
          await call({
            method: 'GET',
            url: `/transfers/${bad.transferId}`,
            headers: { 'fspiop-source': payer },
          }),
        ).transferState,
        'ABORTED',
        'an invalid fulfilment aborts',
      );
      assert.equal(
        Number((await position(payer)).value),
        Number(beforeBad.value) - 10,
        'the aborted transfer leaves the position',
      );
      expectError(
        await fulfil(bad.transferId as string, { transferState: 'COMMITTED', fulfilment }),
        '3106',
      );

      // A payee's transferState ABORTED changes nothing, as in central-ledger; its PUT …/error
      // aborts (test/support/golden-path.ts).
      const rejected = prepareBody();
      assert.equal((await prepare(rejected)).statusCode, 201);
      const rejection = await fulfil(rejected.transferId as string, { transferState: 'ABORTED' });
      assert.equal(json(rejection).transferState, 'RESERVED', rejection.body);
      const withdrawn = await call({
        method: 'PUT',
        url: `/transfers/${rejected.transferId}/error`,
        payload: { errorInformation: { errorCode: '5104', errorDescription: 'rejected' } },
        headers: { 'fspiop-source': payee, 'fspiop-destination': payer },
      });
      assert.equal(json(withdrawn).transferState, 'ABORTED', withdrawn.body);
      expectError(
        await fulfil(rejected.transferId as string, { transferState: 'COMMITTED', fulfilment }),
        '3100',
      );
    });

    test('expiry: the ledger releases the reservation by itself and a late fulfil is 3303', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const { fulfilment, condition } = newCondition();
      const positionBefore = (await position(payer)).value;
      const body = prepareBody(
        { expiration: new Date(Date.now() + 1200).toISOString() },
        condition,
      );
      assert.equal((await prepare(body)).statusCode, 201);
      assert.equal(Number((await position(payer)).value), Number(positionBefore) + 10);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expectError(
        await fulfil(body.transferId as string, { transferState: 'COMMITTED', fulfilment }),
        '3303',
      );
      const deadline = Date.now() + 2000 + expiryGraceMs;
      while ((await position(payer)).value !== positionBefore && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(
        (await position(payer)).value,
        positionBefore,
        'the expired reservation leaves the position',
      );
      assert.equal(
        json(
          await call({
            method: 'GET',
            url: `/transfers/${body.transferId}`,
            headers: { 'fspiop-source': payer },
          }),
        ).transferState,
        'ABORTED',
      );
    });

    test('activation: an inactive participant or account can neither send nor receive', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      assert.equal(
        json(
          await call({
            method: 'PUT',
            url: `/participants/${payee}`,
            payload: { isActive: false },
          }),
        ).isActive,
        0,
      );
      expectError(await prepare(prepareBody()), '3100');
      // Funds for an inactive participant: central-ledger's internal server error, its wording.
      const inactiveFunds = await fundsIn(payee, '1');
      expectError(inactiveFunds, '2001', 500);
      assert.match(
        json(inactiveFunds).errorInformation.errorDescription,
        /Participant is currently set inactive/,
      );
      assert.equal(
        json(
          await call({ method: 'PUT', url: `/participants/${payee}`, payload: { isActive: true } }),
        ).isActive,
        1,
      );
      assert.equal((await prepare(prepareBody())).statusCode, 201);

      const positionId = await positionAccountId(payer);
      assert.equal(
        (
          await call({
            method: 'PUT',
            url: `/participants/${payer}/accounts/${positionId}`,
            payload: { isActive: false },
          })
        ).statusCode,
        200,
      );
      expectError(await prepare(prepareBody()), '3100');
      expectError(
        await call({
          method: 'PUT',
          url: `/participants/${payer}/accounts/${await settlementAccountId(payer)}`,
          payload: { isActive: false },
        }),
        '3100',
      );
      assert.equal(
        (
          await call({
            method: 'PUT',
            url: `/participants/${payer}/accounts/${positionId}`,
            payload: { isActive: true },
          })
        ).statusCode,
        200,
      );
      assert.equal((await prepare(prepareBody())).statusCode, 201);
    });

    test('a prepare again is answered as a duplicate whatever changed since; a modified one is 3106', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      // Refused by the ledger (4001): the same prepare again is that transfer, not a new attempt.
      const refusedBody = prepareBody({ amount: { amount: '100000', currency: CURRENCY } });
      expectError(await prepare(refusedBody), '4001');
      const refusedAgain = await prepare(refusedBody);
      assert.equal(refusedAgain.statusCode, 200, refusedAgain.body);
      assert.equal(json(refusedAgain).transferState, 'ABORTED');
      assert.equal(json(refusedAgain).errorInformation.errorCode, '4001');
      expectError(
        await prepare({ ...refusedBody, amount: { amount: '1', currency: CURRENCY } }),
        '3106',
      );

      // Committed, then its payee deactivated: a new prepare would be refused (3100), the same one
      // is a duplicate.
      const { fulfilment, condition } = newCondition();
      const body = prepareBody({}, condition);
      assert.equal((await prepare(body)).statusCode, 201);
      assert.equal(
        (await fulfil(body.transferId as string, { transferState: 'COMMITTED', fulfilment }))
          .statusCode,
        200,
      );
      expectError(await prepare({ ...body, ilpPacket: ilpPacket('12') }), '3106');
      assert.equal(
        json(
          await call({
            method: 'PUT',
            url: `/participants/${payee}`,
            payload: { isActive: false },
          }),
        ).isActive,
        0,
      );
      try {
        const again = await prepare(body);
        assert.equal(again.statusCode, 200, again.body);
        assert.equal(json(again).transferState, 'COMMITTED');
        expectError(await prepare({ ...body, ilpPacket: ilpPacket('12') }), '3106');
        expectError(await prepare(prepareBody()), '3100');
      } finally {
        assert.equal(
          json(
            await call({
              method: 'PUT',
              url: `/participants/${payee}`,
              payload: { isActive: true },
            }),
          ).isActive,
          1,
        );
      }
    });

    test('funds out: reserve, commit and abort', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const account = await settlementAccountId(payee);
      const liquidity = BigInt((await position(payee)).liquidity);
      const out = (transferId: string, amount: string) =>
        call({
          method: 'POST',
          url: `/participants/${payee}/accounts/${account}`,
          payload: {
            transferId,
            externalReference: 'r',
            action: 'recordFundsOutPrepareReserve',
            reason: 'out',
            amount: { amount, currency: CURRENCY },
          },
        });
      const kept = randomUUID();
      assert.equal((await out(kept, '30')).statusCode, 202);
      // As in central-ledger, the SETTLEMENT account shows a funds out from its reservation on.
      assert.equal(BigInt((await position(payee)).liquidity), liquidity + 30n);
      assert.equal(
        (
          await call({
            method: 'PUT',
            url: `/participants/${payee}/accounts/${account}/transfers/${kept}`,
            payload: { action: 'recordFundsOutCommit', reason: 'done' },
          })
        ).statusCode,
        202,
      );
      assert.equal(BigInt((await position(payee)).liquidity), liquidity + 30n);
      const dropped = randomUUID();
      assert.equal((await out(dropped, '20')).statusCode, 202);
      assert.equal(BigInt((await position(payee)).liquidity), liquidity + 50n);
      assert.equal(
        (
          await call({
            method: 'PUT',
            url: `/participants/${payee}/accounts/${account}/transfers/${dropped}`,
            payload: { action: 'recordFundsOutAbort', reason: 'no' },
          })
        ).statusCode,
        202,
      );
      assert.equal(BigInt((await position(payee)).liquidity), liquidity + 30n);
      expectError(
        await call({
          method: 'PUT',
          url: `/participants/${payee}/accounts/${account}/transfers/${dropped}`,
          payload: { action: 'recordFundsOutCommit', reason: 'no' },
        }),
        '3100',
      );
      expectError(
        await call({
          method: 'PUT',
          url: `/participants/${payee}/accounts/${account}/transfers/${randomUUID()}`,
          payload: { action: 'recordFundsOutCommit', reason: 'no' },
        }),
        '3200',
      );

      // A commit the ledger refused while the POSITION account was inactive goes through once it is
      // active again.
      const delayed = randomUUID();
      assert.equal((await out(delayed, '10')).statusCode, 202);
      const commitDelayed = () =>
        call({
          method: 'PUT',
          url: `/participants/${payee}/accounts/${account}/transfers/${delayed}`,
          payload: { action: 'recordFundsOutCommit', reason: 'later' },
        });
      const positionId = await positionAccountId(payee);
      assert.equal(
        (
          await call({
            method: 'PUT',
            url: `/participants/${payee}/accounts/${positionId}`,
            payload: { isActive: false },
          })
        ).statusCode,
        200,
      );
      try {
        assert.notEqual((await commitDelayed()).statusCode, 202);
      } finally {
        assert.equal(
          (
            await call({
              method: 'PUT',
              url: `/participants/${payee}/accounts/${positionId}`,
              payload: { isActive: true },
            })
          ).statusCode,
          200,
        );
      }
      assert.equal((await commitDelayed()).statusCode, 202);
      assert.equal(BigInt((await position(payee)).liquidity), liquidity + 40n);
    });

    test('HTTP edges answer as central-ledger: 404 3002, 405 3000 with Allow, body and URL errors, never a 5xx', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const transferUrl = `/transfers/${randomUUID()}`;
      // Node accepts more methods than light-my-request's typing lists (QUERY, for one).
      const method = (name: string) => name as NonNullable<InjectOptions['method']>;
      for (const [name, url] of <[string, string][]>[
        ['GET', '/nothing/here'],
        ['POST', '/participantz'],
        ['QUERY', '/nothing'],
        ['PROPFIND', '/participants/x/y/z/w'],
      ]) {
        const response = await call({ method: method(name), url });
        expectError(response, '3002', 404);
        assert.match(json(response).errorInformation.errorDescription, /^Unknown URI/);
      }
      const wrongMethods: [string, string, string][] = [
        ['DELETE', '/participants', 'GET, HEAD, POST'],
        ['QUERY', '/participants', 'GET, HEAD, POST'],
        ['PATCH', transferUrl, 'GET, HEAD, PUT'],
        ['POST', `${transferUrl}/error`, 'PUT'],
        ['OPTIONS', '/health', 'GET, HEAD'],
      ];
      for (const [name, url, allow] of wrongMethods) {
        const response = await call({ method: method(name), url });
        expectError(response, '3000', 405);
        assert.equal(
          json(response).errorInformation.errorDescription,
          'Generic client error - Method Not Allowed',
        );
        assert.equal(response.headers.allow, allow, `${name} ${url}`);
      }
      // A body on a wrong method is not read: the route is what is wrong.
      expectError(
        await call({
          method: method('QUERY'),
          url: '/participants',
          payload: '{"a":',
          headers: { 'content-type': 'application/json' },
        }),
        '3000',
        405,
      );

      // Every method Node accepts (CONNECT aside: it never reaches Fastify), on a known and an
      // unknown path.
      for (const name of METHODS.filter((m) => m !== 'CONNECT')) {
        for (const url of ['/participants', '/no/such/path']) {
          const response = await call({
            method: method(name),
            url,
            headers: { 'fspiop-source': payer },
          });
          assert.ok(
            response.statusCode < 500,
            `${name} ${url}: ${response.statusCode} ${response.body}`,
          );
          if (name !== 'HEAD' && response.statusCode >= 400)
            assert.match(json(response).errorInformation.errorCode, /^3\d{3}$/, `${name} ${url}`);
        }
      }

      const fspiopJson = 'application/vnd.interoperability.transfers+json;version=1.1';
      for (const contentType of ['application/json', fspiopJson]) {
        const badJson = await call({
          method: 'POST',
          url: '/transfers',
          payload: '{"transferId":',
          headers: { 'content-type': contentType, 'fspiop-source': payer },
        });
        expectError(badJson, '3000');
        assert.equal(
          json(badJson).errorInformation.errorDescription,
          'Generic client error - Invalid request payload JSON format',
        );
        const tooLarge = await call({
          method: 'POST',
          url: '/transfers',
          payload: JSON.stringify(prepareBody({ ilpPacket: 'A'.repeat(70_000) })),
          headers: { 'content-type': contentType, 'fspiop-source': payer },
        });
        expectError(tooLarge, '3104');
      }
      expectError(
        await call({
          method: 'POST',
          url: '/participants',
          payload: '<participant/>',
          headers: { 'content-type': 'application/xml' },
        }),
        '3101',
      );
      expectError(
        await call({ method: 'GET', url: `/participants/${'n'.repeat(101)}` }),
        '3000',
        414,
      );
      expectError(await call({ method: 'GET', url: '/participants/%E0%A4%A' }), '3000');
      assert.equal((await call({ method: 'HEAD', url: '/health' })).statusCode, 200);
    });

    test('service routes: /health, /enums, /openapi.json', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const health = json(await call({ method: 'GET', url: '/health' }));
      assert.equal(health.status, 'OK');
      assert.equal(health.services[0].status, 'OK');
      const enums = json(await call({ method: 'GET', url: '/enums' }));
      assert.deepEqual(Object.keys(enums).sort(), [
        'bulkProcessingState',
        'bulkTransferState',
        'bulkTransferStateEnum',
        'endpointType',
        'hubParticipant',
        'ledgerAccountType',
        'ledgerEntryType',
        'participantLimitType',
        'transferParticipantRoleType',
        'transferState',
        'transferStateEnum',
      ]);
      assert.equal(enums.ledgerAccountType.POSITION, 1);
      assert.equal(enums.endpointType.FSPIOP_CALLBACK_URL_FX_TRANSFER_POST, 7);
      assert.equal(enums.transferStateEnum.RECEIVED_FULFIL_DEPENDENT, 'RESERVED');
      const types = json(await call({ method: 'GET', url: '/ledgerAccountTypes' }));
      assert.deepEqual(
        types.find((t: any) => t.name === 'SETTLEMENT'),
        { id: 2, name: 'SETTLEMENT', description: 'SETTLEMENT', isActive: 1, isSettleable: true },
      );
      const openapi = json(await call({ method: 'GET', url: '/openapi.json' }));
      assert.ok(
        openapi.paths['/transfers'] &&
          openapi.paths['/participants/{name}/initialPositionAndLimits'],
      );
      // Every documented operation has its success answer and the FSPIOP errors.
      let operations = 0;
      for (const [path, methods] of Object.entries<any>(openapi.paths)) {
        for (const [method, operation] of Object.entries<any>(methods)) {
          operations += 1;
          const codes = Object.keys(operation.responses);
          assert.ok(
            codes.some((code) => code.startsWith('2')),
            `${method} ${path}: ${codes}`,
          );
          for (const code of ['400', '404', '405', '500', '503'])
            assert.ok(codes.includes(code), `${method} ${path} lacks ${code}`);
          assert.ok(
            operation.responses['400'].content['application/json'].schema.properties
              .errorInformation,
            `${method} ${path}`,
          );
        }
      }
      assert.ok(operations >= 30, `${operations} operations`);
      assert.ok(
        openapi.paths['/transfers'].post.responses['201'].content['application/json'].schema
          .properties.transferState,
      );
      const metrics = (await call({ method: 'GET', url: '/metrics' })).body;
      assert.match(
        metrics,
        /http_request_duration_seconds_bucket\{[^}]*route="\/transfers"/,
        'latency per route',
      );
      assert.match(metrics, /ledger_batch_commands_count [1-9]/, 'ledger batch sizes');
      assert.match(
        metrics,
        /^ledger_batch_oldest_wait_seconds_total \d/m,
        'how long batches queued',
      );
      assert.match(metrics, /^ledger_batch_linger_seconds \d/m, 'the linger now');
      assert.match(metrics, /http_requests_in_flight 1/, 'this very request is in flight');
      assert.match(metrics, /^event_loop_lag_p99_seconds /m);
      // Process metrics as central-ledger names them (central-services-metrics' prefix moja_cl_).
      for (const name of [
        'process_cpu_user_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_eventloop_lag_p99_seconds',
        'nodejs_heap_size_used_bytes',
      ]) {
        assert.match(metrics, new RegExp(`^moja_cl_${name} `, 'm'), name);
        assert.doesNotMatch(metrics, new RegExp(`^${name} `, 'm'), name);
      }
    });

    test('/jmeter endpoints', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const a = `fspJM${run}a`;
      const b = `fspJM${run}b`;
      for (const name of [a, b]) {
        assert.deepEqual(
          json(
            await call({
              method: 'POST',
              url: '/jmeter/participants/create',
              payload: { name, currency: 'TZS', newlyCreated: false },
            }),
          ),
          { name, currency: 'TZS', newlyCreated: true },
        );
      }
      assert.equal(
        json(
          await call({
            method: 'POST',
            url: '/jmeter/participants/create',
            payload: { name: a, currency: 'TZS' },
          }),
        ).newlyCreated,
        false,
      );
      expectError(
        await call({
          method: 'POST',
          url: '/jmeter/participants/create',
          payload: { name: a, currency: 'TZS', extra: 1 },
        }),
        '3101',
      );
      const balances = json(await call({ method: 'GET', url: `/jmeter/participants/${a}` }));
      assert.equal(
        balances.accounts.find((x: any) => x.ledgerAccountType === 'SETTLEMENT').value,
        '-1000000000',
      );

      const base = {
        payerFsp: a,
        payeeFsp: b,
        amount: { amount: '25.5', currency: 'TZS' },
        ilpPacket: ilpPacket('25.5', 'TZS'),
        condition: newCondition().condition,
        expiration: new Date(Date.now() + 60_000).toISOString(),
      };
      const committed = await call({
        method: 'POST',
        url: '/jmeter/transfers/prepare',
        payload: { ...base, transferId: randomUUID(), fulfil: true },
      });
      assert.equal(json(committed).transferState, 'COMMITTED', committed.body);
      const rejected = await call({
        method: 'POST',
        url: '/jmeter/transfers/prepare',
        payload: { ...base, transferId: randomUUID(), fulfil: true, reject: true },
      });
      assert.equal(json(rejected).transferState, 'ABORTED', rejected.body);
      const onlyPrepared = await call({
        method: 'POST',
        url: '/jmeter/transfers/prepare',
        payload: { ...base, transferId: randomUUID(), fulfil: false },
      });
      assert.equal(json(onlyPrepared).transferState, 'RESERVED');
      const looked = json(
        await call({
          method: 'GET',
          url: `/jmeter/participants/${a}/transfers/${json(committed).transferId}`,
        }),
      );
      assert.deepEqual(looked.amount, { amount: '25.5', currency: 'TZS' });
      assert.equal(looked.transferState, 'COMMITTED');
      expectError(
        await call({ method: 'GET', url: `/jmeter/participants/${a}/transfers/${randomUUID()}` }),
        '3208',
      );
      assert.deepEqual(
        json(
          await call({
            method: 'GET',
            url: `/jmeter/transactions/ilp/${json(committed).transferId}`,
          }),
        ).amount,
        { amount: '25.5', currency: 'TZS' },
      );
      const after = json(
        await call({ method: 'GET', url: `/jmeter/participants/${a}` }),
      ).accounts.find((x: any) => x.ledgerAccountType === 'POSITION');
      // 25.5 committed and 25.5 still prepared are both in the position.
      assert.equal(after.value, '51');
      assert.equal(after.reservedValue, '0');
    });

    test('amounts as central-ledger takes them: JSON numbers and numeric strings, exact, refused with 3101', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const account = await settlementAccountId(payee);
      const funds = (amount: unknown, transferId = randomUUID()) =>
        call({
          method: 'POST',
          url: `/participants/${payee}/accounts/${account}`,
          payload: `{"transferId":"${transferId}","externalReference":"r","action":"recordFundsIn","reason":"in","amount":{"amount":${amount},"currency":"${CURRENCY}"}}`,
          headers: { 'content-type': 'application/json' },
        });
      const liquidity = BigInt((await position(payee)).liquidity);
      assert.equal((await funds('0.25')).statusCode, 202);
      assert.equal((await funds('"1.75"')).statusCode, 202);
      assert.equal((await funds('1e1')).statusCode, 202);
      assert.equal(BigInt((await position(payee)).liquidity), liquidity - 12n);
      // A literal no double carries exactly is read as written, and refused only for the currency's
      // scale.
      const before = await position(payee);
      for (const [amount, code] of [
        ['-1', '3101'],
        ['0', '3101'],
        ['"abc"', '3101'],
        ['1e300', '3101'],
        ['9007199254740993', '3101'],
        ['1.001', '3100'],
        ['0.10000000000000000001', '3100'],
      ] as const) {
        expectError(await funds(amount), code);
      }
      assert.deepEqual(await position(payee), before, 'a refused amount moves nothing');
      const big = '90071992547409.91';
      assert.equal((await funds(big)).statusCode, 202);
      // The settlement account's value, in cents: what it was, less 12.00 and 90071992547409.91.
      const cents = (liquidity - 12n) * 100n - 9007199254740991n;
      const expected = `-${(-cents / 100n).toString()}.${(-cents % 100n).toString().padStart(2, '0')}`;
      const accountsText = (await call({ method: 'GET', url: `/participants/${payee}/accounts` }))
        .body;
      assert.ok(
        accountsText.includes(
          `"ledgerAccountType":"SETTLEMENT","currency":"${CURRENCY}","isActive":1,"value":${expected},`,
        ),
        `written back as the exact number literal ${expected}: ${accountsText}`,
      );
    });

    test('onboarding central-ledger accepts: initial position above liquidity, refused admin ids reusable', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const debtor = `debtor${run}`;
      assert.equal(
        (
          await call({
            method: 'POST',
            url: '/participants',
            payload: { name: debtor, currency: CURRENCY },
          })
        ).statusCode,
        201,
      );
      const initial = await call({
        method: 'POST',
        url: `/participants/${debtor}/initialPositionAndLimits`,
        payload: {
          currency: CURRENCY,
          limit: { type: 'NET_DEBIT_CAP', value: 100 },
          initialPosition: 200,
        },
      });
      assert.equal(initial.statusCode, 201, initial.body);
      expectError(
        await call({
          method: 'POST',
          url: `/participants/${debtor}/initialPositionAndLimits`,
          payload: {
            currency: CURRENCY,
            limit: { type: 'NET_DEBIT_CAP', value: 100 },
            initialPosition: 200,
          },
        }),
        '2001',
        500,
      );
      assert.deepEqual(await position(debtor), { value: '200', liquidity: '0' });
      // It owes more than it deposited: it cannot send (4001 first), but it can receive.
      const send = (amount: string) =>
        prepare(
          prepareBody({
            payerFsp: debtor,
            payeeFsp: payer,
            amount: { amount, currency: CURRENCY },
          }),
        );
      expectError(await send('1'), '4001');
      const { fulfilment, condition } = newCondition();
      const incoming = prepareBody(
        { payeeFsp: debtor, amount: { amount: '50', currency: CURRENCY } },
        condition,
      );
      assert.equal((await prepare(incoming)).statusCode, 201);
      assert.equal(
        (
          await fulfil(
            incoming.transferId as string,
            { transferState: 'COMMITTED', fulfilment },
            debtor,
          )
        ).statusCode,
        200,
      );
      assert.equal((await position(debtor)).value, '150');
      expectError(await send('1'), '4001');
      // A funds out refused for liquidity does not burn its transferId: the same request succeeds
      // once funded.
      const account = await settlementAccountId(debtor);
      const outId = randomUUID();
      const out = () =>
        call({
          method: 'POST',
          url: `/participants/${debtor}/accounts/${account}`,
          payload: {
            transferId: outId,
            externalReference: 'r',
            action: 'recordFundsOutPrepareReserve',
            reason: 'out',
            amount: { amount: 5, currency: CURRENCY },
          },
        });
      expectError(await out(), '4001');
      assert.equal((await fundsIn(debtor, '400')).statusCode, 202);
      // Liquidity 400 covers the position (150) now; the cap (100) does not: 4200.
      expectError(await send('1'), '4200');
      assert.equal((await out()).statusCode, 202, 'the refused funds out, sent again once covered');
      assert.equal((await out()).statusCode, 202, 'and again: a duplicate');
      assert.equal(
        (
          await call({
            method: 'PUT',
            url: `/participants/${debtor}/accounts/${account}/transfers/${outId}`,
            payload: { action: 'recordFundsOutCommit', reason: 'done' },
          })
        ).statusCode,
        202,
      );
      assert.deepEqual(await position(debtor), { value: '150', liquidity: '-395' });
      assert.equal(
        (
          await call({
            method: 'PUT',
            url: `/participants/${debtor}/limits`,
            payload: {
              currency: CURRENCY,
              limit: { type: 'NET_DEBIT_CAP', value: 300, alarmPercentage: 10 },
            },
          })
        ).statusCode,
        200,
      );
      expectError(await send('150.01'), '4200');
      assert.equal((await send('150')).statusCode, 201);
      assert.equal((await position(debtor)).value, '300');
      assert.equal(
        json(await call({ method: 'GET', url: `/participants/${debtor}/limits` }))[0].limit.value,
        300,
      );
    });
  });
}
