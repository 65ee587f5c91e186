/**
 * Properties of the loop-exposure model over random books: cascades are monotone in the shock, and the privacy rule
 * never leaks a band below the floor — neither a published figure nor the difference of two nested published figures
 * describes fewer than 5 positions or one dominated by a single position. The band check here is written
 * independently of src/advisory/privacy.ts, from the interface's wording.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { D, type Decimal } from "../../src/methodology/index.ts";
import { lendingPosition, liquidatableAt, loopExposure, loopExposureBody, SHOCK_BPS, type LendingPosition, type LoopExposure } from "../../src/advisory/index.ts";

const MINT = "J1toso1uCk3RLmjorhTtrVwY9HJ7X8V9yYac6Y7kGCPn";
const LABEL_ORDER = ["0", "<5", "5-9", "10-24", "25-49", "50-99", "100-249", "250-499", "500-999", "1000+"];

/** One position: collateral in cents, debt as a per-mille ratio of it (0 to 1.2x), a threshold, a protocol. */
const position = fc
  .record({
    cents: fc.oneof(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 10_000_000_000 })),
    ratio: fc.integer({ min: 0, max: 1200 }),
    lt: fc.constantFrom("0.8", "0.88", "0.9", "0.95", "1"),
    protocol: fc.constantFrom("kamino", "marginfi", "save", "drift"),
  })
  .map(({ cents, ratio, lt, protocol }) => {
    const collateral = new D(cents).div(100);
    return lendingPosition({ protocol, collateral_mint: MINT, collateral_usd: collateral, debt_usd: collateral.times(ratio).div(1000).toDecimalPlaces(2), liquidation_threshold: lt });
  });

/** Books from empty to a few dozen positions, often with many near-identical ones so bands pass the floor. */
const book = fc.oneof(
  fc.array(position, { maxLength: 12 }),
  fc.array(position, { minLength: 5, maxLength: 60 }),
  fc.tuple(position, fc.integer({ min: 1, max: 30 }), fc.array(position, { maxLength: 8 })).map(([p, n, rest]) => [...Array.from({ length: n }, () => lendingPosition(p)), ...rest]),
);

function sum(ps: readonly LendingPosition[], f: (p: LendingPosition) => Decimal): Decimal {
  return ps.reduce((s, p) => s.plus(f(p)), new D(0));
}

/** The interface's rule: at least 5 positions and none above half the band's collateral or debt (empty: nobody). */
function safeBand(ps: readonly LendingPosition[]): boolean {
  if (ps.length === 0) return true;
  if (ps.length < 5) return false;
  const c = sum(ps, (p) => p.collateral_usd);
  const d = sum(ps, (p) => p.debt_usd);
  return ps.every((p) => p.collateral_usd.times(2).lte(c) && p.debt_usd.times(2).lte(d));
}

const leveraged = (ps: readonly LendingPosition[]) => ps.filter((p) => p.debt_usd.gt(0));

describe("cascade monotonicity", () => {
  it("a position liquidatable at a shock is liquidatable at every larger one", () => {
    fc.assert(
      fc.property(position, (p) => {
        for (let i = 0; i < SHOCK_BPS.length; i++) {
          for (let j = i + 1; j < SHOCK_BPS.length; j++) {
            if (liquidatableAt(p, SHOCK_BPS[i]!)) expect(liquidatableAt(p, SHOCK_BPS[j]!)).toBe(true);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it("published liquidatable_usd and the positions labels never decrease with the shock", () => {
    fc.assert(
      fc.property(book, (ps) => {
        const body = loopExposureBody("X", loopExposure(ps), 0);
        const shown = body.cascade.filter((r) => r.liquidatable_usd !== null).map((r) => new D(r.liquidatable_usd!));
        for (let i = 1; i < shown.length; i++) expect(shown[i]!.gte(shown[i - 1]!)).toBe(true);
        const ranks = body.cascade.map((r) => LABEL_ORDER.indexOf(r.positions));
        expect(ranks.every((r) => r >= 0)).toBe(true);
        for (let i = 1; i < ranks.length; i++) expect(ranks[i]).toBeGreaterThanOrEqual(ranks[i - 1]!);
        // Each published rung is at most the published total.
        if (body.loop_exposure_usd !== null) for (const s of shown) expect(s.lte(new D(body.loop_exposure_usd).plus("0.01"))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});

describe("the privacy rule never leaks a band below the floor", () => {
  function checkNoLeak(ps: readonly LendingPosition[], e: LoopExposure): void {
    const all = leveraged(ps);
    if (all.length === 0) {
      expect(e.tracked).toBe(false);
      return;
    }
    const rungSets = SHOCK_BPS.map((s) => all.filter((p) => liquidatableAt(p, s)));
    const totalShown = e.loop_exposure_usd !== null;
    expect(e.debt_usd !== null).toBe(totalShown);
    // The total is a band.
    if (totalShown) {
      expect(safeBand(all)).toBe(true);
      expect(e.loop_exposure_usd!.eq(sum(all, (p) => p.collateral_usd))).toBe(true);
      expect(e.debt_usd!.eq(sum(all, (p) => p.debt_usd))).toBe(true);
    }
    // Published rungs, and every difference between nested published figures (rung - rung, total - rung).
    const shown = e.cascade.flatMap((r, k) => (r.liquidatable_usd === null ? [] : [k]));
    for (const k of shown) {
      expect(safeBand(rungSets[k]!), `rung ${SHOCK_BPS[k]}`).toBe(true);
      expect(e.cascade[k]!.liquidatable_usd!.eq(sum(rungSets[k]!, (p) => p.collateral_usd))).toBe(true);
      if (!totalShown) expect(rungSets[k]!.length, "without a total only empty rungs are shown").toBe(0);
      for (const j of shown) {
        if (j > k) expect(safeBand(rungSets[j]!.filter((p) => !rungSets[k]!.includes(p))), `rungs ${SHOCK_BPS[k]}..${SHOCK_BPS[j]}`).toBe(true);
      }
      if (totalShown) expect(safeBand(all.filter((p) => !rungSets[k]!.includes(p))), `total minus rung ${SHOCK_BPS[k]}`).toBe(true);
    }
    // Protocol buckets, and the withheld ones together (total minus the published ones).
    const withheld: LendingPosition[] = [];
    for (const b of e.by_protocol) {
      const cell = all.filter((p) => p.protocol === b.protocol);
      expect(cell.length).toBeGreaterThan(0);
      expect(b.debt_usd === null).toBe(b.collateral_lev_usd === null);
      if (b.collateral_lev_usd === null) withheld.push(...cell);
      else {
        expect(totalShown).toBe(true);
        expect(safeBand(cell), b.protocol).toBe(true);
        expect(b.collateral_lev_usd.eq(sum(cell, (p) => p.collateral_usd))).toBe(true);
      }
    }
    if (totalShown) expect(safeBand(withheld), "withheld protocols together").toBe(true);
    // Labels: never a raw count below the floor.
    e.cascade.forEach((r, k) => {
      const n = rungSets[k]!.length;
      if (n > 0 && n < 5) expect(r.positions).toBe("<5");
      if (n > 0) expect(r.positions).not.toBe(String(n));
    });
    // Coverage is partial exactly when something was withheld.
    const anyWithheld = !totalShown || e.cascade.some((r) => r.liquidatable_usd === null) || e.by_protocol.some((b) => b.collateral_lev_usd === null);
    expect(e.coverage).toBe(anyWithheld ? "partial" : "full");
  }

  it("holds on random books", () => {
    fc.assert(
      fc.property(book, (ps) => checkNoLeak(ps, loopExposure(ps))),
      { numRuns: 1000 },
    );
  });

  it("holds on books built to sit right at the floor (4 to 6 positions, one possibly dominant)", () => {
    const nearFloor = fc.tuple(fc.array(position, { minLength: 4, maxLength: 6 }), fc.option(position)).map(([ps, whale]) => (whale === null ? ps : [...ps, whale]));
    fc.assert(
      fc.property(nearFloor, (ps) => checkNoLeak(ps, loopExposure(ps))),
      { numRuns: 1000 },
    );
  });
});
