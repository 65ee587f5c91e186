/**
 * Time partitions of the sample history (migrations 0009, 0010): `sample_rows` by minute, `sample_minutes`,
 * `rollup_minutes` and `rollup_days` by UTC day. A partition is named after its start (`sample_rows_m202611261410`,
 * `rollup_minutes_d20261126`), created when a row first needs it, and dropped whole: retention never deletes rows.
 *
 * Which partitions exist is cached per database handle; a partition dropped by another process (packing, retention)
 * makes the next insert fail with `no partition`, after which the caller forgets the cache and ensures again
 * (`isMissingPartition`).
 */
import { sql } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import type { Executor } from "./schema.ts";

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

/** A partitioned table: its name and the width of its partitions. */
export interface PartitionedTable {
  readonly parent: "sample_rows" | "sample_minutes" | "rollup_minutes" | "rollup_days";
  readonly widthMs: number;
}

export const HOT_ROWS: PartitionedTable = { parent: "sample_rows", widthMs: MINUTE_MS };
export const PACKED_MINUTES: PartitionedTable = { parent: "sample_minutes", widthMs: DAY_MS };
export const ROLLUPS: PartitionedTable = { parent: "rollup_minutes", widthMs: DAY_MS };
/** Closed days of rollups, one row per asset-day (migration 0010, rollup-packing.ts). */
export const ROLLUP_DAYS: PartitionedTable = { parent: "rollup_days", widthMs: DAY_MS };

/** One partition: its table name and its range [start, end). */
export interface Partition {
  readonly name: string;
  readonly start: EpochMs;
  readonly end: EpochMs;
}

export const startOf = (t: PartitionedTable, ms: EpochMs): EpochMs => ms - (((ms % t.widthMs) + t.widthMs) % t.widthMs);

const suffix = (t: PartitionedTable): string => (t.widthMs === DAY_MS ? "_d" : "_m");

/** `sample_rows_m202611261410` / `rollup_minutes_d20261126`: UTC digits of the start, to the partition's width. */
export function partitionName(t: PartitionedTable, start: EpochMs): string {
  const digits = new Date(start).toISOString().replace(/[-:T]/g, "").slice(0, t.widthMs === DAY_MS ? 8 : 12);
  return `${t.parent}${suffix(t)}${digits}`;
}

/** The start a partition's name encodes, or null for a table that is not one of `t`'s partitions. */
export function partitionStart(t: PartitionedTable, name: string): EpochMs | null {
  const m = new RegExp(`^${t.parent}${suffix(t)}(\\d{4})(\\d{2})(\\d{2})(\\d{2})?(\\d{2})?$`).exec(name);
  if (m === null) return null;
  const [, y, mo, d, h, mi] = m;
  return Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h ?? 0), Number(mi ?? 0));
}

const known = new WeakMap<object, Set<string>>();
const cacheOf = (db: Executor): Set<string> => {
  let c = known.get(db);
  if (c === undefined) known.set(db, (c = new Set()));
  return c;
};

/** Forgets which partitions `db` has seen (after an insert found one missing). */
export function forgetPartitions(db: Executor): void {
  known.delete(db);
}

/** Creates the partitions of `t` that hold the instants `at` (any number, any order), unless they exist. */
export async function ensurePartitions(db: Executor, t: PartitionedTable, at: Iterable<EpochMs>): Promise<void> {
  const cache = cacheOf(db);
  const starts = new Set<EpochMs>();
  for (const ms of at) starts.add(startOf(t, ms));
  for (const start of starts) {
    const name = partitionName(t, start);
    if (cache.has(name)) continue;
    await createPartition(db, t, start, name);
    cache.add(name);
  }
}

async function createPartition(db: Executor, t: PartitionedTable, start: EpochMs, name: string): Promise<void> {
  const exists = await sql<{ r: string | null }>`select to_regclass(${name})::text as r`.execute(db);
  if (exists.rows[0]?.r != null) return;
  // Inside a transaction a failed statement would abort it: the create gets a savepoint to roll back to.
  const inTrx = db.isTransaction;
  if (inTrx) await sql`savepoint create_partition`.execute(db);
  try {
    await sql`create table if not exists ${sql.id(name)} partition of ${sql.id(t.parent)}
      for values from (${sql.lit(new Date(start).toISOString())}) to (${sql.lit(new Date(start + t.widthMs).toISOString())})`.execute(db);
    if (inTrx) await sql`release savepoint create_partition`.execute(db);
  } catch (e) {
    if (inTrx) await sql`rollback to savepoint create_partition`.execute(db);
    // Two processes creating the same partition at once: the loser sees a duplicate; the partition exists either way.
    if (!["42P07", "23505"].includes(errorCode(e) ?? "")) throw e;
  }
}

/** The partitions of `t`, oldest first. */
export async function listPartitions(db: Executor, t: PartitionedTable): Promise<Partition[]> {
  const r = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${t.parent}::regclass`.execute(db);
  const out: Partition[] = [];
  for (const { name } of r.rows) {
    const start = partitionStart(t, name);
    if (start !== null) out.push({ name, start, end: start + t.widthMs });
  }
  return out.sort((a, b) => a.start - b.start);
}

/** Drops a partition and forgets it; returns the bytes it held (table, TOAST and indexes). */
export async function dropPartition(db: Executor, p: Partition): Promise<number> {
  const size = await sql<{ b: string | number | null }>`select pg_total_relation_size(to_regclass(${p.name})) as b`.execute(db);
  await sql`drop table if exists ${sql.id(p.name)}`.execute(db);
  known.get(db)?.delete(p.name);
  return Number(size.rows[0]?.b ?? 0);
}

export function errorCode(e: unknown): string | undefined {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === "string" ? c : undefined;
}

/** An insert that met a partition dropped or not yet created (check violation: no partition for the row; or gone). */
export function isMissingPartition(e: unknown): boolean {
  const c = errorCode(e);
  return c === "23514" || c === "42P01" || (e instanceof Error && /no partition of relation|could not open relation/.test(e.message));
}
