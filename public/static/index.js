// Live overview page (/): the asset table, filters, the transition feed and the connection indicator.

import { errorText, getJson } from "./api.js";
import { assetLink, badge, byId, el, receiptLink, replace, showConnection, showError } from "./dom.js";
import { bpsText, relativeTime, riskText } from "./format.js";
import { Feed, applyLive, filterCards, mergeRest, sortCards } from "./model.js";
import { sparklineSvg } from "./sparkline.js";
import { LiveSocket, wsUrl } from "./ws.js";

const REST_REFRESH_MS = 60_000;

/** symbol -> AssetCard (replaced, never mutated, on every change). */
const cards = new Map();
/** symbol -> { tr, card (the one rendered), cells } */
const rows = new Map();
const feed = new Feed(100);
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
    el("th", { scope: "row" }, [assetLink(card.symbol)]),
    el("td", { class: "cls", text: card.class ?? "\u2014" }),
    el("td", {}, [badge(card.state)]),
    el("td", { class: "num", text: bpsText(card.discount) }),
    el("td", { class: "num", text: riskText(card.risk_score) }),
  ];
  if (previous === null || previous.series_24h !== card.series_24h) {
    cells.spark.innerHTML = sparklineSvg(card.series_24h);
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
      el("span", { class: "who" }, [assetLink(t.asset)]),
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
