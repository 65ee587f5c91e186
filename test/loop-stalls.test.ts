/**
 * The engine's event-loop stall report (src/cli/service/loop-stalls.ts): a loop blocked for real is reported with
 * about how long, and nothing shorter than half a second is.
 */
import { describe, expect, it } from "vitest";
import { watchLoopStalls } from "../src/cli/service/loop-stalls.ts";

type Line = { level: string; msg: string; fields?: Record<string, unknown> };

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("watchLoopStalls", () => {
  it("reports a 900 ms block of the event loop, once, with its length", async () => {
    const lines: Line[] = [];
    const stop = watchLoopStalls((level, msg, fields) => void lines.push({ level, msg, ...(fields === undefined ? {} : { fields }) }));
    await tick(250);
    const start = performance.now();
    while (performance.now() - start < 900) {
      // blocked: no timer can run
    }
    await tick(250);
    stop();
    // Only stalls are reported (none shorter than 500 ms), and this one once (a loaded machine may add its own).
    expect(lines.every((l) => l.msg === "event loop blocked" && l.level === "warn" && (l.fields!["ms"] as number) >= 500)).toBe(true);
    expect(lines.filter((l) => (l.fields!["ms"] as number) >= 900)).toHaveLength(1);
  });
});
