/** Retrying with exponential backoff, within explicit bounds. */
import { setTimeout as sleep } from 'node:timers/promises';

export interface Backoff {
  /** The wait after the first failure (ms); it doubles after each later one. */
  initialMs: number;
  /** The most any one wait grows to (ms). */
  maxMs: number;
  /** How long (ms) from the first attempt the work is retried; 0: until it succeeds. */
  timeoutMs: number;
}

/**
 * Runs `attempt` until it succeeds, telling `failed` of each failure and the wait before the next
 * attempt. Rejects with the last failure once `timeoutMs` has passed, or with an AbortError once
 * `signal` is aborted (a service closed while it waits).
 */
export async function retryWithBackoff<T>(
  attempt: () => Promise<T>,
  backoff: Backoff,
  failed: (error: unknown, retryInMs: number) => void,
  signal: AbortSignal,
): Promise<T> {
  const deadline = backoff.timeoutMs === 0 ? Infinity : Date.now() + backoff.timeoutMs;
  for (let waitMs = backoff.initialMs; ; waitMs = Math.min(waitMs * 2, backoff.maxMs)) {
    signal.throwIfAborted();
    try {
      return await attempt();
    } catch (error) {
      const retryInMs = Math.min(waitMs, deadline - Date.now());
      if (retryInMs <= 0) throw error;
      failed(error, retryInMs);
      await sleep(retryInMs, undefined, { signal });
    }
  }
}
