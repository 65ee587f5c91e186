// Receipt page (/receipt.html?id=ALERT_ID): shows /v1/audit/{id}/detail and verifies the receipt in the browser with
// the client package's verifyReceipt on /v1/audit/{id}/replay-bundle: the methodology itself re-derives the verdict
// from the frozen inputs and recomputes the hash (methodology section 8), the code `peg-oracle verify` runs (one
// verifier). The JSON panes show the bundle, i.e. what was verified. 202 = pending: retried after Retry-After.

import { verifyReceipt } from "@peg-oracle/client";
import { ApiError, errorText, getJson } from "./api.js";
import { assetLink, badge, byId, el, replace, showError } from "./dom.js";
import { bpsText } from "./format.js";

const id = new URLSearchParams(location.search).get("id");
const dash = "\u2014";
const fact = (term, ...value) => [el("dt", { text: term }), el("dd", {}, value.length ? value : [dash])];
const code = (text) => el("code", { text: text ?? dash });

function status(text) {
  byId("status").textContent = text;
}

function render(r, bundle) {
  document.title = `${r.asset} ${r.from_state} \u2192 ${r.to_state} · receipt`;
  byId("receipt-title").textContent = `Receipt ${r.id}`;
  const dwell = r.dwell ?? null;
  replace(
    byId("receipt-facts"),
    ...fact("Asset", assetLink(r.asset)),
    ...fact("Transition", badge(r.from_state), el("span", { class: "arrow", text: " \u2192 " }), badge(r.to_state)),
    ...fact("Detected at", el("time", { datetime: r.detected_at, text: r.detected_at })),
    ...fact("Discount", `${bpsText(r.discount)} bps (${r.discount ?? dash})`),
    ...fact("Band / gate", `${r.computed?.band ?? dash} / ${r.computed?.gate ?? "none"}`),
    ...fact("Dwell", dwell && dwell.dwell_secs !== null && dwell.dwell_secs !== undefined ? `${dwell.dwell_secs} s (candidate since ${dwell.candidate_since})` : dash),
    ...fact("Methodology", code(r.methodology_version)),
    ...fact("git sha", code(r.git_sha === "" ? "(empty)" : r.git_sha)),
    ...fact("receipt_sha256", code(r.receipt_sha256)),
    ...fact("Evidence / commit", `${r.evidence_status ?? dash} / ${r.commit_status ?? dash}`),
    ...fact("Replay bundle", r.replay_bundle_url ? el("a", { href: r.replay_bundle_url, text: r.replay_bundle_url }) : dash),
  );
  byId("summary").textContent = r.summary ?? "";
  byId("computed").textContent = JSON.stringify(bundle?.expected_computed ?? null, null, 2);
  byId("inputs-frozen").textContent = JSON.stringify(bundle?.inputs_frozen ?? null, null, 2);
  byId("catalog-entry").textContent = JSON.stringify(bundle?.catalog_entry ?? null, null, 2);
}

/**
 * The verdict box: PASS when the bundle re-derives (verdict and hash) and its hash is the one the receipt shows;
 * otherwise the package's verdict (FAIL, INVALID, VERSION_MISMATCH) and why. `data-ok` and `data-verdict` carry it.
 */
function verify(r, bundle) {
  const node = byId("verdict");
  node.hidden = false;
  const how = "re-derived in this browser by @peg-oracle/client verifyReceipt (the methodology peg-oracle verify runs)";
  const v = verifyReceipt(bundle); // never throws: an unreadable bundle is INVALID
  const shown = typeof r.receipt_sha256 === "string" ? r.receipt_sha256.toLowerCase() : null;
  const ok = v.ok && v.receiptSha256 === shown;
  node.dataset.ok = String(ok);
  node.dataset.verdict = v.ok && !ok ? "FAIL" : v.verdict;
  if (ok) {
    replace(node, el("strong", { text: "verified" }), el("span", { class: "muted", text: ` verdict and hash ${how}: ${v.receiptSha256}` }));
  } else if (v.ok) {
    replace(
      node,
      el("strong", { text: "hash MISMATCH" }),
      el("span", { class: "muted", text: ` the receipt shows ${shown ?? dash}, its replay bundle ${how}: ${v.receiptSha256}` }),
    );
  } else {
    replace(node, el("strong", { text: `not verified: ${v.verdict}` }), el("span", { class: "muted", text: ` ${v.message} (${how})` }));
  }
}

async function load() {
  try {
    const enc = encodeURIComponent(id);
    const [res, bundle] = await Promise.all([getJson(`/v1/audit/${enc}/detail`), getJson(`/v1/audit/${enc}/replay-bundle`)]);
    if (res.status === 202 || bundle.status === 202) {
      const retryAfter = Math.max(res.retryAfter, bundle.retryAfter);
      status(`receipt pending, retrying in ${retryAfter} s`);
      window.setTimeout(load, retryAfter * 1000);
      return;
    }
    showError(null);
    status("");
    render(res.body, bundle.body);
    verify(res.body, bundle.body);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 429 || e.status >= 500)) {
      status("temporarily unavailable, retrying in 5 s");
      showError(errorText(e));
      window.setTimeout(load, 5000);
      return;
    }
    status("");
    showError(e instanceof ApiError ? e.message : errorText(e));
  }
}

if (!id) {
  status("");
  showError("no receipt given: open /receipt.html?id=<alert id>");
} else {
  byId("receipt-title").textContent = `Receipt ${id}`;
  await load();
}
