/**
 * Packing closed minutes (issue 25): the samples of a minute arrive one narrow `sample_rows` row each, in that minute's
 * partition; once the minute is closed (its end more than `graceMs` ago) the partition is packed into one
 * `sample_minutes` row per asset (parallel arrays, ordered by (ts, seq), which PostgreSQL compresses as one value) and
 * dropped. A sample is always in exactly one of the two places: the packer moves a minute in one transaction, and an
 * insert of a sample older than `packed_until` first looks it up among the packed ones (samples.ts).
 *
 * A late sample of a minute already packed (a projector far behind, a re-delivery after a restart) recreates that
 * minute's partition; the next pass moves the packed row back into it and packs the minute again, whole.
 * Passes are serialised across processes by a transaction-level advisory lock; a pass that does not get it does nothing.
 */
import { sql } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { HOT_ROWS, PACKED_MINUTES, ensurePartitions, listPartitions, type Partition } from "./partitions.ts";
import { atomically } from "./normalise.ts";
import type { Executor } from "./schema.ts";

/** A minute is packed once its end is this far in the past: later samples of it are rare and still handled. */
export const PACK_GRACE_MS = 60_000;
/** Advisory lock key of the packer ("peg_pack" in ASCII). */
const PACK_LOCK = 0x7065675f7061636bn;

export interface PackResult {
  /** Minutes packed (hot partitions holding samples; empty ones are dropped too, uncounted). */
  readonly minutes: number;
  /** Samples they held. */
  readonly samples: number;
}

/** Packs every hot partition whose minute ended at least `graceMs` before `now`, oldest first. */
export async function packClosedMinutes(db: Executor, now: EpochMs, graceMs: number = PACK_GRACE_MS): Promise<PackResult> {
  const due = (await listPartitions(db, HOT_ROWS)).filter((p) => p.end <= now - graceMs);
  let minutes = 0;
  let samples = 0;
  for (const p of due) {
    const n = await atomically(db, (trx) => packMinute(trx, p));
    if (n === null) break;
    if (n > 0) minutes++;
    samples += n;
  }
  return { minutes, samples };
}

/** Moves one minute's partition into `sample_minutes` and drops it; null when another process is packing. */
async function packMinute(trx: Executor, p: Partition): Promise<number | null> {
  const got = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${PACK_LOCK.toString()}::bigint) as ok`.execute(trx);
  if (got.rows[0]?.ok !== true) return null;
  const exists = await sql<{ r: string | null }>`select to_regclass(${p.name})::text as r`.execute(trx);
  if (exists.rows[0]?.r == null) return 0;
  const part = sql.id(p.name);
  // Writers of this minute finish first; from here on none can add to it (a later one fails and retries, see samples.ts).
  await sql`lock table ${part} in exclusive mode`.execute(trx);
  await ensurePartitions(trx, PACKED_MINUTES, [p.start]);
  const minute = sql`${new Date(p.start).toISOString()}::timestamptz`;
  // A minute packed before (late samples came after): unpack it into the partition, to pack it again whole.
  await sql`
    with moved as (
      delete from sample_minutes m where m.minute = ${minute} and m.asset in (select distinct asset from ${part})
      returning m.*
    )
    insert into ${part} (asset, ts, seq, state, discount, discount_raw, market_usd, intrinsic_usd)
    select o.asset, o.minute + u.off * interval '1 millisecond', u.seq, u.state, u.discount, u.discount_raw, u.market_usd, u.intrinsic_usd
    from moved o cross join lateral unnest(o.offsets, o.seqs, o.states, o.discount, o.discount_raw, o.market_usd, o.intrinsic_usd)
      as u (off, seq, state, discount, discount_raw, market_usd, intrinsic_usd)`.execute(trx);
  const packed = await sql<{ n: number | string | null }>`
    with ins as (
      insert into sample_minutes (asset, minute, n, offsets, seqs, states, discount, discount_raw, market_usd, intrinsic_usd)
      select asset, ${minute}, count(*)::integer,
             array_agg((extract(epoch from ts - ${minute}) * 1000)::integer order by ts, seq), array_agg(seq order by ts, seq),
             array_agg(state order by ts, seq), array_agg(discount order by ts, seq), array_agg(discount_raw order by ts, seq),
             array_agg(market_usd order by ts, seq), array_agg(intrinsic_usd order by ts, seq)
      from ${part}
      group by asset
      returning n
    )
    select sum(n) as n from ins`.execute(trx);
  await sql`drop table ${part}`.execute(trx);
  await sql`update sample_pack_state set packed_until = greatest(packed_until, ${new Date(p.end).toISOString()}::timestamptz)`.execute(trx);
  return Number(packed.rows[0]?.n ?? 0);
}
