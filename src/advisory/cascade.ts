/**
 * Liquidation cascade under a collateral depeg: which positions a preset price shock pushes below health 1.
 */
import { D, ONE, type Decimal } from "../methodology/index.ts";
import type { LendingPosition } from "./position.ts";

/** The preset shocks, in basis points of the collateral price (interface 4.2 and part 8): nothing else is modelled. */
export const SHOCK_BPS = [100, 250, 500, 1000, 2000] as const;
export type ShockBps = (typeof SHOCK_BPS)[number];

const TEN_THOUSAND = new D(10_000);

export function isShockBps(n: number): n is ShockBps {
  return (SHOCK_BPS as readonly number[]).includes(n);
}

/** The collateral price multiplier after a shock: 1 - shock_bps / 10000 (0.95 for 500 bps). */
export const shockFactor = (shockBps: number): Decimal => ONE.minus(new D(shockBps).div(TEN_THOUSAND));

/**
 * Health after the collateral price drops by `shockBps` while the debt keeps its value:
 * collateral_usd x (1 - shock) x liquidation_threshold / debt_usd. Null for a leg without debt (it cannot be
 * liquidated, its health is unbounded).
 */
export function healthAfterShock(p: LendingPosition, shockBps: number): Decimal | null {
  if (!p.debt_usd.gt(0)) return null;
  return p.collateral_usd.times(shockFactor(shockBps)).times(p.liquidation_threshold).div(p.debt_usd);
}

/**
 * Whether the shock leaves the position with health below 1. Compared without the division
 * (collateral x factor x threshold < debt), so no rounding of the quotient can move a position across the line.
 * A position already below 1 before any shock is liquidatable at every shock, which keeps the cascade monotone.
 */
export function liquidatableAt(p: LendingPosition, shockBps: number): boolean {
  if (!p.debt_usd.gt(0)) return false;
  return p.collateral_usd.times(shockFactor(shockBps)).times(p.liquidation_threshold).lt(p.debt_usd);
}
