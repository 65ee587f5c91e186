import { Decimal } from "decimal.js";

/**
 * The one decimal context of the methodology: 34 significant digits (IEEE 754 decimal128), ROUND_HALF_EVEN, and
 * exponent limits wide enough that no value the service handles is ever written in exponent form.
 * Every Decimal the engine computes with is built by this constructor, so precision never depends on global state.
 */
export const D = Decimal.clone({
  precision: 34,
  rounding: Decimal.ROUND_HALF_EVEN,
  toExpNeg: -9e15,
  toExpPos: 9e15,
  maxE: 9e15,
  minE: -9e15,
});

export type { Decimal };

export const ZERO = new D(0);
export const ONE = new D(1);
export const TEN_THOUSAND = new D(10_000);
export const HUNDRED = new D(100);

const DECIMAL_TEXT = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;
const LENIENT_DECIMAL_TEXT = /^[+-]?\d+(?:\.\d*)?$|^[+-]?\.\d+$/;

/**
 * Parses a decimal written in plain notation ("0.9990", "-12", "1."), never a float or exponent form. Returns null
 * for anything else, so callers can report the exact offending field.
 */
export function parseDecimal(text: unknown): Decimal | null {
  if (typeof text !== "string" || text.length === 0 || text.length > 80) return null;
  if (!DECIMAL_TEXT.test(text) && !LENIENT_DECIMAL_TEXT.test(text)) return null;
  const value = new D(text);
  return value.isFinite() ? value : null;
}

/** Exact wire form: plain notation, trailing zeros trimmed, never an exponent, `-0` written as `0`. */
export function decimalToWire(value: Decimal): string {
  if (!value.isFinite()) throw new RangeError("a non-finite decimal has no wire form");
  if (value.isZero()) return "0";
  // toFixed() without digits writes the exact value in plain notation; decimal.js never keeps trailing zeros.
  return value.toFixed();
}

/** Converts any Decimal (possibly from another decimal.js context) into the methodology's context, exactly. */
export function toD(value: Decimal): Decimal {
  return value instanceof D ? value : new D(value);
}
