// Asset page (/asset.html?symbol=SYM): the card, the discount chart (asset-chart.js), the band machine diagram with
// its dwell countdown, the machine inspector and last events (refreshed every 2 s and on every stream message for the
// asset), recent transitions.

import { ApiError, errorText, getJson } from "./api.js";
import { mountChart } from "./asset-chart.js";
import { badge, byId, el, receiptLink, replace, showConnection, showError } from "./dom.js";
import { DEFAULT_STATES, renderMachineSvg } from "./diagram.js";
import { bpsText, countdownText, relativeTime, riskText, thresholdsText } from "./format.js";
import { Feed, applyLive } from "./model.js";
import { LiveSocket, wsUrl } from "./ws.js";

const MACHINE_REFRESH_MS = 2000;

const symbol = new URLSearchParams(location.search).get("symbol");
const enc = encodeURIComponent(symbol ?? "");

let card = null;
let band = null;
let machine = null;
let drawn = null;
const transitions = new Feed(100);

let wasConnected = false;
/** After a reconnect the chart reloads its window: the states sent meanwhile were not replayed (transitions were). */
function onStatus(status, detail) {
  showConnection(status, detail);
  if (status === "connected") {
    if (wasConnected && chartStarted) void chart?.load();
    wasConnected = true;
  }
}

const live = new LiveSocket({ url: wsUrl(location), assets: symbol ? [symbol] : [], onStatus, onMessage });
const serverNow = () => Date.now() + live.clockOffsetMs;
const chart = symbol ? mountChart({ symbol, get: getJson, serverNow, onError: showError }) : null;

const dash = "\u2014";
const fact = (term, value, title) => [el("dt", { text: term }), el("dd", { title }, [value ?? dash])];
const textOr = (v) => (v === null || v === undefined || v === "" ? dash : String(v));

let chartStarted = false;
/** The chart's window ends at the server's now, which the hello tells (a scenario's clock is not ours). */
function startChart() {
  if (chartStarted || chart === null) return;
  chartStarted = true;
  void chart.load();
}

function onMessage(msg) {
  if (msg.type === "hello") startChart();
  if (msg.asset !== symbol) {
    if (msg.type === "error") showError(`stream: ${msg.message ?? msg.error}`);
    return;
  }
  if (msg.type === "snapshot" || msg.type === "state") chart?.onState(msg);
  else if (msg.type === "transition") chart?.onTransition(msg);
  if ((msg.type === "snapshot" || msg.type === "state") && card !== null) {
    const next = applyLive(card, msg);
    if (next !== card) {
      card = next;
      renderCard();
    }
  } else if (msg.type === "transition") {
    if (transitions.add([msg])) renderTransitions();
  }
  refreshMachine();
}

// --- card -------------------------------------------------------------------------------------------------

function renderCard() {
  if (card === null) return;
  document.title = `${card.symbol} · peg-oracle`;
  byId("asset-title").textContent = card.symbol;
  replace(byId("card-badge"), badge(card.state));
  byId("card-name").textContent = card.name ?? "";
  const discount = card.discount === null || card.discount === undefined ? dash : `${bpsText(card.discount)} bps`;
  replace(
    byId("card-facts"),
    ...fact("Discount", discount, card.discount ?? undefined),
    ...fact("Risk score", riskText(card.risk_score)),
    ...fact("Class", textOr(card.class)),
    ...fact("Anchor", `${textOr(card.anchor)}${card.peg_target ? ` (${card.peg_target})` : ""}`),
    ...fact("Risk side", textOr(card.risk_side)),
    ...fact("Thresholds", thresholdsText(card.thresholds)),
    ...fact("Calibration", `${textOr(card.calibration)}${card.monitoring_only ? " (monitoring only)" : ""}`),
    ...fact("Confidence", textOr(card.confidence)),
    ...fact("Updated", el("span", { class: "updated", dataset: { at: card.updated_at ?? "" }, text: relativeTime(card.updated_at, serverNow()) }), card.updated_at ?? undefined),
    ...fact("Mint", el("code", { text: textOr(card.mint) })),
  );
}

async function loadCard() {
  const { body } = await getJson(`/v1/assets/${enc}`);
  card = card === null ? body : applyLive(body, card); // keep live fields newer than the REST card
  chart?.setCard(card);
  renderCard();
}

// --- machine ----------------------------------------------------------------------------------------------

function renderDiagram() {
  const current = machine?.state ?? null;
  const candidate = machine?.candidate ?? null;
  const key = `${current}|${candidate}|${band === null ? "" : "band"}`;
  if (key === drawn) return;
  drawn = key;
  byId("diagram").innerHTML = renderMachineSvg(band ?? { id: "band", states: DEFAULT_STATES }, { current, candidate });
}

function renderInspector() {
  if (machine === null) return;
  const m = machine;
  const at = (iso) => (iso ? el("time", { datetime: iso, title: iso, text: iso }) : dash);
  replace(
    byId("inspector"),
    ...fact("Machine state", el("code", { text: textOr(m.state) })),
    ...fact("Published", m.published_state ? badge(m.published_state) : dash),
    ...fact("Committed band", textOr(m.committed_band)),
    ...fact("Candidate", textOr(m.candidate)),
    ...fact("Candidate since", at(m.candidate_since)),
    ...fact("Since", at(m.since)),
    ...fact("Deadline", at(m.deadline)),
    ...fact("Gate", textOr(m.gate)),
    ...fact("Discount", m.discount === null || m.discount === undefined ? dash : `${bpsText(m.discount)} bps`, m.discount ?? undefined),
    ...fact("Evaluated", at(m.evaluated_at)),
  );
  byId("last-sample").textContent = m.last_sample ? JSON.stringify(m.last_sample, null, 2) : dash;
  renderEvents();
  renderCountdown();
}

function renderEvents() {
  const events = Array.isArray(machine?.events) ? [...machine.events].reverse() : [];
  const rows = events.map((e) =>
    el("tr", { class: [e.result === "skipped" ? "skipped" : "", e.transition ? "transition" : ""].join(" ").trim() || undefined }, [
      el("td", {}, [el("time", { datetime: e.at ?? "", title: e.at ?? "", text: textOr(e.at) })]),
      el("td", { text: textOr(e.type) }),
      el("td", { text: e.result === "skipped" && e.skip_reason ? `skipped: ${e.skip_reason}` : textOr(e.result) }),
      el("td", {}, [e.state ? badge(e.state) : dash]),
      el("td", { text: textOr(e.band) }),
      el("td", { text: textOr(e.candidate) }),
      el("td", { class: "num", text: bpsText(e.discount) }),
      el("td", { text: e.transition ? "yes" : "" }),
    ]),
  );
  if (rows.length === 0) rows.push(el("tr", { class: "placeholder" }, [el("td", { colspan: 8, text: "no events yet" })]));
  replace(byId("events").tBodies[0], ...rows);
}

function renderCountdown() {
  const node = byId("countdown");
  const text = machine ? countdownText(machine.candidate, machine.deadline, serverNow()) : null;
  node.hidden = text === null;
  node.textContent = text ?? "";
  if (machine?.candidate) node.dataset.state = machine.candidate;
}

let machineInFlight = false;
let machineAgain = false;

/** Fetches the inspector; calls made while one is in flight collapse into one more fetch after it. */
async function refreshMachine() {
  if (!symbol) return;
  if (machineInFlight) {
    machineAgain = true;
    return;
  }
  machineInFlight = true;
  try {
    const { body } = await getJson(`/v1/assets/${enc}/machine`);
    machine = body;
    renderDiagram();
    renderInspector();
  } catch (e) {
    showError(`machine: ${errorText(e)}`);
  } finally {
    machineInFlight = false;
    if (machineAgain) {
      machineAgain = false;
      window.setTimeout(refreshMachine, 250);
    }
  }
}

async function loadBand() {
  try {
    const { body } = await getJson("/v1/machines/band");
    band = body;
  } catch (e) {
    band = null; // draw the methodology's states anyway
    showError(`machine definition: ${errorText(e)}`);
  }
  renderDiagram();
}

// --- transitions ------------------------------------------------------------------------------------------

function renderTransitions() {
  const items = transitions.rows.map((t) =>
    el("li", { dataset: { id: t.id } }, [
      el("time", { class: "when", datetime: t.at ?? "", title: t.at ?? "", dataset: { at: t.at ?? "" }, text: relativeTime(t.at, serverNow()) }),
      el("span", { class: "move" }, [badge(t.from_state), el("span", { class: "arrow", text: "\u2192" }), badge(t.to_state)]),
      el("span", { class: "num bps", text: `${bpsText(t.discount)} bps` }),
      el("span", { class: "rcpt" }, [receiptLink(t.id)]),
    ]),
  );
  if (items.length === 0) items.push(el("li", { class: "muted", text: "no transitions in the last 100 alerts" }));
  replace(byId("transitions"), ...items);
}

async function loadTransitions() {
  const { body } = await getJson("/v1/alerts?limit=100");
  const mine = (Array.isArray(body?.data) ? body.data : []).filter((a) => a.asset === symbol);
  transitions.add(mine);
  renderTransitions();
}

// --- clock ------------------------------------------------------------------------------------------------

function tick() {
  const now = serverNow();
  for (const t of document.querySelectorAll("[data-at]")) {
    if (t.dataset.at) t.textContent = relativeTime(t.dataset.at, now);
  }
  renderCountdown();
}

// --- start ------------------------------------------------------------------------------------------------

if (!symbol) {
  showError("no asset given: open /asset.html?symbol=USDC");
  byId("asset-title").textContent = "no asset";
} else {
  byId("asset-title").textContent = symbol;
  renderDiagram();
  let unknownAsset = false;
  try {
    await loadCard();
  } catch (e) {
    unknownAsset = e instanceof ApiError && e.status === 404;
    showError(`asset: ${errorText(e)}`);
  }
  if (!unknownAsset) {
    live.start();
    window.setTimeout(startChart, 3000); // without a hello, on the browser's clock
    await Promise.all([loadBand(), refreshMachine(), loadTransitions().catch((e) => showError(`transitions: ${errorText(e)}`))]);
    window.setInterval(refreshMachine, MACHINE_REFRESH_MS);
    window.setInterval(tick, 500);
  }
}
