/**
 * Ledger shapes, raw: the TigerBeetle events of one complete transfer in today's account model
 * (docs/account-model.md, 8 events) against the candidate 3-event model of issue 29
 * (docs/decisions/0008-three-event-model.md), on one three-replica cluster, every shape in
 * requests of the same number of commands, with the replicas' CPU per complete transfer; and
 * half-way shapes (one window leg instead of two, the POSITION → CAP pending with the sweeps).
 *
 *   npx tsx bench/tb-shapes.ts [--seconds 5] [--rounds 2] [--sizes 64,0] [--shapes a;b]
 *     [--replicas 1]
 *
 * A request holds k prepares and the commits of the previous request's k prepares (2k commands,
 * one request in flight, as the service's batches at 64 connections hold prepares and commits);
 * size 0 = full requests (as many commands as fit in 8,189 events). Rounds interleave the rows,
 * so the spread between rounds says how much the machine's other work moved them.
 */
import { randomBytes } from 'node:crypto';
import {
  AccountFlags,
  CreateAccountStatus,
  CreateTransferStatus,
  TransferFlags,
  createClient,
  id as timeOrderedId,
  type Account,
  type Client,
  type Transfer,
} from 'tigerbeetle-node';
import { account, transfer } from '../src/ledger/tigerbeetle-records';
import { flags, runMain } from './common';
import { cpuSecondsOf } from './procstat';
import { withCluster } from './run-cluster';

const MAX_EVENTS = 8189;
const PARTICIPANTS = 8;
/** Every headroom funded far beyond what a run moves: no check ever refuses here. */
const FUNDING = 1n << 80n;
const AMOUNT_MAX = (1n << 128n) - 1n;
const BALANCING = TransferFlags.balancing_debit | TransferFlags.balancing_credit;

/** Hash-derived ids, as the service's transfer ids and the ids derived from them are. */
function randomId(): bigint {
  return BigInt(`0x${randomBytes(16).toString('hex')}`);
}

/** One transfer between two of the participants, and the ids its events use. */
interface Payment {
  payer: number;
  payee: number;
  amount: bigint;
  id: bigint;
}

/** Ledger ids of the bench only (no currency uses them): each shape its own. */
interface ShapeAccounts {
  /** Per role name, per participant. */
  ids: Record<string, bigint[]>;
  accounts: Account[];
  /** Transfers that fund every checked account. */
  funding: Transfer[];
}

interface Shape {
  name: string;
  what: string;
  eventsPerTransfer: number;
  setup(): ShapeAccounts;
  prepare(p: Payment, a: ShapeAccounts): Transfer[];
  commit(p: Payment, a: ShapeAccounts): Transfer[];
}

function openAccounts(
  ledgerOf: Record<string, number>,
  flagsOf: Record<string, number>,
  extra: Record<string, number> = {},
): Pick<ShapeAccounts, 'ids' | 'accounts'> {
  const ids: Record<string, bigint[]> = {};
  const accounts: Account[] = [];
  for (const role of Object.keys(ledgerOf)) {
    const count = extra[role] ?? PARTICIPANTS;
    ids[role] = Array.from({ length: count }, () => randomId());
    for (const id of ids[role])
      accounts.push(account({ id, ledger: ledgerOf[role]!, code: 1, flags: flagsOf[role] ?? 0 }));
  }
  return { ids, accounts };
}

function fund(ledger: number, debit: bigint, credit: bigint): Transfer {
  return transfer({ id: timeOrderedId(), ledger, code: 2, debit, credit, amount: FUNDING });
}

/** A balancing repayment of a debt (amount 0 here: no participant owes). */
function sweepOf(ledger: number, debit: bigint, credit: bigint): Transfer {
  return transfer({
    id: randomId(),
    ledger,
    code: 7,
    debit,
    credit,
    amount: AMOUNT_MAX,
    flags: BALANCING,
  });
}

function linked(events: Transfer[]): Transfer[] {
  for (let i = 0; i < events.length - 1; i++) events[i]!.flags |= TransferFlags.linked;
  return events;
}

const MONEY = 9101;
const LIMIT = 9102;
const WINDOW = 9103;
const ONE_LEDGER = 9201;
const ONE_LEDGER_NO_HISTORY = 9301;
const ONE_LEDGER_CAP_HISTORY = 9501;
const ONE_LEDGER_SWEPT = 9401;
const ONE_LEDGER_SWEPT_GATE = 9601;
const ONE_LEDGER_SWEPT_ONE_LEG = 9701;

/** A transfer from the payer's account of one role to the payee's, under the payment's id. */
function payerToPayee(role: bigint[], p: Payment, ledger: number): Transfer {
  const { payer, payee, amount, id } = p;
  return transfer({ id, ledger, code: 1, debit: role[payer]!, credit: role[payee]!, amount });
}

/**
 * How a commit carries its settlement window: two legs through the window's gate (today), one leg
 * from the payer's window account to the payee's (a window closed by closing its participants'
 * accounts), or none (the nets from balance history).
 */
type WindowLegs = 'gate' | 'one' | 'none';
const LEGS_PER_COMMIT: Record<WindowLegs, number> = { gate: 2, one: 1, none: 0 };

/** The window accounts a shape's commits name: one per participant and the gate. */
function windowAccounts(): Pick<ShapeAccounts, 'ids' | 'accounts'> {
  return openAccounts({ WINDOW: WINDOW, GATE: WINDOW }, {}, { GATE: 1 });
}

/** A commit's window legs (WindowLegs). */
function windowLegsOf(legs: WindowLegs, p: Payment, ids: ShapeAccounts['ids']): Transfer[] {
  const leg = (debit: bigint, credit: bigint): Transfer =>
    transfer({ id: timeOrderedId(), ledger: WINDOW, code: 9, debit, credit, amount: p.amount });
  const [payer, payee] = [ids['WINDOW']?.[p.payer], ids['WINDOW']?.[p.payee]];
  if (legs === 'none') return [];
  if (payer === undefined || payee === undefined) throw new Error('no window accounts opened');
  if (legs === 'one') return [leg(payer, payee)];
  const gate = ids['GATE']![0]!;
  return [leg(payer, gate), leg(gate, payee)];
}

/** Today's model: src/ledger/tigerbeetle-chains.ts and tigerbeetle-settlement.ts. */
function today(options: { name: string; what: string; windowLegs: WindowLegs }): Shape {
  const { windowLegs } = options;
  return {
    name: options.name,
    what: options.what,
    eventsPerTransfer: 6 + LEGS_PER_COMMIT[windowLegs],
    setup() {
      const dmnec = AccountFlags.debits_must_not_exceed_credits;
      const cmned = AccountFlags.credits_must_not_exceed_debits;
      const { ids, accounts } = openAccounts(
        { POSITION: MONEY, NDC: LIMIT, DEBT: MONEY, NDC_DEBT: LIMIT, HUB: MONEY, HUB_NDC: LIMIT },
        { POSITION: dmnec, NDC: dmnec, DEBT: cmned, NDC_DEBT: cmned },
        { HUB: 1, HUB_NDC: 1 },
      );
      const windows = windowAccounts();
      return {
        ids: { ...ids, ...windows.ids },
        accounts: [...accounts, ...windows.accounts],
        funding: ids['POSITION']!.flatMap((position, p) => [
          fund(MONEY, ids['HUB']![0]!, position),
          fund(LIMIT, ids['HUB_NDC']![0]!, ids['NDC']![p]!),
        ]),
      };
    },
    prepare({ payer, payee, amount, id }, { ids }) {
      const pending = (ledger: number, role: string, pendingId: bigint): Transfer => ({
        ...payerToPayee(ids[role]!, { payer, payee, amount, id: pendingId }, ledger),
        flags: TransferFlags.pending,
        timeout: 120,
      });
      const sweep = (ledger: number, from: string, debt: string): Transfer =>
        sweepOf(ledger, ids[from]![payer]!, ids[debt]![payer]!);
      return linked([
        sweep(MONEY, 'POSITION', 'DEBT'),
        pending(MONEY, 'POSITION', id),
        sweep(LIMIT, 'NDC', 'NDC_DEBT'),
        pending(LIMIT, 'NDC', id ^ 1n),
      ]);
    },
    commit(p, { ids }) {
      const { payer, payee, amount, id } = p;
      const post = (ledger: number, role: string, pendingId: bigint): Transfer => ({
        ...payerToPayee(ids[role]!, { payer, payee, amount, id: randomId() }, ledger),
        flags: TransferFlags.post_pending_transfer,
        pending_id: pendingId,
      });
      return linked([
        post(MONEY, 'POSITION', id),
        post(LIMIT, 'NDC', id ^ 1n),
        ...windowLegsOf(windowLegs, p, ids),
      ]);
    },
  };
}

/**
 * Issue 29's candidate: one ledger; a pending POSITION(payer) → CAP(payer) carries the liquidity
 * check on its debit side and the cap check on its credit side; the commit posts it and moves the
 * payee's side, CAP(payee) → POSITION(payee). `sweeps`: the two debt sweeps in every prepare.
 */
function threeEvent(options: {
  name: string;
  what: string;
  ledger: number;
  /** flags.history on which of the payer's checked accounts (the window nets need one). */
  history: 'both' | 'cap' | 'none';
  sweeps: boolean;
  /** How its commits carry the window (none: the nets come from CAP's history). */
  windowLegs?: WindowLegs;
}): Shape {
  const { ledger, history, sweeps, windowLegs = 'none' } = options;
  /** The payer's POSITION → its CAP: the pending transfer and its post. */
  const payerSide = (
    p: Pick<Payment, 'payer' | 'amount' | 'id'>,
    ids: ShapeAccounts['ids'],
  ): Transfer =>
    transfer({
      id: p.id,
      ledger,
      code: 1,
      debit: ids['POSITION']![p.payer]!,
      credit: ids['CAP']![p.payer]!,
      amount: p.amount,
    });
  return {
    name: options.name,
    what: options.what,
    eventsPerTransfer: (sweeps ? 5 : 3) + LEGS_PER_COMMIT[windowLegs],
    setup() {
      const onPosition = history === 'both' ? AccountFlags.history : 0;
      const onCap = history === 'none' ? 0 : AccountFlags.history;
      const dmnec = AccountFlags.debits_must_not_exceed_credits;
      const cmned = AccountFlags.credits_must_not_exceed_debits;
      const { ids, accounts } = openAccounts(
        { POSITION: ledger, CAP: ledger, DEBT: ledger, CAP_DEBT: ledger, HUB: ledger },
        { POSITION: dmnec | onPosition, CAP: cmned | onCap, DEBT: cmned, CAP_DEBT: dmnec },
        { HUB: 1 },
      );
      const hub = ids['HUB']![0]!;
      const windows = windowLegs === 'none' ? { ids: {}, accounts: [] } : windowAccounts();
      return {
        ids: { ...ids, ...windows.ids },
        accounts: [...accounts, ...windows.accounts],
        funding: ids['POSITION']!.flatMap((position, p) => [
          fund(ledger, hub, position),
          fund(ledger, ids['CAP']![p]!, hub),
        ]),
      };
    },
    prepare({ payer, amount, id }, { ids }) {
      const pending: Transfer = {
        ...payerSide({ payer, amount, id }, ids),
        flags: TransferFlags.pending,
        timeout: 120,
      };
      if (!sweeps) return [pending];
      const sweep = (debit: string, credit: string): Transfer =>
        sweepOf(ledger, ids[debit]![payer]!, ids[credit]![payer]!);
      return linked([sweep('POSITION', 'DEBT'), sweep('CAP_DEBT', 'CAP'), pending]);
    },
    commit(p, { ids }) {
      const { payer, payee, amount, id } = p;
      return linked([
        {
          ...payerSide({ payer, amount, id: id ^ 1n }, ids),
          flags: TransferFlags.post_pending_transfer,
          pending_id: id,
        },
        transfer({
          id: timeOrderedId(),
          ledger,
          code: 1,
          debit: ids['CAP']![payee]!,
          credit: ids['POSITION']![payee]!,
          amount,
        }),
        ...windowLegsOf(windowLegs, p, ids),
      ]);
    },
  };
}

export const SHAPES: Shape[] = [
  today({
    name: 'today-8',
    what: 'sweep, pending POSITION, sweep, pending NDC; post, post, two window legs',
    windowLegs: 'gate',
  }),
  today({
    name: 'today-7-one-leg',
    what: 'today with one window leg, payer to payee (no gate)',
    windowLegs: 'one',
  }),
  threeEvent({
    name: 'three-3',
    what: 'pending POSITION→CAP (payer); post, CAP→POSITION (payee); history on both accounts',
    ledger: ONE_LEDGER,
    history: 'both',
    sweeps: false,
  }),
  threeEvent({
    name: 'three-3-cap-history',
    what: 'the same with flags.history on CAP only (the window nets read CAP)',
    ledger: ONE_LEDGER_CAP_HISTORY,
    history: 'cap',
    sweeps: false,
  }),
  threeEvent({
    name: 'three-3-no-history',
    what: 'the same without flags.history',
    ledger: ONE_LEDGER_NO_HISTORY,
    history: 'none',
    sweeps: false,
  }),
  threeEvent({
    name: 'three-5-swept',
    what: 'the 3 with both debt sweeps in every prepare; history on CAP only',
    ledger: ONE_LEDGER_SWEPT,
    history: 'cap',
    sweeps: true,
  }),
  threeEvent({
    name: 'cap-7-gate',
    what: 'three-5-swept whose commits keep the two legs through the window gate',
    ledger: ONE_LEDGER_SWEPT_GATE,
    history: 'none',
    sweeps: true,
    windowLegs: 'gate',
  }),
  threeEvent({
    name: 'cap-6-one-leg',
    what: 'three-5-swept whose commits carry one window leg, payer to payee',
    ledger: ONE_LEDGER_SWEPT_ONE_LEG,
    history: 'none',
    sweeps: true,
    windowLegs: 'one',
  }),
];

async function mustCreate(client: Client, shape: Shape, a: ShapeAccounts): Promise<void> {
  const accounts = await client.createAccounts(a.accounts);
  const badAccount = accounts.find((r) => r.status !== CreateAccountStatus.created);
  if (badAccount !== undefined)
    throw new Error(`${shape.name} accounts: ${CreateAccountStatus[badAccount.status]}`);
  const funded = await client.createTransfers(a.funding);
  const badFunding = funded.find((r) => r.status !== CreateTransferStatus.created);
  if (badFunding !== undefined)
    throw new Error(`${shape.name} funding: ${CreateTransferStatus[badFunding.status]}`);
}

export interface ShapeRow {
  shape: string;
  commandsPerRequest: number;
  eventsPerRequest: number;
  requests: number;
  seconds: number;
  eventsPerS: number;
  transfersPerS: number;
  replicaCores: number;
  replicaMsPerTransfer: number;
  failedEvents: number;
}

/** Requests of `k` prepares and the previous request's k commits, for `seconds`. */
async function measureShape(run: {
  client: Client;
  shape: Shape;
  accounts: ShapeAccounts;
  k: number;
  seconds: number;
  replicaPids: number[];
}): Promise<ShapeRow> {
  const { client, shape, accounts, k, seconds, replicaPids } = run;
  let failedEvents = 0;
  let previous: Payment[] = [];
  let n = 0;
  const request = async (): Promise<{ events: number; commits: number }> => {
    const payments: Payment[] = Array.from({ length: k }, () => {
      const payer = n % PARTICIPANTS;
      const payee =
        (payer + 1 + (Math.floor(n / PARTICIPANTS) % (PARTICIPANTS - 1))) % PARTICIPANTS;
      n++;
      return { payer, payee, amount: BigInt(1 + (n % 1000)), id: randomId() & ~1n };
    });
    const events = [
      ...payments.flatMap((p) => shape.prepare(p, accounts)),
      ...previous.flatMap((p) => shape.commit(p, accounts)),
    ];
    for (const r of await client.createTransfers(events))
      if (r.status !== CreateTransferStatus.created) failedEvents++;
    const commits = previous.length;
    previous = payments;
    return { events: events.length, commits };
  };
  for (let i = 0; i < 20; i++) await request();
  failedEvents = 0;
  const cpuBefore = cpuSecondsOf(replicaPids);
  const started = performance.now();
  let events = 0;
  let transfers = 0;
  let requests = 0;
  while (performance.now() - started < seconds * 1000) {
    const done = await request();
    events += done.events;
    transfers += done.commits;
    requests++;
  }
  const wall = (performance.now() - started) / 1000;
  const replicaCpu = cpuSecondsOf(replicaPids) - cpuBefore;
  return {
    shape: shape.name,
    commandsPerRequest: 2 * k,
    eventsPerRequest: Math.round(events / requests),
    requests,
    seconds: wall,
    eventsPerS: events / wall,
    transfersPerS: transfers / wall,
    replicaCores: replicaCpu / wall,
    replicaMsPerTransfer: (replicaCpu * 1000) / transfers,
    failedEvents,
  };
}

/** k for a request of `size` commands (0: as many complete transfers as fit in one request). */
function prepareCount(size: number, shape: Shape): number {
  return size === 0 ? Math.floor(MAX_EVENTS / shape.eventsPerTransfer) : size / 2;
}

async function main(): Promise<void> {
  const args = flags(process.argv.slice(2));
  const seconds = args.number('--seconds', 5, true);
  const rounds = args.number('--rounds', 2, true);
  const sizes = (args.value('--sizes') ?? '64,0').split(',').map(Number);
  const picked = args.value('--shapes')?.split(';');
  const shapes = SHAPES.filter((s) => picked?.some((name) => s.name.startsWith(name)) ?? true);
  const replicas = args.value('--replicas') === '1' ? 1 : 3;
  const rows = await withCluster({ replicas }, async (cluster, replicaPids) => {
    const client = createClient({
      cluster_id: cluster.clusterId,
      replica_addresses: cluster.addresses,
    });
    try {
      const accounts = new Map<Shape, ShapeAccounts>();
      for (const shape of shapes) {
        accounts.set(shape, shape.setup());
        await mustCreate(client, shape, accounts.get(shape)!);
      }
      const measured: (ShapeRow & { round: number })[] = [];
      for (let round = 1; round <= rounds; round++) {
        for (const size of sizes) {
          // Each round starts from another shape: none always pays what the one before it left.
          for (let s = 0; s < shapes.length; s++) {
            const shape = shapes[(s + round - 1) % shapes.length]!;
            const k = prepareCount(size, shape);
            const row = await measureShape({
              client,
              shape,
              accounts: accounts.get(shape)!,
              k,
              seconds,
              replicaPids,
            });
            measured.push({ ...row, round });
            process.stderr.write(`${JSON.stringify({ ...row, round })}\n`);
          }
        }
      }
      return measured;
    } finally {
      client.destroy();
    }
  });
  console.log(
    '| shape | round | commands/request | events/request | events/s | transfers/s | replica cores | replica ms/transfer | failed |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows.sort(
    (a, b) =>
      a.commandsPerRequest - b.commandsPerRequest ||
      a.shape.localeCompare(b.shape) ||
      a.round - b.round,
  ))
    console.log(
      `| ${r.shape} | ${r.round} | ${r.commandsPerRequest} | ${r.eventsPerRequest} | ` +
        `${r.eventsPerS.toFixed(0)} | ${r.transfersPerS.toFixed(0)} | ${r.replicaCores.toFixed(2)} | ` +
        `${r.replicaMsPerTransfer.toFixed(3)} | ${r.failedEvents} |`,
    );
}

runMain(main, 'ledger shapes benchmark');
