/**
 * `list_assets` and `get_peg_state` (free): the tracked assets and one asset's card, read through the REST routes
 * (GET /v1/assets, /v1/assets/{symbol}, /v1/assets/by-mint/{mint}) so an agent sees exactly what the API serves.
 */
import { z } from "zod";
import { ASSET_CLASSES, PEG_STATES } from "../../methodology/index.ts";
import { AssetCard } from "../../http/schemas/index.ts";
import { okBody, type ApiCaller } from "../api.ts";
import { defineTool, type ToolDef } from "../tool.ts";

const SYMBOL = /^[A-Za-z0-9.*+_-]{1,20}$/;
const BASE58_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

export const ListAssetsInput = z.strictObject({
  class: z
    .enum(ASSET_CLASSES)
    .optional()
    .describe("Only assets of this class: lst (liquid-staking SOL), stable_fiat, stable_dn (delta-neutral), stable_cdp, stable_yield, stable_fx, synth_lev."),
  state: z.enum(PEG_STATES).optional().describe("Only assets currently in this published state (e.g. DEPEG to list the assets off their peg now)."),
});

const AssetRow = z.object({
  symbol: z.string().describe("The exact, case-sensitive symbol get_peg_state takes."),
  name: z.string(),
  mint: z.string().describe("The token's Solana mint address."),
  class: z.enum(ASSET_CLASSES),
  anchor: z.string().describe("What the peg is measured against: USD, FX or NAV (the token's own intrinsic value)."),
  state: z.enum(PEG_STATES).nullable().describe("Published peg state; null before the first observation."),
  discount: z.string().nullable().describe("Signed smoothed discount as a decimal string (0.0123 = 1.23 % below intrinsic; negative = premium)."),
  risk_score: z.int().nullable().describe("0-100, higher is worse; null when UNKNOWN or not computable."),
  monitoring_only: z.boolean().describe("Beta asset: alerts are live but calibration is provisional."),
  updated_at: z.string().nullable(),
});

export const ListAssetsOutput = z.object({
  generated_at: z.string(),
  count: z.int(),
  assets: z.array(AssetRow),
});

export const GetPegStateInput = z
  .strictObject({
    symbol: z.string().regex(SYMBOL, "must be an asset symbol such as USDC, JitoSOL or USD*").optional().describe("The asset's symbol, exact and case-sensitive (USDC, mSOL, JitoSOL, USDe, ...): see list_assets."),
    mint: z.string().regex(BASE58_ADDRESS, "must be a base58 Solana mint address").optional().describe("Or the token's Solana mint address."),
  })
  .refine((a) => (a.symbol === undefined) !== (a.mint === undefined), { message: "give exactly one of symbol or mint" });

type Card = z.output<typeof AssetCard>;

export function listAssetsTool(api: ApiCaller): ToolDef<typeof ListAssetsInput, typeof ListAssetsOutput> {
  return defineTool({
    name: "list_assets",
    title: "List tracked assets",
    description:
      "Lists every Solana token the oracle tracks (stablecoins, liquid-staking tokens, yield and FX stables) with its current peg state, smoothed discount and risk score. " +
      "Use it to find an asset's exact symbol or mint for get_peg_state, or to see which assets are off their peg right now (state DRIFT, DEPEG, CRITICAL, BLACK_SWAN; UNKNOWN when inputs cannot be trusted). Filter by class or state. Free.",
    input: ListAssetsInput,
    output: ListAssetsOutput,
    annotations: { title: "List tracked assets", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    async run(args) {
      const body = okBody(await api.get("/v1/assets", { class: args.class, peg: args.state })) as { generated_at: string; data: Card[] };
      const assets = body.data.map((c) => ({
        symbol: c.symbol,
        name: c.name,
        mint: c.mint,
        class: c.class,
        anchor: c.anchor,
        state: c.state,
        discount: c.discount,
        risk_score: c.risk_score,
        monitoring_only: c.monitoring_only,
        updated_at: c.updated_at,
      }));
      return { generated_at: body.generated_at, count: assets.length, assets };
    },
  });
}

export function getPegStateTool(api: ApiCaller): ToolDef<typeof GetPegStateInput, typeof AssetCard> {
  return defineTool({
    name: "get_peg_state",
    title: "Get one asset's peg state",
    description:
      "Returns one asset's full peg card: published state (PEGGED, DRIFT, DEPEG, CRITICAL, BLACK_SWAN, UNKNOWN) and its reason, smoothed discount, intrinsic and market USD prices, risk_score (0-100), how long the state has held and whether it is sustained, confidence, supply and market cap, the 24-hour series and worst discount, the asset's thresholds, and oracle_degraded when the price oracle looks unreliable. " +
      "Give the symbol (case-sensitive, from list_assets) or the mint. Discounts are decimal strings: 0.0050 = 50 bps below intrinsic. Errors: asset_not_found. Free.",
    input: GetPegStateInput,
    output: AssetCard,
    annotations: { title: "Get one asset's peg state", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    async run(args) {
      const path = args.symbol !== undefined ? `/v1/assets/${encodeURIComponent(args.symbol)}` : `/v1/assets/by-mint/${args.mint!}`;
      return okBody(await api.get(path)) as Card;
    },
  });
}
