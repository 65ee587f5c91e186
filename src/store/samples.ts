/**
 * Raw samples and their 1-minute rollups.
 *
 * A batch is inserted with ON CONFLICT DO NOTHING (re-delivery is harmless), then every (mint, minute) the batch
 * touched is RECOMPUTED from the raw rows with one INSERT ... SELECT ... GROUP BY ... ON CONFLICT DO UPDATE. Rollups
 * are therefore a pure function of the raw rows: a minute whose samples arrive in two batches, or twice, comes out the
 * same. Concurrent batches for one asset are serialised by a transaction-scoped advisory lock per mint, so neither
 * recomputes a minute without the other's committed rows.
 *
 * Rollups outlive raw rows (90 d against 7 d), so a minute must never be recomputed once retention has deleted any of
 * its raw rows: that would overwrite a full rollup with a partial one. Batches only carry recent samples; as a guard,
 * when `now` is given, rows whose minute starts before `now - RAW_RETENTION_MS` are refused (counted in `stale`).
 */
import { sql } from "kysely";
import type { StateEvent } from "../actors/index.ts";
import { PEG_STATES, decimalToWire, type EpochMs, type PegState } from "../methodology/index.ts";
import { atomically, decimalParam, toDecimal, toEnum, toInt, toMs, toMsOrNull, tsParam } from "./normalise.ts";
import { RAW_RETENTION_MS } from "./retention.ts";
import type { Executor } from "./schema.ts";

const MINUTE_MS = 60_000;
/** Rows per INSERT: 8 parameters each stays far below PostgreSQL's 65,535-parameter limit. */
const CHUNK = 1000;

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
  /** (mint, minute) rollups recomputed. */
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

/** Stores a batch and recomputes the rollups of every minute it touched, in one transaction. */
export async function insertSamples(
  db: Executor,
  rows: readonly SampleRow[],
  opts: { readonly now?: EpochMs } = {},
): Promise<InsertSamplesResult> {
  rows.forEach(checkRow);
  const horizon = opts.now === undefined ? -Infinity : opts.now - RAW_RETENTION_MS;
  const fresh = rows.filter((r) => minuteOf(r.ts) >= horizon);
  if (fresh.length === 0) return { inserted: 0, stale: rows.length, minutes: 0 };
  const touched = new Map<string, { mint: string; minute: EpochMs }>();
  for (const r of fresh) {
    const minute = minuteOf(r.ts);
    touched.set(`${r.mint}\u0000${minute}`, { mint: r.mint, minute });
  }
  const mints = [...new Set(fresh.map((r) => r.mint))].sort();
  return atomically(db, async (trx) => {
    // Sorted, so two batches over the same assets take their locks in the same order and cannot deadlock.
    for (const mint of mints) {
      await sql`select pg_advisory_xact_lock(hashtext('peg.samples'), hashtext(${mint}))`.execute(trx);
    }
    let inserted = 0;
    for (let i = 0; i < fresh.length; i += CHUNK) {
      const chunk = fresh.slice(i, i + CHUNK).map((r) => ({
        mint: r.mint,
        ts: tsParam(r.ts),
        seq: r.seq,
        discount: r.discount,
        discount_raw: r.discount_raw,
        state: r.state,
        market_usd: r.market_usd,
        intrinsic_usd: r.intrinsic_usd,
      }));
      const res = await trx
        .insertInto("samples")
        .values(chunk)
        .onConflict((oc) => oc.columns(["mint", "ts", "seq"]).doNothing())
        .executeTakeFirst();
      inserted += toInt(res.numInsertedOrUpdatedRows ?? 0, "inserted samples");
    }
    const minutes = [...touched.values()];
    for (let i = 0; i < minutes.length; i += CHUNK) {
      await recomputeRollups(trx, minutes.slice(i, i + CHUNK));
    }
    return { inserted, stale: rows.length - fresh.length, minutes: minutes.length };
  });
}

async function recomputeRollups(trx: Executor, minutes: readonly { mint: string; minute: EpochMs }[]): Promise<void> {
  const values = sql.join(minutes.map((m) => sql`(${m.mint}::text, ${tsParam(m.minute)}::timestamptz)`));
  await sql`
    insert into rollups_1m (mint, minute, avg_discount, min_discount, max_discount, samples, last_state, last_ts)
    select t.mint, t.minute, avg(s.discount), min(s.discount), max(s.discount), count(*)::integer,
           (array_agg(s.state order by s.ts desc, s.seq desc))[1], max(s.ts)
    from (values ${values}) as t (mint, minute)
    join samples s on s.mint = t.mint and s.ts >= t.minute and s.ts < t.minute + interval '1 minute'
    group by t.mint, t.minute
    on conflict (mint, minute) do update set
      avg_discount = excluded.avg_discount, min_discount = excluded.min_discount,
      max_discount = excluded.max_discount, samples = excluded.samples,
      last_state = excluded.last_state, last_ts = excluded.last_ts
  `.execute(trx);
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
