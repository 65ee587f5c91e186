import { hasPremiumCarveOut, isCrThresholds, rank, spreadEntryLevels } from "./bands.ts";
import { D, ONE, TEN_THOUSAND, ZERO, type Decimal } from "./decimal.ts";
import { confidenceOf, oracleSpread } from "./gates.ts";
import type { EpochMs } from "./time.ts";
import type { AssetClass, Confidence, MethodologyAsset, OracleEntry, PegState, Thresholds } from "./types.ts";

/**
 * Whether the asset depends on a price oracle at all: it has a cross-check feed, or its market or intrinsic leg is
 * read from an oracle feed. An asset without one is capped at `medium` confidence.
 */
export function hasOracleDependency(asset: MethodologyAsset): boolean {
  if (asset.oracle_feed_id != null && asset.oracle_feed_id !== "") return true;
  if (asset.market?.feed != null) return true;
  if (asset.intrinsic?.feed != null) return true;
  return false;
}

/** Confidence bucket of a set of oracle entries (see `confidenceOf`). */
export function confidence(oracle: Readonly<Record<string, OracleEntry>>, dependsOnOracle: boolean): Confidence {
  return confidenceOf(oracleSpread(oracle), dependsOnOracle);
}

const SCORE_RANGES: Readonly<Record<Exclude<PegState, "UNKNOWN">, readonly [number, number]>> = {
  PEGGED: [0, 24],
  DRIFT: [25, 49],
  DEPEG: [50, 74],
  CRITICAL: [75, 94],
  BLACK_SWAN: [95, 100],
};

/**
 * risk_score (methodology section 7, decision): 0-100 anchored to the committed published state and interpolated by
 * the effective magnitude inside that band. Null for UNKNOWN or absent state, no fresh discount, or CR thresholds.
 */
export function riskScore(
  state: PegState | null,
  dSmooth: Decimal | null,
  cls: AssetClass,
  thresholds: Thresholds,
): number | null {
  if (state === null || state === "UNKNOWN" || dSmooth === null || isCrThresholds(thresholds)) return null;
  const effective = hasPremiumCarveOut(cls) ? D.max(dSmooth, ZERO) : dSmooth.abs();
  const m = effective.times(TEN_THOUSAND);
  const lv = spreadEntryLevels(thresholds);
  const bounds: Readonly<Record<Exclude<PegState, "UNKNOWN">, readonly [number, number]>> = {
    PEGGED: [0, lv.drift],
    DRIFT: [lv.drift, lv.depeg],
    DEPEG: [lv.depeg, lv.critical],
    CRITICAL: [lv.critical, lv.blackSwan],
    BLACK_SWAN: [lv.blackSwan, 2 * lv.blackSwan],
  };
  const [min, max] = SCORE_RANGES[state];
  const [lo, hi] = bounds[state];
  if (hi <= lo) return min;
  let f = m.minus(lo).div(hi - lo);
  if (f.lt(ZERO)) f = ZERO;
  if (f.gt(ONE)) f = ONE;
  return min + f.times(max - min).floor().toNumber();
}

/** sustained: a committed DRIFT-or-worse state held for at least `sustainedSecs`. Never true for PEGGED/UNKNOWN. */
export function sustained(state: PegState | null, since: EpochMs | null, now: EpochMs, sustainedSecs: number): boolean {
  if (state === null || since === null || rank(state) < 1 || state === "UNKNOWN") return false;
  return Math.trunc((now - since) / 1000) >= sustainedSecs;
}
