/**
 * A hub operator and its DFSPs over HTTP, for the settlement tests: onboarding, transfers
 * (committed, aborted or left RESERVED), positions read exactly, and the /v2 settlement calls.
 * Talks to a base URL, so the same script drives an in-process service or a child process.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { encodeIlpPrepare } from '../../src/domain/shared/ilp';
import { decimalText, parseExactJson } from '../../src/handlers/http/exact-json';
import { call, type Answer } from './service-process';

export const CURRENCY = 'USD';

export class Hub {
  constructor(
    public base: string,
    readonly run = randomBytes(3).toString('hex'),
  ) {}

  name(short: string): string {
    return `${short.toLowerCase()}${this.run}`;
  }

  async ok(
    method: string,
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Answer> {
    const answer = await call(this.base, method, url, body, headers);
    assert.ok(
      answer.status >= 200 && answer.status < 300,
      `${method} ${url}: ${answer.status} ${answer.text}`,
    );
    return answer;
  }

  /**
   * Hub accounts and a settlement model for the currency (DEFERRED NET unless told GROSS);
   * `defaultModel`: the hub accounts only, the currency left to a model of no currency.
   */
  async onboardHub(
    options: { currency?: string; gross?: boolean; defaultModel?: boolean } = {},
  ): Promise<void> {
    const currency = options.currency ?? CURRENCY;
    for (const type of ['HUB_MULTILATERAL_SETTLEMENT', 'HUB_RECONCILIATION'])
      await this.ok('POST', '/participants/Hub/accounts', { currency, type });
    if (options.defaultModel === true) return;
    await this.ok('POST', '/settlementModels', {
      name: options.gross === true ? `GROSS${currency}` : `DEFERREDNET${currency}`,
      settlementGranularity: options.gross === true ? 'GROSS' : 'NET',
      settlementInterchange: options.gross === true ? 'BILATERAL' : 'MULTILATERAL',
      settlementDelay: options.gross === true ? 'IMMEDIATE' : 'DEFERRED',
      currency,
      requireLiquidityCheck: true,
      ledgerAccountType: 'POSITION',
      autoPositionReset: true,
      settlementAccountType: 'SETTLEMENT',
    });
  }

  async onboard(short: string, ndc: string, funds: string, currency = CURRENCY): Promise<void> {
    const name = this.name(short);
    await this.ok('POST', '/participants', { name, currency });
    await this.ok('POST', `/participants/${name}/initialPositionAndLimits`, {
      currency,
      limit: { type: 'NET_DEBIT_CAP', value: Number(ndc) },
      initialPosition: 0,
    });
    if (funds !== '0') {
      await this.ok(
        'POST',
        `/participants/${name}/accounts/${await this.accountId(short, 'SETTLEMENT', currency)}`,
        {
          transferId: randomUUID(),
          externalReference: 'ref',
          action: 'recordFundsIn',
          reason: 'deposit',
          amount: { amount: funds, currency },
        },
      );
    }
  }

  async accountId(
    short: string,
    type: 'POSITION' | 'SETTLEMENT',
    currency = CURRENCY,
  ): Promise<number> {
    const accounts = (await this.ok('GET', `/participants/${this.name(short)}/accounts`)).body as {
      id: number;
      ledgerAccountType: string;
      currency: string;
    }[];
    return accounts.find((a) => a.ledgerAccountType === type && a.currency === currency)!.id;
  }

  /**
   * Prepares (and then commits or aborts, or leaves RESERVED) a transfer; answers the prepare's
   * status and the transfer id.
   */
  async transfer(
    payer: string,
    payee: string,
    amount: string,
    finish: 'commit' | 'abort' | 'none',
    currency = CURRENCY,
    expiresInMs = 600_000,
  ): Promise<{ status: number; id: string; fulfilment: string; errorCode?: string }> {
    const preimage = randomBytes(32);
    const expiration = new Date(Date.now() + expiresInMs).toISOString();
    const id = randomUUID();
    const [from, to] = [this.name(payer), this.name(payee)];
    const prepared = await call(
      this.base,
      'POST',
      '/transfers',
      {
        transferId: id,
        payerFsp: from,
        payeeFsp: to,
        amount: { amount, currency },
        ilpPacket: encodeIlpPrepare({
          amount: 1n,
          expiresAt: expiration,
          executionCondition: randomBytes(32).toString('base64url'),
          destination: `g.${to}`,
          data: Buffer.from('{}'),
        }),
        condition: createHash('sha256').update(preimage).digest('base64url'),
        expiration,
      },
      { 'fspiop-source': from },
    );
    const fulfilment = preimage.toString('base64url');
    if (prepared.status !== 201 || finish === 'none')
      return {
        status: prepared.status,
        id,
        fulfilment,
        ...(prepared.body?.errorInformation === undefined
          ? {}
          : { errorCode: prepared.body.errorInformation.errorCode }),
      };
    await this.finish(id, payer, payee, finish, fulfilment);
    return { status: prepared.status, id, fulfilment };
  }

  /** Fulfils or rejects a prepared transfer (the fulfilment only matters for a commit). */
  async finish(
    id: string,
    payer: string,
    payee: string,
    finish: 'commit' | 'abort',
    fulfilment: string,
  ): Promise<Answer> {
    // The payee aborts with PUT …/error: a transferState ABORTED changes nothing.
    const [path, body] =
      finish === 'commit'
        ? [
            `/transfers/${id}`,
            {
              transferState: 'COMMITTED',
              fulfilment,
              completedTimestamp: new Date().toISOString(),
            },
          ]
        : [
            `/transfers/${id}/error`,
            { errorInformation: { errorCode: '5104', errorDescription: 'rejected' } },
          ];
    return this.ok('PUT', path, body, {
      'fspiop-source': this.name(payee),
      'fspiop-destination': this.name(payer),
    });
  }

  /** The transfer's state as GET /transfers/{id} answers it to the payer. */
  async transferState(id: string, payer: string): Promise<string> {
    return (
      await this.ok('GET', `/transfers/${id}`, undefined, { 'fspiop-source': this.name(payer) })
    ).body.transferState;
  }

  /**
   * The reported position (prepared transfers included) and the SETTLEMENT account's value, as
   * exact decimal text.
   */
  async position(short: string): Promise<{ position: string; settlement: string }> {
    const answer = await this.ok('GET', `/participants/${this.name(short)}/accounts`);
    const list = parseExactJson(answer.text) as { ledgerAccountType: string; value: number }[];
    const of = (type: string): string =>
      decimalText(list.find((a) => a.ledgerAccountType === type)!, 'value');
    return { position: of('POSITION'), settlement: of('SETTLEMENT') };
  }

  async positions(...shorts: string[]): Promise<string[]> {
    return Promise.all(shorts.map(async (s) => (await this.position(s)).position));
  }

  v2(method: string, url: string, body?: unknown): Promise<Answer> {
    return call(this.base, method, `/v2${url}`, body);
  }

  async openWindowId(): Promise<number> {
    const open = await this.v2('GET', '/settlementWindows?state=OPEN');
    assert.equal(open.status, 200, open.text);
    assert.equal(open.body.length, 1, 'exactly one OPEN window');
    return open.body[0].settlementWindowId as number;
  }

  /** Every account of the settlement to `state`, through PUT /v2/settlements/{id}. */
  async settleAll(settlementId: number, state: string): Promise<Answer> {
    const settlement = (await this.v2('GET', `/settlements/${settlementId}`)).body;
    const participants = settlement.participants.map(
      (p: { id: number; accounts: { id: number }[] }) => ({
        id: p.id,
        accounts: p.accounts.map((a) => ({ id: a.id, state, reason: `to ${state}` })),
      }),
    );
    const answer = await this.v2('PUT', `/settlements/${settlementId}`, { participants });
    assert.equal(answer.status, 200, answer.text);
    for (const p of answer.body.participants)
      for (const a of p.accounts) assert.equal(a.errorInformation, undefined, JSON.stringify(a));
    return answer;
  }
}

/** The FSPIOP error code of an answer. */
export function errorCode(answer: Answer): string | undefined {
  return answer.body?.errorInformation?.errorCode;
}
