/**
 * A DFSP-side client of the FX flow over any HTTP transport (Fastify inject in-process, fetch to
 * a child service): onboarding of a payer (USD), a payee (TZS) and an FXP (both), and the
 * requests of one payment (fx prepare, the FXP's answer, the dependent transfer, its commit).
 * Shared by the FX scenario suite, the FX crash test and the benchmark.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { encodeIlpPrepare } from '../../src/domain/shared/ilp';

export interface Reply {
  status: number;
  body: any;
}
export type Send = (
  method: 'GET' | 'POST' | 'PUT',
  url: string,
  payload?: Record<string, unknown>,
  headers?: Record<string, string>,
) => Promise<Reply>;

/** A Send over Fastify's in-process `inject` (an empty body answers undefined). */
export function injecting(app: {
  inject(request: {
    method: string;
    url: string;
    payload?: Record<string, unknown>;
    headers: Record<string, string>;
  }): Promise<{ statusCode: number; body: string }>;
}): Send {
  return async (method, url, payload, headers) => {
    const reply = await app.inject({
      method,
      url,
      ...(payload === undefined ? {} : { payload }),
      headers: headers ?? {},
    });
    return {
      status: reply.statusCode,
      body: reply.body.length === 0 ? undefined : JSON.parse(reply.body),
    };
  };
}

export const FX_TYPE = 'application/vnd.interoperability.fxTransfers+json;version=2.0';
export const TRANSFER_TYPE = 'application/vnd.interoperability.transfers+json;version=2.0';

export interface Parties {
  A: string;
  B: string;
  F: string;
  /** A participant of neither payment (USD). */
  S: string;
}

export interface Payment {
  commitRequestId: string;
  transferId: string;
  fx: { fulfilment: string; condition: string };
  transfer: { fulfilment: string; condition: string };
  body: Record<string, unknown>;
  answeredAt: string;
}

export function newCondition(): { fulfilment: string; condition: string } {
  const preimage = randomBytes(32);
  return {
    fulfilment: preimage.toString('base64url'),
    condition: createHash('sha256').update(preimage).digest('base64url'),
  };
}

const later = (ms: number): string => new Date(Date.now() + ms).toISOString();

export function headers(
  source: string,
  destination?: string,
  type = FX_TYPE,
): Record<string, string> {
  return {
    'content-type': type,
    'fspiop-source': source,
    ...(destination === undefined ? {} : { 'fspiop-destination': destination }),
  };
}

export class FxClient {
  constructor(
    readonly send: Send,
    readonly parties: Parties,
  ) {}

  static parties(prefix: string): Parties {
    const [A, B, F, S] = ['fxa', 'fxb', 'fxf', 'fxs'].map((n) => `${n}${prefix}`) as [
      string,
      string,
      string,
      string,
    ];
    return { A, B, F, S };
  }

  /**
   * Hub accounts and settlement models for USD and TZS, then A (USD), B (TZS), F (USD and TZS), S
   * (USD).
   */
  async onboard(hub = true): Promise<void> {
    const { A, B, F, S } = this.parties;
    if (hub) {
      for (const currency of ['USD', 'TZS']) {
        for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT'])
          await this.admin('POST', '/participants/Hub/accounts', { currency, type }, [201, 400]);
        await this.admin(
          'POST',
          '/settlementModels',
          {
            name: `DEFERRED${currency}`,
            settlementGranularity: 'NET',
            settlementInterchange: 'MULTILATERAL',
            settlementDelay: 'DEFERRED',
            currency,
            requireLiquidityCheck: true,
            ledgerAccountType: 'POSITION',
            autoPositionReset: true,
            settlementAccountType: 'SETTLEMENT',
          },
          [201, 400],
        );
      }
    }
    const account = async (
      name: string,
      currency: string,
      cap: string,
      funds: string,
    ): Promise<void> => {
      await this.admin('POST', '/participants', { name, currency });
      await this.admin('POST', `/participants/${name}/initialPositionAndLimits`, {
        currency,
        limit: { type: 'NET_DEBIT_CAP', value: cap },
        initialPosition: 0,
      });
      if (funds === '0') return;
      const accounts = (await this.send('GET', `/participants/${name}/accounts`)).body;
      const settlement = accounts.find(
        (a: any) => a.ledgerAccountType === 'SETTLEMENT' && a.currency === currency,
      ).id;
      await this.admin(
        'POST',
        `/participants/${name}/accounts/${settlement}`,
        {
          transferId: randomUUID(),
          externalReference: 'x',
          action: 'recordFundsIn',
          reason: 'x',
          amount: { amount: funds, currency },
        },
        [202],
      );
    };
    await account(A, 'USD', '1000', '1000');
    await account(B, 'TZS', '1000000', '0');
    await account(F, 'USD', '1000000', '0');
    await account(F, 'TZS', '2000000', '1000000');
    await account(S, 'USD', '1000', '1000');
  }

  private async admin(
    method: 'POST' | 'PUT',
    url: string,
    payload: Record<string, unknown>,
    statuses = [201],
  ): Promise<void> {
    const reply = await this.send(method, url, payload);
    if (!statuses.includes(reply.status))
      throw new Error(`${method} ${url}: ${reply.status} ${JSON.stringify(reply.body)}`);
  }

  async position(name: string, currency: string): Promise<string> {
    return String(
      (await this.send('GET', `/participants/${name}/positions?currency=${currency}`)).body.value,
    );
  }

  /**
   * [A USD, F USD, F TZS, B TZS] reported positions (prepared included, as central-ledger reports
   * them).
   */
  positions(): Promise<string[]> {
    const { A, B, F } = this.parties;
    return Promise.all([
      this.position(A, 'USD'),
      this.position(F, 'USD'),
      this.position(F, 'TZS'),
      this.position(B, 'TZS'),
    ]);
  }

  payment(source = '100', target = '265000', expiresInMs = 60_000): Payment {
    const p = {
      commitRequestId: randomUUID(),
      transferId: randomUUID(),
      fx: newCondition(),
      transfer: newCondition(),
    };
    return {
      ...p,
      answeredAt: new Date().toISOString(),
      body: {
        commitRequestId: p.commitRequestId,
        determiningTransferId: p.transferId,
        initiatingFsp: this.parties.A,
        counterPartyFsp: this.parties.F,
        sourceAmount: { amount: source, currency: 'USD' },
        targetAmount: { amount: target, currency: 'TZS' },
        condition: p.fx.condition,
        expiration: later(expiresInMs),
      },
    };
  }

  fxPrepare(p: Payment, body = p.body, source = this.parties.A): Promise<Reply> {
    return this.send('POST', '/fxTransfers', body, headers(source));
  }

  fxAnswer(
    p: Payment,
    conversionState = 'RESERVED',
    source = this.parties.F,
    fulfilment = p.fx.fulfilment,
  ): Promise<Reply> {
    return this.send(
      'PUT',
      `/fxTransfers/${p.commitRequestId}`,
      { conversionState, fulfilment, completedTimestamp: p.answeredAt },
      headers(source, this.parties.A),
    );
  }

  fxError(p: Payment): Promise<Reply> {
    return this.send(
      'PUT',
      `/fxTransfers/${p.commitRequestId}/error`,
      { errorInformation: { errorCode: '5100', errorDescription: 'FXP withdraws' } },
      headers(this.parties.F, this.parties.A),
    );
  }

  fxGet(p: Payment, source = this.parties.A): Promise<Reply> {
    return this.send('GET', `/fxTransfers/${p.commitRequestId}`, undefined, headers(source));
  }

  transferGet(p: Payment): Promise<Reply> {
    return this.send(
      'GET',
      `/transfers/${p.transferId}`,
      undefined,
      headers(this.parties.A, undefined, TRANSFER_TYPE),
    );
  }

  prepare(p: Payment, amount = '265000', expiresInMs = 60_000): Promise<Reply> {
    const { A, B } = this.parties;
    return this.send(
      'POST',
      '/transfers',
      {
        transferId: p.transferId,
        payerFsp: A,
        payeeFsp: B,
        amount: { amount, currency: 'TZS' },
        condition: p.transfer.condition,
        expiration: later(expiresInMs),
        ilpPacket: encodeIlpPrepare({
          amount: 1n,
          expiresAt: later(60_000),
          executionCondition: p.transfer.condition,
          destination: `g.${B}`,
          data: Buffer.from('{}'),
        }),
      },
      headers(A, undefined, TRANSFER_TYPE),
    );
  }

  commit(p: Payment): Promise<Reply> {
    return this.send(
      'PUT',
      `/transfers/${p.transferId}`,
      {
        transferState: 'COMMITTED',
        fulfilment: p.transfer.fulfilment,
        completedTimestamp: p.answeredAt,
      },
      headers(this.parties.B, this.parties.A, TRANSFER_TYPE),
    );
  }

  reject(p: Payment): Promise<Reply> {
    return this.send(
      'PUT',
      `/transfers/${p.transferId}/error`,
      { errorInformation: { errorCode: '5105', errorDescription: 'payee rejects' } },
      headers(this.parties.B, this.parties.A, TRANSFER_TYPE),
    );
  }
}
