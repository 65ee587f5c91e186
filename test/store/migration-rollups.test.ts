/**
 * Migration 0006 (incremental rollups) on a database written by the previous build: every rollup whose raw rows are
 * stored gets their exact sum and the seq of its last row, so the next batch adds to the right figures; a minute
 * past raw retention keeps `avg * samples`.
 */
import { PGlite } from "@electric-sql/pglite";
import { Kysely, Migrator, sql } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import { afterAll, describe, expect, it } from "vitest";
import { migrationProvider, migrateToLatest } from "../../src/store/migrate.ts";
import { insertSamples } from "../../src/store/samples.ts";
import type { Database } from "../../src/store/schema.ts";
import { USDC, sample } from "./fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const db = new Kysely<any>({ dialect: new PGliteDialect(new PGlite()) });
afterAll(() => db.destroy());

describe("migration 0006", () => {
  it("backfills exact sums and last seqs from the raw rows, so incremental rollups carry on from them", { timeout: 120_000 }, async () => {
    const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo("2026_11_21_0005_anchoring");
    expect(error).toBeUndefined();
    await sql`insert into assets (mint, symbol, class, active, entry, updated_at) values (${USDC.mint}, 'USDC', 'fiat', true, '{}', now())`.execute(db);
    const m = Date.UTC(2026, 10, 25, 10, 0, 0);
    // As the previous build stored them: raw rows, and rollups recomputed from them.
    await sql`insert into samples (mint, ts, seq, discount, discount_raw, state, market_usd, intrinsic_usd) values
      (${USDC.mint}, ${new Date(m + 1_000).toISOString()}, 0, 0.0011, 0, 'PEGGED', 1, 1),
      (${USDC.mint}, ${new Date(m + 2_000).toISOString()}, 0, 0.0022, 0, 'DRIFT', 1, 1),
      (${USDC.mint}, ${new Date(m + 2_000).toISOString()}, 1, 0.0033, 0, 'DEPEG', 1, 1)`.execute(db);
    await sql`insert into rollups_1m (mint, minute, avg_discount, min_discount, max_discount, samples, last_state, last_ts)
      select mint, ${new Date(m).toISOString()}::timestamptz, avg(discount), min(discount), max(discount), count(*), 'DEPEG', max(ts) from samples group by mint`.execute(db);
    // A minute whose raw rows retention already deleted.
    await sql`insert into rollups_1m (mint, minute, avg_discount, min_discount, max_discount, samples, last_state, last_ts)
      values (${USDC.mint}, ${new Date(m - 30 * 86_400_000).toISOString()}, 0.5, 0.1, 0.9, 4, 'PEGGED', ${new Date(m - 30 * 86_400_000 + 5).toISOString()})`.execute(db);

    // 0006 first (later migrations follow it).
    expect((await migrateToLatest(db))[0]).toBe("2026_11_25_0006_incremental_rollups");
    const rows = await sql<{ sum: string; last_seq: number; minute: Date }>`select sum_discount::text as sum, last_seq, minute from rollups_1m order by minute`.execute(db);
    expect(rows.rows.map((r) => [r.sum, r.last_seq])).toEqual([["2.0", 0], ["0.0066", 1]]);

    // The next batch of that minute adds to the backfilled figures: the average is the exact mean of four rows.
    await insertSamples(db as Kysely<Database>, [sample(USDC.mint, m + 3_000, "0.0044")]);
    const r = await sql<{ avg: string; samples: number; last_state: string }>`select avg_discount::text as avg, samples, last_state from rollups_1m where minute = ${new Date(m).toISOString()}`.execute(db);
    expect(r.rows[0]).toEqual({ avg: "0.00275000000000000000", samples: 4, last_state: "PEGGED" });
  });
});
