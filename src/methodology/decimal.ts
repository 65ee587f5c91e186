import { Decimal } from "decimal.js";

/** Smallest exponent kept: any result below 1e-40 in magnitude is exactly 0 (decision; see MIN_EXPONENT). */
export const MIN_EXPONENT = -40;

/**
 * The one decimal context of the methodology: 34 significant digits (IEEE 754 decimal128), ROUND_HALF_EVEN, and
 * plain notation always. Every Decimal the engine computes with is built by this constructor, so precision never
 * depends on global state.
 *
 * Underflow (decision): results smaller than 1e-40 in magnitude flush to exactly 0. Without a floor, an EWMA that
 * sits at par decays by 0.7 per tick forever (0.7^n never reaches 0 at 34 significant digits), and after a day of
 * one-second samples its exact wire form would run to thousands of digits. 1e-40 is 36 orders of magnitude below a
 * basis point, so no band, gate or score can differ, and the flush is deterministic, so receipts re-derive exactly.
 */
export const D = Decimal.clone({
  precision: 34,
  rounding: Decimal.ROUND_HALF_EVEN,
  toExpNeg: -9e15,
  toExpPos: 9e15,
  maxE: 9e15,
  minE: MIN_EXPONENT,
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
  if (!isDecimalText(text)) return null;
  const value = new D(text);
  return value.isFinite() ? value : null;
}

/**
 * True exactly when `parseDecimal(text)` gives a decimal, without building one (a plain digit string is always
 * finite): for validating a wire decimal that is passed on as text, as the store does with every row's parameters.
 */
export function isDecimalText(text: unknown): text is string {
  // 34 significant digits with exponents down to -40 fit in about 80 characters; 160 leaves room for large integer
  // parts while still refusing absurd input before any parsing work.
  if (typeof text !== "string" || text.length === 0 || text.length > 160) return false;
  return DECIMAL_TEXT.test(text) || LENIENT_DECIMAL_TEXT.test(text);
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

/**
 * Compares two finite decimals exactly, like `x.cmp(y)` but without allocating (decimal.js copies its argument on
 * every comparison, which dominated the engine's garbage). Works on the public representation `{s, e, d}`: sign,
 * exponent and base-1e7 limbs. Returns -1, 0 or 1; NaN when either is NaN.
 */
export function cmp(x: Decimal, y: Decimal): number {
  const xd = x.d, yd = y.d, xs = x.s, ys = y.s;
  if (!xd || !yd) return x.cmp(y); // NaN or an infinity: the rare path keeps decimal.js semantics
  if (!xd[0] || !yd[0]) return xd[0] ? xs : yd[0] ? -ys : 0;
  if (xs !== ys) return xs;
  const m = cmpMagnitude(xd, x.e, yd, y.e);
  return m === 0 || xs > 0 ? m : -m;
}

/** Compares |x| with |y| exactly, without allocating. Returns -1, 0 or 1; NaN when either is NaN. */
export function cmpAbs(x: Decimal, y: Decimal): number {
  const xd = x.d, yd = y.d;
  if (!xd || !yd) return x.abs().cmp(y.abs());
  if (!xd[0] || !yd[0]) return xd[0] ? 1 : yd[0] ? -1 : 0;
  return cmpMagnitude(xd, x.e, yd, y.e);
}

function cmpMagnitude(xd: readonly number[], xe: number, yd: readonly number[], ye: number): number {
  if (xe !== ye) return xe > ye ? 1 : -1;
  const n = xd.length < yd.length ? xd.length : yd.length;
  for (let i = 0; i < n; i++) {
    if (xd[i] !== yd[i]) return xd[i]! > yd[i]! ? 1 : -1;
  }
  return xd.length === yd.length ? 0 : xd.length > yd.length ? 1 : -1;
}
