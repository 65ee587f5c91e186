/**
 * Wire forms of the advisory figures: the loop exposure object (interface 2.7), the simulate-depeg answer (4.2) and
 * the peg feed's `systemic` block (2.8). USD aggregates are rounded to cents half-even, like every USD aggregate of
 * the service (`usdAggregateToWire`), and written with trailing zeros trimmed. Every figure is a decimal string, never
 * null (interface 2.7): what the privacy rule withholds is left out of the sums, not nulled.
 */
import { timestampToWire, usdAggregateToWire, type Decimal, type EpochMs } from "../wire/index.ts";
import type { ShockBps } from "./cascade.ts";
import type { Coverage, LoopExposure } from "./exposure.ts";
import { PRIVACY_FLOOR } from "./privacy.ts";

/** Says what the figures are, and are not (interface 2.7 `advisory_note`). */
export const ADVISORY_NOTE =
  "Model estimate, not a verifiable receipt: computed from tracked lending positions at the sources' own prices, " +
  "assuming the collateral price alone drops by shock_bps while debt keeps its value. USD figures are cent-rounded. " +
  `Figures count only bands of at least ${PRIVACY_FLOOR} positions not dominated by one position: withheld bands are left out ` +
  "(a protocol that does not qualify is not listed, a cascade rung keeps the previous published figure), coverage is then " +
  "partial and every figure is a lower bound.";

export interface CascadeRungBody {
  readonly shock_bps: number;
  readonly liquidatable_usd: string;
  readonly positions: string;
}

export interface ProtocolBody {
  readonly protocol: string;
  readonly collateral_lev_usd: string;
  readonly debt_usd: string;
}

/** `GET /v1/assets/{symbol}/loop-exposure`. */
export interface LoopExposureBody {
  readonly asset: string;
  readonly loop_exposure_usd: string;
  readonly debt_usd: string;
  readonly coverage: Coverage;
  readonly by_protocol: ProtocolBody[];
  readonly cascade: CascadeRungBody[];
  readonly updated_at: string;
  readonly advisory_note: string;
}

/** `GET /v1/assets/{symbol}/simulate-depeg?shock_bps=`: one cascade rung plus the by_protocol breakdown. */
export interface SimulateDepegBody {
  readonly asset: string;
  readonly shock_bps: number;
  readonly liquidatable_usd: string;
  readonly positions: string;
  readonly loop_exposure_usd: string;
  readonly coverage: Coverage;
  readonly by_protocol: ProtocolBody[];
  readonly updated_at: string;
  readonly advisory_note: string;
}

/** The peg feed signal's `systemic` block (interface 2.8). */
export interface SystemicBody {
  readonly loop_exposure_usd: string;
  /** The listed protocols (those counted in `loop_exposure_usd`). */
  readonly protocols: string[];
  readonly cascade: CascadeRungBody[];
  readonly coverage: Coverage;
  readonly updated_at: string;
  readonly advisory_note: string;
}

const usd = (d: Decimal): string => usdAggregateToWire(d);

function protocolsBody(e: LoopExposure): ProtocolBody[] {
  return e.by_protocol.map((p) => ({ protocol: p.protocol, collateral_lev_usd: usd(p.collateral_lev_usd), debt_usd: usd(p.debt_usd) }));
}

function cascadeBody(e: LoopExposure): CascadeRungBody[] {
  return e.cascade.map((r) => ({ shock_bps: r.shock_bps, liquidatable_usd: usd(r.liquidatable_usd), positions: r.positions }));
}

export function loopExposureBody(asset: string, e: LoopExposure, updatedAt: EpochMs): LoopExposureBody {
  return {
    asset,
    loop_exposure_usd: usd(e.loop_exposure_usd),
    debt_usd: usd(e.debt_usd),
    coverage: e.coverage,
    by_protocol: protocolsBody(e),
    cascade: cascadeBody(e),
    updated_at: timestampToWire(updatedAt),
    advisory_note: ADVISORY_NOTE,
  };
}

/** The rung of `shock`; with nothing tracked, nothing is liquidatable (`0`, positions `0`). */
export function simulateDepegBody(asset: string, e: LoopExposure, shock: ShockBps, updatedAt: EpochMs): SimulateDepegBody {
  const rung = e.cascade.find((r) => r.shock_bps === shock);
  return {
    asset,
    shock_bps: shock,
    liquidatable_usd: rung === undefined ? "0" : usd(rung.liquidatable_usd),
    positions: rung === undefined ? "0" : rung.positions,
    loop_exposure_usd: usd(e.loop_exposure_usd),
    coverage: e.coverage,
    by_protocol: protocolsBody(e),
    updated_at: timestampToWire(updatedAt),
    advisory_note: ADVISORY_NOTE,
  };
}

/** The `systemic` block, or undefined when no leverage is tracked on the asset (the block is then omitted). */
export function systemicBody(e: LoopExposure | undefined, updatedAt: EpochMs): SystemicBody | undefined {
  if (e === undefined || !e.tracked) return undefined;
  return {
    loop_exposure_usd: usd(e.loop_exposure_usd),
    protocols: e.by_protocol.map((p) => p.protocol),
    cascade: cascadeBody(e),
    coverage: e.coverage,
    updated_at: timestampToWire(updatedAt),
    advisory_note: ADVISORY_NOTE,
  };
}
