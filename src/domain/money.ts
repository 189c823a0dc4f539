/**
 * Exact decimal money. Amounts cross the API as decimal strings and live inside as bigint minor
 * units of their currency; a JS number never holds money.
 */
import { currencyByCode, type Currency } from './currencies';
import { validationError } from './errors';

/** FSPIOP's Amount: at most 18 digits before the point (and the currency's scale after), no sign, no exponent. */
export const MAX_AMOUNT_DIGITS = 18;
const AMOUNT_PATTERN = /^(0|[1-9]\d*)(\.\d+)?$/;

export function requireCurrency(code: string): Currency {
  const currency = currencyByCode(code);
  if (currency === undefined) throw validationError(`unknown currency ${JSON.stringify(code)}`);
  return currency;
}

export interface ParseAmountOptions {
  /** Zero is refused for transfers and funds movements, allowed for limits and positions. */
  allowZero: boolean;
}

/**
 * Parses a decimal string into minor units. Trailing zeros beyond the currency's scale are
 * accepted ("10.500" USD is 1050 cents) because they change no value; any non-zero digit beyond
 * the scale is refused rather than rounded.
 */
export function parseAmount(text: string, currency: Currency, options: ParseAmountOptions = { allowZero: false }): bigint {
  if (typeof text !== 'string' || !AMOUNT_PATTERN.test(text)) {
    throw validationError(`amount ${typeof text === 'string' ? JSON.stringify(text) : typeof text} is not a non-negative decimal number`);
  }
  const [whole, fractionWithDot = ''] = text.split('.') as [string, string?];
  let fraction = fractionWithDot.replace(/^\./, '');
  const significantFraction = fraction.replace(/0+$/, '');
  if (significantFraction.length > currency.scale) {
    throw validationError(`amount ${text} has more than ${currency.scale} decimal places for ${currency.code}`);
  }
  if (whole.length > MAX_AMOUNT_DIGITS) {
    throw validationError(`amount ${text} has more than ${MAX_AMOUNT_DIGITS} digits before the decimal point`);
  }
  fraction = significantFraction.padEnd(currency.scale, '0');
  const minor = BigInt(whole + fraction);
  if (minor === 0n && !options.allowZero) throw validationError('amount must be greater than zero');
  return minor;
}

/** Same as parseAmount for a value that may be signed (initial positions). */
export function parseSignedAmount(text: string, currency: Currency): bigint {
  if (typeof text === 'string' && text.startsWith('-')) return -parseAmount(text.slice(1), currency, { allowZero: true });
  return parseAmount(text, currency, { allowZero: true });
}

/** Formats minor units as the shortest exact decimal string ("10.5", "-3", "0"). */
export function formatAmount(minor: bigint, currency: Currency): string {
  const negative = minor < 0n;
  const digits = (negative ? -minor : minor).toString().padStart(currency.scale + 1, '0');
  const whole = digits.slice(0, digits.length - currency.scale);
  const fraction = digits.slice(digits.length - currency.scale).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction.length > 0 ? '.' + fraction : ''}`;
}
