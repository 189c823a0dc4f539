/**
 * Participant onboarding and administration: the admin API of central-ledger. Metadata goes to
 * the MetadataStore; every amount goes to the ledger as one atomic command.
 */
import type { Ledger, LedgerCommand, LedgerOutcome, ParticipantBalance } from '../ledger/ledger';
import type { Currency } from './currencies';
import { FspiopCode, FspiopError, fspiopError, validationError } from './errors';
import { hashOf, randomId, stableId } from './hashing';
import { transferIdToU128 } from './ids';
import { KeyedMutex } from './keyed-mutex';
import type { FundsRecord, HubAccount, HubAccountType, MetadataStore, Participant, ParticipantCurrency, SettlementModel } from './metadata';
import { formatAmount, parseAmount, parseSignedAmount, requireCurrency } from './money';

/** The hub's own participant name, as central-ledger seeds it. */
export const HUB_NAME = 'Hub';
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{1,29}$/;

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
  amount: { amount: string; currency: string };
}

export class ParticipantService {
  private readonly locks = new KeyedMutex();

  constructor(
    private readonly store: MetadataStore,
    private readonly ledger: Ledger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async addHubAccount(name: string, body: { currency: string; type: HubAccountType }): Promise<HubAccount> {
    if (name !== HUB_NAME) throw fspiopError(FspiopCode.VALIDATION, `hub accounts belong to ${HUB_NAME}, not ${name}`);
    requireCurrency(body.currency);
    return this.locks.run(HUB_NAME, async () => {
      const existing = await this.store.hubAccounts();
      if (existing.some((a) => a.currency === body.currency && a.type === body.type)) {
        throw fspiopError(FspiopCode.GENERIC_CLIENT, `Hub account has already been registered for ${body.type} ${body.currency}`);
      }
      await this.expectLedger({ kind: 'openHub', currency: body.currency }, 'exists');
      return this.store.addHubAccount({ type: body.type, currency: body.currency, createdDate: this.now().toISOString() });
    });
  }

  async addSettlementModel(model: SettlementModel): Promise<void> {
    if (model.currency !== null) requireCurrency(model.currency);
    await this.locks.run(HUB_NAME, async () => {
      const models = await this.store.settlementModels();
      if (models.some((m) => m.name === model.name)) throw fspiopError(FspiopCode.GENERIC_CLIENT, `Settlement model ${model.name} already exists`);
      const sameScope = models.find((m) => m.currency === model.currency && m.ledgerAccountType === model.ledgerAccountType);
      if (sameScope !== undefined) throw fspiopError(FspiopCode.GENERIC_CLIENT, `Settlement model ${sameScope.name} already covers this currency and account type`);
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
    if (model === undefined) throw fspiopError(FspiopCode.ID_NOT_FOUND, `Settlement model ${name} not found`);
    return model;
  }

  async create(body: { name: string; currency: string }): Promise<Participant> {
    if (!NAME_PATTERN.test(body.name)) throw fspiopError(FspiopCode.MALFORMED_SYNTAX, 'name must be 2-30 letters, digits, ".", "_" or "-"');
    if (body.name === HUB_NAME) throw fspiopError(FspiopCode.GENERIC_CLIENT, `${HUB_NAME} is reserved`);
    const currency = requireCurrency(body.currency);
    return this.locks.run(body.name, async () => {
      const hubTypes = new Set((await this.store.hubAccounts()).filter((a) => a.currency === currency.code).map((a) => a.type));
      for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT'] as const) {
        if (!hubTypes.has(type)) throw fspiopError(FspiopCode.ADD_PARTY_INFO, `Hub ${type} account for ${currency.code} does not exist`);
      }
      const models = await this.store.settlementModels();
      if (!models.some((m) => m.currency === currency.code || m.currency === null)) {
        throw fspiopError(FspiopCode.GENERIC_SETTLEMENT, `No settlement model for ${currency.code}`);
      }
      const stored = await this.store.participant(body.name);
      const existing = stored === undefined ? undefined : structuredClone(stored);
      if (existing?.currencies.some((c) => c.currency === currency.code)) {
        throw fspiopError(FspiopCode.GENERIC_CLIENT, 'Participant currency has already been registered');
      }
      await this.expectLedger({ kind: 'openParticipant', participant: body.name, currency: currency.code }, 'exists');
      const created = this.now().toISOString();
      const participant: Participant = existing ?? {
        name: body.name, id: await this.store.nextId(), isActive: true, created, createdBy: 'unknown', currencies: [], endpoints: [],
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
    return [await this.hubParticipant(), ...(await this.store.participants())];
  }

  async get(name: string): Promise<Participant> {
    if (name === HUB_NAME) return this.hubParticipant();
    const participant = await this.store.participant(name);
    if (participant === undefined) throw fspiopError(FspiopCode.ID_NOT_FOUND, `Participant ${name} not found`);
    return participant;
  }

  /** A copy to change and save: what the store hands out is shared and read-only. */
  private async editable(name: string): Promise<Participant> {
    return structuredClone(await this.get(name));
  }

  /** Participant-level isActive: deactivation closes every one of its accounts in the ledger. */
  async setActive(name: string, isActive: boolean): Promise<Participant> {
    return this.locks.run(name, async () => {
      const participant = await this.editable(name);
      if (name === HUB_NAME) throw fspiopError(FspiopCode.VALIDATION, 'the Hub cannot be deactivated');
      participant.isActive = isActive;
      await this.store.saveParticipant(participant);
      await this.syncLedgerActivity(participant);
      return participant;
    });
  }

  async initialPositionAndLimits(name: string, body: { currency: string; limit: { type: string; value: unknown }; initialPosition?: unknown }): Promise<void> {
    const currency = requireCurrency(body.currency);
    const ndc = parseLimitValue(body.limit.value, currency);
    const initialPosition = body.initialPosition === undefined ? 0n : parseSignedAmount(decimalText(body.initialPosition, 'initialPosition'), currency);
    await this.locks.run(name, async () => {
      const participant = await this.editable(name);
      const account = accountIn(participant, currency);
      if (account.netDebitCap !== undefined) throw fspiopError(FspiopCode.INTERNAL, 'Participant Limit or Initial Position already set');
      await this.expectLedger({ kind: 'adjustNdc', id: stableId(`initial-ndc:${name}:${currency.code}`), participant: name, currency: currency.code, delta: ndc }, 'exists');
      await this.expectLedger({ kind: 'initialPosition', id: stableId(`initial:${name}:${currency.code}`), participant: name, currency: currency.code, amount: initialPosition }, 'exists');
      account.netDebitCap = { value: formatAmount(ndc, currency), alarmPercentage: 10 };
      await this.store.saveParticipant(participant);
    });
  }

  async limits(name: string, filter: { currency?: string; type?: string }): Promise<LimitView[]> {
    const participant = await this.get(name);
    if (filter.type !== undefined && filter.type !== 'NET_DEBIT_CAP') return [];
    return participant.currencies
      .filter((c) => c.netDebitCap !== undefined && (filter.currency === undefined || c.currency === filter.currency))
      .map((c) => ({ currency: c.currency, limit: { type: 'NET_DEBIT_CAP' as const, value: c.netDebitCap!.value, alarmPercentage: c.netDebitCap!.alarmPercentage } }));
  }

  /** Changes the net debit cap by exactly the difference, in one ledger command. */
  async adjustLimit(name: string, body: { currency: string; limit: { type: string; value: unknown; alarmPercentage?: number } }): Promise<LimitView> {
    const currency = requireCurrency(body.currency);
    const value = parseLimitValue(body.limit.value, currency);
    return this.locks.run(name, async () => {
      const participant = await this.editable(name);
      const account = accountIn(participant, currency);
      if (account.netDebitCap === undefined) throw fspiopError(FspiopCode.ID_NOT_FOUND, 'Participant limit has not been set');
      // The difference is taken from the ledger's own figure, so metadata that lags a crash cannot skew it.
      const [balance] = await this.balancesOf(name, [account]);
      const delta = value - balance!.netDebitCap;
      const outcome = await this.execute({ kind: 'adjustNdc', id: randomId(), participant: name, currency: currency.code, delta });
      if (!outcome.ok && outcome.refusal === 'limit_exceeded') {
        throw validationError('the net debit cap cannot be set below the current position plus reserved amounts');
      }
      assertApplied(outcome);
      account.netDebitCap = { value: formatAmount(value, currency), alarmPercentage: body.limit.alarmPercentage ?? account.netDebitCap.alarmPercentage };
      await this.store.saveParticipant(participant);
      return { currency: currency.code, limit: { type: 'NET_DEBIT_CAP', ...account.netDebitCap } };
    });
  }

  async positions(name: string, currencyCode?: string): Promise<PositionView[]> {
    const participant = await this.get(name);
    const currencies = participant.currencies.filter((c) => currencyCode === undefined || c.currency === currencyCode);
    const balances = await this.balancesOf(participant.name, currencies);
    const changedDate = this.now().toISOString();
    return currencies.map((c, i) => ({ currency: c.currency, value: formatAmount(balances[i]!.position, requireCurrency(c.currency)), changedDate }));
  }

  async accounts(name: string): Promise<AccountView[]> {
    const participant = await this.get(name);
    const balances = await this.balancesOf(participant.name, participant.currencies);
    const changedDate = this.now().toISOString();
    return participant.currencies.flatMap((c, i) => {
      const balance = balances[i]!;
      const currency = requireCurrency(c.currency);
      const active: 0 | 1 = c.positionAccountActive && participant.isActive ? 1 : 0;
      return [
        { id: c.positionAccountId, ledgerAccountType: 'POSITION', currency: c.currency, isActive: active, value: formatAmount(balance.position, currency), reservedValue: formatAmount(balance.reserved, currency), changedDate },
        // Mojaloop's settlement account is negative by the liquidity deposited.
        { id: c.settlementAccountId, ledgerAccountType: 'SETTLEMENT', currency: c.currency, isActive: active, value: formatAmount(-balance.liquidity, currency), reservedValue: formatAmount(balance.fundsOutReserved, currency), changedDate },
      ];
    });
  }

  /** Account-level isActive, for POSITION accounts only, as central-ledger allows. */
  async setAccountActive(name: string, accountId: number, isActive: boolean): Promise<void> {
    await this.locks.run(name, async () => {
      const participant = await this.editable(name);
      const account = participant.currencies.find((c) => c.positionAccountId === accountId || c.settlementAccountId === accountId);
      if (account === undefined) throw fspiopError(FspiopCode.ID_NOT_FOUND, `Account ${accountId} not found for ${name}`);
      if (account.positionAccountId !== accountId) throw validationError('only POSITION accounts can be activated or deactivated');
      account.positionAccountActive = isActive;
      await this.store.saveParticipant(participant);
      await this.syncLedgerActivity(participant);
    });
  }

  async recordFunds(name: string, accountId: number, body: FundsAction): Promise<void> {
    const id = transferIdToU128(body.transferId);
    const payloadHash = hashOf({ name, accountId, ...body });
    await this.locks.run(name, async () => {
      const participant = await this.get(name);
      const account = settlementAccount(participant, accountId);
      const currency = requireCurrency(account.currency);
      if (body.amount.currency !== currency.code) throw validationError(`amount currency ${body.amount.currency} is not the account's ${currency.code}`);
      const amount = parseAmount(body.amount.amount, currency);
      const previous = await this.store.fundsRecord(body.transferId);
      if (previous !== undefined) {
        if (previous.payloadHash !== payloadHash) throw fspiopError(FspiopCode.MODIFIED_REQUEST, `transfer ${body.transferId} was recorded with another payload`);
        return;
      }
      const command: LedgerCommand =
        body.action === 'recordFundsIn'
          ? { kind: 'fundsIn', id, participant: name, currency: currency.code, amount }
          : { kind: 'fundsOutReserve', id, participant: name, currency: currency.code, amount };
      const outcome = await this.execute(command);
      if (!outcome.ok && outcome.refusal === 'insufficient_liquidity') {
        throw fspiopError(FspiopCode.PAYER_INSUFFICIENT_LIQUIDITY, 'funds out would take liquidity below what is in use');
      }
      if (!outcome.ok && outcome.refusal === 'inactive') throw validationError('account is not active');
      if (!(!outcome.ok && outcome.refusal === 'exists')) assertApplied(outcome);
      const record: FundsRecord = {
        transferId: body.transferId, participant: name, currency: currency.code, action: body.action,
        amount: formatAmount(amount, currency), state: body.action === 'recordFundsIn' ? 'COMMITTED' : 'RESERVED', payloadHash,
      };
      await this.store.saveFundsRecord(record);
    });
  }

  async finishFundsOut(name: string, accountId: number, transferId: string, action: 'recordFundsOutCommit' | 'recordFundsOutAbort'): Promise<void> {
    const id = transferIdToU128(transferId);
    await this.locks.run(name, async () => {
      const participant = await this.get(name);
      const account = settlementAccount(participant, accountId);
      const record = await this.store.fundsRecord(transferId);
      if (record === undefined || record.action !== 'recordFundsOutPrepareReserve' || record.participant !== name || record.currency !== account.currency) {
        throw fspiopError(FspiopCode.ID_NOT_FOUND, `funds out ${transferId} not found`);
      }
      const wanted = action === 'recordFundsOutCommit' ? 'COMMITTED' : 'ABORTED';
      if (record.state === wanted) return;
      if (record.state !== 'RESERVED') throw validationError(`funds out ${transferId} is already ${record.state}`);
      const currency = requireCurrency(record.currency);
      const amount = parseAmount(record.amount, currency);
      const outcome = await this.execute({ kind: action === 'recordFundsOutCommit' ? 'fundsOutCommit' : 'fundsOutAbort', id, participant: name, currency: currency.code, amount });
      if (!(!outcome.ok && outcome.refusal === 'exists')) assertApplied(outcome);
      await this.store.saveFundsRecord({ ...record, state: wanted });
    });
  }

  async addEndpoint(name: string, endpoint: { type: string; value: string }): Promise<void> {
    if (name === HUB_NAME) throw validationError('the Hub has no callback endpoints here');
    await this.locks.run(name, async () => {
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
  async balancesOf(name: string, currencies: readonly ParticipantCurrency[]): Promise<ParticipantBalance[]> {
    const balances = await this.ledger.balances(currencies.map((c) => ({ participant: name, currency: c.currency })));
    return balances.map((balance, i) => {
      if (balance === undefined) throw fspiopError(FspiopCode.INTERNAL, `ledger has no accounts for ${name} ${currencies[i]!.currency}`);
      return balance;
    });
  }

  private async hubParticipant(): Promise<Participant> {
    const hubs = await this.store.hubAccounts();
    return {
      name: HUB_NAME, id: 0, isActive: true, created: hubs[0]?.createdDate ?? new Date(0).toISOString(), createdBy: 'unknown',
      currencies: [], endpoints: [],
    };
  }

  /** The ledger closes a POSITION account while the participant or that account is inactive. */
  private async syncLedgerActivity(participant: Participant): Promise<void> {
    const outcomes = await this.ledger.execute(
      participant.currencies.map((c) => ({
        kind: 'setActive' as const, id: randomId(), participant: participant.name, currency: c.currency,
        active: participant.isActive && c.positionAccountActive,
      })),
    );
    outcomes.forEach(assertApplied);
  }

  private async execute(command: LedgerCommand): Promise<LedgerOutcome> {
    const [outcome] = await this.ledger.execute([command]);
    return outcome!;
  }

  /** Runs a command that must succeed (or, for idempotent set-up, may already have been applied). */
  private async expectLedger(command: LedgerCommand, tolerated?: 'exists'): Promise<void> {
    const outcome = await this.execute(command);
    if (!outcome.ok && outcome.refusal === tolerated) return;
    if (!outcome.ok && outcome.refusal === 'insufficient_liquidity') throw fspiopError(FspiopCode.PAYER_INSUFFICIENT_LIQUIDITY, 'initial position exceeds liquidity');
    if (!outcome.ok && outcome.refusal === 'limit_exceeded') throw fspiopError(FspiopCode.PAYER_LIMIT_ERROR, 'initial position exceeds the net debit cap');
    assertApplied(outcome);
  }
}

function assertApplied(outcome: LedgerOutcome): void {
  if (!outcome.ok) throw new FspiopError(FspiopCode.INTERNAL, `ledger refused: ${outcome.refusal}`);
}

function accountIn(participant: Participant, currency: Currency): ParticipantCurrency {
  const account = participant.currencies.find((c) => c.currency === currency.code);
  if (account === undefined) throw fspiopError(FspiopCode.ID_NOT_FOUND, `Participant ${participant.name} has no ${currency.code} account`);
  return account;
}

function settlementAccount(participant: Participant, accountId: number): ParticipantCurrency {
  const account = participant.currencies.find((c) => c.settlementAccountId === accountId);
  if (account === undefined) throw fspiopError(FspiopCode.ID_NOT_FOUND, `Settlement account ${accountId} not found for ${participant.name}`);
  if (!participant.isActive) throw validationError(`Participant ${participant.name} is not active`);
  return account;
}

/** Limits arrive as JSON numbers in central-ledger's API: accept them only where the decimal is exact. */
function parseLimitValue(value: unknown, currency: Currency): bigint {
  return parseAmount(decimalText(value, 'limit value'), currency, { allowZero: true });
}

function decimalText(value: unknown, what: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) {
    const text = String(value);
    if (!/e/i.test(text) && Math.abs(value) <= Number.MAX_SAFE_INTEGER) return text;
  }
  throw validationError(`${what} must be a decimal number`);
}
