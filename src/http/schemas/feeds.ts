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

/** The calibration percentiles' definition (nearest rank), shared by the three fields' descriptions. */
const AbsBpsDescription = (p: string): string =>
  `Nearest-rank ${p}th percentile of |discount| over the 1-minute rows of the trailing 7 days (the row at rank ceil(${p} N / 100) in ascending order, each row its minute's average), in bps as the bands count them: floor(|discount| x 10000). Null without rows.`;

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
    days_covered: z.int().min(0).max(8).meta({ description: "UTC days of the trailing 8 (today and the 7 before) with 1-minute rows." }),
    p50_abs_bps_7d: z.int().min(0).nullable().meta({ description: AbsBpsDescription("50") }),
    p95_abs_bps_7d: z.int().min(0).nullable().meta({ description: AbsBpsDescription("95") }),
    p99_abs_bps_7d: z.int().min(0).nullable().meta({ description: AbsBpsDescription("99") }),
    transitions_7d: Count.meta({ description: "Transitions detected in the trailing 7 days." }),
    suggested_drift_bps: z.int().min(0).nullable().meta({ description: "ceil(p99_abs_bps_7d x 1.25); null without data." }),
    status: z.enum(["ok", "noisy"]).meta({ description: "`noisy` when p95_abs_bps_7d is above the drift threshold." }),
  }),
  "Seven-day |discount| distribution of one asset against its thresholds.",
);

export const CalibrationList = component("CalibrationList", listEnvelopeOf(CalibrationRow), "Calibration rows, catalog order.");

export const Coverage = component(
  "Coverage",
  z.enum(["full", "partial"]),
  "`partial` whenever the privacy rule left a band out (fewer than 5 positions, or dominated by a single position): the USD figures then count only the publishable bands and are lower bounds. `full` otherwise.",
);

export const CascadeRung = component(
  "CascadeRung",
  z.strictObject({
    shock_bps: z.int().meta({ description: "Preset collateral price drop: 100, 250, 500, 1000 or 2000 bps." }),
    liquidatable_usd: Decimal.meta({
      description:
        "Collateral of the listed protocols' positions whose health (collateral x (1 - shock) x liquidation threshold / debt) falls below 1 at this shock, USD, cent-rounded. " +
        "Cumulative over the rungs the privacy rule publishes: a rung whose added positions are withheld repeats the previous published figure (the first rung: 0), so it never decreases with the shock; a lower bound when coverage is partial.",
    }),
    positions: z.string().meta({
      description: "k-floored range label of the positions behind liquidatable_usd (`0`, `5-9`, `10-24`, `25-49`, `50-99`, `100-249`, `250-499`, `500-999`, `1000+`; `<5` is never published), never a raw count.",
    }),
  }),
  "One preset shock of a liquidation cascade estimate (advisory, not a receipt).",
);

export const Systemic = component(
  "Systemic",
  z.strictObject({
    loop_exposure_usd: Decimal.meta({
      description: "Leveraged collateral riding on the asset across the listed protocols, USD, cent-rounded; counts only bands that pass the privacy rule (a lower bound when coverage is partial).",
    }),
    protocols: z.array(z.string()).meta({ description: "Lending protocols whose leverage on the asset passes the privacy rule (those counted in loop_exposure_usd)." }),
    cascade: z.array(CascadeRung),
    coverage: Coverage,
    updated_at: Timestamp.meta({ description: "When the positions behind these figures were read." }),
    advisory_note: z.string(),
  }),
  "Advisory leverage annotation; never mixed into the verifiable peg fields. Omitted from a signal when no leverage is tracked on the asset.",
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
