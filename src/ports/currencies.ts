/**
 * ISO 4217 currencies the hub can hold positions in.
 *
 * Scale is the number of decimal places an amount in the currency may carry,
 * i.e. how many minor units make one major unit (10^scale). It is the ISO 4217
 * minor unit capped at 4, because the Mojaloop FSPIOP `Amount` type allows at
 * most 4 fractional digits: no amount a participant can send needs more, and
 * a finer scale would only shrink the headroom of the ledger's integer
 * balances. Codes whose ISO minor unit is "N.A." (precious metals, SDR, bond
 * market units, the testing code) get the full 4 so any valid Mojaloop amount
 * in them is representable.
 *
 * The numeric code doubles as the TigerBeetle ledger id for the currency's
 * accounts, and TigerBeetle only lets accounts on the same ledger transact, so
 * two currencies sharing a numeric code would silently share a ledger. The
 * table is therefore checked for unique codes and numerics when this module
 * loads, failing startup rather than corrupting balances.
 *
 * Contents: ISO 4217 List One as of the 2026-01-01 publication, i.e. including
 * XCG (which took over ANG's numeric 532 on 2025-03-31), ZWG and XAD, and
 * without ANG, BGN (Bulgaria adopted the euro), CUC, SLL and ZWL. XXX ("no
 * currency") is left out because a ledger position in it is meaningless.
 */

export interface Currency {
  /** ISO 4217 alphabetic code, upper case. */
  code: string;
  /** ISO 4217 numeric code; also the TigerBeetle ledger id. */
  numeric: number;
  /** Decimal places of the smallest representable amount (0..4). */
  scale: number;
}

/** Most fractional digits a Mojaloop `Amount` can carry. */
const MOJALOOP_MAX_SCALE = 4;

/** [alphabetic code, numeric code, ISO minor units or null for "N.A."] */
type Iso4217Entry = readonly [code: string, numeric: number, minorUnits: number | null];

const ISO_4217_LIST_ONE: readonly Iso4217Entry[] = [
  ['AED', 784, 2],
  ['AFN', 971, 2],
  ['ALL', 8, 2],
  ['AMD', 51, 2],
  ['AOA', 973, 2],
  ['ARS', 32, 2],
  ['AUD', 36, 2],
  ['AWG', 533, 2],
  ['AZN', 944, 2],
  ['BAM', 977, 2],
  ['BBD', 52, 2],
  ['BDT', 50, 2],
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
  ['BYN', 933, 2],
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
  ['CUP', 192, 2],
  ['CVE', 132, 2],
  ['CZK', 203, 2],
  ['DJF', 262, 0],
  ['DKK', 208, 2],
  ['DOP', 214, 2],
  ['DZD', 12, 2],
  ['EGP', 818, 2],
  ['ERN', 232, 2],
  ['ETB', 230, 2],
  ['EUR', 978, 2],
  ['FJD', 242, 2],
  ['FKP', 238, 2],
  ['GBP', 826, 2],
  ['GEL', 981, 2],
  ['GHS', 936, 2],
  ['GIP', 292, 2],
  ['GMD', 270, 2],
  ['GNF', 324, 0],
  ['GTQ', 320, 2],
  ['GYD', 328, 2],
  ['HKD', 344, 2],
  ['HNL', 340, 2],
  ['HTG', 332, 2],
  ['HUF', 348, 2],
  ['IDR', 360, 2],
  ['ILS', 376, 2],
  ['INR', 356, 2],
  ['IQD', 368, 3],
  ['IRR', 364, 2],
  ['ISK', 352, 0],
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
  ['LYD', 434, 3],
  ['MAD', 504, 2],
  ['MDL', 498, 2],
  ['MGA', 969, 2],
  ['MKD', 807, 2],
  ['MMK', 104, 2],
  ['MNT', 496, 2],
  ['MOP', 446, 2],
  ['MRU', 929, 2],
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
  ['SLE', 925, 2],
  ['SOS', 706, 2],
  ['SRD', 968, 2],
  ['SSP', 728, 2],
  ['STN', 930, 2],
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
  ['TWD', 901, 2],
  ['TZS', 834, 2],
  ['UAH', 980, 2],
  ['UGX', 800, 0],
  ['USD', 840, 2],
  ['USN', 997, 2],
  ['UYI', 940, 0],
  ['UYU', 858, 2],
  ['UYW', 927, 4],
  ['UZS', 860, 2],
  ['VED', 926, 2],
  ['VES', 928, 2],
  ['VND', 704, 0],
  ['VUV', 548, 0],
  ['WST', 882, 2],
  ['XAD', 396, 2],
  ['XAF', 950, 0],
  ['XAG', 961, null],
  ['XAU', 959, null],
  ['XBA', 955, null],
  ['XBB', 956, null],
  ['XBC', 957, null],
  ['XBD', 958, null],
  ['XCD', 951, 2],
  ['XCG', 532, 2],
  ['XDR', 960, null],
  ['XOF', 952, 0],
  ['XPD', 964, null],
  ['XPF', 953, 0],
  ['XPT', 962, null],
  ['XSU', 994, null],
  ['XTS', 963, null],
  ['XUA', 965, null],
  ['YER', 886, 2],
  ['ZAR', 710, 2],
  ['ZMW', 967, 2],
  ['ZWG', 924, 2],
];

function buildCurrencies(entries: readonly Iso4217Entry[]): ReadonlyMap<string, Currency> {
  const byCode = new Map<string, Currency>();
  const codeByNumeric = new Map<number, string>();
  for (const [code, numeric, minorUnits] of entries) {
    if (byCode.has(code)) {
      throw new Error(`currency table lists ${code} twice`);
    }
    const holderOfNumeric = codeByNumeric.get(numeric);
    if (holderOfNumeric !== undefined) {
      throw new Error(
        `currencies ${holderOfNumeric} and ${code} share numeric code ${numeric}, which is used as the ledger id`,
      );
    }
    codeByNumeric.set(numeric, code);
    const scale =
      minorUnits === null ? MOJALOOP_MAX_SCALE : Math.min(minorUnits, MOJALOOP_MAX_SCALE);
    // Frozen because every caller shares these objects.
    byCode.set(code, Object.freeze({ code, numeric, scale }));
  }
  return byCode;
}

export const CURRENCIES: ReadonlyMap<string, Currency> = buildCurrencies(ISO_4217_LIST_ONE);

/** Looks up a currency by its exact upper-case alphabetic code. */
export function currencyByCode(code: string): Currency | undefined {
  return CURRENCIES.get(code);
}
