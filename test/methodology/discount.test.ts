/** Methodology section 2, steps 1-3: raw discount, plausibility, EWMA; skipped ticks keep all state. */
import { describe, expect, it } from "vitest";
import {
  ALPHA,
  D,
  evaluate,
  ewma,
  INITIAL_STATE,
  plausible,
  rawDiscount,
  step,
  type Decimal,
} from "../../src/methodology/index.ts";
import { assetOf, at, mkInputs, onlyDecision, runTimeline, sample, SEC, T0 } from "./helpers.ts";

const legs = (iu: string, mu: string, is: string | null = null, ms: string | null = null) => ({
  intrinsic_usd: new D(iu),
  market_usd: new D(mu),
  intrinsic_sol: is === null ? null : new D(is),
  market_sol: ms === null ? null : new D(ms),
});

describe("raw discount", () => {
  it("1 - market / intrinsic; positive below intrinsic, negative for a premium", () => {
    expect(rawDiscount("stable_fiat", legs("1", "0.99"))!.eq("0.01")).toBe(true);
    expect(rawDiscount("stable_fiat", legs("1", "1.02"))!.eq("-0.02")).toBe(true);
    expect(rawDiscount("stable_fx", legs("1.0850", "1.0850"))!.isZero()).toBe(true);
    expect(rawDiscount("stable_yield", legs("1.25", "1"))!.eq("0.2")).toBe(true);
  });

  it("is exact decimal arithmetic (0.3 / 0.1 style values do not drift)", () => {
    expect(rawDiscount("stable_fiat", legs("0.3", "0.1"))!.toFixed()).toBe(new D(1).minus(new D("0.1").div("0.3")).toFixed());
    expect(rawDiscount("stable_fiat", legs("3", "2.97"))!.eq("0.01")).toBe(true);
  });

  it("lst uses the SOL legs when both are present and intrinsic_sol != 0", () => {
    expect(rawDiscount("lst", legs("150", "150", "1.25", "1.2375"))!.eq("0.01")).toBe(true);
  });

  it("lst uses the SOL legs even when the USD intrinsic is 0", () => {
    expect(rawDiscount("lst", legs("0", "150", "1.25", "1.2375"))!.eq("0.01")).toBe(true);
  });

  it("lst falls back to the USD legs when intrinsic_sol is 0 or a SOL leg is missing", () => {
    expect(rawDiscount("lst", legs("100", "99", "0", "1.2"))!.eq("0.01")).toBe(true);
    expect(rawDiscount("lst", legs("100", "99", "1.25", null))!.eq("0.01")).toBe(true);
    expect(rawDiscount("lst", legs("100", "99", null, "1.2"))!.eq("0.01")).toBe(true);
  });

  it("other classes ignore the SOL legs", () => {
    expect(rawDiscount("stable_yield", legs("100", "99", "1.25", "1.2"))!.eq("0.01")).toBe(true);
    expect(rawDiscount("synth_lev", legs("100", "99", "1.25", "1.2"))!.eq("0.01")).toBe(true);
  });

  it("intrinsic exactly 0 -> no value (null), never discount 0", () => {
    expect(rawDiscount("stable_fiat", legs("0", "1"))).toBeNull();
    expect(rawDiscount("stable_fiat", legs("0", "0"))).toBeNull();
    expect(rawDiscount("lst", legs("0", "1", "0", "1"))).toBeNull();
  });

  it("a non-finite leg -> no value", () => {
    expect(rawDiscount("stable_fiat", { ...legs("1", "1"), market_usd: new D(NaN) })).toBeNull();
    expect(rawDiscount("stable_fiat", { ...legs("1", "1"), intrinsic_usd: new D(Infinity) })).toBeNull();
  });
});

describe("plausibility: |d| < 1 strict", () => {
  it.each([
    ["1", false],
    ["-1", false],
    ["1.0000000001", false],
    ["-1.5", false],
    ["0.9999999999", true],
    ["-0.9999999999", true],
    ["0", true],
    ["0.97", true],
  ] as const)("plausible(%s) = %s", (d, ok) => {
    expect(plausible(new D(d))).toBe(ok);
  });

  it("a market price of 0 gives exactly 1 and is rejected", () => {
    const d = rawDiscount("stable_fiat", legs("1", "0"))!;
    expect(d.eq(1)).toBe(true);
    expect(plausible(d)).toBe(false);
  });

  it("a market of exactly 2 x intrinsic gives -1 and is rejected", () => {
    expect(plausible(rawDiscount("stable_fiat", legs("1", "2"))!)).toBe(false);
    expect(plausible(rawDiscount("stable_fiat", legs("1", "1.9999"))!)).toBe(true);
  });
});

describe("EWMA", () => {
  it("seeds with the first raw value, then alpha x raw + (1 - alpha) x prev", () => {
    expect(ewma(new D("0.02"), null, ALPHA).eq("0.02")).toBe(true);
    expect(ewma(new D("0.02"), new D("0.01"), ALPHA).eq("0.013")).toBe(true);
    expect(ewma(new D("-0.01"), new D("0.01"), ALPHA).eq("0.004")).toBe(true);
  });

  it("is exact over a chain (no float drift)", () => {
    let prev: Decimal | null = null;
    for (const r of ["0.01", "0", "0", "0"]) prev = ewma(new D(r), prev, ALPHA);
    expect(prev!.eq("0.00343")).toBe(true);
  });
});

describe("evaluate / step skip rules", () => {
  const { asset } = assetOf("stable_fiat");

  it("intrinsic 0 -> skipped with no_value", () => {
    const ev = evaluate(asset, mkInputs(asset, { intrinsic_usd: new D(0), market_usd: new D(1) }));
    expect(ev.ok).toBe(false);
    if (!ev.ok) {
      expect(ev.reason).toBe("no_value");
      expect(ev.discount_raw).toBeNull();
    }
  });

  it("market 0 -> skipped as implausible", () => {
    const ev = evaluate(asset, mkInputs(asset, { market_usd: new D(0) }));
    expect(ev.ok).toBe(false);
    if (!ev.ok) expect(ev.reason).toBe("implausible");
  });

  it("a collateral-ratio asset still needs a computable, plausible discount", () => {
    const cr = assetOf("stable_cdp", { cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 }).asset;
    const bad = evaluate(cr, mkInputs(cr, { market_usd: new D(0), cr: new D("1.6") }));
    expect(bad.ok).toBe(false);
    const good = evaluate(cr, mkInputs(cr, { market_usd: new D("0.5"), cr: new D("1.6") }));
    // the 50 % discount does not drive the band: cr 160 % is PEGGED
    expect(good.ok && good.computed.band).toBe("PEGGED");
    expect(good.ok && good.computed.discount_raw.eq("0.5")).toBe(true);
  });

  it("the CR band is driven by cr, not by the discount", () => {
    const cr = assetOf("stable_cdp", { cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 }).asset;
    const ev = evaluate(
      cr,
      mkInputs(cr, {
        market_usd: new D("1"),
        cr: new D("1.05"),
        previous_band: "PEGGED",
        candidate_state: "CRITICAL",
        candidate_since: T0 - 30 * SEC,
      }),
    );
    expect(ev.ok && ev.computed.band).toBe("CRITICAL");
  });

  it.each([
    ["intrinsic 0 (no value)", { intrinsic: "0" }, "1", "no_value"],
    ["market 0 (implausible)", {}, "0", "implausible"],
    ["market 2 x intrinsic (d = -1, implausible)", {}, "2", "implausible"],
  ] as const)("a skipped sample (%s) leaves the state unchanged and publishes nothing", (_n, o, market, reason) => {
    const warm = runTimeline(asset, [at(T0, "0.985"), at(T0 + 5 * SEC, "0.98")]);
    const before = warm.state;
    expect(before.candidate).toBe("DEPEG");
    const r = step(asset, before, { kind: "sample", sample: sample(market, T0 + 10 * SEC, o), now: T0 + 10 * SEC });
    expect(r.outcomes).toEqual([{ kind: "skipped", reason, now: T0 + 10 * SEC }]);
    expect(r.state).toEqual(before);
    // the next accepted sample blends with the EWMA from before the skip
    const next = step(asset, r.state, { kind: "sample", sample: sample("0.99", T0 + 11 * SEC), now: T0 + 11 * SEC });
    const d = onlyDecision(next.outcomes);
    expect(d.inputs.ewma_prev!.eq(before.ewma!)).toBe(true);
  });

  it("a skipped first sample does not initialise the asset", () => {
    const r = step(asset, INITIAL_STATE, { kind: "sample", sample: sample("0", T0), now: T0 });
    expect(r.outcomes[0]!.kind).toBe("skipped");
    expect(r.state).toEqual(INITIAL_STATE);
  });

  it("a collateral-ratio asset without cr skips the tick (missing data never becomes a band)", () => {
    const cr = assetOf("stable_cdp", { cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 }).asset;
    const r = step(cr, INITIAL_STATE, { kind: "sample", sample: sample("1", T0), now: T0 });
    expect(r.outcomes[0]!.kind).toBe("skipped");
    expect(r.state).toEqual(INITIAL_STATE);
  });
});
