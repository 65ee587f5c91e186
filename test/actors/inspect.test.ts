import { describe, expect, it } from "vitest";
import { ActorHost, bandMachineDefinition, EventRing, mermaidOf, type RecordedEvent } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, type Sample } from "../../src/methodology/index.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!; // 15 / 50 / 200 bps
const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);

function usdc(clock: SimulatedClock, market: string): Sample {
  const ts = clock.now();
  return { asset: "USDC", ts, intrinsic_usd: new D(1), market_usd: new D(market), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
}

describe("machine inspection", () => {
  it("shows the cold actor before any sample", () => {
    const host = new ActorHost({ assets: [USDC], clock: new SimulatedClock(T0), gitSha: "" });
    const v = host.inspect("USDC")!;
    expect(v).toMatchObject({ asset: "USDC", mint: USDC.mint, state: "cold", published_state: null, candidate: null, deadline: null, last_sample: null, events: [] });
    expect(host.inspect("nope")).toBeUndefined();
  });

  it("shows a dwelling candidate with its deadline, then the commit, with every event in order", () => {
    const clock = new SimulatedClock(T0);
    const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
    host.ingest(usdc(clock, "1"));
    clock.increment(1000);
    host.ingest(usdc(clock, "0.99")); // d_smooth 0.003: a DRIFT candidate
    const since = clock.now();
    let v = host.inspect(USDC.mint)!;
    expect(v.state).toBe("PEGGED");
    expect(v.committed_band).toBe("PEGGED");
    expect(v.candidate).toBe("DRIFT");
    expect(v.candidate_since).toBe(new Date(since).toISOString());
    expect(v.deadline).toBe(new Date(since + 30_000).toISOString());
    expect(v.discount).toBe("0.003");
    expect(v.last_sample?.market_usd).toBe("0.99");
    expect(v.events.map((e) => [e.type, e.result, e.state, e.candidate])).toEqual([
      ["SAMPLE", "accepted", "PEGGED", null],
      ["SAMPLE", "accepted", "PEGGED", "DRIFT"],
    ]);
    // An implausible sample is skipped and recorded as such.
    expect(host.ingest(usdc(clock, "0")).status).toBe("skipped");
    clock.set(since + 30_000); // the dwell timer commits DRIFT
    v = host.inspect("USDC")!;
    expect(v.state).toBe("DRIFT");
    expect(v.published_state).toBe("DRIFT");
    expect(v.since).toBe(new Date(since + 30_000).toISOString());
    expect(v.deadline).toBeNull();
    const last2 = v.events.slice(-2);
    expect(last2[0]).toMatchObject({ type: "SAMPLE", result: "skipped" });
    expect(last2[0]!.skip_reason).toBeTruthy();
    expect(last2[1]).toMatchObject({ type: "DWELL_DUE", result: "accepted", state: "DRIFT", band: "DRIFT", transition: true });
  });

  it("keeps only the most recent events, oldest first", () => {
    const clock = new SimulatedClock(T0);
    const host = new ActorHost({ assets: [USDC], clock, gitSha: "", eventHistory: 5 });
    for (let i = 0; i < 12; i++) {
      host.ingest(usdc(clock, "1"));
      clock.increment(1000);
    }
    const at = host.inspect("USDC")!.events.map((e) => Date.parse(e.at));
    expect(at).toEqual([7, 8, 9, 10, 11].map((i) => T0 + i * 1000));
  });

  it("records a restore as a RESUME event", () => {
    const clock = new SimulatedClock(T0);
    const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
    host.ingest(usdc(clock, "1"));
    host.restore(host.snapshot());
    expect(host.inspect("USDC")!.events.at(-1)).toMatchObject({ type: "RESUME", result: "accepted" });
  });

  it("the ring buffer wraps and reports oldest first", () => {
    const ring = new EventRing(3);
    const ev = (at: number): RecordedEvent => ({ type: "SAMPLE", at, result: "accepted", skipReason: null, state: null, band: "PEGGED", candidate: null, discount: null, transition: false });
    expect(ring.toArray()).toEqual([]);
    for (const t of [1, 2]) ring.push(ev(t));
    expect(ring.toArray().map((e) => e.at)).toEqual([1, 2]);
    for (const t of [3, 4, 5]) ring.push(ev(t));
    expect(ring.toArray().map((e) => e.at)).toEqual([3, 4, 5]);
    const none = new EventRing(0);
    none.push(ev(1));
    expect(none.toArray()).toEqual([]);
  });
});

describe("machine definition", () => {
  it("is XState's JSON of the band machine", () => {
    const def = bandMachineDefinition();
    expect(def["id"]).toBe("band");
    expect(Object.keys(def["states"] as object)).toEqual(["cold", "PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"]);
  });

  it("renders a Mermaid state diagram generated from the definition", () => {
    const m = mermaidOf(bandMachineDefinition());
    const lines = m.split("\n");
    expect(lines[0]).toBe("stateDiagram-v2");
    expect(lines).toContain("  [*] --> cold");
    expect(lines).toContain("  cold --> DEPEG: PUBLISHED [publishes DEPEG]");
    expect(lines).toContain("  PEGGED --> BLACK_SWAN: PUBLISHED [publishes BLACK_SWAN]");
    expect(lines).toContain("  UNKNOWN --> PEGGED: PUBLISHED [publishes PEGGED]");
    // Every published state reaches every other one (the methodology may jump bands), never back to cold.
    const edges = lines.filter((l) => l.includes("-->") && !l.includes("[*]"));
    expect(edges).toHaveLength(6 * 6);
    expect(edges.some((l) => l.includes("--> cold"))).toBe(false);
    expect(m).toMatch(/SAMPLE, DWELL_DUE, RESUME/);
  });
});
