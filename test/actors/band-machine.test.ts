import { describe, expect, it } from "vitest";
import { ActorHost, bandMachine, type HostEvent, type TransitionEvent } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, verifyBundle, replayBundle, type Sample } from "../../src/methodology/index.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!; // 15 / 50 / 200 bps
const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);

function usdc(clock: SimulatedClock, market: string): Sample {
  return {
    asset: "USDC",
    ts: clock.now(),
    intrinsic_usd: new D(1),
    market_usd: new D(market),
    intrinsic_sol: null,
    market_sol: null,
    cr: null,
    oracle: {},
    intrinsic_stale: false,
  };
}

function setup() {
  const clock = new SimulatedClock(T0);
  const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
  const events: HostEvent[] = [];
  host.events$.subscribe((e) => events.push(e));
  const transitions = () => events.filter((e): e is TransitionEvent => e.kind === "transition").map((e) => e.receipt);
  return { clock, host, events, transitions };
}

/** A steady stream: the first sample seeds the EWMA at 0; 0.99 then gives d_smooth 0.003 (30 bps, DRIFT). */
function enterDriftCandidate(clock: SimulatedClock, host: ActorHost): number {
  host.ingest(usdc(clock, "1"));
  clock.increment(1000);
  host.ingest(usdc(clock, "0.99"));
  return clock.now();
}

describe("band machine dwell on a simulated clock", () => {
  it("does not commit an escalation at 29.999 s and commits it at exactly 30.000 s by its own timer", () => {
    const { clock, host, transitions } = setup();
    const since = enterDriftCandidate(clock, host);
    expect(host.deadline("USDC")).toBe(since + 30_000);
    clock.set(since + 29_999);
    expect(host.machineState("USDC")).toBe("PEGGED");
    expect(transitions()).toHaveLength(0);
    clock.set(since + 30_000);
    expect(host.machineState("USDC")).toBe("DRIFT");
    const [r] = transitions();
    expect(r?.detected_at).toBe(new Date(since + 30_000).toISOString());
    expect(r?.inputs_frozen.trigger).toBe("dwell_timer");
    expect(r?.inputs_frozen.candidate_since).toBe(new Date(since).toISOString());
  });

  it("a sample at 29.999 s keeps the original since and does not commit", () => {
    const { clock, host, transitions } = setup();
    const since = enterDriftCandidate(clock, host);
    clock.set(since + 29_999);
    host.ingest(usdc(clock, "1")); // d_smooth 0.0021: still a DRIFT candidate
    expect(transitions()).toHaveLength(0);
    expect(host.engineState("USDC")?.candidateSince).toBe(since);
    clock.set(since + 30_000);
    expect(transitions().map((r) => r.to_state)).toEqual(["DRIFT"]);
  });

  it("relaxes only after 120 s: not at 119.999 s, exactly at 120.000 s", () => {
    const { clock, host, transitions } = setup();
    const since = enterDriftCandidate(clock, host);
    clock.set(since + 30_000);
    expect(host.machineState("USDC")).toBe("DRIFT");
    // Back to par: d_smooth decays 0.003 -> 0.0021 -> 0.00147 (14 bps, below the 11 bps exit? no: 14 >= 11 stays DRIFT)
    clock.increment(1000);
    host.ingest(usdc(clock, "1"));
    clock.increment(1000);
    host.ingest(usdc(clock, "1"));
    clock.increment(1000);
    host.ingest(usdc(clock, "1")); // 0.001029 -> 10 bps < 11: PEGGED candidate
    const relaxSince = clock.now();
    expect(host.engineState("USDC")?.candidate).toBe("PEGGED");
    expect(host.deadline("USDC")).toBe(relaxSince + 120_000);
    clock.set(relaxSince + 119_999);
    expect(host.machineState("USDC")).toBe("DRIFT");
    clock.set(relaxSince + 120_000);
    expect(host.machineState("USDC")).toBe("PEGGED");
    expect(transitions().map((r) => `${r.from_state}->${r.to_state}@${r.inputs_frozen.trigger}`)).toEqual([
      "PEGGED->DRIFT@dwell_timer",
      "DRIFT->PEGGED@dwell_timer",
    ]);
  });

  it("a deadline and a sample on the same instant: the timer fires first, then the sample is evaluated", () => {
    const { clock, host, events } = setup();
    const since = enterDriftCandidate(clock, host);
    clock.set(since + 30_000);
    host.ingest(usdc(clock, "0.99"));
    const tail = events.slice(-3).map((e) => (e.kind === "state" ? `state:${e.trigger}:${e.state}` : `transition:${e.receipt.to_state}`));
    expect(tail).toEqual(["state:dwell_timer:DRIFT", "transition:DRIFT", "state:sample:DRIFT"]);
  });

  it("every transition's receipt verifies offline", () => {
    const { clock, host, transitions } = setup();
    const since = enterDriftCandidate(clock, host);
    clock.set(since + 30_000);
    for (const r of transitions()) expect(verifyBundle(JSON.parse(JSON.stringify(replayBundle(r)))).exit).toBe(0);
  });
});

describe("guarded dwell timers (a scale-out engine's lease check)", () => {
  it("a due timer asks first: refused, it decides nothing; allowed, it commits at its deadline as an unguarded one", () => {
    const run = (allow: boolean) => {
      const { clock, host, transitions } = setup();
      const asked: string[] = [];
      host.guardTimers((mint) => {
        asked.push(mint);
        return allow;
      });
      // Actors started after the call are guarded (a partition's start when their lease is acquired).
      host.release("USDC");
      host.activateAsset("USDC");
      const since = enterDriftCandidate(clock, host);
      clock.set(since + 30_000);
      return { asked, state: host.machineState("USDC"), transitions: transitions() };
    };
    const refused = run(false);
    expect(refused.asked).toEqual([USDC.mint]);
    expect(refused.state).toBe("PEGGED");
    expect(refused.transitions).toHaveLength(0);
    const allowed = run(true);
    expect(allowed.asked).toEqual([USDC.mint]);
    expect(allowed.state).toBe("DRIFT");
    expect(allowed.transitions.map((r) => r.inputs_frozen.trigger)).toEqual(["dwell_timer"]);
    // Samples are not asked (the partition checks them in its own ingest).
    const { clock, host } = setup();
    const asked: string[] = [];
    host.guardTimers((mint) => asked.push(mint) > 0);
    host.release("USDC");
    host.activateAsset("USDC");
    host.ingest(usdc(clock, "1"));
    expect(asked).toEqual([]);
  });
});

describe("snapshot and restore", () => {
  it("restores mid-dwell and still commits at the original deadline", () => {
    const a = setup();
    const since = enterDriftCandidate(a.clock, a.host);
    a.clock.set(since + 10_000);
    const snap = JSON.parse(JSON.stringify(a.host.snapshot()));
    a.host.stop();

    const clock = new SimulatedClock(since + 12_000); // the new process starts 2 s later
    const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
    const got: string[] = [];
    host.events$.subscribe((e) => {
      if (e.kind === "transition") got.push(`${e.receipt.to_state}@${e.receipt.detected_at}`);
    });
    host.restore(snap);
    expect(host.machineState("USDC")).toBe("PEGGED");
    expect(host.deadline("USDC")).toBe(since + 30_000);
    clock.set(since + 29_999);
    expect(got).toEqual([]);
    clock.set(since + 30_000);
    expect(got).toEqual([`DRIFT@${new Date(since + 30_000).toISOString()}`]);
  });

  it("restored after the deadline passed, commits at the deadline instant (not at restore time)", () => {
    const a = setup();
    const since = enterDriftCandidate(a.clock, a.host);
    const snap = a.host.snapshot();
    a.host.stop();
    const clock = new SimulatedClock(since + 300_000);
    const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
    const receipts: TransitionEvent[] = [];
    host.events$.subscribe((e) => e.kind === "transition" && receipts.push(e));
    host.restore(snap);
    expect(host.machineState("USDC")).toBe("DRIFT");
    expect(receipts.map((e) => e.receipt.detected_at)).toEqual([new Date(since + 30_000).toISOString()]);
    expect(verifyBundle(replayBundle(receipts[0]!.receipt)).exit).toBe(0);
  });

  it("a restored actor continues exactly like the uninterrupted one", () => {
    const prices = ["1", "0.99", "0.985", "0.99", "0.97", "0.96", "0.99", "1", "1", "1", "1", "1"];
    const run = (restoreAt: number | null) => {
      let { clock, host } = setup();
      const out: string[] = [];
      const listen = (h: ActorHost) => h.events$.subscribe((e) => e.kind === "transition" && out.push(JSON.stringify(e.receipt)));
      listen(host);
      prices.forEach((p, i) => {
        if (i === restoreAt) {
          const snap = JSON.parse(JSON.stringify(host.snapshot()));
          host.stop();
          clock = new SimulatedClock(clock.now());
          host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
          listen(host);
          host.restore(snap);
        }
        clock.set(T0 + i * 20_000);
        host.ingest(usdc(clock, p));
      });
      clock.set(T0 + prices.length * 20_000 + 300_000);
      return out;
    };
    const straight = run(null);
    expect(straight.length).toBeGreaterThan(1);
    for (const at of [2, 5, 8]) expect(run(at)).toEqual(straight);
  });

  it("resuming a running actor decides exactly as restoring it from its own state (a catch-up's last step)", () => {
    // A catch-up: samples evaluated at their own, earlier instants, then the actor re-armed at now, by which time a
    // deadline may have passed (DRIFT due 30 s after the 0.99 sample) or not (resumed 10 s after it).
    const prices = ["1", "0.99", "0.985", "0.97", "0.99", "1"];
    const run = (how: "restore" | "resume", resumeAfterMs: number) => {
      const { clock, host, events } = setup();
      clock.set(T0 + 5 * 5_000 + resumeAfterMs);
      prices.slice(0, 2).forEach((p, i) => host.ingest({ ...usdc(clock, p), ts: T0 + i * 5_000 }, T0 + i * 5_000));
      if (how === "restore") host.restoreAsset("USDC", host.engineState("USDC")!, clock.now());
      else host.resumeAsset("USDC", clock.now());
      const armed = host.deadline("USDC");
      prices.slice(2).forEach((p, i) => {
        clock.increment(20_000 * (i + 1));
        host.ingest(usdc(clock, p));
      });
      clock.increment(600_000);
      return { armed, state: host.machineState("USDC"), events: JSON.stringify(events), ring: JSON.stringify(host.inspect("USDC")) };
    };
    for (const after of [0, 10_000, 200_000]) {
      const resumed = run("resume", after);
      expect(resumed).toEqual(run("restore", after));
      expect(resumed.events).toMatch(/"kind":"transition"/);
    }
  });

  it("a take-over's actor started at its state, fed what it missed and resumed once decides exactly as one restored at the state's instant", () => {
    // The state: a DRIFT candidate since S (deadline S + 30 s). Missed samples at their own instants, some before the
    // deadline, some after it (the first of those fires it at its own instant), then the resume at now.
    const taken = (how: "restore" | "activate", missed: readonly [number, string][], resumeAt: number) => {
      const first = setup();
      const since = enterDriftCandidate(first.clock, first.host);
      const state = first.host.engineState("USDC")!;
      const { clock, host, events } = setup();
      clock.set(since + resumeAt);
      host.release("USDC");
      if (how === "restore") host.restoreAsset("USDC", state, state.evaluatedAt!);
      else host.activateAsset("USDC", state);
      for (const [after, p] of missed) host.ingest({ ...usdc(clock, p), ts: since + after }, since + after);
      host.resumeAsset("USDC", clock.now());
      const armed = host.deadline("USDC");
      const machine = host.machineState("USDC");
      clock.increment(600_000);
      return { armed, machine, state: host.machineState("USDC"), engine: JSON.stringify(host.engineState("USDC")), events: JSON.stringify(events) };
    };
    const cases: [readonly [number, string][], number][] = [
      [[], 10_000], // nothing missed, the deadline still ahead
      [[], 45_000], // nothing missed, the deadline passed before now
      [[[5_000, "0.99"], [15_000, "0.99"]], 20_000], // missed samples before the deadline
      [[[5_000, "0.99"], [35_000, "0.98"], [40_000, "1"]], 50_000], // the deadline between two missed samples
      [[[5_000, "1"], [10_000, "1"]], 200_000], // the candidate abandoned by what was missed
    ];
    for (const [missed, resumeAt] of cases) {
      const activated = taken("activate", missed, resumeAt);
      expect(activated).toEqual(taken("restore", missed, resumeAt));
      expect(activated.machine).not.toBe("cold");
    }
    expect(taken("activate", cases[3]![0], 50_000).events).toMatch(/"kind":"transition"/);
  });

  it("rejects a malformed snapshot without touching any actor", () => {
    const { clock, host } = setup();
    enterDriftCandidate(clock, host);
    const before = JSON.stringify(host.snapshot());
    const bad = JSON.parse(before);
    bad.assets[USDC.mint].ewma = "not-a-number";
    expect(() => host.restore(bad)).toThrow(/ewma/);
    expect(() => host.restore({ ...bad, version: 2 })).toThrow(/version/);
    expect(JSON.stringify(host.snapshot())).toBe(before);
  });
});

describe("the machine definition", () => {
  it("is a readable diagram: published states, named guards, actions and delays", () => {
    const json = JSON.parse(JSON.stringify(bandMachine.toJSON())) as { states: Record<string, { on: Record<string, { target?: string[]; guard?: { type: string } }[]> }> };
    expect(Object.keys(json.states).sort()).toEqual(["BLACK_SWAN", "CRITICAL", "DEPEG", "DRIFT", "PEGGED", "UNKNOWN", "cold"].sort());
    const fromPegged = json.states["PEGGED"]!.on["PUBLISHED"]!.map((t) => t.target?.[0]);
    expect(fromPegged).toEqual(["#band.DRIFT", "#band.DEPEG", "#band.CRITICAL", "#band.BLACK_SWAN", "#band.UNKNOWN"]);
    expect(json.states["PEGGED"]!.on["PUBLISHED"]![0]!.guard?.type).toBe("publishes");
    expect(Object.keys(bandMachine.implementations.delays)).toEqual(["dwell"]);
    expect(Object.keys(bandMachine.implementations.actions).sort()).toEqual(["evaluateDeadline", "evaluateSample", "follow"]);
  });
});

describe("actor host routing", () => {
  it("routes by exact symbol, reports unknown assets and skipped samples", () => {
    const clock = new SimulatedClock(T0);
    const host = new ActorHost({ assets: catalog.active, clock, gitSha: "" });
    expect(host.size).toBe(catalog.active.length);
    expect(host.ingest({ ...usdc(clock, "1"), asset: "usdc" })).toEqual({ status: "unknown_asset" });
    expect(host.ingest(usdc(clock, "0"))).toEqual({ status: "skipped", reason: "implausible" });
    expect(host.ingest({ ...usdc(clock, "1"), intrinsic_usd: new D(0) })).toEqual({ status: "skipped", reason: "no_value" });
    expect(host.ingest(usdc(clock, "1"))).toEqual({ status: "accepted" });
    expect(host.machineState("USDC")).toBe("PEGGED");
    expect(host.machineState("USDT")).toBe("cold");
    host.stop();
    expect(() => host.ingest(usdc(clock, "1"))).toThrow(/stopped/);
  });
});
