/**
 * Participant onboarding and administration: the admin API of central-ledger. Metadata goes to
 * the MetadataStore; every amount goes to the ledger as one atomic command. Each change of a
 * participant runs in its turn (MetadataStore.participantTurn: across every instance sharing the
 * store) and starts from the participant as stored, never from a cached copy, so a change made on
 * another instance a moment before is neither undone in the metadata nor left out of the ledger.
 */
import type { Ledger, LedgerCommand, LedgerOutcome, ParticipantBalance } from '../../ports/ledger';
import type { Currency } from '../../ports/currencies';
import { LEDGER_ACCOUNT_TYPES } from '../../ports/enumerations';
import { FspiopCode, FspiopError, fspiopError, validationError } from '../shared/errors';
import { hashOf, randomId, stableId } from '../shared/hashing';
import { transferIdToU128 } from '../shared/ids';
import type {
  FundsRecord,
  HubAccount,
  HubAccountType,
  MetadataStore,
  Participant,
  ParticipantCurrency,
  SettlementModel,
} from '../../ports/metadata';
import { formatAmount, parseAmount, parseSignedAmount, requireCurrency } from '../shared/money';

/**
 * How many fresh ids one admin request may try: a refused ledger command poisons its id for good,
 * so the same request sent again once it can succeed uses the next id of its own sequence.
 */
const MAX_ADMIN_ATTEMPTS = 64;

/** The hub's own participant name, as central-ledger seeds it. */
export const HUB_NAME = 'Hub';
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{1,29}$/;

/** Amounts in views are exact decimal text; the admin API writes them as JSON numbers. */
export interface AccountView {
  id: number;
  ledgerAccountType: string;
  currency: string;
  isActive: 0 | 1;
  value: string;
  reservedValue: string;
  changedDate: string;
}

export interface PositionView {
  currency: string;
  value: string;
  changedDate: string;
}

export interface LimitView {
  currency: string;
  limit: { type: 'NET_DEBIT_CAP'; value: string; alarmPercentage: number };
}

export interface FundsAction {
  transferId: string;
  externalReference: string;
  action: 'recordFundsIn' | 'recordFundsOutPrepareReserve';
  reason: string;
  /** The amount as exact decimal text (a JSON number's own text, or a numeric string). */
  amount: { amount: string; currency: string };
}

/** initialPositionAndLimits and PUT …/limits, amounts as exact decimal text. */
export interface LimitRequest {
  currency: string;
  limit: { type: string; value: string; alarmPercentage?: number };
  initialPosition?: string;
}

export class ParticipantService {
  constructor(
    private readonly store: MetadataStore,
    private readonly ledger: Ledger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** central-ledger answers every refusal here with 3003, in this order. */
  async addHubAccount(name: string, body: { currency: string; type: string }): Promise<HubAccount> {
    if (!hubNamed(name) && (await this.store.participant(name)) === undefined)
      throw fspiopError(FspiopCode.ADD_PARTY_INFO, 'Participant was not found.');
    if (!LEDGER_ACCOUNT_TYPE_NAMES.has(body.type))
      throw fspiopError(FspiopCode.ADD_PARTY_INFO, 'Ledger account type was not found.');
    requireCurrency(body.currency);
    return this.store.participantTurn(HUB_NAME, async () => {
      const existing = await this.store.hubAccounts();
      if (
        hubNamed(name) &&
        existing.some((a) => a.currency === body.currency && a.type === body.type)
      ) {
        throw fspiopError(FspiopCode.ADD_PARTY_INFO, 'Hub account has already been registered.');
      }
      if (!hubNamed(name))
        throw fspiopError(
          FspiopCode.ADD_PARTY_INFO,
          'Endpoint is reserved for creation of Hub account types only.',
        );
      if (body.type !== 'HUB_RECONCILIATION' && body.type !== 'HUB_MULTILATERAL_SETTLEMENT') {
        throw fspiopError(
          FspiopCode.ADD_PARTY_INFO,
          'The requested hub operator account type is not allowed.',
        );
      }
      this.expectLedger(await this.execute({ kind: 'openHub', currency: body.currency }));
      return this.store.addHubAccount({
        type: body.type as HubAccountType,
        currency: body.currency,
        createdDate: this.now().toISOString(),
      });
    });
  }

  async addSettlementModel(model: SettlementModel): Promise<void> {
    if (model.currency !== null) requireCurrency(model.currency);
    await this.store.participantTurn(HUB_NAME, async () => {
      const models = await this.store.settlementModels();
      if (models.some((m) => m.name === model.name))
        throw fspiopError(
          FspiopCode.GENERIC_CLIENT,
          `Settlement model ${model.name} already exists`,
        );
      const sameScope = models.find(
        (m) => m.currency === model.currency && m.ledgerAccountType === model.ledgerAccountType,
      );
      if (sameScope !== undefined)
        throw fspiopError(
          FspiopCode.GENERIC_CLIENT,
          `Settlement model ${sameScope.name} already covers this currency and account type`,
        );
      await this.store.addSettlementModel(model);
    });
  }

  hubAccounts(): Promise<HubAccount[]> {
    return this.store.hubAccounts();
  }

  settlementModels(): Promise<SettlementModel[]> {
    return this.store.settlementModels();
  }

  async settlementModel(name: string): Promise<SettlementModel> {
    const model = (await this.store.settlementModels()).find((m) => m.name === name);
    if (model === undefined)
      throw fspiopError(FspiopCode.ID_NOT_FOUND, `Settlement model ${name} not found`);
    return model;
  }

  async create(body: { name: string; currency: string; isProxy?: boolean }): Promise<Participant> {
    if (!NAME_PATTERN.test(body.name))
      throw fspiopError(
        FspiopCode.MALFORMED_SYNTAX,
        'name must be 2-30 letters, digits, ".", "_" or "-"',
      );
    if (hubNamed(body.name))
      throw fspiopError(FspiopCode.GENERIC_CLIENT, `${HUB_NAME} is reserved`);
    const currency = requireCurrency(body.currency);
    return this.store.participantTurn(body.name, async () => {
      const hubTypes = new Set(
        (await this.store.hubAccounts())
          .filter((a) => a.currency === currency.code)
          .map((a) => a.type),
      );
      for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT'] as const) {
        if (!hubTypes.has(type))
          throw fspiopError(
            FspiopCode.ADD_PARTY_INFO,
            `Hub ${type} account for ${currency.code} does not exist`,
          );
      }
      const models = await this.store.settlementModels();
      if (!models.some((m) => m.currency === currency.code || m.currency === null)) {
        throw fspiopError(
          FspiopCode.GENERIC_SETTLEMENT,
          'Unable to find a matching or default, Settlement Model',
        );
      }
      const stored = await this.store.participant(body.name, { fresh: true });
      const existing = stored === undefined ? undefined : structuredClone(stored);
      if (existing?.currencies.some((c) => c.currency === currency.code)) {
        throw fspiopError(
          FspiopCode.GENERIC_CLIENT,
          'Participant currency has already been registered',
        );
      }
      this.expectLedger(
        await this.execute({
          kind: 'openParticipant',
          participant: existing?.name ?? body.name,
          currency: currency.code,
        }),
      );
      const created = this.now().toISOString();
      const participant: Participant = existing ?? {
        name: body.name,
        id: await this.store.nextId(),
        isActive: true,
        ...(body.isProxy === true ? { isProxy: true } : {}),
        created,
        createdBy: 'unknown',
        currencies: [],
        endpoints: [],
      };
      participant.currencies.push({
        currency: currency.code,
        positionAccountId: await this.store.nextId(),
        settlementAccountId: await this.store.nextId(),
        positionAccountActive: true,
        createdDate: created,
        netDebitCap: undefined,
      });
      await this.store.saveParticipant(participant);
      return participant;
    });
  }

  async list(): Promise<Participant[]> {
    return [
      await this.hubParticipant(),
      ...(await this.store.participants()).filter((p) => p.name !== HUB_NAME),
    ];
  }

  /**
   * @param options.fresh read as stored, not from this instance's cache (MetadataStore.participant)
   */
  async get(name: string, options: { fresh?: boolean } = {}): Promise<Participant> {
    if (hubNamed(name)) return this.hubParticipant(options);
    const participant = await this.stored(name, options);
    if (withLedgerActivity(participant, await this.activityInLedger(participant)) === undefined)
      return participant;
    // Set right in its turn: a change of it may stand between its ledger command and its save.
    return this.store.participantTurn(name, () => this.reconciled(name));
  }

  private async stored(name: string, options: { fresh?: boolean }): Promise<Participant> {
    const participant = await this.store.participant(name, options);
    if (participant === undefined)
      throw fspiopError(FspiopCode.ID_NOT_FOUND, `Participant ${name} not found`);
    return participant;
  }

  /**
   * In the participant's turn: the participant as stored, its activity as its ledger accounts
   * have it, saved so where a change's ledger command was applied but its save was not (a lost
   * answer, a crash), or its save but not its command, the ledger's state stands.
   */
  private async reconciled(name: string): Promise<Participant> {
    const participant = await this.stored(name, { fresh: true });
    const fromLedger = withLedgerActivity(participant, await this.activityInLedger(participant));
    if (fromLedger === undefined) return participant;
    await this.store.saveParticipant(fromLedger);
    return fromLedger;
  }

  /** Whether each of the participant's currencies' accounts is open; undefined: none in it. */
  private async activityInLedger(participant: Participant): Promise<(boolean | undefined)[]> {
    const balances = await this.ledger.balances(
      participant.currencies.map((c) => ({ participant: participant.name, currency: c.currency })),
    );
    return balances.map((balance) => balance?.active);
  }

  /**
   * A copy to change and save, as stored (in the participant's turn, so nothing changes it
   * meanwhile): what the store hands out is shared and read-only, and may be cached.
   */
  private async editable(name: string): Promise<Participant> {
    return structuredClone(await this.inTurn(name));
  }

  /** In the participant's turn: as stored, reconciled with the ledger (see reconciled). */
  private inTurn(name: string): Promise<Participant> {
    return hubNamed(name) ? this.hubParticipant({ fresh: true }) : this.reconciled(name);
  }

  /** Participant-level isActive: deactivation closes every one of its accounts in the ledger. */
  async setActive(name: string, isActive: boolean): Promise<Participant> {
    return this.store.participantTurn(name, async () => {
      const participant = await this.editable(name);
      if (hubNamed(name)) throw fspiopError(FspiopCode.VALIDATION, 'the Hub cannot be deactivated');
      participant.isActive = isActive;
      await this.syncLedgerActivity(participant);
      await this.store.saveParticipant(participant);
      return participant;
    });
  }

  /**
   * The net debit cap and the initial position, once. As in central-ledger neither is checked
   * against liquidity or the other: a participant may start owing more than it deposited, and
   * then it can receive but not send until funds in (or receipts) cover its position.
   */
  async initialPositionAndLimits(name: string, body: LimitRequest): Promise<void> {
    const currency = requireCurrency(body.currency);
    const ndc = parseAmount(body.limit.value, currency, { allowZero: true });
    const initialPosition =
      body.initialPosition === undefined ? 0n : parseSignedAmount(body.initialPosition, currency);
    await this.store.participantTurn(name, async () => {
      const participant = await this.editable(name);
      const account = accountIn(participant, currency);
      if (account.netDebitCap !== undefined)
        throw fspiopError(FspiopCode.INTERNAL, 'Participant Limit or Initial Position already set');
      const key = `${name}:${currency.code}`;
      this.expectLedger(
        await this.executeFresh(`initial-ndc:${key}`, stableId(`initial-ndc:${key}`), (id) => ({
          kind: 'adjustNdc',
          id,
          participant: name,
          currency: currency.code,
          delta: ndc,
        })),
      );
      this.expectLedger(
        await this.executeFresh(`initial:${key}`, stableId(`initial:${key}`), (id) => ({
          kind: 'adjustPosition',
          id,
          participant: name,
          currency: currency.code,
          amount: initialPosition,
          purpose: 'initial',
        })),
      );
      account.netDebitCap = {
        value: formatAmount(ndc, currency),
        alarmPercentage: body.limit.alarmPercentage ?? 10,
      };
      await this.store.saveParticipant(participant);
    });
  }

  /** Limits as the ledger holds them (the cap), with the alarm percentage configured. */
  async limits(name: string, filter: { currency?: string; type?: string }): Promise<LimitView[]> {
    const participant = await this.get(name);
    if (filter.currency !== undefined) accountIn(participant, requireCurrency(filter.currency));
    return (await this.limitsOf([participant], filter)).map(({ view }) => view);
  }

  /** GET /participants/limits: every participant's limits (central-ledger lists active ones). */
  async allLimits(filter: {
    currency?: string;
    type?: string;
  }): Promise<(LimitView & { name: string })[]> {
    const participants = (await this.store.participants()).filter(
      (p) => p.name !== HUB_NAME && p.isActive,
    );
    return (await this.limitsOf(participants, filter)).map(({ name, view }) => ({ name, ...view }));
  }

  private async limitsOf(
    participants: readonly Participant[],
    filter: { currency?: string; type?: string },
  ): Promise<{ name: string; view: LimitView }[]> {
    if (filter.type !== undefined && filter.type !== 'NET_DEBIT_CAP') return [];
    const set = participants.flatMap((p) =>
      p.currencies
        .filter(
          (c) =>
            c.netDebitCap !== undefined &&
            (filter.currency === undefined || c.currency === filter.currency),
        )
        .map((c) => ({ participant: p, account: c })),
    );
    const balances = await this.ledger.balances(
      set.map(({ participant, account }) => ({
        participant: participant.name,
        currency: account.currency,
      })),
    );
    return set.map(({ participant, account }, i) => {
      const cap = balances[i]?.netDebitCap;
      if (cap === undefined)
        throw fspiopError(
          FspiopCode.INTERNAL,
          `ledger has no accounts for ${participant.name} ${account.currency}`,
        );
      return {
        name: participant.name,
        view: {
          currency: account.currency,
          limit: {
            type: 'NET_DEBIT_CAP' as const,
            value: formatAmount(cap, requireCurrency(account.currency)),
            alarmPercentage: account.netDebitCap!.alarmPercentage,
          },
        },
      };
    });
  }

  /**
   * Changes the net debit cap by exactly the difference, in one ledger command. Any value
   * central-ledger takes is taken: a cap below the position (or below zero) stops the
   * participant sending until its position falls under it, and is never refused.
   */
  async adjustLimit(name: string, body: LimitRequest): Promise<LimitView> {
    const currency = requireCurrency(body.currency);
    const value = parseSignedAmount(body.limit.value, currency);
    return this.store.participantTurn(name, async () => {
      const participant = await this.editable(name);
      const account = accountIn(participant, currency);
      if (account.netDebitCap === undefined)
        throw fspiopError(FspiopCode.INTERNAL, 'Participant Limit does not exist');
      // The difference is taken from the ledger's own figure, so metadata that lags a crash cannot
      // skew it.
      const [balance] = await this.balancesOf(name, [account]);
      assertApplied(
        await this.execute({
          kind: 'adjustNdc',
          id: randomId(),
          participant: name,
          currency: currency.code,
          delta: value - balance!.netDebitCap,
        }),
      );
      account.netDebitCap = {
        value: formatAmount(value, currency),
        alarmPercentage: body.limit.alarmPercentage ?? account.netDebitCap.alarmPercentage,
      };
      await this.store.saveParticipant(participant);
      return { currency: currency.code, limit: { type: 'NET_DEBIT_CAP', ...account.netDebitCap } };
    });
  }

  /**
   * Positions as central-ledger reports them: a prepared, unfinished transfer is already in its
   * payer's position (and leaves it again if aborted or expired).
   */
  async positions(name: string, currencyCode?: string): Promise<PositionView[]> {
    const participant = await this.get(name);
    const currencies = participant.currencies.filter(
      (c) => currencyCode === undefined || c.currency === currencyCode,
    );
    const balances = await this.balancesOf(participant.name, currencies);
    const changedDate = this.now().toISOString();
    return currencies.map((c, i) => ({
      currency: c.currency,
      value: formatAmount(reportedPosition(balances[i]!), requireCurrency(c.currency)),
      changedDate,
    }));
  }

  /**
   * The POSITION account's value is the reported position (prepared transfers included) and the
   * SETTLEMENT account's is minus the liquidity not reserved for funds out, as central-ledger's
   * are; its reservedValue is a transient inside one position batch and reads 0 between them.
   */
  async accounts(name: string): Promise<AccountView[]> {
    if (hubNamed(name)) return this.hubAccountViews();
    const participant = await this.get(name);
    const balances = await this.balancesOf(participant.name, participant.currencies);
    const changedDate = this.now().toISOString();
    return participant.currencies.flatMap((c, i) => {
      const balance = balances[i]!;
      const currency = requireCurrency(c.currency);
      const active: 0 | 1 = c.positionAccountActive && participant.isActive ? 1 : 0;
      return [
        {
          id: c.positionAccountId,
          ledgerAccountType: 'POSITION',
          currency: c.currency,
          isActive: active,
          value: formatAmount(reportedPosition(balance), currency),
          reservedValue: '0',
          changedDate,
        },
        {
          id: c.settlementAccountId,
          ledgerAccountType: 'SETTLEMENT',
          currency: c.currency,
          isActive: active,
          value: formatAmount(balance.fundsOutReserved - balance.liquidity, currency),
          reservedValue: '0',
          changedDate,
        },
      ];
    });
  }

  /**
   * The hub's accounts as central-ledger values them: HUB_RECONCILIATION is the counterpart of
   * every funds in and committed funds out, so its value is the liquidity of all participants in
   * its currency (read from the ledger, one lookup per participant account);
   * HUB_MULTILATERAL_SETTLEMENT is the ledger's own account (debits less credits: the counterpart
   * of initial positions and settlements).
   */
  private async hubAccountViews(): Promise<AccountView[]> {
    const accounts = await this.store.hubAccounts();
    const multilateral = await this.ledger.hubBalances(
      accounts.map((a) => ({ currency: a.currency, type: a.type })),
    );
    const liquidity = new Map<string, bigint>();
    const participants = (await this.store.participants()).filter((p) => !hubNamed(p.name));
    const refs = participants.flatMap((p) =>
      p.currencies.map((c) => ({ participant: p.name, currency: c.currency })),
    );
    for (const [i, balance] of (await this.ledger.balances(refs)).entries()) {
      if (balance !== undefined)
        liquidity.set(
          refs[i]!.currency,
          (liquidity.get(refs[i]!.currency) ?? 0n) + balance.liquidity,
        );
    }
    const changedDate = this.now().toISOString();
    return accounts.map((a, i) => {
      const value =
        a.type === 'HUB_RECONCILIATION' ? (liquidity.get(a.currency) ?? 0n) : multilateral[i]!;
      return {
        id: a.id,
        ledgerAccountType: a.type,
        currency: a.currency,
        isActive: 1,
        value: formatAmount(value, requireCurrency(a.currency)),
        reservedValue: '0',
        changedDate,
      };
    });
  }

  /** Account-level isActive, for POSITION accounts only, as central-ledger allows. */
  async setAccountActive(name: string, accountId: number, isActive: boolean): Promise<void> {
    await this.store.participantTurn(name, async () => {
      const participant = await this.editable(name);
      const account = participant.currencies.find(
        (c) => c.positionAccountId === accountId || c.settlementAccountId === accountId,
      );
      if (account === undefined)
        throw fspiopError(FspiopCode.ID_NOT_FOUND, `Account ${accountId} not found for ${name}`);
      if (account.positionAccountId !== accountId)
        throw validationError('only POSITION accounts can be activated or deactivated');
      account.positionAccountActive = isActive;
      await this.syncLedgerActivity(participant);
      await this.store.saveParticipant(participant);
    });
  }

  async recordFunds(name: string, accountId: number, body: FundsAction): Promise<void> {
    const payloadHash = hashOf({ name, accountId, ...body });
    await this.store.participantTurn(name, async () => {
      const participant = await this.inTurn(name);
      const account = settlementAccount(participant, accountId);
      const currency = requireCurrency(account.currency);
      if (body.amount.currency !== currency.code)
        throw validationError(
          `amount currency ${body.amount.currency} is not the account's ${currency.code}`,
        );
      const amount = parseAmount(body.amount.amount, currency);
      const previous = await this.store.fundsRecord(body.transferId);
      if (previous !== undefined) {
        if (previous.payloadHash !== payloadHash)
          throw fspiopError(
            FspiopCode.MODIFIED_REQUEST,
            `transfer ${body.transferId} was recorded with another payload`,
          );
        return;
      }
      const outcome = await this.executeFresh(
        `funds:${body.transferId}`,
        transferIdToU128(body.transferId),
        (id) =>
          body.action === 'recordFundsIn'
            ? { kind: 'fundsIn', id, participant: name, currency: currency.code, amount }
            : { kind: 'fundsOutReserve', id, participant: name, currency: currency.code, amount },
      );
      if (!outcome.ok && outcome.refusal === 'insufficient_liquidity') {
        throw fspiopError(
          FspiopCode.PAYER_INSUFFICIENT_LIQUIDITY,
          'funds out would take liquidity below what is in use',
        );
      }
      if (!outcome.ok && outcome.refusal === 'inactive')
        throw validationError('account is not active');
      if (!appliedBefore(outcome)) assertApplied(outcome);
      const record: FundsRecord = {
        transferId: body.transferId,
        participant: name,
        currency: currency.code,
        action: body.action,
        amount: formatAmount(amount, currency),
        state: body.action === 'recordFundsIn' ? 'COMMITTED' : 'RESERVED',
        payloadHash,
      };
      await this.store.saveFundsRecord({ ...record, ledgerId: ledgerIdOf(outcome) });
    });
  }

  async finishFundsOut(
    name: string,
    accountId: number,
    transferId: string,
    action: 'recordFundsOutCommit' | 'recordFundsOutAbort',
  ): Promise<void> {
    await this.store.participantTurn(name, async () => {
      const participant = await this.inTurn(name);
      const account = settlementAccount(participant, accountId);
      const record = await this.store.fundsRecord(transferId);
      const reservedHere =
        record !== undefined &&
        record.action === 'recordFundsOutPrepareReserve' &&
        record.participant === name &&
        record.currency === account.currency;
      if (!reservedHere) {
        throw fspiopError(FspiopCode.ID_NOT_FOUND, `funds out ${transferId} not found`);
      }
      const wanted = action === 'recordFundsOutCommit' ? 'COMMITTED' : 'ABORTED';
      if (record.state === wanted) return;
      if (record.state !== 'RESERVED')
        throw validationError(`funds out ${transferId} is already ${record.state}`);
      const currency = requireCurrency(record.currency);
      const amount = parseAmount(record.amount, currency);
      // The reservation's ledger id: the request's own, or the fresh one a retry after a refusal
      // used.
      const id =
        record.ledgerId === undefined ? transferIdToU128(transferId) : BigInt(record.ledgerId);
      const base = { id, participant: name, currency: currency.code, amount };
      // A commit refused once (an inactive account) is tried again under its next attempt's id.
      const outcome =
        action === 'recordFundsOutCommit'
          ? await this.executeRetrying((attempt) => ({ kind: 'fundsOutCommit', ...base, attempt }))
          : await this.execute({ kind: 'fundsOutAbort', ...base });
      if (!appliedBefore(outcome)) assertApplied(outcome);
      await this.store.saveFundsRecord({ ...record, state: wanted });
    });
  }

  /**
   * Endpoints of a participant, or of the Hub (its notification e-mail addresses, as central-ledger
   * keeps them).
   */
  async addEndpoint(name: string, endpoint: { type: string; value: string }): Promise<void> {
    await this.store.participantTurn(name, async () => {
      const participant = await this.editable(name);
      participant.endpoints = participant.endpoints.filter((e) => e.type !== endpoint.type);
      participant.endpoints.push({ type: endpoint.type, value: endpoint.value });
      await this.store.saveParticipant(participant);
    });
  }

  async endpoints(name: string): Promise<{ type: string; value: string }[]> {
    return (await this.get(name)).endpoints;
  }

  /** The ledger's balances of each of the participant's currencies, in order. */
  async balancesOf(
    name: string,
    currencies: readonly ParticipantCurrency[],
  ): Promise<ParticipantBalance[]> {
    const balances = await this.ledger.balances(
      currencies.map((c) => ({ participant: name, currency: c.currency })),
    );
    return balances.map((balance, i) => {
      if (balance === undefined)
        throw fspiopError(
          FspiopCode.INTERNAL,
          `ledger has no accounts for ${name} ${currencies[i]!.currency}`,
        );
      return balance;
    });
  }

  /** The Hub as central-ledger seeds it; stored only once it has endpoints of its own. */
  private async hubParticipant(options: { fresh?: boolean } = {}): Promise<Participant> {
    const stored = await this.store.participant(HUB_NAME, options);
    if (stored !== undefined) return stored;
    const hubs = await this.store.hubAccounts();
    return {
      name: HUB_NAME,
      id: 0,
      isActive: true,
      created: hubs[0]?.createdDate ?? new Date(0).toISOString(),
      createdBy: 'unknown',
      currencies: [],
      endpoints: [],
    };
  }

  /**
   * Gives every known participant the ledger accounts the current account model has (debt
   * accounts came later): idempotent, one ledger command per participant and currency.
   */
  async openLedgerAccounts(): Promise<void> {
    const commands = (await this.store.participants()).flatMap((p) =>
      p.currencies.map((c) => ({
        kind: 'openParticipant' as const,
        participant: p.name,
        currency: c.currency,
      })),
    );
    for (const outcome of await this.ledger.execute(commands))
      if (!appliedBefore(outcome)) assertApplied(outcome);
  }

  /**
   * The ledger closes a POSITION account while the participant or that account is inactive: its
   * command goes first, and the metadata follows only once the ledger holds it (see reconciled).
   */
  private async syncLedgerActivity(participant: Participant): Promise<void> {
    const outcomes = await this.ledger.execute(
      participant.currencies.map((c) => ({
        kind: 'setActive' as const,
        id: randomId(),
        participant: participant.name,
        currency: c.currency,
        active: participant.isActive && c.positionAccountActive,
      })),
    );
    outcomes.forEach(assertApplied);
  }

  private async execute(command: LedgerCommand): Promise<LedgerOutcome> {
    const [outcome] = await this.ledger.execute([command]);
    return outcome!;
  }

  /**
   * Runs an admin command under the first id of its request's sequence that the ledger has not
   * refused before. Ids refused once stay refused, so the same request sent again after the
   * cause went away (funds arrived, an account was reactivated) is not stuck on its old id, while
   * a request that succeeded is found again under the same id (`exists`): idempotent and never
   * applied twice, from the ledger's records alone.
   */
  private async executeFresh(
    key: string,
    firstId: bigint,
    build: (id: bigint) => LedgerCommand,
  ): Promise<LedgerOutcome & { id: bigint }> {
    let id = firstId;
    const outcome = await this.executeRetrying((attempt) =>
      build((id = attempt === 0 ? firstId : stableId(`${key}#${attempt}`))),
    );
    return { ...outcome, id };
  }

  /** Runs the command of the first attempt the ledger has not refused before (see executeFresh). */
  private async executeRetrying(build: (attempt: number) => LedgerCommand): Promise<LedgerOutcome> {
    for (let attempt = 0; attempt < MAX_ADMIN_ATTEMPTS; attempt++) {
      const outcome = await this.execute(build(attempt));
      if (outcome.ok || outcome.refusal !== 'failed_before') return outcome;
    }
    throw fspiopError(
      FspiopCode.INTERNAL,
      `the ledger refused this request ${MAX_ADMIN_ATTEMPTS} times; use a new transferId`,
    );
  }

  /** Runs a set-up command that must succeed (or may already have been applied by a retry). */
  private expectLedger(outcome: LedgerOutcome): void {
    if (appliedBefore(outcome)) return;
    if (!outcome.ok && outcome.refusal === 'inactive')
      throw validationError('account is not active');
    assertApplied(outcome);
  }
}

/** central-ledger finds names in MySQL, whose default collation ignores case: `hub` is the Hub. */
function hubNamed(name: string): boolean {
  return name.toLowerCase() === HUB_NAME.toLowerCase();
}

/**
 * The participant with the activity its ledger accounts have, or undefined where it has it. The
 * ledger keeps one flag per currency (open while both the participant and that POSITION account
 * are active), so a change cut short is read back as the participant's own where that explains
 * every account, else as its accounts' (the participant then active, as some account is open).
 */
function withLedgerActivity(
  participant: Participant,
  open: readonly (boolean | undefined)[],
): Participant | undefined {
  const explainedBy = (isActive: boolean): boolean =>
    participant.currencies.every(
      (c, i) => open[i] === undefined || open[i] === (isActive && c.positionAccountActive),
    );
  if (explainedBy(participant.isActive)) return undefined;
  const changed = structuredClone(participant);
  changed.isActive = !participant.isActive;
  if (explainedBy(changed.isActive)) return changed;
  changed.isActive = true;
  changed.currencies.forEach(
    (c, i) => (c.positionAccountActive = open[i] ?? c.positionAccountActive),
  );
  return changed;
}

/**
 * Position as central-ledger reports it: committed position plus prepared, unfinished transfers.
 */
export function reportedPosition(balance: ParticipantBalance): bigint {
  return balance.position + balance.reserved;
}

/** The ledger id a funds movement used, kept when it is not the request's own. */
function ledgerIdOf(outcome: { id: bigint }): string {
  return outcome.id.toString();
}

/** ledgerAccountType names central-ledger seeds. */
const LEDGER_ACCOUNT_TYPE_NAMES: ReadonlySet<string> = new Set(LEDGER_ACCOUNT_TYPES);

/** Refused as `exists`: a retry meeting what an earlier try applied. */
function appliedBefore(outcome: LedgerOutcome): boolean {
  return !outcome.ok && outcome.refusal === 'exists';
}

function assertApplied(outcome: LedgerOutcome): void {
  if (!outcome.ok) throw new FspiopError(FspiopCode.INTERNAL, `ledger refused: ${outcome.refusal}`);
}

function accountIn(participant: Participant, currency: Currency): ParticipantCurrency {
  const account = participant.currencies.find((c) => c.currency === currency.code);
  if (account === undefined)
    throw fspiopError(
      FspiopCode.ID_NOT_FOUND,
      `Participant ${participant.name} has no ${currency.code} account`,
    );
  return account;
}

function settlementAccount(participant: Participant, accountId: number): ParticipantCurrency {
  const account = participant.currencies.find((c) => c.settlementAccountId === accountId);
  if (account === undefined)
    throw fspiopError(
      FspiopCode.ID_NOT_FOUND,
      `Settlement account ${accountId} not found for ${participant.name}`,
    );
  // As central-ledger: an internal server error (2001, HTTP 500), its wording.
  if (!participant.isActive)
    throw fspiopError(FspiopCode.INTERNAL, 'Participant is currently set inactive');
  return account;
}
