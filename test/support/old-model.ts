/**
 * A cluster written as the version before the 3-event model wrote it (its chains, raw, with the
 * ids the migration reads: src/ledger/tigerbeetle-migration.ts): what a deployed hub holds when
 * it upgrades. Only what the migration test needs: hub and participant accounts, cap grants,
 * funds in, an initial position above liquidity and cap (both debts), prepares, commits with
 * their window legs, aborts, and a window's gate closed.
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
  AccountCode,
  HUB,
  IDENTITY_ACCOUNT_ID,
  IDENTITY_LEDGER,
  TransferCode,
  accountId,
  ledgerOf,
} from '../../src/ledger/account-model';
import {
  OldAccountCode,
  oldAccountId,
  oldGateId,
  oldLedgers,
} from '../../src/ledger/tigerbeetle-migration';
import { account, transfer } from '../../src/ledger/tigerbeetle-records';
import { sha256High128 } from '../../src/util/digest';

const AMOUNT_MAX = (1n << 128n) - 1n;

export class OldModelWriter {
  private next = 0;

  constructor(
    private readonly client: Client,
    private readonly currency: string,
  ) {}

  async identity(identity: bigint): Promise<void> {
    await this.accounts([
      account({
        id: IDENTITY_ACCOUNT_ID,
        ledger: IDENTITY_LEDGER,
        code: AccountCode.IDENTITY,
        flags: AccountFlags.none,
        userData128: identity,
      }),
    ]);
  }

  /** Linked as that version opened them (the flag is kept: the new version's opening finds it). */
  async openHub(): Promise<void> {
    const { currency } = this;
    await this.accounts([
      this.money(accountId(HUB, currency, 'HUB_RECONCILIATION'), 3, AccountFlags.linked),
      this.money(accountId(HUB, currency, 'HUB_MULTILATERAL_SETTLEMENT'), 4, AccountFlags.linked),
      this.limit(oldAccountId(HUB, currency, 'HUB_NDC'), OldAccountCode.HUB_NDC, AccountFlags.none),
    ]);
  }

  async openParticipant(participant: string): Promise<void> {
    const { currency } = this;
    const must = { debits: AccountFlags.debits_must_not_exceed_credits };
    const { linked } = AccountFlags;
    await this.accounts([
      this.money(accountId(participant, currency, 'SETTLEMENT'), 2, linked),
      this.money(accountId(participant, currency, 'POSITION'), 1, must.debits | linked),
      this.limit(oldAccountId(participant, currency, 'NDC'), OldAccountCode.NDC, must.debits),
      this.money(
        accountId(participant, currency, 'DEBT'),
        102,
        AccountFlags.credits_must_not_exceed_debits | linked,
      ),
      this.limit(
        oldAccountId(participant, currency, 'NDC_DEBT'),
        OldAccountCode.NDC_DEBT,
        AccountFlags.credits_must_not_exceed_debits,
      ),
    ]);
  }

  async grantCap(participant: string, amount: bigint): Promise<void> {
    await this.chain([
      this.onLimit(TransferCode.NDC_ADJUST, ['HUB_NDC', HUB], ['NDC', participant], amount),
    ]);
  }

  async fundsIn(participant: string, amount: bigint): Promise<void> {
    await this.chain([
      this.onMoney(
        TransferCode.FUNDS_IN,
        ['SETTLEMENT', participant],
        ['POSITION', participant],
        amount,
      ),
    ]);
  }

  /** A position owed from the start, past liquidity and cap: both debts booked and swept. */
  async initialPosition(participant: string, amount: bigint): Promise<void> {
    const code = TransferCode.INITIAL_POSITION;
    await this.chain([
      this.onMoney(code, ['DEBT', participant], ['HUB_MULTILATERAL_SETTLEMENT', HUB], amount),
      this.sweep(participant, 'money'),
      this.onLimit(code, ['NDC_DEBT', participant], ['HUB_NDC', HUB], amount),
      this.sweep(participant, 'limit'),
    ]);
  }

  /** A prepare's chain: a sweep and a pending transfer on each ledger; its id answered. */
  async prepare(
    parties: { payer: string; payee: string },
    amount: bigint,
    timeout: number,
  ): Promise<bigint> {
    const { payer, payee } = parties;
    const id = this.id();
    const pendings = [
      this.onMoney(TransferCode.TRANSFER, ['POSITION', payer], ['POSITION', payee], amount),
      this.onLimit(TransferCode.TRANSFER, ['NDC', payer], ['NDC', payee], amount),
    ];
    pendings[0]!.id = id;
    pendings[1]!.id = sha256High128(`old:${id}:ndc`);
    for (const pending of pendings) {
      pending.flags = TransferFlags.pending;
      pending.timeout = timeout;
    }
    await this.chain([
      this.sweep(payer, 'money'),
      pendings[0]!,
      this.sweep(payer, 'limit'),
      pendings[1]!,
    ]);
    return id;
  }

  /** Both pending transfers posted, and the commit's two legs through window `window`'s gate. */
  async commit(
    id: bigint,
    parties: { payer: string; payee: string },
    amount: bigint,
    window: number,
  ): Promise<void> {
    const { payer, payee } = parties;
    const { currency } = this;
    const windowLedger = oldLedgers(currency).window;
    const windowAccount = (owner: string): bigint =>
      sha256High128(`window:${window}:${owner}:${currency}`);
    await this.accounts(
      [payer, payee, HUB].map((owner) =>
        account({
          id: windowAccount(owner),
          ledger: windowLedger,
          code: owner === HUB ? OldAccountCode.WINDOW_HUB : 104,
          flags: AccountFlags.none,
        }),
      ),
    );
    const leg = (debit: bigint, credit: bigint): Transfer =>
      transfer({ id: this.id(), ledger: windowLedger, code: 9, debit, credit, amount });
    await this.chain([
      ...this.finishes(id, TransferFlags.post_pending_transfer, amount),
      leg(windowAccount(payer), windowAccount(HUB)),
      leg(windowAccount(HUB), windowAccount(payee)),
    ]);
  }

  async abort(id: bigint, amount: bigint): Promise<void> {
    await this.chain(this.finishes(id, TransferFlags.void_pending_transfer, amount));
  }

  /** Window `window`'s gate closed for good, as the old close did (the anchor: window 0's). */
  async closeWindow(window: number): Promise<void> {
    const windowLedger = oldLedgers(this.currency).window;
    const gates = [window, 0].map((w) =>
      account({
        id: oldGateId(w, this.currency),
        ledger: windowLedger,
        code: OldAccountCode.WINDOW_HUB,
        flags: AccountFlags.none,
      }),
    );
    await this.accounts(gates);
    await this.chain([
      transfer({
        id: this.id(),
        ledger: windowLedger,
        code: TransferCode.CLOSE,
        debit: gates[0]!.id,
        credit: gates[1]!.id,
        amount: 0n,
        flags: TransferFlags.pending | TransferFlags.closing_debit,
      }),
    ]);
  }

  private finishes(id: bigint, flags: number, amount: bigint): Transfer[] {
    const pending = (pendingId: bigint): Transfer => ({
      ...transfer({ id: this.id(), ledger: 0, code: 0, debit: 0n, credit: 0n, amount }),
      pending_id: pendingId,
      flags,
    });
    return [pending(id), pending(sha256High128(`old:${id}:ndc`))];
  }

  private sweep(participant: string, ledger: 'money' | 'limit'): Transfer {
    const [from, to] =
      ledger === 'money'
        ? [
            accountId(participant, this.currency, 'POSITION'),
            accountId(participant, this.currency, 'DEBT'),
          ]
        : [
            oldAccountId(participant, this.currency, 'NDC'),
            oldAccountId(participant, this.currency, 'NDC_DEBT'),
          ];
    return transfer({
      id: this.id(),
      ledger: ledger === 'money' ? ledgerOf(this.currency) : oldLedgers(this.currency).limit,
      code: TransferCode.SWEEP,
      debit: from,
      credit: to,
      amount: AMOUNT_MAX,
      flags: TransferFlags.balancing_debit | TransferFlags.balancing_credit,
    });
  }

  private onMoney(
    code: number,
    debit: [Parameters<typeof accountId>[2], string],
    credit: [Parameters<typeof accountId>[2], string],
    amount: bigint,
  ): Transfer {
    return transfer({
      id: this.id(),
      ledger: ledgerOf(this.currency),
      code,
      debit: accountId(debit[1], this.currency, debit[0]),
      credit: accountId(credit[1], this.currency, credit[0]),
      amount,
    });
  }

  private onLimit(
    code: number,
    debit: ['NDC' | 'NDC_DEBT' | 'HUB_NDC', string],
    credit: ['NDC' | 'NDC_DEBT' | 'HUB_NDC', string],
    amount: bigint,
  ): Transfer {
    return transfer({
      id: this.id(),
      ledger: oldLedgers(this.currency).limit,
      code,
      debit: oldAccountId(debit[1], this.currency, debit[0]),
      credit: oldAccountId(credit[1], this.currency, credit[0]),
      amount,
    });
  }

  private money(id: bigint, code: number, flags: number): Account {
    return account({ id, ledger: ledgerOf(this.currency), code, flags });
  }

  private limit(id: bigint, code: number, flags: number): Account {
    return account({ id, ledger: oldLedgers(this.currency).limit, code, flags });
  }

  private id(): bigint {
    return sha256High128(`old:${this.currency}:${Date.now()}:${this.next++}`);
  }

  private async accounts(accounts: Account[]): Promise<void> {
    for (const [i, result] of (await this.client.createAccounts(accounts)).entries())
      if (
        result.status !== CreateAccountStatus.created &&
        result.status !== CreateAccountStatus.exists
      )
        throw new Error(`old-model account ${i}: ${CreateAccountStatus[result.status]}`);
  }

  private async chain(events: Transfer[]): Promise<void> {
    events.forEach((event, i) => {
      if (i < events.length - 1) event.flags |= TransferFlags.linked;
    });
    const statuses = (await this.client.createTransfers(events)).map((r) => r.status);
    const failed = statuses.findIndex((s) => s !== CreateTransferStatus.created);
    if (failed >= 0)
      throw new Error(
        `old-model chain: event ${failed} ${CreateTransferStatus[statuses[failed]!]}`,
      );
  }
}
