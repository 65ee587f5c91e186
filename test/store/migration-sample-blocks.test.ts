/**
 * Migration 0010 (packed minutes as service-encoded blocks) on a database written by the previous build (0009's
 * parallel `numeric[]` arrays, a recent minute still unpacked, rollups), on PGlite and on a real PostgreSQL:
 * - every `/history` answer (raw and 1m, every field, every digit) and the `samples` view are the same after it;
 * - the SQL decoders (`sample_block_rows`, `sample_block_keys`) read every converted block as the service does;
 * - the store carries on: a re-delivered migrated sample is not stored twice, a late one is merged into its packed
 *   minute, and a day outside the raw window (still there: the migration drops nothing) expires by partition while
 *   the days inside it stay.
 */
import { PGlite } from "@electric-sql/pglite";
import { Kysely, Migrator, PostgresDialect, sql } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateToLatest, migrationProvider } from "../../src/store/migrate.ts";
import { toDecimal } from "../../src/store/normalise.ts";
import { applyRetention } from "../../src/store/retention.ts";
import { blockBytes, decodeBlock } from "../../src/store/sample-block.ts";
import { history, insertSamples, lastSampleAt } from "../../src/store/samples.ts";
import type { Database } from "../../src/store/schema.ts";
import { describeWithPostgres } from "../support/postgres.ts";
import { DAY, MIN, USDC, USDT, sample } from "./fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** The instant the new build starts: 12:30 UTC; the previous build packed every minute before 12:29. */
const NOW = Date.UTC(2026, 10, 27, 12, 30, 0);
const OPEN = NOW - MIN; // 12:29, still unpacked
const iso = (ms: number) => new Date(ms).toISOString();
const ALL = { from: 0, to: 2 ** 42, limit: 100_000 } as const;
const SHAPES = [
  "-0.001234567890123456789012345678901234",
  "0",
  "1.2300",
  "100",
  "0.0000000000000000000000000000000000000001",
  "-12.5",
  "0.009999999999999999999999999999999999",
  "-0.0000000000000000000000000000000000000001234567890123456789012345678901234",
];
const STATES = ["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"];
/** Minutes with samples: 10 days back (outside the 7-day raw window), yesterday, this morning, 12:28, and 12:29 (open). */
const MINUTES = [NOW - 10 * DAY, NOW - 10 * DAY + MIN, NOW - DAY - 7 * MIN, NOW - 3 * 3_600_000, NOW - 2 * MIN, OPEN];

/** 0009's rows: samples through a side table, packed with 0009's own aggregate, the open minute left in `sample_rows`. */
async function writePreviousBuild(db: AnyDb): Promise<number> {
  for (const a of [USDC, USDT]) {
    await sql`insert into assets (mint, symbol, class, active, entry, updated_at) values (${a.mint}, ${a.symbol}, 'fiat', true, '{}', now())`.execute(db);
  }
  await sql`create temporary table prev (mint text, ts timestamptz(3), seq integer, state text, discount numeric, discount_raw numeric,
    market_usd numeric, intrinsic_usd numeric)`.execute(db);
  let n = 0;
  for (const [mi, m] of MINUTES.entries()) {
    for (let i = 0; i < 40; i++) {
      const mint = (i + mi) % 3 === 0 ? USDT.mint : USDC.mint;
      // Ties within a millisecond (seq 0 and 1), repeats, every decimal shape, prices that repeat and change.
      const ts = m + Math.floor(i / 2) * 1_500 + (i % 5 === 4 ? 1 : 0);
      const d = SHAPES[(i + mi) % SHAPES.length]!;
      const raw = SHAPES[(i * 3 + 1) % SHAPES.length]!;
      await sql`insert into prev values (${mint}, ${iso(ts)}, ${i % 2}, ${STATES[i % 6]}, ${d}::numeric, ${raw}::numeric,
        ${i < 20 ? "0.9990000000000000000000000000000001" : "0.99871"}::numeric, ${i % 7 === 0 ? "1.0001" : "1"}::numeric)`.execute(db);
      n++;
    }
  }
  for (const m of new Set(MINUTES.filter((x) => x !== OPEN).map((x) => Math.floor(x / DAY) * DAY))) {
    await sql`create table if not exists ${sql.id(`sample_minutes_d${iso(m).slice(0, 10).replaceAll("-", "")}`)} partition of sample_minutes
      for values from (${sql.lit(iso(m))}) to (${sql.lit(iso(m + DAY))})`.execute(db);
  }
  await sql`
    insert into sample_minutes (asset, minute, n, offsets, seqs, states, discount, discount_raw, market_usd, intrinsic_usd)
    select a.sample_id, x.minute, count(*)::integer,
           array_agg((extract(epoch from x.ts - x.minute) * 1000)::integer order by x.ts, x.seq),
           array_agg(x.seq order by x.ts, x.seq), array_agg(peg_state_code(x.state) order by x.ts, x.seq),
           array_agg(x.discount order by x.ts, x.seq), array_agg(x.discount_raw order by x.ts, x.seq),
           array_agg(x.market_usd order by x.ts, x.seq), array_agg(x.intrinsic_usd order by x.ts, x.seq)
    from (select p.*, date_bin('1 minute', p.ts, timestamptz '1970-01-01T00:00:00Z') as minute from prev p) x
    join assets a on a.mint = x.mint
    where x.minute < ${iso(OPEN)}::timestamptz
    group by a.sample_id, x.minute`.execute(db);
  const hot = `sample_rows_m${iso(OPEN).replace(/[-:T]/g, "").slice(0, 12)}`;
  await sql`create table ${sql.id(hot)} partition of sample_rows for values from (${sql.lit(iso(OPEN))}) to (${sql.lit(iso(OPEN + MIN))})`.execute(db);
  await sql`insert into sample_rows (asset, ts, seq, state, discount, discount_raw, market_usd, intrinsic_usd)
    select a.sample_id, p.ts, p.seq, peg_state_code(p.state), p.discount, p.discount_raw, p.market_usd, p.intrinsic_usd
    from prev p join assets a on a.mint = p.mint where p.ts >= ${iso(OPEN)}::timestamptz`.execute(db);
  await sql`update sample_pack_state set packed_until = ${iso(OPEN)}::timestamptz`.execute(db);
  for (const m of new Set(MINUTES.map((x) => Math.floor(x / DAY) * DAY))) {
    await sql`create table if not exists ${sql.id(`rollup_minutes_d${iso(m).slice(0, 10).replaceAll("-", "")}`)} partition of rollup_minutes
      for values from (${sql.lit(iso(m))}) to (${sql.lit(iso(m + DAY))})`.execute(db);
  }
  await sql`
    insert into rollup_minutes (asset, minute, samples, last_ms, last_seq, last_state, sum_discount, min_discount, max_discount)
    select a.sample_id, x.minute, count(*), (extract(epoch from max(x.ts) - x.minute) * 1000)::integer,
           (array_agg(x.seq order by x.ts desc, x.seq desc))[1], peg_state_code((array_agg(x.state order by x.ts desc, x.seq desc))[1]),
           sum(x.discount), min(x.discount), max(x.discount)
    from (select p.*, date_bin('1 minute', p.ts, timestamptz '1970-01-01T00:00:00Z') as minute from prev p) x
    join assets a on a.mint = x.mint group by a.sample_id, x.minute`.execute(db);
  await sql`drop table prev`.execute(db);
  return n;
}

/** The `samples` view's rows, decimals normalised as history() does. */
async function viewRows(db: AnyDb) {
  const r = await sql<Record<string, unknown>>`
    select mint, ts, seq, state, discount::text as discount, discount_raw::text as discount_raw, market_usd::text as market_usd,
           intrinsic_usd::text as intrinsic_usd
    from samples order by mint, ts, seq`.execute(db);
  return r.rows.map(
    (x): Record<string, unknown> & { ts: number } => ({
      ...x,
      ts: (x["ts"] as Date).getTime(),
      ...Object.fromEntries(["discount", "discount_raw", "market_usd", "intrinsic_usd"].map((k) => [k, toDecimal(x[k], k)])),
    }),
  );
}

const WINDOW = { from: MINUTES[3]! + 10_000, to: OPEN + 20_000, limit: 27 } as const;

/** What the previous build answered, read through 0009's views (as its history() did: decimals by toDecimal). */
async function previousAnswers(db: AnyDb) {
  const view = await viewRows(db);
  const out: Record<string, unknown> = {};
  let last = 0;
  for (const a of [USDC, USDT]) {
    const raw = view
      .filter((r) => r["mint"] === a.mint)
      .sort((x, y) => y.ts - x.ts || (y["seq"] as number) - (x["seq"] as number))
      .map((r) => ({ ts: r.ts, discount: r["discount"], discount_raw: r["discount_raw"], state: r["state"], market_usd: r["market_usd"], intrinsic_usd: r["intrinsic_usd"] }));
    const minutes = await sql<Record<string, unknown>>`
      select minute, avg_discount::text as avg, min_discount::text as min, max_discount::text as max, samples, last_state
      from rollups_1m where mint = ${a.mint} order by minute desc`.execute(db);
    out[`${a.symbol} raw`] = raw;
    out[`${a.symbol} 1m`] = minutes.rows.map((r) => ({
      ts: (r["minute"] as Date).getTime(),
      discount: toDecimal(r["avg"], "avg"),
      min_discount: toDecimal(r["min"], "min"),
      max_discount: toDecimal(r["max"], "max"),
      samples: Number(r["samples"]),
      state: r["last_state"],
      discount_raw: null,
    }));
    out[`${a.symbol} window`] = raw.filter((r) => r.ts >= WINDOW.from && r.ts <= WINDOW.to).slice(0, WINDOW.limit);
    out[`${a.symbol} last`] = raw[0]!.ts;
    last = Math.max(last, raw[0]!.ts);
  }
  out["last"] = last;
  out["view"] = view;
  return out;
}

/** The same answers from this build's repository functions. */
async function answers(db: AnyDb) {
  const store = db as Kysely<Database>;
  const out: Record<string, unknown> = {};
  for (const a of [USDC, USDT]) {
    out[`${a.symbol} raw`] = await history(store, a.mint, { ...ALL, bucket: "raw" });
    out[`${a.symbol} 1m`] = await history(store, a.mint, { ...ALL, bucket: "1m" });
    // A window that cuts minutes at both ends, and a limit that stops inside a packed minute.
    out[`${a.symbol} window`] = await history(store, a.mint, { ...WINDOW, bucket: "raw" });
    out[`${a.symbol} last`] = await lastSampleAt(store, a.mint);
  }
  out["last"] = await lastSampleAt(store);
  out["view"] = await viewRows(db);
  return out;
}

function migrationSuite(name: string, open: () => Promise<AnyDb>): void {
  describe(`migration 0010 on ${name}`, () => {
    let db: AnyDb;
    beforeAll(async () => {
      db = await open();
    }, 60_000);
    afterAll(() => db?.destroy());

    it("keeps every answer, decodes in SQL as in the service, then stores, merges late samples and expires", { timeout: 120_000 }, async () => {
      const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo("2026_11_26_0009_compact_samples");
      expect(error).toBeUndefined();
      const written = await writePreviousBuild(db);
      const before = await previousAnswers(db);
      expect((before["view"] as unknown[]).length).toBe(written);

      expect(await migrateToLatest(db)).toEqual(["2026_11_27_0010_sample_blocks"]);
      const after = await answers(db);
      expect(after).toEqual(before);
      const store = db as Kysely<Database>;

      // The SQL decoders read each block as the service's decoder does (the late-sample check and the view rely on them).
      const blocks = await sql<{ block: unknown; n: number }>`select block, n from sample_minutes`.execute(db);
      expect(blocks.rows.length).toBeGreaterThan(5);
      for (const b of blocks.rows) {
        const js = decodeBlock(blockBytes(b.block));
        expect(js.length).toBe(b.n);
        const rows = await sql<Record<string, unknown>>`
          select off, seq, state, discount::text as discount, discount_raw::text as discount_raw, market_usd::text as market_usd,
                 intrinsic_usd::text as intrinsic_usd
          from sample_block_rows(${b.block})`.execute(db);
        expect(rows.rows.map((r) => ({ ...r, ...Object.fromEntries(["discount", "discount_raw", "market_usd", "intrinsic_usd"].map((k) => [k, toDecimal(r[k], k)])) }))).toEqual(js);
        const keys = await sql<{ off: number; seq: number }>`select off, seq from sample_block_keys(${b.block})`.execute(db);
        expect(keys.rows).toEqual(js.map((s) => ({ off: s.off, seq: s.seq })));
      }

      // A re-delivered sample of a migrated packed minute is not stored again; a late new one is, and joins its rollup.
      const usdcRaw = after["USDC raw"] as { ts: number; discount: string }[];
      const packedOne = usdcRaw.find((r) => r.ts < OPEN && r.ts >= MINUTES[4]!)!;
      const seqOf = (await viewRows(db)).find((r) => r["mint"] === USDC.mint && r.ts === packedOne.ts)!["seq"] as number;
      expect(await insertSamples(store, [sample(USDC.mint, packedOne.ts, packedOne.discount, { seq: seqOf })])).toMatchObject({ inserted: 0 });
      const late = sample(USDC.mint, MINUTES[4]! + 59_999, "-0.5", { seq: 3, state: "CRITICAL" });
      expect(await insertSamples(store, [late])).toEqual({ inserted: 1, stale: 0, minutes: 1 });
      expect(await insertSamples(store, [late])).toMatchObject({ inserted: 0 });

      // The next pass packs the open minute, merges the late sample into its packed minute, and drops the day 10 days
      // back (outside the 7-day raw window: the migration kept it, retention drops it whole); the days inside stay.
      const pass = await applyRetention(store, NOW + 2 * MIN);
      expect(pass).toMatchObject({ packedMinutes: 2, rawDays: 1, rollupDays: 0 });
      const raw = await history(store, USDC.mint, { ...ALL, bucket: "raw" });
      const inWindow = usdcRaw.filter((r) => r.ts >= NOW - 7 * DAY);
      expect(inWindow.length).toBeLessThan(usdcRaw.length);
      expect(raw.filter((r) => r.discount !== "-0.5")).toEqual(inWindow);
      expect(raw.filter((r) => r.discount === "-0.5")).toEqual([
        { ts: late.ts, discount: "-0.5", discount_raw: "-0.5", state: "CRITICAL", market_usd: late.market_usd, intrinsic_usd: "1" },
      ]);
      expect(await sql`select 1 from sample_rows`.execute(db).then((r) => r.rows.length)).toBe(0);
      const minute = (await history(store, USDC.mint, { ...ALL, bucket: "1m" })).find((r) => r.ts === MINUTES[4]!)!;
      const old = (after["USDC 1m"] as { ts: number; samples: number }[]).find((r) => r.ts === MINUTES[4]!)!;
      expect(minute).toMatchObject({ samples: old.samples + 1, state: "CRITICAL" });
      // Rollups live 90 days: all still there.
      expect((await history(store, USDC.mint, { ...ALL, bucket: "1m" })).length).toBe((after["USDC 1m"] as unknown[]).length);
    });
  });
}

migrationSuite("PGlite", async () => new Kysely({ dialect: new PGliteDialect(new PGlite()) }));

describeWithPostgres("postgres", (url) => {
  migrationSuite("PostgreSQL", () => Promise.resolve(new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url(), max: 2 }) }) })));
});
