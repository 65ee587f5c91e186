/** `step`: cold start, timer-driven evaluation (methodology section 5 decision), ordering of timer and sample. */
import { describe, expect, it } from "vitest";
import { D, deadlineOf, INITIAL_STATE, step, type AssetState } from "../../src/methodology/index.ts";
import { assetOf, at, decisions, onlyDecision, runTimeline, sample, SEC, T0 } from "./helpers.ts";

const { asset } = assetOf("stable_fiat"); // defaults 20/100/300/600

describe("cold start", () => {
  it("the initial state is committed PEGGED with nothing published", () => {
    expect(INITIAL_STATE.committed).toBe("PEGGED");
    expect(INITIAL_STATE.published).toBeNull();
    expect(INITIAL_STATE.ewma).toBeNull();
  });

  it("the first accepted sample initialises without a transition (pegged)", () => {
    const r = step(asset, INITIAL_STATE, { kind: "sample", sample: sample("1"), now: T0 });
    const d = onlyDecision(r.outcomes);
    expect(d.transition).toBe(false);
    expect(d.inputs.previous_state).toBeNull();
    expect(d.inputs.previous_band).toBe("PEGGED");
    expect(d.inputs.ewma_prev).toBeNull();
    expect(r.state.published).toBe("PEGGED");
    expect(r.state.publishedSince).toBe(T0);
    expect(r.state.ewma!.isZero()).toBe(true);
  });

  it("the first accepted sample initialises without a transition even when it is deep in a band", () => {
    const r = step(asset, INITIAL_STATE, { kind: "sample", sample: sample("0.5"), now: T0 });
    const d = onlyDecision(r.outcomes);
    expect(d.transition).toBe(false);
    expect(d.computed.discount_smooth.eq("0.5")).toBe(true);
    expect(d.computed.band).toBe("PEGGED"); // first sighting of BLACK_SWAN never commits
    expect(r.state.candidate).toBe("BLACK_SWAN");
  });

  it("the first accepted sample initialises without a transition when a gate fires", () => {
    const lst = assetOf("lst").asset;
    const r = step(lst, INITIAL_STATE, { kind: "sample", sample: sample("1.5"), now: T0 });
    const d = onlyDecision(r.outcomes);
    expect(d.computed.final_state).toBe("UNKNOWN");
    expect(d.transition).toBe(false);
  });

  it("later samples that keep the published state are not transitions", () => {
    const r = runTimeline(asset, [at(T0, "1"), { kind: "dwell_timer", now: T0 + 10 * SEC }, at(T0 + 20 * SEC, "1")]);
    expect(decisions(r.outcomes).every((d) => !d.transition)).toBe(true);
  });
});

describe("dwell-timer evaluation", () => {
  // sample 1: raw 0.001 -> d_smooth 0.001 (PEGGED); sample 2: raw 0.01 -> 0.003 + 0.0007 = 0.0037 (DRIFT candidate)
  const warm = runTimeline(asset, [at(T0, "0.999"), at(T0 + SEC, "0.99")]);

  it("setup: DRIFT candidate tracked since the second sample, deadline 30 s later", () => {
    expect(warm.state.ewma!.eq("0.0037")).toBe(true);
    expect(warm.state.ewmaPrev!.eq("0.001")).toBe(true);
    expect(warm.state.candidate).toBe("DRIFT");
    expect(warm.state.candidateSince).toBe(T0 + SEC);
    expect(deadlineOf(warm.state)).toBe(T0 + 31 * SEC);
  });

  it("a timer at the deadline commits and re-uses the pre-sample EWMA", () => {
    const r = step(asset, warm.state, { kind: "dwell_timer", now: T0 + 31 * SEC });
    const d = onlyDecision(r.outcomes);
    expect(d.inputs.trigger).toBe("dwell_timer");
    expect(d.inputs.now).toBe(T0 + 31 * SEC);
    expect(d.inputs.ewma_prev!.eq("0.001")).toBe(true); // frozen: the EWMA before the last sample
    expect(d.inputs.market_usd.eq("0.99")).toBe(true); // the last accepted sample
    expect(d.computed.discount_raw.eq("0.01")).toBe(true);
    expect(d.computed.discount_smooth.eq("0.0037")).toBe(true); // unchanged
    expect(d.computed.band).toBe("DRIFT");
    expect(d.computed.final_state).toBe("DRIFT");
    expect(d.transition).toBe(true);
    expect(d.inputs.previous_state).toBe("PEGGED");
    expect(d.inputs.candidate_state).toBe("DRIFT");
    expect(d.inputs.candidate_since).toBe(T0 + SEC);
    // the EWMA state is not advanced by the timer
    expect(r.state.ewma!.eq("0.0037")).toBe(true);
    expect(r.state.ewmaPrev!.eq("0.001")).toBe(true);
    expect(r.state.committed).toBe("DRIFT");
    expect(r.state.candidate).toBeNull();
    expect(deadlineOf(r.state)).toBeNull();
  });

  it("a late timer evaluates at its own deadline, not at the trigger's now", () => {
    const r = step(asset, warm.state, { kind: "dwell_timer", now: T0 + 500 * SEC });
    const d = onlyDecision(r.outcomes);
    expect(d.inputs.now).toBe(T0 + 31 * SEC);
    expect(d.computed.band).toBe("DRIFT");
    expect(r.state.evaluatedAt).toBe(T0 + 31 * SEC);
  });

  it("a sample after an unfired deadline: dwell_timer decision at the deadline first, then the sample", () => {
    const r = step(asset, warm.state, { kind: "sample", sample: sample("0.99", T0 + 50 * SEC), now: T0 + 50 * SEC });
    expect(r.outcomes).toHaveLength(2);
    const [timer, smp] = decisions(r.outcomes);
    expect(timer!.inputs.trigger).toBe("dwell_timer");
    expect(timer!.inputs.now).toBe(T0 + 31 * SEC);
    expect(timer!.inputs.ewma_prev!.eq("0.001")).toBe(true);
    expect(timer!.computed.discount_smooth.eq("0.0037")).toBe(true);
    expect(timer!.computed.band).toBe("DRIFT");
    expect(timer!.transition).toBe(true);
    expect(smp!.inputs.trigger).toBe("sample");
    expect(smp!.inputs.now).toBe(T0 + 50 * SEC);
    expect(smp!.inputs.previous_band).toBe("DRIFT");
    expect(smp!.inputs.previous_state).toBe("DRIFT");
    expect(smp!.inputs.ewma_prev!.eq("0.0037")).toBe(true);
    // 0.3 x 0.01 + 0.7 x 0.0037 = 0.00559
    expect(smp!.computed.discount_smooth.eq("0.00559")).toBe(true);
    expect(smp!.transition).toBe(false);
    expect(r.state.ewma!.eq("0.00559")).toBe(true);
    expect(r.state.ewmaPrev!.eq("0.0037")).toBe(true);
  });

  it("a deadline and a sample at the same instant: the timer fires first", () => {
    const now = T0 + 31 * SEC;
    const r = step(asset, warm.state, { kind: "sample", sample: sample("1", now), now });
    const [timer, smp] = decisions(r.outcomes);
    expect(r.outcomes).toHaveLength(2);
    expect(timer!.inputs.trigger).toBe("dwell_timer");
    expect(timer!.inputs.now).toBe(now);
    expect(timer!.computed.band).toBe("DRIFT");
    expect(timer!.transition).toBe(true);
    expect(smp!.inputs.trigger).toBe("sample");
    expect(smp!.inputs.now).toBe(now);
    expect(smp!.inputs.previous_band).toBe("DRIFT");
    // the sample at par (0.7 x 0.0037 = 0.00259, 25 bps) stays DRIFT
    expect(smp!.computed.final_state).toBe("DRIFT");
  });

  it("a sample one millisecond before the deadline does not fire the timer", () => {
    const now = T0 + 31 * SEC - 1;
    const r = step(asset, warm.state, { kind: "sample", sample: sample("0.99", now), now });
    const d = onlyDecision(r.outcomes);
    expect(d.inputs.trigger).toBe("sample");
    expect(d.computed.band).toBe("PEGGED");
    expect(r.state.candidateSince).toBe(T0 + SEC);
  });

  it("if the deadline passed, a skipped sample still lets the timer fire first", () => {
    const r = step(asset, warm.state, { kind: "sample", sample: sample("0", T0 + 40 * SEC), now: T0 + 40 * SEC });
    expect(r.outcomes).toHaveLength(2);
    expect(r.outcomes[0]!.kind).toBe("decision");
    expect(r.outcomes[1]).toEqual({ kind: "skipped", reason: "implausible", now: T0 + 40 * SEC });
    expect(r.state.committed).toBe("DRIFT");
  });

  it("a quiet feed still commits on time through a relaxation as well", () => {
    const drift: AssetState = {
      ...INITIAL_STATE,
      committed: "DRIFT",
      published: "DRIFT",
      ewma: new D("0.003"),
      ewmaPrev: new D("0.003"),
      last: sample("0.997", T0 - SEC),
      evaluatedAt: T0 - SEC,
      publishedSince: T0 - 100 * SEC,
      committedSince: T0 - 100 * SEC,
    };
    const r1 = step(asset, drift, { kind: "sample", sample: sample("1.0065", T0), now: T0 });
    // 0.3 x (-0.0065) + 0.7 x 0.003 = 0.00015 (1 bps) -> PEGGED candidate
    expect(onlyDecision(r1.outcomes).computed.discount_smooth.eq("0.00015")).toBe(true);
    expect(deadlineOf(r1.state)).toBe(T0 + 120 * SEC);
    const r2 = step(asset, r1.state, { kind: "dwell_timer", now: T0 + 120 * SEC });
    const d = onlyDecision(r2.outcomes);
    expect(d.computed.band).toBe("PEGGED");
    expect(d.inputs.ewma_prev!.eq("0.003")).toBe(true);
    expect(d.computed.discount_smooth.eq("0.00015")).toBe(true);
    expect(d.transition).toBe(true);
  });

  it("state bookkeeping: publishedSince and committedSince move on change only", () => {
    const r = step(asset, warm.state, { kind: "dwell_timer", now: T0 + 31 * SEC });
    expect(r.state.publishedSince).toBe(T0 + 31 * SEC);
    expect(r.state.committedSince).toBe(T0 + 31 * SEC);
    const r2 = step(asset, r.state, { kind: "sample", sample: sample("0.99", T0 + 40 * SEC), now: T0 + 40 * SEC });
    expect(r2.state.publishedSince).toBe(T0 + 31 * SEC);
    expect(r2.state.committedSince).toBe(T0 + 31 * SEC);
  });
});

describe("escalation through step", () => {
  it("PEGGED -> BLACK_SWAN commits after 30 s with no intermediate band", () => {
    const r = runTimeline(asset, [at(T0, "1"), at(T0 + SEC, "0.7"), at(T0 + 10 * SEC, "0.7"), at(T0 + 40 * SEC, "0.7")]);
    const ts = decisions(r.outcomes).filter((d) => d.transition);
    expect(ts).toHaveLength(1);
    expect(ts[0]!.inputs.previous_state).toBe("PEGGED");
    expect(ts[0]!.computed.final_state).toBe("BLACK_SWAN");
    expect(ts[0]!.inputs.now).toBe(T0 + 31 * SEC);
  });
});
