/**
 * The test data of the JMeter plan, planned from a config and a seed.
 *
 * planData draws every random value, in a fixed order, from the seeded PRNG; everything after
 * it (items, tables) is a pure function of the plan. So the same config and seed give the same
 * bytes, and the JSON items and the TSV rows the plan reads cannot disagree: both are rendered
 * from the same step objects.
 *
 * The workload:
 *  - participants, each created and funded by POST /jmeter/participants/create;
 *  - transfers between two different random participants, of three kinds:
 *      commit          prepared and committed;
 *      reject          prepared and rejected by the payee (ABORTED, by its PUT …/error);
 *      over_liquidity  asks for more than the payer can possibly cover: refused with 4001;
 *    in one request each (POST /jmeter/transfers/prepare with fulfil: true) or two (the prepare
 *    with fulfil: false, then the payee's FSPIOP PUT /transfers/{id}, or …/error to reject: a
 *    transferState ABORTED aborts nothing in central-ledger);
 *  - lookups of created transfers (after the transfers), and of participants' accounts (last),
 *    whose expected positions are the sum of the committed transfers.
 *
 * Determinism under concurrency: JMeter threads send the transfers in any order, so every
 * expected answer must hold in every order. Hence the budget check (each payer's outgoing
 * commits and rejects, all reserved at once, fit within its liquidity, whatever arrives first)
 * and the over-liquidity amounts (more than the liquidity plus everything the payer could have
 * received before, so the POSITION check - 4001 - always refuses them, and it runs before the
 * NDC check - 4200 - in both ledgers).
 */
import { createHash } from 'node:crypto';
import { LOAD_TEST_REJECTION } from '../../src/domain/load-test/load-test';
import { encodeIlpPrepare } from '../../src/domain/shared/ilp';
import { formatAmount, MAX_AMOUNT_DIGITS } from '../../src/domain/shared/money';
import { GeneratorConfigError, type GeneratorConfig } from './config';
import { Prng } from './prng';

export type ActionType =
  | 'create_participant'
  | 'transfer_prepare'
  | 'transfer_fulfil'
  | 'transfer_reject'
  | 'transfer_prepare_fulfil'
  | 'transfer_lookup'
  | 'account_lookup';

export const ACTION_TYPES: readonly ActionType[] = [
  'create_participant',
  'transfer_prepare',
  'transfer_fulfil',
  'transfer_reject',
  'transfer_prepare_fulfil',
  'transfer_lookup',
  'account_lookup',
];

export interface DataRequest {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  headers: Record<string, string>;
  body?: Record<string, unknown>;
}

/**
 * What the plan asserts: the HTTP status, and for each JSONPath the value it must have in the
 * answer (as JMeter's JSON Extractor renders it: strings as is, booleans as true/false), or null
 * when the path must be absent. The answer may hold more (completedTimestamp, ...).
 */
export interface DataResponse {
  status: number;
  fields: Record<string, string | null>;
}

export interface DataItem {
  actionType: ActionType;
  request: DataRequest;
  response: DataResponse;
}

export type TransferKind = 'commit' | 'reject' | 'over_liquidity';

export interface PlannedTransfer {
  transferId: string;
  kind: TransferKind;
  payer: string;
  payee: string;
  /** Minor units of the config's currency. */
  amount: bigint;
  /** The 32-byte preimage; the condition is base64url(sha256(fulfilment)). */
  fulfilment: Buffer;
  transactionId: string;
  quoteId: string;
  payerMsisdn: string;
  payeeMsisdn: string;
}

export interface PlannedTransferLookup {
  /** Index into DataPlan.transfers of a created (commit or reject) transfer. */
  transfer: number;
  /** The participant whose view is asked for: the transfer's payer or payee. */
  participant: string;
}

export interface DataPlan {
  seed: string;
  config: GeneratorConfig;
  /** 12 hex digits drawn from the seed, shared by this run's participant names. */
  runTag: string;
  participants: string[];
  transfers: PlannedTransfer[];
  transferLookups: PlannedTransferLookup[];
  /** Indexes into participants. */
  accountLookups: number[];
  /**
   * Each participant's POSITION once every transfer is done: committed out less committed in, minor
   * units.
   */
  finalPositions: bigint[];
}

export const JMETER_PARTICIPANTS_PATH = '/jmeter/participants/create';
export const JMETER_PREPARE_PATH = '/jmeter/transfers/prepare';
export const FSPIOP_TRANSFERS_CONTENT_TYPE =
  'application/vnd.interoperability.transfers+json;version=1.1';
/**
 * completedTimestamp of the payee's PUT: a JMeter function the plan evaluates when it sends the
 * request (the body goes through __eval), so it is the time of the fulfil, not of generation.
 */
export const JMETER_NOW = "${__time(yyyy-MM-dd'T'HH:mm:ss.SSSXXX,)}";

/**
 * Draws the whole data set. Throws GeneratorConfigError when the config cannot give deterministic
 * answers.
 */
export function planData(config: GeneratorConfig, seed: string): DataPlan {
  const rng = new Prng(seed);
  const runTag = rng.hex(12);
  const participants = Array.from(
    { length: config.participantAccounts },
    (_, i) => `fspJM${runTag}${i.toString(16).padStart(4, '0')}`,
  );

  const kinds: TransferKind[] = Array.from({ length: config.transfers }, (_, i) =>
    i < config.rejections
      ? 'reject'
      : i < config.rejections + config.overLiquidity
        ? 'over_liquidity'
        : 'commit',
  );
  rng.shuffle(kinds);

  const usedIds = new Set<string>();
  const transfers: PlannedTransfer[] = kinds.map((kind) => {
    let transferId = rng.uuidV4();
    while (usedIds.has(transferId)) transferId = rng.uuidV4();
    usedIds.add(transferId);
    const payerIndex = rng.below(config.participantAccounts);
    const payeeIndex =
      (payerIndex + 1 + rng.below(config.participantAccounts - 1)) % config.participantAccounts;
    return {
      transferId,
      kind,
      payer: participants[payerIndex]!,
      payee: participants[payeeIndex]!,
      // Over-liquidity amounts are set below, once every payer's income is known.
      amount: kind === 'over_liquidity' ? 0n : 1n + rng.bigBelow(config.amountMax),
      fulfilment: rng.bytes(32),
      transactionId: rng.uuidV4(),
      quoteId: rng.uuidV4(),
      payerMsisdn: msisdn(rng),
      payeeMsisdn: msisdn(rng),
    };
  });

  const indexOf = new Map(participants.map((name, i) => [name, i]));
  const outgoing = participants.map(() => 0n);
  const incoming = participants.map(() => 0n);
  const finalPositions = participants.map(() => 0n);
  for (const t of transfers) {
    const payer = indexOf.get(t.payer)!;
    const payee = indexOf.get(t.payee)!;
    if (t.kind !== 'over_liquidity') outgoing[payer]! += t.amount;
    if (t.kind === 'commit') {
      incoming[payee]! += t.amount;
      finalPositions[payer]! += t.amount;
      finalPositions[payee]! -= t.amount;
    }
  }
  const worst = outgoing.reduce((max, value, i) => (value > outgoing[max]! ? i : max), 0);
  if (transfers.length > 0 && outgoing[worst]! > config.liquidity) {
    throw new GeneratorConfigError(
      `${participants[worst]} would send ${formatAmount(outgoing[worst]!, config.currency)} ${config.currency.code} in committed and rejected transfers, ` +
        `more than its liquidity of ${formatAmount(config.liquidity, config.currency)}: some of them would then fail (4001) in an order-dependent way. ` +
        'Lower transfers-amount-max or transfers, or raise participant-accounts.',
    );
  }
  const maxMinor = 10n ** BigInt(MAX_AMOUNT_DIGITS + config.currency.scale);
  for (const t of transfers) {
    if (t.kind !== 'over_liquidity') continue;
    // More than the payer holds even if it has received every commit paid to it and sent nothing.
    t.amount =
      config.liquidity + incoming[indexOf.get(t.payer)!]! + 1n + rng.bigBelow(config.amountMax);
    if (t.amount >= maxMinor)
      throw new GeneratorConfigError(
        `an over-liquidity amount would need more than ${MAX_AMOUNT_DIGITS} digits`,
      );
  }

  const created = transfers.flatMap((t, i) => (t.kind === 'over_liquidity' ? [] : [i]));
  const transferLookups = Array.from({ length: config.transferLookups }, () => {
    const transfer = created[rng.below(created.length)]!;
    return {
      transfer,
      participant: rng.below(2) === 0 ? transfers[transfer]!.payer : transfers[transfer]!.payee,
    };
  });
  const accountLookups = Array.from({ length: config.accountLookups }, () =>
    rng.below(config.participantAccounts),
  );

  return {
    seed,
    config,
    runTag,
    participants,
    transfers,
    transferLookups,
    accountLookups,
    finalPositions,
  };
}

function msisdn(rng: Prng): string {
  return `255${String(rng.below(1_000_000_000)).padStart(9, '0')}`;
}

export function conditionOf(fulfilment: Buffer): string {
  return createHash('sha256').update(fulfilment).digest('base64url');
}

// ---------------------------------------------------------------------------------------------
// Rendering: items (the JSON data file) and the TSV tables are both made of these steps.

export function participantItem(plan: DataPlan, name: string): DataItem {
  const currency = plan.config.currency.code;
  return {
    actionType: 'create_participant',
    // newlyCreated in the request is the 2022 shape; the service ignores it.
    request: {
      method: 'POST',
      path: JMETER_PARTICIPANTS_PATH,
      headers: jsonHeaders(),
      body: { name, currency, newlyCreated: false },
    },
    response: {
      status: 200,
      fields: { '$.name': name, '$.currency': currency, '$.newlyCreated': 'true' },
    },
  };
}

/**
 * The transfer's request(s): one in single-request mode, else the prepare and (unless refused) the
 * payee's answer.
 */
export function transferItems(plan: DataPlan, t: PlannedTransfer): DataItem[] {
  const single = plan.config.singleHttpRequest;
  const fulfilment = t.fulfilment.toString('base64url');
  const body: Record<string, unknown> = {
    transferId: t.transferId,
    payerFsp: t.payer,
    payeeFsp: t.payee,
    amount: {
      amount: formatAmount(t.amount, plan.config.currency),
      currency: plan.config.currency.code,
    },
    ilpPacket: ilpPacketOf(plan, t),
    condition: conditionOf(t.fulfilment),
    expiration: plan.config.expiration,
    fulfil: single,
  };
  if (single && t.kind === 'reject') body.reject = true;
  if (single && t.kind !== 'reject') body.fulfilment = fulfilment;
  const prepare: DataRequest = {
    method: 'POST',
    path: JMETER_PREPARE_PATH,
    headers: jsonHeaders(),
    body,
  };

  if (t.kind === 'over_liquidity') {
    return [
      {
        actionType: single ? 'transfer_prepare_fulfil' : 'transfer_prepare',
        request: prepare,
        response: refused('4001'),
      },
    ];
  }
  if (single) {
    return [
      {
        actionType: t.kind === 'commit' ? 'transfer_prepare_fulfil' : 'transfer_reject',
        request: prepare,
        response: finalAnswer(201, t),
      },
    ];
  }
  const answer: Record<string, unknown> =
    t.kind === 'commit'
      ? { transferState: 'COMMITTED', fulfilment, completedTimestamp: JMETER_NOW }
      : { errorInformation: LOAD_TEST_REJECTION };
  return [
    {
      actionType: 'transfer_prepare',
      request: prepare,
      response: transferState(201, t.transferId, 'RESERVED'),
    },
    {
      actionType: t.kind === 'commit' ? 'transfer_fulfil' : 'transfer_reject',
      request: {
        method: 'PUT',
        path: `/transfers/${t.transferId}${t.kind === 'commit' ? '' : '/error'}`,
        headers: {
          'content-type': FSPIOP_TRANSFERS_CONTENT_TYPE,
          accept: FSPIOP_TRANSFERS_CONTENT_TYPE,
          'fspiop-source': t.payee,
          'fspiop-destination': t.payer,
        },
        body: answer,
      },
      response: finalAnswer(200, t),
    },
  ];
}

export function transferLookupItem(plan: DataPlan, lookup: PlannedTransferLookup): DataItem {
  const t = plan.transfers[lookup.transfer]!;
  return {
    actionType: 'transfer_lookup',
    request: {
      method: 'GET',
      path: `/jmeter/participants/${lookup.participant}/transfers/${t.transferId}`,
      headers: { accept: 'application/json' },
    },
    response: {
      status: 200,
      fields: {
        ...finalAnswer(200, t).fields,
        '$.amount.amount': formatAmount(t.amount, plan.config.currency),
        '$.amount.currency': plan.config.currency.code,
      },
    },
  };
}

export function accountLookupItem(plan: DataPlan, participant: number): DataItem {
  const name = plan.participants[participant]!;
  const currency = plan.config.currency;
  return {
    actionType: 'account_lookup',
    request: {
      method: 'GET',
      path: `/jmeter/participants/${name}`,
      headers: { accept: 'application/json' },
    },
    response: {
      status: 200,
      fields: {
        '$.name': name,
        '$.isActive': 'true',
        // Every transfer is final by then, so nothing stays reserved and the position is exact.
        "$.accounts[?(@.ledgerAccountType=='POSITION')].value": formatAmount(
          plan.finalPositions[participant]!,
          currency,
        ),
        "$.accounts[?(@.ledgerAccountType=='POSITION')].reservedValue": '0',
        // Mojaloop shows the liquidity deposited as a negative settlement balance.
        "$.accounts[?(@.ledgerAccountType=='SETTLEMENT')].value": formatAmount(
          -plan.config.liquidity,
          currency,
        ),
      },
    },
  };
}

/**
 * Every item in an order a single client could send them in: participants, transfers, transfer
 * lookups, account lookups.
 */
export function* dataItems(plan: DataPlan): Generator<DataItem> {
  for (const name of plan.participants) yield participantItem(plan, name);
  for (const t of plan.transfers) yield* transferItems(plan, t);
  for (const lookup of plan.transferLookups) yield transferLookupItem(plan, lookup);
  for (const participant of plan.accountLookups) yield accountLookupItem(plan, participant);
}

function jsonHeaders(): Record<string, string> {
  return { 'content-type': 'application/json', accept: 'application/json' };
}

function transferState(status: number, transferId: string, state: string): DataResponse {
  return {
    status,
    fields: {
      '$.transferId': transferId,
      '$.transferState': state,
      '$.errorInformation.errorCode': null,
    },
  };
}

/**
 * A committed or rejected transfer as the service answers it: a rejection is the payee's error
 * callback, whose error the transfer keeps.
 */
function finalAnswer(status: number, t: PlannedTransfer): DataResponse {
  if (t.kind === 'commit') return transferState(status, t.transferId, 'COMMITTED');
  const aborted = transferState(status, t.transferId, 'ABORTED');
  aborted.fields['$.errorInformation.errorCode'] = LOAD_TEST_REJECTION.errorCode;
  return aborted;
}

function refused(errorCode: string): DataResponse {
  return {
    status: 400,
    fields: {
      '$.transferId': null,
      '$.transferState': null,
      '$.errorInformation.errorCode': errorCode,
    },
  };
}

/**
 * A real ILPv4 Prepare as Mojaloop sends it: the amount in minor units, the transfer's condition
 * and expiry, the payee's ILP address, and the Mojaloop transaction (base64url JSON) as data.
 */
function ilpPacketOf(plan: DataPlan, t: PlannedTransfer): string {
  const amount = {
    amount: formatAmount(t.amount, plan.config.currency),
    currency: plan.config.currency.code,
  };
  const transaction = {
    transactionId: t.transactionId,
    quoteId: t.quoteId,
    payee: {
      partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: t.payeeMsisdn, fspId: t.payee },
    },
    payer: {
      partyIdInfo: { partyIdType: 'MSISDN', partyIdentifier: t.payerMsisdn, fspId: t.payer },
    },
    amount,
    transactionType: { scenario: 'TRANSFER', initiator: 'PAYER', initiatorType: 'CONSUMER' },
    note: 'jmeter load test',
  };
  return encodeIlpPrepare({
    amount: t.amount,
    expiresAt: plan.config.expiration,
    executionCondition: conditionOf(t.fulfilment),
    destination: `g.${t.payee.toLowerCase()}.msisdn.${t.payeeMsisdn}`,
    data: Buffer.from(
      Buffer.from(JSON.stringify(transaction), 'utf8').toString('base64url'),
      'ascii',
    ),
  });
}
