/**
 * IntakeThrottle (src/streams/intake-throttle.ts): admits a tick only while nothing presses, counts each skip, warns
 * at most every 10 s, and gives /readyz a reason while more than a tenth of the last 30 s's ticks were skipped.
 */
import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../src/clock.ts";
import { IntakeThrottle } from "../src/streams/intake-throttle.ts";

const T0 = Date.parse("2026-11-26T00:00:00Z");

describe("IntakeThrottle", () => {
  it("admits until watched pressure says no, then counts the skip and warns at most every 10 s", () => {
    const clock = new SimulatedClock(T0);
    const warns: Record<string, unknown>[] = [];
    const t = new IntakeThrottle({ clock, log: (_l, _m, f) => warns.push(f ?? {}) });
    expect(t.admit()).toBe(true); // nothing watched yet
    let why: string | null = null;
    t.watch(() => why);
    expect(t.admit()).toBe(true);
    why = "the sample projector is 900 samples behind";
    expect(t.admit()).toBe(false);
    expect(t.admit()).toBe(false);
    expect(t.skipped).toBe(2);
    expect(warns).toEqual([{ why, skipped_total: 1 }]);
    clock.set(T0 + 10_000);
    t.skip("the previous tick was still being evaluated");
    expect(warns).toHaveLength(2);
    expect(t.skipped).toBe(3);
  });

  it("reports an overload while more than a tenth of the last 30 s's ticks were skipped, and not for a rare skip", () => {
    const clock = new SimulatedClock(T0);
    const t = new IntakeThrottle({ clock });
    let why: string | null = "the sample projector is 9000 samples behind";
    t.watch(() => why);
    // Right after a start: one skip among the first three ticks is not an overload; two are.
    t.admit();
    why = null;
    t.admit();
    t.admit();
    expect(t.overload()).toBeNull();
    why = "the sample projector is 9000 samples behind";
    t.admit();
    expect(t.overload()).toMatch(/, 2 of the last 30 s's 4 ticks skipped/);
    clock.set(T0 + 31_000);
    why = null;
    // One tick a second; one skipped in twenty: keeping up.
    for (let i = 0; i < 60; i++) {
      clock.set(T0 + 31_000 + i * 1000);
      why = i % 20 === 10 ? "the sample projector is 12000 samples behind" : null;
      t.admit();
    }
    expect(t.skipped).toBe(5);
    expect(t.overload()).toBeNull();
    // Then one in three for 30 s: overloaded, with the count over the window and the last reason.
    for (let i = 60; i < 90; i++) {
      clock.set(T0 + 31_000 + i * 1000);
      why = i % 3 === 0 ? "the sample publish queue holds 15000 of 20000, no room for a tick of 10000" : null;
      t.admit();
    }
    expect(t.overload()).toBe(
      "overloaded: the feed is throttled, 10 of the last 30 s's 30 ticks skipped (the sample publish queue holds 15000 of 20000, no room for a tick of 10000)",
    );
    // Admitted ticks only, and the window moves past the skips.
    why = null;
    for (let i = 90; i < 120; i++) {
      clock.set(T0 + 31_000 + i * 1000);
      t.admit();
      if (i === 95) expect(t.overload()).toMatch(/, 8 of the last 30 s.s 30 ticks skipped/); // 66, 69, ..., 87 still in the window
    }
    expect(t.overload()).toBeNull();
    clock.set(T0 + 10 * 60_000);
    expect(t.overload()).toBeNull(); // no ticks at all in the window: nothing to judge
  });
});
