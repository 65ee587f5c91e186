/**
 * `budgetedSteps` (src/streams/jetstream/limiter.ts): a take-over's partition starts, synchronous steps run in later
 * turns of the event loop, in order, as many per turn as fit in the budget, so what is due meanwhile (a lease
 * renewal's timer, its answer) runs between them. Decided by the order of events: a step that takes longer than the
 * budget ends its turn, one that does not leaves room for the next in the same turn.
 */
import { describe, expect, it } from "vitest";
import { budgetedSteps } from "../../src/streams/jetstream/limiter.ts";

/** Blocks the event loop for `ms` (a synchronous step that takes that long). */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe("budgetedSteps", () => {
  it("runs steps in order, not before the current turn ends, and lets timers run between turns when one uses the budget", async () => {
    const steps = budgetedSteps(5);
    const events: string[] = [];
    const results = [1, 2, 3].map((n) =>
      steps.run(() => {
        events.push(`step ${n}`);
        // Due before the step ends: the timers phase of the next loop iteration runs it, before the next turn.
        if (n === 1) setTimeout(() => events.push("timer"), 0);
        busy(10);
        return n;
      }),
    );
    events.push("queued");
    expect(await Promise.all(results)).toEqual([1, 2, 3]);
    expect(events).toEqual(["queued", "step 1", "timer", "step 2", "step 3"]);
  });

  it("runs several quick steps in one turn, and passes a step's failure to its caller only", async () => {
    const steps = budgetedSteps(1_000);
    const events: string[] = [];
    const ok = [1, 2, 3].map((n) =>
      steps.run(() => {
        events.push(`step ${n}`);
        if (n === 1) setTimeout(() => events.push("timer"), 0);
        busy(2);
      }),
    );
    const failed = steps.run(() => {
      throw new Error("no");
    });
    await expect(failed).rejects.toThrow("no");
    await Promise.all(ok);
    await new Promise((r) => setTimeout(r, 5));
    // One turn, within the budget: the timer due after the first step waited for the others.
    expect(events).toEqual(["step 1", "step 2", "step 3", "timer"]);
  });
});
