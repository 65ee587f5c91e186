/**
 * The scaled clock of scenario feeds, in particular one created paused: it reads its origin and holds its timers
 * until started, so a restarted service's recovered dwell timers cannot fire while the rest of it is still starting
 * (the samples that precede their deadlines only arrive once the intake starts).
 */
import { describe, expect, it } from "vitest";
import { ScaledClock, SimulatedClock } from "../src/clock.ts";

describe("ScaledClock", () => {
  it("runs speed times faster than its base from its origin, timers scaled alike", () => {
    const base = new SimulatedClock(1_000);
    const c = new ScaledClock(50_000, 10, base);
    const fired: number[] = [];
    c.setTimeout(() => fired.push(c.now()), 1_000); // 1 s of scenario time = 100 ms of base time
    base.set(1_099);
    expect(fired).toEqual([]);
    base.set(1_100);
    expect(fired).toEqual([51_000]);
    expect(c.now()).toBe(51_000);
  });

  it("created paused, reads its origin and holds timers until start, then runs from the origin", () => {
    const base = new SimulatedClock(1_000);
    const c = new ScaledClock(50_000, 10, base, { paused: true });
    const fired: string[] = [];
    c.setTimeout(() => fired.push(`a@${c.now()}`), 1_000);
    const cleared = c.setTimeout(() => fired.push("cleared"), 500);
    c.clearTimeout(cleared);
    base.set(60_000); // a long start-up: nothing moves
    expect(c.now()).toBe(50_000);
    expect(fired).toEqual([]);
    expect(base.pending).toBe(0);

    c.start();
    c.start(); // idempotent
    expect(c.now()).toBe(50_000);
    const cancelledAfterStart = c.setTimeout(() => fired.push("cancelled"), 10_000);
    c.setTimeout(() => fired.push(`b@${c.now()}`), 2_000);
    c.clearTimeout(cancelledAfterStart);
    base.set(60_100);
    expect(fired).toEqual(["a@51000"]);
    base.set(60_200);
    expect(fired).toEqual(["a@51000", "b@52000"]);
    base.set(70_000);
    expect(fired).toEqual(["a@51000", "b@52000"]);
  });

  it("a held timer cleared after start does not fire", () => {
    const base = new SimulatedClock(0);
    const c = new ScaledClock(0, 1, base, { paused: true });
    let fired = false;
    const t = c.setTimeout(() => (fired = true), 100);
    c.start();
    c.clearTimeout(t);
    base.set(1_000);
    expect(fired).toBe(false);
  });
});
