/**
 * Which legs of which assets are live under FEED=live, and which stay simulated. The issuer-specific intrinsic kinds
 * (Hylo, Solayer, Perena, PiggyBank) and DEX Screener markets have no live adapter yet: their legs keep coming from
 * the simulated market; docs/sources.md says what a production adapter for each must read.
 */
import type { Catalog, CatalogAsset } from "../../../catalog/index.ts";

/** The live adapters. */
export const LIVE_SOURCES = ["pyth", "jupiter", "sanctum", "solana_rpc"] as const;
export type LiveSourceName = (typeof LIVE_SOURCES)[number];

/** `live`: an adapter reads it; `constant`: nothing to read (`fixed_1_usd`); `simulated`: still from the simulator. */
export type LegMode = "live" | "constant" | "simulated";

export interface LegCoverage {
  /** The catalog's source kind (`sanctum_lst`, `jupiter_usd`, ...), or `oracle_feed_id` / `token_supply`. */
  readonly kind: string;
  readonly mode: LegMode;
  /** The adapter, when live. */
  readonly source: LiveSourceName | null;
}

export interface AssetCoverage {
  readonly symbol: string;
  readonly mint: string;
  readonly intrinsic: LegCoverage;
  readonly market: LegCoverage;
  /** The cross-check feed (`<SYMBOL>/USD` from `oracle_feed_id`), or null when the asset has none. */
  readonly oracle: LegCoverage | null;
  readonly supply: LegCoverage;
  /** True when neither the intrinsic nor the market leg is simulated. */
  readonly fullyLive: boolean;
}

const LIVE_INTRINSIC: Readonly<Record<string, LiveSourceName | null>> = {
  fixed_1_usd: null,
  spl_stake_pool: "solana_rpc",
  sanctum_lst: "sanctum",
  pyth_redemption_rate: "pyth",
  pyth_fx_cross: "pyth",
};

const LIVE_MARKET: Readonly<Record<string, LiveSourceName>> = {
  jupiter_usd: "jupiter",
  pyth_spot: "pyth",
};

/**
 * The kinds that stay simulated in live mode, with what a production adapter must read (the accounts named in the
 * catalog entry). Details in docs/sources.md.
 */
export const SIMULATED_IN_LIVE: Readonly<Record<string, string>> = Object.freeze({
  hylo_cr:
    "Hylo exchange program (exchange_program) state: hyUSD supply, xSOL supply, LST collateral in SOL and SOL/USD; CR = collateral USD / hyUSD supply",
  hylo_shyusd_rate: "Hylo stability pool (stability_pool): hyUSD + xSOL held per sHYUSD share, valued in USD",
  hylo_xsol_nav: "Hylo exchange program (exchange_program): (collateral USD - hyUSD supply) / xSOL supply",
  solayer_susd_rate: "Solayer sUSD share account (share_account, owned by program): underlying USD per share",
  perena_usd_star_nav: "Perena USD* reserve (reserve, program): reserve assets in USD / USD* supply",
  piggybank_pb_vault: "PiggyBank vault (vault, program): underlying USDC per pbUSDC share",
  dex_screener_usd: "DEX Screener pairs of the mint: liquidity-weighted USD price",
});

function intrinsicCoverage(kind: string): LegCoverage {
  if (!(kind in LIVE_INTRINSIC)) return { kind, mode: "simulated", source: null };
  const source = LIVE_INTRINSIC[kind] ?? null;
  return { kind, mode: source === null ? "constant" : "live", source };
}

function marketCoverage(kind: string): LegCoverage {
  const source = LIVE_MARKET[kind];
  return source === undefined ? { kind, mode: "simulated", source: null } : { kind, mode: "live", source };
}

/** One row per asset (default: the active ones), in catalog order. */
export function liveCoverage(catalog: Catalog, assets: readonly CatalogAsset[] = catalog.active): AssetCoverage[] {
  return assets.map((a) => {
    const intrinsic = intrinsicCoverage(a.intrinsic.kind);
    const market = marketCoverage(a.market.kind);
    return {
      symbol: a.symbol,
      mint: a.mint,
      intrinsic,
      market,
      oracle: a.oracleFeedId === null ? null : { kind: "oracle_feed_id", mode: "live", source: "pyth" },
      supply: { kind: "token_supply", mode: "live", source: "solana_rpc" },
      fullyLive: intrinsic.mode !== "simulated" && market.mode !== "simulated",
    };
  });
}
