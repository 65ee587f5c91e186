import type { Decimal } from "./decimal.ts";
import type { EpochMs } from "./time.ts";

/** Committed bands, in rank order. */
export const BANDS = ["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN"] as const;
export type Band = (typeof BANDS)[number];

/** Published states: a band, or UNKNOWN when a gate fires. */
export const PEG_STATES = ["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"] as const;
export type PegState = (typeof PEG_STATES)[number];

export const ASSET_CLASSES = [
  "lst",
  "stable_fiat",
  "stable_dn",
  "stable_cdp",
  "stable_yield",
  "stable_fx",
  "synth_lev",
] as const;
export type AssetClass = (typeof ASSET_CLASSES)[number];

/** Spread thresholds in whole basis points. Missing keys take the methodology defaults (20/100/300, black swan 2 x critical). */
export interface SpreadThresholds {
  readonly drift_bps?: number;
  readonly depeg_bps?: number;
  readonly critical_bps?: number;
  readonly black_swan_bps?: number;
}

/** Collateral-ratio thresholds in whole percent (130 = 130 %). Lower is worse. */
export interface CrThresholds {
  readonly cr_drift: number;
  readonly cr_depeg: number;
  readonly cr_critical: number;
  readonly cr_black_swan: number;
}

export type Thresholds = SpreadThresholds | CrThresholds;
export type ThresholdKind = "bps" | "cr";

export const GATES = ["premium_sanity", "discount_sanity", "oracle_confidence", "intrinsic_liveness"] as const;
export type GateName = (typeof GATES)[number];

export const CONFIDENCES = ["high", "medium", "low", "unknown"] as const;
export type Confidence = (typeof CONFIDENCES)[number];

export type Trigger = "sample" | "dwell_timer";

/** One price-oracle entry a sample used. `price` and `conf` in the feed's quote units; `publish_time` in epoch ms. */
export interface OracleEntry {
  readonly price: Decimal;
  readonly conf: Decimal;
  readonly publish_time: EpochMs;
}

/**
 * What the price streams deliver for one asset at one instant (methodology section 1). Optional legs are null when
 * absent, never zero.
 */
export interface Sample {
  /** Asset symbol, exactly as in the catalog. */
  readonly asset: string;
  /** When the sample was observed (epoch ms). */
  readonly ts: EpochMs;
  readonly intrinsic_usd: Decimal;
  readonly market_usd: Decimal;
  readonly intrinsic_sol: Decimal | null;
  readonly market_sol: Decimal | null;
  /** Collateral ratio as a fraction (1.30 = 130 %), for collateral-ratio assets. */
  readonly cr: Decimal | null;
  readonly oracle: Readonly<Record<string, OracleEntry>>;
  /** True when the intrinsic source itself reports that it is frozen. */
  readonly intrinsic_stale: boolean;
}

/**
 * The part of a catalog entry the methodology reads. The whole entry (as shipped) is hashed into every receipt; the
 * methodology only interprets these members.
 */
export interface MethodologyAsset {
  readonly symbol: string;
  readonly mint: string;
  readonly class: AssetClass;
  readonly thresholds: Thresholds;
  readonly oracle_feed_id?: string | null;
  readonly market?: { readonly kind?: string; readonly feed?: string } | null;
  readonly intrinsic?: { readonly kind?: string; readonly feed?: string } | null;
}
