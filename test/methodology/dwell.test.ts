/** Methodology section 5: dwell (time hysteresis), as a pure function and through `step`. */
import { describe, expect, it } from "vitest";
import {
  D,
  deadlineOf,
  dwell,
  dwellDeadline,
  INITIAL_STATE,
  step,
  type AssetState,
  type Band,
  type DwellState,
} from "../../src/methodology/index.ts";
import { assetOf, at, decisions, onlyDecision, runTimeline, sample, SEC, T0 } from "./helpers.ts";

const W = { confirmUpSecs: 30, decayDownSecs: 120 };
const ZERO_W = { confirmUpSecs: 0, decayDownSecs: 0 };

const st = (committed: Band, candidate: Band | null = null, candidateSince: number | null = null): DwellState => ({
  committed,
  candidate,
  candidateSince,
});

describe("dwell (pure)", () => {
  it("candidate equal to committed keeps it and clears tracking", () => {
    expect(dwell(st("DRIFT", "DEPEG", T0), "DRIFT", T0 + 5 * SEC, W)).toEqual(st("DRIFT"));
    expect(dwell(st("PEGGED", "DRIFT", T0), "PEGGED", T0 + 500 * SEC, W)).toEqual(st("PEGGED"));
    expect(dwell(st("PEGGED"), "PEGGED", T0, W)).toEqual(st("PEGGED"));
  });

  it("a first sighting tracks the candidate with since = now and never commits", () => {
    expect(dwell(st("PEGGED"), "DRIFT", T0, W)).toEqual(st("PEGGED", "DRIFT", T0));
    expect(dwell(st("DEPEG"), "PEGGED", T0, W)).toEqual(st("DEPEG", "PEGGED", T0));
  });

  it("a first sighting never commits, even with zero-length windows", () => {
    expect(dwell(st("PEGGED"), "BLACK_SWAN", T0, ZERO_W)).toEqual(st("PEGGED", "BLACK_SWAN", T0));
    expect(dwell(st("CRITICAL"), "PEGGED", T0, ZERO_W)).toEqual(st("CRITICAL", "PEGGED", T0));
  });

  it("with zero-length windows the second same-side evaluation commits", () => {
    expect(dwell(st("PEGGED", "DRIFT", T0), "DRIFT", T0, ZERO_W)).toEqual(st("DRIFT"));
  });

  it("escalation: 29.999 s does not commit, 30.000 s does (elapsed truncated to whole seconds)", () => {
    expect(dwell(st("PEGGED", "DRIFT", T0), "DRIFT", T0 + 29_999, W)).toEqual(st("PEGGED", "DRIFT", T0));
    expect(dwell(st("PEGGED", "DRIFT", T0), "DRIFT", T0 + 30_000, W)).toEqual(st("DRIFT"));
    expect(dwell(st("PEGGED", "DRIFT", T0), "DRIFT", T0 + 30_999, W)).toEqual(st("DRIFT"));
  });

  it("exit: 119.999 s does not commit, 120.000 s does", () => {
    expect(dwell(st("DRIFT", "PEGGED", T0), "PEGGED", T0 + 119_999, W)).toEqual(st("DRIFT", "PEGGED", T0));
    expect(dwell(st("DRIFT", "PEGGED", T0), "PEGGED", T0 + 120_000, W)).toEqual(st("PEGGED"));
  });

  it("a sub-second since: 29.999 s after since is 29 whole seconds", () => {
    const since = T0 + 777;
    expect(dwell(st("PEGGED", "DEPEG", since), "DEPEG", since + 29_999, W).committed).toBe("PEGGED");
    expect(dwell(st("PEGGED", "DEPEG", since), "DEPEG", since + 30_000, W).committed).toBe("DEPEG");
    expect(dwell(st("CRITICAL", "DEPEG", since), "DEPEG", since + 119_999, W).committed).toBe("CRITICAL");
    expect(dwell(st("CRITICAL", "DEPEG", since), "DEPEG", since + 120_000, W).committed).toBe("DEPEG");
  });

  it("an escalation needs 30 s, not 120 s; a relaxation needs 120 s, not 30 s", () => {
    expect(dwell(st("DRIFT", "DEPEG", T0), "DEPEG", T0 + 30 * SEC, W).committed).toBe("DEPEG");
    expect(dwell(st("DEPEG", "DRIFT", T0), "DRIFT", T0 + 30 * SEC, W).committed).toBe("DEPEG");
    expect(dwell(st("DEPEG", "DRIFT", T0), "DRIFT", T0 + 60 * SEC, W).committed).toBe("DEPEG");
  });

  it("a side flip resets since (up -> down)", () => {
    expect(dwell(st("DRIFT", "DEPEG", T0), "PEGGED", T0 + 200 * SEC, W)).toEqual(st("DRIFT", "PEGGED", T0 + 200 * SEC));
  });

  it("a side flip resets since (down -> up)", () => {
    expect(dwell(st("DRIFT", "PEGGED", T0), "CRITICAL", T0 + 200 * SEC, W)).toEqual(
      st("DRIFT", "CRITICAL", T0 + 200 * SEC),
    );
  });

  it("same-side flicker DRIFT <-> DEPEG above a PEGGED commit keeps the original since", () => {
    let s = dwell(st("PEGGED"), "DRIFT", T0, W);
    s = dwell(s, "DEPEG", T0 + 10 * SEC, W);
    expect(s).toEqual(st("PEGGED", "DEPEG", T0));
    s = dwell(s, "DRIFT", T0 + 20 * SEC, W);
    expect(s).toEqual(st("PEGGED", "DRIFT", T0));
    s = dwell(s, "DEPEG", T0 + 29 * SEC, W);
    expect(s).toEqual(st("PEGGED", "DEPEG", T0));
  });

  it("same-side flicker commits the current candidate when the window matures", () => {
    const tracked = st("PEGGED", "DRIFT", T0);
    expect(dwell(tracked, "DEPEG", T0 + 30 * SEC, W)).toEqual(st("DEPEG"));
    const tracked2 = st("PEGGED", "DEPEG", T0);
    expect(dwell(tracked2, "DRIFT", T0 + 30 * SEC, W)).toEqual(st("DRIFT"));
  });

  it("same-side flicker on the way down keeps since and commits the current candidate", () => {
    let s = dwell(st("CRITICAL"), "DEPEG", T0, W);
    s = dwell(s, "DRIFT", T0 + 60 * SEC, W);
    expect(s).toEqual(st("CRITICAL", "DRIFT", T0));
    s = dwell(s, "PEGGED", T0 + 120 * SEC, W);
    expect(s).toEqual(st("PEGGED"));
  });

  it("the needed window follows the current candidate's side (tracked DEPEG up, now CRITICAL: 30 s)", () => {
    expect(dwell(st("DRIFT", "DEPEG", T0), "CRITICAL", T0 + 30 * SEC, W)).toEqual(st("CRITICAL"));
  });

  it("a since in the future never matures", () => {
    expect(dwell(st("PEGGED", "DRIFT", T0 + 5 * SEC), "DRIFT", T0, W)).toEqual(st("PEGGED", "DRIFT", T0 + 5 * SEC));
    expect(dwell(st("DRIFT", "PEGGED", T0 + 999_000), "PEGGED", T0, W).committed).toBe("DRIFT");
    expect(dwell(st("PEGGED", "DRIFT", T0 + 5 * SEC), "DRIFT", T0, ZERO_W).committed).toBe("PEGGED");
  });

  // Methodology section 5: "A `since` in the future never matures." With zero-length windows a since less than one
  // second in the future truncates to an elapsed of 0 whole seconds, which is >= 0: that must still not commit.
  it("a since in the future never matures, even with zero-length windows and a sub-second lead", () => {
    expect(dwell(st("PEGGED", "DRIFT", T0 + 500), "DRIFT", T0, ZERO_W).committed).toBe("PEGGED");
    expect(dwell(st("DRIFT", "PEGGED", T0 + 1), "PEGGED", T0, ZERO_W).committed).toBe("DRIFT");
  });

  it("a tracked candidate without a since is treated as a first sighting", () => {
    expect(dwell(st("PEGGED", "DRIFT", null), "DRIFT", T0 + 100 * SEC, W)).toEqual(st("PEGGED", "DRIFT", T0 + 100 * SEC));
  });

  it("dwellDeadline is since + 30 s for an escalation, since + 120 s for a relaxation, null untracked", () => {
    expect(dwellDeadline(st("PEGGED", "DRIFT", T0), W)).toBe(T0 + 30 * SEC);
    expect(dwellDeadline(st("DEPEG", "DRIFT", T0), W)).toBe(T0 + 120 * SEC);
    expect(dwellDeadline(st("DEPEG"), W)).toBeNull();
  });
});

describe("dwell through step", () => {
  const { asset } = assetOf("stable_fiat"); // defaults 20/100/300

  it("escalation commits at 30.000 s, not at 29.999 s (sub-second since)", () => {
    const since = T0 + 500;
    const warm = runTimeline(asset, [at(since, "0.995")]); // 50 bps -> DRIFT candidate
    expect(warm.state.committed).toBe("PEGGED");
    expect(warm.state.candidate).toBe("DRIFT");
    expect(warm.state.candidateSince).toBe(since);
    expect(deadlineOf(warm.state)).toBe(since + 30_000);

    const early = step(asset, warm.state, { kind: "sample", sample: sample("0.995", since + 29_999), now: since + 29_999 });
    expect(early.outcomes).toHaveLength(1);
    expect(onlyDecision(early.outcomes).computed.band).toBe("PEGGED");
    expect(early.state.candidateSince).toBe(since);

    const onTime = step(asset, early.state, { kind: "sample", sample: sample("0.995", since + 30_000), now: since + 30_000 });
    const ds = decisions(onTime.outcomes);
    expect(ds).toHaveLength(2);
    expect(ds[0]!.inputs.trigger).toBe("dwell_timer");
    expect(ds[0]!.inputs.now).toBe(since + 30_000);
    expect(ds[0]!.computed.band).toBe("DRIFT");
    expect(ds[0]!.transition).toBe(true);
    expect(ds[1]!.inputs.trigger).toBe("sample");
    expect(ds[1]!.transition).toBe(false);
    expect(onTime.state.committed).toBe("DRIFT");
  });

  it("a dwell-timer trigger before the deadline does nothing; at the deadline it commits", () => {
    const warm = runTimeline(asset, [at(T0, "0.995")]);
    const early = step(asset, warm.state, { kind: "dwell_timer", now: T0 + 29_999 });
    expect(early.outcomes).toEqual([]);
    expect(early.state).toEqual(warm.state);
    const due = step(asset, warm.state, { kind: "dwell_timer", now: T0 + 30_000 });
    const d = onlyDecision(due.outcomes);
    expect(d.inputs.trigger).toBe("dwell_timer");
    expect(d.computed.band).toBe("DRIFT");
    expect(d.transition).toBe(true);
  });

  it("exit commits at 120.000 s, not at 119.999 s", () => {
    const drift: AssetState = {
      ...INITIAL_STATE,
      committed: "DRIFT",
      published: "DRIFT",
      ewma: new D("0.005"),
      ewmaPrev: new D("0.005"),
      last: sample("0.995", T0 - 60 * SEC),
      discountRaw: new D("0.005"),
      evaluatedAt: T0 - 60 * SEC,
      publishedSince: T0 - 600 * SEC,
      committedSince: T0 - 600 * SEC,
    };
    // a market slightly above intrinsic pulls d_smooth below the 15 bps DRIFT exit in one sample
    const since = T0 + 250;
    const r1 = step(asset, drift, { kind: "sample", sample: sample("1.0116", since), now: since });
    // d_smooth = 0.3 x (-0.0116) + 0.7 x 0.005 = 0.00002 -> 0 bps -> PEGGED candidate
    expect(onlyDecision(r1.outcomes).computed.discount_smooth.eq("0.00002")).toBe(true);
    expect(r1.state.candidate).toBe("PEGGED");
    expect(r1.state.candidateSince).toBe(since);
    expect(deadlineOf(r1.state)).toBe(since + 120_000);

    const early = step(asset, r1.state, { kind: "dwell_timer", now: since + 119_999 });
    expect(early.outcomes).toEqual([]);
    const due = step(asset, r1.state, { kind: "dwell_timer", now: since + 120_000 });
    const d = onlyDecision(due.outcomes);
    expect(d.computed.band).toBe("PEGGED");
    expect(d.inputs.previous_state).toBe("DRIFT");
    expect(d.transition).toBe(true);
  });

  it("same-side flicker through step keeps the original since and commits the current candidate", () => {
    const r = runTimeline(asset, [
      at(T0, "0.995"), // 50 bps: DRIFT candidate since T0
      at(T0 + 10 * SEC, "0.95"), // 0.3 x 0.05 + 0.7 x 0.005 = 0.0185: DEPEG, same side
    ]);
    expect(r.state.candidate).toBe("DEPEG");
    expect(r.state.candidateSince).toBe(T0);
    const due = step(asset, r.state, { kind: "dwell_timer", now: T0 + 30 * SEC });
    const d = onlyDecision(due.outcomes);
    expect(d.computed.band).toBe("DEPEG");
    expect(d.computed.final_state).toBe("DEPEG");
    expect(d.inputs.previous_state).toBe("PEGGED");
  });

  it("a side flip through step resets since", () => {
    const drift: AssetState = {
      ...INITIAL_STATE,
      committed: "DRIFT",
      published: "DRIFT",
      ewma: new D("0.005"),
      last: sample("0.995", T0 - 60 * SEC),
      evaluatedAt: T0 - 60 * SEC,
      publishedSince: T0 - 600 * SEC,
      committedSince: T0 - 600 * SEC,
    };
    // 0.3 x 0.05 + 0.7 x 0.005 = 0.0185 -> DEPEG (up)
    const up = step(asset, drift, { kind: "sample", sample: sample("0.95", T0), now: T0 });
    expect(up.state.candidate).toBe("DEPEG");
    expect(up.state.candidateSince).toBe(T0);
    // 0.3 x (-0.0431) + 0.7 x 0.0185 = 0.00002: below the 15 bps DRIFT exit -> PEGGED (down)
    const down = step(asset, up.state, { kind: "sample", sample: sample("1.0431", T0 + 10 * SEC), now: T0 + 10 * SEC });
    const smooth = onlyDecision(down.outcomes).computed.discount_smooth;
    expect(smooth.abs().lt("0.0015")).toBe(true);
    expect(down.state.candidate).toBe("PEGGED");
    expect(down.state.candidateSince).toBe(T0 + 10 * SEC);
    expect(deadlineOf(down.state)).toBe(T0 + 130 * SEC);
  });
});
