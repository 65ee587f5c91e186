/** Methodology section 6: gates after the dwell, their bounds, order and state_reason; section 7 confidence buckets. */
import { describe, expect, it } from "vitest";
import {
  ASSET_CLASSES,
  BANDS,
  confidence,
  D,
  evaluate,
  firstGate,
  GATES,
  gateStateReason,
  INITIAL_STATE,
  oracleConfBps,
  step,
  type AssetClass,
  type Band,
  type GateInputs,
  type OracleEntry,
} from "../../src/methodology/index.ts";
import { assetOf, at, decisions, mkInputs, onlyDecision, oracleEntry, runTimeline, sample, SEC, T0 } from "./helpers.ts";

const g = (over: Partial<GateInputs> = {}): GateInputs => ({
  cls: "stable_fiat",
  committed: "PEGGED",
  dSmooth: new D(0),
  oracle: {},
  intrinsicStale: null,
  ...over,
});

const NAV: readonly AssetClass[] = ["lst", "stable_yield"];
const NOT_NAV: readonly AssetClass[] = ASSET_CLASSES.filter((c) => !NAV.includes(c));
const BAD_ORACLE: Readonly<Record<string, OracleEntry>> = { px: oracleEntry("1", "0.06") };

describe("premium_sanity", () => {
  it.each(NAV)("%s: exactly 1000 bps premium passes", (cls) => {
    expect(firstGate(g({ cls, dSmooth: new D("-0.1") }))).toBeNull();
  });
  it.each(NAV)("%s: 1000.0001 bps premium fires", (cls) => {
    expect(firstGate(g({ cls, dSmooth: new D("-0.10000001") }))).toBe("premium_sanity");
  });
  it.each(NAV)("%s: 999 bps premium passes, 1001 fires", (cls) => {
    expect(firstGate(g({ cls, dSmooth: new D("-0.0999") }))).toBeNull();
    expect(firstGate(g({ cls, dSmooth: new D("-0.1001") }))).toBe("premium_sanity");
  });
  it.each(NOT_NAV)("%s (incl. synth_lev): no premium_sanity gate even at a 50 %% premium", (cls) => {
    expect(firstGate(g({ cls, dSmooth: new D("-0.5") }))).toBeNull();
  });
  it("a discount (d > 0) never fires premium_sanity", () => {
    expect(firstGate(g({ cls: "lst", dSmooth: new D("0.2") }))).toBeNull();
  });
});

describe("discount_sanity", () => {
  it.each(NAV)("%s: exactly 3000 bps discount passes", (cls) => {
    expect(firstGate(g({ cls, dSmooth: new D("0.3") }))).toBeNull();
  });
  it.each(NAV)("%s: just above 3000 bps fires", (cls) => {
    expect(firstGate(g({ cls, dSmooth: new D("0.30000001") }))).toBe("discount_sanity");
    expect(firstGate(g({ cls, dSmooth: new D("0.3001") }))).toBe("discount_sanity");
    expect(firstGate(g({ cls, dSmooth: new D("0.2999") }))).toBeNull();
  });
  it.each(NOT_NAV)("%s: no discount_sanity gate even at 50 %%", (cls) => {
    expect(firstGate(g({ cls, dSmooth: new D("0.5") }))).toBeNull();
  });
  it("a premium never fires discount_sanity", () => {
    expect(firstGate(g({ cls: "stable_yield", dSmooth: new D("-0.05") }))).toBeNull();
  });
  it("d = 0 fires neither NAV gate", () => {
    for (const cls of NAV) expect(firstGate(g({ cls, dSmooth: new D(0) }))).toBeNull();
  });
});

describe("oracle_confidence", () => {
  it.each([
    ["1", "0.05"],
    ["2", "0.1"],
    ["-2", "0.1"],
    ["1", "-0.05"],
    ["150", "7.5"],
  ])("price %s conf %s is exactly 500 bps: passes", (price, conf) => {
    expect(oracleConfBps(oracleEntry(price, conf))!.eq(500)).toBe(true);
    expect(firstGate(g({ oracle: { px: oracleEntry(price, conf) } }))).toBeNull();
  });

  it.each([
    ["1", "0.0500001"],
    ["2", "0.1000001"],
    ["150", "7.50000001"],
    ["1", "0.06"],
  ])("price %s conf %s is above 500 bps: fires", (price, conf) => {
    expect(firstGate(g({ oracle: { px: oracleEntry(price, conf) } }))).toBe("oracle_confidence");
  });

  it("a price-0 entry is ignored", () => {
    expect(oracleConfBps(oracleEntry("0", "5"))).toBeNull();
    expect(firstGate(g({ oracle: { zero: oracleEntry("0", "5") } }))).toBeNull();
    expect(firstGate(g({ oracle: { zero: oracleEntry("0", "5"), ok: oracleEntry("1", "0.001") } }))).toBeNull();
  });

  it("any one bad entry fires, whatever its name's position", () => {
    expect(firstGate(g({ oracle: { a: oracleEntry("1", "0.001"), z: oracleEntry("1", "0.2") } }))).toBe(
      "oracle_confidence",
    );
    expect(firstGate(g({ oracle: { a: oracleEntry("1", "0.2"), z: oracleEntry("1", "0.001") } }))).toBe(
      "oracle_confidence",
    );
  });

  it.each(ASSET_CLASSES)("applies to every class (%s)", (cls) => {
    expect(firstGate(g({ cls, oracle: BAD_ORACLE }))).toBe("oracle_confidence");
  });
});

describe("intrinsic_liveness", () => {
  it("fires only when enabled and the intrinsic is stale", () => {
    expect(firstGate(g({ intrinsicStale: null }))).toBeNull();
    expect(firstGate(g({ intrinsicStale: false }))).toBeNull();
    expect(firstGate(g({ intrinsicStale: true }))).toBe("intrinsic_liveness");
  });

  it("through step it is off by default: a stale sample is frozen as null and publishes its band", () => {
    const { asset } = assetOf("stable_fiat");
    const r = step(asset, INITIAL_STATE, { kind: "sample", sample: sample("1", T0, { stale: true }), now: T0 });
    const d = onlyDecision(r.outcomes);
    expect(d.inputs.intrinsic_stale).toBeNull();
    expect(d.computed.gate).toBeNull();
    expect(d.computed.final_state).toBe("PEGGED");
  });

  it("through step, when enabled, a stale sample publishes UNKNOWN with no state_reason", () => {
    const { asset } = assetOf("stable_fiat");
    const opts = { intrinsicLivenessGate: true };
    const fresh = step(asset, INITIAL_STATE, { kind: "sample", sample: sample("1", T0), now: T0 }, opts);
    expect(onlyDecision(fresh.outcomes).inputs.intrinsic_stale).toBe(false);
    expect(onlyDecision(fresh.outcomes).computed.final_state).toBe("PEGGED");
    const stale = step(asset, fresh.state, { kind: "sample", sample: sample("1", T0 + SEC, { stale: true }), now: T0 + SEC }, opts);
    const d = onlyDecision(stale.outcomes);
    expect(d.inputs.intrinsic_stale).toBe(true);
    expect(d.computed.gate).toBe("intrinsic_liveness");
    expect(d.computed.final_state).toBe("UNKNOWN");
    expect(d.transition).toBe(true);
    expect(d.state_reason).toBeNull();
  });
});

describe("gate order", () => {
  it("premium_sanity before oracle_confidence and intrinsic_liveness", () => {
    expect(firstGate(g({ cls: "lst", dSmooth: new D("-0.2"), oracle: BAD_ORACLE, intrinsicStale: true }))).toBe(
      "premium_sanity",
    );
  });
  it("discount_sanity before oracle_confidence and intrinsic_liveness", () => {
    expect(firstGate(g({ cls: "stable_yield", dSmooth: new D("0.4"), oracle: BAD_ORACLE, intrinsicStale: true }))).toBe(
      "discount_sanity",
    );
  });
  it("oracle_confidence before intrinsic_liveness", () => {
    expect(firstGate(g({ oracle: BAD_ORACLE, intrinsicStale: true }))).toBe("oracle_confidence");
  });
});

describe("committed BLACK_SWAN skips all gates", () => {
  it("no gate fires over a committed BLACK_SWAN", () => {
    const all = { oracle: BAD_ORACLE, intrinsicStale: true, committed: "BLACK_SWAN" as Band };
    expect(firstGate(g({ ...all, cls: "lst", dSmooth: new D("-0.2") }))).toBeNull();
    expect(firstGate(g({ ...all, cls: "stable_yield", dSmooth: new D("0.5") }))).toBeNull();
    expect(firstGate(g({ ...all, cls: "stable_fiat", dSmooth: new D("0.5") }))).toBeNull();
  });

  it.each(BANDS.filter((b) => b !== "BLACK_SWAN"))("gates still apply over a committed %s", (committed) => {
    expect(firstGate(g({ committed, cls: "stable_yield", dSmooth: new D("0.5") }))).toBe("discount_sanity");
    expect(firstGate(g({ committed, oracle: BAD_ORACLE }))).toBe("oracle_confidence");
  });

  it("evaluate publishes BLACK_SWAN (not UNKNOWN) once it is committed, despite a bad oracle", () => {
    const { asset } = assetOf("stable_fiat");
    const ev = evaluate(
      asset,
      mkInputs(asset, {
        market_usd: new D("0.9"),
        previous_band: "BLACK_SWAN",
        previous_state: "BLACK_SWAN",
        oracle: BAD_ORACLE,
        intrinsic_stale: true,
      }),
    );
    expect(ev.ok).toBe(true);
    if (ev.ok) {
      expect(ev.computed.gate).toBeNull();
      expect(ev.computed.final_state).toBe("BLACK_SWAN");
    }
  });
});

describe("state_reason", () => {
  it("only premium_sanity has one", () => {
    for (const gate of GATES) expect(gateStateReason(gate)).toBe(gate === "premium_sanity" ? "premium_sanity" : null);
    expect(gateStateReason(null)).toBeNull();
  });

  it("decisions carry state_reason only for premium_sanity", () => {
    const lst = assetOf("lst").asset;
    const sy = assetOf("stable_yield").asset;
    const fiat = assetOf("stable_fiat").asset;
    const prem = onlyDecision(step(lst, INITIAL_STATE, { kind: "sample", sample: sample("1.2"), now: T0 }).outcomes);
    expect(prem.computed.gate).toBe("premium_sanity");
    expect(prem.state_reason).toBe("premium_sanity");
    const disc = onlyDecision(step(sy, INITIAL_STATE, { kind: "sample", sample: sample("0.5"), now: T0 }).outcomes);
    expect(disc.computed.gate).toBe("discount_sanity");
    expect(disc.state_reason).toBeNull();
    const orc = onlyDecision(
      step(fiat, INITIAL_STATE, { kind: "sample", sample: sample("1", T0, { oracle: BAD_ORACLE }), now: T0 }).outcomes,
    );
    expect(orc.computed.gate).toBe("oracle_confidence");
    expect(orc.state_reason).toBeNull();
    const none = onlyDecision(step(fiat, INITIAL_STATE, { kind: "sample", sample: sample("0.99"), now: T0 }).outcomes);
    expect(none.state_reason).toBeNull();
  });
});

describe("gates work on d_smooth and leave the committed band maturing underneath", () => {
  it("premium_sanity reads d_smooth, not d_raw", () => {
    const { asset } = assetOf("lst");
    const r = runTimeline(asset, [at(T0, "1"), at(T0 + SEC, "1.2")]);
    const d = decisions(r.outcomes)[1]!;
    expect(d.computed.discount_raw.eq("-0.2")).toBe(true);
    expect(d.computed.discount_smooth.eq("-0.06")).toBe(true);
    expect(d.computed.gate).toBeNull();
    expect(d.computed.final_state).toBe("PEGGED");
  });

  it("the band commits under an UNKNOWN and is published when the gate clears", () => {
    const { asset } = assetOf("stable_fiat");
    const r = runTimeline(asset, [
      at(T0, "0.995", { oracle: BAD_ORACLE }), // 50 bps: DRIFT candidate, published UNKNOWN
      { kind: "dwell_timer", now: T0 + 30 * SEC },
    ]);
    const ds = decisions(r.outcomes);
    expect(ds[0]!.computed.final_state).toBe("UNKNOWN");
    expect(ds[0]!.transition).toBe(false); // cold start
    expect(ds[1]!.computed.band).toBe("DRIFT");
    expect(ds[1]!.computed.final_state).toBe("UNKNOWN");
    expect(ds[1]!.transition).toBe(false);
    expect(r.state.committed).toBe("DRIFT");
    const clear = step(asset, r.state, {
      kind: "sample",
      sample: sample("0.995", T0 + 40 * SEC, { oracle: { px: oracleEntry("1", "0.0001") } }),
      now: T0 + 40 * SEC,
    });
    const d = onlyDecision(clear.outcomes);
    expect(d.computed.final_state).toBe("DRIFT");
    expect(d.inputs.previous_state).toBe("UNKNOWN");
    expect(d.transition).toBe(true);
  });
});

describe("confidence (display, frozen in computed)", () => {
  it.each([
    ["0.001", "high"],
    ["0.0010001", "medium"],
    ["0.01", "medium"],
    ["0.0100001", "low"],
  ] as const)("worst |conf/price| with conf %s on price 1 -> %s", (conf, bucket) => {
    expect(confidence({ px: oracleEntry("1", conf) }, true)).toBe(bucket);
  });

  it("the worst entry decides", () => {
    expect(confidence({ a: oracleEntry("1", "0.0001"), b: oracleEntry("1", "0.05") }, true)).toBe("low");
  });

  it("an asset with no oracle dependency is capped at medium", () => {
    expect(confidence({ px: oracleEntry("1", "0.0001") }, false)).toBe("medium");
    expect(confidence({}, false)).toBe("medium");
    expect(confidence({ px: oracleEntry("1", "0.05") }, false)).toBe("low");
  });

  it("an asset with an oracle dependency but no fresh entry is unknown", () => {
    expect(confidence({}, true)).toBe("unknown");
  });

  it("evaluate uses the catalog entry's oracle dependency", () => {
    const withFeed = assetOf("stable_fiat", {}, { oracle_feed_id: "feed1" }).asset;
    const without = assetOf("stable_fiat").asset;
    const o = { px: oracleEntry("1", "0.0001") };
    const a = evaluate(withFeed, mkInputs(withFeed, { oracle: o }));
    const b = evaluate(without, mkInputs(without, { oracle: o }));
    expect(a.ok && a.computed.confidence).toBe("high");
    expect(b.ok && b.computed.confidence).toBe("medium");
    const c = evaluate(withFeed, mkInputs(withFeed, {}));
    expect(c.ok && c.computed.confidence).toBe("unknown");
  });
});
