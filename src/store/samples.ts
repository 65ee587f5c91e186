/**
 * Raw samples and their 1-minute rollups.
 *
 * A batch is inserted with ON CONFLICT DO NOTHING (re-delivery is harmless), and in the same statement the rows it
 * newly stored are added to their minutes' rollups (sum, count, min, max, last state): incremental, so a batch costs
 * what it carries, not a re-read of every minute it touches (issue 15; before, each touched minute was recomputed from
 * its raw rows). Rollups stay a function of the raw rows: a minute whose samples arrive in two batches, or twice,
 * comes out the same as a recompute (tested against one).
 *
 * Rollups outlive raw rows (90 d against 7 d), so a minute must never be recomputed once retention has deleted any of
 * its raw rows: that would overwrite a full rollup with a partial one. Batches only carry recent samples; as a guard,
 * when `now` is given, rows whose minute starts before `now - RAW_RETENTION_MS` are refused (counted in `stale`).
 */
import { sql } from "kysely";
import type { StateEvent } from "../actors/index.ts";
import { PEG_STATES, decimalToWire, type EpochMs, type PegState } from "../methodology/index.ts";
import { decimalParam, toDecimal, toEnum, toInt, toMs, toMsOrNull, tsParam } from "./normalise.ts";
import { RAW_RETENTION_MS } from "./retention.ts";
import type { Executor } from "./schema.ts";

const MINUTE_MS = 60_000;
/** Rows per statement (column arrays: 8 parameters whatever the size), bounding one statement's work and memory. */
const CHUNK = 5000;

/** One accepted sample's published evaluation. Decimals are wire strings. */
export interface SampleRow {
  readonly mint: string;
  /** Evaluation instant, epoch ms. */
  readonly ts: EpochMs;
  /** Tie-breaker among rows of the same mint and millisecond (later is larger), 0 to 2^31-1. */
  readonly seq: number;
  /** d_smooth. */
  readonly discount: string;
  readonly discount_raw: string;
  readonly state: PegState;
  readonly market_usd: string;
  readonly intrinsic_usd: string;
}

export interface InsertSamplesResult {
  /** Rows newly stored (re-delivered ones are not counted). */
  readonly inserted: number;
  /** Rows refused because their minute is past raw retention. */
  readonly stale: number;
  /** (mint, minute) rollups the newly stored rows were added to (0 for a re-delivered batch). */
  readonly minutes: number;
}

/** The sample row of a published recompute. */
export function sampleFromStateEvent(e: StateEvent, seq = 0): SampleRow {
  return {
    mint: e.mint,
    ts: e.now,
    seq,
    discount: decimalToWire(e.discount),
    discount_raw: decimalToWire(e.discount_raw),
    state: e.state,
    market_usd: decimalToWire(e.sample.market_usd),
    intrinsic_usd: decimalToWire(e.sample.intrinsic_usd),
  };
}

const minuteOf = (ms: EpochMs): EpochMs => ms - (((ms % MINUTE_MS) + MINUTE_MS) % MINUTE_MS);

function checkRow(r: SampleRow): void {
  if (!Number.isSafeInteger(r.ts)) throw new RangeError(`sample ts must be integer epoch ms, got ${r.ts}`);
  if (!Number.isInteger(r.seq) || r.seq < 0 || r.seq > 2_147_483_647) throw new RangeError(`sample seq out of range: ${r.seq}`);
  for (const k of ["discount", "discount_raw", "market_usd", "intrinsic_usd"] as const) decimalParam(r[k], `sample.${k}`);
}

/**
 * Stores a batch and adds its newly stored rows to their minutes' rollups, in one statement (so one transaction).
 * Rows arrive as column arrays (`unnest`), a fixed 8 parameters whatever the batch size.
 */
export async function insertSamples(
  db: Executor,
  rows: readonly SampleRow[],
  opts: { readonly now?: EpochMs } = {},
): Promise<InsertSamplesResult> {
  rows.forEach(checkRow);
  const horizon = opts.now === undefined ? -Infinity : opts.now - RAW_RETENTION_MS;
  const fresh = rows.filter((r) => minuteOf(r.ts) >= horizon);
  if (fresh.length === 0) return { inserted: 0, stale: rows.length, minutes: 0 };
  let inserted = 0;
  let minutes = 0;
  for (let i = 0; i < fresh.length; i += CHUNK) {
    const r = await insertChunk(db, fresh.slice(i, i + CHUNK));
    inserted += r.inserted;
    minutes += r.minutes;
  }
  return { inserted, stale: rows.length - fresh.length, minutes };
}

/**
 * One chunk: `ins` stores the rows that are new (a re-delivered row conflicts and is not returned), `agg` sums what
 * `ins` returned per (mint, minute), and the rollup upsert adds those sums. A row is therefore counted in its rollup
 * exactly when it is stored, in the same statement: redelivery never double-counts, and two batches of one minute
 * (even concurrent: the upsert locks the rollup row, and the later one adds to the committed sums) add up.
 * The average is `sum / samples` with PostgreSQL's numeric division, which is what `avg(numeric)` computes.
 * The last state is the one of the greatest (ts, seq), as in the raw history's order.
 */
async function insertChunk(db: Executor, chunk: readonly SampleRow[]): Promise<{ inserted: number; minutes: number }> {
  const col = <T>(f: (r: SampleRow) => T): T[] => chunk.map(f);
  const res = await sql<{ inserted: number | string; minutes: number | string }>`
    with input as (
      select * from unnest(
        ${col((r) => r.mint)}::text[], ${col((r) => tsParam(r.ts))}::timestamptz[], ${col((r) => r.seq)}::integer[],
        ${col((r) => r.discount)}::numeric[], ${col((r) => r.discount_raw)}::numeric[], ${col((r) => r.state)}::text[],
        ${col((r) => r.market_usd)}::numeric[], ${col((r) => r.intrinsic_usd)}::numeric[]
      ) as t (mint, ts, seq, discount, discount_raw, state, market_usd, intrinsic_usd)
    ),
    ins as (
      insert into samples (mint, ts, seq, discount, discount_raw, state, market_usd, intrinsic_usd)
      select mint, ts, seq, discount, discount_raw, state, market_usd, intrinsic_usd from input
      on conflict (mint, ts, seq) do nothing
      returning mint, ts, seq, discount, state
    ),
    agg as (
      select i.mint, date_bin('1 minute', i.ts, timestamptz '1970-01-01T00:00:00Z') as minute, sum(i.discount) as sum_discount, min(i.discount) as min_discount,
             max(i.discount) as max_discount, count(*)::integer as samples,
             (array_agg(i.state order by i.ts desc, i.seq desc))[1] as last_state,
             (array_agg(i.ts order by i.ts desc, i.seq desc))[1] as last_ts,
             (array_agg(i.seq order by i.ts desc, i.seq desc))[1] as last_seq
      from ins i
      group by 1, 2
    ),
    up as (
      insert into rollups_1m as r (mint, minute, avg_discount, min_discount, max_discount, samples, last_state, last_ts, sum_discount, last_seq)
      select mint, minute, sum_discount / samples, min_discount, max_discount, samples, last_state, last_ts, sum_discount, last_seq
      from agg
      on conflict (mint, minute) do update set
        sum_discount = r.sum_discount + excluded.sum_discount,
        samples = r.samples + excluded.samples,
        avg_discount = (r.sum_discount + excluded.sum_discount) / (r.samples + excluded.samples),
        min_discount = least(r.min_discount, excluded.min_discount),
        max_discount = greatest(r.max_discount, excluded.max_discount),
        last_state = case when (excluded.last_ts, excluded.last_seq) > (r.last_ts, r.last_seq) then excluded.last_state else r.last_state end,
        last_seq = case when (excluded.last_ts, excluded.last_seq) > (r.last_ts, r.last_seq) then excluded.last_seq else r.last_seq end,
        last_ts = greatest(r.last_ts, excluded.last_ts)
      returning 1
    )
    select (select count(*) from ins) as inserted, (select count(*) from up) as minutes
  `.execute(db);
  const row = res.rows[0]!;
  return { inserted: toInt(row.inserted, "inserted samples"), minutes: toInt(row.minutes, "rollup minutes") };
}

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
  if (q.bucket === "raw") {
    const rows = await db
      .selectFrom("samples")
      .select(["ts", "discount", "discount_raw", "state", "market_usd", "intrinsic_usd"])
      .where("mint", "=", mint)
      .where("ts", ">=", tsParam(q.from))
      .where("ts", "<=", tsParam(q.to))
      .orderBy("ts", "desc")
      .orderBy("seq", "desc")
      .limit(q.limit)
      .execute();
    return rows.map((r) => ({
      ts: toMs(r.ts, "samples.ts"),
      discount: toDecimal(r.discount, "samples.discount"),
      discount_raw: toDecimal(r.discount_raw, "samples.discount_raw"),
      state: toEnum(r.state, PEG_STATES, "samples.state"),
      market_usd: toDecimal(r.market_usd, "samples.market_usd"),
      intrinsic_usd: toDecimal(r.intrinsic_usd, "samples.intrinsic_usd"),
    }));
  }
  const rows = await db
    .selectFrom("rollups_1m")
    .select(["minute", "avg_discount", "min_discount", "max_discount", "samples", "last_state"])
    .where("mint", "=", mint)
    .where("minute", ">=", tsParam(q.from))
    .where("minute", "<=", tsParam(q.to))
    .orderBy("minute", "desc")
    .limit(q.limit)
    .execute();
  return rows.map((r) => ({
    ts: toMs(r.minute, "rollups_1m.minute"),
    discount: toDecimal(r.avg_discount, "rollups_1m.avg_discount"),
    min_discount: toDecimal(r.min_discount, "rollups_1m.min_discount"),
    max_discount: toDecimal(r.max_discount, "rollups_1m.max_discount"),
    samples: toInt(r.samples, "rollups_1m.samples"),
    state: toEnum(r.last_state, PEG_STATES, "rollups_1m.last_state"),
    discount_raw: null,
  }));
}

/** The newest raw sample's instant (of one asset, or of all), or null when there is none. */
export async function lastSampleAt(db: Executor, mint?: string): Promise<EpochMs | null> {
  let q = db.selectFrom("samples").select((eb) => eb.fn.max("ts").as("ts"));
  if (mint !== undefined) q = q.where("mint", "=", mint);
  const r = await q.executeTakeFirst();
  return toMsOrNull(r?.ts ?? null, "max(samples.ts)");
}
