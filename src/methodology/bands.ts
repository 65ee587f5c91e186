import {
  DEFAULT_CR,
  DEFAULT_CRITICAL_BPS,
  DEFAULT_DEPEG_BPS,
  DEFAULT_DRIFT_BPS,
  CR_DEADBAND_PCT,
  DEADBAND_PCT,
} from "./constants.ts";
import { cmpAbs, D, TEN_THOUSAND, HUNDRED, ZERO, type Decimal } from "./decimal.ts";
import type { AssetClass, Band, CrThresholds, PegState, SpreadThresholds, ThresholdKind, Thresholds } from "./types.ts";

const RANK: Readonly<Record<PegState, number>> = {
  PEGGED: 0,
  UNKNOWN: 0,
  DRIFT: 1,
  DEPEG: 2,
  CRITICAL: 3,
  BLACK_SWAN: 4,
};

/** Strictness rank: PEGGED = UNKNOWN = 0, DRIFT 1, DEPEG 2, CRITICAL 3, BLACK_SWAN 4. */
export function rank(state: PegState): number {
  return RANK[state];
}

/** Classes whose premium (d < 0) is demand, not stress: it classifies PEGGED whatever its size. */
const PREMIUM_CARVE_OUT: ReadonlySet<AssetClass> = new Set(["lst", "stable_yield", "synth_lev"]);

export function hasPremiumCarveOut(cls: AssetClass): boolean {
  return PREMIUM_CARVE_OUT.has(cls);
}

export function isCrThresholds(t: Thresholds): t is CrThresholds {
  return "cr_drift" in t || "cr_depeg" in t || "cr_critical" in t || "cr_black_swan" in t;
}

export function thresholdKind(t: Thresholds): ThresholdKind {
  return isCrThresholds(t) ? "cr" : "bps";
}

/** Resolved spread thresholds, whole bps. */
export interface SpreadLevels {
  readonly drift: number;
  readonly depeg: number;
  readonly critical: number;
  readonly blackSwan: number;
}

/** floor(v x pct / 100) on non-negative integers, in integer arithmetic. */
function floorPct(v: number, pct: number): number {
  const scaled = v * pct;
  return (scaled - (scaled % 100)) / 100;
}

/** Entry thresholds: defaults for missing keys; black swan defaults to 2 x critical. */
export function spreadEntryLevels(t: SpreadThresholds): SpreadLevels {
  const drift = t.drift_bps ?? DEFAULT_DRIFT_BPS;
  const depeg = t.depeg_bps ?? DEFAULT_DEPEG_BPS;
  const critical = t.critical_bps ?? DEFAULT_CRITICAL_BPS;
  return { drift, depeg, critical, blackSwan: t.black_swan_bps ?? 2 * critical };
}

/** Exit thresholds: every threshold becomes floor(v x 75 / 100); an absent black swan is 2 x the exit critical. */
export function spreadExitLevels(t: SpreadThresholds, deadbandPct = DEADBAND_PCT): SpreadLevels {
  const entry = spreadEntryLevels(t);
  const keep = 100 - deadbandPct;
  const critical = floorPct(entry.critical, keep);
  return {
    drift: floorPct(entry.drift, keep),
    depeg: floorPct(entry.depeg, keep),
    critical,
    blackSwan: t.black_swan_bps === undefined ? 2 * critical : floorPct(t.black_swan_bps, keep),
  };
}

export interface CrLevels {
  readonly drift: number;
  readonly depeg: number;
  readonly critical: number;
  readonly blackSwan: number;
}

export function crEntryLevels(t: Partial<CrThresholds>): CrLevels {
  return {
    drift: t.cr_drift ?? DEFAULT_CR.cr_drift,
    depeg: t.cr_depeg ?? DEFAULT_CR.cr_depeg,
    critical: t.cr_critical ?? DEFAULT_CR.cr_critical,
    blackSwan: t.cr_black_swan ?? DEFAULT_CR.cr_black_swan,
  };
}

/** Exit thresholds of the collateral-ratio path: floor(v x 102 / 100). */
export function crExitLevels(t: Partial<CrThresholds>, crDeadbandPct = CR_DEADBAND_PCT): CrLevels {
  const e = crEntryLevels(t);
  const keep = 100 + crDeadbandPct;
  return {
    drift: floorPct(e.drift, keep),
    depeg: floorPct(e.depeg, keep),
    critical: floorPct(e.critical, keep),
    blackSwan: floorPct(e.blackSwan, keep),
  };
}

const MAX_EXACT_BPS = new D(Number.MAX_SAFE_INTEGER);

/**
 * trunc(|d| x 10000): whole basis points, integer part (0.005999 -> 59), as an exact integer. Null when the value
 * does not fit an exact integer (not finite, or beyond 2^53): that counts as overflow, i.e. BLACK_SWAN.
 */
export function bpsOf(d: Decimal): number | null {
  const bps = d.abs().times(TEN_THOUSAND).trunc();
  // An integer-valued Decimal below 2^53 converts to a JS number exactly.
  return bps.isFinite() && bps.lte(MAX_EXACT_BPS) ? bps.toNumber() : null;
}

/** Spread levels as fractions (T / 10^4), so |d| compares against them directly. */
interface FractionLevels {
  readonly drift: Decimal;
  readonly depeg: Decimal;
  readonly critical: Decimal;
  readonly blackSwan: Decimal;
}

const fractionCache = new WeakMap<SpreadLevels, FractionLevels>();
const entryCache = new WeakMap<SpreadThresholds, SpreadLevels>();
const exitCache = new WeakMap<SpreadThresholds, Map<number, SpreadLevels>>();

function fractions(levels: SpreadLevels): FractionLevels {
  let f = fractionCache.get(levels);
  if (f === undefined) {
    f = {
      drift: new D(levels.drift).div(TEN_THOUSAND),
      depeg: new D(levels.depeg).div(TEN_THOUSAND),
      critical: new D(levels.critical).div(TEN_THOUSAND),
      blackSwan: new D(levels.blackSwan).div(TEN_THOUSAND),
    };
    fractionCache.set(levels, f);
  }
  return f;
}

function cachedEntry(t: SpreadThresholds): SpreadLevels {
  let l = entryCache.get(t);
  if (l === undefined) entryCache.set(t, (l = spreadEntryLevels(t)));
  return l;
}

function cachedExit(t: SpreadThresholds, deadbandPct: number): SpreadLevels {
  let m = exitCache.get(t);
  if (m === undefined) exitCache.set(t, (m = new Map()));
  let l = m.get(deadbandPct);
  if (l === undefined) m.set(deadbandPct, (l = spreadExitLevels(t, deadbandPct)));
  return l;
}

/**
 * Band of |d| against whole-bps levels: `trunc(|d| x 10^4) >= T` is exactly `|d| >= T / 10^4` for an integer T
 * (truncation cannot cross an integer, and x 10^4 only moves the exponent), so no bps value is materialised.
 */
function spreadBand(d: Decimal, levels: SpreadLevels): Band {
  if (!d.isFinite()) return "BLACK_SWAN"; // overflow counts as BLACK_SWAN
  const f = fractions(levels);
  if (cmpAbs(d, f.blackSwan) >= 0) return "BLACK_SWAN";
  if (cmpAbs(d, f.critical) >= 0) return "CRITICAL";
  if (cmpAbs(d, f.depeg) >= 0) return "DEPEG";
  if (cmpAbs(d, f.drift) >= 0) return "DRIFT";
  return "PEGGED";
}

function isPremium(dSmooth: Decimal, cls: AssetClass): boolean {
  return dSmooth.isNegative() && !dSmooth.isZero() && hasPremiumCarveOut(cls);
}

/** Plain spread band (no deadband), with the premium carve-out. `exit` classifies against the exit thresholds. */
export function classifySpreadPlain(
  dSmooth: Decimal,
  cls: AssetClass,
  t: SpreadThresholds,
  exit = false,
  deadbandPct = DEADBAND_PCT,
): Band {
  if (isPremium(dSmooth, cls)) return "PEGGED";
  return spreadBand(dSmooth, exit ? cachedExit(t, deadbandPct) : cachedEntry(t));
}

/** cr_pct = trunc(cr x 100), clamped at >= 0. */
export function crPct(cr: Decimal): Decimal {
  const pct = cr.times(HUNDRED).trunc();
  return pct.isNegative() ? ZERO : pct;
}

/** Plain collateral-ratio band: strict `<`, lower is worse. `exit` classifies against the exit thresholds. */
export function classifyCrPlain(cr: Decimal, t: Partial<CrThresholds>, exit = false, crDeadbandPct = CR_DEADBAND_PCT): Band {
  const levels = exit ? crExitLevels(t, crDeadbandPct) : crEntryLevels(t);
  const pct = crPct(cr);
  // A non-finite ratio carries no collateral information the thresholds could compare: treat as collapse.
  if (!pct.isFinite()) return "BLACK_SWAN";
  if (pct.lt(levels.blackSwan)) return "BLACK_SWAN";
  if (pct.lt(levels.critical)) return "CRITICAL";
  if (pct.lt(levels.depeg)) return "DEPEG";
  if (pct.lt(levels.drift)) return "DRIFT";
  return "PEGGED";
}

/**
 * Candidate band with the Schmitt deadband (methodology section 4): a worsening value is never slowed; an improving
 * one is classified again against the exit thresholds. `current` is the committed band.
 */
export function classifySpread(
  dSmooth: Decimal,
  cls: AssetClass,
  t: SpreadThresholds,
  current: Band,
  deadbandPct = DEADBAND_PCT,
): Band {
  if (isPremium(dSmooth, cls)) return "PEGGED";
  const raw = spreadBand(dSmooth, cachedEntry(t));
  if (rank(raw) >= rank(current)) return raw;
  return spreadBand(dSmooth, cachedExit(t, deadbandPct));
}

export function classifyCr(cr: Decimal, t: Partial<CrThresholds>, current: Band, crDeadbandPct = CR_DEADBAND_PCT): Band {
  const raw = classifyCrPlain(cr, t);
  if (rank(raw) >= rank(current)) return raw;
  return classifyCrPlain(cr, t, true, crDeadbandPct);
}
