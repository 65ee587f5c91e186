/** Methodology section 9: the reference cases, one `it` per row. */
import { describe, expect, it } from "vitest";
import {
  ALPHA,
  classifyCr,
  classifyCrPlain,
  classifySpread,
  classifySpreadPlain,
  D,
  dwell,
  evaluate,
  ewma,
  firstGate,
  INITIAL_STATE,
  plausible,
  rawDiscount,
  step,
} from "../../src/methodology/index.ts";
import { assetOf, mkInputs, onlyDecision, oracleEntry, sample, SEC, T0 } from "./helpers.ts";

const WINDOWS = { confirmUpSecs: 30, decayDownSecs: 120 };
const DEFAULTS = {};
const CR_DEFAULTS = { cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 };

describe("methodology section 9 reference cases", () => {
  it("intrinsic 1.00, market 0.99, stable_fiat -> d_raw 0.01", () => {
    const d = rawDiscount("stable_fiat", {
      intrinsic_usd: new D("1.00"),
      market_usd: new D("0.99"),
      intrinsic_sol: null,
      market_sol: null,
    });
    expect(d).not.toBeNull();
    expect(d!.eq("0.01")).toBe(true);
    const { asset } = assetOf("stable_fiat");
    const ev = evaluate(asset, mkInputs(asset, { intrinsic_usd: new D("1.00"), market_usd: new D("0.99") }));
    expect(ev.ok).toBe(true);
    if (ev.ok) expect(ev.computed.discount_raw.eq("0.01")).toBe(true);
  });

  it("EWMA raw 0.01, no prev, alpha 0.3 / raw 0, prev 0.01 -> 0.01 / 0.007", () => {
    expect(ALPHA.eq("0.3")).toBe(true);
    expect(ewma(new D("0.01"), null, new D("0.3")).eq("0.01")).toBe(true);
    expect(ewma(new D("0"), new D("0.01"), new D("0.3")).eq("0.007")).toBe(true);
  });

  it("plausible(1.0), plausible(-1), plausible(0.97) -> false, false, true", () => {
    expect(plausible(new D("1.0"))).toBe(false);
    expect(plausible(new D("-1"))).toBe(false);
    expect(plausible(new D("0.97"))).toBe(true);
  });

  it("bps(0.0050, defaults) / bps(0.0150) / bps(0.0650) -> DRIFT / DEPEG / BLACK_SWAN", () => {
    expect(classifySpreadPlain(new D("0.0050"), "stable_fiat", DEFAULTS)).toBe("DRIFT");
    expect(classifySpreadPlain(new D("0.0150"), "stable_fiat", DEFAULTS)).toBe("DEPEG");
    expect(classifySpreadPlain(new D("0.0650"), "stable_fiat", DEFAULTS)).toBe("BLACK_SWAN");
  });

  it("lst, d -0.0150, defaults -> PEGGED (carve-out)", () => {
    expect(classifySpreadPlain(new D("-0.0150"), "lst", DEFAULTS)).toBe("PEGGED");
    expect(classifySpread(new D("-0.0150"), "lst", DEFAULTS, "PEGGED")).toBe("PEGGED");
  });

  it("stable_fiat, d -0.0150, defaults -> DEPEG", () => {
    expect(classifySpreadPlain(new D("-0.0150"), "stable_fiat", DEFAULTS)).toBe("DEPEG");
    expect(classifySpread(new D("-0.0150"), "stable_fiat", DEFAULTS, "PEGGED")).toBe("DEPEG");
  });

  it("lst, thresholds 60/150/300, d 0.0050 from DRIFT / 0.0040 from DRIFT -> DRIFT / PEGGED", () => {
    const t = { drift_bps: 60, depeg_bps: 150, critical_bps: 300 };
    expect(classifySpread(new D("0.0050"), "lst", t, "DRIFT")).toBe("DRIFT");
    expect(classifySpread(new D("0.0040"), "lst", t, "DRIFT")).toBe("PEGGED");
  });

  it("CR 1.40 / 1.05 / 0.95 / 1.00 with defaults 150/130/110/100 -> DRIFT / CRITICAL / BLACK_SWAN / CRITICAL", () => {
    expect(classifyCrPlain(new D("1.40"), CR_DEFAULTS)).toBe("DRIFT");
    expect(classifyCrPlain(new D("1.05"), CR_DEFAULTS)).toBe("CRITICAL");
    expect(classifyCrPlain(new D("0.95"), CR_DEFAULTS)).toBe("BLACK_SWAN");
    expect(classifyCrPlain(new D("1.00"), CR_DEFAULTS)).toBe("CRITICAL");
    // the same through the deadband-aware classifier from a PEGGED commit (all are escalations)
    expect(classifyCr(new D("1.40"), CR_DEFAULTS, "PEGGED")).toBe("DRIFT");
    expect(classifyCr(new D("1.05"), CR_DEFAULTS, "PEGGED")).toBe("CRITICAL");
    expect(classifyCr(new D("0.95"), CR_DEFAULTS, "PEGGED")).toBe("BLACK_SWAN");
    expect(classifyCr(new D("1.00"), CR_DEFAULTS, "PEGGED")).toBe("CRITICAL");
  });

  it("CR 1.51 from DRIFT (2 % deadband) / 1.53 from DRIFT -> DRIFT / PEGGED", () => {
    expect(classifyCr(new D("1.51"), CR_DEFAULTS, "DRIFT")).toBe("DRIFT");
    expect(classifyCr(new D("1.53"), CR_DEFAULTS, "DRIFT")).toBe("PEGGED");
  });

  it("dwell: PEGGED, candidate DRIFT tracked since now-31 s -> DRIFT", () => {
    const now = T0 + 100 * SEC;
    const next = dwell({ committed: "PEGGED", candidate: "DRIFT", candidateSince: now - 31 * SEC }, "DRIFT", now, WINDOWS);
    expect(next.committed).toBe("DRIFT");
  });

  it("dwell: DRIFT, candidate PEGGED since now-60 s / since now-121 s -> DRIFT / PEGGED", () => {
    const now = T0 + 1000 * SEC;
    const a = dwell({ committed: "DRIFT", candidate: "PEGGED", candidateSince: now - 60 * SEC }, "PEGGED", now, WINDOWS);
    expect(a.committed).toBe("DRIFT");
    const b = dwell({ committed: "DRIFT", candidate: "PEGGED", candidateSince: now - 121 * SEC }, "PEGGED", now, WINDOWS);
    expect(b.committed).toBe("PEGGED");
  });

  it("lst at intrinsic 1.0, market 1.15 -> UNKNOWN, state_reason premium_sanity", () => {
    const { asset } = assetOf("lst");
    const r = step(asset, INITIAL_STATE, { kind: "sample", sample: sample("1.15", T0, { intrinsic: "1.0" }), now: T0 });
    const d = onlyDecision(r.outcomes);
    expect(d.computed.final_state).toBe("UNKNOWN");
    expect(d.computed.gate).toBe("premium_sanity");
    expect(d.state_reason).toBe("premium_sanity");
    // also as a transition from a published PEGGED state
    const ev = evaluate(
      asset,
      mkInputs(asset, { intrinsic_usd: new D("1.0"), market_usd: new D("1.15"), previous_state: "PEGGED" }),
    );
    expect(ev.ok && ev.computed.final_state).toBe("UNKNOWN");
  });

  it("stable_yield intrinsic 21817.55, market 3.41 (a garbage NAV print) -> UNKNOWN", () => {
    const { asset } = assetOf("stable_yield");
    const r = step(asset, INITIAL_STATE, {
      kind: "sample",
      sample: sample("3.41", T0, { intrinsic: "21817.55" }),
      now: T0,
    });
    const d = onlyDecision(r.outcomes);
    expect(d.computed.final_state).toBe("UNKNOWN");
    expect(d.computed.gate).toBe("discount_sanity");
    expect(d.state_reason).toBeNull();
  });

  it("oracle entry price 1.0, conf 0.05 / 0.06 -> gate does not fire / fires", () => {
    const base = { cls: "stable_fiat" as const, committed: "PEGGED" as const, dSmooth: new D(0), intrinsicStale: null };
    expect(firstGate({ ...base, oracle: { px: oracleEntry("1.0", "0.05") } })).toBeNull();
    expect(firstGate({ ...base, oracle: { px: oracleEntry("1.0", "0.06") } })).toBe("oracle_confidence");
  });
});
