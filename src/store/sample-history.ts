/**
 * Reading raw samples and their 1-minute rollups back (`/v1/assets/{symbol}/history`, the freshness of the newest
 * sample): from both places each can be, the open minutes' rows and the packed blocks (samples.ts writes them,
 * sample-packing.ts and rollup-packing.ts pack them), newest first.
 */
import { sql, type RawBuilder } from "kysely";
import { PEG_STATES, type EpochMs, type PegState } from "../methodology/index.ts";
import { StoreDataError, toDecimal, toEnum, toInt, toMs, toMsOrNull, tsParam } from "./normalise.ts";
import { blockBytes, decodeBlock } from "./sample-block.ts";
import type { Executor } from "./schema.ts";

/** History row of the `raw` bucket (addendum A). */
export interface RawHistoryRow {
  readonly ts: EpochMs;
  readonly discount: string;
  readonly discount_raw: string;
  readonly state: PegState;
  readonly market_usd: string;
  readonly intrinsic_usd: string;
}

/** History row of the `1m` bucket (addendum A): `ts` is the minute start, `discount` the average d_smooth. */
export interface MinuteHistoryRow {
  readonly ts: EpochMs;
  readonly discount: string;
  readonly min_discount: string;
  readonly max_discount: string;
  readonly samples: number;
  /** Last state in the minute. */
  readonly state: PegState;
  readonly discount_raw: null;
}

/** `from` and `to` are inclusive bounds on the row's `ts` (the minute start for `1m`). */
export interface HistoryQuery {
  readonly bucket: "raw" | "1m";
  readonly from: EpochMs;
  readonly to: EpochMs;
  readonly limit: number;
}

/** One asset's history, newest first. */
export function history(db: Executor, mint: string, q: HistoryQuery & { bucket: "raw" }): Promise<RawHistoryRow[]>;
export function history(db: Executor, mint: string, q: HistoryQuery & { bucket: "1m" }): Promise<MinuteHistoryRow[]>;
export function history(db: Executor, mint: string, q: HistoryQuery): Promise<RawHistoryRow[] | MinuteHistoryRow[]>;
export async function history(db: Executor, mint: string, q: HistoryQuery): Promise<RawHistoryRow[] | MinuteHistoryRow[]> {
  if (!Number.isSafeInteger(q.limit) || q.limit < 0) throw new RangeError("limit must be a non-negative integer");
  return q.bucket === "raw" ? rawHistory(db, mint, q) : minuteHistory(db, mint, q);
}

const assetOf = (mint: string) => sql`(select sample_id from assets where mint = ${mint})`;

/**
 * Raw rows from both places a sample can be, read in one statement (one snapshot, so a minute being packed meanwhile
 * is seen in exactly one of them): `sample_rows` (recent) and the packed minutes' blocks, decoded here. Packed minutes
 * are read newest first only as far as needed: a block is fetched while fewer than `limit` samples sit in newer minutes
 * that lie wholly inside the window (the two edge minutes, partly outside, are always fetched and filtered).
 */
async function rawHistory(db: Executor, mint: string, q: HistoryQuery): Promise<RawHistoryRow[]> {
  const from = tsParam(q.from);
  const to = tsParam(q.to);
  const { rows } = await sql<{
    ts: Date | string;
    seq: number | null;
    discount: string | null;
    discount_raw: string | null;
    state: number | null;
    market_usd: string | null;
    intrinsic_usd: string | null;
    block: unknown;
  }>`
    with m as (
      select p.minute, p.block,
             coalesce(sum(case when p.minute >= ${from}::timestamptz and p.minute + interval '1 minute' <= ${to}::timestamptz then p.n else 0 end)
               over (order by p.minute desc rows between unbounded preceding and 1 preceding), 0) as newer
      from sample_minutes p
      where p.asset = ${assetOf(mint)} and p.minute > ${from}::timestamptz - interval '1 minute' and p.minute <= ${to}::timestamptz
    ),
    hot as (
      select ts, seq, discount, discount_raw, state, market_usd, intrinsic_usd from sample_rows
      where asset = ${assetOf(mint)} and ts >= ${from}::timestamptz and ts <= ${to}::timestamptz
      order by ts desc, seq desc
      limit ${q.limit}
    )
    select ts, seq, discount::text as discount, discount_raw::text as discount_raw, state, market_usd::text as market_usd,
           intrinsic_usd::text as intrinsic_usd, null::bytea as block
    from hot
    union all
    select minute, null, null, null, null, null, null, block from m where m.newer < ${q.limit}
  `.execute(db);
  const out: (RawHistoryRow & { seq: number })[] = [];
  for (const r of rows) {
    const at = toMs(r.ts, "samples.ts");
    if (r.block === null || r.block === undefined) {
      out.push({
        ts: at,
        seq: toInt(r.seq, "samples.seq"),
        discount: toDecimal(r.discount, "samples.discount"),
        discount_raw: toDecimal(r.discount_raw, "samples.discount_raw"),
        state: stateName(r.state),
        market_usd: toDecimal(r.market_usd, "samples.market_usd"),
        intrinsic_usd: toDecimal(r.intrinsic_usd, "samples.intrinsic_usd"),
      });
      continue;
    }
    for (const s of decodeBlock(blockBytes(r.block))) {
      const ts = at + s.off;
      if (ts < q.from || ts > q.to) continue;
      out.push({
        ts,
        seq: s.seq,
        discount: toDecimal(s.discount, "samples.discount"),
        discount_raw: toDecimal(s.discount_raw, "samples.discount_raw"),
        state: stateName(s.state),
        market_usd: toDecimal(s.market_usd, "samples.market_usd"),
        intrinsic_usd: toDecimal(s.intrinsic_usd, "samples.intrinsic_usd"),
      });
    }
  }
  out.sort((a, b) => b.ts - a.ts || b.seq - a.seq);
  return out.slice(0, q.limit).map(({ seq: _seq, ...r }) => r);
}

/** A state code (`peg_state_code`: PEG_STATES order) as its name. */
function stateName(code: unknown): PegState {
  const i = typeof code === "number" ? code : NaN;
  const name = PEG_STATES[i];
  if (name === undefined) throw new StoreDataError("samples.state", code);
  return name;
}

/** Minutes from both places a rollup can be (disjoint: see rollup-packing.ts): `rollup_minutes` and packed days. */
async function minuteHistory(db: Executor, mint: string, q: HistoryQuery): Promise<MinuteHistoryRow[]> {
  const from = tsParam(q.from);
  const to = tsParam(q.to);
  const { rows } = await sql<{ minute: Date | string; avg: string; min: string; max: string; samples: number | string; state: string }>`
    select minute, coalesce(avg_discount, sum_discount / samples)::text as avg, min_discount::text as min,
           max_discount::text as max, samples, peg_state_name(last_state) as state
    from (
      select minute, samples, last_state, sum_discount, min_discount, max_discount, avg_discount
      from rollup_minutes
      where asset = ${assetOf(mint)} and minute >= ${from}::timestamptz and minute <= ${to}::timestamptz
      union all
      select d.day + u.m * interval '1 minute', u.k, u.lstate, u.s, u.lo, u.hi, u.av
      from rollup_days d cross join lateral unnest(d.minutes, d.samples, d.last_state, d.sum_discount, d.min_discount,
        d.max_discount, d.avg_discount) as u (m, k, lstate, s, lo, hi, av)
      where d.asset = ${assetOf(mint)} and d.day > ${from}::timestamptz - interval '1 day' and d.day <= ${to}::timestamptz
    ) r
    where minute >= ${from}::timestamptz and minute <= ${to}::timestamptz
    order by minute desc
    limit ${q.limit}
  `.execute(db);
  return rows.map((r) => ({
    ts: toMs(r.minute, "rollups_1m.minute"),
    discount: toDecimal(r.avg, "rollups_1m.avg_discount"),
    min_discount: toDecimal(r.min, "rollups_1m.min_discount"),
    max_discount: toDecimal(r.max, "rollups_1m.max_discount"),
    samples: toInt(r.samples, "rollups_1m.samples"),
    state: toEnum(r.state, PEG_STATES, "rollups_1m.last_state"),
    discount_raw: null,
  }));
}

/**
 * The 1-minute rollups with a minute in [from, to] (timestamptz parameters), from both places a minute can be, with the
 * `rollups_1m` view's columns that readers aggregate (mint, minute, avg_discount, min_discount, max_discount, samples).
 * A packed day is unnested only when it overlaps the window: the view cannot know the window, and unnests every day.
 */
export function rollupsBetween(from: string, to: string): RawBuilder<unknown> {
  return sql`(
    select a.mint, r.minute, coalesce(r.avg_discount, r.sum_discount / r.samples) as avg_discount, r.min_discount,
           r.max_discount, r.samples
    from (
      select asset, minute, samples, sum_discount, min_discount, max_discount, avg_discount
      from rollup_minutes
      where minute >= ${from}::timestamptz and minute <= ${to}::timestamptz
      union all
      select d.asset, d.day + u.m * interval '1 minute', u.k, u.s, u.lo, u.hi, u.av
      from rollup_days d cross join lateral unnest(d.minutes, d.samples, d.sum_discount, d.min_discount, d.max_discount,
        d.avg_discount) as u (m, k, s, lo, hi, av)
      where d.day > ${from}::timestamptz - interval '1 day' and d.day <= ${to}::timestamptz
    ) r join assets a on a.sample_id = r.asset
    where r.minute >= ${from}::timestamptz and r.minute <= ${to}::timestamptz
  )`;
}

/** SQL for the newest raw sample's instant (of one asset, or of all): null when there is none. */
export function newestSampleSql(mint?: string): RawBuilder<Date | string | null> {
  const asset = mint === undefined ? sql`true` : sql`asset = ${assetOf(mint)}`;
  return sql`greatest(
      (select max(ts) from sample_rows where ${asset}),
      (select max(p.minute + (get_byte(p.block, 1) * 256 + get_byte(p.block, 2)) * interval '1 millisecond') from sample_minutes p
       where ${asset} and p.minute = (select max(minute) from sample_minutes where ${asset})))`;
}

/** The newest raw sample's instant (of one asset, or of all), or null when there is none. */
export async function lastSampleAt(db: Executor, mint?: string): Promise<EpochMs | null> {
  const { rows } = await sql<{ ts: Date | string | null }>`select ${newestSampleSql(mint)} as ts`.execute(db);
  return toMsOrNull(rows[0]?.ts ?? null, "max(samples.ts)");
}
