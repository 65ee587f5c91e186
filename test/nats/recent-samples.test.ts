/**
 * The samples an engine keeps for a take-over with a live feed (src/streams/jetstream/recent-samples.ts): kept in
 * arrival order with the instant they were evaluated at, evicted by wall-clock age and by a per-asset cap, and a gap
 * reported when what the new owner needs was evicted.
 */
import { describe, expect, it } from "vitest";
import { D, type Sample } from "../../src/methodology/index.ts";
import { RecentSamples } from "../../src/streams/jetstream/recent-samples.ts";

const sample = (asset: string, ts: number): Sample => ({
  asset,
  ts,
  intrinsic_usd: D("1"),
  market_usd: D("0.999"),
  intrinsic_sol: null,
  market_sol: null,
  cr: null,
  oracle: {},
  intrinsic_stale: false,
});

describe("RecentSamples", () => {
  it("returns one asset's samples after an instant, in arrival order, with their evaluation instants", () => {
    const r = new RecentSamples({ windowMs: 10_000, maxPerAsset: 100 });
    for (const ts of [1_000, 2_000, 3_000]) r.record(sample("USDC", ts), ts + 5, ts);
    r.record(sample("USDT", 2_500), 2_505, 2_500);
    const got = r.since("USDC", 1_000);
    expect(got.samples.map((k) => [k.sample.ts, k.at])).toEqual([
      [2_000, 2_005],
      [3_000, 3_005],
    ]);
    expect(got.gapUpTo).toBeNull();
    expect(r.since("USDT", -Infinity).samples).toHaveLength(1);
    expect(r.since("PYUSD", -Infinity)).toEqual({ samples: [], gapUpTo: null });
    expect(r.size).toBe(4);
  });

  it("evicts by wall-clock age (not the feed's clock) and reports a gap only when a needed sample is gone", () => {
    const r = new RecentSamples({ windowMs: 1_000, maxPerAsset: 100 });
    // A scenario at 30x: the feed's instants run far ahead of the wall clock, which alone decides eviction.
    for (let i = 0; i < 20; i++) r.record(sample("USDC", 1_000_000 + i * 3_000), 1_000_000 + i * 3_000, 50_000 + i * 100);
    expect(r.size).toBe(11); // arrived within the last 1,000 ms of wall time (inclusive)
    const all = r.since("USDC", -Infinity);
    expect(all.samples[0]!.sample.ts).toBe(1_000_000 + 9 * 3_000);
    expect(all.gapUpTo).toBe(1_000_000 + 8 * 3_000);
    // The restored state is newer than everything evicted: complete.
    expect(r.since("USDC", 1_000_000 + 8 * 3_000).gapUpTo).toBeNull();
  });

  it("keeps at most maxPerAsset per asset, and compacts as it goes", () => {
    const r = new RecentSamples({ windowMs: 1e12, maxPerAsset: 50 });
    for (let i = 1; i <= 10_000; i++) r.record(sample("USDC", i), i, i);
    expect(r.size).toBe(50);
    const got = r.since("USDC", 0);
    expect(got.samples.map((k) => k.sample.ts)).toEqual(Array.from({ length: 50 }, (_, i) => 9_951 + i));
    expect(got.gapUpTo).toBe(9_950);
  });

  it("refuses a window or cap that cannot keep anything", () => {
    expect(() => new RecentSamples({ windowMs: 0, maxPerAsset: 1 })).toThrow(RangeError);
    expect(() => new RecentSamples({ windowMs: 1, maxPerAsset: 0 })).toThrow(RangeError);
  });
});
