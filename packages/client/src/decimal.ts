/**
 * Decimals on the wire are JSON strings in plain notation ("0.00534463705121415", "-12", "1"): the client leaves
 * them strings, and `parseDecimal` turns one into an exact decimal.js `Decimal` when you need to compute.
 */
import { D, type Decimal } from "../../../src/methodology/decimal.ts";

export type { Decimal };

/** The wire form: an optional minus, an integer part without leading zeros, an optional fraction. No exponent. */
const WIRE_DECIMAL = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;

/**
 * Parses a wire decimal exactly: every digit is kept (no float, no rounding at parse time), and `null` (a decimal
 * the service has not got, e.g. `discount` before the first sample) stays `null`. Throws a `TypeError` on anything
 * that is not a wire decimal (a number, an exponent, a leading `+`, spaces, `NaN`), naming the offending value.
 *
 * The result is a decimal.js `Decimal` of the methodology's own context: arithmetic on it rounds to 34 significant
 * digits, half-even, exactly as the service computes (methodology 1.0.0), so `parseDecimal(d).times(10_000)` is the
 * discount in basis points as the service sees it. `toFixed()` writes it back in plain notation. (That context also
 * reads a value below 1e-40 in magnitude as 0: the methodology's floor, below which the service never writes one.)
 *
 * @example
 * ```ts
 * const card = await client.get("/v1/assets/{symbol}", { params: { path: { symbol: "USDC" } } });
 * const bps = parseDecimal(card.discount)?.times(10_000).toFixed(2);   // "53.45", or undefined before any sample
 * ```
 */
export function parseDecimal(text: string): Decimal;
export function parseDecimal(text: string | null): Decimal | null;
export function parseDecimal(text: string | null): Decimal | null {
  if (text === null) return null;
  if (typeof text !== "string" || text.length > 200 || !WIRE_DECIMAL.test(text)) {
    throw new TypeError(`not a wire decimal: ${JSON.stringify(text)?.slice(0, 60) ?? String(text)}`);
  }
  return new D(text);
}
