/**
 * Days of history through retention on a scaled clock (issue 25, item 3): 9 simulated days of samples for 20 assets,
 * one every 20 minutes (each its own minute partition, packed and dropped), with retention passes every simulated hour and short windows (raw 1 day, rollups 3 days). Once
 * the windows are full, the history tables stop growing (their size at the end of each day stays within one day's
 * partitions), and every sample and rollup inside its window is still there, exactly once.
 */
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { openStore, type SampleRow, type Store } from "../../src/store/index.ts";
import { describeWithPostgres } from "../support/postgres.ts";
import { DAY, catalog, sample } from "./fixtures.ts";

const ASSETS = catalog.active.slice(0, 20);
const EVERY_MS = 20 * 60_000;
const HOUR = 3_600_000;
const DAYS = 9;
const WINDOWS = { rawMs: 1 * DAY, rollupMs: 3 * DAY };
const START = Date.UTC(2026, 0, 1);

/** Bytes of every history table (partitions, TOAST and indexes included). */
async function historyBytes(store: Store): Promise<number> {
  const r = await sql<{ b: string | number }>`
    select coalesce(sum(pg_total_relation_size(c.oid)), 0) as b
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent in ('sample_rows'::regclass, 'sample_minutes'::regclass, 'rollup_minutes'::regclass)`.execute(store.db);
  return Number(r.rows[0]!.b);
}

async function runDays(open: (clock: SimulatedClock) => Promise<Store>): Promise<void> {
  const clock = new SimulatedClock(START);
  const store = await open(clock);
  try {
    await store.upsertAssets(ASSETS);
    const sizes: number[] = [];
    for (let day = 0; day < DAYS; day++) {
      for (let hour = 0; hour < 24; hour++) {
        const rows: SampleRow[] = [];
        for (let t = clock.now(); t < clock.now() + HOUR; t += EVERY_MS) {
          for (const [i, a] of ASSETS.entries()) rows.push(sample(a.mint, t, `0.000${(t / EVERY_MS + i) % 97}`));
        }
        expect((await store.insertSamples(rows)).inserted).toBe(rows.length);
        clock.increment(HOUR);
        await store.applyRetention();
      }
      sizes.push(await historyBytes(store));
    }
    // Flat once the rollup window (3 days) and a day of slack are full: from day 5 on the sizes differ by at most a
    // day's partitions (one is dropped as one fills), and the last day is no bigger than day 4 plus that.
    const steady = sizes.slice(5);
    const perDay = (sizes[1]! - sizes[0]!) * 2;
    expect(Math.max(...steady) - Math.min(...steady)).toBeLessThanOrEqual(perDay);
    expect(sizes.at(-1)!).toBeLessThan(sizes[4]! + perDay);

    // Nothing lost inside the windows: every sample of the last day, every rollup of the last 3 days.
    const now = clock.now();
    for (const a of [ASSETS[0]!, ASSETS[19]!]) {
      const raw = await store.history(a.mint, { bucket: "raw", from: now - WINDOWS.rawMs, to: now, limit: 100_000 });
      expect(raw.length).toBe(WINDOWS.rawMs / EVERY_MS);
      expect(new Set(raw.map((r) => r.ts)).size).toBe(raw.length);
      const minutes = await store.history(a.mint, { bucket: "1m", from: now - WINDOWS.rollupMs, to: now, limit: 100_000 });
      expect(minutes.length).toBe(WINDOWS.rollupMs / EVERY_MS);
      expect(minutes.every((m) => m.samples === 1)).toBe(true);
    }
    // And what lies past a window (plus the day a partition may hold on to) is gone.
    const old = await store.history(ASSETS[0]!.mint, { bucket: "raw", from: 0, to: now - WINDOWS.rawMs - DAY - 1, limit: 10 });
    expect(old).toEqual([]);
    const partitions = await sql<{ n: string | number }>`
      select count(*) as n from pg_inherits where inhparent = 'sample_rows'::regclass`.execute(store.db);
    // Only the minutes not yet closed are still unpacked.
    expect(Number(partitions.rows[0]!.n)).toBeLessThanOrEqual(2);
  } finally {
    await store.close();
  }
}

describe("retention over simulated days", () => {
  test("pglite: sizes flat after the window, nothing lost inside it", { timeout: 600_000 }, () =>
    runDays((clock) => openStore({ kind: "pglite-memory" }, clock, WINDOWS)));
});

describeWithPostgres("retention over simulated days on postgres", (url) => {
  test("postgres: sizes flat after the window, nothing lost inside it", { timeout: 600_000 }, () =>
    runDays((clock) => openStore({ kind: "postgres", url: url(), max: 2 }, clock, WINDOWS)));
});
