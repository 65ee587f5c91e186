/** Methodology sections 3 and 4: spread and collateral-ratio bands, the premium carve-out, the Schmitt deadband. */
import { describe, expect, it } from "vitest";
import {
  bpsOf,
  BANDS,
  classifyCr,
  classifyCrPlain,
  classifySpread,
  classifySpreadPlain,
  crEntryLevels,
  crExitLevels,
  crPct,
  D,
  hasPremiumCarveOut,
  isCrThresholds,
  rank,
  spreadEntryLevels,
  spreadExitLevels,
  thresholdKind,
  type AssetClass,
  type Band,
  type Decimal,
  type SpreadThresholds,
} from "../../src/methodology/index.ts";

/** A discount of exactly `bps` basis points, as a decimal (positive = below intrinsic). */
const bpsD = (bps: number): Decimal => new D(bps).div(10_000);

describe("rank", () => {
  it("orders PEGGED = UNKNOWN = 0 < DRIFT < DEPEG < CRITICAL < BLACK_SWAN", () => {
    expect(rank("PEGGED")).toBe(0);
    expect(rank("UNKNOWN")).toBe(0);
    expect(rank("DRIFT")).toBe(1);
    expect(rank("DEPEG")).toBe(2);
    expect(rank("CRITICAL")).toBe(3);
    expect(rank("BLACK_SWAN")).toBe(4);
  });
});

describe("bpsOf: trunc(|d| x 10000)", () => {
  it.each([
    ["0.005999", 59],
    ["-0.005999", 59],
    ["0.0059999999999999", 59],
    ["0.006", 60],
    ["0.0060000001", 60],
    ["0", 0],
    ["0.00009999", 0],
    ["0.0001", 1],
    ["0.99999999", 9999],
  ])("bpsOf(%s) = %i (integer part, never rounded)", (d, bps) => {
    const v = bpsOf(new D(d));
    expect(v).not.toBeNull();
    expect(v).toBe(bps);
  });

  it("0.005999 stays below a 60 bps drift threshold (truncation, not rounding)", () => {
    const t = { drift_bps: 60, depeg_bps: 150, critical_bps: 300 };
    expect(classifySpreadPlain(new D("0.005999"), "stable_fiat", t)).toBe("PEGGED");
    expect(classifySpreadPlain(new D("0.006"), "stable_fiat", t)).toBe("DRIFT");
  });
});

describe("spread entry levels", () => {
  it("defaults: drift 20, depeg 100, critical 300, black swan 2 x critical", () => {
    expect(spreadEntryLevels({})).toEqual({ drift: 20, depeg: 100, critical: 300, blackSwan: 600 });
    expect(spreadEntryLevels({ critical_bps: 250 })).toEqual({ drift: 20, depeg: 100, critical: 250, blackSwan: 500 });
    expect(spreadEntryLevels({ drift_bps: 15, depeg_bps: 50, critical_bps: 200 })).toEqual({
      drift: 15,
      depeg: 50,
      critical: 200,
      blackSwan: 400,
    });
    expect(spreadEntryLevels({ drift_bps: 15, depeg_bps: 50, critical_bps: 200, black_swan_bps: 350 }).blackSwan).toBe(350);
  });
});

interface SpreadCase {
  readonly name: string;
  readonly t: SpreadThresholds;
  readonly levels: readonly [number, number, number, number];
}

const SPREAD_CASES: readonly SpreadCase[] = [
  { name: "catalog 15/50/200 (black swan 400)", t: { drift_bps: 15, depeg_bps: 50, critical_bps: 200 }, levels: [15, 50, 200, 400] },
  { name: "defaults {} (20/100/300/600)", t: {}, levels: [20, 100, 300, 600] },
  { name: "explicit 20/100/300 (black swan 2 x critical = 600)", t: { drift_bps: 20, depeg_bps: 100, critical_bps: 300 }, levels: [20, 100, 300, 600] },
  {
    name: "explicit black_swan_bps 15/50/200/350",
    t: { drift_bps: 15, depeg_bps: 50, critical_bps: 200, black_swan_bps: 350 },
    levels: [15, 50, 200, 350],
  },
  {
    name: "explicit black_swan_bps 60/150/300/1000",
    t: { drift_bps: 60, depeg_bps: 150, critical_bps: 300, black_swan_bps: 1000 },
    levels: [60, 150, 300, 1000],
  },
];

const UP: readonly Band[] = ["DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN"];
const NON_CARVE_OUT: readonly AssetClass[] = ["stable_fiat", "stable_dn", "stable_cdp", "stable_fx"];
const CARVE_OUT: readonly AssetClass[] = ["lst", "stable_yield", "synth_lev"];

describe.each(SPREAD_CASES)("spread path, plain band: $name", ({ t, levels }) => {
  levels.forEach((v, i) => {
    const band = UP[i]!;
    const below: Band = i === 0 ? "PEGGED" : UP[i - 1]!;
    const aboveBand: Band = i + 1 < levels.length && levels[i + 1] === v + 1 ? UP[i + 1]! : band;

    it(`exactly ${v} bps -> ${band} (>=)`, () => {
      expect(classifySpreadPlain(bpsD(v), "stable_fiat", t)).toBe(band);
    });
    it(`${v - 1} bps -> ${below}`, () => {
      expect(classifySpreadPlain(bpsD(v - 1), "stable_fiat", t)).toBe(below);
    });
    it(`${v + 1} bps -> ${aboveBand}`, () => {
      expect(classifySpreadPlain(bpsD(v + 1), "stable_fiat", t)).toBe(aboveBand);
    });
    it(`just under ${v} bps (${v} bps - 1e-12) truncates to ${below}`, () => {
      expect(classifySpreadPlain(bpsD(v).minus("1e-12"), "stable_fiat", t)).toBe(below);
    });
    it(`escalation from PEGGED at exactly ${v} bps is ${band} (deadband never slows a worsening)`, () => {
      expect(classifySpread(bpsD(v), "stable_fiat", t, "PEGGED")).toBe(band);
    });
    it.each(NON_CARVE_OUT)(`premium of exactly ${v} bps on %s classifies on |d| -> ${band}`, (cls) => {
      expect(classifySpreadPlain(bpsD(v).neg(), cls, t)).toBe(band);
      expect(classifySpreadPlain(bpsD(v - 1).neg(), cls, t)).toBe(below);
    });
    it.each(CARVE_OUT)(`discount of exactly ${v} bps on %s (positive d) classifies normally -> ${band}`, (cls) => {
      expect(classifySpreadPlain(bpsD(v), cls, t)).toBe(band);
    });
  });

  it("0 bps -> PEGGED", () => {
    expect(classifySpreadPlain(new D(0), "stable_fiat", t)).toBe("PEGGED");
  });
});

describe("premium carve-out", () => {
  it("applies to lst, stable_yield and synth_lev only", () => {
    for (const c of CARVE_OUT) expect(hasPremiumCarveOut(c)).toBe(true);
    for (const c of NON_CARVE_OUT) expect(hasPremiumCarveOut(c)).toBe(false);
  });

  it.each(CARVE_OUT)("%s: any premium (d < 0) is PEGGED whatever its size", (cls) => {
    for (const d of ["-0.0001", "-0.0020", "-0.0150", "-0.0650", "-0.5", "-0.9999"]) {
      expect(classifySpreadPlain(new D(d), cls, {})).toBe("PEGGED");
      for (const from of BANDS) expect(classifySpread(new D(d), cls, {}, from)).toBe("PEGGED");
    }
  });

  it.each(NON_CARVE_OUT)("%s: a premium classifies on |d| (defaults)", (cls) => {
    expect(classifySpreadPlain(new D("-0.0019"), cls, {})).toBe("PEGGED");
    expect(classifySpreadPlain(new D("-0.0020"), cls, {})).toBe("DRIFT");
    expect(classifySpreadPlain(new D("-0.0150"), cls, {})).toBe("DEPEG");
    expect(classifySpreadPlain(new D("-0.0300"), cls, {})).toBe("CRITICAL");
    expect(classifySpreadPlain(new D("-0.0650"), cls, {})).toBe("BLACK_SWAN");
    expect(classifySpread(new D("-0.0150"), cls, {}, "PEGGED")).toBe("DEPEG");
  });
});

describe("spread exit thresholds: floor(v x 75 / 100)", () => {
  it("drift 60 -> exit 45", () => {
    expect(spreadExitLevels({ drift_bps: 60, depeg_bps: 150, critical_bps: 300 })).toEqual({
      drift: 45,
      depeg: 112,
      critical: 225,
      blackSwan: 450,
    });
  });

  it("defaults -> 15/75/225 and black swan 2 x exit critical = 450", () => {
    expect(spreadExitLevels({})).toEqual({ drift: 15, depeg: 75, critical: 225, blackSwan: 450 });
  });

  it("catalog 15/50/200 -> 11/37/150, black swan 300", () => {
    expect(spreadExitLevels({ drift_bps: 15, depeg_bps: 50, critical_bps: 200 })).toEqual({
      drift: 11,
      depeg: 37,
      critical: 150,
      blackSwan: 300,
    });
  });

  it("an explicit black swan is floored like the others", () => {
    expect(spreadExitLevels({ drift_bps: 15, depeg_bps: 50, critical_bps: 200, black_swan_bps: 350 }).blackSwan).toBe(262);
  });

  it("an absent black swan is 2 x the exit critical, not the floored entry black swan (critical 301 -> 450, not 451)", () => {
    const t = { drift_bps: 20, depeg_bps: 100, critical_bps: 301 };
    expect(spreadExitLevels(t).blackSwan).toBe(450);
    expect(classifySpread(bpsD(450), "stable_fiat", t, "BLACK_SWAN")).toBe("BLACK_SWAN");
    expect(classifySpread(bpsD(449), "stable_fiat", t, "BLACK_SWAN")).toBe("CRITICAL");
  });

  it("drift 60: from DRIFT 45 bps stays DRIFT, 44 -> PEGGED, 46 stays DRIFT", () => {
    const t = { drift_bps: 60, depeg_bps: 150, critical_bps: 300 };
    expect(classifySpread(bpsD(45), "stable_fiat", t, "DRIFT")).toBe("DRIFT");
    expect(classifySpread(bpsD(46), "stable_fiat", t, "DRIFT")).toBe("DRIFT");
    expect(classifySpread(bpsD(44), "stable_fiat", t, "DRIFT")).toBe("PEGGED");
    expect(classifySpread(new D("0.0044999"), "stable_fiat", t, "DRIFT")).toBe("PEGGED");
    // from PEGGED the same 45 bps is plain PEGGED (entry 60)
    expect(classifySpread(bpsD(45), "stable_fiat", t, "PEGGED")).toBe("PEGGED");
  });

  describe.each(SPREAD_CASES)("relaxation at each exit level: $name", ({ t }) => {
    const exit = spreadExitLevels(t);
    const exits = [exit.drift, exit.depeg, exit.critical, exit.blackSwan] as const;
    exits.forEach((x, i) => {
      const band = UP[i]!;
      const lower: Band = i === 0 ? "PEGGED" : UP[i - 1]!;
      it(`from ${band}: exactly exit ${x} bps stays ${band}, ${x - 1} bps relaxes to ${lower}`, () => {
        expect(classifySpread(bpsD(x), "stable_fiat", t, band)).toBe(band);
        expect(classifySpread(bpsD(x - 1), "stable_fiat", t, band)).toBe(lower);
      });
    });
  });

  it("multi-band relaxation: DEPEG -> PEGGED, CRITICAL -> PEGGED, BLACK_SWAN -> DRIFT below every exit", () => {
    const t = { drift_bps: 60, depeg_bps: 150, critical_bps: 300 };
    expect(classifySpread(bpsD(10), "stable_fiat", t, "DEPEG")).toBe("PEGGED");
    expect(classifySpread(bpsD(44), "stable_fiat", t, "CRITICAL")).toBe("PEGGED");
    expect(classifySpread(new D(0), "stable_fiat", t, "BLACK_SWAN")).toBe("PEGGED");
    expect(classifySpread(bpsD(50), "stable_fiat", t, "BLACK_SWAN")).toBe("DRIFT");
  });

  it("escalation is never delayed by the deadband", () => {
    const t = { drift_bps: 60, depeg_bps: 150, critical_bps: 300 };
    expect(classifySpread(bpsD(150), "stable_fiat", t, "DRIFT")).toBe("DEPEG");
    expect(classifySpread(bpsD(300), "stable_fiat", t, "DRIFT")).toBe("CRITICAL");
    expect(classifySpread(bpsD(600), "stable_fiat", t, "DEPEG")).toBe("BLACK_SWAN");
    expect(classifySpread(bpsD(600), "stable_fiat", t, "CRITICAL")).toBe("BLACK_SWAN");
    expect(classifySpread(bpsD(149), "stable_fiat", t, "DRIFT")).toBe("DRIFT");
  });
});

describe("collateral-ratio path", () => {
  const CR = { cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 };
  const CR2 = { cr_drift: 130, cr_depeg: 115, cr_critical: 105, cr_black_swan: 100 };

  it("thresholds of CR form are detected", () => {
    expect(isCrThresholds(CR)).toBe(true);
    expect(thresholdKind(CR)).toBe("cr");
    expect(isCrThresholds({ drift_bps: 1 })).toBe(false);
    expect(thresholdKind({})).toBe("bps");
  });

  it("crPct = trunc(cr x 100), clamped at >= 0", () => {
    expect(crPct(new D("1.2999")).toNumber()).toBe(129);
    expect(crPct(new D("1.30")).toNumber()).toBe(130);
    expect(crPct(new D("0.999999")).toNumber()).toBe(99);
    expect(crPct(new D("0")).toNumber()).toBe(0);
    expect(crPct(new D("-0.5")).toNumber()).toBe(0);
    expect(crPct(new D("-0.001")).isNegative()).toBe(false);
    expect(crPct(new D("-7")).eq(0)).toBe(true);
  });

  it("a negative cr is clamped to 0 before comparing (cr_black_swan 0 -> not BLACK_SWAN)", () => {
    const t = { cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 0 };
    expect(classifyCrPlain(new D("-0.5"), t)).toBe("CRITICAL");
    expect(classifyCrPlain(new D("-0.5"), CR)).toBe("BLACK_SWAN");
  });

  it.each([
    ["1.51", "PEGGED"],
    ["1.50", "PEGGED"],
    ["1.4999", "DRIFT"],
    ["1.49", "DRIFT"],
    ["1.31", "DRIFT"],
    ["1.30", "DRIFT"],
    ["1.2999", "DEPEG"],
    ["1.29", "DEPEG"],
    ["1.11", "DEPEG"],
    ["1.10", "DEPEG"],
    ["1.0999", "CRITICAL"],
    ["1.09", "CRITICAL"],
    ["1.01", "CRITICAL"],
    ["1.00", "CRITICAL"],
    ["0.9999", "BLACK_SWAN"],
    ["0.99", "BLACK_SWAN"],
    ["0", "BLACK_SWAN"],
  ] as const)("defaults 150/130/110/100, strict <: cr %s -> %s", (cr, band) => {
    expect(classifyCrPlain(new D(cr), CR)).toBe(band);
    expect(classifyCr(new D(cr), CR, "PEGGED")).toBe(band);
  });

  it("exit thresholds floor(v x 102 / 100): 130/115/105/100 -> 132/117/107/102; defaults -> 153/132/112/102", () => {
    expect(crExitLevels(CR2)).toEqual({ drift: 132, depeg: 117, critical: 107, blackSwan: 102 });
    expect(crExitLevels(CR)).toEqual({ drift: 153, depeg: 132, critical: 112, blackSwan: 102 });
    expect(crEntryLevels(CR2)).toEqual({ drift: 130, depeg: 115, critical: 105, blackSwan: 100 });
  });

  it.each([
    ["DRIFT", "1.31", "DRIFT", "1.32", "PEGGED"],
    ["DEPEG", "1.16", "DEPEG", "1.17", "DRIFT"],
    ["CRITICAL", "1.06", "CRITICAL", "1.07", "DEPEG"],
    ["BLACK_SWAN", "1.01", "BLACK_SWAN", "1.02", "CRITICAL"],
  ] as const)("130/115/105/100 from %s: cr %s stays %s, cr %s relaxes to %s", (from, stay, stayBand, go, goBand) => {
    expect(classifyCr(new D(stay), CR2, from)).toBe(stayBand);
    expect(classifyCr(new D(go), CR2, from)).toBe(goBand);
  });

  it("multi-band relaxation on the CR path (BLACK_SWAN -> PEGGED above every exit)", () => {
    expect(classifyCr(new D("2.00"), CR2, "BLACK_SWAN")).toBe("PEGGED");
    expect(classifyCr(new D("1.32"), CR2, "CRITICAL")).toBe("PEGGED");
    expect(classifyCr(new D("1.31"), CR2, "CRITICAL")).toBe("DRIFT");
  });

  it("escalation on the CR path is never delayed", () => {
    expect(classifyCr(new D("1.04"), CR2, "DRIFT")).toBe("CRITICAL");
    expect(classifyCr(new D("0.99"), CR2, "DEPEG")).toBe("BLACK_SWAN");
    expect(classifyCr(new D("1.29"), CR2, "PEGGED")).toBe("DRIFT");
  });
});
