import { describe, expect, it } from "vitest";
import { MAX_ATTEMPTS, RETRY_WAITS_MS } from "../../src/delivery/policy.ts";
import { MAX_RETRY_AFTER_MS, firstAttempt, nextAttempt, waitBefore, type NextAttempt } from "../../src/delivery/schedule.ts";

const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);
const MIN = 60_000;

describe("nextAttempt", () => {
  it("waits 0 s, 5 s, 30 s, 5 min, 30 min, 2 h, then dead-letters after the sixth failure", () => {
    expect(firstAttempt(T0)).toEqual({ attempt: 1, at: T0 });
    const waits: number[] = [];
    let at = T0;
    for (let n = 1; n < MAX_ATTEMPTS; n++) {
      const next = nextAttempt(n, at, null) as NextAttempt;
      expect(next.attempt).toBe(n + 1);
      waits.push(next.at - at);
      at = next.at;
    }
    expect(waits).toEqual([5_000, 30_000, 5 * MIN, 30 * MIN, 120 * MIN]);
    expect(nextAttempt(6, at, null)).toBe("dead_letter");
    // About 2 h 35 min from the first attempt to the last one (interface 6.4).
    expect(at - T0).toBe(2 * 3_600_000 + 35 * MIN + 35_000);
  });

  it("honours a 429 Retry-After only when it is longer than the scheduled wait", () => {
    expect(nextAttempt(1, T0, 2_000)).toEqual({ attempt: 2, at: T0 + 5_000 });
    expect(nextAttempt(1, T0, 5_000)).toEqual({ attempt: 2, at: T0 + 5_000 });
    expect(nextAttempt(1, T0, 60_000)).toEqual({ attempt: 2, at: T0 + 60_000 });
    expect(nextAttempt(4, T0, 10 * MIN)).toEqual({ attempt: 5, at: T0 + 30 * MIN });
    expect(nextAttempt(2, T0, 0)).toEqual({ attempt: 3, at: T0 + 30_000 });
  });

  it("caps an absurd Retry-After at 24 h and still dead-letters after the sixth attempt", () => {
    expect(nextAttempt(1, T0, 365 * 24 * 3_600_000)).toEqual({ attempt: 2, at: T0 + MAX_RETRY_AFTER_MS });
    expect(nextAttempt(6, T0, 60_000)).toBe("dead_letter");
    expect(nextAttempt(1, T0, Number.POSITIVE_INFINITY)).toEqual({ attempt: 2, at: T0 + 5_000 });
  });

  it("scales every wait: under 1/1000 the whole schedule waits 9,335 ms", () => {
    const scale = 1 / 1000;
    expect(RETRY_WAITS_MS.map((_, i) => waitBefore(i + 1, scale))).toEqual([0, 5, 30, 300, 1800, 7200]);
    expect(nextAttempt(1, T0, null, scale)).toEqual({ attempt: 2, at: T0 + 5 });
    expect(nextAttempt(1, T0, 60_000, scale)).toEqual({ attempt: 2, at: T0 + 60 });
    expect(firstAttempt(T0, scale)).toEqual({ attempt: 1, at: T0 });
    expect(nextAttempt(6, T0, null, scale)).toBe("dead_letter");
  });

  it("refuses attempt numbers outside 1..6 and non-positive scales", () => {
    for (const bad of [0, 7, 1.5, -1, Number.NaN]) expect(() => nextAttempt(bad, T0, null)).toThrow(RangeError);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => nextAttempt(1, T0, null, bad)).toThrow(RangeError);
    expect(() => waitBefore(0)).toThrow(RangeError);
  });
});
