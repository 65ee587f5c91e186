/** Feeds and aggregates: alerts, stats, calibration, the peg feed and the methodology status (addendum A). */
import { z } from "zod";
import { PEG_STATES } from "../../methodology/index.ts";
import {
  AssetClass,
  Calibration,
  Count,
  Decimal,
  Mint,
  PegState,
  Thresholds,
  Timestamp,
  Uuid,
  component,
  listEnvelopeOf,
} from "./common.ts";

export const AlertRow = component(
  "AlertRow",
  z.strictObject({
    id: Uuid,
    asset: z.string(),
    mint: Mint,
    class: AssetClass,
    from_state: PegState,
    to_state: PegState,
    discount: Decimal.meta({ description: "Smoothed discount at the decision." }),
    discount_bps: z.int32().meta({ description: "trunc(discount x 10000), signed." }),
    state_reason: z.string().optional().meta({ description: "Advisory reason; omitted when null." }),
    detected_at: Timestamp,
    dispatched_at: Timestamp.nullable().meta({ description: "Null until fanned out." }),
    methodology_version: z.string(),
    receipt_url: z.string().meta({ description: "Path of the public receipt, relative to the service base address." }),
    monitoring_only: z.boolean(),
    calibration: Calibration,
  }),
  "One published state transition.",
);

export const AlertList = component("AlertList", listEnvelopeOf(AlertRow), "State transitions, newest first.");

const stateCounts = () => z.strictObject(Object.fromEntries(PEG_STATES.map((s) => [s, Count])) as Record<(typeof PEG_STATES)[number], typeof Count>);

export const StateCounts = component("StateCounts", stateCounts(), "A count per PegState (every state present).");

export const Stats = component(
  "Stats",
  z.strictObject({
    generated_at: Timestamp,
    assets_tracked: Count.meta({ description: "Active catalog assets." }),
    assets_by_state: StateCounts.meta({
      description: "Active assets by published state, snapshots older than 15 minutes (and assets without one) counted as UNKNOWN.",
    }),
    alerts_24h: Count,
    transitions_by_state_24h: StateCounts.meta({ description: "Transitions of the trailing 24 h by their to_state." }),
    last_sample_at: Timestamp.nullable(),
    ws_clients: Count,
    delivery: z.strictObject({
      attempts_24h: Count,
      delivered_24h: Count,
      failed_24h: Count,
      dead_lettered_24h: Count,
      success_rate_24h: z.number().min(0).max(1).nullable(),
      p50_latency_ms_24h: z.number().min(0).nullable(),
      p95_latency_ms_24h: z.number().min(0).nullable(),
      pending: Count,
    }),
  }),
  "Aggregate counters and delivery health.",
);

export const CalibrationRow = component(
  "CalibrationRow",
  z.strictObject({
    asset: z.string(),
    class: AssetClass,
    calibration: Calibration,
    monitoring_only: z.boolean(),
    monitoring_reason: z.string().optional(),
    monitoring_since: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).meta({ format: "date" }).optional(),
    thresholds: Thresholds,
    days_covered: z.int().min(0).max(8).meta({ description: "Days of the trailing 8 with 1-minute rows." }),
    p50_abs_bps_7d: z.number().min(0).nullable(),
    p95_abs_bps_7d: z.number().min(0).nullable(),
    p99_abs_bps_7d: z.number().min(0).nullable(),
    transitions_7d: Count,
    suggested_drift_bps: z.int().min(0).nullable().meta({ description: "ceil(p99_abs_bps_7d x 1.25); null without data." }),
    status: z.enum(["ok", "noisy"]).meta({ description: "`noisy` when p95_abs_bps_7d is above the drift threshold." }),
  }),
  "Seven-day |discount| distribution of one asset against its thresholds.",
);

export const CalibrationList = component("CalibrationList", listEnvelopeOf(CalibrationRow), "Calibration rows, catalog order.");

export const CascadeRung = component(
  "CascadeRung",
  z.strictObject({
    shock_bps: z.int(),
    liquidatable_usd: Decimal,
    positions: z.string().meta({ description: "k-floored range label, never a raw count." }),
  }),
  "One preset shock of a liquidation cascade estimate.",
);

export const Systemic = component(
  "Systemic",
  z.strictObject({
    loop_exposure_usd: Decimal,
    protocols: z.array(z.string()),
    cascade: z.array(CascadeRung),
    coverage: z.string(),
    updated_at: Timestamp,
    advisory_note: z.string(),
  }),
  "Advisory leverage annotation; never mixed into the verifiable peg fields. Not tracked by this deployment yet.",
);

export const PegFeedSignal = component(
  "PegFeedSignal",
  z.strictObject({
    mint: Mint,
    symbol: z.string(),
    state: PegState,
    state_reason: z.string().optional().meta({ description: "Advisory reason; omitted when null." }),
    discount: Decimal.nullable(),
    intrinsic_usd: Decimal.nullable(),
    market_usd: Decimal.nullable(),
    risk_score: z.int32().min(0).max(100).nullable(),
    market_cap: Decimal.nullable(),
    calibration: Calibration,
    monitoring_only: z.boolean(),
    stale: z.boolean().meta({ description: "True when there is no snapshot or it is over 15 minutes old (state is then UNKNOWN)." }),
    receipt_url: z.string().nullable().meta({ description: "Receipt path of the asset's latest transition, or null." }),
    updated_at: Timestamp.nullable().meta({ description: "Freshness of the snapshot; null only before the first one." }),
    systemic: Systemic.optional(),
  }),
  "One asset's peg signal.",
);

export const PegFeed = component(
  "PegFeed",
  z.strictObject({
    ok: z.boolean(),
    generated_at: Timestamp,
    count: Count,
    methodology: z.string().meta({ description: "Methodology version of every signal." }),
    data: z.array(PegFeedSignal),
  }),
  "Peg signals of every active asset. Supports ETag / If-None-Match.",
);

export const MethodologyStatus = component(
  "MethodologyStatus",
  z.strictObject({
    version: z.string(),
    status: z.enum(["active", "deprecated", "broken"]),
    git_tag: z.string(),
    released_at: Timestamp,
    status_reason: z.string().nullable(),
    superseded_by: z.string().nullable(),
    fix_url: z.string().optional().meta({ description: "Present when status is broken." }),
  }),
  "Lifecycle status of the methodology this deployment implements.",
);

export type AlertRowBody = z.output<typeof AlertRow>;
export type StatsBody = z.output<typeof Stats>;
export type CalibrationRowBody = z.output<typeof CalibrationRow>;
export type PegFeedSignalBody = z.output<typeof PegFeedSignal>;
export type MethodologyStatusBody = z.output<typeof MethodologyStatus>;
