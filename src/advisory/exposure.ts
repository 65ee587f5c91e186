/**
 * Loop exposure of one asset (interface 2.7): the leveraged collateral riding on it across the tracked lending
 * protocols, its debt, the per-protocol split and the liquidation cascade at each preset shock, after the privacy
 * rule. Exact decimals; rounding to cents happens only on the wire (`wire.ts`).
 */
import { ZERO, type Decimal } from "../methodology/index.ts";
import { liquidatableAt, SHOCK_BPS, type ShockBps } from "./cascade.ts";
import { isLeveraged, type LendingPosition } from "./position.ts";
import { chainPublication, partitionPublication, positionsLabel, publishable, totals } from "./privacy.ts";

/** `partial` whenever any figure was withheld by the privacy rule; `full` otherwise. */
export type Coverage = "full" | "partial";

/** One cascade rung. `liquidatable_usd` is null when the privacy rule withholds it. */
export interface CascadeRungFigure {
  readonly shock_bps: ShockBps;
  /** Collateral of the positions whose health falls below 1 at this shock, USD (exact); null when withheld. */
  readonly liquidatable_usd: Decimal | null;
  /** k-floored count label of those positions (`positionsLabel`), shown even when the figure is withheld. */
  readonly positions: string;
}

/** One protocol's bucket. Both figures are null when the privacy rule withholds the bucket. */
export interface ProtocolFigure {
  readonly protocol: string;
  readonly collateral_lev_usd: Decimal | null;
  readonly debt_usd: Decimal | null;
}

export interface LoopExposure {
  /** Whether any leveraged position rides on the asset. False: zero totals, no protocols, an empty cascade. */
  readonly tracked: boolean;
  /** Summed leveraged collateral, USD (exact); null when the asset's whole book is below the privacy floor. */
  readonly loop_exposure_usd: Decimal | null;
  /** Summed debt of those positions, USD (exact); null together with loop_exposure_usd. */
  readonly debt_usd: Decimal | null;
  readonly coverage: Coverage;
  /** Protocols with leveraged positions on the asset, sorted by name. */
  readonly by_protocol: readonly ProtocolFigure[];
  /** One rung per preset shock, ascending; empty when nothing is tracked. */
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

  const totalOk = publishable(book);
  const rungOk = totalOk ? chainPublication(book, rungs) : rungs.map((r) => r.length === 0);
  const cellOk = totalOk ? partitionPublication(cells) : cells.map(() => false);
  const withheld = !totalOk || rungOk.includes(false) || cellOk.includes(false);
  const all = totals(book);

  return {
    tracked: true,
    loop_exposure_usd: totalOk ? all.collateral : null,
    debt_usd: totalOk ? all.debt : null,
    coverage: withheld ? "partial" : "full",
    by_protocol: names.map((protocol, i) => {
      const t = totals(cells[i]!);
      return cellOk[i] ? { protocol, collateral_lev_usd: t.collateral, debt_usd: t.debt } : { protocol, collateral_lev_usd: null, debt_usd: null };
    }),
    cascade: SHOCK_BPS.map((shock_bps, k) => ({
      shock_bps,
      liquidatable_usd: rungOk[k] ? totals(rungs[k]!).collateral : null,
      positions: positionsLabel(rungs[k]!.length),
    })),
  };
}

/** Groups positions by collateral mint and computes each asset's loop exposure. */
export function loopExposureByMint(positions: readonly LendingPosition[]): Map<string, LoopExposure> {
  const byMint = new Map<string, LendingPosition[]>();
  for (const p of positions) {
    const list = byMint.get(p.collateral_mint);
    if (list === undefined) byMint.set(p.collateral_mint, [p]);
    else list.push(p);
  }
  return new Map([...byMint].map(([mint, list]) => [mint, loopExposure(list)] as const));
}
