import { CONFIDENCE_HIGH_BPS, CONFIDENCE_MEDIUM_BPS, DISCOUNT_SANITY_BPS, ORACLE_CONFIDENCE_BPS, PREMIUM_SANITY_BPS } from "./constants.ts";
import { cmp, cmpAbs, D, TEN_THOUSAND, type Decimal } from "./decimal.ts";
import type { AssetClass, Band, Confidence, GateName, OracleEntry } from "./types.ts";

const NAV_SANITY_CLASSES: ReadonlySet<AssetClass> = new Set(["lst", "stable_yield"]);

// Bounds as fractions. `x * 10000 > b` and `x > b / 10000` are the same comparison: multiplying a decimal by 10^4
// only moves its exponent, so it is exact at any precision.
const PREMIUM_BOUND = new D(PREMIUM_SANITY_BPS).div(TEN_THOUSAND);
const DISCOUNT_BOUND = new D(DISCOUNT_SANITY_BPS).div(TEN_THOUSAND);
const ORACLE_BOUND = new D(ORACLE_CONFIDENCE_BPS).div(TEN_THOUSAND);
const HIGH_BOUND = new D(CONFIDENCE_HIGH_BPS).div(TEN_THOUSAND);
const MEDIUM_BOUND = new D(CONFIDENCE_MEDIUM_BPS).div(TEN_THOUSAND);

/** |conf / price| in bps as an exact decimal; null when the price is 0 (undefined ratio). */
export function oracleConfBps(entry: OracleEntry): Decimal | null {
  if (entry.price.isZero()) return null;
  return entry.conf.div(entry.price).abs().times(TEN_THOUSAND);
}

/** The worst |conf/price| over a sample's oracle entries, computed once per evaluation for the gate and the bucket. */
export interface OracleSpread {
  /** Worst ratio over entries with a non-zero price (compare by magnitude: it may be negative); null when none. */
  readonly worst: Decimal | null;
  /** Some entry had price 0 (its ratio is undefined). */
  readonly zeroPrice: boolean;
  readonly entries: number;
}

/**
 * conf / price of one entry, memoised by entry identity: entries are immutable, and one feed's entry is shared by
 * every asset that reads it in a tick (SOL/USD by every LST), so the 34-digit division runs once per feed update.
 */
const ratioCache = new WeakMap<OracleEntry, Decimal>();

function ratioOf(e: OracleEntry): Decimal {
  let r = ratioCache.get(e);
  if (r === undefined) ratioCache.set(e, (r = e.conf.div(e.price)));
  return r;
}

export function oracleSpread(oracle: Readonly<Record<string, OracleEntry>>): OracleSpread {
  let worst: Decimal | null = null;
  let zeroPrice = false;
  let entries = 0;
  for (const name in oracle) {
    const e = oracle[name]!;
    entries++;
    if (e.price.isZero()) {
      zeroPrice = true;
      continue;
    }
    const ratio = ratioOf(e); // compared by magnitude below; the sign of conf/price is irrelevant
    if (worst === null || !ratio.isFinite() || cmpAbs(ratio, worst) > 0) worst = ratio;
  }
  return { worst, zeroPrice, entries };
}

export interface GateInputs {
  readonly cls: AssetClass;
  readonly committed: Band;
  readonly dSmooth: Decimal;
  readonly oracle: Readonly<Record<string, OracleEntry>>;
  /** `oracleSpread(oracle)` when the caller already has it (the engine computes it once per evaluation). */
  readonly spread?: OracleSpread;
  /** null when the intrinsic-liveness gate is disabled by configuration. */
  readonly intrinsicStale: boolean | null;
}

/**
 * Gates after the dwell (methodology section 6), in order; the first that fires publishes UNKNOWN. A committed
 * BLACK_SWAN skips them all: a confirmed collapse is never masked. Bounds are strict (exactly the bound passes);
 * a non-finite value counts as above.
 */
export function firstGate(g: GateInputs): GateName | null {
  if (g.committed === "BLACK_SWAN") return null;
  if (NAV_SANITY_CLASSES.has(g.cls)) {
    const d = g.dSmooth;
    if (!d.isFinite()) return d.isNegative() ? "premium_sanity" : "discount_sanity";
    if (d.isNegative() && cmpAbs(d, PREMIUM_BOUND) > 0) return "premium_sanity";
    if (cmp(d, DISCOUNT_BOUND) > 0) return "discount_sanity";
  }
  const worst = (g.spread ?? oracleSpread(g.oracle)).worst;
  if (worst !== null && (!worst.isFinite() || cmpAbs(worst, ORACLE_BOUND) > 0)) return "oracle_confidence";
  if (g.intrinsicStale === true) return "intrinsic_liveness";
  return null;
}

/** The interface's `state_reason` for a gate: only premium_sanity has one. */
export function gateStateReason(gate: GateName | null): "premium_sanity" | null {
  return gate === "premium_sanity" ? "premium_sanity" : null;
}

/**
 * Confidence bucket (methodology section 7) from the sample's fresh oracle entries: worst |conf/price| <= 10 bps
 * high, <= 100 bps medium, else low (an entry with price 0 is low); `unknown` when the asset depends on an oracle but
 * no entry is present; an asset without an oracle dependency is capped at `medium`.
 */
export function confidenceOf(spread: OracleSpread, dependsOnOracle: boolean): Confidence {
  if (spread.entries === 0) return dependsOnOracle ? "unknown" : "medium";
  const w = spread.worst;
  let bucket: Confidence;
  if (spread.zeroPrice || w === null || !w.isFinite()) bucket = "low";
  else bucket = cmpAbs(w, HIGH_BOUND) <= 0 ? "high" : cmpAbs(w, MEDIUM_BOUND) <= 0 ? "medium" : "low";
  return !dependsOnOracle && bucket === "high" ? "medium" : bucket;
}
