/**
 * The ledger ceiling: raw tigerbeetle-node throughput against the same cluster, with the shape of
 * the service's transfers (pending, then post_pending_transfer of the same amount between the
 * same accounts) in full batches of 8,189 events, between bench-only accounts on a ledger id
 * no currency uses. One client, one request in flight (a client session has one at a time).
 */
import {
  AccountFlags,
  CreateAccountStatus,
  CreateTransferStatus,
  TransferFlags,
  createClient,
  id as tbId,
  type Transfer,
} from 'tigerbeetle-node';

export const BENCH_LEDGER = 9999;
/**
 * TigerBeetle events of one complete transfer in the service (src/ledger/tigerbeetle-chains.ts):
 * the prepare's pending POSITION → CAP, and the commit's post and the payee's receipt.
 */
export const SERVICE_EVENTS_PER_TRANSFER = 3;
const BATCH = 8189;
const ACCOUNTS = 64;

export interface TbCeiling {
  batchSize: number;
  batches: number;
  events: number;
  seconds: number;
  eventsPerS: number;
  /** pending+post pairs per second: one-leg two-phase transfers. */
  pairsPerS: number;
  /**
   * The service spends SERVICE_EVENTS_PER_TRANSFER (3) events per complete transfer: events/s ÷ 3.
   */
  serviceEquivalentTransfersPerS: number;
  failedEvents: number;
  firstFailure?: string;
}

export async function measureTbCeiling(
  clusterId: bigint,
  addresses: string[],
  pairsOfBatches: number,
): Promise<TbCeiling> {
  const client = createClient({ cluster_id: clusterId, replica_addresses: addresses });
  try {
    const accounts = Array.from({ length: ACCOUNTS }, () => tbId());
    const created = await client.createAccounts(
      accounts.map((accountId) => ({
        id: accountId,
        debits_pending: 0n,
        debits_posted: 0n,
        credits_pending: 0n,
        credits_posted: 0n,
        user_data_128: 0n,
        user_data_64: 0n,
        user_data_32: 0,
        reserved: 0,
        ledger: BENCH_LEDGER,
        code: 1,
        flags: AccountFlags.none,
        timestamp: 0n,
      })),
    );
    const badAccount = created.find((r) => r.status !== CreateAccountStatus.created);
    if (badAccount !== undefined)
      throw new Error(`bench account creation failed: ${CreateAccountStatus[badAccount.status]}`);

    let failedEvents = 0;
    let firstFailure: string | undefined;
    const check = (results: { status: CreateTransferStatus }[]): void => {
      for (const r of results) {
        if (r.status !== CreateTransferStatus.created) {
          failedEvents++;
          firstFailure ??= CreateTransferStatus[r.status];
        }
      }
    };
    // One warm-up pair of batches, not timed.
    const run = async (pairs: number): Promise<number> => {
      let events = 0;
      for (let b = 0; b < pairs; b++) {
        const pending: Transfer[] = new Array(BATCH);
        for (let i = 0; i < BATCH; i++) {
          const debit = accounts[i % ACCOUNTS]!;
          const credit = accounts[(i + 1 + (b % (ACCOUNTS - 1))) % ACCOUNTS]!;
          pending[i] = {
            id: tbId(),
            debit_account_id: debit,
            credit_account_id: credit,
            amount: BigInt(1 + (i % 1000)),
            pending_id: 0n,
            user_data_128: 0n,
            user_data_64: 0n,
            user_data_32: 0,
            timeout: 120,
            ledger: BENCH_LEDGER,
            code: 1,
            flags: TransferFlags.pending,
            timestamp: 0n,
          };
        }
        check(await client.createTransfers(pending));
        const posts: Transfer[] = pending.map((p) => ({
          ...p,
          id: tbId(),
          pending_id: p.id,
          timeout: 0,
          flags: TransferFlags.post_pending_transfer,
        }));
        check(await client.createTransfers(posts));
        events += 2 * BATCH;
      }
      return events;
    };
    await run(1);
    failedEvents = 0;
    const started = performance.now();
    const events = await run(pairsOfBatches);
    const seconds = (performance.now() - started) / 1000;
    const eventsPerS = events / seconds;
    return {
      batchSize: BATCH,
      batches: 2 * pairsOfBatches,
      events,
      seconds,
      eventsPerS,
      pairsPerS: eventsPerS / 2,
      serviceEquivalentTransfersPerS: eventsPerS / SERVICE_EVENTS_PER_TRANSFER,
      failedEvents,
      ...(firstFailure === undefined ? {} : { firstFailure }),
    };
  } finally {
    client.destroy();
  }
}
