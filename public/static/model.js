// Pure view-model helpers of the dashboard: the transition feed, live card updates, filtering and sorting.

import { PEG_STATES, parseTime, severityRank } from "./format.js";

/**
 * One transition, from a REST alert row (`/v1/alerts`: id, detected_at) or a WebSocket `transition` message
 * (alert_id, ts), in one shape: { id, asset, from_state, to_state, discount, at, receipt_url, monitoring_only } (null
 * when the message does not say: a stream transition does not carry it, the asset's card does).
 */
export function normaliseTransition(x) {
  if (x === null || typeof x !== "object") return null;
  const id = typeof x.alert_id === "string" ? x.alert_id : typeof x.id === "string" ? x.id : null;
  if (id === null) return null;
  return {
    id,
    asset: typeof x.asset === "string" ? x.asset : "",
    from_state: x.from_state ?? null,
    to_state: x.to_state ?? null,
    discount: x.discount ?? null,
    at: x.ts ?? x.detected_at ?? null,
    receipt_url: x.receipt_url ?? null,
    monitoring_only: typeof x.monitoring_only === "boolean" ? x.monitoring_only : null,
  };
}

/** Newest-first transition list, de-duplicated by id, at most `max` rows. */
export class Feed {
  constructor(max = 100) {
    this.max = max;
    this.rows = [];
    this.ids = new Set();
  }

  /** Adds raw rows or messages; returns true when the list changed. */
  add(items) {
    let changed = false;
    for (const raw of items) {
      const t = normaliseTransition(raw);
      if (t === null || this.ids.has(t.id)) continue;
      this.ids.add(t.id);
      this.rows.push(t);
      changed = true;
    }
    if (!changed) return false;
    this.rows.sort((a, b) => (parseTime(b.at) ?? 0) - (parseTime(a.at) ?? 0));
    if (this.rows.length > this.max) {
      for (const gone of this.rows.splice(this.max)) this.ids.delete(gone.id);
    }
    return true;
  }
}

/**
 * Applies a WebSocket `snapshot` or `state` message to an asset card and returns the new card, or the same card
 * when the message is older than what the card shows (the REST list is cached for up to 5 s, so it can be older
 * than the stream, and the stream can be older than a refreshed list).
 */
export function applyLive(card, msg) {
  const known = parseTime(card.updated_at);
  const incoming = parseTime(msg.updated_at);
  if (known !== null && incoming !== null && incoming < known) return card;
  const next = { ...card };
  if ("state" in msg) next.state = msg.state;
  if ("discount" in msg) next.discount = msg.discount;
  if ("risk_score" in msg) next.risk_score = msg.risk_score;
  if ("updated_at" in msg) next.updated_at = msg.updated_at;
  return next;
}

/** Merges a fresh REST card with what the stream already showed: the newer live fields win, series_24h is REST's. */
export function mergeRest(previous, fresh) {
  if (previous === undefined) return fresh;
  const p = parseTime(previous.updated_at);
  const f = parseTime(fresh.updated_at);
  if (p !== null && (f === null || p > f)) {
    return { ...fresh, state: previous.state, discount: previous.discount, risk_score: previous.risk_score, updated_at: previous.updated_at };
  }
  return fresh;
}

/** Cards matching the class and state filters ("" = any). A missing state matches "UNKNOWN". */
export function filterCards(cards, { cls = "", state = "" } = {}) {
  return cards.filter((c) => (cls === "" || c.class === cls) && (state === "" || (c.state ?? "UNKNOWN") === state));
}

const abs = (d) => {
  if (d === null || d === undefined || d === "") return -1;
  const n = Number(d);
  return Number.isFinite(n) ? Math.abs(n) : -1;
};

/**
 * Sorted copy. `severity`: worst state first, then larger |discount|, then symbol; `symbol`: by symbol;
 * `discount`: larger |discount| first; `risk`: higher risk score first.
 */
export function sortCards(cards, key = "severity") {
  const bySymbol = (a, b) => (a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0);
  const cmp = {
    severity: (a, b) => severityRank(a.state) - severityRank(b.state) || abs(b.discount) - abs(a.discount) || bySymbol(a, b),
    symbol: bySymbol,
    discount: (a, b) => abs(b.discount) - abs(a.discount) || bySymbol(a, b),
    risk: (a, b) => (b.risk_score ?? -1) - (a.risk_score ?? -1) || bySymbol(a, b),
  }[key] ?? bySymbol;
  return [...cards].sort(cmp);
}

/**
 * How many assets are in each state (every PegState, a missing state counted UNKNOWN), how many there are, and how
 * many of them are monitoring only: { total, counts: { PEGGED: n, ... }, monitoringOnly }.
 */
export function stateSummary(cards) {
  const counts = Object.fromEntries(PEG_STATES.map((s) => [s, 0]));
  let monitoringOnly = 0;
  for (const c of cards) {
    const s = PEG_STATES.includes(c.state) ? c.state : "UNKNOWN";
    counts[s] += 1;
    if (c.monitoring_only === true) monitoringOnly += 1;
  }
  return { total: cards.length, counts, monitoringOnly };
}
