/**
 * A hub, a DEFERREDNET settlement model and funded participants in a currency (USD unless given),
 * through the admin API (injected or over HTTP), as the Kafka tests need them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

export async function onboard(
  inject: (options: {
    method: 'POST' | 'GET';
    url: string;
    payload?: object;
  }) => Promise<{ statusCode: number; body: string }>,
  names: string[],
  liquidity: string,
  ndc: number,
  currency = 'USD',
): Promise<void> {
  for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT'])
    await inject({
      method: 'POST',
      url: '/participants/Hub/accounts',
      payload: { currency, type },
    });
  await inject({
    method: 'POST',
    url: '/settlementModels',
    payload: {
      name: 'DEFERREDNET',
      settlementGranularity: 'NET',
      settlementInterchange: 'MULTILATERAL',
      settlementDelay: 'DEFERRED',
      currency,
      requireLiquidityCheck: true,
      ledgerAccountType: 'POSITION',
      autoPositionReset: true,
      settlementAccountType: 'SETTLEMENT',
    },
  });
  for (const name of names) {
    assert.equal(
      (await inject({ method: 'POST', url: '/participants', payload: { name, currency } }))
        .statusCode,
      201,
    );
    assert.equal(
      (
        await inject({
          method: 'POST',
          url: `/participants/${name}/initialPositionAndLimits`,
          payload: { currency, limit: { type: 'NET_DEBIT_CAP', value: ndc } },
        })
      ).statusCode,
      201,
    );
    const accounts = JSON.parse(
      (await inject({ method: 'GET', url: `/participants/${name}/accounts` })).body,
    );
    const id = accounts.find(
      (a: { ledgerAccountType: string }) => a.ledgerAccountType === 'SETTLEMENT',
    ).id;
    const funds = await inject({
      method: 'POST',
      url: `/participants/${name}/accounts/${id}`,
      payload: {
        transferId: randomUUID(),
        externalReference: 'r',
        action: 'recordFundsIn',
        reason: 'r',
        amount: { amount: liquidity, currency },
      },
    });
    assert.equal(funds.statusCode, 202);
  }
}
