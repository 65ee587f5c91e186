/**
 * A scenario shared by several engines (src/cli/service/feed.ts): the intake opens it after the stream's watermark;
 * the first intake, on an empty PEG_INTAKE, from the scenario's first sample however far the shared timeline ran
 * while the engines started (those already due at once, in order), so the cluster's history is the offline replay's;
 * on a timeline older than what PEG_INTAKE keeps (15 minutes), from that far back. Engines' clocks start at the
 * timeline's start.
 */
import { firstValueFrom, take, toArray } from "rxjs";
import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../src/clock.ts";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { loadScenario } from "../src/cli/scenario-files.ts";
import { feedFor } from "../src/cli/service/feed.ts";
import { parseConfig } from "../src/config.ts";
import { IntakeThrottle } from "../src/streams/intake-throttle.ts";

const SCENARIO = "transition-burst";
const samples = loadScenario(SCENARIO).samples;
const first = samples[0]!.ts;

/** The shared feed with its timeline `lateBy` ms of scenario time past its start (the engines' boot, scaled). */
async function sharedFeed(lateBy: number, speed = 30) {
  const config = parseConfig({ FEED: `scenario:${SCENARIO}`, SCENARIO_SPEED: String(speed), ROLE: "engine" });
  const base = new SimulatedClock(Date.parse("2026-11-28T05:00:00Z"));
  return feedFor(config, loadShippedCatalog(), base, () => {}, new IntakeThrottle({ clock: base }), new Map(), async (start) => start + lateBy);
}

describe("a scenario shared by several engines", () => {
  it("the first intake (an empty stream) publishes from the scenario's first sample, the already due ones at once", async () => {
    // 95 s in: 3.2 s of boot at SCENARIO_SPEED=30, what a loaded CI machine took (the first transitions are at 00:01:30).
    const feed = await sharedFeed(95_000);
    expect(feed.timelineStart).toBe(first);
    const opened = feed.from!(-Infinity);
    const due = samples.filter((x) => x.ts <= first + 95_000);
    const emitted = await firstValueFrom(opened.samples.pipe(take(due.length), toArray()));
    expect(emitted).toEqual(due);
    // Every sample up to the timeline's now is out: the watermark is that now (the next sample is not yet due).
    expect(opened.watermark()).toBe(first + 95_000);
  });

  it("on an older timeline, an empty stream (expired while the deployment was stopped) resumes as far back as it keeps", async () => {
    // SCENARIO_SPEED=1, the timeline 20 minutes in: PEG_INTAKE keeps 15 minutes.
    const feed = await sharedFeed(20 * 60_000, 1);
    const [firstOut] = await firstValueFrom(feed.from!(-Infinity).samples.pipe(take(1), toArray()));
    expect(firstOut).toEqual(samples.find((x) => x.ts > first + 5 * 60_000));
  });

  it("a later intake continues after the stream's watermark", async () => {
    const feed = await sharedFeed(300_000);
    const after = first + 120_000;
    const opened = feed.from!(after);
    const [firstOut] = await firstValueFrom(opened.samples.pipe(take(1), toArray()));
    expect(firstOut).toEqual(samples.find((x) => x.ts > after));
  });
});
