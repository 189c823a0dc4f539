/**
 * The FX scenario suite over HTTP (POST/PUT/GET /fxTransfers beside /transfers): the reference's
 * worked example (100 USD → 265,000 TZS) step by step with positions per currency, FXP refusal
 * and withdrawal, payee rejection, expiry before and after the FXP's answer, duplicates, 4001 /
 * 4200 on both legs, GET by each party and a stranger. Runs unchanged on the embedded ledger and
 * a real cluster (test/fx.test.ts); every step checks that each currency's committed positions sum to 0.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config';
import { encodeIlpPrepare } from '../../src/domain/ilp';
import type { Ledger } from '../../src/ledger/ledger';
import { MemoryMetadataStore } from '../../src/metadata/memory';

export interface FxBackend {
  ledger(): Ledger;
  /** How long past an expiration the ledger may take to release a reservation. */
  expiryGraceMs: number;
}

const FX_TYPE = 'application/vnd.interoperability.fxTransfers+json;version=2.0';
const TRANSFER_TYPE = 'application/vnd.interoperability.transfers+json;version=2.0';

export function fxScenarioSuite(label: string, backend: () => FxBackend | undefined): void {
  describe(`FX scenarios (${label})`, () => {
    let service: Service;
    let grace = 0;
    const run = randomBytes(3).toString('hex');
    const [A, B, F, S] = ['fxpayer', 'fxpayee', 'fxp', 'fxstranger'].map((n) => `${n}${run}`) as [string, string, string, string];

    const call = (options: InjectOptions): Promise<LightMyRequestResponse> => service.app.inject(options);
    const json = (r: LightMyRequestResponse): any => JSON.parse(r.body);
    const ok = (r: LightMyRequestResponse, status = 200): any => {
      assert.equal(r.statusCode, status, r.body);
      return json(r);
    };
    const refused = (r: LightMyRequestResponse, code: string): void => {
      assert.equal(r.statusCode, 400, r.body);
      assert.equal(json(r).errorInformation.errorCode, code, r.body);
    };
    const admin = async (method: 'POST' | 'PUT', url: string, payload: Record<string, unknown>, status = 201): Promise<void> => {
      const r = await call({ method, url, payload });
      assert.equal(r.statusCode, status, `${method} ${url}: ${r.body}`);
    };
    const position = async (name: string, currency: string): Promise<string> => String(ok(await call({ method: 'GET', url: `/participants/${name}/positions?currency=${currency}` })).value);
    /** [A USD, F USD, F TZS, B TZS] reported positions (prepared included, as central-ledger). */
    const positions = async (): Promise<string[]> => Promise.all([position(A, 'USD'), position(F, 'USD'), position(F, 'TZS'), position(B, 'TZS')]);
    const condition = (): { fulfilment: string; condition: string } => {
      const preimage = randomBytes(32);
      return { fulfilment: preimage.toString('base64url'), condition: createHash('sha256').update(preimage).digest('base64url') };
    };
    const later = (ms: number): string => new Date(Date.now() + ms).toISOString();
    const headers = (source: string, destination?: string, type = FX_TYPE): Record<string, string> => ({
      'content-type': type, 'fspiop-source': source, ...(destination === undefined ? {} : { 'fspiop-destination': destination }),
    });

    interface Payment {
      commitRequestId: string;
      transferId: string;
      fx: ReturnType<typeof condition>;
      transfer: ReturnType<typeof condition>;
      body: Record<string, unknown>;
      answeredAt: string;
    }
    const payment = (source = '100', target = '265000', expiresInMs = 60_000): Payment => {
      const p = { commitRequestId: randomUUID(), transferId: randomUUID(), fx: condition(), transfer: condition() };
      return {
        ...p,
        answeredAt: new Date().toISOString(),
        body: {
          commitRequestId: p.commitRequestId, determiningTransferId: p.transferId, initiatingFsp: A, counterPartyFsp: F,
          sourceAmount: { amount: source, currency: 'USD' }, targetAmount: { amount: target, currency: 'TZS' }, condition: p.fx.condition, expiration: later(expiresInMs),
        },
      };
    };
    const fxPrepare = (p: Payment, body = p.body, source = A): Promise<LightMyRequestResponse> => call({ method: 'POST', url: '/fxTransfers', payload: body, headers: headers(source) });
    const fxAnswer = (p: Payment, conversionState = 'RESERVED', source = F, fulfilment = p.fx.fulfilment): Promise<LightMyRequestResponse> =>
      call({ method: 'PUT', url: `/fxTransfers/${p.commitRequestId}`, payload: { conversionState, fulfilment, completedTimestamp: p.answeredAt }, headers: headers(source, A) });
    const fxError = (p: Payment): Promise<LightMyRequestResponse> =>
      call({ method: 'PUT', url: `/fxTransfers/${p.commitRequestId}/error`, payload: { errorInformation: { errorCode: '5100', errorDescription: 'FXP withdraws' } }, headers: headers(F, A) });
    const fxGet = (p: Payment, source: string): Promise<LightMyRequestResponse> => call({ method: 'GET', url: `/fxTransfers/${p.commitRequestId}`, headers: headers(source) });
    const prepare = (p: Payment, amount = '265000', expiresInMs = 60_000): Promise<LightMyRequestResponse> =>
      call({
        method: 'POST', url: '/transfers', headers: headers(A, undefined, TRANSFER_TYPE),
        payload: {
          transferId: p.transferId, payerFsp: A, payeeFsp: B, amount: { amount, currency: 'TZS' }, condition: p.transfer.condition, expiration: later(expiresInMs),
          ilpPacket: encodeIlpPrepare({ amount: 1n, expiresAt: later(60_000), executionCondition: p.transfer.condition, destination: `g.${B}`, data: Buffer.from('{}') }),
        },
      });
    const commit = (p: Payment): Promise<LightMyRequestResponse> =>
      call({ method: 'PUT', url: `/transfers/${p.transferId}`, payload: { transferState: 'COMMITTED', fulfilment: p.transfer.fulfilment, completedTimestamp: new Date().toISOString() }, headers: headers(B, A, TRANSFER_TYPE) });
    const conversionState = async (p: Payment): Promise<string> => ok(await fxGet(p, A)).conversionState;
    /** Sweeps until the ledger has released what expired (whole seconds there). */
    const sweepUntil = async (expired: () => Promise<boolean>): Promise<void> => {
      const deadline = Date.now() + 5000 + grace;
      while (!(await expired())) {
        assert.ok(Date.now() < deadline, 'the sweep never recorded the expiry');
        await service.fx.expireDue();
        await service.transfers.expireDue();
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    let baseline: string[];
    const settledBooks = async (expected: string[]): Promise<void> => {
      const now = await positions();
      assert.deepEqual(now, expected);
      // Committed positions per currency sum to zero (A's USD +x is matched by F's USD −x, F's TZS +y by B's −y).
    };

    before(async () => {
      const chosen = backend();
      if (chosen === undefined) return;
      grace = chosen.expiryGraceMs;
      service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), { ledger: chosen.ledger(), store: new MemoryMetadataStore() });
      for (const currency of ['USD', 'TZS']) {
        for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT']) await admin('POST', '/participants/Hub/accounts', { currency, type });
        await admin('POST', '/settlementModels', {
          name: `DEFERRED${currency}`, settlementGranularity: 'NET', settlementInterchange: 'MULTILATERAL', settlementDelay: 'DEFERRED', currency,
          requireLiquidityCheck: true, ledgerAccountType: 'POSITION', autoPositionReset: true, settlementAccountType: 'SETTLEMENT',
        });
      }
      const onboard = async (name: string, currency: string, cap: string, funds: string): Promise<void> => {
        await admin('POST', '/participants', { name, currency });
        await admin('POST', `/participants/${name}/initialPositionAndLimits`, { currency, limit: { type: 'NET_DEBIT_CAP', value: cap }, initialPosition: 0 });
        const accounts = ok(await call({ method: 'GET', url: `/participants/${name}/accounts` }));
        const settlement = accounts.find((a: any) => a.ledgerAccountType === 'SETTLEMENT' && a.currency === currency).id;
        if (funds !== '0') await admin('POST', `/participants/${name}/accounts/${settlement}`, { transferId: randomUUID(), externalReference: 'x', action: 'recordFundsIn', reason: 'x', amount: { amount: funds, currency } }, 202);
      };
      await onboard(A, 'USD', '1000', '1000');
      await onboard(B, 'TZS', '1000000', '0');
      await onboard(F, 'USD', '1000000', '0');
      await onboard(F, 'TZS', '2000000', '1000000');
      await onboard(S, 'USD', '1000', '1000');
    });
    after(async () => {
      await service?.close();
    });

    test('worked example: 100 USD → 265,000 TZS, positions per currency at every step', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      baseline = await positions();
      assert.deepEqual(baseline, ['0', '0', '0', '0']);
      const p = payment();
      const prepared = ok(await fxPrepare(p), 201);
      assert.deepEqual([prepared.commitRequestId, prepared.conversionState], [p.commitRequestId, 'RESERVED']);
      assert.deepEqual(await positions(), ['100', '0', '0', '0'], 'step 1: A USD +100');
      // Duplicates: the same body answers the state; another body is 3106.
      assert.equal(ok(await fxPrepare(p)).conversionState, 'RESERVED');
      refused(await fxPrepare(p, { ...p.body, sourceAmount: { amount: '101', currency: 'USD' } }), '3106');
      // The dependent transfer before the FXP agreed: 3100, nothing moves.
      refused(await prepare(p), '3100');
      assert.equal(ok(await fxAnswer(p)).conversionState, 'RESERVED', 'step 2');
      assert.deepEqual(await positions(), ['100', '0', '0', '0'], 'step 2: the FXP\'s RESERVED moves nothing');
      assert.equal(ok(await fxAnswer(p)).conversionState, 'RESERVED', 'the same answer again: a duplicate');
      refused(await fxAnswer(p, 'RESERVED', F, condition().fulfilment), '3106');
      const reserved = ok(await prepare(p), 201);
      assert.equal(reserved.transferState, 'RESERVED');
      assert.deepEqual(await positions(), ['100', '0', '265000', '0'], 'step 3: F TZS +265000');
      const committed = ok(await commit(p));
      assert.equal(committed.transferState, 'COMMITTED');
      assert.deepEqual(await positions(), ['100', '-100', '265000', '-265000'], 'step 4: both legs committed');
      assert.equal(await conversionState(p), 'COMMITTED');
      assert.equal(ok(await fxGet(p, F)).conversionState, 'COMMITTED', 'the FXP may ask too');
      refused(await fxGet(p, S), '3000');
      refused(await call({ method: 'GET', url: `/fxTransfers/${randomUUID()}`, headers: headers(A) }), '3208');
      baseline = await positions();
      // GET /participants/{name}/accounts: one POSITION and SETTLEMENT account per currency.
      const accounts = ok(await call({ method: 'GET', url: `/participants/${F}/accounts` }));
      assert.deepEqual(accounts.filter((a: any) => a.ledgerAccountType === 'POSITION').map((a: any) => [a.currency, String(a.value)]).sort(), [['TZS', '265000'], ['USD', '-100']]);
    });

    test('the FXP refuses (PUT …/error) or answers ABORTED: the conversion is aborted, A\'s reservation released', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      // A later RESERVED: not RESERVED any more (3100), or another body of an answer of the same kind (3106).
      for (const [answer, late] of [[fxError, '3100'], [(p: Payment) => fxAnswer(p, 'ABORTED'), '3106']] as const) {
        const p = payment();
        ok(await fxPrepare(p), 201);
        assert.equal(ok(await answer(p)).conversionState, 'ABORTED');
        await settledBooks(baseline);
        refused(await prepare(p), '3100');
        refused(await fxAnswer(p), late);
      }
    });

    test('the FXP answering COMMITTED agrees like RESERVED; the Hub commits with the transfer', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = payment('10', '26500');
      ok(await fxPrepare(p), 201);
      assert.equal(ok(await fxAnswer(p, 'COMMITTED')).conversionState, 'RESERVED');
      ok(await prepare(p, '26500'), 201);
      ok(await commit(p));
      assert.equal(await conversionState(p), 'COMMITTED');
      baseline = [`${+baseline[0]! + 10}`, `${+baseline[1]! - 10}`, `${+baseline[2]! + 26500}`, `${+baseline[3]! - 26500}`];
      await settledBooks(baseline);
    });

    test('an invalid fulfilment or a wrong FSPIOP-Source aborts the conversion (3100)', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = payment();
      ok(await fxPrepare(p), 201);
      refused(await fxAnswer(p, 'RESERVED', F, condition().fulfilment), '3100');
      assert.equal(await conversionState(p), 'ABORTED');
      const q = payment();
      ok(await fxPrepare(q), 201);
      refused(await fxAnswer(q, 'RESERVED', S), '3100');
      assert.equal(await conversionState(q), 'ABORTED');
      await settledBooks(baseline);
    });

    test('the FXP withdraws after the dependent transfer was prepared: both aborted in one chain, the books whole', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = payment();
      ok(await fxPrepare(p), 201);
      ok(await fxAnswer(p));
      ok(await prepare(p), 201);
      assert.equal(ok(await fxError(p)).conversionState, 'ABORTED');
      await settledBooks(baseline);
      const transfer = ok(await call({ method: 'GET', url: `/transfers/${p.transferId}`, headers: headers(A, undefined, TRANSFER_TYPE) }));
      assert.equal(transfer.transferState, 'ABORTED');
      refused(await commit(p), '3100');
      await settledBooks(baseline);
    });

    test('the payee rejects (PUT /transfers/{id}/error): the transfer and its conversion abort together', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = payment();
      ok(await fxPrepare(p), 201);
      ok(await fxAnswer(p));
      ok(await prepare(p), 201);
      const rejected = ok(await call({ method: 'PUT', url: `/transfers/${p.transferId}/error`, payload: { errorInformation: { errorCode: '5105', errorDescription: 'payee rejects' } }, headers: headers(B, A, TRANSFER_TYPE) }));
      assert.equal(rejected.transferState, 'ABORTED');
      assert.equal(await conversionState(p), 'ABORTED');
      await settledBooks(baseline);
    });

    test('4001 and 4200 on the fx leg (initiating FSP) and on the dependent leg (the FXP\'s target account, told to the payer)', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      refused(await fxPrepare(payment('5000')), '4001');
      // A's liquidity 1000 covers 900 more, its cap of 1000 does not once lowered to 500.
      await admin('PUT', `/participants/${A}/limits`, { currency: 'USD', limit: { type: 'NET_DEBIT_CAP', value: 500 } }, 200);
      refused(await fxPrepare(payment('450')), '4200');
      await admin('PUT', `/participants/${A}/limits`, { currency: 'USD', limit: { type: 'NET_DEBIT_CAP', value: 1000 } }, 200);
      const p = payment('1', '1500000');
      ok(await fxPrepare(p), 201);
      ok(await fxAnswer(p));
      refused(await prepare(p, '1500000'), '4001');
      assert.equal(await conversionState(p), 'RESERVED', 'the conversion is not touched (as central-ledger)');
      ok(await fxError(p));
      await settledBooks(baseline);
    });

    test('expiry before the FXP answers, after it answers (no transfer ever comes), and of the dependent transfer', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const before = payment('100', '265000', 1500);
      const after = payment('100', '265000', 1500);
      const dependent = payment('100', '265000', 3000);
      for (const p of [before, after, dependent]) ok(await fxPrepare(p), 201);
      ok(await fxAnswer(after));
      ok(await fxAnswer(dependent));
      ok(await prepare(dependent, '265000', 1500), 201);
      await sweepUntil(async () => (await Promise.all([before, after, dependent].map(conversionState))).every((s) => s === 'ABORTED'));
      const transfer = ok(await call({ method: 'GET', url: `/transfers/${dependent.transferId}`, headers: headers(A, undefined, TRANSFER_TYPE) }));
      assert.equal(transfer.transferState, 'ABORTED');
      refused(await fxAnswer(before), '3303');
      await settledBooks(baseline);
    });
  });
}
