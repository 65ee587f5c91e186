/**
 * Properties of the loop-exposure model over random books, written independently of src/advisory/privacy.ts from the
 * interface's wording and the published semantics (every figure a decimal string counting only publishable bands):
 *
 * (a) every published figure is a decimal string, on every wire form;
 * (b) cascades are monotone in the shock;
 * (c) no band below the floor, or dominated by one position, can be isolated from the published figures: neither a
 *     figure itself nor the difference of any two published figures whose sets are nested (rung - rung, total - rung,
 *     total - protocol, protocol - rung, rung - protocol), total - sum of the listed protocols is exactly zero, and
 *     the omitted protocols together are a publishable band (complementary suppression);
 * (d) published figures never exceed the true, unsuppressed ones, and coverage is `full` exactly when they are all
 *     exact.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { D, type Decimal } from "../../src/methodology/index.ts";
import {
  lendingPosition,
  liquidatableAt,
  loopExposure,
  loopExposureBody,
  positionsLabel,
  SHOCK_BPS,
  simulateDepegBody,
  systemicBody,
  type LendingPosition,
  type LoopExposure,
} from "../../src/advisory/index.ts";
import { LoopExposure as LoopExposureSchema, SimulateDepeg as SimulateDepegSchema, Systemic as SystemicSchema } from "../../src/http/schemas/index.ts";

const MINT = "J1toso1uCk3RLmjorhTtrVwY9HJ7X8V9yYac6Y7kGCPn";
const LABEL_ORDER = ["0", "<5", "5-9", "10-24", "25-49", "50-99", "100-249", "250-499", "500-999", "1000+"];
const PROTOCOLS = ["kamino", "marginfi", "save", "drift"] as const;
/** A USD figure on the wire: a non-negative decimal string, at most cents, trailing zeros trimmed. */
const USD_STRING = /^(?:0|[1-9]\d*)(?:\.\d?[1-9])?$/;

/** One position: collateral in cents, debt as a per-mille ratio of it (0 to 1.2x), a threshold, a protocol. */
const template = fc.record({
  cents: fc.oneof(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 1, max: 10_000_000_000 })),
  ratio: fc.integer({ min: 0, max: 1200 }),
  lt: fc.constantFrom("0.8", "0.88", "0.9", "0.95", "1"),
  protocol: fc.constantFrom(...PROTOCOLS),
});
type Template = typeof template extends fc.Arbitrary<infer T> ? T : never;

function make({ cents, ratio, lt, protocol }: Template): LendingPosition {
  const collateral = new D(cents).div(100);
  return lendingPosition({ protocol, collateral_mint: MINT, collateral_usd: collateral, debt_usd: collateral.times(ratio).div(1000).toDecimalPlaces(2), liquidation_threshold: lt });
}

const position = template.map(make);

/** `n` copies of one position: identical values, distinct positions. */
const copies = (t: Template, n: number): LendingPosition[] => Array.from({ length: n }, () => make(t));

/** A position near the liquidation line: at threshold 0.9, debt ratios that cross it at different shocks (or never). */
const nearLine = fc.record({
  cents: fc.constantFrom(100_000, 100_000, 150_000, 300_000, 2_000_000),
  ratio: fc.constantFrom(500, 800, 850, 870, 880, 890, 950),
  lt: fc.constant("0.9"),
  protocol: fc.constantFrom(...PROTOCOLS),
});

/**
 * Books from empty to a few dozen positions: random ones, runs of identical positions (so bands pass the floor), and
 * clusters of 1 to 8 copies per protocol (so whole protocols sit at the floor, inside or around cascade rungs), random
 * or near the liquidation line.
 */
const book = fc.oneof(
  fc.array(position, { maxLength: 12 }),
  fc.array(position, { minLength: 5, maxLength: 60 }),
  fc.tuple(template, fc.integer({ min: 1, max: 30 }), fc.array(position, { maxLength: 8 })).map(([t, n, rest]) => [...copies(t, n), ...rest]),
  fc.array(fc.tuple(template, fc.integer({ min: 1, max: 8 })), { minLength: 1, maxLength: 6 }).map((cs) => cs.flatMap(([t, n]) => copies(t, n))),
  fc.array(fc.tuple(nearLine, fc.integer({ min: 1, max: 8 })), { minLength: 1, maxLength: 8 }).map((cs) => cs.flatMap(([t, n]) => copies(t, n))),
);

function sum(ps: readonly LendingPosition[], f: (p: LendingPosition) => Decimal = (p) => p.collateral_usd): Decimal {
  return ps.reduce((s, p) => s.plus(f(p)), new D(0));
}

/** The interface's rule: at least 5 positions and none above half the band's collateral or debt (empty: nobody). */
function safeBand(ps: readonly LendingPosition[]): boolean {
  if (ps.length === 0) return true;
  if (ps.length < 5) return false;
  const c = sum(ps);
  const d = sum(ps, (p) => p.debt_usd);
  return ps.every((p) => p.collateral_usd.times(2).lte(c) && p.debt_usd.times(2).lte(d));
}

const leveraged = (ps: readonly LendingPosition[]) => ps.filter((p) => p.debt_usd.gt(0));
const subset = (a: readonly LendingPosition[], b: readonly LendingPosition[]) => a.every((p) => b.includes(p));
const minus = (a: readonly LendingPosition[], b: readonly LendingPosition[]) => a.filter((p) => !b.includes(p));

/** Every USD figure of every wire form of `e`: each must be a decimal string. */
function wireFigures(e: LoopExposure): unknown[] {
  const body = loopExposureBody("X", e, 0);
  const out: unknown[] = [body.loop_exposure_usd, body.debt_usd];
  for (const p of body.by_protocol) out.push(p.collateral_lev_usd, p.debt_usd);
  for (const r of body.cascade) out.push(r.liquidatable_usd);
  expect(LoopExposureSchema.safeParse(body).success, JSON.stringify(body)).toBe(true);
  for (const shock of SHOCK_BPS) {
    const sim = simulateDepegBody("X", e, shock, 0);
    expect(SimulateDepegSchema.safeParse(sim).success, JSON.stringify(sim)).toBe(true);
    out.push(sim.liquidatable_usd, sim.loop_exposure_usd);
    for (const p of sim.by_protocol) out.push(p.collateral_lev_usd, p.debt_usd);
  }
  const sys = systemicBody(e, 0);
  if (sys !== undefined) {
    expect(SystemicSchema.safeParse(sys).success, JSON.stringify(sys)).toBe(true);
    out.push(sys.loop_exposure_usd);
    for (const r of sys.cascade) out.push(r.liquidatable_usd);
  }
  return out;
}

describe("(a) every published figure is a decimal string", () => {
  it("on the loop-exposure, simulate-depeg and systemic forms, schema-valid", () => {
    fc.assert(
      fc.property(book, (ps) => {
        for (const f of wireFigures(loopExposure(ps))) {
          expect(typeof f).toBe("string");
          expect(f as string).toMatch(USD_STRING);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("(b) cascade monotonicity", () => {
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

  it("published liquidatable_usd and the positions labels never decrease with the shock, and stay within the total", () => {
    fc.assert(
      fc.property(book, (ps) => {
        const body = loopExposureBody("X", loopExposure(ps), 0);
        expect(body.cascade.length).toBe(body.by_protocol.length === 0 && body.coverage === "full" ? 0 : SHOCK_BPS.length);
        const shown = body.cascade.map((r) => new D(r.liquidatable_usd));
        for (let i = 1; i < shown.length; i++) expect(shown[i]!.gte(shown[i - 1]!)).toBe(true);
        const ranks = body.cascade.map((r) => LABEL_ORDER.indexOf(r.positions));
        expect(ranks.every((r) => r >= 0)).toBe(true);
        for (let i = 1; i < ranks.length; i++) expect(ranks[i]).toBeGreaterThanOrEqual(ranks[i - 1]!);
        for (const s of shown) expect(s.lte(new D(body.loop_exposure_usd))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});

describe("(c, d) the privacy rule never leaks a band below the floor, and figures are lower bounds", () => {
  interface Figure {
    readonly name: string;
    readonly set: readonly LendingPosition[];
  }

  function audit(ps: readonly LendingPosition[], e: LoopExposure): void {
    const all = leveraged(ps);
    if (all.length === 0) {
      expect(e).toMatchObject({ tracked: false, coverage: "full", by_protocol: [], cascade: [] });
      expect(e.loop_exposure_usd.isZero() && e.debt_usd.isZero()).toBe(true);
      return;
    }
    expect(e.tracked).toBe(true);

    // Listed protocol buckets: exact figures of their whole protocol, each protocol at most once, sorted.
    const names = e.by_protocol.map((b) => b.protocol);
    expect(names).toEqual([...new Set(names)].sort());
    const cells: Figure[] = e.by_protocol.map((b) => {
      const cell = all.filter((p) => p.protocol === b.protocol);
      expect(cell.length, b.protocol).toBeGreaterThan(0);
      expect(b.collateral_lev_usd.eq(sum(cell)), b.protocol).toBe(true);
      expect(b.debt_usd.eq(sum(cell, (p) => p.debt_usd)), b.protocol).toBe(true);
      return { name: `protocol ${b.protocol}`, set: cell };
    });

    // The total is the listed protocols: total - sum of protocols is exactly zero, for collateral and debt.
    const total = cells.flatMap((c) => c.set);
    expect(e.loop_exposure_usd.minus(e.by_protocol.reduce((s, b) => s.plus(b.collateral_lev_usd), new D(0))).isZero(), "total - protocols").toBe(true);
    expect(e.debt_usd.minus(e.by_protocol.reduce((s, b) => s.plus(b.debt_usd), new D(0))).isZero(), "debt - protocols").toBe(true);
    expect(e.loop_exposure_usd.eq(sum(total))).toBe(true);
    expect(e.debt_usd.eq(sum(total, (p) => p.debt_usd))).toBe(true);

    // Each rung stands for one set of a chain of liquidatable positions at this or a smaller shock (or nothing). The
    // intended chain (the listed protocols' positions) is tried first; the whole book's chain second, so a cascade
    // that counted omitted protocols is still identified, and then audited like any other figure.
    const listedChain = SHOCK_BPS.map((s) => total.filter((p) => liquidatableAt(p, s)));
    const bookChain = SHOCK_BPS.map((s) => all.filter((p) => liquidatableAt(p, s)));
    expect(e.cascade.map((r) => r.shock_bps)).toEqual([...SHOCK_BPS]);
    const rungs: Figure[] = e.cascade.map((r, k) => {
      const candidates = [[], ...listedChain.slice(0, k + 1), ...bookChain.slice(0, k + 1)];
      const set = candidates.find((c) => sum(c).eq(r.liquidatable_usd));
      expect(set, `rung ${r.shock_bps}: ${r.liquidatable_usd.toFixed()} is no liquidatable set`).toBeDefined();
      expect(r.positions, `rung ${r.shock_bps} label`).toBe(positionsLabel(set!.length));
      return { name: `rung ${r.shock_bps}`, set: set! };
    });

    // (c) Every figure, and every difference of two figures whose sets are nested, is a publishable band.
    const figures: Figure[] = [{ name: "total", set: total }, ...cells, ...rungs];
    for (const f of figures) expect(safeBand(f.set), f.name).toBe(true);
    for (const x of figures) {
      for (const y of figures) {
        if (x !== y && subset(y.set, x.set)) expect(safeBand(minus(x.set, y.set)), `${x.name} - ${y.name}`).toBe(true);
      }
    }

    // Complementary suppression, defence in depth: when anything is listed, the omitted protocols together are a
    // publishable band, so even a reader who learns the whole book's total elsewhere and subtracts ours cannot
    // isolate a small group. (With nothing listed we publish nothing to subtract.)
    if (total.length > 0) expect(safeBand(minus(all, total)), "omitted protocols together").toBe(true);

    // (d) Never above the truth; exact everywhere exactly when coverage is full.
    expect(e.loop_exposure_usd.lte(sum(all))).toBe(true);
    expect(e.debt_usd.lte(sum(all, (p) => p.debt_usd))).toBe(true);
    e.cascade.forEach((r, k) => expect(r.liquidatable_usd.lte(sum(bookChain[k]!)), `rung ${r.shock_bps}`).toBe(true));
    const exact = total.length === all.length && rungs.every((r, k) => r.set.length === bookChain[k]!.length);
    expect(e.coverage).toBe(exact ? "full" : "partial");

    // Labels: never a raw count, and `<5` (a band below the floor) is never published.
    for (const r of e.cascade) expect(r.positions).not.toBe("<5");
  }

  it("holds on random books", () => {
    fc.assert(
      fc.property(book, (ps) => audit(ps, loopExposure(ps))),
      { numRuns: 1500 },
    );
  });

  it("holds on books built to sit right at the floor (4 to 6 positions, one possibly dominant)", () => {
    const nearFloor = fc.tuple(fc.array(position, { minLength: 4, maxLength: 6 }), fc.option(position)).map(([ps, whale]) => (whale === null ? ps : [...ps, whale]));
    fc.assert(
      fc.property(nearFloor, (ps) => audit(ps, loopExposure(ps))),
      { numRuns: 1000 },
    );
  });
});
