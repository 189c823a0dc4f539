/**
 * Races between two instances, run in one process over one store: instance A's writes held on
 * their way to the store, instance B seeing the store as a shared one (MySQL's, with a bound on a
 * write's wait), and the bounds that make B's waits short.
 */
import type { FxTransferRecord, MetadataStore, TransferRecord } from '../../src/ports/metadata';
import { FspiopError } from '../../src/domain/shared/errors';
import { deferred, type Deferred } from './deferred';

/**
 * B's bounds, as if on MySQL: how long after it is asked a write of A's may land, and A's ledger
 * timeout.
 */
export const WRITE_TIMEOUT_MS = 300;
export const REQUEST_TIMEOUT_MS = 300;
/** Long enough for B to have answered, had it not waited. */
export const A_WHILE_MS = 250;

type SaveMethod = 'saveTransfers' | 'saveFxTransfers';
type RecordOf<M extends SaveMethod> = M extends 'saveTransfers' ? TransferRecord : FxTransferRecord;

export interface HeldWrites {
  /** The store as A writes it. */
  view: MetadataStore;
  /** Settles when a held write arrives. */
  reached: Deferred<void>;
  /** Settle it to let the held writes through (or fail them). */
  write: Deferred<void>;
}

/**
 * `store` whose `method` writes holding a record `holds` picks reach it only once `write` settles.
 */
export function holdingWrites<M extends SaveMethod>(
  store: MetadataStore,
  method: M,
  holds: (record: RecordOf<M>) => boolean,
): HeldWrites {
  const [reached, write] = [deferred(), deferred()];
  const view: MetadataStore = new Proxy(store, {
    get(target, key, receiver) {
      if (key !== method) return Reflect.get(target, key, receiver) as unknown;
      const save = (target[method] as (records: readonly RecordOf<M>[]) => Promise<void>).bind(
        target,
      );
      return async (records: readonly RecordOf<M>[]) => {
        if (records.some(holds)) {
          reached.resolve();
          await write.promise;
        }
        return save(records);
      };
    },
  });
  return { view, reached, write };
}

/**
 * `store` as an instance sharing it with others sees it: a write may be on its way for up to
 * `writeTimeoutMs`.
 */
export function sharedView(store: MetadataStore, writeTimeoutMs = WRITE_TIMEOUT_MS): MetadataStore {
  return new Proxy(store, {
    get: (target, key, receiver) =>
      key === 'writeTimeoutMs' ? writeTimeoutMs : (Reflect.get(target, key, receiver) as unknown),
  });
}

export const pause = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));
export const codeOf = (error: unknown): string | undefined =>
  error instanceof FspiopError ? error.code : undefined;
