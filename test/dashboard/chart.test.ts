/**
 * The asset chart (chart.js): the class's levels and risk sides, rows to points, UNKNOWN periods and their reasons,
 * the value scale, and the SVG: one coordinate per row, threshold lines where the scale puts them, a marker per
 * transition in the window linked to its receipt, shaded periods with their reason, well-formed and without inline
 * style. And what feeds it (chart-data.js): history walked page by page, the asset's transitions, the reason of an
 * UNKNOWN from its receipt, the live tail.
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../../public/static/api.js";
import { ALERTS_PAGE, HISTORY_PAGE, addLive, chartTransition, loadHistory, loadTransitions, unknownReason } from "../../public/static/chart-data.js";
import {
  RANGES,
  bandLevels,
  bucketFor,
  chartSvg,
  riskSides,
  ticks,
  toPoints,
  unknownPeriods,
  valueDomain,
  type ChartModel,
  type ChartTransition,
  type Point,
} from "../../public/static/chart.js";
import { classes, parseXml, walk, type XmlElement } from "./xml.ts";

const T0 = Date.UTC(2026, 10, 21, 9, 0, 0);
const MIN = 60_000;
const iso = (ms: number): string => new Date(ms).toISOString();
const USDC = { drift_bps: 15, depeg_bps: 50, critical_bps: 200 };

/** 1-minute rows, newest first as the route sends them: discount `d(i)` at minute i. */
function minuteRows(n: number, d: (i: number) => string, state: (i: number) => string = () => "PEGGED"): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => ({ ts: iso(T0 + i * MIN), discount: d(i), min_discount: d(i), max_discount: d(i), samples: 12, state: state(i), discount_raw: null })).reverse();
}

const point = (t: number, v: number, state = "PEGGED"): Point => ({ t, v, lo: v, hi: v, state });
const transition = (id: string, t: number, to_state: string, v: number | null = null, reason: string | null = null): ChartTransition => ({ id, t, from_state: "PEGGED", to_state, v, reason });

function render(model: Partial<ChartModel> & { points: Point[] }): XmlElement {
  return parseXml(chartSvg({ from: T0, to: T0 + RANGES["1h"], bucket: "1m", levels: bandLevels(USDC), sides: riskSides("stable_fiat"), ...model }));
}
const byClass = (root: XmlElement, cls: string): XmlElement[] => walk(root).filter((e) => classes(e).includes(cls));
const coordinates = (d: string): number => (d.match(/[ML]-?[\d.]+ -?[\d.]+/g) ?? []).length;

describe("levels and sides", () => {
  it("reads the class's thresholds, black swan at twice critical unless given, defaults for missing keys", () => {
    expect(bandLevels(USDC)).toEqual([
      { state: "DRIFT", bps: 15 },
      { state: "DEPEG", bps: 50 },
      { state: "CRITICAL", bps: 200 },
      { state: "BLACK_SWAN", bps: 400 },
    ]);
    expect(bandLevels({ ...USDC, black_swan_bps: 500 })!.at(-1)).toEqual({ state: "BLACK_SWAN", bps: 500 });
    expect(bandLevels({})!.map((l) => l.bps)).toEqual([20, 100, 300, 600]);
    expect(bandLevels({ cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 })).toBeNull();
    expect(bandLevels(null)).toBeNull();
  });

  it("draws a premium's bands only for classes that classify it (no carve-out)", () => {
    expect(riskSides("stable_fiat")).toEqual([1, -1]);
    expect(riskSides("stable_fx")).toEqual([1, -1]);
    for (const c of ["lst", "stable_yield", "synth_lev"]) expect(riskSides(c)).toEqual([1]);
  });

  it("picks raw samples for a window of 15 minutes or less", () => {
    expect(bucketFor(15 * MIN)).toBe("raw");
    expect(bucketFor(15 * MIN + 1)).toBe("1m");
    expect(bucketFor(RANGES["1h"])).toBe("1m");
  });
});

describe("points and UNKNOWN periods", () => {
  it("turns rows (newest first) into bps points, oldest first, dropping rows without a discount", () => {
    const rows = [...minuteRows(3, (i) => `0.00${i + 1}`), { ts: iso(T0 - MIN), discount: null, state: "UNKNOWN" }];
    const pts = toPoints(rows);
    expect(pts.map((p) => p.t)).toEqual([T0, T0 + MIN, T0 + 2 * MIN]);
    expect(pts.map((p) => p.v)).toEqual([10, 20, 30]);
  });

  it("shades a run of UNKNOWN with the reason of the transition that opened it", () => {
    const pts = [point(T0, 1), point(T0 + MIN, 1, "UNKNOWN"), point(T0 + 2 * MIN, 1, "UNKNOWN"), point(T0 + 3 * MIN, 1)];
    const into = { ...transition("u", T0 + MIN + 20_000, "UNKNOWN"), reason: "oracle_confidence" };
    expect(unknownPeriods(pts, [into], { to: T0 + 4 * MIN })).toEqual([{ from: T0 + MIN, to: T0 + 3 * MIN, reason: "oracle_confidence" }]);
    // Without its transition in view, the run is still shaded.
    expect(unknownPeriods(pts, [], { to: T0 + 4 * MIN })).toEqual([{ from: T0 + MIN, to: T0 + 3 * MIN, reason: "UNKNOWN" }]);
    // A run still open ends at the window's end.
    expect(unknownPeriods(pts.slice(0, 3), [into], { to: T0 + 9 * MIN })).toEqual([{ from: T0 + MIN, to: T0 + 9 * MIN, reason: "oracle_confidence" }]);
  });

  it("reads a silence over 15 minutes as stale_source from 15 minutes after the last sample", () => {
    const pts = [point(T0, 1), point(T0 + 40 * MIN, 1)];
    expect(unknownPeriods(pts, [], { to: T0 + 41 * MIN })).toEqual([{ from: T0 + 15 * MIN, to: T0 + 40 * MIN, reason: "stale_source" }]);
    expect(unknownPeriods([point(T0, 1)], [], { to: T0 + 20 * MIN })).toEqual([{ from: T0 + 15 * MIN, to: T0 + 20 * MIN, reason: "stale_source" }]);
    expect(unknownPeriods([point(T0, 1)], [], { to: T0 + 14 * MIN })).toEqual([]);
  });
});

describe("value scale", () => {
  it("holds the data and the peg, and on each risk side the first threshold beyond the data", () => {
    const levels = bandLevels(USDC);
    const [lo, hi] = valueDomain([1, 2], levels, [1, -1]);
    expect(hi).toBeGreaterThanOrEqual(15);
    expect(hi).toBeLessThan(50);
    expect(lo).toBeLessThanOrEqual(-15);
    const [, hiDepeg] = valueDomain([100], levels, [1]);
    expect(hiDepeg).toBeGreaterThanOrEqual(200);
    expect(hiDepeg).toBeLessThan(400);
    // Beyond black swan: the data itself.
    expect(valueDomain([900], levels, [1])[1]).toBeGreaterThanOrEqual(900);
    // Carve-out class: a premium is drawn, but no band pulls the scale up there.
    const [loCarve] = valueDomain([5], levels, [1]);
    expect(loCarve).toBeGreaterThan(-5);
  });

  it("ticks at round values inside the range", () => {
    expect(ticks(-16.5, 220)).toEqual([0, 50, 100, 150, 200]);
    expect(ticks(-2, 2, 4)).toEqual([-2, -1, 0, 1, 2]);
  });
});

describe("chartSvg", () => {
  const rows = minuteRows(45, (i) => (i < 20 ? "0.0001" : "0.0102"), (i) => (i < 22 ? "PEGGED" : "DEPEG"));
  const points = toPoints(rows);

  it("is a well-formed data-chart svg with one coordinate per row and no inline style", () => {
    const svg = render({ points });
    expect(svg.attrs["data-chart"]).toBe("discount-history");
    expect(svg.attrs["data-bucket"]).toBe("1m");
    const line = byClass(svg, "chart-line").filter((e) => !classes(e).includes("chart-live"));
    expect(line).toHaveLength(1);
    expect(line[0]!.attrs["data-points"]).toBe(String(rows.length));
    expect(coordinates(line[0]!.attrs["d"]!)).toBe(rows.length);
    expect(walk(svg).some((e) => "style" in e.attrs)).toBe(false);
  });

  it("breaks the line at a gap, keeping one coordinate per row", () => {
    const gappy = [point(T0, 1), point(T0 + MIN, 2), point(T0 + 10 * MIN, 3), point(T0 + 20 * MIN, 4), point(T0 + 21 * MIN, 5)];
    const d = byClass(render({ points: gappy }), "chart-line")[0]!.attrs["d"]!;
    expect(coordinates(d)).toBe(5);
    expect(d.match(/M/g)).toHaveLength(3);
    expect(d.match(/l0 0/g)).toHaveLength(1); // the lone point in the middle
  });

  it("draws threshold lines where its own scale puts the class's thresholds, on both sides for a stable_fiat", () => {
    const svg = render({ points });
    const [lo, hi] = svg.attrs["data-domain"]!.split(" ").map(Number) as [number, number];
    const [, top, , height] = svg.attrs["data-plot"]!.split(" ").map(Number) as [number, number, number, number];
    const lines = byClass(svg, "threshold");
    const seen = lines.map((l) => `${l.attrs["data-state"]}/${l.attrs["data-side"]}/${l.attrs["data-bps"]}`);
    expect(seen).toEqual(expect.arrayContaining(["DRIFT/below/15", "DEPEG/below/50", "CRITICAL/below/200", "DRIFT/above/15"]));
    expect(seen).not.toContain("BLACK_SWAN/below/400"); // outside the range drawn
    for (const l of lines) {
      const v = (l.attrs["data-side"] === "below" ? 1 : -1) * Number(l.attrs["data-bps"]);
      expect(Math.abs(Number(l.attrs["y1"]) - (top + ((v - lo) / (hi - lo)) * height))).toBeLessThan(0.2);
    }
    // The bands: DRIFT, DEPEG and CRITICAL below the peg, one DRIFT above it.
    expect(byClass(svg, "band").map((b) => `${b.attrs["data-band"]}/${b.attrs["data-side"]}`)).toEqual(["DRIFT/below", "DEPEG/below", "CRITICAL/below", "DRIFT/above"]);
  });

  it("draws no premium bands for a carve-out class and none for collateral-ratio thresholds", () => {
    expect(byClass(render({ points, sides: riskSides("lst") }), "threshold").every((l) => l.attrs["data-side"] === "below")).toBe(true);
    const cr = render({ points, levels: bandLevels({ cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 }) });
    expect(byClass(cr, "threshold")).toEqual([]);
    expect(byClass(cr, "band")).toEqual([]);
  });

  it("marks every transition in the window, linked to its receipt; none outside it", () => {
    const transitions = [transition("a-1", T0 + 22 * MIN, "DEPEG", 102), transition("b&2", T0 + 30 * MIN, "UNKNOWN"), transition("old", T0 - MIN, "DRIFT")];
    const markers = byClass(render({ points, transitions }), "marker");
    expect(markers.map((m) => m.attrs["data-alert-id"])).toEqual(["a-1", "b&#38;2"]);
    expect(markers[0]!.name).toBe("a");
    expect(markers[0]!.attrs["href"]).toBe("/receipt.html?id=a-1");
    expect(markers[0]!.attrs["data-state"]).toBe("DEPEG");
    expect(markers[1]!.attrs["href"]).toBe("/receipt.html?id=b%262");
  });

  it("shades UNKNOWN periods with their reason, clipped to the window", () => {
    const svg = render({ points, unknown: [{ from: T0 - 5 * MIN, to: T0 + 30 * MIN, reason: "oracle_confidence" }, { from: T0 + 2 * RANGES["1h"], to: T0 + 3 * RANGES["1h"], reason: "later" }] });
    const periods = byClass(svg, "unknown-period");
    expect(periods.map((p) => p.attrs["data-reason"])).toEqual(["oracle_confidence"]);
    const rect = periods[0]!.children.find((c) => c.name === "rect")!;
    const [left, , width] = svg.attrs["data-plot"]!.split(" ").map(Number) as [number, number, number];
    expect(Number(rect.attrs["x"])).toBeCloseTo(left, 0);
    expect(Number(rect.attrs["width"])).toBeCloseTo(width / 2, 0);
    expect(periods[0]!.children.find((c) => c.name === "title")!.text).toContain("UNKNOWN: oracle_confidence");
  });

  it("draws the live tail apart, continuing from the last row", () => {
    const live = [point(T0 + 45 * MIN, 101), point(T0 + 46 * MIN, 99)];
    const svg = render({ points, live });
    const tail = byClass(svg, "chart-live")[0]!;
    expect(tail.attrs["data-points"]).toBe("2");
    expect(coordinates(tail.attrs["d"]!)).toBe(3);
    expect(byClass(svg, "chart-line").filter((e) => !classes(e).includes("chart-live"))[0]!.attrs["data-points"]).toBe(String(rows.length));
  });

  it("renders an empty window", () => {
    const svg = render({ points: [] });
    expect(byClass(svg, "chart-line")[0]!.attrs["data-points"]).toBe("0");
    expect(byClass(svg, "threshold").length).toBeGreaterThan(0);
  });
});

/** A fake getJson over a list of answers by path prefix. */
function fakeGet(answer: (path: string, q: URLSearchParams) => { status?: number; body: unknown }) {
  const calls: string[] = [];
  const get = (path: string) => {
    calls.push(path);
    const [p, query] = path.split("?");
    const a = answer(p!, new URLSearchParams(query));
    return Promise.resolve({ status: a.status ?? 200, body: a.body });
  };
  return { get, calls };
}

describe("chart data", () => {
  it("walks history below the oldest instant of each full page, asking its rows again, none lost or doubled", async () => {
    // 12,001 raw rows 100 ms apart, newest first; four share the instant where the first full page ends.
    const times = Array.from({ length: 12_001 }, (_, i) => T0 + 100 * (i >= 7000 && i <= 7003 ? 7000 : i));
    const rows = times.map((t, i) => ({ ts: iso(t), discount: "0.001", state: "PEGGED", n: i })).reverse();
    const { get, calls } = fakeGet((_, q) => {
      const to = Date.parse(q.get("to")!);
      const from = Date.parse(q.get("from")!);
      const limit = Number(q.get("limit"));
      return { body: { data: rows.filter((r) => Date.parse(r.ts) <= to && Date.parse(r.ts) >= from).slice(0, limit) } };
    });
    const got = await loadHistory(get, "USD*", { from: T0, to: T0 + 3_600_000, bucket: "raw" });
    expect(got).toHaveLength(rows.length);
    expect(new Set(got.map((r) => r["n"])).size).toBe(rows.length);
    expect(calls.length).toBe(3);
    expect(calls[0]!.startsWith("/v1/assets/USD*/history?")).toBe(true);
    expect(new URLSearchParams(calls[0]!.split("?")[1]).get("limit")).toBe(String(HISTORY_PAGE));
  });

  it("collects the asset's transitions from every page of /v1/alerts since the window's start", async () => {
    const page = (offset: number) =>
      Array.from({ length: offset === 0 ? ALERTS_PAGE : 3 }, (_, i) => ({ id: `${offset}-${i}`, asset: i % 2 === 0 ? "USDC" : "USDT", from_state: "PEGGED", to_state: "DRIFT", discount: "0.002", detected_at: iso(T0 + (1000 - offset - i) * 1000) }));
    const { get, calls } = fakeGet((_, q) => ({ body: { data: page(Number(q.get("offset"))) } }));
    const { transitions: got, complete } = await loadTransitions(get, "USDC", { from: T0 });
    expect(complete).toBe(true);
    expect(calls).toHaveLength(2);
    expect(new URLSearchParams(calls[0]!.split("?")[1]).get("since")).toBe(iso(T0));
    expect(got).toHaveLength(ALERTS_PAGE / 2 + 2);
    expect(got.every((t, i) => i === 0 || got[i - 1]!.t <= t.t)).toBe(true);
    expect(got[0]).toMatchObject({ to_state: "DRIFT", v: 20 });
    // A page limit leaves the older ones unread, and says so.
    expect((await loadTransitions(get, "USDC", { from: T0, maxPages: 1 })).complete).toBe(false);
  });

  it("reads an UNKNOWN's reason from its receipt: state_reason, else the gate; null while pending or missing", async () => {
    const receipts: Record<string, { status: number; body: unknown }> = {
      "/v1/audit/a": { status: 200, body: { computed: { gate: "oracle_confidence" } } },
      "/v1/audit/b": { status: 200, body: { state_reason: "premium_sanity", computed: { gate: "premium_sanity" } } },
      "/v1/audit/c": { status: 202, body: { id: "c", evidence_status: "pending" } },
    };
    const get = (path: string) => {
      const r = receipts[path];
      return r === undefined ? Promise.reject(new ApiError(404, "not_found", "no such alert")) : Promise.resolve(r);
    };
    expect(await unknownReason(get, "a")).toBe("oracle_confidence");
    expect(await unknownReason(get, "b")).toBe("premium_sanity");
    expect(await unknownReason(get, "c")).toBeNull();
    expect(await unknownReason(get, "d")).toBeNull();
  });

  it("reads REST rows and stream messages as chart transitions", () => {
    expect(chartTransition({ alert_id: "x", ts: iso(T0), from_state: "PEGGED", to_state: "DEPEG", discount: "0.0102" })).toEqual({ id: "x", t: T0, from_state: "PEGGED", to_state: "DEPEG", v: expect.closeTo(102, 9), reason: null });
    expect(chartTransition({ id: "y", detected_at: iso(T0), to_state: "UNKNOWN", discount: "0", state_reason: "premium_sanity" })).toMatchObject({ id: "y", reason: "premium_sanity", v: 0 });
    expect(chartTransition({ id: "z" })).toBeNull();
  });

  it("adds live states: raw one per newer message, 1m one mean per minute, nothing the rows already hold", () => {
    const raw: Point[] = [];
    const msg = (ms: number, d: string, state = "DEPEG") => ({ type: "state", updated_at: iso(ms), discount: d, state });
    expect(addLive(raw, msg(T0, "0.01"), { bucket: "raw", after: T0 })).toBe(false);
    expect(addLive(raw, msg(T0 + 1000, "0.01"), { bucket: "raw", after: T0 })).toBe(true);
    expect(addLive(raw, msg(T0 + 500, "0.01"), { bucket: "raw", after: T0 })).toBe(false);
    expect(addLive(raw, { updated_at: iso(T0 + 2000), discount: null }, { bucket: "raw" })).toBe(false);
    expect(raw).toHaveLength(1);
    const minutes: (Point & { n?: number })[] = [];
    const after = T0 + MIN - 1;
    expect(addLive(minutes, msg(T0 + 30_000, "0.01"), { bucket: "1m", after })).toBe(false);
    addLive(minutes, msg(T0 + MIN + 1000, "0.01"), { bucket: "1m", after });
    addLive(minutes, msg(T0 + MIN + 2000, "0.02"), { bucket: "1m", after });
    addLive(minutes, msg(T0 + 2 * MIN, "0.03", "CRITICAL"), { bucket: "1m", after });
    expect(minutes.map((p) => [p.t, p.v, p.lo, p.hi])).toEqual([
      [T0 + MIN, 150, 100, 200],
      [T0 + 2 * MIN, 300, 300, 300],
    ]);
    expect(minutes[1]!.state).toBe("CRITICAL");
  });
});
