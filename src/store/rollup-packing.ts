/**
 * Packing closed days of rollups (issue 25; migration 0010): a day's `rollup_minutes` partition (one ~170-byte row per
 * asset-minute, updated in place while its minute is open) becomes one `rollup_days` row per asset with the day's
 * minutes as parallel arrays, and is dropped. The values are moved, never recomputed: sums, counts, minima, maxima,
 * last states and stored averages are the same numerics, so `/history?bucket=1m` answers the same to the last digit.
 *
 * A minute is always in exactly one of the two places. The pass moves a day in one transaction, holding the day's
 * partition in exclusive mode (writers of that day finish first; a later one finds it dropped and retries, samples.ts)
 * and advancing `sample_pack_state.rollups_packed_until`; an insert adds a minute before that instant to its packed
 * day (`rollup_days_merge`) instead of `rollup_minutes`. A partition of a packed day that reappears (an insert ensures
 * its partitions before it knows where its rollups go) is merged into the packed rows by the next pass, whatever it
 * holds. Passes share the raw packer's advisory lock (sample-packing.ts), so an insert retrying under it meets neither.
 */
import { sql } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { ROLLUP_DAYS, ROLLUPS, ensurePartitions, listPartitions, type Partition } from "./partitions.ts";
import { PACK_LOCK, packEach } from "./sample-packing.ts";
import type { Executor } from "./schema.ts";

/** A day's rollups are packed once the day ended this long ago (a later minute of it is merged, still exact). */
export const ROLLUP_PACK_GRACE_MS = 10 * 60_000;

export interface RollupPackResult {
  /** Day partitions packed (ones holding rollups; empty ones are dropped too, uncounted). */
  readonly days: number;
  /** Asset-minutes they held, packed ones of the same days included. */
  readonly minutes: number;
}

/**
 * Packs every `rollup_minutes` day partition that ended at least `graceMs` before `now` and ends after `keepFrom`
 * (days older than that are about to be dropped by retention: not worth packing), oldest first.
 */
export async function packClosedDays(db: Executor, now: EpochMs, keepFrom: EpochMs, graceMs: number = ROLLUP_PACK_GRACE_MS): Promise<RollupPackResult> {
  const due = (await listPartitions(db, ROLLUPS)).filter((p) => p.end <= now - graceMs && p.end > keepFrom);
  const { partitions: days, items: minutes } = await packEach(db, due, packDay);
  return { days, minutes };
}

/** Moves one day's partition into `rollup_days` and drops it; null when another process is packing. */
async function packDay(trx: Executor, p: Partition): Promise<number | null> {
  const got = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${PACK_LOCK.toString()}::bigint) as ok`.execute(trx);
  if (got.rows[0]?.ok !== true) return null;
  const exists = await sql<{ r: string | null }>`select to_regclass(${p.name})::text as r`.execute(trx);
  if (exists.rows[0]?.r == null) return 0;
  const part = sql.id(p.name);
  await sql`lock table ${part} in exclusive mode`.execute(trx);
  await ensurePartitions(trx, ROLLUP_DAYS, [p.start]);
  const day = sql`${new Date(p.start).toISOString()}::timestamptz`;
  // The day's rows merged with what is packed for it already (as the insert's upsert adds a batch to a minute), then
  // one row per asset, minutes in order. sum() and min()/max() of one numeric return it unchanged, scale included.
  const packed = await sql<{ n: number | string | null }>`
    with moved as (
      delete from rollup_days d where d.day = ${day} and d.asset in (select distinct asset from ${part})
      returning d.*
    ),
    r as (
      select asset, minute, samples, last_ms, last_seq, last_state, sum_discount, min_discount, max_discount, avg_discount
      from ${part}
      union all
      select o.asset, o.day + u.m * interval '1 minute', u.k, u.lms, u.lseq, u.lstate, u.s, u.lo, u.hi, u.av
      from moved o cross join lateral unnest(o.minutes, o.samples, o.last_ms, o.last_seq, o.last_state, o.sum_discount,
        o.min_discount, o.max_discount, o.avg_discount) as u (m, k, lms, lseq, lstate, s, lo, hi, av)
    ),
    merged as (
      select asset, minute, sum(samples)::integer as samples, max(last_ms) as last_ms,
             (array_agg(last_seq order by last_ms desc, last_seq desc))[1] as last_seq,
             (array_agg(last_state order by last_ms desc, last_seq desc))[1] as last_state,
             sum(sum_discount) as sum_discount, min(min_discount) as min_discount, max(max_discount) as max_discount,
             case when count(*) = 1 then max(avg_discount) end as avg_discount
      from r group by asset, minute
    ),
    ins as (
      insert into rollup_days (asset, day, n, minutes, samples, last_ms, last_seq, last_state, sum_discount, min_discount,
                               max_discount, avg_discount)
      select asset, ${day}, count(*)::integer, array_agg((extract(epoch from minute - ${day}) / 60)::smallint order by minute),
             array_agg(samples order by minute), array_agg(last_ms order by minute), array_agg(last_seq order by minute),
             array_agg(last_state order by minute), array_agg(sum_discount order by minute), array_agg(min_discount order by minute),
             array_agg(max_discount order by minute),
             case when bool_or(avg_discount is not null) then array_agg(avg_discount order by minute) end
      from merged group by asset
      returning n
    )
    select sum(n) as n from ins`.execute(trx);
  await sql`drop table ${part}`.execute(trx);
  await sql`update sample_pack_state set rollups_packed_until = greatest(rollups_packed_until, ${new Date(p.end).toISOString()}::timestamptz)`.execute(trx);
  return Number(packed.rows[0]?.n ?? 0);
}
