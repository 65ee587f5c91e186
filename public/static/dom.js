// Small DOM helpers for the page modules. Touches `document` only when called, never at import time.

import { assetHref, displayState, receiptHref } from "./format.js";

/**
 * Creates an element. `attrs`: `class`, `text`, `dataset` (object), `hidden`, or any attribute name. `children`:
 * nodes or strings. Never sets `style` or `on*` attributes (the CSP allows neither).
 */
export function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

/** Replaces an element's children. */
export function replace(node, ...children) {
  node.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
}

/** `<span class="badge" data-state="STATE">STATE</span>`; a missing state shows as UNKNOWN. */
export function badge(state) {
  const s = displayState(state);
  return el("span", { class: "badge", dataset: { state: s }, text: s });
}

export function assetLink(symbol) {
  return el("a", { href: assetHref(symbol), text: symbol });
}

export function receiptLink(id, text = "receipt") {
  return el("a", { href: receiptHref(id), text });
}

export const byId = (id) => document.getElementById(id);

/** The connection indicator (`#conn`): data-status connected | connecting | reconnecting | closed. */
export function showConnection(status, detail = {}) {
  const node = byId("conn");
  if (node === null) return;
  node.dataset.status = status;
  node.textContent =
    status === "connected"
      ? "live"
      : status === "reconnecting" && detail.delayMs > 0
        ? `reconnecting in ${(detail.delayMs / 1000).toFixed(1)} s`
        : status;
}

/** Shows or clears the page's error banner (`#error`). */
export function showError(text) {
  const node = byId("error");
  if (node === null) return;
  node.textContent = text ?? "";
  node.hidden = !text;
}

/** The "monitoring only" mark of a beta asset (provisional calibration, outside the calibrated denominator). */
export function betaMark(x = {}) {
  const why = typeof x.monitoring_reason === "string" && x.monitoring_reason !== "" ? `: ${x.monitoring_reason}` : "";
  return el("span", { class: "beta", title: `monitoring only (provisional calibration)${why}`, text: "monitoring only" });
}
