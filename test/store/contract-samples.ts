/** Store contract, part 3: raw samples, 1-minute rollups, history, retention. */
import fc from "fast-check";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import {
  RAW_RETENTION_MS,
  ROLLUP_RETENTION_MS,
  history,
  insertSamples,
  startRetention,
  type SampleRow,
} from "../../src/store/index.ts";
import { calibrationFigures, windows24h } from "../../src/store/readmodel.ts";
import type { ContractContext } from "./contract.ts";
import { DAY, MIN, USDC, USDT, catalog, sample } from "./fixtures.ts";

export function sampleContract(ctx: ContractContext): void {
  /** A whole minute comfortably inside raw retention of the suite clock. */
  const minute = (): number => Math.floor(ctx.clock.now() / MIN) * MIN - 10 * MIN;
  const rollups = (mint = USDC.mint) => history(ctx.store.db, mint, { bucket: "1m", from: 0, to: 2 ** 42, limit: 100 });
  const raw = (mint = USDC.mint) => history(ctx.store.db, mint, { bucket: "raw", from: 0, to: 2 ** 42, limit: 1000 });

  describe("samples and rollups", () => {
    test("decimals come back as the exact strings written, never numbers", async () => {
      await ctx.store.upsertAssets([USDC]);
      const m = minute();
      const exact = "0.0123456789012345678901234567890123";
      await ctx.store.insertSamples([sample(USDC.mint, m + 1, exact, { discount_raw: "-0.0000000000000000000000000000000000000001" })]);
      const [row] = await raw();
      expect(row).toEqual({
        ts: m + 1,
        discount: exact,
        discount_raw: "-0.0000000000000000000000000000000000000001",
        state: "PEGGED",
        market_usd: "0.9990000000000000000000000000000001",
        intrinsic_usd: "1",
      });
      const [r1] = await rollups();
      expect(r1).toEqual({ ts: m, discount: exact, min_discount: exact, max_discount: exact, samples: 1, state: "PEGGED", discount_raw: null });
    });

    test("re-delivering a batch changes nothing (raw rows and rollups)", async () => {
      await ctx.store.upsertAssets([USDC, USDT]);
      const m = minute();
      const batch: SampleRow[] = [
        sample(USDC.mint, m + 1_000, "0.001"),
        sample(USDC.mint, m + 2_000, "0.002"),
        sample(USDC.mint, m + MIN + 5, "0.003", { state: "DRIFT" }),
        sample(USDT.mint, m + 3_000, "-0.004"),
      ];
      expect(await ctx.store.insertSamples(batch)).toEqual({ inserted: 4, stale: 0, minutes: 3 });
      const [raw1, roll1] = [await raw(), await rollups()];
      // Nothing new stored, so no rollup is touched.
      expect(await ctx.store.insertSamples(batch)).toEqual({ inserted: 0, stale: 0, minutes: 0 });
      expect(await ctx.store.insertSamples([...batch, batch[0]!])).toEqual({ inserted: 0, stale: 0, minutes: 0 });
      expect(await raw()).toEqual(raw1);
      expect(await rollups()).toEqual(roll1);
      expect(roll1.map((r) => r.samples)).toEqual([1, 2]);
    });

    test("a minute split over two batches (late rows included) rolls up avg/min/max/count/last state", async () => {
      await ctx.store.upsertAssets([USDC]);
      const m = minute();
      await ctx.store.insertSamples([
        sample(USDC.mint, m + 10_000, "0.001"),
        sample(USDC.mint, m + 50_000, "0.003", { state: "DRIFT" }),
        sample(USDC.mint, m + 50_000, "-0.002", { seq: 1, state: "DEPEG" }),
      ]);
      expect((await rollups())[0]).toMatchObject({ samples: 3, state: "DEPEG", min_discount: "-0.002", max_discount: "0.003" });
      // Second batch: one row later in the minute, one late-arriving earlier row.
      await ctx.store.insertSamples([sample(USDC.mint, m + 59_999, "0.004", { state: "CRITICAL" }), sample(USDC.mint, m, "0.01")]);
      const [r] = await rollups();
      expect(r).toEqual({
        ts: m,
        discount: "0.0032",
        min_discount: "-0.002",
        max_discount: "0.01",
        samples: 5,
        state: "CRITICAL",
        discount_raw: null,
      });
      expect(typeof r!.samples).toBe("number");
    });

    test("concurrent batches into one minute lose no row from the rollup", async () => {
      await ctx.store.upsertAssets([USDC]);
      const m = minute();
      const batches = Array.from({ length: 24 }, (_, i) => [sample(USDC.mint, m + i * 1_000, `0.00${i % 10}`, { seq: i })]);
      await Promise.all(batches.map((b) => ctx.store.insertSamples(b)));
      const [r] = await rollups();
      expect(r).toMatchObject({ ts: m, samples: 24, min_discount: "0", max_discount: "0.009" });
    });

    test("incremental rollups equal a recompute from the raw rows, whatever the batches (splits, re-deliveries, ties)", async () => {
      await ctx.store.upsertAssets([USDC, USDT]);
      const m = minute() - 3 * MIN;
      const state = fc.constantFrom("PEGGED", "DRIFT", "DEPEG", "UNKNOWN" as const);
      const row = fc.record({
        usdt: fc.boolean(),
        // Three minutes, few distinct instants, so same-instant ties (seq 0 and 1) and whole-row repeats happen.
        at: fc.integer({ min: 0, max: 179 }).map((s) => m + s * 1_000),
        seq: fc.integer({ min: 0, max: 1 }),
        // Long decimals: the average must be exact to the last digit, not a float's.
        discount: fc.tuple(fc.integer({ min: -5_000_000, max: 5_000_000 }), fc.integer({ min: 0, max: 30 })).map(([v, scale]) => (v / 10 ** 7).toFixed(7) + "1".repeat(scale)),
        state,
      });
      const batches = fc.array(fc.array(row, { minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 6 });
      await fc.assert(
        fc.asyncProperty(batches, fc.boolean(), async (bs, concurrently) => {
          await sql`truncate sample_rows, sample_minutes, rollup_minutes`.execute(ctx.store.db);
          const rowsOf = (b: (typeof bs)[number]) =>
            b.map((r) => sample(r.usdt ? USDT.mint : USDC.mint, r.at, r.discount, { seq: r.seq, state: r.state }));
          // Each batch once, then the first again (a re-delivery).
          const all = [...bs, bs[0]!].map(rowsOf);
          if (concurrently) await Promise.all(all.map((b) => ctx.store.insertSamples(b)));
          else for (const b of all) await ctx.store.insertSamples(b);
          const stored = await sql<Record<string, unknown>>`
            select mint, minute, avg_discount::text as avg, min_discount::text as min, max_discount::text as max, samples, last_state,
                   last_ts from rollups_1m order by mint, minute`.execute(ctx.store.db);
          const recomputed = await sql<Record<string, unknown>>`
            select mint, date_bin('1 minute', ts, timestamptz '1970-01-01T00:00:00Z') as minute, avg(discount)::text as avg,
                   min(discount)::text as min, max(discount)::text as max, count(*)::integer as samples,
                   (array_agg(state order by ts desc, seq desc))[1] as last_state, max(ts) as last_ts
            from samples group by 1, 2 order by 1, 2`.execute(ctx.store.db);
          expect(stored.rows).toEqual(recomputed.rows);
        }),
        { numRuns: 25 },
      );
    });

    test("packing closed minutes changes no answer: raw windows and limits, rollups, late and re-delivered rows", async () => {
      await ctx.store.upsertAssets([USDC]);
      const m = minute() - 4 * MIN;
      const row = fc.record({
        at: fc.integer({ min: 0, max: 239 }).map((s) => m + s * 1_000),
        seq: fc.integer({ min: 0, max: 1 }),
      });
      // A re-delivered sample carries what it carried the first time.
      const discountOf = (at: number, seq: number) => String((((at / 1_000) * 7 + seq * 13) % 1999) / 1e4);
      // Batches, each followed (or not) by a packing pass at a random instant: later batches bring late rows of
      // packed minutes and re-deliveries of packed rows.
      const steps = fc.array(fc.tuple(fc.array(row, { minLength: 1, maxLength: 30 }), fc.option(fc.integer({ min: 0, max: 6 }))), {
        minLength: 1,
        maxLength: 5,
      });
      const query = fc.record({ from: fc.integer({ min: -5, max: 245 }), span: fc.integer({ min: 0, max: 250 }), limit: fc.integer({ min: 1, max: 80 }) });
      await fc.assert(
        fc.asyncProperty(steps, fc.array(query, { minLength: 3, maxLength: 3 }), async (ss, qs) => {
          await sql`truncate sample_rows, sample_minutes, rollup_minutes`.execute(ctx.store.db);
          const kept = new Map<string, SampleRow>();
          for (const [batch, packAt] of ss) {
            const rows = batch.map((r) => sample(USDC.mint, r.at, discountOf(r.at, r.seq), { seq: r.seq }));
            for (const r of rows) if (!kept.has(`${r.ts}|${r.seq}`)) kept.set(`${r.ts}|${r.seq}`, r);
            await ctx.store.insertSamples(rows);
            if (packAt !== null) await ctx.store.applyRetention(m + packAt * MIN);
          }
          const all = [...kept.values()].sort((a, b) => b.ts - a.ts || b.seq - a.seq);
          for (const q of qs) {
            const from = m + q.from * 1_000;
            const to = from + q.span * 1_000;
            const want = all.filter((r) => r.ts >= from && r.ts <= to).slice(0, q.limit).map((r) => [r.ts, r.discount]);
            const got = await ctx.store.history(USDC.mint, { bucket: "raw", from, to, limit: q.limit });
            expect(got.map((r) => [r.ts, r.discount])).toEqual(want);
          }
          const minutes = await rollups();
          expect(minutes.reduce((n, r) => n + r.samples, 0)).toBe(all.length);
          expect(await ctx.store.lastSampleAt(USDC.mint)).toBe(all[0]!.ts);
        }),
        { numRuns: 8 },
      );
    }, 120_000);

    test("packing closed days of rollups changes no answer; late samples of a packed day add up as a recompute", async () => {
      await ctx.store.upsertAssets([USDC, USDT]);
      const today = Math.floor(ctx.clock.now() / DAY) * DAY;
      const y = today - DAY;
      const states = ["PEGGED", "DRIFT", "DEPEG", "UNKNOWN"] as const;
      // Yesterday (to be packed) and today (open): ties within a millisecond, long and short decimals, two assets.
      const rows: SampleRow[] = [];
      for (let i = 0; i < 90; i++) {
        const at = (i < 60 ? y + (i % 6) * 7 * MIN : today) + Math.floor(i / 6) * 3_000;
        rows.push(sample(i % 3 === 0 ? USDT.mint : USDC.mint, at, `${i % 4 === 0 ? "-" : ""}0.00${i}${"7".repeat(i % 31)}`, { seq: i % 2, state: states[i % 4]! }));
      }
      // Yesterday's rows arrive in two batches, so its minutes are upserted more than once before packing.
      await insertSamples(ctx.store.db, rows.filter((_, i) => i % 2 === 0));
      await insertSamples(ctx.store.db, rows.filter((_, i) => i % 2 === 1));
      const view = async () =>
        (
          await sql<Record<string, unknown>>`
            select mint, minute, avg_discount::text as avg, min_discount::text as min, max_discount::text as max, samples, last_state,
                   last_ts, sum_discount::text as sum, last_seq from rollups_1m order by mint, minute`.execute(ctx.store.db)
        ).rows;
      const answers = async () => ({
        view: await view(),
        usdc: await rollups(USDC.mint),
        usdt: await rollups(USDT.mint),
        // Windows that start and end inside the packed day, across the day boundary, and a limit inside the day.
        inside: await history(ctx.store.db, USDC.mint, { bucket: "1m", from: y + 7 * MIN, to: y + 21 * MIN, limit: 100 }),
        across: await history(ctx.store.db, USDT.mint, { bucket: "1m", from: y + 30 * MIN, to: today + MIN, limit: 100 }),
        limited: await history(ctx.store.db, USDC.mint, { bucket: "1m", from: 0, to: 2 ** 42, limit: 3 }),
        // The read models that aggregate rollups over windows (the overview's 24 h, calibration's 7 days).
        day: [...(await windows24h(ctx.store.db, today + 20 * MIN)).entries()],
        calibration: await calibrationFigures(ctx.store.db, today + 20 * MIN),
      });
      const before = await answers();
      expect(before.usdc.length).toBe(5);
      expect(before.day.length).toBe(2);
      expect(before.calibration.find((c) => c.mint === USDC.mint)).toMatchObject({ days_covered: 2 });

      const pass = await ctx.store.applyRetention(today + 20 * MIN);
      expect(pass.packedRollupDays).toBe(1);
      const packed = await sql<{ n: number | string }>`select count(*) as n from rollup_days where n > 1`.execute(ctx.store.db);
      expect(Number(packed.rows[0]!.n)).toBe(2);
      expect(await answers()).toEqual(before);

      // Late samples of the packed day: into a minute it holds (a later last state), into a minute it does not hold
      // (inserted in minute order), for an asset it does not hold yet, and a re-delivery (no change).
      await ctx.store.upsertAssets([USDC, USDT, catalog.bySymbol("PYUSD")!]);
      const late = [
        sample(USDC.mint, y + 7 * MIN + 59_000, "0.123456789012345678901234567890123", { seq: 5, state: "CRITICAL" }),
        sample(USDC.mint, y + 3 * MIN + 1, "-0.5"),
        sample(USDT.mint, y + 23 * 60 * MIN + 5, "0.25"),
        sample(catalog.bySymbol("PYUSD")!.mint, y + 10 * MIN, "0.01"),
        rows[1]!,
      ];
      expect(await insertSamples(ctx.store.db, late)).toMatchObject({ inserted: 4, minutes: 4 });
      const recompute = async () =>
        (
          await sql<Record<string, unknown>>`
            select mint, date_bin('1 minute', ts, timestamptz '1970-01-01T00:00:00Z') as minute, avg(discount)::text as avg,
                   min(discount)::text as min, max(discount)::text as max, count(*)::integer as samples,
                   (array_agg(state order by ts desc, seq desc))[1] as last_state, max(ts) as last_ts, sum(discount)::text as sum,
                   (array_agg(seq order by ts desc, seq desc))[1] as last_seq
            from samples group by 1, 2 order by 1, 2`.execute(ctx.store.db)
        ).rows;
      const want = await recompute();
      expect(await view()).toEqual(want);
      // Packing again (the day's partition the late inserts recreated, empty) changes nothing.
      await ctx.store.applyRetention(today + 30 * MIN);
      expect(await view()).toEqual(want);
      const minute = (await rollups(USDC.mint)).find((r) => r.ts === y + 7 * MIN)!;
      expect(minute.state).toBe("CRITICAL");
    });

    test("history: shapes, newest first, limit and inclusive from/to", async () => {
      await ctx.store.upsertAssets([USDC]);
      const m = minute() - 5 * MIN;
      const rows = [0, 1, 2, 3, 4].map((i) => sample(USDC.mint, m + i * MIN + 30_000, `0.00${i}`));
      await ctx.store.insertSamples(rows);
      const q = { from: m + MIN + 30_000, to: m + 3 * MIN + 30_000, limit: 10 };
      const r = await ctx.store.history(USDC.mint, { ...q, bucket: "raw" });
      expect(r.map((x) => x.ts)).toEqual([m + 3 * MIN + 30_000, m + 2 * MIN + 30_000, m + MIN + 30_000]);
      expect(Object.keys(r[0]!).sort()).toEqual(["discount", "discount_raw", "intrinsic_usd", "market_usd", "state", "ts"]);
      const one = await ctx.store.history(USDC.mint, { ...q, bucket: "raw", limit: 1 });
      expect(one.map((x) => x.discount)).toEqual(["0.003"]);
      const b = await ctx.store.history(USDC.mint, { from: m + MIN, to: m + 3 * MIN, limit: 2, bucket: "1m" });
      expect(b.map((x) => x.ts)).toEqual([m + 3 * MIN, m + 2 * MIN]);
      expect(Object.keys(b[0]!).sort()).toEqual(["discount", "discount_raw", "max_discount", "min_discount", "samples", "state", "ts"]);
      expect(b[0]!.discount_raw).toBeNull();
      expect(await ctx.store.history(USDT.mint, { ...q, bucket: "1m" })).toEqual([]);
    });

    test("lastSampleAt: newest instant overall and per asset, null when empty", async () => {
      await ctx.store.upsertAssets([USDC, USDT]);
      expect(await ctx.store.lastSampleAt()).toBeNull();
      const m = minute();
      await ctx.store.insertSamples([sample(USDC.mint, m + 7, "0"), sample(USDT.mint, m + 9, "0")]);
      expect(await ctx.store.lastSampleAt()).toBe(m + 9);
      expect(await ctx.store.lastSampleAt(USDC.mint)).toBe(m + 7);
    });

    test("rows whose minute is past raw retention are refused, so no rollup is rebuilt from partial rows", async () => {
      await ctx.store.upsertAssets([USDC]);
      const now = ctx.clock.now();
      const old = sample(USDC.mint, now - RAW_RETENTION_MS - MIN, "0.5");
      expect(await ctx.store.insertSamples([old, sample(USDC.mint, now - MIN, "0.1")])).toEqual({ inserted: 1, stale: 1, minutes: 1 });
      expect((await raw()).map((r) => r.discount)).toEqual(["0.1"]);
    });
  });

  describe("retention", () => {
    test("drops whole day partitions past each window, keeping at least the window", async () => {
      await ctx.store.upsertAssets([USDC]);
      const now = Math.floor(ctx.clock.now() / MIN) * MIN;
      const dayOf = (ms: number) => Math.floor(ms / DAY) * DAY;
      const rawCut = now - RAW_RETENTION_MS;
      const rollCut = now - ROLLUP_RETENTION_MS;
      // Written with the repository (no retention guard) to place rows on both sides of each cutoff.
      await insertSamples(ctx.store.db, [
        sample(USDC.mint, dayOf(rawCut) - 1, "0.1"), // the day before the raw window's first day: dropped
        sample(USDC.mint, rawCut - 1, "0.2"), // before the window, in its first day: kept
        sample(USDC.mint, rawCut, "0.3"),
        sample(USDC.mint, dayOf(rollCut) - MIN, "0.4"), // the day before the rollup window's first day: dropped
        sample(USDC.mint, rollCut - MIN, "0.5"),
      ]);
      expect((await rollups()).length).toBe(5);
      expect(await ctx.store.applyRetention(now)).toMatchObject({ packedMinutes: 5, packedSamples: 5, rawDays: 3, rollupDays: 1 });
      expect((await raw()).map((r) => r.ts)).toEqual([rawCut, rawCut - 1]);
      // Rollups outlive their raw rows.
      expect((await rollups()).map((r) => r.ts)).toEqual([rawCut, rawCut - MIN, dayOf(rawCut) - MIN, rollCut - MIN]);
      expect(await ctx.store.applyRetention(now)).toEqual({ packedMinutes: 0, packedSamples: 0, packedRollupDays: 0, rawDays: 0, rollupDays: 0, bytesFreed: 0 });
    });

    test("startRetention runs on the injected clock until stopped", async () => {
      await ctx.store.upsertAssets([USDC]);
      const every = 60_000;
      const passes: number[] = [];
      const until = async (n: number) => {
        for (let i = 0; i < 200 && passes.length < n; i++) await new Promise((r) => setTimeout(r, 5));
      };
      const stop = startRetention(ctx.store, ctx.clock, every, { onPass: (r) => passes.push(r.rawDays) });
      await until(1);
      expect(passes).toEqual([0]);
      await insertSamples(ctx.store.db, [sample(USDC.mint, ctx.clock.now() - RAW_RETENTION_MS - DAY, "0")]);
      ctx.clock.increment(every);
      await until(2);
      expect(passes).toEqual([0, 1]);
      await stop();
      ctx.clock.increment(10 * every);
      await new Promise((r) => setTimeout(r, 20));
      expect(passes).toEqual([0, 1]);
    });
  });
}
