// The asset page's discount chart as an inline SVG string. Pure (no DOM, no clock): the page passes the window, the
// history rows, the live points, the transitions and the class's thresholds; chart-data.js fetches them.
//
// Orientation as in the sparkline: a larger discount (price below its peg) is drawn lower. Discounts are in bps.

import { escapeXml, receiptHref } from "./format.js";

/** The ranges the page offers, in ms. */
export const RANGES = Object.freeze({ "1h": 3_600_000, "24h": 86_400_000, "7d": 604_800_000, "30d": 2_592_000_000 });

/** A window this short (a zoom to minutes) is drawn from raw samples; a longer one from 1-minute rollups. */
export const RAW_MAX_SPAN_MS = 15 * 60_000;

/** The interface's stale rule: 15 minutes after its last sample an asset reads UNKNOWN (`stale_source`). */
export const STALE_MS = 15 * 60_000;

/** Classes whose premium (discount < 0) classifies PEGGED (methodology section 3): their bands are below the peg only. */
const PREMIUM_CARVE_OUT = new Set(["lst", "stable_yield", "synth_lev"]);

/** Methodology 1.0.0 defaults for a missing threshold key, bps. */
const DEFAULT_LEVELS = Object.freeze({ drift: 20, depeg: 100, critical: 300 });

const BANDS = ["DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN"];

export function bucketFor(spanMs) {
  return spanMs <= RAW_MAX_SPAN_MS ? "raw" : "1m";
}

/**
 * Entry thresholds in bps, mildest first: [{ state, bps }] for DRIFT, DEPEG, CRITICAL and BLACK_SWAN (absent black
 * swan = 2 x critical, as the methodology resolves it). Null for collateral-ratio thresholds, which are not discounts.
 */
export function bandLevels(thresholds) {
  if (thresholds === null || typeof thresholds !== "object" || "cr_drift" in thresholds) return null;
  const drift = thresholds.drift_bps ?? DEFAULT_LEVELS.drift;
  const depeg = thresholds.depeg_bps ?? DEFAULT_LEVELS.depeg;
  const critical = thresholds.critical_bps ?? DEFAULT_LEVELS.critical;
  const blackSwan = thresholds.black_swan_bps ?? 2 * critical;
  return [drift, depeg, critical, blackSwan].map((bps, i) => ({ state: BANDS[i], bps }));
}

/** Signs of the discount the bands apply to: +1 (below the peg) always, -1 (a premium) unless the class carves it out. */
export function riskSides(cls) {
  return PREMIUM_CARVE_OUT.has(cls) ? [1] : [1, -1];
}

const bps = (d) => {
  if (d === null || d === undefined || d === "") return null;
  const n = Number(d) * 10_000;
  return Number.isFinite(n) ? n : null;
};

/**
 * History rows (`/history`, newest first, raw or 1m) as points oldest first: { t (ms), v (bps), lo, hi, state }.
 * A row without a discount is dropped.
 */
export function toPoints(rows) {
  const out = [];
  for (const r of rows) {
    const t = Date.parse(r.ts);
    const v = bps(r.discount);
    if (Number.isNaN(t) || v === null) continue;
    out.push({ t, v, lo: bps(r.min_discount) ?? v, hi: bps(r.max_discount) ?? v, state: r.state ?? null });
  }
  return out.sort((a, b) => a.t - b.t);
}

/**
 * The periods the asset was published UNKNOWN, oldest first: { from, to, reason }. A run of UNKNOWN points takes the
 * reason of the transition into UNKNOWN that opened it (its receipt's gate or state_reason, `reason` on the
 * transition), else "UNKNOWN"; a silence longer than STALE_MS is UNKNOWN from 15 minutes after the last sample
 * (`stale_source`, the API's rule). `to` is the window's end; a period still open ends there.
 */
export function unknownPeriods(points, transitions, { to, staleMs = STALE_MS } = {}) {
  const intoUnknown = transitions.filter((t) => t.to_state === "UNKNOWN").sort((a, b) => a.t - b.t);
  // The latest transition into UNKNOWN up to the run's first point (a 1-minute row starts before the instant in it).
  const reasonAt = (start) => {
    let best = null;
    for (const t of intoUnknown) if (t.t <= start + 60_000) best = t;
    return best?.reason ?? "UNKNOWN";
  };
  const out = [];
  let open = null;
  let prev = null;
  for (const p of points) {
    if (prev !== null && p.t - prev.t > staleMs) {
      if (open !== null) {
        out.push({ ...open, to: prev.t });
        open = null;
      }
      out.push({ from: prev.t + staleMs, to: p.t, reason: "stale_source" });
    }
    if (p.state === "UNKNOWN" && open === null) open = { from: p.t, reason: reasonAt(p.t) };
    else if (p.state !== "UNKNOWN" && open !== null) {
      out.push({ ...open, to: p.t });
      open = null;
    }
    prev = p;
  }
  if (open !== null) out.push({ ...open, to });
  else if (prev !== null && to - prev.t > staleMs) out.push({ from: prev.t + staleMs, to, reason: "stale_source" });
  return out;
}

const num = (n) => {
  const r = Math.round(n * 10) / 10;
  return Object.is(r, -0) ? "0" : String(r);
};

/** The value domain [lo, hi] in bps: the data, the peg, and on each risk side the first threshold beyond the data. */
export function valueDomain(values, levels, sides) {
  let lo = Math.min(0, ...values);
  let hi = Math.max(0, ...values);
  if (levels !== null) {
    for (const s of sides) {
      const reach = s > 0 ? hi : -lo;
      const next = levels.find((l) => l.bps > reach) ?? levels.at(-1);
      const edge = Math.max(reach, next.bps);
      if (s > 0) hi = edge;
      else lo = -edge;
    }
  }
  if (hi - lo < 2) {
    hi += 1;
    lo -= 1;
  }
  const pad = (hi - lo) * 0.06;
  return [lo - pad, hi + pad];
}

/** Round tick values in [lo, hi], about `count` of them. */
export function ticks(lo, hi, count = 5) {
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(Math.abs(v) < step / 1e6 ? 0 : v);
  return out;
}

const pad2 = (n) => String(n).padStart(2, "0");
function timeLabel(t, spanMs) {
  const d = new Date(t);
  const hm = `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}`;
  if (spanMs <= RAW_MAX_SPAN_MS) return `${hm}:${pad2(d.getUTCSeconds())}`;
  return spanMs <= RANGES["24h"] ? hm : `${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}`;
}

/** A line through points; a gap longer than `gapMs` starts a new segment (an isolated point is a dot). */
function linePath(points, x, y, gapMs) {
  const parts = [];
  points.forEach((p, i) => {
    const newRun = i === 0 || p.t - points[i - 1].t > gapMs;
    const alone = newRun && (i + 1 === points.length || points[i + 1].t - p.t > gapMs);
    parts.push(`${newRun ? "M" : "L"}${num(x(p.t))} ${num(y(p.v))}${alone ? " l0 0" : ""}`);
  });
  return parts.join(" ");
}

/**
 * The chart: `<svg data-chart="discount-history">` with the threshold bands and lines of the risk sides, the UNKNOWN
 * periods shaded with their reason, the history line (one coordinate per history row, `data-points`), the live tail
 * (points the stream added since, continuing from the last row), and a marker per transition linked to its receipt.
 *
 * `model`: { from, to (ms), bucket ("raw" | "1m"), points, live (points), transitions ([{ id, t, from_state,
 * to_state, v, reason }]), levels (bandLevels or null), sides (riskSides), unknown (unknownPeriods) }.
 */
export function chartSvg(model, { width = 1000, height = 320 } = {}) {
  const { from, to, bucket, points, live = [], transitions = [], levels = null, sides = [1], unknown = [] } = model;
  const m = { left: 56, right: 12, top: 14, bottom: 26 };
  const pw = width - m.left - m.right;
  const ph = height - m.top - m.bottom;
  const inWindow = (p) => p.t >= from && p.t <= to;
  const shown = points.filter(inWindow);
  const tail = live.filter(inWindow);
  const marks = transitions.filter(inWindow);
  const values = [...shown.flatMap((p) => [p.v, p.lo, p.hi]), ...tail.map((p) => p.v), ...marks.map((t) => t.v).filter((v) => v !== null)];
  const [lo, hi] = valueDomain(values, levels, sides);
  const x = (t) => m.left + ((t - from) / Math.max(1, to - from)) * pw;
  const y = (v) => m.top + ((v - lo) / (hi - lo)) * ph;
  const clampY = (v) => Math.min(m.top + ph, Math.max(m.top, y(v)));
  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="discount-history" data-from="${new Date(from).toISOString()}" data-to="${new Date(to).toISOString()}" data-bucket="${bucket}" data-domain="${num(lo)} ${num(hi)}" data-plot="${m.left} ${m.top} ${pw} ${ph}" viewBox="0 0 ${width} ${height}" role="img" aria-label="smoothed discount, bps">`,
  );
  // Bands: each from its threshold to the next (black swan to the edge), on every risk side.
  if (levels !== null) {
    for (const s of sides) {
      const side = s > 0 ? "below" : "above";
      levels.forEach((l, i) => {
        const end = i + 1 < levels.length ? levels[i + 1].bps : Infinity;
        const a = clampY(s * l.bps);
        const b = clampY(s * Math.min(end, 1e9));
        if (Math.abs(b - a) >= 0.5) out.push(`<rect class="band" data-band="${l.state}" data-side="${side}" x="${m.left}" y="${num(Math.min(a, b))}" width="${pw}" height="${num(Math.abs(b - a))}"/>`);
      });
      for (const l of levels) {
        const v = s * l.bps;
        if (v < lo || v > hi) continue;
        out.push(`<line class="threshold" data-state="${l.state}" data-side="${side}" data-bps="${l.bps}" x1="${m.left}" x2="${m.left + pw}" y1="${num(y(v))}" y2="${num(y(v))}"><title>${l.state} ${s > 0 ? "" : "premium "}${l.bps} bps</title></line>`);
      }
    }
  }
  for (const u of unknown) {
    const a = Math.max(from, u.from);
    const b = Math.min(to, u.to);
    if (b <= a) continue;
    const w = Math.max(1, x(b) - x(a));
    const label = `UNKNOWN: ${u.reason}`;
    out.push(`<g class="unknown-period" data-reason="${escapeXml(u.reason)}"><rect x="${num(x(a))}" y="${m.top}" width="${num(w)}" height="${ph}"/>`);
    out.push(`<title>${escapeXml(`${label} (${new Date(u.from).toISOString()} to ${new Date(u.to).toISOString()})`)}</title>`);
    if (w > 90) out.push(`<text x="${num(x(a) + 4)}" y="${m.top + 12}">${escapeXml(label)}</text>`);
    out.push("</g>");
  }
  // Axes: the peg, value ticks, time ticks.
  for (const v of ticks(lo, hi)) {
    out.push(`<line class="grid" x1="${m.left}" x2="${m.left + pw}" y1="${num(y(v))}" y2="${num(y(v))}"/>`);
    out.push(`<text class="tick" x="${m.left - 6}" y="${num(y(v) + 4)}">${num(v)}</text>`);
  }
  if (lo <= 0 && hi >= 0) out.push(`<line class="peg-line" x1="${m.left}" x2="${m.left + pw}" y1="${num(y(0))}" y2="${num(y(0))}"/>`);
  const span = to - from;
  for (let i = 0; i <= 5; i++) {
    const t = from + (span * i) / 5;
    const edge = i === 0 ? " tick-first" : i === 5 ? " tick-last" : "";
    out.push(`<text class="tick tick-x${edge}" x="${num(x(t))}" y="${height - 8}">${timeLabel(t, span)}</text>`);
  }
  out.push(`<text class="axis-note" x="4" y="${m.top + 4}">bps</text>`);
  // Data.
  const gapMs = bucket === "raw" ? 120_000 : 180_000;
  if (bucket === "1m" && shown.length > 0) {
    const upper = shown.map((p) => `${num(x(p.t))} ${num(y(p.hi))}`);
    const lower = shown.map((p) => `${num(x(p.t))} ${num(y(p.lo))}`).reverse();
    out.push(`<path class="chart-range" d="M${upper.join(" L")} L${lower.join(" L")} Z"/>`);
  }
  out.push(`<path class="chart-line" data-points="${shown.length}" d="${linePath(shown, x, y, gapMs)}"/>`);
  if (tail.length > 0) {
    const last = shown.at(-1);
    const joined = last !== undefined && tail[0].t - last.t <= gapMs ? [last, ...tail] : tail;
    out.push(`<path class="chart-line chart-live" data-points="${tail.length}" d="${linePath(joined, x, y, gapMs)}"/>`);
  }
  for (const t of marks) {
    const mx = num(x(t.t));
    const state = escapeXml(t.to_state ?? "UNKNOWN");
    const title = `${t.from_state ?? "?"} \u2192 ${t.to_state ?? "?"} at ${new Date(t.t).toISOString()}: receipt`;
    out.push(`<a class="marker" href="${escapeXml(receiptHref(t.id))}" data-alert-id="${escapeXml(t.id)}" data-state="${state}">`);
    out.push(`<title>${escapeXml(title)}</title><line x1="${mx}" x2="${mx}" y1="${m.top}" y2="${m.top + ph}"/>`);
    out.push(`<circle cx="${mx}" cy="${num(t.v === null ? m.top + 6 : clampY(t.v))}" r="5"/></a>`);
  }
  out.push(`<rect class="plot-frame" x="${m.left}" y="${m.top}" width="${pw}" height="${ph}"/>`);
  out.push("</svg>");
  return out.join("");
}
