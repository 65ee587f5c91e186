// Receipt page (/receipt.html?id=ALERT_ID): shows /v1/audit/{id}/detail and re-derives its hash in the browser
// (RFC 8785 JCS + WebCrypto SHA-256, or @noble/hashes' without WebCrypto; methodology section 8). 202 = pending:
// retried after Retry-After.

import { ApiError, errorText, getJson } from "./api.js";
import { assetLink, badge, byId, el, replace, showError } from "./dom.js";
import { bpsText } from "./format.js";
import { verifyReceipt } from "./jcs.js";

const id = new URLSearchParams(location.search).get("id");
const dash = "\u2014";
const fact = (term, ...value) => [el("dt", { text: term }), el("dd", {}, value.length ? value : [dash])];
const code = (text) => el("code", { text: text ?? dash });

function status(text) {
  byId("status").textContent = text;
}

function render(r) {
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
  byId("computed").textContent = JSON.stringify(r.computed, null, 2);
  byId("inputs-frozen").textContent = JSON.stringify(r.inputs_frozen, null, 2);
  byId("catalog-entry").textContent = JSON.stringify(r.catalog_entry, null, 2);
}

async function verify(r) {
  const node = byId("verdict");
  node.hidden = false;
  const engine = globalThis.crypto?.subtle ? "WebCrypto SHA-256" : "@noble/hashes SHA-256, no WebCrypto here";
  try {
    const { ok, expected, actual } = await verifyReceipt(r);
    node.dataset.ok = String(ok);
    replace(
      node,
      el("strong", { text: ok ? "hash matches" : "hash MISMATCH" }),
      el("span", {
        class: "muted",
        text: ok
          ? ` recomputed in this browser (${engine}): ${actual}`
          : ` served ${expected ?? dash}, recomputed in this browser (${engine}) ${actual}`,
      }),
    );
  } catch (e) {
    node.dataset.ok = "false";
    replace(node, el("strong", { text: "hash not verified" }), el("span", { class: "muted", text: ` could not recompute: ${errorText(e)}` }));
  }
}

async function load() {
  try {
    const res = await getJson(`/v1/audit/${encodeURIComponent(id)}/detail`);
    if (res.status === 202) {
      status(`receipt pending, retrying in ${res.retryAfter} s`);
      window.setTimeout(load, res.retryAfter * 1000);
      return;
    }
    showError(null);
    status("");
    render(res.body);
    await verify(res.body);
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
