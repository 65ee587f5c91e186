/**
 * IntakeThrottle (src/streams/intake-throttle.ts): admits a tick only while nothing presses, counts each skip, warns
 * at most every 10 s, and gives /readyz a reason for 30 s after the last skip.
 */
import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../src/clock.ts";
import { IntakeThrottle } from "../src/streams/intake-throttle.ts";

describe("IntakeThrottle", () => {
  it("admits until watched pressure says no, then counts, warns once per 10 s and reports for 30 s", () => {
    const clock = new SimulatedClock(Date.parse("2026-11-26T00:00:00Z"));
    const warns: Record<string, unknown>[] = [];
    const t = new IntakeThrottle({ clock, log: (_l, _m, f) => warns.push(f ?? {}) });
    expect(t.admit()).toBe(true); // nothing watched yet
    let why: string | null = null;
    t.watch(() => why);
    expect(t.admit()).toBe(true);
    expect(t.overload()).toBeNull();
    why = "the sample projector is 900 samples behind";
    expect(t.admit()).toBe(false);
    expect(t.admit()).toBe(false);
    expect(t.skipped).toBe(2);
    expect(warns).toEqual([{ why, skipped_total: 1 }]);
    expect(t.overload()).toBe(`overloaded: the feed is throttled, 2 ticks skipped since start, the last 0 s ago (${why})`);
    clock.set(clock.now() + 10_000);
    t.skip("the previous tick was still being evaluated");
    expect(warns).toHaveLength(2);
    why = null;
    expect(t.admit()).toBe(true);
    clock.set(clock.now() + 30_000);
    expect(t.overload()).toMatch(/3 ticks skipped since start, the last 30 s ago \(the previous tick/);
    clock.set(clock.now() + 1);
    expect(t.overload()).toBeNull();
  });
});
