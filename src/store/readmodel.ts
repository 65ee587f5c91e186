/**
 * Read-model queries behind the HTTP layer's aggregates: trailing-24 h windows (methodology section 7), the stats
 * counters, the calibration distribution and the audit ledger (addendum A). Each is one SQL statement over every
 * asset at once (never one query per asset), returning normalised values: epoch-ms instants, exact wire decimals,
 * safe integers.
 *
 * Cost: `windows24h` reads every 1-minute row of the last 24 h (1,440 per asset) and `calibrationFigures` every row of
 * the last 8 UTC days (about 11,500 per asset), both through the `minute` index in one pass. That is cheap for the
 * shipped catalog; for thousands of assets the caller should cache the results (they move by the minute, not by the
 * request).
 */
import { sql } from "kysely";
import { D, PEG_STATES, decimalToWire, type EpochMs, type PegState } from "../methodology/index.ts";
import { COMMIT_STATUSES, type CommitStatus } from "./alerts.ts";
import { StoreDataError, toDecimal, toEnum, toInt, toIntOrNull, toMs, toMsOrNull, tsParam } from "./normalise.ts";
import type { Executor } from "./schema.ts";
import { newestSampleSql, rollupsBetween } from "./samples.ts";

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Hourly buckets of the trailing-24 h series. */
export const WINDOW_BUCKETS = 24;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checkInstant(ms: EpochMs, name: string): void {
  if (!Number.isSafeInteger(ms)) throw new RangeError(`${name} must be integer epoch ms, got ${ms}`);
}

/** Trailing-24 h figures of one asset (structurally the HTTP layer's `Window24h`). */
export interface Window24hRow {
  /** 24 hourly sample-weighted averages of d_smooth, oldest first, rounded half-even to 8 decimals; null: no rows. */
  readonly series: readonly (number | null)[];
  /** max(max_discount) - min(min_discount), exact wire decimal, >= 0. */
  readonly jitter: string;
  /** max(|min(min_discount)|, |max(max_discount)|): the largest |discount| of the window, exact wire decimal. */
  readonly worst: string;
}

function textArray(v: unknown, column: string): string[] {
  if (!Array.isArray(v)) throw new StoreDataError(column, v);
  return v.map((x) => {
    if (typeof x !== "string") throw new StoreDataError(column, x);
    return x;
  });
}

/**
 * Trailing-24 h windows ending at `now`, for every mint with 1-minute rows whose minute start lies in
 * (now - 24 h, now]. Bucket k (0 = oldest) holds the rows with minute start in (now - 24 h + k h, now - 24 h + (k+1) h],
 * so the last bucket ends exactly at `now`. A bucket's value is sum(avg_discount × samples) / sum(samples) (the mean
 * of every sample in it): the weighted sum is exact numeric arithmetic in SQL; the division and the half-even
 * rounding to 8 decimals are done here with the methodology's Decimal, then the 8-decimal string becomes a number
 * (display data; the interface types the series as numbers).
 */
export async function windows24h(db: Executor, now: EpochMs): Promise<Map<string, Window24hRow>> {
  checkInstant(now, "now");
  const start = now - WINDOW_BUCKETS * HOUR_MS;
  // numeric[] would be parsed as floats by node-postgres: every array comes back as text[].
  const { rows } = await sql<{ mint: string; ks: unknown; sums: unknown; ns: unknown; jitter: unknown; worst: unknown }>`
    with b as (
      select mint,
             ((extract(epoch from minute) * 1000)::bigint - ${start}::bigint - 1) / ${HOUR_MS}::bigint as k,
             sum(avg_discount * samples) as wsum,
             sum(samples) as n,
             min(min_discount) as lo,
             max(max_discount) as hi
      from ${rollupsBetween(tsParam(start), tsParam(now))} rollups_1m
      where minute > ${tsParam(start)}::timestamptz and minute <= ${tsParam(now)}::timestamptz
      group by 1, 2
    )
    select mint,
           array_agg(k::text order by k) as ks,
           array_agg(wsum::text order by k) as sums,
           array_agg(n::text order by k) as ns,
           (max(hi) - min(lo))::text as jitter,
           greatest(abs(min(lo)), abs(max(hi)))::text as worst
    from b
    group by mint
    order by mint
  `.execute(db);
  const out = new Map<string, Window24hRow>();
  for (const r of rows) {
    const ks = textArray(r.ks, "windows24h.k");
    const sums = textArray(r.sums, "windows24h.wsum");
    const ns = textArray(r.ns, "windows24h.n");
    const series: (number | null)[] = new Array<number | null>(WINDOW_BUCKETS).fill(null);
    ks.forEach((kText, i) => {
      const k = toInt(kText, "windows24h.k");
      if (k < 0 || k >= WINDOW_BUCKETS) throw new StoreDataError("windows24h.k", kText);
      const mean = new D(toDecimal(sums[i], "windows24h.wsum")).div(toInt(ns[i], "windows24h.n"));
      series[k] = Number(decimalToWire(mean.toDecimalPlaces(8, D.ROUND_HALF_EVEN)));
    });
    out.set(r.mint, {
      series,
      jitter: toDecimal(r.jitter, "windows24h.jitter"),
      worst: toDecimal(r.worst, "windows24h.worst"),
    });
  }
  return out;
}

/** Counters behind /v1/stats (structurally the HTTP layer's `StatsCounts`). */
export interface StatsRow {
  /** Alerts detected in (now - 24 h, now]. */
  readonly alerts_24h: number;
  /** The same alerts by `to_state`; every PegState is present (0 when none). */
  readonly transitions_by_state_24h: Readonly<Record<PegState, number>>;
  /** The newest raw sample's instant, or null when there is none. */
  readonly last_sample_at: EpochMs | null;
  /**
   * Webhook delivery figures over the attempts of the trailing 24 h (one `deliveries` row per attempt; test events
   * excluded): attempts made, delivered, failed (including the last attempt of a dead-lettered delivery),
   * dead-lettered, delivered / attempts, p50/p95 of the delivered attempts' durations (ms), and attempts waiting now.
   */
  readonly delivery: {
    readonly attempts_24h: number;
    readonly delivered_24h: number;
    readonly failed_24h: number;
    readonly dead_lettered_24h: number;
    readonly success_rate_24h: number | null;
    readonly p50_latency_ms_24h: number | null;
    readonly p95_latency_ms_24h: number | null;
    readonly pending: number;
  };
}

/** Alert counts of the trailing 24 h by target state, and the last sample instant, in one statement. */
export async function statsCounts(db: Executor, now: EpochMs): Promise<StatsRow> {
  checkInstant(now, "now");
  const states = sql.join(PEG_STATES.map((s) => sql`(${s}::text)`));
  const { rows } = await sql<{ state: unknown; n: unknown; last: unknown }>`
    select s.state, count(a.id) as n, ${newestSampleSql()} as last
    from (values ${states}) as s (state)
    left join alerts a
      on a.to_state = s.state
     and a.detected_at > ${tsParam(now - DAY_MS)}::timestamptz
     and a.detected_at <= ${tsParam(now)}::timestamptz
    group by s.state
  `.execute(db);
  const byState = Object.fromEntries(PEG_STATES.map((s) => [s, 0])) as Record<PegState, number>;
  let total = 0;
  let last: EpochMs | null = null;
  for (const r of rows) {
    const n = toInt(r.n, "stats.count");
    byState[toEnum(r.state, PEG_STATES, "stats.state")] = n;
    total += n;
    last = toMsOrNull(r.last, "max(samples.ts)");
  }
  return { alerts_24h: total, transitions_by_state_24h: byState, last_sample_at: last, delivery: await deliveryStats(db, now) };
}

async function deliveryStats(db: Executor, now: EpochMs): Promise<StatsRow["delivery"]> {
  const since = tsParam(now - DAY_MS);
  const until = tsParam(now);
  const { rows } = await sql<{ attempts: unknown; delivered: unknown; failed: unknown; dead: unknown; p50: unknown; p95: unknown; pending: unknown }>`
    select
      count(*) filter (where status <> 'pending' and sent_at is not null) as attempts,
      count(*) filter (where status = 'delivered') as delivered,
      count(*) filter (where status in ('failed', 'dead_lettered') and sent_at is not null) as failed,
      count(*) filter (where status = 'dead_lettered') as dead,
      percentile_disc(0.5) within group (order by duration_ms) filter (where status = 'delivered') as p50,
      percentile_disc(0.95) within group (order by duration_ms) filter (where status = 'delivered') as p95,
      (select count(*) from deliveries where status = 'pending' and not test) as pending
    from deliveries
    where not test
      and coalesce(sent_at, scheduled_at) > ${since}::timestamptz
      and coalesce(sent_at, scheduled_at) <= ${until}::timestamptz
  `.execute(db);
  const r = rows[0];
  const attempts = r === undefined ? 0 : toInt(r.attempts, "stats.delivery.attempts");
  const delivered = r === undefined ? 0 : toInt(r.delivered, "stats.delivery.delivered");
  return {
    attempts_24h: attempts,
    delivered_24h: delivered,
    failed_24h: r === undefined ? 0 : toInt(r.failed, "stats.delivery.failed"),
    dead_lettered_24h: r === undefined ? 0 : toInt(r.dead, "stats.delivery.dead_lettered"),
    success_rate_24h: attempts === 0 ? null : Math.round((delivered / attempts) * 10_000) / 10_000,
    p50_latency_ms_24h: r === undefined ? null : toIntOrNull(r.p50, "stats.delivery.p50"),
    p95_latency_ms_24h: r === undefined ? null : toIntOrNull(r.p95, "stats.delivery.p95"),
    pending: r === undefined ? 0 : toInt(r.pending, "stats.delivery.pending"),
  };
}

/** Distribution of one asset's |discount| (structurally the HTTP layer's `CalibrationFigures`). */
export interface CalibrationRow {
  readonly mint: string;
  /** Distinct UTC days with 1-minute rows among the trailing 8 (today, up to `now`, and the 7 days before). */
  readonly days_covered: number;
  /** floor(bps) of the discrete percentiles of |avg_discount| over the rows of (now - 7 d, now]; null: no rows. */
  readonly p50_abs_bps_7d: number | null;
  readonly p95_abs_bps_7d: number | null;
  readonly p99_abs_bps_7d: number | null;
  /** Alerts detected in (now - 7 d, now]. */
  readonly transitions_7d: number;
}

/**
 * Calibration figures of every asset in the store (active or not), by mint, in one statement and one pass over the
 * rollups (addendum A).
 *
 * Percentiles are **nearest-rank**: `percentile_disc(p)` over |avg_discount| of the 1-minute rows in (now - 7 d, now]
 * (each row one observation, unweighted), which is the value at 1-based rank ceil(p × N) of the N values in ascending
 * order, so the result is an observed, exact numeric. PostgreSQL forms that rank in float8; for p = 0.5, 0.95 and 0.99
 * it equals the exact integer ceil(p × N) for every N up to 20,160 (a 7-day window holds at most 10,080 rows per
 * asset), which test/http/calibration.test.ts checks against a reference. `percentile_cont` would interpolate in
 * double precision and could floor an exact 15 bps to 14. The bps figure is floor(|discount| × 10,000), the integer
 * the bands compare (methodology section 3). PGlite runs the same PostgreSQL code, so both backends agree exactly.
 *
 * With no rows in the 7 days the percentiles are null; `days_covered` counts the trailing 8 UTC days (today, up to
 * `now`, and the 7 before) independently, so it can be 1 while the percentiles are null (rows only on the 8th day).
 */
export async function calibrationFigures(db: Executor, now: EpochMs): Promise<CalibrationRow[]> {
  checkInstant(now, "now");
  const since7d = tsParam(now - 7 * DAY_MS);
  const firstDay = tsParam(Math.floor(now / DAY_MS) * DAY_MS - 7 * DAY_MS);
  const until = tsParam(now);
  const pct = (p: number) =>
    sql`floor(percentile_disc(${sql.lit(p)}::float8) within group (order by abs(avg_discount))
          filter (where minute > ${since7d}::timestamptz) * 10000)::bigint`;
  const { rows } = await sql<{ mint: string; days: unknown; p50: unknown; p95: unknown; p99: unknown; n: unknown }>`
    with r as (
      select mint,
             count(distinct (minute at time zone 'UTC')::date) as days,
             ${pct(0.5)} as p50,
             ${pct(0.95)} as p95,
             ${pct(0.99)} as p99
      from ${rollupsBetween(firstDay, until)} rollups_1m
      where minute >= ${firstDay}::timestamptz and minute <= ${until}::timestamptz
      group by mint
    ), t as (
      select mint, count(*) as n
      from alerts
      where detected_at > ${since7d}::timestamptz and detected_at <= ${until}::timestamptz
      group by mint
    )
    select a.mint, coalesce(r.days, 0) as days, r.p50, r.p95, r.p99, coalesce(t.n, 0) as n
    from assets a
    left join r on r.mint = a.mint
    left join t on t.mint = a.mint
    order by a.mint
  `.execute(db);
  return rows.map((r) => ({
    mint: r.mint,
    days_covered: toInt(r.days, "calibration.days"),
    p50_abs_bps_7d: toIntOrNull(r.p50, "calibration.p50"),
    p95_abs_bps_7d: toIntOrNull(r.p95, "calibration.p95"),
    p99_abs_bps_7d: toIntOrNull(r.p99, "calibration.p99"),
    transitions_7d: toInt(r.n, "calibration.transitions"),
  }));
}

/** One row of the audit ledger (structurally the HTTP layer's `AuditRow`). */
export interface AuditEntry {
  readonly id: string;
  readonly asset: string;
  readonly from_state: PegState;
  readonly to_state: PegState;
  readonly detected_at: EpochMs;
  readonly methodology_version: string;
  readonly receipt_sha256: string;
  readonly commit_status: CommitStatus;
  readonly monitoring_only: boolean;
}

/** Filters and page of the audit ledger (structurally the HTTP layer's `AuditQuery`). */
export interface AuditPageQuery {
  /** `to_state` equals this. */
  readonly state?: string;
  readonly mint?: string;
  /** Inclusive bounds on `detected_at`. */
  readonly from: EpochMs;
  readonly to: EpochMs;
  /** Rows per page; the HTTP layer caps it (100 for the index, more for the CSV). */
  readonly limit: number;
  /** Keyset cursor: only rows strictly older than this (detected_at, id) in the listing order. */
  readonly before?: { readonly detected_at: EpochMs; readonly id: string };
}

/**
 * One page of the audit ledger: persisted receipts (alert joined with its receipt row, which carries the commit
 * status), newest first by (detected_at desc, id desc). The next page passes the last row's (detected_at, id) as
 * `before`; rows appended meanwhile are newer and never shift a page. A malformed cursor id is a RangeError.
 */
export async function auditPage(db: Executor, q: AuditPageQuery): Promise<AuditEntry[]> {
  if (!Number.isSafeInteger(q.limit) || q.limit < 0) throw new RangeError("limit must be a non-negative integer");
  checkInstant(q.from, "from");
  checkInstant(q.to, "to");
  let query = db
    .selectFrom("alerts")
    .innerJoin("receipts", "receipts.alert_id", "alerts.id")
    .select([
      "alerts.id",
      "alerts.asset",
      "alerts.from_state",
      "alerts.to_state",
      "alerts.detected_at",
      "alerts.methodology_version",
      "alerts.receipt_sha256",
      "receipts.commit_status",
      "alerts.monitoring_only",
    ])
    .where("alerts.detected_at", ">=", tsParam(q.from))
    .where("alerts.detected_at", "<=", tsParam(q.to));
  if (q.state !== undefined) query = query.where("alerts.to_state", "=", q.state);
  if (q.mint !== undefined) query = query.where("alerts.mint", "=", q.mint);
  if (q.before !== undefined) {
    checkInstant(q.before.detected_at, "before.detected_at");
    if (!UUID.test(q.before.id)) throw new RangeError("before.id must be an alert id (uuid)");
    const b = q.before;
    query = query.where(
      sql<boolean>`(alerts.detected_at, alerts.id) < (${tsParam(b.detected_at)}::timestamptz, ${b.id}::uuid)`,
    );
  }
  const rows = await query.orderBy("alerts.detected_at", "desc").orderBy("alerts.id", "desc").limit(q.limit).execute();
  return rows.map((r) => ({
    id: r.id,
    asset: r.asset,
    from_state: toEnum(r.from_state, PEG_STATES, "alerts.from_state"),
    to_state: toEnum(r.to_state, PEG_STATES, "alerts.to_state"),
    detected_at: toMs(r.detected_at, "alerts.detected_at"),
    methodology_version: r.methodology_version,
    receipt_sha256: r.receipt_sha256,
    commit_status: toEnum(r.commit_status, COMMIT_STATUSES, "receipts.commit_status"),
    monitoring_only: r.monitoring_only,
  }));
}

/** The newest alert id of every mint that has one (newest by detected_at, then id, as the feeds order). */
export async function latestAlertIds(db: Executor): Promise<Map<string, string>> {
  const rows = await db
    .selectFrom("alerts")
    .distinctOn("mint")
    .select(["mint", "id"])
    .orderBy("mint")
    .orderBy("detected_at", "desc")
    .orderBy("id", "desc")
    .execute();
  return new Map(rows.map((r) => [r.mint, r.id]));
}
