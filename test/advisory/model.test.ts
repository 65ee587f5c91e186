/** The pure loop-exposure model: health, cascades, labels, the privacy rule and the wire forms, with exact decimals. */
import { describe, expect, it } from "vitest";
import {
  ADVISORY_NOTE,
  chainPublication,
  crossPublishable,
  healthAfterShock,
  lendingPosition,
  liquidatableAt,
  loopExposure,
  loopExposureBody,
  loopExposureByMint,
  partitionPublication,
  PositionError,
  positionsLabel,
  publishable,
  simulateDepegBody,
  systemicBody,
  type LendingPosition,
} from "../../src/advisory/index.ts";

const MINT = "J1toso1uCk3RLmjorhTtrVwY9HJ7X8V9yYac6Y7kGCPn";
const OTHER = "mSoLzYCxHdYgdzU16g5QSh3i5K3z3KZK7ytfqcJm7So";
const AT = Date.UTC(2026, 5, 12, 12, 0, 0);

const pos = (collateral: string, debt: string, o: { protocol?: string; lt?: string; mint?: string } = {}): LendingPosition =>
  lendingPosition({ protocol: o.protocol ?? "kamino", collateral_mint: o.mint ?? MINT, collateral_usd: collateral, debt_usd: debt, liquidation_threshold: o.lt ?? "0.9" });

const times = (n: number, make: () => LendingPosition): LendingPosition[] => Array.from({ length: n }, make);

describe("the position model", () => {
  it("keeps exactly the five model fields, nothing else an adapter carried", () => {
    const p = lendingPosition({ protocol: "kamino", collateral_mint: MINT, collateral_usd: "10", debt_usd: "5", liquidation_threshold: "0.9", owner: "Wallet1111", obligationAddress: "x" } as never);
    expect(Object.keys(p).sort()).toEqual(["collateral_mint", "collateral_usd", "debt_usd", "liquidation_threshold", "protocol"]);
    expect(Object.isFrozen(p)).toBe(true);
  });

  it("refuses what cannot be modelled, with a named error", () => {
    const bad = [
      { collateral_usd: "-1" },
      { debt_usd: "-0.01" },
      { liquidation_threshold: "0" },
      { liquidation_threshold: "1.01" },
      { collateral_usd: "1e3" },
      { collateral_usd: "abc" },
      { protocol: "Kamino Finance" },
      { collateral_mint: "not-a-mint" },
    ];
    for (const b of bad) {
      expect(() => lendingPosition({ protocol: "kamino", collateral_mint: MINT, collateral_usd: "1", debt_usd: "1", liquidation_threshold: "0.9", ...b }), JSON.stringify(b)).toThrow(PositionError);
    }
  });
});

describe("health and the liquidation line", () => {
  it("health = collateral x (1 - shock) x threshold / debt, exactly", () => {
    expect(healthAfterShock(pos("1000", "800"), 500)!.toFixed()).toBe("1.06875");
    expect(healthAfterShock(pos("1000", "800"), 0)!.toFixed()).toBe("1.125");
    expect(healthAfterShock(pos("1000", "0"), 2000)).toBeNull();
  });

  it("health exactly 1 is not liquidatable; a cent more debt is", () => {
    // 1000 x 0.9 x 0.9 = 810 at a 1000 bps shock.
    expect(liquidatableAt(pos("1000", "810"), 1000)).toBe(false);
    expect(liquidatableAt(pos("1000", "810.01"), 1000)).toBe(true);
    expect(liquidatableAt(pos("1000", "0"), 2000)).toBe(false);
    // Already under water before any shock: liquidatable at every shock.
    for (const s of [100, 250, 500, 1000, 2000]) expect(liquidatableAt(pos("1000", "950"), s)).toBe(true);
  });
});

describe("positions labels", () => {
  it("are k-floored ranges, never a count below the floor", () => {
    const cases: [number, string][] = [[0, "0"], [1, "<5"], [4, "<5"], [5, "5-9"], [9, "5-9"], [10, "10-24"], [24, "10-24"], [25, "25-49"], [49, "25-49"], [50, "50-99"], [99, "50-99"], [100, "100-249"], [250, "250-499"], [999, "500-999"], [1000, "1000+"], [123456, "1000+"]];
    for (const [n, label] of cases) expect(positionsLabel(n), String(n)).toBe(label);
    expect(() => positionsLabel(-1)).toThrow(RangeError);
    expect(() => positionsLabel(1.5)).toThrow(RangeError);
  });
});

describe("the privacy rule", () => {
  it("needs 5 positions and no single position above half of the collateral or the debt", () => {
    expect(publishable([])).toBe(true);
    expect(publishable(times(4, () => pos("100", "80")))).toBe(false);
    expect(publishable(times(5, () => pos("100", "80")))).toBe(true);
    // Exactly half is not above half.
    expect(publishable([pos("400", "80"), ...times(4, () => pos("100", "80"))])).toBe(true);
    expect(publishable([pos("401", "80"), ...times(4, () => pos("100", "80"))])).toBe(false);
    // Debt dominance counts too: debts 10 + 4 x 1, half of 14 is 7.
    expect(publishable([pos("100", "10"), ...times(4, () => pos("100", "1"))])).toBe(false);
  });

  it("publishes a rung only when the positions added since the last published one are a publishable block", () => {
    const a = times(5, () => pos("1000", "880"));
    const b = times(2, () => pos("1000", "860"));
    const c = times(4, () => pos("1000", "850"));
    const d = times(6, () => pos("1000", "700"));
    const total = [...a, ...b, ...c, ...d];
    expect(chainPublication(total, [[], a, [...a, ...b], [...a, ...b, ...c], [...a, ...b, ...c]])).toEqual([true, true, false, true, true]);
  });

  it("withdraws the top rungs while what lies beyond them is below the floor", () => {
    const a = times(5, () => pos("1000", "880"));
    const b = times(2, () => pos("1000", "700"));
    expect(chainPublication([...a, ...b], [[], a, a, a, a])).toEqual([true, false, false, false, false]);
  });

  it("skips a rung that is not eligible: the next block is measured from the last published rung", () => {
    const a = times(5, () => pos("1000", "880"));
    const b = times(5, () => pos("1000", "700"));
    const c = times(5, () => pos("1000", "600"));
    const total = [...a, ...b, ...c];
    expect(chainPublication(total, [a, [...a, ...b], [...a, ...b]], [false, true, true])).toEqual([false, true, true]);
    expect(chainPublication(total, [a, [...a, ...b], [...a, ...b]], [true, false, true])).toEqual([true, false, true]);
  });

  it("checks a rung against every protocol bucket nested with it", () => {
    const kamino = times(5, () => pos("1000", "950"));
    const one = pos("1000", "950", { protocol: "marginfi" });
    const marginfi = [one, ...times(4, () => pos("1000", "500", { protocol: "marginfi" }))];
    // kamino lies wholly inside the rung: rung minus kamino would be one marginfi position.
    expect(crossPublishable([...kamino, one], [kamino, marginfi])).toBe(false);
    // The rung lies wholly inside marginfi: marginfi minus the rung is 4 positions.
    expect(crossPublishable([one], [kamino, marginfi])).toBe(false);
    // Nested with nothing, or with a publishable difference.
    expect(crossPublishable([...kamino.slice(0, 4), one], [kamino, marginfi])).toBe(true);
    expect(crossPublishable([...kamino, ...marginfi], [kamino, marginfi])).toBe(true);
    expect(crossPublishable([], [kamino, marginfi])).toBe(true);
  });

  it("withholds protocols complementarily: the withheld ones together must be publishable too", () => {
    const kamino = times(6, () => pos("1000", "800"));
    const marginfi = times(6, () => pos("500", "400", { protocol: "marginfi" }));
    const drift = times(3, () => pos("1000", "800", { protocol: "drift" }));
    // drift alone is below the floor; total minus the others would reveal it, so the smaller of the others goes too.
    expect(partitionPublication([drift, kamino, marginfi])).toEqual([false, true, false]);
    expect(partitionPublication([kamino, marginfi])).toEqual([true, true]);
    // Two cells that are each too small but publishable together.
    expect(partitionPublication([times(3, () => pos("1", "1")), times(3, () => pos("1", "1"))])).toEqual([false, false]);
  });
});

describe("loop exposure of one asset", () => {
  it("computes totals, protocols and the cascade exactly; a rung whose increment is too small repeats the previous figure", () => {
    const book = [
      ...times(5, () => pos("1000", "880")), // first liquidatable at 250 bps (877.5 < 880)
      ...times(2, () => pos("1000", "860")), // at 500 bps (855 < 860)
      ...times(4, () => pos("1000", "850")), // at 1000 bps (810 < 850)
      ...times(6, () => pos("1000", "700")), // never (720 > 700)
      pos("5000", "4000", { mint: OTHER }), // another asset: not counted
      pos("5000", "0"), // no debt: not leverage
    ];
    const e = loopExposure(book, MINT);
    expect(e.tracked).toBe(true);
    expect(e.coverage).toBe("partial");
    const body = loopExposureBody("jitoSOL", e, AT);
    expect(body).toEqual({
      asset: "jitoSOL",
      loop_exposure_usd: "17000",
      debt_usd: "13720",
      coverage: "partial",
      by_protocol: [{ protocol: "kamino", collateral_lev_usd: "17000", debt_usd: "13720" }],
      cascade: [
        { shock_bps: 100, liquidatable_usd: "0", positions: "0" },
        { shock_bps: 250, liquidatable_usd: "5000", positions: "5-9" },
        { shock_bps: 500, liquidatable_usd: "5000", positions: "5-9" },
        { shock_bps: 1000, liquidatable_usd: "11000", positions: "10-24" },
        { shock_bps: 2000, liquidatable_usd: "11000", positions: "10-24" },
      ],
      updated_at: "2026-06-12T12:00:00.000Z",
      advisory_note: ADVISORY_NOTE,
    });
    expect(simulateDepegBody("jitoSOL", e, 500, AT)).toMatchObject({ shock_bps: 500, liquidatable_usd: "5000", positions: "5-9", loop_exposure_usd: "17000", coverage: "partial" });
    expect(simulateDepegBody("jitoSOL", e, 1000, AT)).toMatchObject({ liquidatable_usd: "11000", positions: "10-24" });
  });

  it("is full coverage when nothing had to be withheld", () => {
    const book = [...times(5, () => pos("1000", "880")), ...times(5, () => pos("2000", "1000", { protocol: "marginfi" }))];
    const e = loopExposure(book);
    expect(e.coverage).toBe("full");
    expect(loopExposureBody("X", e, AT).by_protocol).toEqual([
      { protocol: "kamino", collateral_lev_usd: "5000", debt_usd: "4400" },
      { protocol: "marginfi", collateral_lev_usd: "10000", debt_usd: "5000" },
    ]);
  });

  it("a carried rung shows the label of the published set, not of its own", () => {
    const book = [
      ...times(9, () => pos("1000", "880")), // at 250 bps
      ...times(2, () => pos("1000", "860")), // at 500 bps: 11 liquidatable, but the block of 2 is withheld
      ...times(6, () => pos("1000", "850")), // at 1000 bps
      ...times(6, () => pos("1000", "700")), // never
    ];
    expect(loopExposureBody("X", loopExposure(book), AT).cascade.map((r) => [r.liquidatable_usd, r.positions])).toEqual([
      ["0", "0"],
      ["9000", "5-9"],
      ["9000", "5-9"],
      ["17000", "10-24"],
      ["17000", "10-24"],
    ]);
  });

  it("leaves a withheld protocol out of by_protocol, the totals and the cascade, with its complementary partner", () => {
    const book = [
      ...times(6, () => pos("1000", "950")), // kamino: liquidatable at every shock
      ...times(6, () => pos("500", "400", { protocol: "marginfi" })), // never
      ...times(3, () => pos("1000", "950", { protocol: "drift" })), // below the floor, liquidatable at every shock
    ];
    const e = loopExposure(book);
    const body = loopExposureBody("X", e, AT);
    // drift alone is below the floor; marginfi (the smaller listed bucket) goes too so drift + marginfi is a band.
    expect(body).toMatchObject({ loop_exposure_usd: "6000", debt_usd: "5700", coverage: "partial", by_protocol: [{ protocol: "kamino", collateral_lev_usd: "6000", debt_usd: "5700" }] });
    // The cascade counts kamino only: 6000 at every shock, never drift's 3000 on top.
    expect(body.cascade.map((r) => [r.liquidatable_usd, r.positions])).toEqual(Array.from({ length: 5 }, () => ["6000", "5-9"]));
    expect(systemicBody(e, AT)).toMatchObject({ loop_exposure_usd: "6000", protocols: ["kamino"], coverage: "partial" });
    expect(simulateDepegBody("X", e, 100, AT)).toMatchObject({ liquidatable_usd: "6000", loop_exposure_usd: "6000", by_protocol: [{ protocol: "kamino" }] });
  });

  it("keeps the omitted protocols out of the cascade: total minus rung would otherwise be one position", () => {
    const book = [
      ...times(10, () => pos("1000", "950")), // kamino: liquidatable at every shock
      ...times(3, () => pos("1000", "500", { protocol: "drift" })), // never
      pos("1000", "950", { protocol: "marginfi" }), // liquidatable at every shock
      ...times(2, () => pos("1000", "500", { protocol: "marginfi" })), // never
    ];
    const body = loopExposureBody("X", loopExposure(book), AT);
    // drift and marginfi are each below the floor and publishable together, so kamino alone is listed.
    expect(body).toMatchObject({ loop_exposure_usd: "10000", debt_usd: "9500", coverage: "partial" });
    expect(body.by_protocol.map((p) => p.protocol)).toEqual(["kamino"]);
    // Over the whole book the rung would be 11000: 11000 - 10000 isolates the one marginfi position.
    expect(body.cascade.map((r) => r.liquidatable_usd)).toEqual(["10000", "10000", "10000", "10000", "10000"]);
  });

  it("withholds a rung that differs from a protocol bucket by a band below the floor", () => {
    const book = [
      ...times(5, () => pos("1000", "950")), // kamino: liquidatable at every shock
      pos("1000", "950", { protocol: "marginfi" }), // liquidatable at every shock
      ...times(4, () => pos("1000", "500", { protocol: "marginfi" })),
      ...times(5, () => pos("1000", "500", { protocol: "save" })),
    ];
    const body = loopExposureBody("X", loopExposure(book), AT);
    expect(body).toMatchObject({ loop_exposure_usd: "15000", debt_usd: "10200", coverage: "partial" });
    expect(body.by_protocol).toEqual([
      { protocol: "kamino", collateral_lev_usd: "5000", debt_usd: "4750" },
      { protocol: "marginfi", collateral_lev_usd: "5000", debt_usd: "2950" },
      { protocol: "save", collateral_lev_usd: "5000", debt_usd: "2500" },
    ]);
    // The 6 liquidatable positions contain all of kamino: 6000 - 5000 would be the one marginfi position.
    expect(body.cascade.map((r) => [r.liquidatable_usd, r.positions])).toEqual(Array.from({ length: 5 }, () => ["0", "0"]));
  });

  it("publishes zeros, no protocols and partial coverage when the whole book is below the floor", () => {
    const e = loopExposure([pos("1000", "880"), pos("1000", "880"), pos("1000", "700")]);
    const body = loopExposureBody("X", e, AT);
    expect(body).toMatchObject({ loop_exposure_usd: "0", debt_usd: "0", coverage: "partial", by_protocol: [] });
    expect(body.cascade.map((r) => [r.shock_bps, r.liquidatable_usd, r.positions])).toEqual([
      [100, "0", "0"],
      [250, "0", "0"],
      [500, "0", "0"],
      [1000, "0", "0"],
      [2000, "0", "0"],
    ]);
    expect(simulateDepegBody("X", e, 500, AT)).toMatchObject({ liquidatable_usd: "0", positions: "0", loop_exposure_usd: "0", coverage: "partial", by_protocol: [] });
    // Tracked, so the feed still carries the systemic block: zeros, partial.
    expect(systemicBody(e, AT)).toMatchObject({ loop_exposure_usd: "0", protocols: [], coverage: "partial" });
  });

  it("dominance by one position withholds the whole book too", () => {
    const body = loopExposureBody("X", loopExposure([...times(5, () => pos("100", "80")), pos("100000", "80000", { protocol: "drift" })]), AT);
    expect(body).toMatchObject({ loop_exposure_usd: "0", debt_usd: "0", coverage: "partial", by_protocol: [] });
  });

  it("rounds USD aggregates to cents half-even, after summing exactly", () => {
    // 5 x 100.005 = 500.025 -> 500.02 (half-even; half-up would give 500.03).
    const even = loopExposureBody("X", loopExposure(times(5, () => pos("100.005", "50"))), AT);
    expect(even.loop_exposure_usd).toBe("500.02");
    // 5 x 100.007 = 500.035 -> 500.04; 5 x 100.2 = 501 -> "501" (trailing zeros trimmed).
    expect(loopExposureBody("X", loopExposure(times(5, () => pos("100.007", "50"))), AT).loop_exposure_usd).toBe("500.04");
    expect(loopExposureBody("X", loopExposure(times(5, () => pos("100.2", "50.1"))), AT)).toMatchObject({ loop_exposure_usd: "501", debt_usd: "250.5" });
  });

  it("with no leverage: zero totals, empty lists, full coverage, and no systemic block", () => {
    const e = loopExposure([pos("1000", "0"), pos("1000", "800", { mint: OTHER })], MINT);
    expect(e.tracked).toBe(false);
    expect(loopExposureBody("X", e, AT)).toMatchObject({ loop_exposure_usd: "0", debt_usd: "0", coverage: "full", by_protocol: [], cascade: [] });
    expect(simulateDepegBody("X", e, 250, AT)).toMatchObject({ liquidatable_usd: "0", positions: "0", by_protocol: [] });
    expect(systemicBody(e, AT)).toBeUndefined();
    expect(systemicBody(undefined, AT)).toBeUndefined();
  });

  it("says it is an estimate, not a receipt, and a lower bound when partial", () => {
    expect(ADVISORY_NOTE).toMatch(/model estimate/i);
    expect(ADVISORY_NOTE).toMatch(/not a verifiable receipt/i);
    expect(ADVISORY_NOTE).toMatch(/lower bound/i);
    expect(ADVISORY_NOTE).not.toMatch(/null/i);
  });
});

describe("loop exposure per mint", () => {
  it("groups by collateral mint and gives each mint's exposure, the same object on every read", () => {
    const book = [...times(6, () => pos("1000", "800")), pos("500", "400", { mint: OTHER }), pos("700", "0", { mint: OTHER })];
    const byMint = loopExposureByMint(book);
    expect([...byMint.keys()].sort()).toEqual([MINT, OTHER].sort());
    expect(byMint.get(MINT)).toEqual(loopExposure(book, MINT));
    expect(byMint.get(OTHER)).toEqual(loopExposure(book, OTHER));
    expect(byMint.get(MINT)).toBe(byMint.get(MINT));
    expect(byMint.get("So11111111111111111111111111111111111111112")).toBeUndefined();
  });
});
