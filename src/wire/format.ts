/**
 * JSON wire conventions (interface 2.1): exact decimal strings, two-decimal USD aggregates, millisecond RFC 3339 UTC
 * timestamps, integer basis points. The decimal and timestamp primitives live in the methodology, because receipts
 * hash the same text; this module re-exports them and adds the response-only rules.
 */
import { D, decimalToWire, timestampToWire, toD, type Decimal, type EpochMs } from "../methodology/index.ts";

export { D, decimalToWire, parseDecimal, parseTimestamp, timestampToWire, type Decimal, type EpochMs } from "../methodology/index.ts";

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

/**
 * USD aggregates (`market_cap`, `loop_exposure_usd`, `liquidatable_usd`, `collateral_usd`, `collateral_lev_usd`,
 * `debt_usd`): rounded half-even to cents, then written like any decimal, so `1.50` is `"1.5"` and `-0.001` is `"0"`.
 * Half-even keeps sums of many rounded rows unbiased.
 */
export function usdAggregateToWire(d: Decimal): string {
  return decimalToWire(toD(d).toDecimalPlaces(2, D.ROUND_HALF_EVEN));
}

/** A decimal field that is serialised as `null` when unknown. */
export function decimalOrNull(d: Decimal | null | undefined): string | null {
  return d == null ? null : decimalToWire(d);
}

/** A USD aggregate field that is serialised as `null` when unknown. */
export function usdAggregateOrNull(d: Decimal | null | undefined): string | null {
  return d == null ? null : usdAggregateToWire(d);
}

/** A timestamp field (epoch ms) that is serialised as `null` when unknown. */
export function timestampOrNull(ms: EpochMs | null | undefined): string | null {
  return ms == null ? null : timestampToWire(ms);
}

/**
 * A signed fraction (0.0123) as integer basis points (123), truncated toward zero like the methodology's band
 * arithmetic (0.005999 → 59, -0.005999 → -59), so `discount_bps` agrees with the band that fired. The wire type is
 * int32; a value outside it is a bug upstream, so this throws rather than emit a wrong number.
 */
export function bpsToWireInt(fraction: Decimal): number {
  if (!fraction.isFinite()) throw new RangeError("a non-finite fraction has no bps form");
  const bps = toD(fraction).times(10_000).trunc();
  if (bps.lt(INT32_MIN) || bps.gt(INT32_MAX)) throw new RangeError(`bps out of int32 range: ${decimalToWire(bps)}`);
  // trunc() of -0.00001 × 10000 is -0; the wire has no negative zero.
  return bps.isZero() ? 0 : bps.toNumber();
}
