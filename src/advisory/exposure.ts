/**
 * Loop exposure of one asset (interface 2.7): the leveraged collateral riding on it across the tracked lending
 * protocols, its debt, the per-protocol split and the liquidation cascade at each preset shock, after the privacy
 * rule: every figure counts only publishable bands, so with coverage `partial` the figures are lower bounds. Exact
 * decimals; rounding to cents happens only on the wire (`wire.ts`).
 */
import { ZERO, type Decimal } from "../methodology/index.ts";
import { liquidatableAt, SHOCK_BPS, type ShockBps } from "./cascade.ts";
import { isLeveraged, type LendingPosition } from "./position.ts";
import { positionsLabel, publication, totals } from "./privacy.ts";

/** `partial` whenever the privacy rule left anything out (the figures are then lower bounds); `full` otherwise. */
export type Coverage = "full" | "partial";

/** One cascade rung, always a figure: what the privacy rule lets through (see privacy.ts). */
export interface CascadeRungFigure {
  readonly shock_bps: ShockBps;
  /**
   * Collateral of the published positions whose health falls below 1 at this shock, USD (exact): cumulative over the
   * published chain, so a rung whose increment is withheld carries the previous published rung's figure (or 0).
   */
  readonly liquidatable_usd: Decimal;
  /** k-floored count label (`positionsLabel`) of the set behind `liquidatable_usd`, never of a withheld one. */
  readonly positions: string;
}

/** One listed protocol's bucket; a protocol whose bucket is withheld is not listed at all. */
export interface ProtocolFigure {
  readonly protocol: string;
  readonly collateral_lev_usd: Decimal;
  readonly debt_usd: Decimal;
}

export interface LoopExposure {
  /** Whether any leveraged position rides on the asset. False: zero totals, no protocols, an empty cascade. */
  readonly tracked: boolean;
  /** Summed leveraged collateral of the listed protocols, USD (exact); a lower bound when coverage is partial. */
  readonly loop_exposure_usd: Decimal;
  /** Summed debt of the same positions, USD (exact). */
  readonly debt_usd: Decimal;
  readonly coverage: Coverage;
  /** Protocols whose buckets pass the privacy rule, sorted by name; they sum to the totals exactly. */
  readonly by_protocol: readonly ProtocolFigure[];
  /** One rung per preset shock, ascending, over the listed protocols' positions; empty when nothing is tracked. */
  readonly cascade: readonly CascadeRungFigure[];
}

/**
 * The loop exposure of the positions whose collateral is `mint` (all given positions when `mint` is omitted). Legs
 * without debt are not leverage and are ignored.
 */
export function loopExposure(positions: readonly LendingPosition[], mint?: string): LoopExposure {
  const book = positions.filter((p) => (mint === undefined || p.collateral_mint === mint) && isLeveraged(p));
  if (book.length === 0) {
    return { tracked: false, loop_exposure_usd: ZERO, debt_usd: ZERO, coverage: "full", by_protocol: [], cascade: [] };
  }
  const names = [...new Set(book.map((p) => p.protocol))].sort();
  const cells = names.map((n) => book.filter((p) => p.protocol === n));
  const rungs = SHOCK_BPS.map((s) => book.filter((p) => liquidatableAt(p, s)));
  const pub = publication(cells, rungs);
  const all = totals(pub.total);

  return {
    tracked: true,
    loop_exposure_usd: all.collateral,
    debt_usd: all.debt,
    coverage: pub.withheld ? "partial" : "full",
    by_protocol: names.flatMap((protocol, i) => {
      if (!pub.cellShown[i]) return [];
      const t = totals(cells[i]!);
      return [{ protocol, collateral_lev_usd: t.collateral, debt_usd: t.debt }];
    }),
    cascade: SHOCK_BPS.map((shock_bps, k) => ({
      shock_bps,
      liquidatable_usd: totals(pub.rungSets[k]!).collateral,
      positions: positionsLabel(pub.rungSets[k]!.length),
    })),
  };
}

/**
 * Loop exposure per collateral mint, looked up by mint; a mint that is absent has no tracked leverage. `get` returns the
 * same object for the same mint every time.
 */
export interface ExposureLookup {
  get(mint: string): LoopExposure | undefined;
  /** The mints with at least one position (leveraged or not). */
  keys(): Iterable<string>;
}

/**
 * Groups positions by collateral mint; each asset's loop exposure is computed on its first `get` and kept. A refresh
 * of the positions changes every figure, and computing them all (about half a millisecond of exact decimals per asset)
 * cost the engine's thread 5 % at 10,000 assets whether anyone asked or not; now a refresh costs the grouping, and
 * each figure is computed once per refresh, when a route first needs it.
 */
export function loopExposureByMint(positions: readonly LendingPosition[]): ExposureLookup {
  const byMint = positionsByMint(positions);
  return lazyExposures(() => byMint.keys(), (mint) => byMint.get(mint));
}

/** Positions grouped by collateral mint, in their order. */
export function positionsByMint(positions: readonly LendingPosition[]): Map<string, LendingPosition[]> {
  const byMint = new Map<string, LendingPosition[]>();
  for (const p of positions) {
    const list = byMint.get(p.collateral_mint);
    if (list === undefined) byMint.set(p.collateral_mint, [p]);
    else list.push(p);
  }
  return byMint;
}

/**
 * The loop exposure of each mint `keys` lists, computed from `positionsOf(mint)` (its collateral positions) on the
 * mint's first `get` and kept.
 */
export function lazyExposures(keys: () => Iterable<string>, positionsOf: (mint: string) => readonly LendingPosition[] | undefined): ExposureLookup {
  const computed = new Map<string, LoopExposure>();
  return {
    get(mint) {
      let e = computed.get(mint);
      if (e === undefined) {
        const list = positionsOf(mint);
        if (list === undefined) return undefined;
        e = loopExposure(list);
        computed.set(mint, e);
      }
      return e;
    },
    keys,
  };
}
