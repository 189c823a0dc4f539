/**
 * The subset of autocannon 9's programmatic API the benchmark uses (the package ships no types).
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface RequestParams {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
    }
    interface Request extends RequestParams {
      /** Called before each send with a copy of the request and the connection's context. */
      setupRequest?: (
        request: RequestParams,
        context: Record<string, unknown>,
      ) => RequestParams | null | undefined;
      onResponse?: (
        status: number,
        body: string,
        context: Record<string, unknown>,
        headers: Record<string, string>,
      ) => void;
      /** Our own tag, carried through autocannon's clone of the request list. */
      kind?: string;
    }
    interface Options {
      url: string;
      connections?: number;
      pipelining?: number;
      duration?: number;
      amount?: number;
      timeout?: number;
      requests?: Request[];
      headers?: Record<string, string>;
      method?: string;
      body?: string;
      initialContext?: Record<string, unknown>;
      excludeErrorStats?: boolean;
    }
    interface Client {
      requestIterator: { currentRequest: Request };
    }
    interface Result {
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      mismatches: number;
      resets: number;
      totalRequests: number;
      totalCompletedRequests: number;
      statusCodeStats: Record<string, { count: number }>;
      latency: { p50: number; p99: number; max: number; average: number };
      requests: { average: number };
    }
    interface Instance extends EventEmitter {
      stop(): void;
      on(
        event: 'response',
        listener: (
          client: Client,
          statusCode: number,
          resBytes: number,
          responseTime: number,
        ) => void,
      ): this;
      on(event: 'reqError', listener: (error: Error) => void): this;
      on(event: 'done', listener: (result: Result) => void): this;
      on(event: string, listener: (...args: unknown[]) => void): this;
    }
  }

  function autocannon(
    options: autocannon.Options,
    callback?: (error: Error | null, result: autocannon.Result) => void,
  ): autocannon.Instance;
  export = autocannon;
}
