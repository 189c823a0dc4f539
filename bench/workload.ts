/**
 * The load: complete two-phase FSPIOP transfers (POST /transfers, then the payee's PUT
 * /transfers/{id} with the fulfilment) or one-request /jmeter/transfers/prepare with fulfil:true,
 * driven by autocannon's programmatic API. Every request body is new: a fresh transferId, a real
 * condition/fulfilment pair from a precomputed pool, a payer/payee pair drawn over all the bench
 * participants, one of a pool of amounts with a real ILP packet. Every transfer sent is recorded
 * (amount per payer and payee in bigint minor units) so the books can be checked afterwards.
 */
import type autocannon from 'autocannon';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { encodeIlpPrepare } from '../src/domain/shared/ilp';

export const CURRENCY = 'USD';
/** USD has 2 decimals: amounts are tracked in cents. */
export const SCALE = 2;

export type Scenario = 'fspiop' | 'jmeter';

/** One transfer the load sent, and what became of it as far as the load generator saw. */
export interface SentTransfer {
  id: string;
  payer: number;
  payee: number;
  amount: bigint;
  amountText: string;
  fulfilment: string;
  /** 'sent' → 'reserved' (prepare answered RESERVED) → 'committed'; 'failed' when refused. */
  state: 'sent' | 'reserved' | 'committed' | 'failed';
}

interface AmountEntry {
  minor: bigint;
  text: string;
  ilpPacket: string;
}

/** Cached clock strings, refreshed every 200 ms rather than computed per request. */
class Clock {
  nowIso = '';
  expirationIso = '';
  httpDate = '';
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly expirySeconds: number) {
    this.tick();
    this.timer = setInterval(() => this.tick(), 200);
    this.timer.unref();
  }
  private tick(): void {
    const now = new Date();
    this.nowIso = now.toISOString();
    this.httpDate = now.toUTCString();
    this.expirationIso = new Date(now.getTime() + this.expirySeconds * 1000).toISOString();
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

export function formatMinor(minor: bigint): string {
  const negative = minor < 0n;
  const digits = (negative ? -minor : minor).toString().padStart(SCALE + 1, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -SCALE)}.${digits.slice(-SCALE)}`;
}

/** A decimal string as the service formats it ("12.5", "-3", "0") → minor units. */
export function parseMinor(text: string): bigint {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null || (match[3] ?? '').length > SCALE)
    throw new Error(`not a ${SCALE}-decimal amount: ${text}`);
  const minor = BigInt(match[2]! + (match[3] ?? '').padEnd(SCALE, '0'));
  return match[1] === '-' ? -minor : minor;
}

export class Workload {
  /** Every transfer sent, by id (only while tracking). */
  readonly sent = new Map<string, SentTransfer>();
  private readonly amounts: AmountEntry[] = [];
  private readonly conditions: { fulfilment: string; condition: string }[] = [];
  private readonly clock: Clock;
  private nextCondition = 0;

  constructor(
    readonly participants: readonly string[],
    /**
     * expirySeconds: how far ahead each prepare's expiration lies (120 s unless a test needs
     * transfers to expire).
     */
    options: { conditionPool: number; amountPool: number; expirySeconds?: number },
  ) {
    if (participants.length < 2) throw new Error('need at least two participants');
    this.clock = new Clock(options.expirySeconds ?? 120);
    for (let i = 0; i < options.conditionPool; i++) {
      const preimage = randomBytes(32);
      this.conditions.push({
        fulfilment: preimage.toString('base64url'),
        condition: createHash('sha256').update(preimage).digest('base64url'),
      });
    }
    for (let i = 0; i < options.amountPool; i++) {
      // 1.00 to 500.00 with cents: sums are exact only in bigint, which is the point.
      const minor = 100n + BigInt(Math.floor(Math.random() * 49_900));
      const text = formatMinor(minor);
      this.amounts.push({
        minor,
        text,
        ilpPacket: ilpPacketFor(
          text,
          participants[i % participants.length]!,
          participants[(i + 1) % participants.length]!,
        ),
      });
    }
  }

  /** A new transfer between two different participants, chosen uniformly. */
  next(track: boolean): { transfer: SentTransfer; condition: string; ilpPacket: string } {
    const n = this.participants.length;
    const payer = Math.floor(Math.random() * n);
    const payee = (payer + 1 + Math.floor(Math.random() * (n - 1))) % n;
    const amount = this.amounts[Math.floor(Math.random() * this.amounts.length)]!;
    const pair = this.conditions[this.nextCondition++ % this.conditions.length]!;
    const transfer: SentTransfer = {
      id: randomUUID(),
      payer,
      payee,
      amount: amount.minor,
      amountText: amount.text,
      fulfilment: pair.fulfilment,
      state: 'sent',
    };
    if (track) this.sent.set(transfer.id, transfer);
    return { transfer, condition: pair.condition, ilpPacket: amount.ilpPacket };
  }

  prepareBody(t: SentTransfer, condition: string, ilpPacket: string, jmeter: boolean): string {
    const base =
      `{"transferId":"${t.id}","payerFsp":"${this.participants[t.payer]}","payeeFsp":"${this.participants[t.payee]}",` +
      `"amount":{"amount":"${t.amountText}","currency":"${CURRENCY}"},"ilpPacket":"${ilpPacket}","condition":"${condition}",` +
      `"expiration":"${this.clock.expirationIso}"`;
    return jmeter ? `${base},"fulfil":true,"fulfilment":"${t.fulfilment}"}` : `${base}}`;
  }

  fulfilBody(t: SentTransfer): string {
    return `{"transferState":"COMMITTED","fulfilment":"${t.fulfilment}","completedTimestamp":"${this.clock.nowIso}"}`;
  }

  /** FSPIOP headers as ml-api-adapter forwards them. */
  headers(source: string, destination: string): Record<string, string> {
    return {
      'content-type': 'application/vnd.interoperability.transfers+json;version=1.1',
      accept: 'application/vnd.interoperability.transfers+json;version=1.1',
      date: this.clock.httpDate,
      'fspiop-source': source,
      'fspiop-destination': destination,
    };
  }

  stop(): void {
    this.clock.stop();
  }
}

/** A realistic ILP Prepare: the transaction object Mojaloop's quoting service puts in it. */
function ilpPacketFor(amount: string, payer: string, payee: string): string {
  const transaction = {
    transactionId: randomUUID(),
    quoteId: randomUUID(),
    payee: { partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '27713803912', fspId: payee } },
    payer: {
      partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: '44123456789', fspId: payer },
      personalInfo: { complexName: { firstName: 'Mats', lastName: 'Hagman' } },
    },
    amount: { amount, currency: CURRENCY },
    transactionType: { scenario: 'TRANSFER', initiator: 'PAYER', initiatorType: 'CONSUMER' },
  };
  return encodeIlpPrepare({
    amount: BigInt(Math.round(Number(amount) * 100)),
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    executionCondition: randomBytes(32).toString('base64url'),
    destination: `g.tz.${payee}.msisdn.27713803912`,
    data: Buffer.from(Buffer.from(JSON.stringify(transaction)).toString('base64url')),
  });
}

/** autocannon, loaded on first use so that a missing devDependency says what to do. */
function loadAutocannon(): typeof autocannon {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('autocannon') as typeof autocannon;
  } catch (error) {
    throw new Error(
      `autocannon is not installed: npm install (it is a devDependency) or npm install --no-save autocannon@9 (${(error as Error).message.split('\n')[0]})`,
    );
  }
}

export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function summarise(values: number[]): LatencySummary {
  if (values.length === 0) return { count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0 };
  const sorted = Float64Array.from(values).sort();
  const at = (q: number): number =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    max: sorted[sorted.length - 1]!,
    mean: sum / sorted.length,
  };
}

export interface LoadResult {
  scenario: Scenario;
  target: 'service' | 'noop';
  connections: number;
  durationS: number;
  requests: number;
  /**
   * Complete transfers: fulfils answered COMMITTED (fspiop) or jmeter prepares answered COMMITTED.
   */
  transfers: number;
  non2xx: number;
  /** 2xx whose body did not carry the expected state. */
  unexpected: number;
  errors: number;
  timeouts: number;
  /** complete: from sending a transfer's first request to its COMMITTED answer. */
  latency: {
    all: LatencySummary;
    prepare: LatencySummary;
    fulfil: LatencySummary;
    complete: LatencySummary;
  };
  statusCodes: Record<string, number>;
  /** A few answers that were not the expected success, for the report. */
  errorSamples: string[];
}

/**
 * Drives `connections` connections for `durationS` seconds. fspiop: each connection loops
 * prepare → fulfil of a new transfer; jmeter: one request per transfer.
 */
export function drive(options: {
  url: string;
  scenario: Scenario;
  target: 'service' | 'noop';
  connections: number;
  durationS: number;
  workload: Workload;
  track: boolean;
}): Promise<LoadResult> {
  const { workload, scenario, track } = options;
  const latencies: Record<'prepare' | 'fulfil', number[]> = { prepare: [], fulfil: [] };
  const all: number[] = [];
  const complete: number[] = [];
  let transfers = 0;
  let unexpected = 0;
  const errorSamples = new Set<string>();
  const noteError = (status: number, body: string): void => {
    if (errorSamples.size < 5) errorSamples.add(`${status} ${body.slice(0, 300)}`);
  };

  /**
   * An answer's effect: the expected status and state move the transfer on (to 'reserved', or to
   * 'committed': a complete transfer, timed from its first request); anything else is counted and
   * sampled, and a refusal (not 2xx) marks the transfer 'failed' when `refusalFails`.
   */
  const answered = (
    okStatus: number,
    okState: 'RESERVED' | 'COMMITTED',
    refusalFails: boolean,
  ): NonNullable<autocannon.Request['onResponse']> => {
    const marker = `"${okState}"`;
    return (status, body, context) => {
      const t = context['t'] as SentTransfer;
      if (status === okStatus && body.includes(marker)) {
        if (okState === 'RESERVED') t.state = 'reserved';
        else {
          t.state = 'committed';
          transfers++;
          complete.push(performance.now() - (context['t0'] as number));
        }
      } else {
        if (status >= 200 && status < 300) unexpected++;
        else if (refusalFails) t.state = 'failed';
        noteError(status, body);
      }
    };
  };
  /**
   * A transfer's first request: POST /transfers, or with `jmeter` the one-request /jmeter prepare
   * with fulfil:true.
   */
  const prepare = (jmeter: boolean): autocannon.Request => ({
    kind: 'prepare',
    method: 'POST',
    path: jmeter ? '/jmeter/transfers/prepare' : '/transfers',
    setupRequest: (request, context) => {
      const { transfer, condition, ilpPacket } = workload.next(track);
      context['t'] = transfer;
      context['t0'] = performance.now();
      request.headers = workload.headers(
        workload.participants[transfer.payer]!,
        workload.participants[transfer.payee]!,
      );
      if (jmeter) request.headers['content-type'] = 'application/json';
      request.body = workload.prepareBody(transfer, condition, ilpPacket, jmeter);
      return request;
    },
    onResponse: jmeter ? answered(201, 'COMMITTED', true) : answered(201, 'RESERVED', true),
  });
  const requests: autocannon.Request[] =
    scenario === 'fspiop'
      ? [
          prepare(false),
          {
            kind: 'fulfil',
            method: 'PUT',
            setupRequest: (request, context) => {
              const t = context['t'] as SentTransfer;
              request.path = `/transfers/${t.id}`;
              request.headers = workload.headers(
                workload.participants[t.payee]!,
                workload.participants[t.payer]!,
              );
              request.body = workload.fulfilBody(t);
              return request;
            },
            // A refused fulfil leaves the transfer as it was (reserved): the reconciliation sees to
            // it.
            onResponse: answered(200, 'COMMITTED', false),
          },
        ]
      : [prepare(true)];

  return new Promise((resolve, reject) => {
    const instance = loadAutocannon()(
      {
        url: options.url,
        connections: options.connections,
        pipelining: 1,
        duration: options.durationS,
        timeout: 10,
        requests,
      },
      (error, result) => {
        if (error !== null) return reject(error);
        const statusCodes: Record<string, number> = {};
        for (const [code, { count }] of Object.entries(result.statusCodeStats))
          statusCodes[code] = count;
        resolve({
          scenario: options.scenario,
          target: options.target,
          connections: options.connections,
          durationS: result.duration,
          requests: all.length,
          transfers,
          non2xx: result.non2xx,
          unexpected,
          errors: result.errors,
          timeouts: result.timeouts,
          latency: {
            all: summarise(all),
            prepare: summarise(latencies.prepare),
            fulfil: summarise(latencies.fulfil),
            complete: summarise(complete),
          },
          statusCodes,
          errorSamples: [...errorSamples],
        });
      },
    );
    instance.on('response', (client, _status, _bytes, responseTime) => {
      // With pipelining 1 the client's current request is the one just answered.
      const kind = client.requestIterator.currentRequest.kind === 'fulfil' ? 'fulfil' : 'prepare';
      latencies[kind].push(responseTime);
      all.push(responseTime);
    });
  });
}
