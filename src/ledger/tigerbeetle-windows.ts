/**
 * Settlement windows read from the ledger (docs/decisions/0008-three-event-model.md, "Settlement
 * amounts"). A commit carries no window: a close writes one cut per currency (closeWindow, a
 * transfer of amount 0 whose cluster timestamp divides the windows), and a window in a currency is
 * what the ledger saved between its cut and the cut before. A participant's net there is what its
 * CAP's balance history (`flags.history`) moved between the two cuts — a post credits the payer's
 * CAP, a receipt debits the payee's — less the admin moves on CAP between them, read by their
 * codes. It costs two history entries per participant and the window's admin moves, never a
 * lookup per transfer (decision 0004's rule).
 */
import {
  AccountFilterFlags,
  QueryFilterFlags,
  type AccountBalance,
  type Client,
  type Transfer,
} from 'tigerbeetle-node';
import { TIGERBEETLE_MAX_BATCH, type AccountRef, type WindowNet } from '../ports/ledger';
import { TransferCode, accountId, ledgerOf, windowCutId } from './account-model';

/**
 * The codes of the transfers other than commits that move a CAP's posted balance: cap changes,
 * initial positions, settlement steps and debt sweeps. (Guards, closings and their voids are of
 * amount 0; GROSS commits are taken out apart.)
 */
const ADMIN_CODES_ON_CAP = [
  TransferCode.NDC_ADJUST,
  TransferCode.INITIAL_POSITION,
  TransferCode.SETTLEMENT,
  TransferCode.SWEEP,
] as const;

/** History reads in flight at once while a window's nets are read (two per participant). */
const HISTORY_READS_IN_FLIGHT = 64;

/**
 * A window's span in one currency, by cluster timestamps: after `after` (0: the ledger's start)
 * and up to `upTo` (undefined: not cut yet, so up to now).
 */
interface Span {
  after: bigint;
  upTo: bigint | undefined;
}

/** Posted debits and credits of a CAP account. */
interface Moved {
  debits: bigint;
  credits: bigint;
}

/**
 * Window `window`'s span in each currency; undefined where it holds nothing there: a window cut
 * in other currencies but not in this one (the currency came after its close).
 */
export async function spansOf(
  client: Client,
  window: number,
  currencies: readonly string[],
): Promise<(Span | undefined)[]> {
  const [cuts, latest] = await Promise.all([
    client.lookupTransfers(currencies.map((c) => windowCutId(window, c))),
    latestCut(client, undefined),
  ]);
  const cutAt = new Map(cuts.map((t) => [t.id, t.timestamp]));
  const closed = latest !== undefined && window <= Number(latest.user_data_64);
  return Promise.all(
    currencies.map(async (currency) => {
      const upTo = cutAt.get(windowCutId(window, currency));
      if (upTo === undefined && closed) return undefined;
      const before = await latestCut(client, currency, upTo === undefined ? 0n : upTo - 1n);
      return { after: before?.timestamp ?? 0n, upTo };
    }),
  );
}

/**
 * The latest cut in a currency (any currency: undefined) saved at or before `upTo` (0: ever).
 */
export async function latestCut(
  client: Client,
  currency: string | undefined,
  upTo = 0n,
): Promise<Transfer | undefined> {
  const [cut] = await client.queryTransfers(
    filter({
      ledger: currency === undefined ? 0 : ledgerOf(currency),
      code: TransferCode.WINDOW_CUT,
      span: { after: 0n, upTo: upTo === 0n ? undefined : upTo },
      limit: 1,
      reversed: true,
    }),
  );
  return cut;
}

/** Whether a transfer of `code` was saved in the span, in a currency. */
export async function anyIn(
  client: Client,
  currency: string,
  code: number,
  span: Span | undefined,
): Promise<boolean> {
  if (span === undefined) return false;
  const found = await client.queryTransfers(
    filter({ ledger: ledgerOf(currency), code, span, limit: 1, reversed: false }),
  );
  return found.length > 0;
}

/** Each participant's net and volume in its currency's span (spans: by currency). */
export async function netsIn(
  client: Client,
  allRefs: readonly AccountRef[],
  spans: ReadonlyMap<string, Span | undefined>,
): Promise<WindowNet[]> {
  const defined = new Map<string, Span>();
  for (const [currency, span] of spans) if (span !== undefined) defined.set(currency, span);
  const refs = allRefs.filter((ref) => defined.has(ref.currency));
  const nets = await netsInSpans(client, refs, defined);
  const byRef = new Map(refs.map((ref, i) => [ref, nets[i]!]));
  return allRefs.map((ref) => byRef.get(ref) ?? { net: 0n, volume: 0n });
}

async function netsInSpans(
  client: Client,
  refs: readonly AccountRef[],
  spans: ReadonlyMap<string, Span>,
): Promise<WindowNet[]> {
  const caps = refs.map((ref) => accountId(ref.participant, ref.currency, 'CAP'));
  const admin = await adminMoves(client, refs, caps, spans);
  const moved: Moved[] = new Array(refs.length);
  for (let start = 0; start < refs.length; start += HISTORY_READS_IN_FLIGHT) {
    const slice = refs.slice(start, start + HISTORY_READS_IN_FLIGHT);
    await Promise.all(
      slice.map(async (ref, k) => {
        const span = spans.get(ref.currency)!;
        const cap = caps[start + k]!;
        const [end, begin] = await Promise.all([
          balanceAt(client, cap, span.upTo ?? 0n),
          span.after === 0n ? undefined : balanceAt(client, cap, span.after),
        ]);
        moved[start + k] = {
          debits: (end?.debits_posted ?? 0n) - (begin?.debits_posted ?? 0n),
          credits: (end?.credits_posted ?? 0n) - (begin?.credits_posted ?? 0n),
        };
      }),
    );
  }
  return refs.map((_, i) => {
    const byAdmin = admin.get(caps[i]!);
    const sent = moved[i]!.credits - (byAdmin?.credits ?? 0n);
    const received = moved[i]!.debits - (byAdmin?.debits ?? 0n);
    if (sent < 0n || received < 0n)
      throw new Error(`window nets: CAP ${caps[i]} moved less than its admin moves`);
    return { net: sent - received, volume: sent + received };
  });
}

/** CAP's balances after its latest transfer saved at or before `upTo` (0: ever), if any. */
async function balanceAt(
  client: Client,
  cap: bigint,
  upTo: bigint,
): Promise<AccountBalance | undefined> {
  const [balance] = await client.getAccountBalances({
    account_id: cap,
    user_data_128: 0n,
    user_data_64: 0n,
    user_data_32: 0,
    code: 0,
    timestamp_min: 0n,
    timestamp_max: upTo,
    limit: 1,
    flags: AccountFilterFlags.debits | AccountFilterFlags.credits | AccountFilterFlags.reversed,
  });
  return balance;
}

/** What the admin moves of each span moved on the CAPs named (by CAP id). */
async function adminMoves(
  client: Client,
  refs: readonly AccountRef[],
  caps: readonly bigint[],
  spans: ReadonlyMap<string, Span>,
): Promise<Map<bigint, Moved>> {
  const named = new Set(caps);
  const moved = new Map<bigint, Moved>();
  const add = (cap: bigint, side: keyof Moved, amount: bigint): void => {
    if (!named.has(cap)) return;
    let entry = moved.get(cap);
    if (entry === undefined) moved.set(cap, (entry = { debits: 0n, credits: 0n }));
    entry[side] += amount;
  };
  const currencies = [...new Set(refs.map((ref) => ref.currency))];
  for (const currency of currencies) {
    const span = spans.get(currency)!;
    for (const code of ADMIN_CODES_ON_CAP) {
      for await (const t of transfersIn(client, ledgerOf(currency), code, span)) {
        add(t.debit_account_id, 'debits', t.amount);
        add(t.credit_account_id, 'credits', t.amount);
      }
    }
    // A GROSS commit settled at once and is no window's: its receipt debits the payer's CAP by
    // what its post credited. None in a NET currency (whose nets alone are read), so this costs a
    // transfer only where a currency's commits were of both kinds (a model changed in a window).
    for await (const t of transfersIn(client, ledgerOf(currency), TransferCode.GROSS, span)) {
      add(t.debit_account_id, 'debits', t.amount);
      add(t.debit_account_id, 'credits', t.amount);
    }
  }
  return moved;
}

/** Every transfer of a code in a span, a page at a time. */
async function* transfersIn(
  client: Client,
  ledger: number,
  code: number,
  span: Span,
): AsyncGenerator<Transfer> {
  let after = span.after;
  for (;;) {
    const page = await client.queryTransfers(
      filter({
        ledger,
        code,
        span: { after, upTo: span.upTo },
        limit: TIGERBEETLE_MAX_BATCH,
        reversed: false,
      }),
    );
    yield* page;
    if (page.length < TIGERBEETLE_MAX_BATCH) return;
    after = page[page.length - 1]!.timestamp;
  }
}

function filter(query: {
  ledger: number;
  code: number;
  span: Span;
  limit: number;
  reversed: boolean;
}): Parameters<Client['queryTransfers']>[0] {
  return {
    user_data_128: 0n,
    user_data_64: 0n,
    user_data_32: 0,
    ledger: query.ledger,
    code: query.code,
    timestamp_min: query.span.after === 0n ? 0n : query.span.after + 1n,
    timestamp_max: query.span.upTo ?? 0n,
    limit: query.limit,
    flags: query.reversed ? QueryFilterFlags.reversed : QueryFilterFlags.none,
  };
}
