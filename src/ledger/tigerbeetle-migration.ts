/**
 * The migration of a cluster written under the model before the 3-event one (8 events per
 * transfer: a limit ledger per currency with each participant's NDC and NDC_DEBT, settlement
 * windows as accounts of a window ledger) to the 3-event model (docs/decisions/0008, "What a
 * migration must do"; the procedure: docs/operations.md, "Upgrading to the 3-event ledger model").
 * The old model's ids and formulas live here only.
 *
 * POSITION, SETTLEMENT, DEBT and the hub's money accounts mean the same in both models and stay as
 * they are. What moves: each participant's cap headroom (NDC's credit balance) to a new CAP (a
 * posted CAP → HUB_CAP), its cap debt (NDC_DEBT's debit balance) to a new CAP_DEBT, and the NDC and
 * NDC_DEBT accounts are closed for good, so a prepare of an old-model instance left running is
 * refused by the ledger. It runs at a window boundary: a cut of the last closed window starts the
 * new model's first window. Every write has a derived id (or is skipped where done), so a run that
 * stopped half-way is run again; the model is recorded last, after every participant's figures are
 * checked equal before and after, and the service refuses to start until it is.
 */
import {
  AccountFlags,
  CreateAccountStatus,
  CreateTransferStatus,
  TransferFlags,
  type Account,
  type Client,
  type Transfer,
} from 'tigerbeetle-node';
import {
  LEDGER_MODEL,
  TIGERBEETLE_MAX_BATCH,
  type AccountRef,
  type ParticipantBalance,
} from '../ports/ledger';
import { sha256High128 } from '../util/digest';
import {
  AccountCode,
  HUB,
  IDENTITY_LEDGER,
  MODEL_ACCOUNT_ID,
  TransferCode,
  accountId,
  ledgerOf,
} from './account-model';
import { capClosing, openAccounts, transfersOf } from './tigerbeetle-chains';
import { account, lookupAccountsById, transfer } from './tigerbeetle-records';

/** The old model's limit ledger: the currency's numeric code plus this. */
const OLD_LIMIT_LEDGER_OFFSET = 1000;
/** The old model's window ledger: the currency's numeric code plus this. */
const OLD_WINDOW_LEDGER_OFFSET = 2000;
/** The old model's account codes of the limit and window ledgers. */
export const OldAccountCode = { NDC: 100, HUB_NDC: 101, NDC_DEBT: 103, WINDOW_HUB: 105 } as const;

/** An old model's account id, derived as that model derived it. */
export function oldAccountId(
  participant: string,
  currency: string,
  role: 'NDC' | 'NDC_DEBT' | 'HUB_NDC',
): bigint {
  return sha256High128(`account:${participant}:${currency}:${role}`);
}

/** The old model's gate of settlement window `window` in a currency. */
export function oldGateId(window: number, currency: string): bigint {
  return sha256High128(`window:${window}:${HUB}:${currency}`);
}

export function oldLedgers(currency: string): { limit: number; window: number } {
  const money = ledgerOf(currency);
  return { limit: money + OLD_LIMIT_LEDGER_OFFSET, window: money + OLD_WINDOW_LEDGER_OFFSET };
}

/** What the migration is told by the metadata. */
export interface MigrationInput {
  /** Every participant's accounts (the hub's pseudo-participant left out). */
  owners: readonly AccountRef[];
  /** The currencies whose hub accounts are opened. */
  hubCurrencies: readonly string[];
  /** The metadata's OPEN settlement window: the old model's must have moved nothing in it. */
  openWindow: number;
}

/** Why the migration will not run now; nothing was written. */
export class MigrationRefusedError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'MigrationRefusedError';
  }
}

/** A participant's accounts read under the old model. */
interface OldOwner {
  ref: AccountRef;
  ndc: Account;
  ndcDebt: Account | undefined;
  /** Its figures as the old model reads them: the new model's must be the same. */
  figures: ParticipantBalance;
  owesLiquidity: boolean;
}

/**
 * Reads every participant under the old model and refuses, writing nothing, where the cluster is
 * not at a window boundary with every transfer finished.
 */
async function readOldModel(client: Client, input: MigrationInput): Promise<OldOwner[]> {
  const roles = ['SETTLEMENT', 'POSITION', 'DEBT'] as const;
  const ids = input.owners.flatMap((ref) => [
    ...roles.map((role) => accountId(ref.participant, ref.currency, role)),
    oldAccountId(ref.participant, ref.currency, 'NDC'),
    oldAccountId(ref.participant, ref.currency, 'NDC_DEBT'),
  ]);
  const found = await lookupAccountsById(client, ids);
  const owners: OldOwner[] = [];
  const reserved: string[] = [];
  for (const [i, ref] of input.owners.entries()) {
    const [settlement, position, debt, ndc, ndcDebt] = found.slice(i * 5, i * 5 + 5);
    if (settlement === undefined || position === undefined || ndc === undefined)
      throw new MigrationRefusedError(
        `${ref.participant} ${ref.currency}: the ledger holds no account of the old model for it`,
      );
    if (ndc.debits_pending !== 0n || ndc.credits_pending !== 0n) {
      reserved.push(`${ref.participant} ${ref.currency}`);
      continue;
    }
    const liquidity = settlement.debits_posted - settlement.credits_posted;
    const fundsOutReserved = settlement.credits_pending;
    const position_ =
      liquidity - (position.credits_posted - position.debits_posted) + debitBalance(debt);
    owners.push({
      ref,
      ndc,
      ndcDebt,
      owesLiquidity: debitBalance(debt) > 0n,
      figures: {
        liquidity,
        fundsOutReserved,
        position: position_,
        reserved: position.debits_pending - fundsOutReserved,
        netDebitCap: ndc.credits_posted - ndc.debits_posted - debitBalance(ndcDebt) + position_,
        active: (position.flags & AccountFlags.closed) === 0,
      },
    });
  }
  if (reserved.length > 0)
    throw new MigrationRefusedError(
      `transfers of the old model are still reserved (${reserved.join(', ')}): stop prepares, ` +
        'wait until they expire or are finished (at most the longest expiration), then run again',
    );
  const gates = await lookupAccountsById(
    client,
    input.hubCurrencies.map((currency) => oldGateId(input.openWindow, currency)),
  );
  const moved = input.hubCurrencies.filter((_, i) => (gates[i]?.debits_posted ?? 0n) > 0n);
  if (moved.length > 0)
    throw new MigrationRefusedError(
      `the OPEN settlement window ${input.openWindow} holds commits of the old model ` +
        `(${moved.join(', ')}): close it with the old version first, then run again`,
    );
  return owners;
}

/** What a run did. */
export interface MigrationReport {
  /** The ledger recorded the 3-event model already: nothing was done. */
  alreadyMigrated: boolean;
  participants: number;
  /** Participants whose CAP was closed: they owe (decision 0008, "Debts"). */
  debtors: number;
  /** The window whose cuts start the new model's windows. */
  cutWindow: number;
}

/**
 * Migrates the cluster: refuses, writing nothing, where it is not at a window boundary with every
 * transfer finished; else moves every participant to the new model, checks each one's figures
 * (`balances`: the new model's reading) equal to the old model's, and records the model last.
 */
export async function migrateFromOldModel(
  client: Client,
  input: MigrationInput,
  balances: (refs: readonly AccountRef[]) => Promise<(ParticipantBalance | undefined)[]>,
): Promise<MigrationReport> {
  const cutWindow = input.openWindow - 1;
  const [marker] = await client.lookupAccounts([MODEL_ACCOUNT_ID]);
  if (marker !== undefined) {
    if (marker.user_data_32 !== LEDGER_MODEL)
      throw new MigrationRefusedError(`the ledger records model ${marker.user_data_32}`);
    return { alreadyMigrated: true, participants: 0, debtors: 0, cutWindow };
  }
  const owners = await readOldModel(client, input);
  await createNewAccounts(client, input);
  const debtors = owners.filter(
    (o) => o.owesLiquidity || (o.ndcDebt !== undefined && debitBalance(o.ndcDebt) > 0n),
  );
  await createTransfers(client, [
    ...owners.flatMap(carried),
    // The new model's windows start after the last one the old model closed.
    ...input.hubCurrencies.flatMap((currency) => {
      const built = transfersOf({ kind: 'closeWindow', window: cutWindow, currency }, new Map());
      return built === 'noop' ? [] : built.events;
    }),
  ]);
  await closeCaps(
    client,
    debtors.map((o) => o.ref),
  );
  const after = await balances(owners.map((o) => o.ref));
  const differing = owners.flatMap((o, i) =>
    sameFigures(o.figures, after[i]) ? [] : [`${o.ref.participant} ${o.ref.currency}`],
  );
  if (differing.length > 0)
    throw new Error(
      `figures differ after the migration (${differing.join(', ')}): the model is not recorded`,
    );
  await createAll(client, [modelAccount()]);
  return {
    alreadyMigrated: false,
    participants: owners.length,
    debtors: debtors.length,
    cutWindow,
  };
}

/** The account recording that the ledger is written under this version's model. */
export function modelAccount(): Account {
  return account({
    id: MODEL_ACCOUNT_ID,
    ledger: IDENTITY_LEDGER,
    code: AccountCode.MODEL,
    flags: AccountFlags.none,
    userData32: LEDGER_MODEL,
  });
}

/**
 * The accounts the new model adds: HUB_CAP per currency, CAP and CAP_DEBT per participant, with
 * the flags the service opens them with (CAP linked to CAP_DEBT: a chain of the two), so that its
 * start finds them `exists`.
 */
async function createNewAccounts(client: Client, input: MigrationInput): Promise<void> {
  const added = new Set<number>([AccountCode.HUB_CAP, AccountCode.CAP, AccountCode.CAP_DEBT]);
  const accounts = [
    ...input.hubCurrencies.flatMap((currency) => openAccounts({ kind: 'openHub', currency })),
    ...input.owners.flatMap((ref) => openAccounts({ kind: 'openParticipant', ...ref })),
  ].filter((a) => added.has(a.code));
  if (accounts.at(-1) !== undefined && (accounts.at(-1)!.flags & AccountFlags.linked) !== 0)
    throw new Error('the accounts added end in an open chain');
  await createAll(client, accounts);
  const missing = (
    await lookupAccountsById(
      client,
      accounts.map((a) => a.id),
    )
  ).filter((a) => a === undefined);
  if (missing.length > 0) throw new Error(`${missing.length} accounts were not created`);
}

/**
 * A participant's cap headroom and cap debt carried to CAP and CAP_DEBT (code NDC_ADJUST: an admin
 * move, which window nets leave out), and its NDC and NDC_DEBT closed for good.
 */
function carried(owner: OldOwner): Transfer[] {
  const { participant, currency } = owner.ref;
  const id = (purpose: string): bigint =>
    sha256High128(`migration:${participant}:${currency}:${purpose}`);
  const money = ledgerOf(currency);
  const hubCap = accountId(HUB, currency, 'HUB_CAP');
  const headroom = owner.ndc.credits_posted - owner.ndc.debits_posted;
  const capDebt = owner.ndcDebt === undefined ? 0n : debitBalance(owner.ndcDebt);
  const { limit } = oldLedgers(currency);
  const closing = (role: 'NDC' | 'NDC_DEBT'): Transfer =>
    transfer({
      id: id(`close-${role}`),
      ledger: limit,
      code: TransferCode.CLOSE,
      debit: oldAccountId(participant, currency, role),
      credit: oldAccountId(HUB, currency, 'HUB_NDC'),
      amount: 0n,
      flags: TransferFlags.pending | TransferFlags.closing_debit,
    });
  return [
    ...(headroom === 0n
      ? []
      : [
          transfer({
            id: id('cap'),
            ledger: money,
            code: TransferCode.NDC_ADJUST,
            debit: accountId(participant, currency, 'CAP'),
            credit: hubCap,
            amount: headroom,
          }),
        ]),
    ...(capDebt === 0n
      ? []
      : [
          transfer({
            id: id('cap-debt'),
            ledger: money,
            code: TransferCode.NDC_ADJUST,
            debit: hubCap,
            credit: accountId(participant, currency, 'CAP_DEBT'),
            amount: capDebt,
          }),
        ]),
    closing('NDC'),
    ...(owner.ndcDebt === undefined ? [] : [closing('NDC_DEBT')]),
  ];
}

/** Closes the CAP of each debtor not closed yet (a run again finds those it closed). */
async function closeCaps(client: Client, debtors: readonly AccountRef[]): Promise<void> {
  const caps = await lookupAccountsById(
    client,
    debtors.map((ref) => accountId(ref.participant, ref.currency, 'CAP')),
  );
  await createTransfers(
    client,
    debtors.filter((_, i) => (caps[i]!.flags & AccountFlags.closed) === 0).map(capClosing),
  );
}

function sameFigures(a: ParticipantBalance, b: ParticipantBalance | undefined): boolean {
  return (
    b !== undefined &&
    a.liquidity === b.liquidity &&
    a.fundsOutReserved === b.fundsOutReserved &&
    a.position === b.position &&
    a.reserved === b.reserved &&
    a.netDebitCap === b.netDebitCap &&
    a.active === b.active
  );
}

function debitBalance(account: Account | undefined): bigint {
  return account === undefined ? 0n : account.debits_posted - account.credits_posted;
}

/**
 * Creates the accounts; each created, there already, or in a chain another of which was there
 * already (a run again: the chain was created whole before). A request never ends inside a chain.
 */
async function createAll(client: Client, accounts: readonly Account[]): Promise<void> {
  const fine = new Set([
    CreateAccountStatus.created,
    CreateAccountStatus.exists,
    CreateAccountStatus.linked_event_failed,
  ]);
  for (let start = 0; start < accounts.length; ) {
    let end = Math.min(start + TIGERBEETLE_MAX_BATCH, accounts.length);
    while (end < accounts.length && (accounts[end - 1]!.flags & AccountFlags.linked) !== 0) end--;
    const page = accounts.slice(start, end);
    for (const [k, result] of (await client.createAccounts(page)).entries()) {
      if (!fine.has(result.status))
        throw new Error(`account ${page[k]!.id}: ${CreateAccountStatus[result.status]}`);
    }
    start = end;
  }
}

/** Creates the transfers (none linked); each created or there already, else the run stops. */
async function createTransfers(client: Client, transfers: readonly Transfer[]): Promise<void> {
  for (let i = 0; i < transfers.length; i += TIGERBEETLE_MAX_BATCH) {
    const page = transfers.slice(i, i + TIGERBEETLE_MAX_BATCH);
    for (const [k, result] of (await client.createTransfers(page)).entries()) {
      if (
        result.status !== CreateTransferStatus.created &&
        result.status !== CreateTransferStatus.exists
      )
        throw new Error(
          `transfer ${page[k]!.id} (code ${page[k]!.code}): ${CreateTransferStatus[result.status]}`,
        );
    }
  }
}
