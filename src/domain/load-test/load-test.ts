/**
 * Set-up for load tests (/jmeter/*): one call makes a participant ready to send and receive in a
 * currency — hub accounts and a settlement model where missing, the participant, its net debit
 * cap, and liquidity to cover it. Idempotent, so every JMeter thread may call it.
 */
import { FspiopCode, FspiopError } from '../shared/errors';
import { stableId } from '../shared/hashing';
import { canonicalTransferId } from '../shared/ids';
import type { ParticipantService } from '../participants/service';

/**
 * How a load test's payee rejects a transfer (PUT …/error): central-ledger aborts nothing on a
 * transferState ABORTED.
 */
export const LOAD_TEST_REJECTION = {
  errorCode: '5104',
  errorDescription: 'Payee rejected transaction',
} as const;

export interface LoadTestFunding {
  /** Net debit cap and liquidity given to each load-test participant, as decimal strings. */
  netDebitCap: string;
  liquidity: string;
}

export async function ensureLoadTestParticipant(
  participants: ParticipantService,
  name: string,
  currency: string,
  funding: LoadTestFunding,
): Promise<boolean> {
  const hubTypes = new Set(
    (await participants.hubAccounts()).filter((a) => a.currency === currency).map((a) => a.type),
  );
  for (const type of ['HUB_RECONCILIATION', 'HUB_MULTILATERAL_SETTLEMENT'] as const) {
    if (!hubTypes.has(type))
      await tolerateExisting(participants.addHubAccount('Hub', { currency, type }));
  }
  const models = await participants.settlementModels();
  if (!models.some((m) => m.currency === currency || m.currency === null)) {
    await tolerateExisting(
      participants.addSettlementModel({
        name: `DEFERREDNET${currency}`,
        settlementGranularity: 'NET',
        settlementInterchange: 'MULTILATERAL',
        settlementDelay: 'DEFERRED',
        currency,
        requireLiquidityCheck: true,
        ledgerAccountType: 'POSITION',
        autoPositionReset: true,
        settlementAccountType: 'SETTLEMENT',
      }),
    );
  }
  const created = await tolerateExisting(participants.create({ name, currency }));
  const participant = await participants.get(name);
  const account = participant.currencies.find((c) => c.currency === currency)!;
  if (account.netDebitCap === undefined) {
    await participants.initialPositionAndLimits(name, {
      currency,
      limit: { type: 'NET_DEBIT_CAP', value: funding.netDebitCap },
    });
    await participants.recordFunds(name, account.settlementAccountId, {
      transferId: uuidOf(stableId(`load-test-funds:${name}:${currency}`)),
      externalReference: 'load test',
      action: 'recordFundsIn',
      reason: 'load test liquidity',
      amount: { amount: funding.liquidity, currency },
    });
  }
  return created;
}

/**
 * Runs a creation that may already have happened (3000, or 3003 for hub accounts, from a concurrent
 * caller): true when it created.
 */
async function tolerateExisting(creation: Promise<unknown>): Promise<boolean> {
  try {
    await creation;
    return true;
  } catch (error) {
    if (
      error instanceof FspiopError &&
      (error.code === FspiopCode.GENERIC_CLIENT || error.code === FspiopCode.ADD_PARTY_INFO)
    )
      return false;
    throw error;
  }
}

function uuidOf(value: bigint): string {
  // Shaped as a version-4 UUID so it passes the same id checks as any transfer id.
  const hex = ((value & ~(0xfn << 76n) & ~(0x3n << 62n)) | (0x4n << 76n) | (0x2n << 62n))
    .toString(16)
    .padStart(32, '0');
  return canonicalTransferId(
    `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`,
  );
}
