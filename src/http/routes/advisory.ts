/**
 * Advisory leverage routes (interface 4.2): an asset's loop exposure and a preset depeg simulation. Model estimates
 * from the positions book, never receipts; the figures are computed once per book refresh, so a request only looks
 * them up and serialises them.
 */
import { isShockBps, loopExposure, loopExposureBody, simulateDepegBody, type ExposureReader, type ExposureSnapshot, type LoopExposure } from "../../advisory/index.ts";
import { ApiError, invalidQuery } from "../errors.ts";
import type { ReadModel } from "../read-model.ts";
import { LoopExposure as LoopExposureSchema, PathParams, SimulateDepeg, SimulateDepegQuery, parseQuery } from "../schemas/index.ts";
import { activeAsset } from "./common.ts";
import { jsonResult, type DocumentedRoute } from "./spec.ts";

const NOTHING_TRACKED: LoopExposure = loopExposure([]);

/** The snapshot, or 503 `not_ready` when this deployment has no positions book or it has not loaded yet. */
function loaded(advisory: ExposureReader | undefined): ExposureSnapshot {
  const snap = advisory?.snapshot() ?? null;
  if (snap === null) {
    throw new ApiError("not_ready", advisory === undefined ? "loop exposure is not tracked by this deployment" : "lending positions are not loaded yet; retry shortly", {
      headers: { "retry-after": "5" },
    });
  }
  return snap;
}

export function advisoryRoutes(rm: ReadModel, advisory: ExposureReader | undefined): DocumentedRoute[] {
  const symbolParam = { symbol: PathParams.symbol };
  return [
    {
      method: "GET",
      path: "/v1/assets/{symbol}/loop-exposure",
      handler: (req) => {
        const a = activeAsset(rm, req.params["symbol"] ?? "");
        const snap = loaded(advisory);
        return jsonResult(200, loopExposureBody(a.symbol, snap.byMint.get(a.mint) ?? NOTHING_TRACKED, snap.updatedAt));
      },
      spec: {
        summary: "Loop exposure of one asset (advisory)",
        description:
          "Leveraged collateral riding on the asset across the tracked lending protocols, its debt, the per-protocol split and a liquidation cascade at each preset shock. A model estimate, not a receipt. " +
          "Privacy: a band (a published figure, or the difference of two published figures) of fewer than 5 positions, or with one position above half its collateral or debt, is never published. Every figure is a decimal string counting only publishable bands: " +
          "a protocol whose bucket does not qualify is left out of `by_protocol` and of the totals (which are exactly the sum of `by_protocol`), the cascade counts only the listed protocols' positions, and a rung whose added positions do not qualify repeats the previous published figure (the first rung: 0). " +
          "When anything was left out `coverage` is `partial` and the figures are lower bounds. `positions` is a floored range label of the set behind the figure, never a count. " +
          "No leverage tracked: zero totals and empty lists. 503 `not_ready` until the positions are first loaded.",
        tags: ["assets"],
        params: symbolParam,
        responses: { 200: LoopExposureSchema },
        errors: ["asset_not_found", "invalid_query", "not_ready"],
      },
    },
    {
      method: "GET",
      path: "/v1/assets/{symbol}/simulate-depeg",
      handler: (req) => {
        const a = activeAsset(rm, req.params["symbol"] ?? "");
        const q = parseQuery(req.query, SimulateDepegQuery);
        if (q.shock_bps === undefined || !isShockBps(q.shock_bps)) throw invalidQuery(`shock_bps is required: ${SimulateDepegQuery.shock_bps.description}`);
        const snap = loaded(advisory);
        return jsonResult(200, simulateDepegBody(a.symbol, snap.byMint.get(a.mint) ?? NOTHING_TRACKED, q.shock_bps, snap.updatedAt));
      },
      spec: {
        summary: "Simulate a depeg of one asset (advisory)",
        description:
          "The cascade rung of one preset shock (the collateral price drops by shock_bps while debt keeps its value), with the asset's by_protocol breakdown. Same estimate and privacy rule as loop-exposure: every figure is a decimal string, a lower bound when `coverage` is `partial`. Only the preset shocks are modelled.",
        tags: ["assets"],
        params: symbolParam,
        query: SimulateDepegQuery,
        responses: { 200: SimulateDepeg },
        errors: ["asset_not_found", "invalid_query", "not_ready"],
      },
    },
  ];
}
