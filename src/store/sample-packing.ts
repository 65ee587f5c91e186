/**
 * Packing closed minutes (issue 25): the samples of a minute arrive one narrow `sample_rows` row each, in that minute's
 * partition; once the minute is closed (its end more than `graceMs` ago) the partition is packed into one
 * `sample_minutes` row per asset (one `block` encoded by the service, sample-block.ts; migration 0010) and dropped.
 * A sample is always in exactly one of the two places: the packer moves a minute in one transaction, and an insert of
 * a sample older than `packed_until` first looks it up among the packed ones (samples.ts).
 *
 * A late sample of a minute already packed (a projector far behind, a re-delivery after a restart) recreates that
 * minute's partition; the next pass decodes the packed row, merges the late samples in and packs the minute again.
 * Passes are serialised across processes by a transaction-level advisory lock; a pass that does not get it does nothing.
 */
import { sql } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { HOT_ROWS, PACKED_MINUTES, ensurePartitions, errorCode, listPartitions, type Partition } from "./partitions.ts";
import { atomically } from "./normalise.ts";
import { blockBytes, blockHex, decodeBlock, encodeBlock, type BlockSample } from "./sample-block.ts";
import type { Executor } from "./schema.ts";

/** A minute is packed once its end is this far in the past: later samples of it are rare and still handled. */
export const PACK_GRACE_MS = 60_000;
/**
 * Advisory lock key of the packer ("peg_pack" in ASCII): a pass holds it exclusively per minute packed; an insert that
 * met a minute being packed retries holding it shared (samples.ts), so the retry never meets the packer again.
 */
export const PACK_LOCK = 0x7065675f7061636bn;
/** Assets read, encoded and written per statement while packing a minute. */
const GROUP = 1000;

export interface PackResult {
  /** Minutes packed (hot partitions holding samples; empty ones are dropped too, uncounted). */
  readonly minutes: number;
  /** Samples they held. */
  readonly samples: number;
}

/** Packs every hot partition whose minute ended at least `graceMs` before `now`, oldest first. */
export async function packClosedMinutes(db: Executor, now: EpochMs, graceMs: number = PACK_GRACE_MS): Promise<PackResult> {
  const due = (await listPartitions(db, HOT_ROWS)).filter((p) => p.end <= now - graceMs);
  const { partitions: minutes, items: samples } = await packEach(db, due, packMinute);
  return { minutes, samples };
}

/**
 * Packs `due` partitions one transaction each, oldest first, until one finds another process packing (`pack` gives
 * null) or loses a deadlock to a late insert (nothing was moved: the next pass packs). Counts the partitions that held
 * something and what they held.
 */
export async function packEach(db: Executor, due: readonly Partition[], pack: (trx: Executor, p: Partition) => Promise<number | null>): Promise<{ partitions: number; items: number }> {
  let partitions = 0;
  let items = 0;
  for (const p of due) {
    let n: number | null;
    try {
      n = await atomically(db, (trx) => pack(trx, p));
    } catch (e) {
      if (errorCode(e) === "40P01") break;
      throw e;
    }
    if (n === null) break;
    if (n > 0) partitions++;
    items += n;
  }
  return { partitions, items };
}

interface HotRow {
  asset: number;
  off: number;
  seq: number;
  state: number;
  discount: string;
  discount_raw: string;
  market_usd: string;
  intrinsic_usd: string;
}

/**
 * Moves one minute's partition into `sample_minutes` and drops it; null when another process is packing. The rows are
 * read and encoded by the service (sample-block.ts) `GROUP` assets at a time, so memory stays bounded at any number of
 * assets. Returns the samples now packed for the minute (a re-packed minute counts its earlier samples too).
 */
async function packMinute(trx: Executor, p: Partition): Promise<number | null> {
  const got = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${PACK_LOCK.toString()}::bigint) as ok`.execute(trx);
  if (got.rows[0]?.ok !== true) return null;
  const exists = await sql<{ r: string | null }>`select to_regclass(${p.name})::text as r`.execute(trx);
  if (exists.rows[0]?.r == null) return 0;
  const part = sql.id(p.name);
  // Writers of this minute finish first; from here on none can add to it (a later one fails and retries, see samples.ts).
  await sql`lock table ${part} in exclusive mode`.execute(trx);
  await ensurePartitions(trx, PACKED_MINUTES, [p.start]);
  const minute = new Date(p.start).toISOString();
  const assets = (await sql<{ asset: number }>`select distinct asset from ${part} order by asset`.execute(trx)).rows.map((r) => r.asset);
  let packed = 0;
  for (let i = 0; i < assets.length; i += GROUP) {
    const group = assets.slice(i, i + GROUP);
    const hot = await sql<HotRow>`
      select asset, (extract(epoch from ts - ${minute}::timestamptz) * 1000)::integer as off, seq, state,
             discount::text as discount, discount_raw::text as discount_raw, market_usd::text as market_usd,
             intrinsic_usd::text as intrinsic_usd
      from ${part} where asset = any(${group}::integer[])`.execute(trx);
    // A minute packed before (late samples came after): its packed row is taken out, to pack the minute again whole.
    const earlier = await sql<{ asset: number; block: unknown }>`
      delete from sample_minutes where minute = ${minute}::timestamptz and asset = any(${group}::integer[])
      returning asset, block`.execute(trx);
    const byAsset = new Map<number, BlockSample[]>();
    for (const e of earlier.rows) byAsset.set(e.asset, decodeBlock(blockBytes(e.block)));
    for (const { asset, ...s } of hot.rows) {
      const list = byAsset.get(asset);
      if (list === undefined) byAsset.set(asset, [s]);
      else list.push(s);
    }
    const ids: number[] = [];
    const counts: number[] = [];
    const blocks: string[] = [];
    for (const [asset, samples] of byAsset) {
      ids.push(asset);
      counts.push(samples.length);
      blocks.push(blockHex(encodeBlock(samples)));
      packed += samples.length;
    }
    await sql`
      insert into sample_minutes (asset, minute, n, block)
      select a, ${minute}::timestamptz, n, decode(h, 'hex')
      from unnest(${ids}::integer[], ${counts}::integer[], ${blocks}::text[]) as t (a, n, h)`.execute(trx);
  }
  await sql`drop table ${part}`.execute(trx);
  await sql`update sample_pack_state set packed_until = greatest(packed_until, ${new Date(p.end).toISOString()}::timestamptz)`.execute(trx);
  return packed;
}
