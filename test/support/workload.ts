/**
 * The workload every benchmark and the tests that drive the service over HTTP share: participants
 * onboarded through POST /jmeter/participants/create, new transfers (a fresh transferId, a real
 * condition/fulfilment pair from a precomputed pool, a payer/payee pair drawn over the
 * participants, one of a pool of amounts with a real ILP packet) with their FSPIOP and /jmeter
 * bodies and headers, and the books: each transfer recorded in bigint minor units, those whose end
 * the sender did not see reconciled, the committed ones summed per participant, positions read
 * exactly.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { encodeIlpPrepare } from '../../src/domain/shared/ilp';
import { decimalText, parseExactJson } from '../../src/handlers/http/exact-json';
import { call, pool } from './service-process';

export const CURRENCY = 'USD';
/** USD has 2 decimals: amounts are tracked in cents. */
export const SCALE = 2;

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

/**
 * Each participant's position in the benchmark currency, in minor units, read exactly from the
 * JSON number literal central-ledger's API answers (prepared, unfinished transfers included).
 */
export async function positions(
  base: string,
  names: readonly string[],
): Promise<Map<string, bigint>> {
  const result = new Map<string, bigint>();
  for (const name of names) {
    const answer = await call(base, 'GET', `/participants/${name}/positions?currency=${CURRENCY}`);
    const body =
      answer.status === 200 ? (parseExactJson(answer.text) as { value?: unknown }) : undefined;
    if (typeof body?.value !== 'number')
      throw new Error(`positions of ${name}: ${answer.status} ${answer.text}`);
    result.set(name, parseMinor(decimalText(body, 'value')));
  }
  return result;
}

/**
 * `count` participants named `${prefix}p0…`, onboarded through POST /jmeter/participants/create:
 * hub accounts, a settlement model, a net debit cap of 1e9 and liquidity of 1e9 in CURRENCY each.
 */
export async function onboard(base: string, prefix: string, count: number): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}p${i}`);
  for (const name of names) {
    const answer = await call(base, 'POST', '/jmeter/participants/create', {
      name,
      currency: CURRENCY,
    });
    if (answer.status !== 200 || answer.body?.newlyCreated !== true)
      throw new Error(`onboarding ${name} failed: ${answer.status} ${answer.text}`);
  }
  return names;
}

/** What reconcile found: the transfers by outcome, and why those that failed did. */
export interface Reconciled {
  counts: {
    open: number;
    committedLate: number;
    fulfilledNow: number;
    neverArrived: number;
    failed: number;
  };
  failures: string[];
}

/**
 * Transfers whose completion the load generator did not see (in flight at the end of a phase, or
 * refused): asks the service about each. COMMITTED ones become 'committed'; those still RESERVED
 * are fulfilled now; those it never received (3208: written as the load generator closed its
 * connections) go back to 'sent'; the rest become 'failed'.
 */
export async function reconcile(
  base: string,
  workload: Workload,
  open: readonly SentTransfer[],
): Promise<Reconciled> {
  const counts = {
    open: open.length,
    committedLate: 0,
    fulfilledNow: 0,
    neverArrived: 0,
    failed: 0,
  };
  const failures: string[] = [];
  await pool(open, 16, async (t) => {
    const payer = workload.participants[t.payer]!;
    const payee = workload.participants[t.payee]!;
    const got = await call(base, 'GET', `/transfers/${t.id}`, undefined, {
      'fspiop-source': payer,
    });
    if (got.status === 200 && got.body?.transferState === 'COMMITTED') {
      t.state = 'committed';
      counts.committedLate++;
    } else if (got.status === 200 && got.body?.transferState === 'RESERVED') {
      const done = await call(
        base,
        'PUT',
        `/transfers/${t.id}`,
        workload.fulfilBody(t),
        workload.headers(payee, payer),
      );
      if (done.status === 200 && done.body?.transferState === 'COMMITTED') {
        t.state = 'committed';
        counts.fulfilledNow++;
      } else {
        t.state = 'failed';
        counts.failed++;
        failures.push(
          `${t.id}: fulfil after the phase answered ${done.status} ${done.text.slice(0, 200)}`,
        );
      }
    } else if (got.status === 400 && got.body?.errorInformation?.errorCode === '3208') {
      t.state = 'sent';
      counts.neverArrived++;
    } else {
      t.state = 'failed';
      counts.failed++;
      failures.push(`${t.id}: ${got.status} ${got.text.slice(0, 200)}`);
    }
  });
  return { counts, failures };
}

/**
 * Committed transfers folded into sums per participant index (a long run sends too many to keep
 * them all).
 */
export class Books {
  readonly expected = new Map<number, bigint>();
  committed = 0;
  volume = 0n;
  /** A uniform sample of the committed ones (reservoir), for GET /transfers/{id}. */
  readonly sample: SentTransfer[] = [];
  constructor(private readonly sampleSize: number) {}
  add(t: SentTransfer): void {
    this.expected.set(t.payer, (this.expected.get(t.payer) ?? 0n) + t.amount);
    this.expected.set(t.payee, (this.expected.get(t.payee) ?? 0n) - t.amount);
    this.volume += t.amount;
    this.committed++;
    if (this.sample.length < this.sampleSize) this.sample.push(t);
    else {
      const j = Math.floor(Math.random() * this.committed);
      if (j < this.sampleSize) this.sample[j] = t;
    }
  }
}
