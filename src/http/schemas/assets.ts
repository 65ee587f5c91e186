/** Asset resources: AssetCard (interface 2.2), asset state (2.5) and history rows (addendum A). */
import { z } from "zod";
import {
  Anchor,
  AssetClass,
  Calibration,
  Confidence,
  Count,
  Decimal,
  Int64,
  Mint,
  PegState,
  RiskSide,
  Thresholds,
  Timestamp,
  component,
  listEnvelopeOf,
} from "./common.ts";

export const OracleDegraded = component(
  "OracleDegraded",
  z.strictObject({
    reason: z.enum(["oracle_divergence", "oracle_confidence_wide", "oracle_stale"]).meta({
      description: "Worst first when several fire: oracle_divergence, then oracle_confidence_wide, then oracle_stale.",
    }),
    age_secs: Int64.min(0).nullable().meta({ description: "Seconds since the joined oracle snapshot was published." }),
    conf_bps: z.int32().min(0).nullable().meta({ description: "Oracle confidence divided by oracle USD price, in bps." }),
    spread_bps: z.int32().min(0).nullable().meta({
      description: "|market_usd - oracle price| / oracle price in bps; null when market_usd is absent or non-positive.",
    }),
  }),
  "Advisory annotation of the single-asset detail endpoints; never part of a receipt.",
);

export const AssetCard = component(
  "AssetCard",
  z.strictObject({
    symbol: z.string().meta({ description: "Asset symbol; the exact, case-sensitive path key {symbol}." }),
    name: z.string(),
    mint: Mint,
    class: AssetClass,
    anchor: Anchor,
    peg_target: z.string().meta({ description: "Target currency of the peg (informative; the anchor comes from the class)." }),
    decimals: z.int32(),
    monitoring_only: z.boolean(),
    calibration: Calibration,
    risk_side: RiskSide,
    state: PegState.nullable().meta({ description: "Published state; UNKNOWN when the snapshot is over 15 minutes old; null before the first snapshot." }),
    state_reason: z.string().optional().meta({
      description: "Advisory reason (`premium_sanity`, `stale_source`); omitted when null.",
    }),
    discount: Decimal.nullable().meta({ description: "Signed smoothed discount (0.0123 = 123 bps); null when unavailable." }),
    intrinsic_usd: Decimal.nullable(),
    market_usd: Decimal.nullable(),
    risk_score: z.int32().min(0).max(100).nullable().meta({
      description: "0-100 anchored to the committed state; null for UNKNOWN, no fresh discount, or collateral-ratio thresholds.",
    }),
    sustained: z.boolean().nullable().optional().meta({
      description:
        "A committed DRIFT-or-worse state held long enough to be a sustained episode: true exactly when `state` is DRIFT or worse and current_state_duration_secs is at least the sustained threshold (900 s by default). Omitted with current_state_duration_secs.",
    }),
    current_state_duration_secs: Int64.min(0).nullable().optional().meta({
      description:
        "Whole seconds in the current committed `state`, counted from the same instant as `since` of /v1/assets/{symbol}/state (truncated now - since): a gate to UNKNOWN and its clearing each start a new count; a stale snapshot counts from the instant it went stale; an engine restart keeps the count. Omitted until stamped.",
    }),
    confidence: Confidence.nullable().optional().meta({
      description: "Oracle confidence bucket of the latest snapshot. Omitted when there is no (fresh) discount snapshot.",
    }),
    circulating_supply: Decimal.nullable().meta({ description: "Size signal only; null until first observed." }),
    market_cap: Decimal.nullable().meta({ description: "circulating_supply x market_usd, cent-rounded; null when either is missing." }),
    sol_per_lst: Decimal.nullable().optional().meta({ description: "Stake-pool SOL per share. Liquid staking assets only; omitted otherwise." }),
    jitter_bps_24h: Decimal.nullable().optional().meta({
      description: "max(max_discount) - min(min_discount) over the trailing 24 h of 1-minute rows; omitted when there are none.",
    }),
    worst_abs_24h: Decimal.nullable().optional().meta({
      description: "Largest |discount| over the trailing 24 h of 1-minute rows; omitted when there are none.",
    }),
    series_24h: z.array(z.number().nullable()).nullable().meta({
      description: "24 hourly average discounts, oldest first, rounded to 8 decimals (null for an hour without data); null without any rows.",
    }),
    monitoring_reason: z.string().nullable().optional().meta({ description: "Omitted for calibrated assets." }),
    monitoring_since: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).meta({ format: "date" }).nullable().optional().meta({
      description: "YYYY-MM-DD. Omitted for calibrated assets.",
    }),
    thresholds: Thresholds.optional(),
    oracle_degraded: OracleDegraded.optional().meta({
      description: "Only on the single-asset detail endpoints; omitted when there is no oracle feed, the state is UNKNOWN by the oracle-confidence gate, or nothing fired.",
    }),
    updated_at: Timestamp.nullable().meta({ description: "Freshness of the snapshot; null before the first one." }),
  }),
  "One tracked asset: identity, calibration, and its latest published peg state.",
);

export const AssetList = component("AssetList", listEnvelopeOf(AssetCard), "List envelope of AssetCard rows.");

export const AssetState = component(
  "AssetState",
  z.strictObject({
    asset: z.string(),
    state: PegState,
    since: Timestamp.meta({
      description:
        "Since when `state` holds: the instant the AssetCard's current_state_duration_secs counts from. A gate to UNKNOWN and its clearing each move it; a stale snapshot is UNKNOWN since the instant it went stale (15 minutes after updated_at); an engine restart keeps it.",
    }),
    discount: Decimal,
    risk_score: z.int32().min(0).max(100).nullable(),
    intrinsic_usd: Decimal,
    market_usd: Decimal,
  }),
  "The latest published state of one asset (interface 2.5).",
);

export const HistoryRawRow = component(
  "HistoryRawRow",
  z.strictObject({
    ts: Timestamp,
    discount: Decimal.meta({ description: "Smoothed discount." }),
    discount_raw: Decimal,
    state: PegState,
    market_usd: Decimal,
    intrinsic_usd: Decimal,
  }),
  "One evaluated sample (bucket raw).",
);

export const HistoryMinuteRow = component(
  "HistoryMinuteRow",
  z.strictObject({
    ts: Timestamp.meta({ description: "Minute start." }),
    discount: Decimal.meta({ description: "Average smoothed discount over the minute." }),
    min_discount: Decimal,
    max_discount: Decimal,
    samples: Count,
    state: PegState.meta({ description: "Last state in the minute." }),
    discount_raw: z.null(),
  }),
  "One 1-minute rollup (bucket 1m).",
);

export const HistoryList = component(
  "HistoryList",
  listEnvelopeOf(z.union([HistoryRawRow, HistoryMinuteRow])),
  "History rows, newest first: HistoryRawRow for bucket raw, HistoryMinuteRow for bucket 1m.",
);

export type AssetCardBody = z.output<typeof AssetCard>;
export type OracleDegradedBody = z.output<typeof OracleDegraded>;
export type AssetStateBody = z.output<typeof AssetState>;
