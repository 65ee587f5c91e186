/**
 * The paid tools (x402, USDC on Solana): `get_peg_feed` (GET /v1/peg/feed: every asset's signal with the advisory
 * `systemic` block), `subscribe_peg_events` (transitions after a cursor, waiting a bounded time for new ones) and
 * `simulate_depeg` (GET /v1/assets/{symbol}/simulate-depeg). Their handlers only read; payment is the MCP server's
 * business (src/mcp/paid-call.ts) and the price is X402_PRICES'.
 */
import { z } from "zod";
import { SHOCK_BPS } from "../../advisory/index.ts";
import { AlertRow, PegFeed, SimulateDepeg } from "../../http/schemas/index.ts";
import { okBody, type ApiCaller } from "../api.ts";
import { EVENTS_LIMIT, EVENTS_WAIT_SECS, type TransitionEvents } from "../events.ts";
import { defineTool, type AnyToolDef } from "../tool.ts";

const SYMBOL = /^[A-Za-z0-9.*+_-]{1,20}$/;

export interface PaidToolDeps {
  readonly api: ApiCaller;
  readonly events: TransitionEvents;
}

export const GetPegFeedInput = z.strictObject({});

export const SubscribeInput = z.strictObject({
  after: z
    .int()
    .min(0)
    .optional()
    .describe("The cursor: `next_cursor` of your previous call. Omitted: start at the newest transition (only new ones are returned); 0: from the oldest one kept."),
  wait_secs: z
    .int()
    .min(EVENTS_WAIT_SECS.min)
    .max(EVENTS_WAIT_SECS.max)
    .optional()
    .describe(`How long to wait for a first new transition when there is none yet, ${EVENTS_WAIT_SECS.min}-${EVENTS_WAIT_SECS.max} s (default ${EVENTS_WAIT_SECS.default}).`),
  limit: z.int().min(EVENTS_LIMIT.min).max(EVENTS_LIMIT.max).optional().describe(`At most this many transitions (default ${EVENTS_LIMIT.default}).`),
});

export const SubscribeOutput = z.object({
  events: z.array(AlertRow.extend({ seq: z.int().min(1).describe("Stream sequence of the transition (the cursor).") })),
  next_cursor: z.int().min(0).describe("Pass it as `after` on the next call; nothing is skipped or repeated."),
});

export const SimulateDepegInput = z.strictObject({
  symbol: z.string().regex(SYMBOL, "must be an asset symbol such as USDC or JitoSOL").describe("The asset's symbol, exact and case-sensitive (see list_assets)."),
  shock_bps: z
    .int()
    .refine((n) => (SHOCK_BPS as readonly number[]).includes(n), `must be one of ${SHOCK_BPS.join(", ")}`)
    .meta({ enum: [...SHOCK_BPS] })
    .describe(`The price drop of the asset used as collateral, in basis points: one of ${SHOCK_BPS.join(", ")} (100 = 1 %).`),
});

export function paidTools(deps: PaidToolDeps): AnyToolDef[] {
  const { api, events } = deps;
  return [
    defineTool({
      name: "get_peg_feed",
      title: "Peg feed of every asset",
      description:
        "The oracle's whole feed in one call: for every tracked asset its state, smoothed discount, risk_score, market cap, calibration, staleness and latest receipt, plus the advisory `systemic` block (leveraged loops riding on the asset and the liquidations a depeg would cascade into) when lending positions are tracked. " +
        "Use it to screen a treasury or a route across all assets at once; use get_peg_state (free) for one asset.",
      input: GetPegFeedInput,
      output: PegFeed,
      paid: "get_peg_feed",
      annotations: { title: "Peg feed of every asset", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      run: async () => okBody(await api.get("/v1/peg/feed")) as z.output<typeof PegFeed>,
    }),
    defineTool({
      name: "subscribe_peg_events",
      title: "Peg transitions after a cursor",
      description:
        "Long-polls the feed of peg-state transitions (alerts such as USDC PEGGED -> DEPEG): returns the transitions after your cursor, oldest first, waiting up to wait_secs for a first new one, and the next cursor. " +
        "Call it in a loop with `after` = the previous `next_cursor` to follow every transition exactly once; verify any of them with verify_alert (free) by its `id`.",
      input: SubscribeInput,
      output: SubscribeOutput,
      paid: "subscribe_peg_events",
      annotations: { title: "Peg transitions after a cursor", readOnlyHint: true, openWorldHint: false },
      run: async (args, ctx) => {
        const after = args.after ?? (await events.latest());
        const page = await events.after(after, { limit: args.limit ?? EVENTS_LIMIT.default, waitMs: (args.wait_secs ?? EVENTS_WAIT_SECS.default) * 1000, signal: ctx.signal });
        return { events: [...page.events], next_cursor: page.next_cursor };
      },
    }),
    defineTool({
      name: "simulate_depeg",
      title: "Simulate a depeg's liquidations",
      description:
        "Estimates what a depeg of one asset would liquidate: the collateral (USD) of leveraged lending positions on the asset whose health falls below 1 if its price drops by shock_bps, by protocol, with the asset's total loop exposure for scale. " +
        "A model estimate from tracked lending positions (never a receipt); figures are lower bounds when coverage is partial. Errors: asset_not_found, not_ready (positions still loading).",
      input: SimulateDepegInput,
      output: SimulateDepeg,
      paid: "simulate_depeg",
      annotations: { title: "Simulate a depeg's liquidations", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      run: async (args) =>
        okBody(await api.get(`/v1/assets/${encodeURIComponent(args.symbol)}/simulate-depeg`, { shock_bps: String(args.shock_bps) })) as z.output<typeof SimulateDepeg>,
    }),
  ];
}
