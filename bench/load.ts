/**
 * The load: the workload's transfers (test/support/workload.ts) as complete two-phase FSPIOP
 * transfers (POST /transfers, then the payee's PUT /transfers/{id} with the fulfilment) or
 * one-request /jmeter/transfers/prepare with fulfil:true, driven by autocannon's programmatic API,
 * with the latencies of each kind of request.
 */
import type autocannon from 'autocannon';
import type { SentTransfer, Workload } from '../test/support/workload';

export type Scenario = 'fspiop' | 'jmeter';

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
