// What the asset page's chart draws, fetched and kept: history rows of a window (walked page by page), the asset's
// transitions in it with the reason of each UNKNOWN one (from its receipt), and the live tail the stream adds.
// No DOM: `get` is api.js getJson (or a fake in the tests).

import { ApiError } from "./api.js";

/** The history route's largest page. */
export const HISTORY_PAGE = 5000;
/** The alerts route's largest page. */
export const ALERTS_PAGE = 500;
/** The live tail's length: older points leave it (the window only ever shows the newest). */
export const LIVE_MAX = 20_000;

const iso = (ms) => new Date(ms).toISOString();

/**
 * Every history row of [from, to] (both inclusive), newest first, as the route returns them: a full page continues
 * below the oldest instant on it (rows of that instant are asked for again, so none is skipped), at most `maxPages`.
 */
export async function loadHistory(get, symbol, { from, to, bucket, maxPages = 12 }) {
  const rows = [];
  let upper = to;
  for (let page = 0; page < maxPages; page++) {
    const q = new URLSearchParams({ bucket, from: iso(from), to: iso(upper), limit: String(HISTORY_PAGE) });
    const { body } = await get(`/v1/assets/${encodeURIComponent(symbol)}/history?${q}`);
    const data = Array.isArray(body?.data) ? body.data : [];
    if (data.length < HISTORY_PAGE) {
      rows.push(...data);
      break;
    }
    const oldest = Date.parse(data.at(-1).ts);
    const kept = data.filter((r) => Date.parse(r.ts) > oldest);
    if (kept.length === 0) {
      rows.push(...data); // a whole page at one instant: nothing to continue from
      break;
    }
    rows.push(...kept);
    upper = oldest;
  }
  return rows;
}

/**
 * A transition in the chart's shape, from a REST alert row or a WebSocket `transition` message:
 * { id, t (ms), from_state, to_state, v (bps or null), reason (state_reason, or null until a receipt says) }.
 */
export function chartTransition(x) {
  const id = typeof x?.alert_id === "string" ? x.alert_id : typeof x?.id === "string" ? x.id : null;
  const t = Date.parse(x?.ts ?? x?.detected_at ?? "");
  if (id === null || Number.isNaN(t)) return null;
  const v = x.discount === null || x.discount === undefined ? null : Number(x.discount) * 10_000;
  return { id, t, from_state: x.from_state ?? null, to_state: x.to_state ?? null, v: Number.isFinite(v) ? v : null, reason: x.state_reason ?? null };
}

/**
 * The asset's transitions detected at or after `from`, oldest first (`/v1/alerts` lists every asset's, newest first),
 * from at most `maxPages` pages: { transitions, complete } (complete false when older pages were left unread).
 */
export async function loadTransitions(get, symbol, { from, maxPages = 8 }) {
  const out = [];
  let complete = false;
  for (let page = 0; page < maxPages; page++) {
    const q = new URLSearchParams({ since: iso(from), limit: String(ALERTS_PAGE), offset: String(page * ALERTS_PAGE) });
    const { body } = await get(`/v1/alerts?${q}`);
    const data = Array.isArray(body?.data) ? body.data : [];
    for (const a of data) {
      if (a.asset !== symbol) continue;
      const t = chartTransition(a);
      if (t !== null) out.push(t);
    }
    if (data.length < ALERTS_PAGE) {
      complete = true;
      break;
    }
  }
  return { transitions: out.sort((a, b) => a.t - b.t), complete };
}

/**
 * Why an UNKNOWN was published: the receipt's state_reason, else the gate that fired (`oracle_confidence`, ...).
 * Null while the receipt is pending (202) or unreadable; receipts never change, so the caller keeps the answer.
 */
export async function unknownReason(get, id) {
  try {
    const { status, body } = await get(`/v1/audit/${encodeURIComponent(id)}`);
    if (status !== 200) return null;
    return body?.state_reason ?? body?.computed?.gate ?? "UNKNOWN";
  } catch (e) {
    if (e instanceof ApiError) return null;
    throw e;
  }
}

/**
 * Adds a WebSocket `snapshot`/`state` message of the asset to the live tail (mutated; returns true when it changed).
 * Raw: one point per message newer than the last one. 1m: one point per minute, the mean of the minute's messages,
 * as the rollups are. `after`: the newest history instant (what the rows already hold is not added again).
 */
export function addLive(live, msg, { bucket, after = -Infinity }) {
  const t = Date.parse(msg?.updated_at ?? "");
  const v = msg?.discount === null || msg?.discount === undefined ? null : Number(msg.discount) * 10_000;
  if (Number.isNaN(t) || v === null || !Number.isFinite(v)) return false;
  const state = msg.state ?? null;
  const last = live.at(-1);
  if (bucket === "raw") {
    if (t <= after || (last !== undefined && t <= last.t)) return false;
    live.push({ t, v, lo: v, hi: v, state });
  } else {
    const minute = t - (t % 60_000);
    if (minute <= after || (last !== undefined && minute < last.t)) return false;
    if (last !== undefined && last.t === minute) {
      last.n += 1;
      last.v += (v - last.v) / last.n;
      last.lo = Math.min(last.lo, v);
      last.hi = Math.max(last.hi, v);
      last.state = state;
    } else {
      live.push({ t: minute, v, lo: v, hi: v, state, n: 1 });
    }
  }
  if (live.length > LIVE_MAX) live.splice(0, live.length - LIVE_MAX);
  return true;
}
