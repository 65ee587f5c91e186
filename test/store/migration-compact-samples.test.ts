/**
 * Migration 0009 (compact, partitioned history) on a database written by the previous build, on PGlite and on a real
 * PostgreSQL: the history routes' answers (raw and 1m, every field, every digit) are the same after the migration,
 * and the migrated store carries on: a re-delivered sample is not stored twice, a new one joins its migrated minute's
 * rollup, and the migrated minutes can be packed again and expire by partition.
 */
import { PGlite } from "@electric-sql/pglite";
import { Kysely, Migrator, PostgresDialect, sql } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrationProvider, migrateToLatest } from "../../src/store/migrate.ts";
import { toDecimal } from "../../src/store/normalise.ts";
import { applyRetention } from "../../src/store/retention.ts";
import { history, insertSamples, lastSampleAt } from "../../src/store/samples.ts";
import type { Database } from "../../src/store/schema.ts";
import { describeWithPostgres } from "../support/postgres.ts";
import { DAY, MIN, USDC, USDT, sample } from "./fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

const M = Date.UTC(2026, 10, 25, 23, 58, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const ALL = { from: 0, to: 2 ** 42, limit: 5000 } as const;

/** Rows as the previous build stored them: raw rows across midnight, ties within a millisecond, long decimals. */
async function writePreviousBuild(db: AnyDb): Promise<void> {
  for (const a of [USDC, USDT]) {
    await sql`insert into assets (mint, symbol, class, active, entry, updated_at) values (${a.mint}, ${a.symbol}, 'fiat', true, '{}', now())`.execute(db);
  }
  const rows: string[] = [];
  const states = ["PEGGED", "DRIFT", "DEPEG", "UNKNOWN"];
  for (let i = 0; i < 240; i++) {
    const mint = i % 3 === 0 ? USDT.mint : USDC.mint;
    const ts = M + Math.floor(i / 2) * 1_500;
    const d = `0.00${i % 7}${"3".repeat(i % 29)}`;
    rows.push(`('${mint}', '${iso(ts)}', ${i % 2}, ${d}, -${d}, '${states[i % 4]}', 0.99${i}7, 1.000${(i % 5) + 1})`);
  }
  await sql.raw(`insert into samples (mint, ts, seq, discount, discount_raw, state, market_usd, intrinsic_usd) values ${rows.join(",")}`).execute(db);
  // Rollups as 0006 left them: exact sums and last seqs; the average as avg() computed it.
  await sql`insert into rollups_1m (mint, minute, avg_discount, min_discount, max_discount, samples, last_state, last_ts, sum_discount, last_seq)
    select mint, date_bin('1 minute', ts, timestamptz '1970-01-01T00:00:00Z'), avg(discount), min(discount), max(discount), count(*),
           (array_agg(state order by ts desc, seq desc))[1], max(ts), sum(discount), (array_agg(seq order by ts desc, seq desc))[1]
    from samples group by 1, 2`.execute(db);
  // A minute whose raw rows retention already deleted (30 days back), with an average that is not sum / samples.
  await sql`insert into rollups_1m (mint, minute, avg_discount, min_discount, max_discount, samples, last_state, last_ts, sum_discount, last_seq)
    values (${USDC.mint}, ${iso(M - 30 * DAY)}, 0.33333333333333333333, 0.1, 0.9, 3, 'DRIFT', ${iso(M - 30 * DAY + 5)}, 1.0, 0)`.execute(db);
}

/** The previous build's answers, read with its own queries. */
async function previousAnswers(db: AnyDb, mint: string) {
  const raw = await sql<Record<string, unknown>>`
    select ts, discount::text as discount, discount_raw::text as discount_raw, state, market_usd::text as market_usd,
           intrinsic_usd::text as intrinsic_usd
    from samples where mint = ${mint} order by ts desc, seq desc`.execute(db);
  const minutes = await sql<Record<string, unknown>>`
    select minute, avg_discount::text as avg, min_discount::text as min, max_discount::text as max, samples, last_state
    from rollups_1m where mint = ${mint} order by minute desc`.execute(db);
  return {
    // As the previous build's history() read them: decimals normalised by toDecimal.
    raw: raw.rows.map((r) => ({
      ...Object.fromEntries(["discount", "discount_raw", "market_usd", "intrinsic_usd"].map((k) => [k, toDecimal(r[k], k)])),
      state: r["state"],
      ts: (r["ts"] as Date).getTime(),
    })),
    minutes: minutes.rows.map((r) => ({
      ts: (r["minute"] as Date).getTime(),
      discount: toDecimal(r["avg"], "avg"),
      min_discount: toDecimal(r["min"], "min"),
      max_discount: toDecimal(r["max"], "max"),
      samples: Number(r["samples"]),
      state: r["last_state"],
      discount_raw: null,
    })),
  };
}

function migrationSuite(name: string, open: () => Promise<AnyDb>): void {
  describe(`migration 0009 on ${name}`, () => {
    let db: AnyDb;
    beforeAll(async () => {
      db = await open();
    }, 60_000);
    afterAll(() => db?.destroy());

    it("keeps every history answer, then stores, packs and expires on the new layout", { timeout: 120_000 }, async () => {
      const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo("2026_11_25_0007_x402_payments");
      expect(error).toBeUndefined();
      await writePreviousBuild(db);
      const before = { usdc: await previousAnswers(db, USDC.mint), usdt: await previousAnswers(db, USDT.mint) };
      expect(before.usdc.raw.length + before.usdt.raw.length).toBe(240);

      expect(await migrateToLatest(db)).toContain("2026_11_26_0009_compact_samples");
      const store = db as Kysely<Database>;
      for (const [mint, b] of [[USDC.mint, before.usdc], [USDT.mint, before.usdt]] as const) {
        expect(await history(store, mint, { ...ALL, bucket: "raw" })).toEqual(b.raw);
        expect(await history(store, mint, { ...ALL, bucket: "1m" })).toEqual(b.minutes);
      }
      expect(await lastSampleAt(store)).toBe(M + 119 * 1_500);

      // A re-delivered sample of a migrated minute is not stored again; a new one joins that minute's rollup.
      const again = sample(USDC.mint, M + 1_500, "0.001", { seq: 0 }); // row i = 2
      expect(await insertSamples(store, [again])).toEqual({ inserted: 0, stale: 0, minutes: 0 });
      expect(await insertSamples(store, [sample(USDC.mint, M + 59_999, "0.5", { seq: 7, state: "CRITICAL" })])).toEqual({ inserted: 1, stale: 0, minutes: 1 });
      const [newest] = (await history(store, USDC.mint, { ...ALL, bucket: "1m" })).filter((r) => r.ts === M);
      const old = before.usdc.minutes.find((r) => r.ts === M)!;
      expect(newest).toMatchObject({ samples: old.samples + 1, state: "CRITICAL", max_discount: "0.5" });

      // Packing the minute again (its packed row and the new sample) and expiring: nothing lost inside the window.
      const packed = await applyRetention(store, M + 3 * MIN);
      expect(packed.packedSamples).toBe(old.samples + 1);
      const raw = await history(store, USDC.mint, { ...ALL, bucket: "raw" });
      expect(raw.length).toBe(before.usdc.raw.length + 1);
      expect(raw.filter((r) => r.discount === "0.5")).toHaveLength(1);
      // 7 days on, the raw days are dropped whole; the rollups (90 days) stay.
      const later = await applyRetention(store, M + 9 * DAY);
      expect(later.rawDays).toBe(2);
      expect(await history(store, USDC.mint, { ...ALL, bucket: "raw" })).toEqual([]);
      expect((await history(store, USDC.mint, { ...ALL, bucket: "1m" })).length).toBe(before.usdc.minutes.length);
    });
  });
}

migrationSuite("PGlite", async () => new Kysely({ dialect: new PGliteDialect(new PGlite()) }));

describeWithPostgres("postgres", (url) => {
  migrationSuite("PostgreSQL", () => Promise.resolve(new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url(), max: 2 }) }) })));
});
