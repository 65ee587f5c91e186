import type { CatalogAsset } from "../../../catalog/index.ts";
import { crEntryLevels, isCrThresholds, spreadEntryLevels } from "../../../methodology/index.ts";
import type { IncidentTarget } from "./incidents.ts";

/** The feed a catalog source names, or null. */
export const feedOf = (s: { readonly feed?: string } | null | undefined): string | null =>
  s != null && typeof s.feed === "string" && s.feed !== "" ? s.feed : null;

/** Sorted, unique Pyth feed names an asset's simulated samples carry: its market and intrinsic feeds. */
export function feedsOf(a: CatalogAsset): string[] {
  return [...new Set([feedOf(a.market), feedOf(a.intrinsic)].filter((f): f is string => f !== null))].sort();
}

/**
 * What the incident director knows of an asset. The watched feed is the carried feed the API joins to the asset's
 * oracle check (`oracle_degraded`): the Pyth spot market feed of an asset with an `oracle_feed_id` (in the shipped
 * catalog that feed is the one the id names). Other assets' cross-check feeds are not simulated.
 */
export function incidentTargetOf(a: CatalogAsset): IncidentTarget {
  return {
    symbol: a.symbol,
    group: a.class,
    yieldBearing: a.class === "stable_yield",
    spread: spreadEntryLevels(isCrThresholds(a.thresholds) ? {} : a.thresholds),
    cr: isCrThresholds(a.thresholds) ? crEntryLevels(a.thresholds) : null,
    feeds: feedsOf(a),
    watchedFeed: a.oracleFeedId !== null && a.market.kind === "pyth_spot" ? feedOf(a.market) : null,
  };
}
