import { DISCOUNT_SANITY_BPS, ORACLE_CONFIDENCE_BPS, PREMIUM_SANITY_BPS } from "./constants.ts";
import { TEN_THOUSAND, type Decimal } from "./decimal.ts";
import type { AssetClass, Band, GateName, OracleEntry } from "./types.ts";

const NAV_SANITY_CLASSES: ReadonlySet<AssetClass> = new Set(["lst", "stable_yield"]);

/** |x| x 10000 > bound, where a non-finite product counts as above (overflow fires the gate). */
function bpsAbove(x: Decimal, bound: number): boolean {
  const v = x.abs().times(TEN_THOUSAND);
  return !v.isFinite() || v.gt(bound);
}

/** |conf / price| in bps as an exact decimal; null when the price is 0 (undefined ratio). */
export function oracleConfBps(entry: OracleEntry): Decimal | null {
  if (entry.price.isZero()) return null;
  return entry.conf.div(entry.price).abs().times(TEN_THOUSAND);
}

export interface GateInputs {
  readonly cls: AssetClass;
  readonly committed: Band;
  readonly dSmooth: Decimal;
  readonly oracle: Readonly<Record<string, OracleEntry>>;
  /** null when the intrinsic-liveness gate is disabled by configuration. */
  readonly intrinsicStale: boolean | null;
}

/**
 * Gates after the dwell (methodology section 6), in order; the first that fires publishes UNKNOWN. A committed
 * BLACK_SWAN skips them all: a confirmed collapse is never masked.
 */
export function firstGate(g: GateInputs): GateName | null {
  if (g.committed === "BLACK_SWAN") return null;
  const navSanity = NAV_SANITY_CLASSES.has(g.cls);
  if (navSanity && g.dSmooth.isNegative() && !g.dSmooth.isZero() && bpsAbove(g.dSmooth, PREMIUM_SANITY_BPS)) {
    return "premium_sanity";
  }
  if (navSanity && g.dSmooth.isPositive() && !g.dSmooth.isZero() && bpsAbove(g.dSmooth, DISCOUNT_SANITY_BPS)) {
    return "discount_sanity";
  }
  for (const name of Object.keys(g.oracle).sort()) {
    const entry = g.oracle[name]!;
    if (entry.price.isZero()) continue;
    const bps = oracleConfBps(entry);
    if (bps === null || !bps.isFinite() || bps.gt(ORACLE_CONFIDENCE_BPS)) return "oracle_confidence";
  }
  if (g.intrinsicStale === true) return "intrinsic_liveness";
  return null;
}

/** The interface's `state_reason` for a gate: only premium_sanity has one. */
export function gateStateReason(gate: GateName | null): "premium_sanity" | null {
  return gate === "premium_sanity" ? "premium_sanity" : null;
}
