import { mergeMap, type Observable } from "rxjs";
import type { CatalogAsset } from "../../../catalog/index.ts";
import type { Leg } from "../legs.ts";
import { simulatedMarket, type SimOptions } from "./index.ts";

/** Intrinsic kinds read from issuer-specific on-chain layouts: simulated in live mode (docs/sources.md). */
export const SIMULATED_INTRINSIC_KINDS: ReadonlySet<string> = new Set([
  "hylo_shyusd_rate",
  "hylo_xsol_nav",
  "solayer_susd_rate",
  "perena_usd_star_nav",
  "piggybank_pb_vault",
]);

/** True when some leg of the asset has no live adapter and comes from the simulator in live mode. */
export function needsSimulatedLegs(a: CatalogAsset): boolean {
  return SIMULATED_INTRINSIC_KINDS.has(a.intrinsic.kind) || a.intrinsic.kind === "hylo_cr" || a.market.kind === "dex_screener_usd";
}

/**
 * The legs live mode cannot read yet, from the simulated market: issuer NAVs as `intrinsic_usd`, Hylo's collateral
 * ratio as `cr`, and DEX-aggregate markets as `market_usd`. Everything else about these assets stays live.
 * Backpressure: as the simulated market (one bounded burst per tick, lossless).
 */
export function simulatedLegs(options: Omit<SimOptions, "assets"> & { readonly assets: readonly CatalogAsset[] }): Observable<Leg> {
  const assets = options.assets.filter(needsSimulatedLegs);
  const bySymbol = new Map(assets.map((a) => [a.symbol, a]));
  return simulatedMarket({ ...options, assets }).pipe(
    mergeMap((s) => {
      const a = bySymbol.get(s.asset);
      if (a === undefined) return [];
      const legs: Leg[] = [];
      if (SIMULATED_INTRINSIC_KINDS.has(a.intrinsic.kind)) {
        legs.push({ kind: "intrinsic_usd", mint: a.mint, value: s.intrinsic_usd, source: "sim", observed_at: s.ts, stale: s.intrinsic_stale });
      }
      if (a.intrinsic.kind === "hylo_cr" && s.cr !== null) legs.push({ kind: "cr", mint: a.mint, cr: s.cr, source: "sim", observed_at: s.ts });
      if (a.market.kind === "dex_screener_usd") legs.push({ kind: "market_usd", mint: a.mint, price: s.market_usd, source: "sim", observed_at: s.ts });
      return legs;
    }),
  );
}
