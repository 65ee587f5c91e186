/** The 24 h sparkline: gaps for nulls, scaling into the box, well-formed SVG; minutes in the first hours after a start. */
import { describe, expect, it } from "vitest";
import { isYoung, sparklinePath, sparklineSvg, sparklineZeroY, trailAdd, trailFromRows, trailSeries } from "../../public/static/sparkline.js";
import { classes, parseXml, walk } from "./xml.ts";

const points = (d: string): number[][] =>
  [...d.matchAll(/[ML](-?[\d.]+) (-?[\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);

describe("sparklinePath", () => {
  it("draws one segment per run of values, starting a new one after each null", () => {
    const d = sparklinePath([0.001, 0.002, null, null, 0.003, 0.004, null, 0.001], { width: 70, height: 20, pad: 0 });
    expect(d.match(/M/g)).toHaveLength(3);
    expect(d.match(/L/g)).toHaveLength(2);
    // The isolated last point is a zero-length segment (a dot with round caps).
    expect(d.endsWith("l0 0")).toBe(true);
  });

  it("spreads the points across the width and puts larger discounts lower", () => {
    const d = sparklinePath([0, 0.01, 0.02], { width: 100, height: 20, pad: 0 });
    expect(points(d)).toEqual([
      [0, 0],
      [50, 10],
      [100, 20],
    ]);
  });

  it("keeps the pad and draws a flat series in the middle", () => {
    const pts = points(sparklinePath([0.001, 0.001, 0.001], { width: 40, height: 24, pad: 2 }));
    expect(pts.map((p) => p[1])).toEqual([12, 12, 12]);
    expect(pts[0]![0]).toBe(2);
    expect(pts[2]![0]).toBe(38);
  });

  it("draws nothing for no data", () => {
    expect(sparklinePath(null)).toBe("");
    expect(sparklinePath([])).toBe("");
    expect(sparklinePath([null, null])).toBe("");
  });

  it("marks the peg when the series crosses it", () => {
    expect(sparklineZeroY([-1, 1], { height: 20, pad: 0 })).toBe(10);
    expect(sparklineZeroY([0.1, 0.2])).toBeNull();
  });
});

describe("sparklineSvg", () => {
  it("is well-formed with a path, a peg line when crossed, and no inline style", () => {
    const svg = parseXml(sparklineSvg([-0.001, 0.002, null, 0.0005]));
    expect(svg.name).toBe("svg");
    expect(classes(svg)).toContain("spark");
    const els = walk(svg);
    expect(els.filter((e) => e.name === "path")).toHaveLength(1);
    expect(els.filter((e) => e.name === "line")).toHaveLength(1);
    expect(els.some((e) => "style" in e.attrs)).toBe(false);
  });

  it("is an empty, marked svg for a missing series", () => {
    const svg = parseXml(sparklineSvg(null));
    expect(classes(svg)).toContain("spark-empty");
    expect(svg.children).toHaveLength(0);
  });
});

describe("the first hours after a start", () => {
  const T0 = Date.UTC(2026, 10, 21, 9, 0, 0);
  const iso = (ms: number): string => new Date(ms).toISOString();
  const hourly = (filled: number): (number | null)[] => Array.from({ length: 24 }, (_, i) => (i >= 24 - filled ? 0.001 : null));

  it("is young while the hourly series has fewer than three hours of data", () => {
    expect(isYoung(null)).toBe(true);
    expect(isYoung(hourly(0))).toBe(true);
    expect(isYoung(hourly(1))).toBe(true);
    expect(isYoung(hourly(2))).toBe(true);
    expect(isYoung(hourly(3))).toBe(false);
  });

  it("draws the minutes that exist, rows then live states, over the whole width", () => {
    // Five minutes of rollups (newest first, as /history sends them), one missing.
    const rows = [4, 3, 1, 0].map((i) => ({ ts: iso(T0 + i * 60_000), discount: String(0.0001 * (i + 1)), samples: 60 }));
    const trail = trailFromRows([...rows, { ts: iso(T0 - 60_000), discount: null }]);
    expect(trailSeries(trail)).toEqual([0.0001, 0.0002, null, 0.0004, 0.0005]);
    // Live states: into the current minute's mean, or a new minute.
    expect(trailAdd(trail, { updated_at: iso(T0 + 5 * 60_000 + 1000), discount: "0.001" })).toBe(true);
    expect(trailAdd(trail, { updated_at: iso(T0 + 5 * 60_000 + 2000), discount: "0.003" })).toBe(true);
    expect(trailAdd(trail, { updated_at: iso(T0 + 6 * 60_000), discount: null })).toBe(false);
    expect(trailSeries(trail)!.at(-1)).toBeCloseTo(0.002, 12);
    const d = sparklinePath(trailSeries(trail), { width: 100, height: 20, pad: 0 });
    const xs = points(d).map((p) => p[0]);
    expect(xs[0]).toBe(0);
    expect(xs.at(-1)).toBe(100);
    expect(d.match(/M/g)).toHaveLength(2); // the missing minute is a gap
  });

  it("has nothing to draw before the first state, and keeps at most a day of minutes", () => {
    expect(trailSeries(new Map())).toBeNull();
    const trail = new Map<number, { v: number; n: number }>();
    for (let i = 0; i < 1500; i++) trailAdd(trail, { updated_at: iso(T0 + i * 60_000), discount: "0.0001" });
    expect(trailSeries(trail)).toHaveLength(24 * 60 + 1);
  });

  it("labels the minutes' sparkline for what it shows", () => {
    const svg = parseXml(sparklineSvg([0.001, 0.002], { label: "discount since the first minute" }));
    expect(svg.attrs["aria-label"]).toBe("discount since the first minute");
  });
});
