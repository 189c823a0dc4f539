/**
 * Exact decimal money. Amounts cross the API as decimal strings and live inside as bigint minor
 * units of their currency; a JS number never holds money.
 */
import { currencyByCode, type Currency } from '../../ports/currencies';
import { validationError } from './errors';

/**
 * FSPIOP's Amount: at most 18 digits before the point (and the currency's scale after), no sign, no
 * exponent.
 */
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

const POSITIVE: ParseAmountOptions = { allowZero: false };

/**
 * Parses a decimal string into minor units. Trailing zeros beyond the currency's scale are
 * accepted ("10.500" USD is 1050 cents) because they change no value; any non-zero digit beyond
 * the scale is refused rather than rounded.
 */

export function parseAmount(
  text: string,
  currency: Currency,
  options: ParseAmountOptions = POSITIVE,
): bigint {
  const match = typeof text === 'string' ? AMOUNT_PATTERN.exec(text) : null;
  if (match === null) {
    throw validationError(
      `amount ${typeof text === 'string' ? JSON.stringify(text) : typeof text} is not a non-negative decimal number`,
    );
  }
  // The pattern's groups are the parts: no split or replace (three parses per transfer).
  const whole = match[1]!;
  let fraction = match[2]?.slice(1) ?? '';
  let significant = fraction.length;
  while (significant > 0 && fraction.charCodeAt(significant - 1) === 0x30) significant--;
  const significantFraction = fraction.slice(0, significant);
  if (significantFraction.length > currency.scale) {
    throw validationError(
      `amount ${text} has more than ${currency.scale} decimal places for ${currency.code}`,
    );
  }
  if (whole.length > MAX_AMOUNT_DIGITS) {
    throw validationError(
      `amount ${text} has more than ${MAX_AMOUNT_DIGITS} digits before the decimal point`,
    );
  }
  fraction = significantFraction.padEnd(currency.scale, '0');
  const minor = BigInt(whole + fraction);
  if (minor === 0n && !options.allowZero) throw validationError('amount must be greater than zero');
  return minor;
}

/** Joi's "safe number": the largest whole part central-ledger's admin API takes. */
const MAX_SAFE_WHOLE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Decimal text as central-ledger's Joi number() takes it (a JSON number literal's own text or a
 * numeric string: sign, exponent, spaces allowed), written out exactly as plain decimal text
 * ("-1.5e2" → "-150"); undefined where it is no number or beyond Joi's safe range.
 */
export function plainDecimal(text: string): string | undefined {
  const match = /^\s*([+-]?)(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?\s*$/.exec(text);
  if (match === null) return undefined;
  const [, sign, whole, fraction = '', exponentText = '0'] = match as unknown as [
    string,
    string,
    string,
    string?,
    string?,
  ];
  const exponent = Number(exponentText);
  let digits = whole + fraction;
  let point = whole.length + exponent;
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits = digits.padEnd(point, '0');
  const wholePart = digits.slice(0, point).replace(/^0+(?=\d)/, '') || '0';
  const fractionPart = digits.slice(point).replace(/0+$/, '');
  if (BigInt(wholePart) > MAX_SAFE_WHOLE) return undefined;
  const negative = sign === '-' && (wholePart !== '0' || fractionPart !== '');
  return `${negative ? '-' : ''}${wholePart}${fractionPart === '' ? '' : `.${fractionPart}`}`;
}

/** Same as parseAmount for a value that may be signed (initial positions). */
export function parseSignedAmount(text: string, currency: Currency): bigint {
  if (typeof text === 'string' && text.startsWith('-'))
    return -parseAmount(text.slice(1), currency, { allowZero: true });
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
