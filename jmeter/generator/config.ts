/**
 * The generator's configuration: the 2022 plan config (stresstesting/test-plan/CLPlanConfig.json
 * of the 2022 TigerBeetle integration), every key of which takes effect here, plus three
 * optional keys of this generator. Unknown keys are refused so that a misspelt key cannot be
 * silently ignored. jmeter/README.md documents each key.
 */
import { currencyByCode, type Currency } from '../../src/ports/currencies';
import { parseAmount } from '../../src/domain/shared/money';

export interface RawConfig {
  'participant-accounts': number;
  'account-lookups': number;
  transfers: number;
  rejections: number;
  'transfer-lookups': number;
  'transfers-single-http-request': boolean;
  'transfers-amount-max': number | string;
  'transfers-currency': string;
  /**
   * Optional: how many of the transfers ask for more than the payer can cover (4001). Default 0.
   */
  'transfers-over-liquidity'?: number;
  /** Optional: liquidity and net debit cap the service gives each /jmeter participant. */
  'participant-liquidity'?: number | string;
  /** Optional: the expiration of every transfer, ISO 8601. */
  'transfers-expiration'?: string;
}

export interface GeneratorConfig {
  participantAccounts: number;
  accountLookups: number;
  transfers: number;
  rejections: number;
  transferLookups: number;
  singleHttpRequest: boolean;
  currency: Currency;
  /** transfers-amount-max in minor units of the currency. */
  amountMax: bigint;
  overLiquidity: number;
  /** participant-liquidity in minor units. */
  liquidity: bigint;
  expiration: string;
}

/**
 * What src/app.ts gives every participant POST /jmeter/participants/create makes
 * (registerJmeterRoutes: netDebitCap = liquidity = 1,000,000,000). Only the over-liquidity
 * amounts and the budget check depend on it; change both together.
 */
export const DEFAULT_PARTICIPANT_LIQUIDITY = '1000000000';

/**
 * Far in the future, so data generated long before a run never expires in it, and fixed, so the
 * data is the same byte for byte whenever it is generated. It stays below the service's limit
 * (now + 2^32-1 s, TigerBeetle's u32 timeout) until the year 2162.
 */
export const DEFAULT_EXPIRATION = '2100-01-01T00:00:00.000Z';

/** Largest data set generated (the data is planned in memory before it is written). */
export const MAX_TRANSFERS = 2_000_000;
const MAX_LOOKUPS = 10_000_000;
/**
 * Names are fspJM + 12 hex run tag + at least 4 hex of index: 65,536 participants keep 21 chars.
 */
const MAX_PARTICIPANTS = 65_536;

const KNOWN_KEYS = new Set([
  'participant-accounts',
  'account-lookups',
  'transfers',
  'rejections',
  'transfer-lookups',
  'transfers-single-http-request',
  'transfers-amount-max',
  'transfers-currency',
  'transfers-over-liquidity',
  'participant-liquidity',
  'transfers-expiration',
]);

export class GeneratorConfigError extends Error {
  override name = 'GeneratorConfigError';
}

export function parseConfig(raw: unknown): GeneratorConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new GeneratorConfigError('the config must be a JSON object');
  const config = raw as Record<string, unknown>;
  const unknown = Object.keys(config).filter((key) => !KNOWN_KEYS.has(key));
  if (unknown.length > 0)
    throw new GeneratorConfigError(
      `unknown config key(s): ${unknown.join(', ')} (known: ${[...KNOWN_KEYS].join(', ')})`,
    );

  const participantAccounts = count(config, 'participant-accounts', MAX_PARTICIPANTS);
  const accountLookups = count(config, 'account-lookups', MAX_LOOKUPS);
  const transfers = count(config, 'transfers', MAX_TRANSFERS);
  const rejections = count(config, 'rejections', MAX_TRANSFERS);
  const transferLookups = count(config, 'transfer-lookups', MAX_LOOKUPS);
  const overLiquidity =
    config['transfers-over-liquidity'] === undefined
      ? 0
      : count(config, 'transfers-over-liquidity', MAX_TRANSFERS);

  const single = config['transfers-single-http-request'];
  if (typeof single !== 'boolean')
    throw new GeneratorConfigError('transfers-single-http-request must be true or false');

  const code = config['transfers-currency'];
  const currency = typeof code === 'string' ? currencyByCode(code) : undefined;
  if (currency === undefined)
    throw new GeneratorConfigError(
      `transfers-currency ${JSON.stringify(code)} is not an ISO 4217 currency the service knows`,
    );

  const amountMax = decimal(config, 'transfers-amount-max', currency, undefined);
  const liquidity = decimal(
    config,
    'participant-liquidity',
    currency,
    DEFAULT_PARTICIPANT_LIQUIDITY,
  );

  const expiration = config['transfers-expiration'] ?? DEFAULT_EXPIRATION;
  if (
    typeof expiration !== 'string' ||
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/.test(expiration) ||
    Number.isNaN(Date.parse(expiration))
  ) {
    throw new GeneratorConfigError(
      `transfers-expiration ${JSON.stringify(expiration)} is not a UTC ISO 8601 date-time like ${DEFAULT_EXPIRATION}`,
    );
  }

  if (rejections + overLiquidity > transfers) {
    throw new GeneratorConfigError(
      `rejections (${rejections}) + transfers-over-liquidity (${overLiquidity}) exceed transfers (${transfers}): both are counted among the transfers`,
    );
  }
  if (transfers > 0 && participantAccounts < 2)
    throw new GeneratorConfigError(
      'transfers need participant-accounts >= 2 (a payer and a different payee)',
    );
  if (accountLookups > 0 && participantAccounts < 1)
    throw new GeneratorConfigError('account-lookups need participant-accounts >= 1');
  if (transferLookups > 0 && transfers - overLiquidity < 1) {
    throw new GeneratorConfigError(
      'transfer-lookups need at least one transfer that is created (transfers - transfers-over-liquidity >= 1)',
    );
  }
  return {
    participantAccounts,
    accountLookups,
    transfers,
    rejections,
    transferLookups,
    singleHttpRequest: single,
    currency,
    amountMax,
    overLiquidity,
    liquidity,
    expiration,
  };
}

function count(config: Record<string, unknown>, key: string, max: number): number {
  const value = config[key];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new GeneratorConfigError(
      `${key} must be a whole number from 0 to ${max}, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** A positive decimal amount (JSON number or string) in minor units; never through a float. */
function decimal(
  config: Record<string, unknown>,
  key: string,
  currency: Currency,
  fallback: string | undefined,
): bigint {
  const value = config[key] ?? fallback;
  // A JSON number is read back as the shortest text that round-trips (200, 0.5); exponent forms are
  // refused below.
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof text !== 'string')
    throw new GeneratorConfigError(`${key} must be a decimal amount, got ${JSON.stringify(value)}`);
  try {
    return parseAmount(text, currency);
  } catch (error) {
    throw new GeneratorConfigError(`${key} ${JSON.stringify(value)}: ${(error as Error).message}`);
  }
}
