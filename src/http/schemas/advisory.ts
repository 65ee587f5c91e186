/**
 * Advisory leverage resources: the loop exposure object (interface 2.7) and the simulate-depeg answer (4.2). The
 * cascade rung and the feed's `systemic` block live in feeds.ts with the peg feed. Never part of a receipt.
 */
import { z } from "zod";
import { SHOCK_BPS } from "../../advisory/index.ts";
import { Decimal, Timestamp, component } from "./common.ts";
import { CascadeRung, Coverage } from "./feeds.ts";
import { intParam, type QueryParam } from "./query.ts";

/** A USD figure: always a decimal string; with coverage `partial` it counts only the publishable bands (a lower bound). */
const usdFigure = (what: string) =>
  Decimal.meta({ description: `${what}, USD, cent-rounded (half-even). Counts only bands that pass the privacy rule: a lower bound when coverage is partial.` });

export const ProtocolExposure = component(
  "ProtocolExposure",
  z.strictObject({
    protocol: z.string().meta({ description: "Lending protocol id (kamino, marginfi, save, drift)." }),
    collateral_lev_usd: usdFigure("Leveraged collateral on this protocol"),
    debt_usd: usdFigure("Debt of those positions"),
  }),
  "One lending protocol's share of an asset's loop exposure. A protocol whose bucket is below the privacy floor (or must be left out to protect one) is not listed.",
);

export const LoopExposure = component(
  "LoopExposure",
  z.strictObject({
    asset: z.string(),
    loop_exposure_usd: usdFigure("Leveraged collateral riding on the asset across the listed lending protocols (exactly the sum of by_protocol)"),
    debt_usd: usdFigure("Debt of those positions (exactly the sum of by_protocol)"),
    coverage: Coverage,
    by_protocol: z.array(ProtocolExposure).meta({
      description: "Protocols whose buckets pass the privacy rule, sorted by protocol; others are left out (coverage partial). Empty when no leverage is tracked or none qualifies.",
    }),
    cascade: z.array(CascadeRung).meta({
      description: "One rung per preset shock (100, 250, 500, 1000, 2000 bps), ascending, over the listed protocols' positions; non-decreasing. Empty when no leverage is tracked.",
    }),
    updated_at: Timestamp.meta({ description: "When the positions behind these figures were read." }),
    advisory_note: z.string().meta({ description: "States that the figures are a model estimate, not a verifiable receipt." }),
  }),
  "Advisory loop exposure of one asset: a model estimate, not a receipt. No wallet, owner or authority is read or published.",
);

export const SimulateDepeg = component(
  "SimulateDepeg",
  z.strictObject({
    asset: z.string(),
    shock_bps: z.int().meta({ description: "The requested preset shock." }),
    liquidatable_usd: usdFigure("Collateral of the listed protocols' positions whose health falls below 1 at this shock (the loop-exposure cascade rung)"),
    positions: z.string().meta({ description: "k-floored count label of the positions behind liquidatable_usd (`0`, `5-9`, `10-24`, ...), never a raw count." }),
    loop_exposure_usd: usdFigure("The asset's loop exposure (as in loop-exposure), for scale"),
    coverage: Coverage,
    by_protocol: z.array(ProtocolExposure),
    updated_at: Timestamp,
    advisory_note: z.string(),
  }),
  "The same estimate as one cascade rung of the loop exposure, plus its by_protocol breakdown.",
);

/** `shock_bps`: exactly one of the preset shocks; anything else (or nothing) is a 400 `invalid_query`. */
export const SimulateDepegQuery = {
  shock_bps: {
    schema: intParam().refine((n) => (SHOCK_BPS as readonly number[]).includes(n), `must be one of ${SHOCK_BPS.join(", ")}`),
    doc: z.int().meta({ enum: [...SHOCK_BPS] }),
    required: true,
    description: `Required. The collateral price drop in basis points: one of ${SHOCK_BPS.join(", ")}. Any other value is a 400 \`invalid_query\`.`,
  },
} satisfies Record<string, QueryParam<unknown>>;

export type LoopExposureBody = z.output<typeof LoopExposure>;
export type SimulateDepegBody = z.output<typeof SimulateDepeg>;
