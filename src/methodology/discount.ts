import { ALPHA } from "./constants.ts";
import { cmpAbs, ONE, type Decimal } from "./decimal.ts";
import type { AssetClass } from "./types.ts";

/**
 * Raw discount `1 - market / intrinsic` (positive = below intrinsic). LSTs use the SOL legs when both are present and
 * `intrinsic_sol != 0`. Returns null (skip the tick) when intrinsic is 0 or the result is not finite: missing data
 * never becomes a discount of 0.
 */
export function rawDiscount(
  cls: AssetClass,
  legs: {
    readonly intrinsic_usd: Decimal;
    readonly market_usd: Decimal;
    readonly intrinsic_sol: Decimal | null;
    readonly market_sol: Decimal | null;
  },
): Decimal | null {
  let market = legs.market_usd;
  let intrinsic = legs.intrinsic_usd;
  if (cls === "lst" && legs.intrinsic_sol !== null && legs.market_sol !== null && !legs.intrinsic_sol.isZero()) {
    market = legs.market_sol;
    intrinsic = legs.intrinsic_sol;
  }
  if (!market.isFinite() || !intrinsic.isFinite() || intrinsic.isZero()) return null;
  const d = ONE.minus(market.div(intrinsic));
  return d.isFinite() ? d : null;
}

/** Plausibility: keep only |d| < 1 (strict). A market price of 0 gives exactly 1 and is rejected. */
export function plausible(d: Decimal): boolean {
  return d.isFinite() && cmpAbs(d, ONE) < 0;
}

/** EWMA `alpha * raw + (1 - alpha) * prev`; the first accepted sample seeds the average with its raw value. */
const ONE_MINUS_ALPHA = ONE.minus(ALPHA);

export function ewma(raw: Decimal, prev: Decimal | null, alpha: Decimal): Decimal {
  if (prev === null) return raw;
  const keep = alpha === ALPHA ? ONE_MINUS_ALPHA : ONE.minus(alpha);
  return alpha.times(raw).plus(keep.times(prev));
}
