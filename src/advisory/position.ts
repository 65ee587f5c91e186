/**
 * The lending-position model behind the advisory loop-exposure figures (interface 2.7). A position is one collateral
 * leg of a borrowing account on a lending protocol, reduced to five facts. It deliberately has no identity: no wallet,
 * owner, authority or account address is part of it, so nothing downstream can publish or store one.
 */
import { parseDecimal, toD, type Decimal } from "../methodology/index.ts";

/** One leveraged collateral leg. Immutable; amounts in USD at the source's own prices. */
export interface LendingPosition {
  /** Lending protocol id, lower-case (`kamino`, `marginfi`, `save`, `drift`). */
  readonly protocol: string;
  /** Mint of the collateral token (base58): the asset whose depeg this position rides on. */
  readonly collateral_mint: string;
  /** Market value of the collateral, USD, >= 0. */
  readonly collateral_usd: Decimal;
  /** Debt attributed to this collateral leg, USD, >= 0. Zero means the leg is not leveraged. */
  readonly debt_usd: Decimal;
  /**
   * Liquidation threshold as a fraction in (0, 1]: the position is liquidatable once
   * debt_usd > collateral_usd x liquidation_threshold.
   */
  readonly liquidation_threshold: Decimal;
}

/** A position that cannot be modelled (negative amounts, a threshold outside (0, 1], an empty protocol or mint). */
export class PositionError extends Error {
  readonly code = "invalid_position";
  constructor(message: string) {
    super(message);
    this.name = "PositionError";
  }
}

const PROTOCOL = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const MINT = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/**
 * Checks and normalises one position into the methodology's decimal context. Only the five model fields are copied,
 * so any extra member an adapter might have carried along (an owner, an address) is dropped here at the latest.
 */
export function lendingPosition(p: {
  readonly protocol: string;
  readonly collateral_mint: string;
  readonly collateral_usd: Decimal | string;
  readonly debt_usd: Decimal | string;
  readonly liquidation_threshold: Decimal | string;
}): LendingPosition {
  if (!PROTOCOL.test(p.protocol)) throw new PositionError(`protocol ${JSON.stringify(p.protocol.slice(0, 40))} is not a lower-case id`);
  if (!MINT.test(p.collateral_mint)) throw new PositionError(`collateral_mint ${JSON.stringify(p.collateral_mint.slice(0, 60))} is not a base58 mint`);
  const collateral = amount(p.collateral_usd, "collateral_usd");
  const debt = amount(p.debt_usd, "debt_usd");
  const lt = amount(p.liquidation_threshold, "liquidation_threshold");
  if (collateral.isNeg()) throw new PositionError("collateral_usd must be >= 0");
  if (debt.isNeg()) throw new PositionError("debt_usd must be >= 0");
  if (lt.lte(0) || lt.gt(1)) throw new PositionError("liquidation_threshold must be in (0, 1]");
  return Object.freeze({
    protocol: p.protocol,
    collateral_mint: p.collateral_mint,
    collateral_usd: collateral,
    debt_usd: debt,
    liquidation_threshold: lt,
  });
}

function amount(v: Decimal | string, field: string): Decimal {
  const d = typeof v === "string" ? parseDecimal(v) : v.isFinite() ? toD(v) : null;
  if (d === null) throw new PositionError(`${field} must be a finite plain decimal`);
  return d.isZero() ? toD(d.abs()) : d; // no negative zero
}

/** Whether the leg carries debt: only leveraged legs count towards loop exposure and can be liquidated. */
export const isLeveraged = (p: LendingPosition): boolean => p.debt_usd.gt(0);
