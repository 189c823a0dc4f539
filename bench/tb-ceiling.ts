/**
 * The ledger ceiling: raw tigerbeetle-node throughput against the same cluster, with the shape of
 * the service's transfers (pending, then post_pending_transfer of the same amount between the
 * same accounts) in full batches of 8,189 events, between bench-only accounts on a ledger id
 * no currency uses. One client, one request in flight (a client session has one at a time).
 */
import { randomBytes } from 'node:crypto';
import {
  AccountFlags,
  CreateAccountStatus,
  CreateTransferStatus,
  TransferFlags,
  createClient,
  id as tbId,
  type Account,
  type Transfer,
} from 'tigerbeetle-node';
import { cpuSecondsOf, machineCpuSeconds, selfCpuSeconds } from './procstat';

export const BENCH_LEDGER = 9999;
/**
 * TigerBeetle events of one complete transfer in the service (src/ledger/tigerbeetle.ts): the
 * prepare's chain (sweep, pending POSITION, sweep, pending NDC) and the commit's (post of each,
 * the two settlement-window legs).
 */
export const SERVICE_EVENTS_PER_TRANSFER = 8;
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
   * The service spends SERVICE_EVENTS_PER_TRANSFER (8) events per complete transfer: events/s ÷ 8.
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

// ---------------------------------------------------------------------------------------------
// Event shapes: what fewer TigerBeetle events per transfer would save, measured on the replicas

/**
 * Events per complete transfer (prepare chain + commit chain). Today's service is '8, random ids':
 * its ids are derived by hashing (the transfer's UUID): uniformly random 128-bit. The others use
 * time-ordered ids (tigerbeetle-node's `id()`, what TigerBeetle recommends), to tell the cost of
 * the events from the cost of their ids' order.
 */
export type ShapeName =
  | '8, random ids (today)'
  | '8, random pending and post ids'
  | '8, ordered NDC sweep and window legs'
  | '8, ordered window legs'
  | '8'
  | '6, random ids (no window legs)'
  | '6, random ids (cap checked on the credit side)'
  | '5, random ids (one limit account, gate)'
  | '7, random ids, a marker for the sweeps'
  | '6, random ids, no sweeps'
  | '4, random ids'
  | '4'
  | '3, random ids'
  | '3'
  | '2';
export const SHAPES: readonly ShapeName[] = [
  '7, random ids, a marker for the sweeps',
  '6, random ids, no sweeps',
  '4, random ids',
  '8, random ids (today)',
  '8, random pending and post ids',
  '8, ordered NDC sweep and window legs',
  '8, ordered window legs',
  '8',
  '6, random ids (no window legs)',
  '6, random ids (cap checked on the credit side)',
  '5, random ids (one limit account, gate)',
  '4',
  '3, random ids',
  '3',
  '2',
];
const TODAY: ShapeName = '8, random ids (today)';
/**
 * Every check of today's 8 on one ledger: a prepare is one pending transfer from the payer's
 * POSITION (debits ≤ credits: liquidity) to its CAP account (credits ≤ debits: the cap's headroom),
 * after the two debts' sweeps; a commit posts it and moves the payee's headroom back through the
 * payer's and payee's window accounts (payer window → payee POSITION, payee CAP → payee window),
 * which a window's close closes.
 */
const CREDIT_SIDE_CAP: ShapeName = '6, random ids (cap checked on the credit side)';
/** Shape 3's one limit account and its sweep, with today's two window legs through the gate. */
const LIMIT_WITH_GATE: ShapeName = '5, random ids (one limit account, gate)';
/**
 * Today's chains with the prepare's two sweeps replaced by one zero-amount transfer from an
 * account of the payer's (a debt would close it, sending that payer's prepares back to the
 * sweeps), window legs time-ordered: what the sweeps cost, and what a marker would save.
 */
const MARKER: ShapeName = '7, random ids, a marker for the sweeps';
/** Today's chains without the sweeps (window legs time-ordered): the floor of dropping them. */
const NO_SWEEPS: ShapeName = '6, random ids, no sweeps';

const randomId = (): bigint => BigInt(`0x${randomBytes(16).toString('hex')}`);
const idsOf = (shape: ShapeName): (() => bigint) =>
  shape.includes('random ids') ? randomId : tbId;
/**
 * Today's 8 events with ids that need not be derived from the transfer's (the sweeps, the window
 * legs: a retry of their chain fails at the pending or post it is linked to) time-ordered; the
 * pendings and posts random, as ids derived from a random UUID are.
 */
const HALF_RANDOM: ShapeName = '8, random pending and post ids';
/**
 * As HALF_RANDOM but for the first sweep, which keeps a derived (random) id: it is the event that
 * meets a deactivated payer, and its refusal must poison an id a retry would use again.
 */
const ORDERED_LEGS: ShapeName = '8, ordered NDC sweep and window legs';
/** Only the commit's two window legs time-ordered: the prepare's chain as today's. */
const ORDERED_WINDOW_LEGS: ShapeName = '8, ordered window legs';
/** The id of a sweep or window leg in `shape` (`first`: the prepare's first sweep). */
const freeIdOf = (shape: ShapeName, first = false): (() => bigint) =>
  shape === HALF_RANDOM || shape === ORDERED_WINDOW_LEGS || (shape === ORDERED_LEGS && !first)
    ? tbId
    : idsOf(shape);
const eventsOf = (shape: ShapeName): number => Number.parseInt(shape, 10);

export interface ShapeResult {
  shape: ShapeName;
  eventsPerTransfer: number;
  /** As asked: commands per request, or 0 for as many as fit 8,189 events. */
  size: number;
  /**
   * Ledger commands per request: half prepares, half commits (of the previous request's prepares).
   */
  commandsPerRequest: number;
  eventsPerRequest: number;
  requests: number;
  transfers: number;
  seconds: number;
  eventsPerS: number;
  transfersPerS: number;
  /** The three replicas' CPU (user + system) per request and per complete transfer, in ms. */
  replicaMsPerRequest: number;
  replicaMsPerTransfer: number;
  /**
   * The machine's busy cores meanwhile that are neither the replicas nor this process: the noise.
   */
  otherCores: number;
  failedEvents: number;
  firstFailure?: string;
}

const SHAPE_PARTICIPANTS = 8;
const [MONEY, LIMIT, WINDOW] = [9001, 9002, 9003];
const AMOUNT_MAX = (1n << 128n) - 1n;

interface Participant {
  settlement: bigint;
  position: bigint;
  ndc: bigint;
  debt: bigint;
  ndcDebt: bigint;
  window: bigint;
  cap: bigint;
  capDebt: bigint;
  moneyWindow: bigint;
}

function account(id: bigint, ledger: number, flags: number): Account {
  return {
    id,
    debits_pending: 0n,
    debits_posted: 0n,
    credits_pending: 0n,
    credits_posted: 0n,
    user_data_128: 0n,
    user_data_64: 0n,
    user_data_32: 0,
    reserved: 0,
    ledger,
    code: 1,
    flags,
    timestamp: 0n,
  };
}

function event(
  id: bigint,
  debit: bigint,
  credit: bigint,
  amount: bigint,
  ledger: number,
  flags: number,
  pendingId = 0n,
  timeout = 0,
): Transfer {
  return {
    id,
    debit_account_id: debit,
    credit_account_id: credit,
    amount,
    pending_id: pendingId,
    user_data_128: 0n,
    user_data_64: 0n,
    user_data_32: 0,
    timeout,
    ledger,
    code: 1,
    flags,
    timestamp: 0n,
  };
}

/** Links every event of a chain to the next (the last closes it). */
function linked(chain: Transfer[]): Transfer[] {
  for (let i = 0; i < chain.length - 1; i++) chain[i]!.flags |= TransferFlags.linked;
  return chain;
}

/**
 * The chains of one transfer in each shape, built as the service builds them
 * (src/ledger/tigerbeetle.ts):
 * 8 = prepare [sweep POSITION→DEBT, pending POSITION, sweep NDC→NDC_DEBT, pending NDC] +
 * commit [post POSITION, post NDC, window in, window out]; 4 = the two pending legs and their
 * posts; 3 = the fewest that keep every check in the ledger (bench/README "What fewer events
 * would take"): a sweep of the payer's debt and one pending transfer on an account holding both
 * limits, then its post; 2 = one pending transfer and its post; 6 = today's less the window legs
 * (or less the sweeps); 5 = shape 3 with today's window legs; 7 = today's with one marker event
 * for the two sweeps; '4, random ids' = today's less both the sweeps and the window legs.
 */
function prepareChain(
  shape: ShapeName,
  payer: Participant,
  payee: Participant,
  amount: bigint,
): Transfer[] {
  const id = idsOf(shape);
  const balancing = TransferFlags.balancing_debit | TransferFlags.balancing_credit;
  if (shape === CREDIT_SIDE_CAP) {
    return linked([
      event(id(), payer.position, payer.debt, AMOUNT_MAX, MONEY, balancing),
      event(id(), payer.capDebt, payer.cap, AMOUNT_MAX, MONEY, balancing),
      event(id(), payer.position, payer.cap, amount, MONEY, TransferFlags.pending, 0n, 120),
    ]);
  }
  const position = event(
    id(),
    payer.position,
    payee.position,
    amount,
    MONEY,
    TransferFlags.pending,
    0n,
    120,
  );
  if (shape === '2') return [position];
  if (shape.startsWith('3') || shape === LIMIT_WITH_GATE)
    return linked([
      event(
        id(),
        payer.position,
        payer.debt,
        AMOUNT_MAX,
        MONEY,
        TransferFlags.balancing_debit | TransferFlags.balancing_credit,
      ),
      position,
    ]);
  const ndc = event(id(), payer.ndc, payee.ndc, amount, LIMIT, TransferFlags.pending, 0n, 120);
  if (shape.startsWith('4') || shape === NO_SWEEPS) return linked([position, ndc]);
  if (shape === MARKER)
    return linked([
      event(id(), payer.moneyWindow, payer.settlement, 0n, MONEY, TransferFlags.none),
      position,
      ndc,
    ]);
  const sweep = (from: bigint, debt: bigint, ledger: number, first: boolean): Transfer =>
    event(
      (shape === ORDERED_WINDOW_LEGS ? id : freeIdOf(shape, first))(),
      from,
      debt,
      AMOUNT_MAX,
      ledger,
      TransferFlags.balancing_debit | TransferFlags.balancing_credit,
    );
  return linked([
    sweep(payer.position, payer.debt, MONEY, true),
    position,
    sweep(payer.ndc, payer.ndcDebt, LIMIT, false),
    ndc,
  ]);
}

function commitChain(
  shape: ShapeName,
  prepare: Transfer[],
  payer: Participant,
  payee: Participant,
  gate: bigint,
): Transfer[] {
  const pendings = prepare.filter((t) => (t.flags & TransferFlags.pending) !== 0);
  const id = idsOf(shape);
  const posts = pendings.map((p) =>
    event(
      id(),
      p.debit_account_id,
      p.credit_account_id,
      p.amount,
      p.ledger,
      TransferFlags.post_pending_transfer,
      p.id,
    ),
  );
  const amount = pendings[0]!.amount;
  if (shape === CREDIT_SIDE_CAP)
    return linked([
      ...posts,
      event(id(), payer.moneyWindow, payee.position, amount, MONEY, TransferFlags.none),
      event(id(), payee.cap, payee.moneyWindow, amount, MONEY, TransferFlags.none),
    ]);
  const orderedLegs = shape === MARKER || shape === NO_SWEEPS;
  if (eventsOf(shape) !== 8 && shape !== LIMIT_WITH_GATE && !orderedLegs) return linked(posts);
  const legId = orderedLegs ? tbId : freeIdOf(shape);
  return linked([
    ...posts,
    event(legId(), payer.window, gate, amount, WINDOW, TransferFlags.none),
    event(legId(), gate, payee.window, amount, WINDOW, TransferFlags.none),
  ]);
}

/**
 * Replica CPU per request and per complete transfer for each shape at each request size, one
 * client and one request in flight (as the service's default). Every request holds
 * `commandsPerRequest / 2` new prepares and the commits of the previous request's prepares.
 * `commandsPerRequest` of 0 means as many as fit TigerBeetle's 8,189 events.
 */
export async function measureShapes(
  clusterId: bigint,
  addresses: string[],
  replicaPids: readonly number[],
  sizes: readonly number[],
  secondsEach: number,
  rounds = 1,
  progress?: (result: ShapeResult, round: number) => void,
  shapes: readonly ShapeName[] = SHAPES,
): Promise<ShapeResult[]> {
  const client = createClient({ cluster_id: clusterId, replica_addresses: addresses });
  try {
    const participants: Participant[] = Array.from({ length: SHAPE_PARTICIPANTS }, () => ({
      settlement: tbId(),
      position: tbId(),
      ndc: tbId(),
      debt: tbId(),
      ndcDebt: tbId(),
      window: tbId(),
      cap: tbId(),
      capDebt: tbId(),
      moneyWindow: tbId(),
    }));
    const [hubNdc, gate, hubCap] = [tbId(), tbId(), tbId()];
    const accounts = [
      account(hubNdc, LIMIT, AccountFlags.none),
      account(gate, WINDOW, AccountFlags.none),
      account(hubCap, MONEY, AccountFlags.none),
    ];
    for (const p of participants) {
      accounts.push(
        account(p.settlement, MONEY, AccountFlags.none),
        account(p.position, MONEY, AccountFlags.debits_must_not_exceed_credits),
        account(p.ndc, LIMIT, AccountFlags.debits_must_not_exceed_credits),
        account(p.debt, MONEY, AccountFlags.credits_must_not_exceed_debits),
        account(p.ndcDebt, LIMIT, AccountFlags.credits_must_not_exceed_debits),
        account(p.window, WINDOW, AccountFlags.none),
        account(p.cap, MONEY, AccountFlags.credits_must_not_exceed_debits),
        account(p.capDebt, MONEY, AccountFlags.debits_must_not_exceed_credits),
        account(p.moneyWindow, MONEY, AccountFlags.none),
      );
    }
    const bad = (await client.createAccounts(accounts)).find(
      (r) => r.status !== CreateAccountStatus.created,
    );
    if (bad !== undefined) throw new Error(`shape accounts: ${CreateAccountStatus[bad.status]}`);
    // Liquidity and cap large enough for any run: the liquidity check stays on
    // (debits_must_not_exceed_credits).
    const funding = participants.flatMap((p) => [
      event(tbId(), p.settlement, p.position, 10n ** 15n, MONEY, TransferFlags.none),
      event(tbId(), hubNdc, p.ndc, 10n ** 15n, LIMIT, TransferFlags.none),
      event(tbId(), p.cap, hubCap, 10n ** 15n, MONEY, TransferFlags.none),
    ]);
    const badFunding = (await client.createTransfers(funding)).find(
      (r) => r.status !== CreateTransferStatus.created,
    );
    if (badFunding !== undefined)
      throw new Error(`shape funding: ${CreateTransferStatus[badFunding.status]}`);

    const results: ShapeResult[] = [];
    // Rounds interleave the shapes, so that a busy minute of the machine spoils all of them alike.
    for (let round = 0; round < rounds; round++)
      for (const size of sizes) {
        for (const shape of shapes) {
          const eventsPerTransfer = eventsOf(shape);
          // Half the events of a request are prepares, half commits: whole transfers of each.
          const perHalf = size > 0 ? size / 2 : Math.floor(TIGERBEETLE_BATCH / eventsPerTransfer);
          if (!Number.isInteger(perHalf) || perHalf < 1)
            throw new Error(`commands per request must be even and positive: ${size}`);
          const result: ShapeResult = {
            size,
            ...(await measureShape(
              client,
              shape,
              eventsPerTransfer,
              perHalf,
              participants,
              gate,
              replicaPids,
              secondsEach,
            )),
          };
          progress?.(result, round);
          results.push(result);
        }
      }
    return results;
  } finally {
    client.destroy();
  }
}

const TIGERBEETLE_BATCH = 8189;
const MIN_REQUESTS = 20;

async function measureShape(
  client: ReturnType<typeof createClient>,
  shape: ShapeName,
  eventsPerTransfer: number,
  perHalf: number,
  participants: Participant[],
  gate: bigint,
  replicaPids: readonly number[],
  secondsEach: number,
): Promise<Omit<ShapeResult, 'size'>> {
  let failedEvents = 0;
  let firstFailure: string | undefined;
  let pending: { chain: Transfer[]; payer: Participant; payee: Participant }[] = [];
  let sequence = 0;
  const request = async (): Promise<{ events: number; transfers: number }> => {
    const prepares = Array.from({ length: perHalf }, () => {
      const payer = participants[sequence % SHAPE_PARTICIPANTS]!;
      const payee =
        participants[
          (sequence + 1 + (Math.floor(sequence / SHAPE_PARTICIPANTS) % (SHAPE_PARTICIPANTS - 1))) %
            SHAPE_PARTICIPANTS
        ]!;
      sequence++;
      return {
        chain: prepareChain(shape, payer, payee, BigInt(100 + (sequence % 50_000))),
        payer,
        payee,
      };
    });
    const commits = pending.map((p) => commitChain(shape, p.chain, p.payer, p.payee, gate));
    const events = [...commits.flat(), ...prepares.flatMap((p) => p.chain)];
    for (const r of await client.createTransfers(events)) {
      if (r.status === CreateTransferStatus.created) continue;
      failedEvents++;
      firstFailure ??= CreateTransferStatus[r.status];
    }
    const transfers = pending.length;
    pending = prepares;
    return { events: events.length, transfers };
  };
  // Warm-up (untimed): one request fills the pipeline of prepares.
  await request();
  const cpu0 = cpuSecondsOf(replicaPids);
  const [machine0, self0] = [machineCpuSeconds().busy, selfCpuSeconds()];
  const started = performance.now();
  let requests = 0;
  let events = 0;
  let transfers = 0;
  // At least MIN_REQUESTS, so that a slow disk (fdatasync) does not leave a row of two requests.
  while (
    performance.now() - started < secondsEach * 1000 ||
    (requests < MIN_REQUESTS && performance.now() - started < 5 * secondsEach * 1000)
  ) {
    const done = await request();
    requests++;
    events += done.events;
    transfers += done.transfers;
  }
  const seconds = (performance.now() - started) / 1000;
  const replicaMs = (cpuSecondsOf(replicaPids) - cpu0) * 1000;
  const otherCores =
    Math.max(
      0,
      machineCpuSeconds().busy - machine0 - (selfCpuSeconds() - self0) - replicaMs / 1000,
    ) / seconds;
  // Finish the last prepares so that nothing stays pending.
  const last = pending.map((p) => commitChain(shape, p.chain, p.payer, p.payee, gate)).flat();
  if (last.length > 0)
    for (const r of await client.createTransfers(last))
      failedEvents += r.status === CreateTransferStatus.created ? 0 : 1;
  return {
    shape,
    eventsPerTransfer,
    commandsPerRequest: 2 * perHalf,
    eventsPerRequest: Math.round(events / requests),
    requests,
    transfers,
    seconds,
    eventsPerS: events / seconds,
    transfersPerS: transfers / seconds,
    replicaMsPerRequest: replicaMs / requests,
    replicaMsPerTransfer: replicaMs / transfers,
    otherCores,
    failedEvents,
    ...(firstFailure === undefined ? {} : { firstFailure }),
  };
}

// ---------------------------------------------------------------------------------------------
// Standalone: npx tsx bench/tb-ceiling.ts [--sizes 24,64,0] [--seconds 3] [--rounds 3] [--replicas
// 3|1] [--cache-grid 256MiB]
//   [--fresh] (a new cluster per row) [--shapes '8;6, random ids (cap;3'] (shapes named so, or
// whose names start so)
//   [--start-args '--experimental --cache-transfers=256MiB'] (more `tigerbeetle start` arguments,
// space-separated)

/** The median of each (size, shape) over the rounds: replica ms per request and per transfer. */
export function medianShapes(results: readonly ShapeResult[]): ShapeResult[] {
  const median = (values: number[]): number => {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  const groups = new Map<string, ShapeResult[]>();
  for (const r of results)
    groups.set(`${r.size}/${r.shape}`, [...(groups.get(`${r.size}/${r.shape}`) ?? []), r]);
  return [...groups.values()].map((group) => ({
    ...group[0]!,
    requests: group.reduce((n, r) => n + r.requests, 0),
    transfers: group.reduce((n, r) => n + r.transfers, 0),
    seconds: group.reduce((n, r) => n + r.seconds, 0),
    eventsPerS: median(group.map((r) => r.eventsPerS)),
    transfersPerS: median(group.map((r) => r.transfersPerS)),
    replicaMsPerRequest: median(group.map((r) => r.replicaMsPerRequest)),
    replicaMsPerTransfer: median(group.map((r) => r.replicaMsPerTransfer)),
    otherCores: Math.max(...group.map((r) => r.otherCores)),
    failedEvents: group.reduce((n, r) => n + r.failedEvents, 0),
  }));
}

export function shapeTable(results: readonly ShapeResult[]): string {
  const header = [
    'events/transfer',
    'commands/request',
    'events/request',
    'requests',
    'transfers/s',
    'events/s',
    'replica ms/request',
    'replica ms/transfer',
    'vs today at this size',
    'other cores (max)',
    'failed',
  ];
  const rows = results.map((r) => {
    const base = results.find((t) => t.shape === TODAY && t.size === r.size)?.replicaMsPerTransfer;
    return [
      r.shape,
      String(r.commandsPerRequest),
      String(r.eventsPerRequest),
      String(r.requests),
      r.transfersPerS.toFixed(0),
      r.eventsPerS.toFixed(0),
      r.replicaMsPerRequest.toFixed(2),
      r.replicaMsPerTransfer.toFixed(4),
      base === undefined ? 'n/a' : `${((r.replicaMsPerTransfer / base) * 100).toFixed(0)}%`,
      r.otherCores.toFixed(2),
      String(r.failedEvents),
    ];
  });
  const width = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(width[i]!) : c.padStart(width[i]!))).join(' | ')} |`;
  return [
    line(header),
    `|${width.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

async function main(): Promise<void> {
  const { withCluster } = await import('./run-cluster');
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i < 0 ? undefined : process.argv[i + 1];
  };
  const sizes = (arg('--sizes') ?? '24,64,0').split(',').map(Number);
  const seconds = Number(arg('--seconds') ?? 3);
  const rounds = Number(arg('--rounds') ?? 3);
  const replicas = Number(arg('--replicas') ?? 3);
  if (replicas !== 1 && replicas !== 3) throw new Error('--replicas is 1 or 3');
  // --fresh: every row on a cluster of its own, so no row pays for the LSM compaction another
  // row's events left behind (TigerBeetle paces compaction over the requests that follow).
  const fresh = process.argv.includes('--fresh');
  // Shape names hold commas: ';' separates them; a name is matched whole, else by its start.
  const only = arg('--shapes')
    ?.split(';')
    .map(
      (name) =>
        SHAPES.find((shape) => shape === name) ??
        SHAPES.find((shape) => shape.startsWith(name)) ??
        badShape(name),
    );
  const shapes = only ?? SHAPES;
  const startArgs = arg('--start-args')
    ?.split(' ')
    .filter((a) => a !== '');
  const onCluster = <T>(
    run: (clusterId: bigint, addresses: string[], pids: number[]) => Promise<T>,
  ): Promise<T> =>
    withCluster(
      {
        replicas,
        cacheGrid: arg('--cache-grid') ?? '256MiB',
        ...(startArgs === undefined ? {} : { startArgs }),
      },
      (cluster, pids) => run(cluster.clusterId, cluster.addresses, pids),
    );
  console.log(
    `${replicas}-replica cluster${fresh ? ', a new one per row' : ''}; ${seconds} s per row; sizes ${sizes.map((s) => (s === 0 ? 'full' : s)).join(', ')} commands per request`,
  );
  const progress = (r: ShapeResult, round: number): void =>
    console.log(
      `round ${round + 1}: ${r.shape} events/transfer, ${r.commandsPerRequest} commands/request: ${r.requests} requests, replica ${r.replicaMsPerRequest.toFixed(2)} ms/request, ${r.replicaMsPerTransfer.toFixed(4)} ms/transfer, other cores ${r.otherCores.toFixed(2)}`,
    );
  const measured: ShapeResult[] = [];
  if (fresh) {
    for (let round = 0; round < rounds; round++)
      for (const size of sizes)
        for (const shape of shapes) {
          measured.push(
            ...(await onCluster((id, addresses, pids) =>
              measureShapes(id, addresses, pids, [size], seconds, 1, (r) => progress(r, round), [
                shape,
              ]),
            )),
          );
        }
  } else {
    measured.push(
      ...(await onCluster((id, addresses, pids) =>
        measureShapes(id, addresses, pids, sizes, seconds, rounds, progress, shapes),
      )),
    );
  }
  const results = medianShapes(measured);
  console.log(
    `\nReplica CPU per ledger request and per complete transfer, by events per transfer, median of ${rounds} interleaved rounds (${new Date().toISOString()}):\n${shapeTable(results)}`,
  );
  const failed = results.reduce((n, r) => n + r.failedEvents, 0);
  if (failed > 0)
    throw new Error(
      `${failed} events failed (first: ${results.find((r) => r.firstFailure !== undefined)?.firstFailure})`,
    );
}

function badShape(prefix: string): never {
  throw new Error(`--shapes: no shape starts with '${prefix}' (${SHAPES.join('; ')})`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
