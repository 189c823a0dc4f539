/**
 * kafkajs 2.2.4 keeps every broker connection's request queue polling for ever: once a request was
 * answered, `scheduleCheckPendingRequests` re-arms a timer of `throttledUntil - now` ms, negative
 * when nothing throttles (so 1 ms), whether or not a request is waiting (kafkajs issue 1556, fix
 * proposed in pull requests 1667 and 1768, unreleased; the project is unmaintained). Every
 * connection used wakes up to a thousand times a second doing nothing: measured here, more than
 * half of an idle service's CPU in Kafka mode (0.045 cores, 0.020 with this mend), and a share of
 * every busy second's.
 *
 * The queue's check is re-armed here only where a request waits (as before: when the throttle
 * ends, or after CHECK_PENDING_REQUESTS_INTERVAL) or a throttle is on. Nothing else waited on that
 * loop: a request is sent at once when it can be (`push`), and one held back is checked again
 * when a request in flight is answered or times out (`checkPendingRequests`), or by the timer
 * armed here when it was held.
 *
 * Only the kafkajs version read for this (package.json pins it) is patched; another is left as it
 * is, and a test fails until this module is looked at again.
 */

/** The kafkajs version whose request queue this module mends. */
export const PATCHED_KAFKAJS_VERSION = '2.2.4';
/** kafkajs's own CHECK_PENDING_REQUESTS_INTERVAL (not exported): a held request's next check. */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

/** The part of kafkajs's RequestQueue (src/network/requestQueue) the patched method uses. */
interface RequestQueueState {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
}

interface RequestQueueClass {
  prototype: RequestQueueState & { scheduleCheckPendingRequests(): void };
}

let patched = false;

/** Whether the installed kafkajs is the version the mends of its internals were read for. */
export function kafkajsIsPatchedVersion(): boolean {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { version } = require('kafkajs/package.json') as { version: string };
  return version === PATCHED_KAFKAJS_VERSION;
}

interface CachedModule {
  exports: unknown;
}

/**
 * Replaces the export of kafkajs's module `module` (a path inside the package) by what `replace`
 * makes of kafkajs's own, for the modules that take it in when they load, which must not have
 * loaded yet (`usedBy`, the module itself by default). Whether the replacement is in place: true
 * again once done; false for another kafkajs version or where it is too late.
 */
export function replaceKafkajsExport<Own>(
  module: string,
  replace: (own: Own) => unknown,
  usedBy = module,
): boolean {
  if (!kafkajsIsPatchedVersion()) return false;
  /* eslint-disable @typescript-eslint/no-require-imports */
  const path = require.resolve(`kafkajs/${module}`);
  const cache = require.cache as Record<string, CachedModule | undefined>;
  if (replaced.has(cache[path]?.exports)) return true;
  if (cache[require.resolve(`kafkajs/${usedBy}`)] !== undefined) return false;
  const replacement = replace(require(path) as Own);
  /* eslint-enable @typescript-eslint/no-require-imports */
  replaced.add(replacement);
  cache[path]!.exports = replacement;
  return true;
}

/** The exports replaceKafkajsExport put in place. */
const replaced = new Set<unknown>();

/**
 * Mends kafkajs's request queue, once per process, before its clients are made (a queue made
 * earlier is mended too: the method is its class's). Whether the installed version was mended.
 */
export function stopKafkajsIdleLoop(): boolean {
  if (patched) return true;
  if (!kafkajsIsPatchedVersion()) return false;
  // kafkajs's internals have no types and no entry point of their own: read by path.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const RequestQueue = require('kafkajs/src/network/requestQueue') as RequestQueueClass;
  RequestQueue.prototype.scheduleCheckPendingRequests = function (this: RequestQueueState) {
    if (this.throttleCheckTimeoutId !== null) return;
    const untilUnthrottled = this.throttledUntil - Date.now();
    if (this.pending.length === 0 && untilUnthrottled <= 0) return;
    const waitMs = untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL_MS;
    this.throttleCheckTimeoutId = setTimeout(() => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    }, waitMs);
  };
  patched = true;
  return true;
}
