// 24 h sparkline of an asset's hourly average discount (`series_24h`), as an inline SVG string; in the first hours
// after a start, of its minutes (below). Pure.

import { escapeXml } from "./format.js";

const num = (n) => {
  const r = Math.round(n * 100) / 100;
  return Object.is(r, -0) ? "0" : String(r);
};

/**
 * The SVG path of a series. A null (or non-finite) entry is a gap: the line stops and starts again with a new `M`.
 * A larger discount is drawn lower (price below its peg goes down). A point with no neighbour is a zero-length
 * segment, drawn as a dot by the round line cap. Returns "" when there is nothing to draw.
 */
export function sparklinePath(series, { width = 120, height = 24, pad = 2 } = {}) {
  if (!Array.isArray(series) || series.length === 0) return "";
  const values = series.map((v) => (typeof v === "number" && Number.isFinite(v) ? v : null));
  const present = values.filter((v) => v !== null);
  if (present.length === 0) return "";
  let min = Math.min(...present);
  let max = Math.max(...present);
  if (max === min) {
    min -= 1;
    max += 1;
  }
  const n = values.length;
  const x = (i) => (n === 1 ? width / 2 : pad + (i * (width - 2 * pad)) / (n - 1));
  const y = (v) => pad + ((v - min) / (max - min)) * (height - 2 * pad);
  const parts = [];
  let open = false;
  values.forEach((v, i) => {
    if (v === null) {
      open = false;
      return;
    }
    const next = i + 1 < n ? values[i + 1] : null;
    if (!open) {
      parts.push(`M${num(x(i))} ${num(y(v))}`);
      if (next === null) parts.push("l0 0");
      open = true;
    } else {
      parts.push(`L${num(x(i))} ${num(y(v))}`);
    }
  });
  return parts.join(" ");
}

/** Where discount 0 (the peg) lies on the sparkline, or null when the series does not straddle it. */
export function sparklineZeroY(series, { height = 24, pad = 2 } = {}) {
  if (!Array.isArray(series)) return null;
  const present = series.filter((v) => typeof v === "number" && Number.isFinite(v));
  if (present.length === 0) return null;
  const min = Math.min(...present);
  const max = Math.max(...present);
  if (!(min < 0 && max > 0)) return null;
  return pad + ((0 - min) / (max - min)) * (height - 2 * pad);
}

/** The whole sparkline: `<svg class="spark">` with the peg line (when crossed) and the series path. */
export function sparklineSvg(series, { width = 120, height = 24, pad = 2, label = "24 h discount" } = {}) {
  const d = sparklinePath(series, { width, height, pad });
  const zero = sparklineZeroY(series, { height, pad });
  const open = `<svg xmlns="http://www.w3.org/2000/svg" class="spark${d === "" ? " spark-empty" : ""}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${escapeXml(label)}">`;
  const zeroLine = zero === null ? "" : `<line class="spark-zero" x1="0" x2="${width}" y1="${num(zero)}" y2="${num(zero)}"/>`;
  const path = d === "" ? "" : `<path class="spark-line" d="${d}"/>`;
  return `${open}${zeroLine}${path}</svg>`;
}

// --- the first hours after a start --------------------------------------------------------------------------
// `series_24h` has one value per hour, so for its first hours an asset has one or two: a dot at the right edge. Until
// it has YOUNG_BUCKETS, the overview draws the minutes instead: the 1-minute rollups that exist (one /history call
// per asset) and the live states since, stretched over the width from the first minute to now.

/** Hours with data below which the sparkline is drawn from minutes. */
export const YOUNG_BUCKETS = 3;
const MINUTE_MS = 60_000;

/** Whether the hourly series holds fewer than YOUNG_BUCKETS hours of data. */
export function isYoung(series) {
  if (!Array.isArray(series)) return true;
  return series.filter((v) => typeof v === "number" && Number.isFinite(v)).length < YOUNG_BUCKETS;
}

/** A trail of minute means (minute start ms -> { v: mean discount fraction, n }) from 1-minute history rows. */
export function trailFromRows(rows) {
  const trail = new Map();
  for (const r of rows ?? []) {
    const t = Date.parse(r?.ts ?? "");
    const v = Number(r?.discount);
    if (Number.isNaN(t) || r?.discount === null || r?.discount === undefined || !Number.isFinite(v)) continue;
    trail.set(t - (t % MINUTE_MS), { v, n: Number.isInteger(r.samples) && r.samples > 0 ? r.samples : 1 });
  }
  return trail;
}

/** Adds a live `snapshot`/`state` message to its minute of the trail (mutated); true when it changed. */
export function trailAdd(trail, msg) {
  const t = Date.parse(msg?.updated_at ?? "");
  const v = Number(msg?.discount);
  if (Number.isNaN(t) || msg?.discount === null || msg?.discount === undefined || !Number.isFinite(v)) return false;
  const minute = t - (t % MINUTE_MS);
  const cur = trail.get(minute);
  if (cur === undefined) trail.set(minute, { v, n: 1 });
  else {
    cur.n += 1;
    cur.v += (v - cur.v) / cur.n;
  }
  return true;
}

/** The trail as an evenly spaced series, one entry a minute from its first minute to its last (null: no data), at most a day. */
export function trailSeries(trail) {
  if (trail.size === 0) return null;
  const minutes = [...trail.keys()].sort((a, b) => a - b);
  const last = minutes.at(-1);
  const first = Math.max(minutes[0], last - 24 * 60 * MINUTE_MS);
  const out = [];
  for (let m = first; m <= last; m += MINUTE_MS) out.push(trail.get(m)?.v ?? null);
  return out;
}
