/**
 * Raw samples and their 1-minute rollups (layout: migration 0009).
 *
 * A batch is inserted into `sample_rows` (one narrow row per sample, keyed by the asset's number, in its minute's
 * partition) with ON CONFLICT DO NOTHING (re-delivery is harmless), and in the same statement the rows it newly stored
 * are added to their minutes' rollups (sum, count, min, max, last state): incremental, so a batch costs what it
 * carries (issue 15). Rollups stay a function of the raw rows: a minute whose samples arrive in two batches, or twice,
 * comes out the same as a recompute (tested against one). Closed minutes are later packed into `sample_minutes`
 * (sample-packing.ts); reads take both places, and a sample is only ever in one of them.
 *
 * Rollups outlive raw rows (90 d against 7 d), so a minute must never be recomputed once retention has dropped its raw
 * rows: that would overwrite a full rollup with a partial one. Batches only carry recent samples; as a guard, when
 * `now` is given, rows whose minute starts before `now` minus the raw window are refused (counted in `stale`).
 */
import { sql } from "kysely";
import type { StateEvent } from "../actors/index.ts";
import { decimalToWire, type EpochMs, type PegState } from "../methodology/index.ts";
import { StoreDataError, atomically, decimalParam, toInt, tsParam } from "./normalise.ts";
import { HOT_ROWS, ROLLUP_DAYS, ROLLUPS, ensurePartitions, errorCode, forgetPartitions, isMissingPartition } from "./partitions.ts";
import { PACK_LOCK } from "./sample-packing.ts";
import { RAW_RETENTION_MS } from "./retention.ts";
import type { Executor } from "./schema.ts";

const MINUTE_MS = 60_000;
/** SQLSTATE deadlock_detected. */
const DEADLOCK = "40P01";
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
 * Rows arrive as column arrays (`unnest`), a fixed 8 parameters whatever the batch size. `rawRetentionMs` (default
 * RAW_RETENTION_MS): rows whose minute is older than `now` minus it are refused.
 */
export async function insertSamples(
  db: Executor,
  rows: readonly SampleRow[],
  opts: { readonly now?: EpochMs; readonly rawRetentionMs?: number } = {},
): Promise<InsertSamplesResult> {
  rows.forEach(checkRow);
  const horizon = opts.now === undefined ? -Infinity : opts.now - (opts.rawRetentionMs ?? RAW_RETENTION_MS);
  const fresh = rows.filter((r) => minuteOf(r.ts) >= horizon);
  if (fresh.length === 0) return { inserted: 0, stale: rows.length, minutes: 0 };
  let inserted = 0;
  let minutes = 0;
  for (let i = 0; i < fresh.length; i += CHUNK) {
    const chunk = fresh.slice(i, i + CHUNK);
    const r = await withPartitions(db, chunk, (x) => insertChunk(x, chunk));
    inserted += r.inserted;
    minutes += r.minutes;
  }
  return { inserted, stale: rows.length - fresh.length, minutes };
}

/** Attempts of a chunk after its first met a minute being packed. */
const RETRIES = 8;

/** A statement that changed nothing because a pass of the packer got in its way (see withPartitions). */
const metPacker = (e: unknown): boolean => isMissingPartition(e) || errorCode(e) === DEADLOCK;

/**
 * Runs `insert` once the partitions its rows need exist. When another process dropped one meanwhile (the packer
 * packed that minute), or the statement deadlocked with the packer (a late sample waits for the minute the packer
 * holds, while the packer waits to drop it), the statement changed nothing, and it is run again in a transaction
 * that first takes the packer's advisory lock in shared mode: no pass can start until it commits (a pass that finds
 * the lock taken does nothing, see sample-packing.ts), so the partitions it ensures stay. Such a transaction can
 * still deadlock with another one creating the same partitions, or read a catalog that does not yet show the drop
 * of a pass it waited for; both fail without effect and are tried again in a new transaction, a bounded number of times.
 */
async function withPartitions<T>(db: Executor, chunk: readonly SampleRow[], insert: (db: Executor) => Promise<T>): Promise<T> {
  const instants = chunk.map((r) => r.ts);
  // A rollup goes to `rollup_minutes`, or to `rollup_days` when its day is packed: both day partitions must exist.
  const ensure = async (x: Executor) => {
    await ensurePartitions(x, HOT_ROWS, instants);
    await ensurePartitions(x, ROLLUPS, instants);
    await ensurePartitions(x, ROLLUP_DAYS, instants);
  };
  try {
    await ensure(db);
    return await insert(db);
  } catch (e) {
    if (!metPacker(e)) throw e;
    forgetPartitions(db);
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await atomically(db, async (trx) => {
        await sql`select pg_advisory_xact_lock_shared(${PACK_LOCK.toString()}::bigint)`.execute(trx);
        await ensure(trx);
        return insert(trx);
      });
    } catch (e) {
      if (!metPacker(e) || attempt >= RETRIES || db.isTransaction) throw e;
    }
  }
}

/**
 * One chunk: `fresh` keeps the rows that are not already packed (only rows older than `packed_until` can be, and only
 * their minutes' packed blocks are read, once per (asset, minute), by `sample_block_keys`), `ins` stores the new ones in `sample_rows` (a re-delivered row conflicts and is not returned),
 * `agg` sums what `ins` returned per (asset, minute), and the rollup upsert adds those sums. A row is therefore
 * counted in its rollup exactly when it is stored, in the same statement: redelivery never double-counts, and two
 * batches of one minute (even concurrent: the upsert locks the rollup row, and the later one adds to the committed
 * sums) add up. The average is `sum / samples` with PostgreSQL's numeric division, what `avg(numeric)` computes; a
 * rollup migrated with a stored average drops it on its first new row. The last state is the one of the greatest
 * (ts, seq), as in the raw history's order. A minute of a day whose rollups are packed already (before
 * `rollups_packed_until`: a sample more than a day late) is added to its packed day by `rollup_days_merge` with the
 * same rules (rollup-packing.ts).
 */
async function insertChunk(db: Executor, chunk: readonly SampleRow[]): Promise<{ inserted: number; minutes: number }> {
  const col = <T>(f: (r: SampleRow) => T): T[] => chunk.map(f);
  const res = await sql<{ inserted: number | string; minutes: number | string; unknown: number | string }>`
    with input as (
      select * from unnest(
        ${col((r) => r.mint)}::text[], ${col((r) => tsParam(r.ts))}::timestamptz[], ${col((r) => r.seq)}::integer[],
        ${col((r) => r.discount)}::numeric[], ${col((r) => r.discount_raw)}::numeric[], ${col((r) => r.state)}::text[],
        ${col((r) => r.market_usd)}::numeric[], ${col((r) => r.intrinsic_usd)}::numeric[]
      ) as t (mint, ts, seq, discount, discount_raw, state, market_usd, intrinsic_usd)
    ),
    keyed as (
      select a.sample_id as asset, i.*, date_bin('1 minute', i.ts, timestamptz '1970-01-01T00:00:00Z') as minute
      from input i join assets a on a.mint = i.mint
    ),
    late as (
      select distinct asset, minute from keyed where ts < (select packed_until from sample_pack_state)
    ),
    packed_keys as (
      select l.asset, l.minute, u.off, u.seq
      from late l join sample_minutes p on p.asset = l.asset and p.minute = l.minute
      cross join lateral sample_block_keys(p.block) u
    ),
    fresh as (
      select k.* from keyed k
      where not exists (
        select 1 from packed_keys q
        where q.asset = k.asset and q.minute = k.minute
          and q.off = (extract(epoch from k.ts - k.minute) * 1000)::integer and q.seq = k.seq)
    ),
    ins as (
      insert into sample_rows (asset, ts, seq, state, discount, discount_raw, market_usd, intrinsic_usd)
      select asset, ts, seq, peg_state_code(state), discount, discount_raw, market_usd, intrinsic_usd from fresh
      on conflict (asset, ts, seq) do nothing
      returning asset, ts, seq, discount, state
    ),
    agg as (
      select i.asset, date_bin('1 minute', i.ts, timestamptz '1970-01-01T00:00:00Z') as minute, sum(i.discount) as sum_discount,
             min(i.discount) as min_discount, max(i.discount) as max_discount, count(*)::integer as samples,
             (array_agg(i.state order by i.ts desc, i.seq desc))[1] as last_state,
             (array_agg(i.ts order by i.ts desc, i.seq desc))[1] as last_ts,
             (array_agg(i.seq order by i.ts desc, i.seq desc))[1] as last_seq
      from ins i
      group by 1, 2
    ),
    up as (
      insert into rollup_minutes as r (asset, minute, samples, last_ms, last_seq, last_state, sum_discount, min_discount, max_discount)
      select asset, minute, samples, (extract(epoch from last_ts - minute) * 1000)::integer, last_seq, last_state,
             sum_discount, min_discount, max_discount
      from agg
      where minute >= (select rollups_packed_until from sample_pack_state)
      on conflict (asset, minute) do update set
        sum_discount = r.sum_discount + excluded.sum_discount,
        samples = r.samples + excluded.samples,
        avg_discount = null,
        min_discount = least(r.min_discount, excluded.min_discount),
        max_discount = greatest(r.max_discount, excluded.max_discount),
        last_state = case when (excluded.last_ms, excluded.last_seq) > (r.last_ms, r.last_seq) then excluded.last_state else r.last_state end,
        last_seq = case when (excluded.last_ms, excluded.last_seq) > (r.last_ms, r.last_seq) then excluded.last_seq else r.last_seq end,
        last_ms = greatest(r.last_ms, excluded.last_ms)
      returning 1
    ),
    packed_days as (
      select rollup_days_merge(asset, date_bin('1 day', minute, timestamptz '1970-01-01T00:00:00Z'),
               (extract(epoch from minute - date_bin('1 day', minute, timestamptz '1970-01-01T00:00:00Z')) / 60)::smallint,
               samples, sum_discount, min_discount, max_discount, (extract(epoch from last_ts - minute) * 1000)::integer,
               last_seq, last_state)
      from agg
      where minute < (select rollups_packed_until from sample_pack_state)
    )
    select (select count(*) from ins) as inserted, (select count(*) from up) + (select count(*) from packed_days) as minutes,
           (select count(*) from input) - (select count(*) from keyed) as unknown
  `.execute(db);
  const row = res.rows[0]!;
  if (toInt(row.unknown, "unknown mints") > 0) throw new StoreDataError("samples.mint", "a sample of an asset the store does not know");
  return { inserted: toInt(row.inserted, "inserted samples"), minutes: toInt(row.minutes, "rollup minutes") };
}

export { history, lastSampleAt, newestSampleSql, rollupsBetween, type HistoryQuery, type MinuteHistoryRow, type RawHistoryRow } from "./sample-history.ts";
