/**
 * Backpressure instead of drops (issue 15): the simulated market offered far more than the pipeline carries (every
 * active asset each millisecond, 72,000 samples/s nominal) into the real service (embedded PGlite, a real nats-server).
 * The market skips ticks while the engine link's queue or the sample projector is behind, and says so (/metrics,
 * the /readyz reason, a warning); nothing evaluated is dropped, and the service keeps evaluating and storing samples.
 * Without the throttle the link's queue fills within a second and samples are dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import type { Service } from "../src/cli/service.ts";
import { waitFor } from "./support/ports.ts";
import { startTestService, type TestService } from "./support/service.ts";

const catalog = loadShippedCatalog();
let running: TestService;
let service: Service;
let api: string;
let metricsBase: string;
const warnings: { msg: string; fields?: Record<string, unknown> }[] = [];

beforeAll(async () => {
  running = await startTestService({
    env: { SIM_TICK_MS: "1" },
    catalog,
    prefix: "peg-backpressure-",
    io: {
      log: (level, msg, fields) => {
        if (level === "warn") warnings.push({ msg, ...(fields === undefined ? {} : { fields }) });
      },
    },
  });
  ({ service, base: api } = running);
  metricsBase = `http://127.0.0.1:${service.api.metricsPort}`;
}, 120_000);

afterAll(() => running?.stop());

/** One sample of the Prometheus text, 0 when absent. */
function metric(text: string, name: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

describe("an offered load beyond capacity", () => {
  it("throttles the simulated market and says so, and drops no evaluated sample", async () => {
    const readyz: string[] = [];
    const metricsText = async () => (await fetch(`${metricsBase}/metrics`)).text();
    await waitFor(
      async () => {
        const r = await fetch(`${api}/readyz`);
        if (r.status === 503) readyz.push(JSON.stringify(await r.json()));
        else await r.body?.cancel();
        return metric(await metricsText(), "peg_oracle_feed_ticks_skipped_total") > 100 && readyz.some((b) => b.includes("the feed is throttled"));
      },
      100_000,
      "ticks skipped and /readyz saying so",
    );
    const evaluatedBefore = service.link.stats.ackedSamples;
    await new Promise((r) => setTimeout(r, 3_000));
    const text = await metricsText();
    expect(metric(text, "peg_oracle_samples_dropped_total")).toBe(0);
    expect(service.link.stats.droppedSamples).toBe(0);
    expect(service.link.stats.queuedSamples).toBeLessThanOrEqual(service.link.stats.maxQueuedSamples);
    // Still working at what it carries: samples evaluated, acknowledged and projected meanwhile.
    expect(service.link.stats.ackedSamples - evaluatedBefore).toBeGreaterThan(catalog.active.length);
    expect(service.projected.samples.projected).toBeGreaterThan(catalog.active.length);
    expect(warnings.some((w) => w.msg === "overloaded: the feed is throttled, ticks are skipped")).toBe(true);
    expect(warnings.filter((w) => w.msg.startsWith("overloaded: evaluated samples are being dropped"))).toEqual([]);
    expect(readyz.find((b) => b.includes("the feed is throttled"))).toMatch(/, \d+ of the last 30 s.s \d+ ticks skipped \((the sample publish queue|the sample projector|the previous tick)/);
  }, 150_000);
});
