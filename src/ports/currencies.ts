/**
 * The currencies the hub can hold positions in: central-ledger v19.14's seed (seeds/currency.js),
 * code for code and scale for scale, so a participant, a limit or a transfer in any currency
 * central-ledger accepts is accepted here, XXX (the Testing Toolkit's own) and withdrawn codes
 * such as BGN included, and one central-ledger's currency table lacks is refused as it is there.
 *
 * Scale is the number of decimal places an amount in the currency carries, i.e. how many minor
 * units make one major unit (10^scale), as central-ledger's seed has it (0..4).
 *
 * The numeric code is the TigerBeetle ledger id of the currency (before the 3-event model, its
 * limit and window ledgers were it plus 1000 and 2000), and TigerBeetle only lets accounts on the
 * same ledger transact, so two currencies sharing a numeric would silently share a ledger. A
 * currency's numeric is its ISO 4217 one, current or, for a withdrawn code, the last it held (ANG
 * 532, BGN 975, ...; no seeded code reuses one). The seeded codes ISO never numbered get fixed
 * ones: the ISO 3166 numeric of their territory for GGP, JEP, IMP and TVD (as ISO does for national
 * currencies), and 1, 2, 3 (below every ISO 3166 and 4217 number) for SPL, XFO and XFU. The table
 * is checked for unique codes and numerics within 1..999 when this module loads, failing startup
 * rather than corrupting balances.
 */

export interface Currency {
  /** Alphabetic code, upper case. */
  code: string;
  /** Numeric code (1..999); also the TigerBeetle ledger id. */
  numeric: number;
  /** Decimal places of the smallest representable amount (0..4). */
  scale: number;
}

/**
 * The highest numeric: a migrated cluster holds the old model's limit and window ledgers 1000 and
 * 2000 above the money one.
 */
const MAX_NUMERIC = 999;

/** [alphabetic code, numeric code, scale] */
type CurrencyEntry = readonly [code: string, numeric: number, scale: number];

const CENTRAL_LEDGER_CURRENCIES: readonly CurrencyEntry[] = [
  ['AED', 784, 2],
  ['AFA', 4, 4],
  ['AFN', 971, 2],
  ['ALL', 8, 2],
  ['AMD', 51, 2],
  ['ANG', 532, 2],
  ['AOA', 973, 2],
  ['AOR', 982, 4],
  ['ARS', 32, 2],
  ['AUD', 36, 2],
  ['AWG', 533, 2],
  ['AZN', 944, 2],
  ['BAM', 977, 2],
  ['BBD', 52, 2],
  ['BDT', 50, 2],
  ['BGN', 975, 2],
  ['BHD', 48, 3],
  ['BIF', 108, 0],
  ['BMD', 60, 2],
  ['BND', 96, 2],
  ['BOB', 68, 2],
  ['BOV', 984, 2],
  ['BRL', 986, 2],
  ['BSD', 44, 2],
  ['BTN', 64, 2],
  ['BWP', 72, 2],
  ['BYN', 933, 4],
  ['BYR', 974, 0],
  ['BZD', 84, 2],
  ['CAD', 124, 2],
  ['CDF', 976, 2],
  ['CHE', 947, 2],
  ['CHF', 756, 2],
  ['CHW', 948, 2],
  ['CLF', 990, 4],
  ['CLP', 152, 0],
  ['CNY', 156, 2],
  ['COP', 170, 2],
  ['COU', 970, 2],
  ['CRC', 188, 2],
  ['CUC', 931, 2],
  ['CUP', 192, 2],
  ['CVE', 132, 2],
  ['CZK', 203, 2],
  ['DJF', 262, 0],
  ['DKK', 208, 2],
  ['DOP', 214, 2],
  ['DZD', 12, 2],
  ['EEK', 233, 4],
  ['EGP', 818, 2],
  ['ERN', 232, 2],
  ['ETB', 230, 2],
  ['EUR', 978, 2],
  ['FJD', 242, 2],
  ['FKP', 238, 2],
  ['GBP', 826, 2],
  ['GEL', 981, 2],
  ['GGP', 831, 4],
  ['GHS', 936, 2],
  ['GIP', 292, 2],
  ['GMD', 270, 2],
  ['GNF', 324, 0],
  ['GTQ', 320, 2],
  ['GYD', 328, 2],
  ['HKD', 344, 2],
  ['HNL', 340, 2],
  ['HRK', 191, 2],
  ['HTG', 332, 2],
  ['HUF', 348, 2],
  ['IDR', 360, 2],
  ['ILS', 376, 2],
  ['IMP', 833, 4],
  ['INR', 356, 2],
  ['IQD', 368, 3],
  ['IRR', 364, 2],
  ['ISK', 352, 0],
  ['JEP', 832, 4],
  ['JMD', 388, 2],
  ['JOD', 400, 3],
  ['JPY', 392, 0],
  ['KES', 404, 2],
  ['KGS', 417, 2],
  ['KHR', 116, 2],
  ['KMF', 174, 0],
  ['KPW', 408, 2],
  ['KRW', 410, 0],
  ['KWD', 414, 3],
  ['KYD', 136, 2],
  ['KZT', 398, 2],
  ['LAK', 418, 2],
  ['LBP', 422, 2],
  ['LKR', 144, 2],
  ['LRD', 430, 2],
  ['LSL', 426, 2],
  ['LTL', 440, 4],
  ['LVL', 428, 4],
  ['LYD', 434, 3],
  ['MAD', 504, 2],
  ['MDL', 498, 2],
  ['MGA', 969, 2],
  ['MKD', 807, 2],
  ['MMK', 104, 2],
  ['MNT', 496, 2],
  ['MOP', 446, 2],
  ['MRO', 478, 2],
  ['MUR', 480, 2],
  ['MVR', 462, 2],
  ['MWK', 454, 2],
  ['MXN', 484, 2],
  ['MXV', 979, 2],
  ['MYR', 458, 2],
  ['MZN', 943, 2],
  ['NAD', 516, 2],
  ['NGN', 566, 2],
  ['NIO', 558, 2],
  ['NOK', 578, 2],
  ['NPR', 524, 2],
  ['NZD', 554, 2],
  ['OMR', 512, 3],
  ['PAB', 590, 2],
  ['PEN', 604, 2],
  ['PGK', 598, 2],
  ['PHP', 608, 2],
  ['PKR', 586, 2],
  ['PLN', 985, 2],
  ['PYG', 600, 0],
  ['QAR', 634, 2],
  ['RON', 946, 2],
  ['RSD', 941, 2],
  ['RUB', 643, 2],
  ['RWF', 646, 0],
  ['SAR', 682, 2],
  ['SBD', 90, 2],
  ['SCR', 690, 2],
  ['SDG', 938, 2],
  ['SEK', 752, 2],
  ['SGD', 702, 2],
  ['SHP', 654, 2],
  ['SLL', 694, 2],
  ['SOS', 706, 2],
  ['SPL', 1, 4],
  ['SRD', 968, 2],
  ['SSP', 728, 2],
  ['STD', 678, 2],
  ['SVC', 222, 2],
  ['SYP', 760, 2],
  ['SZL', 748, 2],
  ['THB', 764, 2],
  ['TJS', 972, 2],
  ['TMT', 934, 2],
  ['TND', 788, 3],
  ['TOP', 776, 2],
  ['TRY', 949, 2],
  ['TTD', 780, 2],
  ['TVD', 798, 4],
  ['TWD', 901, 2],
  ['TZS', 834, 2],
  ['UAH', 980, 2],
  ['UGX', 800, 0],
  ['USD', 840, 2],
  ['USN', 997, 2],
  ['UYI', 940, 0],
  ['UYU', 858, 2],
  ['UZS', 860, 2],
  ['VEF', 937, 2],
  ['VND', 704, 0],
  ['VUV', 548, 0],
  ['WST', 882, 2],
  ['XAF', 950, 0],
  ['XAG', 961, 4],
  ['XAU', 959, 4],
  ['XCD', 951, 2],
  ['XDR', 960, 4],
  ['XFO', 2, 4],
  ['XFU', 3, 4],
  ['XOF', 952, 0],
  ['XPD', 964, 4],
  ['XPF', 953, 0],
  ['XPT', 962, 4],
  ['XSU', 994, 4],
  ['XTS', 963, 4],
  ['XUA', 965, 4],
  ['XXX', 999, 4],
  ['YER', 886, 2],
  ['ZAR', 710, 2],
  ['ZMK', 894, 4],
  ['ZMW', 967, 2],
  ['ZWD', 716, 4],
  ['ZWL', 932, 2],
  ['ZWN', 942, 4],
  ['ZWR', 935, 4],
];

function buildCurrencies(entries: readonly CurrencyEntry[]): ReadonlyMap<string, Currency> {
  const byCode = new Map<string, Currency>();
  const codeByNumeric = new Map<number, string>();
  for (const [code, numeric, scale] of entries) {
    if (byCode.has(code)) {
      throw new Error(`currency table lists ${code} twice`);
    }
    const holderOfNumeric = codeByNumeric.get(numeric);
    if (holderOfNumeric !== undefined) {
      throw new Error(
        `currencies ${holderOfNumeric} and ${code} share numeric code ${numeric}, which is used as the ledger id`,
      );
    }
    if (!Number.isInteger(numeric) || numeric < 1 || numeric > MAX_NUMERIC) {
      throw new Error(`currency ${code} has numeric code ${numeric}, outside 1..${MAX_NUMERIC}`);
    }
    codeByNumeric.set(numeric, code);
    // Frozen because every caller shares these objects.
    byCode.set(code, Object.freeze({ code, numeric, scale }));
  }
  return byCode;
}

export const CURRENCIES: ReadonlyMap<string, Currency> = buildCurrencies(CENTRAL_LEDGER_CURRENCIES);

/** Looks up a currency by its exact upper-case alphabetic code. */
export function currencyByCode(code: string): Currency | undefined {
  return CURRENCIES.get(code);
}
