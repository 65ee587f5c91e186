/**
 * The scaled clock of scenario feeds, in particular one created paused: it reads its origin and holds its timers
 * until started, so a restarted service's recovered dwell timers cannot fire while the rest of it is still starting
 * (the samples that precede their deadlines only arrive once the intake starts); and its timers fire in scenario
 * order with the feed's, however late the event loop runs (test/faults/crash.test.ts under load).
 */
import { describe, expect, it } from "vitest";
import { ScaledClock, SimulatedClock, type AfterDueTimers, type Clock } from "../src/clock.ts";

/** On a simulated base, a due timer fires at once (there is no event loop to wait on). */
const atOnce: AfterDueTimers = (fn) => fn();

/** Blocks the event loop for `ms`, as a loaded machine or a long GC does. */
const stall = (ms: number): void => {
  const end = Date.now() + ms;
  while (Date.now() < end);
};

describe("ScaledClock", () => {
  it("runs speed times faster than its base from its origin, timers scaled alike", () => {
    const base = new SimulatedClock(1_000);
    const c = new ScaledClock(50_000, 10, base, { afterDueTimers: atOnce });
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
    const c = new ScaledClock(50_000, 10, base, { paused: true, afterDueTimers: atOnce });
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
    const c = new ScaledClock(0, 1, base, { paused: true, afterDueTimers: atOnce });
    let fired = false;
    const t = c.setTimeout(() => (fired = true), 100);
    c.start();
    c.clearTimeout(t);
    base.set(1_000);
    expect(fired).toBe(false);
  });

  it("never fires before its scenario instant, even when its base timer wakes early", () => {
    // Node's timers and Date.now() round differently: a timer can wake a millisecond early, 40 ms of scenario time at
    // speed 40. This base wakes every timer longer than 1 ms a millisecond early.
    const sim = new SimulatedClock(0);
    const early: Clock = { now: () => sim.now(), setTimeout: (fn, ms) => sim.setTimeout(fn, Math.max(1, ms - 1)), clearTimeout: (id) => sim.clearTimeout(id) };
    const c = new ScaledClock(0, 40, early, { afterDueTimers: atOnce });
    const fired: number[] = [];
    c.setTimeout(() => fired.push(c.now()), 1_000); // 25 ms of base time
    sim.set(24);
    expect(fired).toEqual([]);
    sim.set(25);
    expect(fired).toEqual([1_000]);
  });

  it("a timer cleared after it fell due, before its turn, does not fire", () => {
    const base = new SimulatedClock(0);
    const turns: (() => void)[] = [];
    const c = new ScaledClock(0, 1, base, { afterDueTimers: (fn) => turns.push(fn) });
    const fired: string[] = [];
    const cleared = c.setTimeout(() => fired.push("cleared"), 100);
    c.setTimeout(() => fired.push("kept"), 100);
    base.set(100);
    expect(turns).toHaveLength(2);
    c.clearTimeout(cleared); // e.g. a sample at the deadline arrived first and re-armed the dwell
    for (const t of turns) t();
    expect(fired).toEqual(["kept"]);
  });

  it("on the real event loop, fires after every timer that fell due before it, even when Node would run it first", async () => {
    // The crash test's failure under load: after a stall, a dwell timer ran before the overdue timer of the scenario
    // feed's next sample (stamped seconds before the deadline) because Node runs overdue timers list by list (one
    // list per duration, in the order of each list's oldest timer), not in due order. Here the dwell's base timer
    // (25 ms) shares its list with an older 25 ms timer, so Node runs it before the feed's 22 ms timer, due 3 ms
    // earlier. The dwell must still come last.
    for (let round = 0; round < 3; round++) {
      const c = new ScaledClock(0, 40);
      const order: string[] = [];
      const done = new Promise<void>((resolve) => {
        setTimeout(() => order.push("older 25 ms timer"), 25);
        stall(5);
        c.setTimeout(() => (order.push("dwell"), resolve()), 1_000); // 25 ms of base time: due 30 ms from the start
        setTimeout(() => order.push("feed"), 22); // due 27 ms from the start: a sample stamped before the deadline
        stall(60); // every one of them overdue
      });
      await done;
      expect(order).toEqual(["older 25 ms timer", "feed", "dwell"]);
    }
  });
});
