/**
 * The TigerBeetle adapter: each ledger command becomes one linked chain of TigerBeetle transfers
 * (see account-model.ts), and a batch of commands goes out as one create_transfers request, cut
 * in order only where a command must see what an earlier one did (segmentsOf).
 */
import {
  AccountFilterFlags,
  AccountFlags,
  CreateAccountStatus,
  CreateTransferStatus,
  ErrorCodes,
  TransferFlags,
  createClient,
  id as timeOrderedId,
  type Account,
  type Client,
  type CreateTransferResult,
  type Transfer,
} from 'tigerbeetle-node';
import { TIGERBEETLE_MAX_BATCH } from '../ports/ledger';
import { bounded } from '../util/batch-queue';
import {
  AccountCode,
  HUB,
  IDENTITY_ACCOUNT_ID,
  IDENTITY_LEDGER,
  MODEL_ACCOUNT_ID,
  TransferCode,
  accountId,
  debtorTryEndId,
  debtorTryId,
  derivedTransferId,
  ledgerOf,
  sweptReservationId,
} from './account-model';
import {
  chained,
  openAccounts,
  participantAccount,
  pendingOf,
  postedReservations,
  transfersOf,
  type Chain,
  type FinishForms,
  type ReservedAmounts,
} from './tigerbeetle-chains';
import { accountOutcome, causeOf, transferOutcome } from './tigerbeetle-results';
import { account, lookupAccountsById, transfer } from './tigerbeetle-records';
import { anyIn, latestCut, netsIn, spansOf } from './tigerbeetle-windows';
import {
  OldAccountCode,
  migrateFromOldModel,
  modelAccount,
  type MigrationInput,
  type MigrationReport,
} from './tigerbeetle-migration';
import {
  booksDebt,
  capOwners,
  debtorPrepare,
  debtorTry,
  debtorTryEnd,
  debtorWrapped,
  type ClosedCap,
} from './tigerbeetle-debtors';
import {
  LedgerUnavailableError,
  MODEL_BEFORE_THREE_EVENTS,
  OK,
  refused,
  type AccountRef,
  type HubAccountRef,
  type Ledger,
  type LedgerCommand,
  type LedgerOutcome,
  type LedgerTransferState,
  type ParticipantBalance,
  type WindowNet,
} from '../ports/ledger';

export interface TigerBeetleOptions {
  clusterId: bigint;
  replicaAddresses: string[];
}

async function identityIn(client: Client): Promise<bigint | undefined> {
  const [found] = await client.lookupAccounts([IDENTITY_ACCOUNT_ID]);
  return found?.user_data_128;
}

/**
 * Destroys `client` unless the cluster evicted it. tigerbeetle-node 0.17.9 panics, killing the
 * process, when destroy() meets a client evicted already ("attempt to unwrap error:
 * ClientInvalid": an eviction frees the client's context), and it tells no eviction but through a
 * request's error, which an idle client evicted on a ping never sees. A request made to an evicted
 * client is refused before any I/O (ERR_CLIENT_CLOSED), so one is made first: settled before the
 * next turn of the event loop, it was refused; a live client's is cancelled by destroy().
 */
async function destroyUnlessEvicted(client: Client): Promise<void> {
  const refused = client.lookupAccounts([IDENTITY_ACCOUNT_ID]).then(
    () => false,
    (error: { code?: unknown }) => error.code === ErrorCodes.ERR_CLIENT_CLOSED,
  );
  const turn = new Promise<false>((resolve) => setImmediate(() => resolve(false)));
  if (!(await Promise.race([refused, turn]))) client.destroy();
}

/**
 * The codes with which tigerbeetle-node tells the request in flight that the cluster evicted its
 * client (every later request is told ERR_CLIENT_CLOSED: tb_client's context.zig,
 * client_eviction_callback).
 */
const EVICTION_CODES: ReadonlySet<unknown> = new Set([
  ErrorCodes.ERR_CLIENT_EVICTED,
  ErrorCodes.ERR_CLIENT_RELEASE_TOO_LOW,
  ErrorCodes.ERR_CLIENT_RELEASE_TOO_HIGH,
]);

/** `client` with every failed request's error shown to `failed` before its caller sees it. */
function watched(client: Client, failed: (error: unknown) => void): Client {
  const watch = <R>(request: Promise<R>): Promise<R> =>
    request.catch((error: unknown) => {
      failed(error);
      throw error;
    });
  return {
    createAccounts: (batch) => watch(client.createAccounts(batch)),
    createTransfers: (batch) => watch(client.createTransfers(batch)),
    lookupAccounts: (batch) => watch(client.lookupAccounts(batch)),
    lookupTransfers: (batch) => watch(client.lookupTransfers(batch)),
    getAccountTransfers: (filter) => watch(client.getAccountTransfers(filter)),
    getAccountBalances: (filter) => watch(client.getAccountBalances(filter)),
    queryAccounts: (filter) => watch(client.queryAccounts(filter)),
    queryTransfers: (filter) => watch(client.queryTransfers(filter)),
    destroy: () => client.destroy(),
  };
}

/**
 * How long identity's lookup waits on the service's own client before a new client asks: a live
 * cluster answers one lookup well within it; the callers' bound (LEDGER_TIMEOUT_MS, 5 s by
 * default) leaves the new client time to register and ask.
 */
const IDENTITY_PROBE_AFTER_MS = 1_000;
/** The longest a new client asking identity is kept open. */
const IDENTITY_PROBE_MAX_MS = 30_000;

/** The service's client gave no answer within IDENTITY_PROBE_AFTER_MS. */
class ClientSilentError extends Error {}

/**
 * Requests a segment's refused chains may take in all (sendChains) however little they settle: a
 * debtor's chain, then once more where its CAP was reopened or closed anew between its lookup and
 * its request. Beyond it, another only after a request that settled a chain.
 */
const DEBTOR_ROUNDS = 4;

/**
 * What the ledger holds of a reservation: its pending transfer (under the transfer id or a
 * debtor's), its post (either post id), its void, and whether it was settled at once (GROSS).
 */
interface FinishRecord {
  pending: Transfer | undefined;
  posted: Transfer | undefined;
  voided: Transfer | undefined;
  settled: boolean;
}

/** A command's chain as sent, and how: a debtor's, under the reservations a debtor's made. */
interface SentChain {
  index: number;
  command: LedgerCommand;
  events: Transfer[];
  chain: Chain;
  /** Built as a debtor's chain (tigerbeetle-debtors.ts). */
  debtor: boolean;
  /** How a commit's or abort's reservations are finished (FinishForms). */
  forms?: FinishForms;
}

type PrepareCommand = Extract<LedgerCommand, { kind: 'prepare' }>;
type SentPrepare = SentChain & { command: PrepareCommand };

export class TigerBeetleLedger implements Ledger {
  readonly name = 'tigerbeetle' as const;
  private readonly client: Client;
  /** identity's lookup through a client of its own, while one is under way. */
  private probing: Promise<bigint | undefined> | undefined;
  /** Set by close(): the client's ERR_CLIENT_CLOSED is then ours, not an eviction. */
  private closed = false;
  /** The error code that told the cluster evicted the client, once one has (lost()). */
  private evictedWith: string | undefined;

  constructor(private readonly options: TigerBeetleOptions) {
    const client = createClient({
      cluster_id: options.clusterId,
      replica_addresses: options.replicaAddresses,
    });
    this.client = watched(client, (error) => (this.evictedWith ??= this.evictionCode(error)));
  }

  /**
   * The client is never replaced: a restart makes a new one, after the start's identity check
   * (docs/decisions/0007), so that a client never serves a ledger not verified as ours.
   */
  lost(): string | undefined {
    if (this.evictedWith === undefined) return undefined;
    return (
      `the ledger's cluster evicted this process's TigerBeetle client (${this.evictedWith}): ` +
      'it answers nothing again until the service restarts'
    );
  }

  /**
   * The batch goes out in consecutive segments (segmentsOf), one request each (two where it
   * creates accounts), so that every command sees what the commands before it did; a batch of
   * prepares, commits and aborts is a single segment.
   */
  async execute(commands: readonly LedgerCommand[]): Promise<LedgerOutcome[]> {
    const outcomes: LedgerOutcome[] = new Array(commands.length);
    let start = 0;
    for (const end of segmentsOf(commands)) {
      await this.executeSegment(commands, start, end, outcomes);
      start = end;
    }
    return outcomes;
  }

  /** Commands start..end-1: their accounts created first, then their transfers in one request. */
  private async executeSegment(
    commands: readonly LedgerCommand[],
    start: number,
    end: number,
    outcomes: LedgerOutcome[],
  ): Promise<void> {
    const accounts: Account[] = [];
    const accountOwners: { index: number; count: number }[] = [];
    const chains: SentChain[] = [];
    const reserved = await this.reservedAmounts(commands.slice(start, end));

    for (let index = start; index < end; index++) {
      const command = commands[index]!;
      if (opensAccounts(command)) {
        const opened = openAccounts(command);
        accountOwners.push({ index, count: opened.length });
        accounts.push(...opened);
        continue;
      }
      // Only this needs a lookup first (it opens its segment: it sees what came before);
      // everything else is built without awaiting.
      const built =
        command.kind === 'setActive'
          ? await this.activationOf(command)
          : transfersOf(command, reserved);
      if (built === 'noop') {
        outcomes[index] = OK;
        continue;
      }
      chains.push({ index, command, ...built, debtor: false });
    }

    if (accounts.length > 0) {
      const results = [];
      for (let i = 0; i < accounts.length; i += TIGERBEETLE_MAX_BATCH)
        results.push(
          ...(await this.client.createAccounts(accounts.slice(i, i + TIGERBEETLE_MAX_BATCH))),
        );
      let offset = 0;
      for (const owner of accountOwners) {
        outcomes[owner.index] = accountOutcome(
          results.slice(offset, offset + owner.count).map((r) => r.status),
        );
        offset += owner.count;
      }
    }
    if (chains.length > 0) await this.sendChains(chains, outcomes, reserved);
  }

  /**
   * The segment's chains in one request; those a debtor's closed CAP refused, or whose reservation
   * a debtor's chain made (sweptReservationId), built again and sent in another, up to
   * DEBTOR_ROUNDS requests in all (a CAP reopened or closed anew between lookup and request needs
   * another look). Then CAPs an admin move closed with no debt left are reopened.
   */
  private async sendChains(
    chains: SentChain[],
    outcomes: LedgerOutcome[],
    reserved: ReservedAmounts,
  ): Promise<void> {
    const closedByAdmin: SentChain[] = [];
    /** Prepares sent the debtor's way: a refusal of their own ends their DEBTOR_TRY. */
    const debtorPrepares = new Map<number, PrepareCommand>();
    let pending = chains;
    for (let round = 1; pending.length > 0; round++) {
      const results = await this.createInRequests(pending);
      const retried: SentChain[] = [];
      const refusals: { sent: SentChain; statuses: CreateTransferStatus[] }[] = [];
      let chainStart = 0;
      for (const sent of pending) {
        const chainEnd = chainStart + sent.events.length;
        // Nearly every chain is created whole: that needs no status array.
        let created = chainStart;
        while (created < chainEnd && results[created]!.status === CreateTransferStatus.created)
          created++;
        const statuses =
          created === chainEnd ? [] : results.slice(chainStart, chainEnd).map((r) => r.status);
        chainStart = chainEnd;
        if (created === chainEnd) {
          outcomes[sent.index] = OK;
          if (closesCapAsAdmin(sent)) closedByAdmin.push(sent);
          continue;
        }
        const cause = causeOf(statuses);
        if (cause !== undefined && cause === sent.chain.done) outcomes[sent.index] = OK;
        else if (mayBeRetry(sent.chain, cause)) retried.push(sent);
        else refusals.push({ sent, statuses });
      }
      if (retried.length > 0) await this.compareRetried(retried, outcomes);
      // Past DEBTOR_ROUNDS, only while each request still settles some chain: one of a debtor's
      // contending chains always goes through, unless another instance keeps closing it anew.
      const settled = pending.length - refusals.length;
      const mayTryAgain = round < DEBTOR_ROUNDS || settled > 0;
      const contended = refusals.filter(({ sent, statuses }) => debtorContended(sent, statuses));
      // Nothing of these chains was applied, and their refusals say only that CAP changed between
      // lookup and request: no refusal of the command's own. Unknown to the caller, as a timeout.
      if (!mayTryAgain && contended.length > 0)
        throw new LedgerUnavailableError(
          `${contended.length} debtors' chains met a CAP closed anew by other chains in each of ` +
            `${round} requests`,
        );
      const again = await Promise.all(
        refusals.map(({ sent, statuses }) =>
          mayTryAgain
            ? this.againAfterRefusal(sent, statuses, reserved)
            : transferOutcome(statuses),
        ),
      );
      pending = [];
      again.forEach((next, i) => {
        if (!('events' in next)) outcomes[refusals[i]!.sent.index] = next;
        else {
          pending.push(next);
          if (next.debtor && next.command.kind === 'prepare')
            debtorPrepares.set(next.index, next.command);
        }
      });
      reopenInTurn(pending);
    }
    const refusedOwn = [...debtorPrepares].filter(([index]) => refusedForGood(outcomes[index]!));
    if (refusedOwn.length > 0) await this.endDebtorTries(refusedOwn.map(([, command]) => command));
    if (closedByAdmin.length > 0) await this.reopenPaidCaps(closedByAdmin);
  }

  /**
   * The chains' events in requests of at most TigerBeetle's maximum, a chain never split: one
   * request for a segment's first try (the batch's bounds see to it), more only where debtors'
   * chains, longer than the commands', were built.
   */
  private async createInRequests(chains: readonly SentChain[]): Promise<CreateTransferResult[]> {
    const results: CreateTransferResult[] = [];
    let request: Transfer[] = [];
    const send = async (): Promise<void> => {
      const answered = await this.client.createTransfers(request);
      if (answered.length !== request.length)
        throw new Error(
          `create_transfers answered ${answered.length} results for ${request.length} events`,
        );
      results.push(...answered);
      request = [];
    };
    for (const { events } of chains) {
      if (request.length + events.length > TIGERBEETLE_MAX_BATCH) await send();
      request.push(...events);
    }
    if (request.length > 0) await send();
    return results;
  }

  /**
   * What a refused chain means, where it may mean more than its statuses say: its debtor's chain
   * to send (a closed CAP of a party), or the same command under the reservation a debtor's chain
   * made; else the outcome.
   */
  private async againAfterRefusal(
    sent: SentChain,
    statuses: CreateTransferStatus[],
    reserved: ReservedAmounts,
  ): Promise<SentChain | LedgerOutcome> {
    const at = statuses.findIndex((s) => s !== CreateTransferStatus.linked_event_failed);
    const status = statuses[at]!;
    const event = sent.events[at]!;
    const { command } = sent;
    const plain = transferOutcome(statuses);
    if (
      command.kind === 'prepare' &&
      !sent.debtor &&
      status === CreateTransferStatus.id_already_failed
    )
      return this.sweptPrepareRetried({ ...sent, command });
    const finish =
      (command.kind === 'commit' || command.kind === 'abort') &&
      event.pending_id !== 0n &&
      event.code === TransferCode.TRANSFER;
    if (
      finish &&
      (status === CreateTransferStatus.pending_transfer_not_found ||
        status === CreateTransferStatus.id_already_failed)
    )
      return this.finishAgain(sent, event, status, reserved);
    if (!debtorContended(sent, statuses)) return plain;
    if (command.kind === 'prepare') {
      if (!sent.debtor) await this.recordDebtorTry(command);
      return this.debtorsPrepare({ ...sent, command });
    }
    const caps = await this.capsClosed([...capOwners(command).values()]);
    if (!builtByChains(command)) return plain;
    // A post refused for the payer's closed CAP burnt its id: the debtor's takes another.
    const forms = new Map(sent.forms);
    if (finish && (event.flags & TransferFlags.post_pending_transfer) !== 0) {
      const transferId = transferIdOf(
        command as Extract<LedgerCommand, { kind: 'commit' }>,
        event.pending_id,
        forms,
      );
      forms.set(transferId, { reservation: event.pending_id, postSwept: true });
    }
    const built = transfersOf(command, reserved, forms);
    if (built === 'noop') return OK;
    const closedCaps = caps.filter((cap) => cap.closing !== undefined);
    return {
      ...sent,
      ...debtorWrapped(built, closedCaps, booksDebt(command)),
      debtor: true,
      forms,
    };
  }

  /**
   * A prepare whose id was refused before: where a debtor's chain made its reservation, the
   * retry is that one's (compared as compareRetried does); where its plain chain was refused for
   * the payer's closed CAP and no debtor's chain reached a verdict (its DEBTOR_TRY open: timed
   * out, contended in every round, stopped), the debtor's chain now; else (refused for a reason of
   * its own, plainly or the debtor's way) failed_before, as every refused id stays.
   */
  private async sweptPrepareRetried(sent: SentPrepare): Promise<SentChain | LedgerOutcome> {
    const { command } = sent;
    const id = sweptReservationId(command.id);
    const tried = debtorTryId(command.id);
    const found = await this.client.lookupTransfers([id, tried, debtorTryEndId(command.id)]);
    const stored = found.find((t) => t.id === id);
    if (stored !== undefined)
      return refused(sameTransfer(stored, pendingOf(command, id)) ? 'exists' : 'modified');
    const open = found.length === 1 && found[0]!.id === tried;
    return open ? this.debtorsPrepare(sent) : refused('failed_before');
  }

  /** A prepare's debtor's chain: its payer's CAP reopened (if closed), swept, the reservation. */
  private async debtorsPrepare(sent: SentPrepare): Promise<SentChain> {
    const [cap] = await this.capsClosed([...capOwners(sent.command).values()]);
    return { ...sent, ...debtorPrepare(sent.command, cap!), debtor: true };
  }

  /** Ends the DEBTOR_TRY of prepares whose debtor's chains were refused for good. */
  private endDebtorTries(commands: readonly PrepareCommand[]): Promise<void> {
    return this.writeDebtorTries(commands.map(debtorTryEnd), [
      CreateTransferStatus.pending_transfer_already_voided,
    ]);
  }

  /** Records (once) that a prepare's plain chain met its payer's closed CAP: debtorTry. */
  private recordDebtorTry(command: PrepareCommand): Promise<void> {
    return this.writeDebtorTries([debtorTry(command)], []);
  }

  /** DEBTOR_TRY events, each created, there already (`exists`), or in an `alsoDone` state. */
  private async writeDebtorTries(
    events: Transfer[],
    alsoDone: readonly CreateTransferStatus[],
  ): Promise<void> {
    const done = new Set([CreateTransferStatus.created, CreateTransferStatus.exists, ...alsoDone]);
    const results = await this.client.createTransfers(events);
    results.forEach(({ status }, i) => {
      if (!done.has(status))
        throw new Error(`DEBTOR_TRY event ${events[i]!.id}: ${CreateTransferStatus[status]}`);
    });
  }

  /**
   * A commit's or abort's finish refused for its reservation's id (not found) or its own (burnt):
   * the ledger's records of the reservation, under either id it may have been made with, say
   * which. Finished already: the retry's answer (as compareRetried gives it). Not yet: the same
   * command again under the reservation found, posted under the debtor's post id where the plain
   * one was burnt. Nothing new to try: the refusal as it is.
   */
  private async finishAgain(
    sent: SentChain,
    event: Transfer,
    status: CreateTransferStatus,
    reserved: ReservedAmounts,
  ): Promise<SentChain | LedgerOutcome> {
    const command = sent.command as Extract<LedgerCommand, { kind: 'commit' | 'abort' }>;
    const plain = transferOutcome([status]);
    const post = command.kind === 'commit';
    const forms = new Map(sent.forms);
    const transferId = transferIdOf(command, event.pending_id, forms);
    const records = await this.finishRecords(
      command.linked === undefined ? [command.id] : [command.linked.id, command.id],
    );
    const own = records.get(command.id)!;
    const failing = records.get(transferId)!;
    if (failing.pending === undefined) return plain;
    const ownFinish = post ? own.posted : own.voided;
    if (ownFinish !== undefined)
      return refused(ownFinish.amount === command.amount ? 'exists' : 'modified');
    if ((post ? failing.voided : failing.posted) !== undefined)
      return refused(post ? 'already_aborted' : 'already_committed');
    if ((post ? failing.posted : failing.voided) !== undefined)
      return refused(post ? 'already_committed' : 'already_aborted');
    const before = forms.get(transferId);
    const burnt =
      post &&
      status === CreateTransferStatus.id_already_failed &&
      event.pending_id === failing.pending.id;
    const form = {
      reservation: failing.pending.id,
      postSwept: (before?.postSwept ?? false) || burnt,
    };
    const changed =
      before === undefined
        ? form.reservation !== transferId || form.postSwept
        : before.reservation !== form.reservation || before.postSwept !== form.postSwept;
    if (!changed) return plain;
    forms.set(transferId, form);
    const built = transfersOf(command, reserved, forms);
    return built === 'noop' ? OK : { ...sent, ...built, forms };
  }

  /**
   * Per transfer id: the reservation's id (the plain one or a debtor's), and its post (either post
   * id) and void where the ledger holds them.
   */
  private async finishRecords(transferIds: readonly bigint[]): Promise<Map<bigint, FinishRecord>> {
    const finishIds = (id: bigint): bigint[] => [
      derivedTransferId(id, 'post'),
      derivedTransferId(id, 'post-swept'),
      derivedTransferId(id, 'void'),
      derivedTransferId(id, 'gross'),
    ];
    const candidates = (id: bigint): bigint[] => [id, sweptReservationId(id)];
    const found = await this.lookupTransfersAll(
      transferIds.flatMap((id) => candidates(id).flatMap((r) => [r, ...finishIds(r)])),
    );
    return new Map(
      transferIds.map((id): [bigint, FinishRecord] => {
        const pending = candidates(id)
          .map((r) => found.get(r))
          .find((t) => t !== undefined);
        if (pending === undefined)
          return [id, { pending, posted: undefined, voided: undefined, settled: false }];
        const [post, postSwept, voided, gross] = finishIds(pending.id).map((f) => found.get(f));
        return [id, { pending, posted: post ?? postSwept, voided, settled: gross !== undefined }];
      }),
    );
  }

  /**
   * Each participant's CAP with its latest closing transfer where it is closed (undefined where
   * open): while CAP is closed, its latest debit of code CLOSE is the closing transfer (a void
   * inherits the code, but a void reopens the account). `active`: its POSITION is open.
   */
  private async capsClosed(
    owners: readonly { participant: string; currency: string }[],
  ): Promise<ClosedCap[]> {
    const accounts = await lookupAccountsById(
      this.client,
      owners.flatMap((owner) => [
        participantAccount(owner, 'CAP'),
        participantAccount(owner, 'POSITION'),
      ]),
    );
    return Promise.all(
      owners.map(async (owner, i) => {
        const [cap, position] = [accounts[2 * i], accounts[2 * i + 1]];
        const active = position !== undefined && (position.flags & AccountFlags.closed) === 0;
        if (cap === undefined || (cap.flags & AccountFlags.closed) === 0)
          return { ...owner, closing: undefined, active };
        const latest = await this.latestClosing(cap.id);
        const closing =
          latest !== undefined && (latest.flags & TransferFlags.closing_debit) !== 0
            ? latest.id
            : undefined;
        return { ...owner, closing, active };
      }),
    );
  }

  /**
   * The account's latest debit of code CLOSE. While it is closed: the closing transfer (a void
   * inherits the code, but a void reopens the account).
   */
  private async latestClosing(account: bigint): Promise<Transfer | undefined> {
    const [latest] = await this.client.getAccountTransfers({
      account_id: account,
      user_data_128: 0n,
      user_data_64: 0n,
      user_data_32: 0,
      code: TransferCode.CLOSE,
      timestamp_min: 0n,
      timestamp_max: 0n,
      limit: 1,
      flags: AccountFilterFlags.debits | AccountFilterFlags.reversed,
    });
    return latest;
  }

  /**
   * An admin move that closed a CAP (booking a debt, or meeting a debtor's) reopens it where the
   * sweeps left no debt (decision 0008): else the participant's next prepare would take the
   * debtor's way once. A deactivated participant's is left closed (its liquidity debt could not be
   * swept). The void fails harmlessly where another chain reopened or closed CAP anew since: the
   * debt it may have booked is then under another closing transfer.
   */
  private async reopenPaidCaps(chains: readonly SentChain[]): Promise<void> {
    const closings = chains.flatMap((sent) => {
      const owner = [...capOwners(sent.command).values()][0]!;
      return sent.events
        .filter(
          (e) => e.code === TransferCode.CLOSE && (e.flags & TransferFlags.closing_debit) !== 0,
        )
        .map((closing) => ({ closing, owner }));
    });
    if (closings.length === 0) return;
    const roles = ['POSITION', 'DEBT', 'CAP_DEBT'] as const;
    const found = await lookupAccountsById(
      this.client,
      closings.flatMap(({ owner }) => roles.map((role) => participantAccount(owner, role))),
    );
    const paid = closings.filter((_, i) => {
      const [position, debt, capDebt] = roles.map((_role, r) => found[roles.length * i + r]);
      return (
        position !== undefined &&
        (position.flags & AccountFlags.closed) === 0 &&
        owed(debt, 'debits') === 0n &&
        owed(capDebt, 'credits') === 0n
      );
    });
    if (paid.length === 0) return;
    await this.client.createTransfers(
      paid.map(({ closing }) => ({
        ...closing,
        id: timeOrderedId(),
        flags: TransferFlags.void_pending_transfer,
        pending_id: closing.id,
      })),
    );
  }

  /**
   * The amounts of the reservations the segment's posts name (postAmount); no request where it has
   * none.
   */
  private async reservedAmounts(commands: readonly LedgerCommand[]): Promise<ReservedAmounts> {
    const ids = commands.flatMap(postedReservations);
    if (ids.length === 0) return new Map();
    return new Map((await this.client.lookupTransfers(ids)).map((t) => [t.id, t.amount]));
  }

  /**
   * A retried prepare carries a timeout recomputed from its expiration, and a retried funds out
   * reserve opens with a sweep that reports `exists` whatever follows, so compare what matters
   * (accounts, amount, payload hash and payee) against the stored transfers instead. A sweep's
   * recorded amount is what it moved. A dependent transfer's finish is a retry only where its own
   * post (void) exists; compared is that one (the receipt and settlement legs take new ids every
   * try), as the embedded ledger compares a reservation's terms.
   */
  private async compareRetried(
    retried: readonly SentChain[],
    outcomes: LedgerOutcome[],
  ): Promise<void> {
    const stored = new Map(
      (await this.client.lookupTransfers(retried.flatMap((r) => r.events.map((e) => e.id)))).map(
        (t) => [t.id, t],
      ),
    );
    for (const { index, events: all, chain } of retried) {
      const events =
        chain.linked === undefined ? all : all.slice(chain.linked.ownAt, chain.linked.ownAt + 1);
      if (chain.linked !== undefined && !stored.has(events[0]!.id)) {
        outcomes[index] = refused(chain.linked.finishedAs);
        continue;
      }
      const same = events.every((event) => {
        const existing = stored.get(event.id);
        return existing !== undefined && sameTransfer(existing, event);
      });
      outcomes[index] = refused(same ? 'exists' : 'modified');
    }
  }

  async balances(refs: readonly AccountRef[]): Promise<(ParticipantBalance | undefined)[]> {
    const roles = ['SETTLEMENT', 'POSITION', 'CAP', 'DEBT', 'CAP_DEBT'] as const;
    const ids = refs.flatMap((ref) =>
      roles.map((role) => accountId(ref.participant, ref.currency, role)),
    );
    const found = new Map((await this.client.lookupAccounts(ids)).map((a) => [a.id, a]));
    return refs.map((_, i) => {
      const [settlement, position, cap, debt, capDebt] = roles.map((_role, r) =>
        found.get(ids[roles.length * i + r]!),
      );
      if (settlement === undefined || position === undefined || cap === undefined) return undefined;
      const liquidity = settlement.debits_posted - settlement.credits_posted;
      const fundsOutReserved = settlement.credits_pending;
      // A debt is position the POSITION account could not carry: it counts as position.
      const mojaloopPosition =
        liquidity - (position.credits_posted - position.debits_posted) + owed(debt, 'debits');
      return {
        liquidity,
        fundsOutReserved,
        position: mojaloopPosition,
        reserved: position.debits_pending - fundsOutReserved,
        netDebitCap:
          cap.debits_posted - cap.credits_posted - owed(capDebt, 'credits') + mojaloopPosition,
        active: (position.flags & AccountFlags.closed) === 0,
      };
    });
  }

  async hubBalances(refs: readonly HubAccountRef[]): Promise<bigint[]> {
    const ids = refs.map((ref) => accountId(HUB, ref.currency, ref.type));
    const found = new Map((await this.client.lookupAccounts(ids)).map((a) => [a.id, a]));
    return ids.map((id) => {
      const account = found.get(id);
      return account === undefined ? 0n : account.debits_posted - account.credits_posted;
    });
  }

  async windowNets(window: number, refs: readonly AccountRef[]): Promise<WindowNet[]> {
    const currencies = [...new Set(refs.map((ref) => ref.currency))];
    const spans = await spansOf(this.client, window, currencies);
    return netsIn(this.client, refs, new Map(currencies.map((c, i) => [c, spans[i]!])));
  }

  /** Per currency: its span, then one receipt in it. */
  async windowMoved(window: number, currencies: readonly string[]): Promise<boolean[]> {
    const spans = await spansOf(this.client, window, currencies);
    return Promise.all(
      currencies.map((currency, i) => anyIn(this.client, currency, TransferCode.RECEIPT, spans[i])),
    );
  }

  /**
   * Per currency, two requests: the latest cut, then one GROSS event after it. Timestamps are the
   * cluster's, strictly increasing, so "after" is the order in which the ledger saved them.
   */
  async grossSinceWindowClose(currencies: readonly string[]): Promise<boolean[]> {
    return Promise.all(
      currencies.map(async (currency) => {
        const cut = await latestCut(this.client, currency);
        return anyIn(this.client, currency, TransferCode.GROSS, {
          after: cut?.timestamp ?? 0n,
          upTo: undefined,
        });
      }),
    );
  }

  async latestCutWindow(): Promise<number | undefined> {
    const cut = await latestCut(this.client, undefined);
    return cut === undefined ? undefined : Number(cut.user_data_64);
  }

  /**
   * Which ledger answers at these addresses now. A cluster formatted anew under a running client
   * evicts it (its session is unknown there), or, where the client had followed the old cluster
   * to a later view, leaves it waiting for ever: it ignores the new cluster's eviction, sent from
   * an older view. Either way the client answers nothing again, so a client of its own asks, one
   * at a time.
   */
  async identity(): Promise<bigint | undefined> {
    if (this.probing === undefined) {
      try {
        return await bounded(
          identityIn(this.client),
          IDENTITY_PROBE_AFTER_MS,
          (reason) => new ClientSilentError(reason),
        );
      } catch (error) {
        const silent = error instanceof ClientSilentError;
        if (this.closed || (this.evictedWith === undefined && !silent)) throw error;
      }
    }
    this.probing ??= this.identityByNewClient().finally(() => (this.probing = undefined));
    return this.probing;
  }

  /**
   * The code of `error` where it says the cluster evicted the client (a "closed" the service did
   * not cause is one); undefined where it does not.
   */
  private evictionCode(error: unknown): string | undefined {
    const code = (error as { code?: unknown }).code;
    const evicted =
      EVICTION_CODES.has(code) || (code === ErrorCodes.ERR_CLIENT_CLOSED && !this.closed);
    return evicted ? String(code) : undefined;
  }

  /** Closed after IDENTITY_PROBE_MAX_MS answered or not: a cluster down answers nothing. */
  private async identityByNewClient(): Promise<bigint | undefined> {
    const probe = createClient({
      cluster_id: this.options.clusterId,
      replica_addresses: this.options.replicaAddresses,
    });
    const closing = setTimeout(() => void destroyUnlessEvicted(probe), IDENTITY_PROBE_MAX_MS);
    try {
      return await identityIn(probe);
    } finally {
      clearTimeout(closing);
      await destroyUnlessEvicted(probe);
    }
  }

  /**
   * Accounts are immutable and idempotent by id: a concurrent first start's identity stands
   * (exists_with_different_user_data_128), and is read back.
   */
  async recordIdentity(identity: bigint): Promise<bigint> {
    const [result] = await this.client.createAccounts([
      account({
        id: IDENTITY_ACCOUNT_ID,
        ledger: IDENTITY_LEDGER,
        code: AccountCode.IDENTITY,
        flags: AccountFlags.none,
        userData128: identity,
      }),
    ]);
    const status = result?.status ?? CreateAccountStatus.created;
    const recorded = await identityIn(this.client);
    if (recorded === undefined)
      throw new Error(
        `the ledger's identity account was not created: ${CreateAccountStatus[status]}`,
      );
    return recorded;
  }

  /**
   * The model account's, else the old model's if one of its cap accounts is there (one query:
   * every participant and hub of that model had them), else none.
   */
  async ledgerModel(): Promise<number | undefined> {
    const [marker] = await this.client.lookupAccounts([MODEL_ACCOUNT_ID]);
    if (marker !== undefined) return marker.user_data_32;
    const [old] = await this.client.queryAccounts({
      user_data_128: 0n,
      user_data_64: 0n,
      user_data_32: 0,
      ledger: 0,
      code: OldAccountCode.HUB_NDC,
      timestamp_min: 0n,
      timestamp_max: 0n,
      limit: 1,
      flags: 0,
    });
    return old === undefined ? undefined : MODEL_BEFORE_THREE_EVENTS;
  }

  async recordLedgerModel(): Promise<number> {
    await this.client.createAccounts([modelAccount()]);
    const held = await this.ledgerModel();
    if (held === undefined) throw new Error("the ledger's model account was not created");
    return held;
  }

  /** The migration from the model before (tigerbeetle-migration.ts). */
  migrateFromOldModel(input: MigrationInput): Promise<MigrationReport> {
    return migrateFromOldModel(this.client, input, (refs) => this.balances(refs));
  }

  async hubsOpened(currencies: readonly string[]): Promise<boolean[]> {
    const roles = ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT', 'HUB_CAP'] as const;
    const found = await lookupAccountsById(
      this.client,
      currencies.flatMap((currency) => roles.map((role) => accountId(HUB, currency, role))),
    );
    return currencies.map((_, i) =>
      found.slice(i * roles.length, (i + 1) * roles.length).every((a) => a !== undefined),
    );
  }

  /**
   * An adjustPosition's event after its guard carries the command's id (tigerbeetle-chains.ts):
   * linked, it exists only if the whole chain was created.
   */
  async positionsAdjusted(ids: readonly bigint[]): Promise<boolean[]> {
    const found = await this.lookupTransfersAll(ids);
    return ids.map((id) => found.has(id));
  }

  /**
   * The timestamp the cluster gave the transfer's post or void (ns since the epoch), as the next
   * whole ms.
   */
  async finishedAt(ids: readonly bigint[]): Promise<(number | undefined)[]> {
    const records = await this.finishRecords(ids);
    return ids.map((id) => {
      const { posted, voided } = records.get(id)!;
      const finish = posted ?? voided;
      return finish === undefined ? undefined : Number(finish.timestamp / 1_000_000n) + 1;
    });
  }

  /** Transfers by id, in TigerBeetle's largest lookups. */
  private async lookupTransfersAll(ids: readonly bigint[]): Promise<Map<bigint, Transfer>> {
    const found = new Map<bigint, Transfer>();
    for (let i = 0; i < ids.length; i += TIGERBEETLE_MAX_BATCH) {
      for (const t of await this.client.lookupTransfers(ids.slice(i, i + TIGERBEETLE_MAX_BATCH)))
        found.set(t.id, t);
    }
    return found;
  }

  /** Any number of ids, looked up in TigerBeetle's largest lookups (finishRecords). */
  async transferStates(ids: readonly bigint[]): Promise<LedgerTransferState[]> {
    const records = await this.finishRecords(ids);
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    return ids.map((id) => {
      const { pending, posted, voided, settled } = records.get(id)!;
      if (pending === undefined) return 'unknown';
      // The GROSS leg is linked to the post: both exist or neither.
      if (posted !== undefined) return settled ? 'settled' : 'committed';
      if (voided !== undefined) return 'aborted';
      const expiresNs = pending.timestamp + BigInt(pending.timeout) * 1_000_000_000n;
      return pending.timeout > 0 && nowNs >= expiresNs ? 'expired' : 'reserved';
    });
  }

  /**
   * Debits and credits (posted and pending) over every account of the currency's ledger: double
   * entry means they are equal, always.
   */
  async trialBalance(
    currency: string,
  ): Promise<{ ledger: number; debits: bigint; credits: bigint }> {
    const ledger = ledgerOf(currency);
    let debits = 0n;
    let credits = 0n;
    let timestampMin = 0n;
    for (;;) {
      const page = await this.client.queryAccounts({
        user_data_128: 0n,
        user_data_64: 0n,
        user_data_32: 0,
        ledger,
        code: 0,
        timestamp_min: timestampMin,
        timestamp_max: 0n,
        limit: TIGERBEETLE_MAX_BATCH,
        flags: 0,
      });
      for (const account of page) {
        debits += account.debits_posted + account.debits_pending;
        credits += account.credits_posted + account.credits_pending;
      }
      if (page.length < TIGERBEETLE_MAX_BATCH) break;
      timestampMin = page[page.length - 1]!.timestamp + 1n;
    }
    return { ledger, debits, credits };
  }

  async close(): Promise<void> {
    this.closed = true;
    await destroyUnlessEvicted(this.client);
  }

  /**
   * Deactivation closes the POSITION account with a pending closing transfer; reactivation voids
   * the latest one. Both are idempotent: closing a closed account or opening an open one is a
   * no-op, and so is losing the race to another instance (or batch in flight) that did the same
   * between the lookup and the transfer: the account already closed, the closing transfer already
   * voided.
   */
  private async activationOf(
    command: Extract<LedgerCommand, { kind: 'setActive' }>,
  ): Promise<{ events: Transfer[]; chain: Chain } | 'noop'> {
    const position = participantAccount(command, 'POSITION');
    // Every event of either direction: a transfer of nothing from the POSITION account.
    const closeEvent = {
      id: command.id,
      ledger: ledgerOf(command.currency),
      code: TransferCode.CLOSE,
      debit: position,
      credit: participantAccount(command, 'SETTLEMENT'),
      amount: 0n,
    };
    const [account] = await this.client.lookupAccounts([position]);
    if (account === undefined) {
      // Let the ledger answer not_found through an event that names the missing account.
      return chained([transfer(closeEvent)]);
    }
    const closed = (account.flags & AccountFlags.closed) !== 0;
    if (closed === !command.active) return 'noop';
    if (!command.active) {
      const closing = transfer({
        ...closeEvent,
        flags: TransferFlags.pending | TransferFlags.closing_debit,
      });
      return withDone(chained([closing]), CreateTransferStatus.debit_account_already_closed);
    }
    const latestClosing = await this.latestClosing(position);
    // While the account is closed, its latest code-CLOSE debit is the closing transfer (a void
    // inherits the code, but a void reopens the account).
    if (latestClosing === undefined || (latestClosing.flags & TransferFlags.closing_debit) === 0) {
      throw new Error(
        `account ${command.participant}/${command.currency} is closed but its latest CLOSE transfer is not a closing one`,
      );
    }
    const reopening = transfer({
      ...closeEvent,
      flags: TransferFlags.void_pending_transfer,
      pendingId: latestClosing.id,
    });
    return withDone(chained([reopening]), CreateTransferStatus.pending_transfer_already_voided);
  }
}

/**
 * A chain's failure that may be its own earlier try, for compareRetried to tell: a recomputed
 * timeout, or an `exists` of a chain whose first event says nothing of the rest (Chain).
 */
function mayBeRetry(chain: Chain, cause: CreateTransferStatus | undefined): boolean {
  if (cause === CreateTransferStatus.exists_with_different_timeout) return chain.compareOnRetry;
  // A finish made alone (not linked) met again in a dependent transfer's chain, or the reverse.
  if (cause === CreateTransferStatus.exists_with_different_flags) return chain.linked !== undefined;
  if (cause === CreateTransferStatus.exists)
    return chain.compareOnRetry || chain.linked !== undefined;
  return false;
}

type AccountOpening = Extract<LedgerCommand, { kind: 'openHub' | 'openParticipant' }>;

/** The commands that create accounts, not transfers. */
function opensAccounts(command: LedgerCommand): command is AccountOpening {
  return command.kind === 'openHub' || command.kind === 'openParticipant';
}

function withDone(
  built: { events: Transfer[]; chain: Chain },
  done: CreateTransferStatus,
): { events: Transfer[]; chain: Chain } {
  built.chain.done = done;
  return built;
}

/**
 * Where the batch is cut (each segment's end): before a command that must see what the commands
 * before it did and would not within one request — one that looks the cluster up while it is
 * built (setActive), one that opens accounts after a transfer (accounts of a request are created
 * before its transfers), a funds out commit after its reserve (its amount is looked up before the
 * segment is sent). Prepares, commits, aborts and window cuts never cut: the hot path stays one
 * request, and so do the cuts of one close, whatever their currencies.
 */
export function segmentsOf(commands: readonly LedgerCommand[]): number[] {
  const ends: number[] = [];
  let transfers = false;
  const reserves = new Set<bigint>();
  commands.forEach((command, index) => {
    const opens = opensAccounts(command);
    const cut =
      command.kind === 'setActive' ||
      (opens && transfers) ||
      (command.kind === 'fundsOutCommit' && reserves.has(command.id));
    if (cut && index > 0) {
      ends.push(index);
      transfers = false;
      reserves.clear();
    }
    transfers ||= !opens;
    if (command.kind === 'fundsOutReserve') reserves.add(command.id);
  });
  ends.push(commands.length);
  return ends;
}

/**
 * What a debt account is owed: DEBT's debit balance, CAP_DEBT's credit balance (0 where the
 * account is not there).
 */
function owed(account: Account | undefined, balance: 'debits' | 'credits'): bigint {
  if (account === undefined) return 0n;
  const owing = balance === 'debits' ? account.debits_posted : account.credits_posted;
  const repaid = balance === 'debits' ? account.credits_posted : account.debits_posted;
  return owing - repaid;
}

/**
 * Whether a stored transfer is the event sent again: what matters of it (accounts, amount, payload
 * hash and payee, ledger, code, flags); a sweep's recorded amount is what it moved.
 */
function sameTransfer(existing: Transfer, event: Transfer): boolean {
  return (
    existing.debit_account_id === event.debit_account_id &&
    existing.credit_account_id === event.credit_account_id &&
    (existing.amount === event.amount || event.code === TransferCode.SWEEP) &&
    // A post or void sent without user data is stored with its pending transfer's.
    (existing.user_data_128 === event.user_data_128 ||
      (event.pending_id !== 0n && event.user_data_128 === 0n)) &&
    (existing.user_data_64 === event.user_data_64 ||
      (event.pending_id !== 0n && event.user_data_64 === 0n)) &&
    existing.ledger === event.ledger &&
    existing.code === event.code &&
    // Whether it was linked to the next event says nothing of the transfer itself.
    (existing.flags & ~TransferFlags.linked) === (event.flags & ~TransferFlags.linked)
  );
}

/** The commands whose chains tigerbeetle-chains.ts builds without a lookup. */
function builtByChains(command: LedgerCommand): command is Parameters<typeof transfersOf>[0] {
  return !opensAccounts(command) && command.kind !== 'setActive';
}

/**
 * Debtors' chains of one request that name the same CAP: each looked up the same closing transfer,
 * but only the first can void it. Each later one voids instead the closing the one before it
 * leaves (its id is ours); after a prepare's chain, which leaves CAP open or as it found it, the
 * next keeps what it found, and the request after tells which held.
 */
function reopenInTurn(chains: readonly SentChain[]): void {
  const leftClosedBy = new Map<bigint, bigint | undefined>();
  for (const { events } of chains) {
    for (const event of events) {
      const isClose = event.code === TransferCode.CLOSE;
      const cap = event.debit_account_id;
      if (isClose && (event.flags & TransferFlags.void_pending_transfer) !== 0) {
        const previous = leftClosedBy.get(cap);
        if (previous !== undefined) event.pending_id = previous;
        leftClosedBy.set(cap, undefined);
      } else if (isClose && (event.flags & TransferFlags.closing_debit) !== 0) {
        leftClosedBy.set(cap, event.id);
      }
    }
  }
}

/** An admin move of a cap or position that closed (or closed again) the participant's CAP. */
function closesCapAsAdmin(sent: SentChain): boolean {
  const { kind } = sent.command;
  return (
    (kind === 'adjustNdc' || kind === 'adjustPosition') && (booksDebt(sent.command) || sent.debtor)
  );
}

/** The account whose closing refused `event`, if that refused it. */
/**
 * Whether a chain was refused for a debtor's CAP: closed (a party owes), or, for a debtor's chain,
 * its reopening lost to another chain's (CAP reopened or closed anew since its lookup).
 */
function debtorContended(sent: SentChain, statuses: CreateTransferStatus[]): boolean {
  const at = statuses.findIndex((s) => s !== CreateTransferStatus.linked_event_failed);
  const event = sent.events[at]!;
  if (sent.debtor && event.code === TransferCode.CLOSE && event.pending_id !== 0n) return true;
  const closed = closedAccountOf(event, statuses[at]!);
  return closed !== undefined && capOwners(sent.command).has(closed);
}

function closedAccountOf(event: Transfer, status: CreateTransferStatus): bigint | undefined {
  if (status === CreateTransferStatus.debit_account_already_closed) return event.debit_account_id;
  if (status === CreateTransferStatus.credit_account_already_closed) return event.credit_account_id;
  return undefined;
}

/** Which of a commit's (abort's) reservations a finish names: its transfer id, by pending id. */
function transferIdOf(
  command: Extract<LedgerCommand, { kind: 'commit' | 'abort' }>,
  pendingId: bigint,
  forms: FinishForms,
): bigint {
  const ids = command.linked === undefined ? [command.id] : [command.linked.id, command.id];
  return ids.find((id) => (forms.get(id)?.reservation ?? id) === pendingId) ?? command.id;
}

/** A refusal that ends a command for good: not `exists` or `modified` (another's record). */
function refusedForGood(outcome: LedgerOutcome): boolean {
  return !outcome.ok && outcome.refusal !== 'exists' && outcome.refusal !== 'modified';
}
