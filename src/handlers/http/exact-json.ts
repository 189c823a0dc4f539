/**
 * Money in central-ledger's admin API is a JSON number (`"amount": 100.5`), and JSON.parse would
 * carry it through a double. These helpers keep such numbers exact at the edge: requests keep
 * each number literal's own text beside the parsed value, and responses write decimal text as a
 * number literal without ever making it a JS number.
 */
import { randomBytes } from 'node:crypto';
import { FspiopCode, FspiopError } from '../../domain/shared/errors';

/** A string no request can contain unescaped, different per process. */
const MARK = `\u0000${randomBytes(6).toString('hex')}:`;
/** The mark as it is written inside a JSON string (the NUL escaped). */
const MARK_IN_JSON = JSON.stringify(MARK).slice(1, -1);
/** JSON strings (skipped) or number literals, in document order. */
const TOKENS = /"(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
/** A stringified mark with its index: what stringifyExact turns back into a number literal. */
const WRITTEN_MARK = new RegExp(`"${MARK_IN_JSON.replace(/\\/g, '\\\\')}(\\d+)"`, 'g');
/** The exact text of number literals, by the object (or array) holding them and their key. */
const literals = new WeakMap<object, Map<string, string>>();

/**
 * JSON.parse that remembers every number literal's text (see `decimalText`). Used for the admin
 * API only: the FSPIOP hot path carries amounts as strings and keeps the default parser.
 */
export function parseExactJson(text: string): unknown {
  const marked = text.replace(TOKENS, (token) =>
    token.charCodeAt(0) === 0x22 ? token : `"${MARK_IN_JSON}${token}"`,
  );
  return JSON.parse(marked, function revive(this: object, key: string, value: unknown) {
    if (typeof value !== 'string' || !value.startsWith(MARK)) return value;
    const literal = value.slice(MARK.length);
    let texts = literals.get(this);
    if (texts === undefined) literals.set(this, (texts = new Map()));
    texts.set(key, literal);
    return Number(literal);
  });
}

/**
 * The decimal text of `holder[key]`: a number literal's own text, or a string as given (Joi's
 * number() takes numeric strings too). Anything else is left for the domain to refuse.
 */
export function decimalText(holder: object, key: string): string {
  const value = (holder as Record<string, unknown>)[key];
  if (typeof value === 'number') {
    const text = literals.get(holder)?.get(key);
    // A number that did not come from parseExactJson: its shortest round-trip text is all we have.
    return text ?? String(value);
  }
  return typeof value === 'string' ? value.trim() : String(value);
}

/** Decimal text to be written as a JSON number literal. */
export class JsonNumber {
  constructor(readonly text: string) {
    if (!/^-?\d+(\.\d+)?$/.test(text))
      throw new FspiopError(FspiopCode.INTERNAL, `not a decimal: ${text}`);
  }
}

/** JSON.stringify, with every JsonNumber written as its exact literal. */
export function stringifyExact(value: unknown): string {
  const numbers: string[] = [];
  const json = JSON.stringify(value, (_key, item: unknown) => {
    if (!(item instanceof JsonNumber)) return item;
    numbers.push(item.text);
    return `${MARK}${numbers.length - 1}`;
  });
  if (numbers.length === 0) return json;
  return json.replace(WRITTEN_MARK, (_match, index: string) => numbers[Number(index)]!);
}
