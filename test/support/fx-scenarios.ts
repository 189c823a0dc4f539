/**
 * The FX scenario suite over HTTP (POST/PUT/GET /fxTransfers beside /transfers): the reference's
 * worked example (100 USD → 265,000 TZS) step by step with positions per currency, FXP refusal
 * and withdrawal, payee rejection, expiry before and after the FXP's answer, duplicates, 4001 /
 * 4200 on both legs, GET by each party and a stranger. Runs unchanged on the embedded ledger and
 * a real cluster (test/fx.test.ts); every step checks that each currency's committed positions sum
 * to 0.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { buildService, type Service } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import type { MetadataStore } from '../../src/ports/metadata';
import type { Ledger } from '../../src/ports/ledger';
import { MemoryMetadataStore } from '../../src/metadata/memory';
import { FxClient, newCondition, type Payment, type Reply } from './fx-client';

export interface FxBackend {
  ledger(): Ledger;
  /** The metadata store (in memory unless given). */
  store?(): Promise<MetadataStore>;
  /** How long past an expiration the ledger may take to release a reservation. */
  expiryGraceMs: number;
}

export function fxScenarioSuite(label: string, backend: () => FxBackend | undefined): void {
  describe(`FX scenarios (${label})`, () => {
    let service: Service;
    let grace = 0;
    const parties = FxClient.parties(randomBytes(3).toString('hex'));
    const { A, B, F, S } = parties;
    const c = new FxClient(async (method, url, payload, extra) => {
      const r = await service.app.inject({
        method,
        url,
        ...(payload === undefined ? {} : { payload }),
        headers: extra ?? {},
      });
      return { status: r.statusCode, body: r.body.length === 0 ? undefined : JSON.parse(r.body) };
    }, parties);
    const ok = (r: Reply, status = 200): any => {
      assert.equal(r.status, status, JSON.stringify(r.body));
      return r.body;
    };
    const refused = (r: Reply, code: string): void => {
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.errorInformation.errorCode, code, JSON.stringify(r.body));
    };
    const conversionState = async (p: Payment): Promise<string> =>
      ok(await c.fxGet(p)).conversionState;
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
      const now = await c.positions();
      assert.deepEqual(now, expected);
      // Committed positions per currency sum to zero (A's USD +x is matched by F's USD −x, F's TZS
      // +y by B's −y).
    };

    before(async () => {
      const chosen = backend();
      if (chosen === undefined) return;
      grace = chosen.expiryGraceMs;
      service = await buildService(loadConfig({ LOG_LEVEL: 'silent' }), {
        ledger: chosen.ledger(),
        store: chosen.store === undefined ? new MemoryMetadataStore() : await chosen.store(),
      });
      await c.onboard();
    });
    after(async () => {
      await service?.close();
    });

    test('worked example: 100 USD → 265,000 TZS, positions per currency at every step', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      baseline = await c.positions();
      assert.deepEqual(baseline, ['0', '0', '0', '0']);
      const p = c.payment();
      const prepared = ok(await c.fxPrepare(p), 201);
      assert.deepEqual(
        [prepared.commitRequestId, prepared.conversionState],
        [p.commitRequestId, 'RESERVED'],
      );
      assert.deepEqual(await c.positions(), ['100', '0', '0', '0'], 'step 1: A USD +100');
      // Duplicates: the same body answers the state; another body is 3106.
      assert.equal(ok(await c.fxPrepare(p)).conversionState, 'RESERVED');
      refused(
        await c.fxPrepare(p, { ...p.body, sourceAmount: { amount: '101', currency: 'USD' } }),
        '3106',
      );
      // The dependent transfer before the FXP agreed: 3100, nothing moves.
      refused(await c.prepare(p), '3100');
      assert.equal(ok(await c.fxAnswer(p)).conversionState, 'RESERVED', 'step 2');
      assert.deepEqual(
        await c.positions(),
        ['100', '0', '0', '0'],
        "step 2: the FXP's RESERVED moves nothing",
      );
      assert.equal(
        ok(await c.fxAnswer(p)).conversionState,
        'RESERVED',
        'the same answer again: a duplicate',
      );
      refused(await c.fxAnswer(p, 'RESERVED', F, newCondition().fulfilment), '3106');
      const reserved = ok(await c.prepare(p), 201);
      assert.equal(reserved.transferState, 'RESERVED');
      assert.deepEqual(await c.positions(), ['100', '0', '265000', '0'], 'step 3: F TZS +265000');
      const committed = ok(await c.commit(p));
      assert.equal(committed.transferState, 'COMMITTED');
      assert.deepEqual(
        await c.positions(),
        ['100', '-100', '265000', '-265000'],
        'step 4: both legs committed',
      );
      assert.equal(await conversionState(p), 'COMMITTED');
      assert.equal(ok(await c.fxGet(p, F)).conversionState, 'COMMITTED', 'the FXP may ask too');
      refused(await c.fxGet(p, S), '3000');
      refused(await c.fxGet({ ...p, commitRequestId: randomUUID() }), '3208');
      baseline = await c.positions();
      // GET /participants/{name}/accounts: one POSITION and SETTLEMENT account per currency.
      const accounts = (
        await service.app.inject({ method: 'GET', url: `/participants/${F}/accounts` })
      ).json();
      assert.deepEqual(
        accounts
          .filter((a: any) => a.ledgerAccountType === 'POSITION')
          .map((a: any) => [a.currency, String(a.value)])
          .sort(),
        [
          ['TZS', '265000'],
          ['USD', '-100'],
        ],
      );

      // Both legs landed in the OPEN settlement window, each in its own currency: each nets to 0.
      const v2 = async (method: 'GET' | 'POST', url: string, payload?: object) =>
        (
          await service.app.inject({
            method,
            url: `/v2${url}`,
            ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
          })
        ).json();
      const [open] = await v2('GET', '/settlementWindows?state=OPEN');
      await v2('POST', `/settlementWindows/${open.settlementWindowId}`, {
        state: 'CLOSED',
        reason: 'fx window',
      });
      const positionIds = new Map<number, string>();
      for (const name of [A, F, B]) {
        for (const a of (
          await service.app.inject({ method: 'GET', url: `/participants/${name}/accounts` })
        ).json())
          if (a.ledgerAccountType === 'POSITION') positionIds.set(a.id, `${name} ${a.currency}`);
      }
      const nets: string[] = [];
      for (const currency of ['USD', 'TZS']) {
        const settlement = await v2('POST', '/settlements', {
          settlementModel: `DEFERRED${currency}`,
          reason: 'fx',
          settlementWindows: [{ id: open.settlementWindowId }],
        });
        for (const participant of settlement.participants)
          for (const account of participant.accounts)
            nets.push(`${positionIds.get(account.id)} ${account.netSettlementAmount.amount}`);
      }
      assert.deepEqual(
        nets.sort(),
        [`${A} USD 100`, `${B} TZS -265000`, `${F} TZS 265000`, `${F} USD -100`].sort(),
      );
    });

    test("the FXP refuses (PUT …/error): the conversion is aborted, A's reservation released", async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = c.payment();
      ok(await c.fxPrepare(p), 201);
      assert.equal(ok(await c.fxError(p)).conversionState, 'ABORTED');
      await settledBooks(baseline);
      refused(await c.prepare(p), '3100');
      // A later RESERVED: not RESERVED any more.
      refused(await c.fxAnswer(p), '3100');
    });

    test('the FXP answering ABORTED changes nothing, as in central-ledger: the conversion holds until its PUT …/error', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = c.payment();
      ok(await c.fxPrepare(p), 201);
      assert.equal(ok(await c.fxAnswer(p, 'ABORTED')).conversionState, 'RESERVED');
      assert.equal(await conversionState(p), 'RESERVED');
      assert.equal(ok(await c.fxError(p)).conversionState, 'ABORTED');
      await settledBooks(baseline);
    });

    test('the FXP answering COMMITTED agrees like RESERVED; the Hub commits with the transfer', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = c.payment('10', '26500');
      ok(await c.fxPrepare(p), 201);
      assert.equal(ok(await c.fxAnswer(p, 'COMMITTED')).conversionState, 'RESERVED');
      ok(await c.prepare(p, '26500'), 201);
      ok(await c.commit(p));
      assert.equal(await conversionState(p), 'COMMITTED');
      baseline = [
        `${+baseline[0]! + 10}`,
        `${+baseline[1]! - 10}`,
        `${+baseline[2]! + 26500}`,
        `${+baseline[3]! - 26500}`,
      ];
      await settledBooks(baseline);
    });

    test('an invalid fulfilment or a wrong FSPIOP-Source aborts the conversion (3100)', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = c.payment();
      ok(await c.fxPrepare(p), 201);
      refused(await c.fxAnswer(p, 'RESERVED', F, newCondition().fulfilment), '3100');
      assert.equal(await conversionState(p), 'ABORTED');
      const q = c.payment();
      ok(await c.fxPrepare(q), 201);
      refused(await c.fxAnswer(q, 'RESERVED', S), '3100');
      assert.equal(await conversionState(q), 'ABORTED');
      await settledBooks(baseline);
    });

    test('the FXP withdraws after the dependent transfer was prepared: both aborted in one chain, the books whole', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = c.payment();
      ok(await c.fxPrepare(p), 201);
      ok(await c.fxAnswer(p));
      ok(await c.prepare(p), 201);
      assert.equal(ok(await c.fxError(p)).conversionState, 'ABORTED');
      await settledBooks(baseline);
      const transfer = ok(await c.transferGet(p));
      assert.equal(transfer.transferState, 'ABORTED');
      refused(await c.commit(p), '3100');
      await settledBooks(baseline);
    });

    test('the payee rejects (PUT /transfers/{id}/error): the transfer and its conversion abort together', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const p = c.payment();
      ok(await c.fxPrepare(p), 201);
      ok(await c.fxAnswer(p));
      ok(await c.prepare(p), 201);
      const rejected = ok(await c.reject(p));
      assert.equal(rejected.transferState, 'ABORTED');
      assert.equal(await conversionState(p), 'ABORTED');
      await settledBooks(baseline);
    });

    test("4001 and 4200 on the fx leg (initiating FSP) and on the dependent leg (the FXP's target account, told to the payer)", async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      refused(await c.fxPrepare(c.payment('5000')), '4001');
      // A's liquidity 1000 covers 900 more, its cap of 1000 does not once lowered to 500.
      assert.equal(
        (
          await service.app.inject({
            method: 'PUT',
            url: `/participants/${A}/limits`,
            payload: { currency: 'USD', limit: { type: 'NET_DEBIT_CAP', value: 500 } },
          })
        ).statusCode,
        200,
      );
      refused(await c.fxPrepare(c.payment('450')), '4200');
      assert.equal(
        (
          await service.app.inject({
            method: 'PUT',
            url: `/participants/${A}/limits`,
            payload: { currency: 'USD', limit: { type: 'NET_DEBIT_CAP', value: 1000 } },
          })
        ).statusCode,
        200,
      );
      const p = c.payment('1', '1500000');
      ok(await c.fxPrepare(p), 201);
      ok(await c.fxAnswer(p));
      refused(await c.prepare(p, '1500000'), '4001');
      assert.equal(
        await conversionState(p),
        'RESERVED',
        'the conversion is not touched (as central-ledger)',
      );
      ok(await c.fxError(p));
      await settledBooks(baseline);
    });

    test('expiry before the FXP answers, after it answers (no transfer ever comes), and of the dependent transfer', async (t) => {
      if (service === undefined) return t.skip('backend unavailable');
      const before = c.payment('100', '265000', 1500);
      const after = c.payment('100', '265000', 1500);
      const dependent = c.payment('100', '265000', 3000);
      for (const p of [before, after, dependent]) ok(await c.fxPrepare(p), 201);
      ok(await c.fxAnswer(after));
      ok(await c.fxAnswer(dependent));
      ok(await c.prepare(dependent, '265000', 1500), 201);
      await sweepUntil(async () =>
        (await Promise.all([before, after, dependent].map(conversionState))).every(
          (s) => s === 'ABORTED',
        ),
      );
      const transfer = ok(await c.transferGet(dependent));
      assert.equal(transfer.transferState, 'ABORTED');
      refused(await c.fxAnswer(before), '3303');
      await settledBooks(baseline);
    });
  });
}
