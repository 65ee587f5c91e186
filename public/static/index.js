// Live overview page (/): the state summary, the asset table (monitoring-only assets marked), filters, the transition
// feed and the connection indicator.

import { errorText, getJson } from "./api.js";
import { assetLink, badge, betaMark, byId, el, receiptLink, replace, showConnection, showError } from "./dom.js";
import { PEG_STATES, bpsText, relativeTime, riskText } from "./format.js";
import { Feed, applyLive, filterCards, mergeRest, sortCards, stateSummary } from "./model.js";
import { isYoung, sparklineSvg, trailAdd, trailFromRows, trailSeries } from "./sparkline.js";
import { LiveSocket, wsUrl } from "./ws.js";

const REST_REFRESH_MS = 60_000;
/** Spacing of the minute-history calls of young sparklines: well inside the default 60 requests a minute. */
const TRAIL_FETCH_MS = 3000;

/** symbol -> AssetCard (replaced, never mutated, on every change). */
const cards = new Map();
/** symbol -> { tr, card (the one rendered), cells } */
const rows = new Map();
const feed = new Feed(100);
/** symbol -> minute trail (sparkline.js) of an asset whose hourly series is still young. */
const trails = new Map();
/** Symbols whose stored minutes were asked for (queued, in flight or answered). */
const trailAsked = new Set();
const trailQueue = [];
let trailTimer = null;
let feedDirty = true;
let loaded = false;
let renderQueued = false;
let order = [];

const tbody = byId("assets").tBodies[0];
const feedList = byId("feed");
const classSelect = byId("filter-class");
const stateSelect = byId("filter-state");
const sortSelect = byId("sort");

const live = new LiveSocket({
  url: wsUrl(location),
  assets: ["*"],
  onStatus: showConnection,
  onMessage,
});

const serverNow = () => Date.now() + live.clockOffsetMs;

function onMessage(msg) {
  if (msg.type === "snapshot" || msg.type === "state") {
    if (typeof msg.asset !== "string") return;
    const prev = cards.get(msg.asset) ?? { symbol: msg.asset, class: null, series_24h: null, updated_at: null };
    const next = applyLive(prev, msg);
    const trail = trails.get(msg.asset);
    if (trail !== undefined) trailAdd(trail, msg);
    if (next !== prev) {
      cards.set(msg.asset, next);
      scheduleRender();
    }
  } else if (msg.type === "transition") {
    if (feed.add([msg])) {
      feedDirty = true;
      scheduleRender();
    }
  } else if (msg.type === "error") {
    showError(`stream: ${msg.message ?? msg.error}`);
  }
}

function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  window.requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

function buildRow(card) {
  const spark = el("td", { class: "spark-cell" });
  const updated = el("td", { class: "updated" });
  const tr = el("tr", { dataset: { symbol: card.symbol } });
  const cells = { spark, updated };
  fillRow(tr, cells, card, null);
  return { tr, cells, card };
}

function fillRow(tr, cells, card, previous) {
  const state = card.state ?? "UNKNOWN";
  tr.dataset.state = state;
  const head = [
    el("th", { scope: "row" }, [assetLink(card.symbol), card.monitoring_only === true ? betaMark(card) : null]),
    el("td", { class: "cls", text: card.class ?? "\u2014" }),
    el("td", {}, [badge(card.state)]),
    el("td", { class: "num", text: bpsText(card.discount) }),
    el("td", { class: "num", text: riskText(card.risk_score) }),
  ];
  const spark = sparkFor(card);
  if (spark !== cells.sparkHtml) {
    cells.sparkHtml = spark;
    cells.spark.innerHTML = spark;
    cells.spark.dataset.series = isYoung(card.series_24h) ? "minutes" : "hours";
  }
  cells.updated.dataset.at = card.updated_at ?? "";
  cells.updated.textContent = relativeTime(card.updated_at, serverNow());
  if (card.updated_at) cells.updated.title = card.updated_at;
  tr.replaceChildren(...head, cells.spark, cells.updated);
  if (previous !== null && (previous.state ?? "UNKNOWN") !== state) {
    tr.classList.remove("flash");
    void tr.offsetWidth; // restart the animation
    tr.classList.add("flash");
  }
}

/** The hourly sparkline, or while the hourly series is young the minutes that exist (fetched once, then live). */
function sparkFor(card) {
  if (!isYoung(card.series_24h)) return sparklineSvg(card.series_24h);
  let trail = trails.get(card.symbol);
  // The stream's states from now on; the minutes the store has, once, as soon as it has some.
  if (trail === undefined) trails.set(card.symbol, (trail = new Map()));
  const stored = Array.isArray(card.series_24h) && card.series_24h.some((v) => v !== null);
  if (stored && !trailAsked.has(card.symbol)) queueTrail(card.symbol);
  const minutes = trailSeries(trail);
  return minutes === null ? sparklineSvg(card.series_24h) : sparklineSvg(minutes, { label: "discount since the first minute" });
}

function queueTrail(symbol) {
  trailAsked.add(symbol);
  trailQueue.push(symbol);
  if (trailTimer === null) trailTimer = window.setTimeout(nextTrail, 0);
}

/** One minute-history call at a time, in the table's order (worst first), rows the filters hide last. */
async function nextTrail() {
  trailTimer = -1; // in flight: queueTrail leaves the next call to this one
  const rank = (s) => {
    const at = order.indexOf(s);
    return (rows.get(s)?.tr.hidden === false ? 0 : 1e6) + (at === -1 ? 5e5 : at);
  };
  let i = 0;
  trailQueue.forEach((s, k) => {
    if (rank(s) < rank(trailQueue[i])) i = k;
  });
  const [symbol] = trailQueue.splice(i, 1);
  if (symbol === undefined) {
    trailTimer = null;
    return;
  }
  let wait = TRAIL_FETCH_MS;
  try {
    const { body } = await getJson(`/v1/assets/${encodeURIComponent(symbol)}/history?bucket=1m&limit=1440`);
    const trail = trailFromRows(Array.isArray(body?.data) ? body.data : []);
    const newest = Math.max(-Infinity, ...trail.keys());
    for (const [minute, p] of trails.get(symbol) ?? []) if (minute > newest) trail.set(minute, p); // the stream's, since
    trails.set(symbol, trail);
    const card = cards.get(symbol);
    if (card !== undefined) cards.set(symbol, { ...card }); // a new identity re-renders the row
    scheduleRender();
  } catch {
    trailAsked.delete(symbol); // asked again at a later render, after a longer pause (a 429 among them)
    wait = 30_000;
  }
  trailTimer = trailQueue.length > 0 || wait > TRAIL_FETCH_MS ? window.setTimeout(nextTrail, wait) : null;
}

function renderSummary(all) {
  const { total, counts, monitoringOnly } = stateSummary(all);
  const node = byId("state-summary");
  node.dataset.total = String(total);
  const parts = [el("span", {}, [el("span", { class: "n", text: String(total) }), " assets"])];
  for (const s of PEG_STATES) {
    parts.push(el("span", { class: "sep", text: "\u00b7" }));
    parts.push(el("span", { class: "count", dataset: { state: s, count: String(counts[s]) } }, [el("span", { class: "n", text: String(counts[s]) }), ` ${s}`]));
  }
  if (monitoringOnly > 0) {
    parts.push(el("span", { class: "sep", text: "\u00b7" }));
    parts.push(el("span", { class: "count", dataset: { monitoringOnly: String(monitoringOnly) } }, [el("span", { class: "n", text: String(monitoringOnly) }), " monitoring only"]));
  }
  replace(node, ...parts);
}

function render() {
  if (!loaded) return;
  // Rows: create or refresh the changed ones.
  for (const [symbol, card] of cards) {
    const row = rows.get(symbol);
    if (row === undefined) {
      rows.set(symbol, buildRow(card));
    } else if (row.card !== card) {
      fillRow(row.tr, row.cells, card, row.card);
      row.card = card;
    }
  }
  for (const [symbol, row] of rows) {
    if (!cards.has(symbol)) {
      row.tr.remove();
      rows.delete(symbol);
    }
  }
  // Order and filters.
  const all = [...cards.values()];
  renderSummary(all);
  if (all.length === 0) {
    replace(tbody, el("tr", { class: "placeholder" }, [el("td", { colspan: 7, text: "no active assets" })]));
    order = [];
    byId("count").textContent = "";
    if (feedDirty) renderFeed();
    return;
  }
  const sorted = sortCards(all, sortSelect.value).map((c) => c.symbol);
  if (sorted.length !== order.length || sorted.some((s, i) => s !== order[i]) || tbody.querySelector(".placeholder")) {
    replace(tbody, ...sorted.map((s) => rows.get(s).tr));
    order = sorted;
  }
  const visible = new Set(filterCards(all, { cls: classSelect.value, state: stateSelect.value }).map((c) => c.symbol));
  for (const [symbol, row] of rows) row.tr.hidden = !visible.has(symbol);
  byId("count").textContent = `${visible.size} of ${cards.size}`;
  if (feedDirty) renderFeed();
}

function renderFeed() {
  feedDirty = false;
  const items = feed.rows.map((t) =>
    el("li", { dataset: { id: t.id, asset: t.asset } }, [
      el("time", { datetime: t.at ?? "", title: t.at ?? "", class: "when", dataset: { at: t.at ?? "" }, text: relativeTime(t.at, serverNow()) }),
      el("span", { class: "who" }, [assetLink(t.asset), (t.monitoring_only ?? cards.get(t.asset)?.monitoring_only) === true ? betaMark(t) : null]),
      el("span", { class: "move" }, [badge(t.from_state), el("span", { class: "arrow", text: "\u2192" }), badge(t.to_state)]),
      el("span", { class: "num bps", text: `${bpsText(t.discount)} bps` }),
      el("span", { class: "rcpt" }, [receiptLink(t.id)]),
    ]),
  );
  if (items.length === 0) items.push(el("li", { class: "muted", text: "no transitions yet" }));
  replace(feedList, ...items);
}

/** Relative times move every second without any data changing. */
function tick() {
  const now = serverNow();
  for (const row of rows.values()) row.cells.updated.textContent = relativeTime(row.card.updated_at, now);
  for (const t of feedList.querySelectorAll("time[data-at]")) t.textContent = relativeTime(t.dataset.at, now);
}

async function loadAssets() {
  const { body } = await getJson("/v1/assets");
  const fresh = Array.isArray(body?.data) ? body.data : [];
  const symbols = new Set();
  for (const card of fresh) {
    symbols.add(card.symbol);
    cards.set(card.symbol, mergeRest(cards.get(card.symbol), card));
  }
  for (const symbol of [...cards.keys()]) if (!symbols.has(symbol)) cards.delete(symbol);
}

async function loadFeed() {
  const { body } = await getJson("/v1/alerts?limit=50");
  if (feed.add(Array.isArray(body?.data) ? body.data : [])) feedDirty = true;
}

async function refresh() {
  try {
    await Promise.all([loadAssets(), loadFeed()]);
    showError(null);
  } catch (e) {
    showError(`could not load: ${errorText(e)}; retrying`);
    window.setTimeout(refresh, 5000);
  }
  loaded = true; // without the list, still show what the stream sends
  scheduleRender();
}

/** Filters live in the query string, so a filtered view can be bookmarked. */
function syncQuery() {
  const q = new URLSearchParams();
  if (classSelect.value) q.set("class", classSelect.value);
  if (stateSelect.value) q.set("state", stateSelect.value);
  if (sortSelect.value !== "severity") q.set("sort", sortSelect.value);
  const search = q.toString();
  history.replaceState(null, "", search ? `?${search}` : location.pathname);
}

function initFilters() {
  const q = new URLSearchParams(location.search);
  const pick = (select, value) => {
    if (value !== null && [...select.options].some((o) => o.value === value)) select.value = value;
  };
  pick(classSelect, q.get("class"));
  pick(stateSelect, q.get("state"));
  pick(sortSelect, q.get("sort"));
  for (const s of [classSelect, stateSelect, sortSelect]) {
    s.addEventListener("change", () => {
      syncQuery();
      scheduleRender();
    });
  }
}

initFilters();
live.start();
window.setInterval(tick, 1000);
window.setInterval(refresh, REST_REFRESH_MS);
await refresh();
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") scheduleRender();
});
