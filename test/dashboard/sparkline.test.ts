/** The 24 h sparkline: gaps for nulls, scaling into the box, well-formed SVG. */
import { describe, expect, it } from "vitest";
import { sparklinePath, sparklineSvg, sparklineZeroY } from "../../public/static/sparkline.js";
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
