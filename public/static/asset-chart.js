// The asset page's chart panel: range buttons (1 h, 24 h, 7 d, 30 d), drag to zoom (a window of 15 minutes or less
// is drawn from raw samples), the live tail and markers from the stream, and a reload after a reconnect (the states
// sent while the page was away are in the store, not in the replay). The window lives in the query string
// (`range`, or `from` and `to` for a zoom), so a view can be bookmarked.

import { errorText } from "./api.js";
import { addLive, chartTransition, loadHistory, loadTransitions, unknownReason } from "./chart-data.js";
import { RANGES, bandLevels, bucketFor, chartSvg, riskSides, toPoints, unknownPeriods } from "./chart.js";
import { byId, el, replace } from "./dom.js";

const DEFAULT_RANGE = "24h";
/** How often a following window slides with the clock, ms. */
const SLIDE_MS = 5000;
/** Smallest zoom, ms. */
const MIN_ZOOM_MS = 60_000;
/** How often a following window of up to 24 h reloads its rows (wall clock), so the live tail stays short; 7 d and 30 d less often. */
const RELOAD_MS = 60_000;
const RELOAD_LONG_MS = 600_000;
/** Receipts read per load for the reasons of UNKNOWN transitions (newest first; the others are shaded "UNKNOWN"). */
const REASONS_PER_LOAD = 10;

export class AssetChart {
  /**
   * `root`: the panel's chart container; `controls`: where the range buttons go; `status`: a line for what is
   * loading. `get`: getJson; `serverNow()`: the server's clock (a scenario runs it faster than ours).
   */
  constructor({ symbol, root, controls, status, get, serverNow, onError }) {
    this.symbol = symbol;
    this.root = root;
    this.controls = controls;
    this.status = status;
    this.get = get;
    this.serverNow = serverNow;
    this.onError = onError;
    this.levels = null;
    this.sides = [1];
    this.points = [];
    this.live = [];
    this.transitions = new Map();
    /** alert id -> reason of an UNKNOWN (receipts never change). */
    this.reasons = new Map();
    this.reasonBudget = REASONS_PER_LOAD;
    this.loaded = null; // { from, to, bucket } of the rows held
    this.generation = 0;
    this.renderQueued = false;
    this.dragging = false;
    this.readQuery();
    this.buildControls();
    this.bindZoom();
    window.setInterval(() => {
      if (this.zoom === null) this.scheduleRender();
    }, SLIDE_MS);
    this.loadedAt = 0;
    window.setInterval(() => {
      const every = RANGES[this.range] <= RANGES["24h"] ? RELOAD_MS : RELOAD_LONG_MS;
      if (this.zoom === null && this.loaded !== null && Date.now() - this.loadedAt >= every) void this.load();
    }, RELOAD_MS / 4);
  }

  readQuery() {
    const q = new URLSearchParams(location.search);
    const range = q.get("range");
    this.range = range !== null && range in RANGES ? range : DEFAULT_RANGE;
    const from = Date.parse(q.get("from") ?? "");
    const to = Date.parse(q.get("to") ?? "");
    this.zoom = !Number.isNaN(from) && !Number.isNaN(to) && to - from >= MIN_ZOOM_MS ? { from, to } : null;
  }

  writeQuery() {
    const q = new URLSearchParams(location.search);
    for (const k of ["range", "from", "to"]) q.delete(k);
    if (this.zoom !== null) {
      q.set("from", new Date(this.zoom.from).toISOString());
      q.set("to", new Date(this.zoom.to).toISOString());
    } else if (this.range !== DEFAULT_RANGE) q.set("range", this.range);
    history.replaceState(null, "", `?${q}`);
  }

  /** The window shown now: the zoom, or the range ending at the server's now. */
  window() {
    if (this.zoom !== null) return this.zoom;
    const to = this.serverNow();
    return { from: to - RANGES[this.range], to };
  }

  buildControls() {
    const buttons = Object.keys(RANGES).map((r) => {
      const b = el("button", { type: "button", class: "range", dataset: { range: r }, text: r });
      b.addEventListener("click", () => this.setRange(r));
      return b;
    });
    const reset = el("button", { type: "button", class: "range zoom-reset", dataset: { range: "reset" }, text: "reset zoom" });
    reset.addEventListener("click", () => this.setRange(this.range));
    replace(this.controls, ...buttons, reset);
    this.syncControls();
  }

  syncControls() {
    for (const b of this.controls.querySelectorAll("button.range")) {
      const r = b.dataset.range;
      if (r === "reset") b.hidden = this.zoom === null;
      else b.setAttribute("aria-pressed", String(this.zoom === null && r === this.range));
    }
  }

  setRange(range) {
    this.range = range;
    this.zoom = null;
    this.writeQuery();
    this.syncControls();
    void this.load();
  }

  setZoom(from, to) {
    if (to - from < MIN_ZOOM_MS) return;
    this.zoom = { from, to };
    this.writeQuery();
    this.syncControls();
    void this.load();
  }

  /** The card brings the class and thresholds the bands are drawn from. */
  setCard(card) {
    const levels = bandLevels(card?.thresholds);
    const sides = riskSides(card?.class);
    if (JSON.stringify(levels) === JSON.stringify(this.levels) && sides.length === this.sides.length) return;
    this.levels = levels;
    this.sides = sides;
    this.root.dataset.thresholds = levels === null ? "collateral-ratio" : "bps";
    this.scheduleRender();
  }

  /** Fetches the rows and transitions of the current window; a newer call wins over one still in flight. */
  async load() {
    const gen = ++this.generation;
    const { from, to: end } = this.window();
    const bucket = bucketFor(end - from);
    // Following the clock, the rows stop at the last whole minute: the current minute's row may not exist yet, and
    // the live tail draws it. (The rows held are then exactly what /history answers for [from, to], asked again.)
    const to = bucket === "1m" && this.zoom === null ? end - (end % 60_000) - 1 : end;
    this.root.dataset.loading = "true";
    this.status.textContent = `loading ${bucket === "raw" ? "raw samples" : "1-minute rollups"}\u2026`;
    try {
      const [rows, { transitions, complete }] = await Promise.all([
        loadHistory(this.get, this.symbol, { from, to, bucket }),
        loadTransitions(this.get, this.symbol, { from }),
      ]);
      if (gen !== this.generation) return;
      this.points = toPoints(rows);
      this.live = this.live.filter((p) => p.t > to && (this.loaded === null || this.loaded.bucket === bucket));
      this.loadedAt = Date.now();
      this.loaded = { from, to, bucket, rows: rows.length };
      this.reasonBudget = REASONS_PER_LOAD;
      for (const t of [...transitions].reverse()) this.addTransition(t); // newest first: they get the reasons
      const older = complete ? "" : "; transitions: the newest 4,000 alerts only";
      const cr = this.root.dataset.thresholds === "collateral-ratio" ? "; collateral-ratio thresholds: no bands on the discount axis" : "";
      this.status.textContent = `${rows.length} ${bucket === "raw" ? "raw samples" : "1-minute rollups"}${older}${cr}`;
    } catch (e) {
      if (gen === this.generation) this.onError(`chart: ${errorText(e)}`);
    } finally {
      if (gen === this.generation) delete this.root.dataset.loading;
      this.scheduleRender();
    }
  }

  addTransition(t) {
    if (t === null || this.transitions.has(t.id)) return false;
    this.transitions.set(t.id, t);
    if (t.to_state === "UNKNOWN" && t.reason === null) {
      const known = this.reasons.get(t.id);
      if (known !== undefined) t.reason = known;
      else if (this.reasonBudget-- > 0) void this.fetchReason(t, 0);
    }
    return true;
  }

  async fetchReason(t, attempt) {
    const reason = await unknownReason(this.get, t.id).catch(() => null);
    if (reason !== null) {
      this.reasons.set(t.id, reason);
      t.reason = reason;
      this.scheduleRender();
    } else if (attempt < 3) {
      window.setTimeout(() => void this.fetchReason(t, attempt + 1), 2000 * (attempt + 1)); // a receipt still pending
    }
  }

  /** A `snapshot` or `state` message of this asset. */
  onState(msg) {
    if (this.loaded === null) return;
    if (addLive(this.live, msg, { bucket: this.loaded.bucket, after: this.loaded.to })) this.scheduleRender();
  }

  /** A `transition` message of this asset: a marker without reload. */
  onTransition(msg) {
    if (this.addTransition(chartTransition(msg))) this.scheduleRender();
  }

  scheduleRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    window.requestAnimationFrame(() => {
      this.renderQueued = false;
      this.render();
    });
  }

  render() {
    if (this.loaded === null || this.dragging) return;
    const { from, to } = this.window();
    const transitions = [...this.transitions.values()].sort((a, b) => a.t - b.t);
    const all = [...this.points, ...this.live];
    const svg = chartSvg({
      from,
      to,
      bucket: this.loaded.bucket,
      points: this.points,
      live: this.live,
      transitions,
      levels: this.levels,
      sides: this.sides,
      unknown: unknownPeriods(all, transitions, { to: Math.max(to, this.serverNow()) }),
    });
    this.root.innerHTML = svg;
    const node = this.root.firstElementChild;
    node.dataset.rowsFrom = new Date(this.loaded.from).toISOString();
    node.dataset.rowsTo = new Date(this.loaded.to).toISOString();
    node.dataset.rows = String(this.loaded.rows);
  }

  /** Drag across the chart to zoom into that window. */
  bindZoom() {
    let start = null;
    let brush = null;
    const timeAt = (svg, clientX) => {
      const [left, , width] = (svg.dataset.plot ?? "0 0 1 1").split(" ").map(Number);
      const box = svg.getBoundingClientRect();
      const vx = ((clientX - box.left) / box.width) * svg.viewBox.baseVal.width;
      const f = Math.min(1, Math.max(0, (vx - left) / width));
      const from = Date.parse(svg.dataset.from);
      const to = Date.parse(svg.dataset.to);
      return { t: from + f * (to - from), vx: left + f * width };
    };
    this.root.addEventListener("pointerdown", (e) => {
      const svg = this.root.querySelector("svg");
      if (svg === null || e.button !== 0 || e.target.closest?.("a") !== null) return;
      start = { svg, ...timeAt(svg, e.clientX) };
      this.dragging = true;
      brush = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      brush.setAttribute("class", "brush");
      const [, top, , height] = svg.dataset.plot.split(" ").map(Number);
      brush.setAttribute("y", String(top));
      brush.setAttribute("height", String(height));
      brush.setAttribute("x", String(start.vx));
      brush.setAttribute("width", "0");
      svg.append(brush);
      this.root.setPointerCapture(e.pointerId);
    });
    this.root.addEventListener("pointermove", (e) => {
      if (start === null || brush === null) return;
      const at = timeAt(start.svg, e.clientX);
      brush.setAttribute("x", String(Math.min(at.vx, start.vx)));
      brush.setAttribute("width", String(Math.abs(at.vx - start.vx)));
    });
    const stop = () => {
      start = null;
      brush?.remove();
      brush = null;
      this.dragging = false;
      this.scheduleRender();
    };
    const end = (e) => {
      if (start === null) return;
      const at = timeAt(start.svg, e.clientX);
      const [a, b] = [Math.min(at.t, start.t), Math.max(at.t, start.t)];
      stop();
      if (b - a >= MIN_ZOOM_MS) this.setZoom(Math.round(a), Math.round(b));
    };
    this.root.addEventListener("pointerup", end);
    this.root.addEventListener("pointercancel", stop);
  }
}

/** The page's chart, in the panel with id `chart-panel`. */
export function mountChart(options) {
  return new AssetChart({ ...options, root: byId("chart"), controls: byId("chart-ranges"), status: byId("chart-status") });
}
