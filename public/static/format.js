// Pure display helpers shared by the dashboard pages. No DOM, no globals: importable under Node for the tests.

/** Published peg states, best to worst, then UNKNOWN (interface 2.3). */
export const PEG_STATES = Object.freeze(["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"]);

/** Asset classes (interface part 1). */
export const ASSET_CLASSES = Object.freeze(["lst", "stable_fiat", "stable_dn", "stable_cdp", "stable_yield", "stable_fx", "synth_lev"]);

/** Sort rank, most alarming first: BLACK_SWAN 0 ... PEGGED 5; a missing state last. */
const RANK = { BLACK_SWAN: 0, CRITICAL: 1, DEPEG: 2, DRIFT: 3, UNKNOWN: 4, PEGGED: 5 };

export function severityRank(state) {
  return Object.prototype.hasOwnProperty.call(RANK, state) ? RANK[state] : 6;
}

/** A state for display: a missing state (no snapshot yet) is shown as UNKNOWN, as /v1/stats counts it. */
export function displayState(state) {
  return PEG_STATES.includes(state) ? state : "UNKNOWN";
}

const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/**
 * Parses a decimal string (or a finite number) exactly into sign, digit string and exponent
 * (value = digits x 10^exp). Returns null for anything else.
 */
export function parseDecimal(value) {
  let text;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return null;
    text = String(value);
  } else if (typeof value === "string") {
    text = value.trim();
  } else {
    return null;
  }
  const m = DECIMAL.exec(text);
  if (m === null) return null;
  const [, sign, int = "", frac = "", exp = "0"] = m;
  if (int === "" && frac === "") return null;
  const digits = (int + frac).replace(/^0+/, "");
  return { negative: sign === "-" && digits !== "", digits: digits === "" ? "0" : digits, exp: Number(exp) - frac.length };
}

/** Adds one to a string of decimal digits. */
function incrementDigits(s) {
  const out = s.split("");
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i] !== "9") {
      out[i] = String(Number(out[i]) + 1);
      return out.join("");
    }
    out[i] = "0";
  }
  return "1" + out.join("");
}

/**
 * Scales a decimal by 10^shift and rounds it to `places` decimals (half away from zero), exactly, on the digit
 * string: no float ever touches the value. Returns the plain-notation string, or null when the input is not a decimal.
 */
export function scaleDecimal(value, shift, places) {
  const d = parseDecimal(value);
  if (d === null) return null;
  // value x 10^(shift + places) as an integer, rounded.
  const e = d.exp + shift + places;
  let units;
  if (e >= 0) {
    units = d.digits + "0".repeat(e);
  } else {
    const cut = d.digits.length + e;
    const kept = cut > 0 ? d.digits.slice(0, cut) : "0";
    const dropped = cut > 0 ? d.digits.slice(cut) : "0".repeat(-cut) + d.digits;
    units = dropped.charCodeAt(0) >= 53 /* "5" */ ? incrementDigits(kept) : kept;
  }
  units = units.replace(/^0+/, "") || "0";
  const zero = units === "0";
  if (places > 0) {
    units = units.padStart(places + 1, "0");
    units = `${units.slice(0, -places)}.${units.slice(-places)}`;
  }
  return (d.negative && !zero ? "-" : "") + units;
}

/** A discount fraction (decimal string, 0.0123 = 123 bps) in basis points with one decimal: "123.0". Null stays null. */
export function discountBps(discount) {
  if (discount === null || discount === undefined) return null;
  return scaleDecimal(discount, 4, 1);
}

/** Basis points for a table cell: "123.0", or an em dash when unknown. */
export function bpsText(discount) {
  return discountBps(discount) ?? "\u2014";
}

/** A risk score for display. */
export function riskText(score) {
  return typeof score === "number" && Number.isFinite(score) ? String(score) : "\u2014";
}

/** Milliseconds since the epoch of an RFC 3339 timestamp, or null. */
export function parseTime(iso) {
  if (typeof iso !== "string") return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

/** "just now", "12 s ago", "5 min ago", "3 h ago", "2 d ago", "in 8 s" (a future instant beyond clock skew). */
export function relativeTime(iso, nowMs) {
  const t = parseTime(iso);
  if (t === null) return "\u2014";
  const secs = Math.round((nowMs - t) / 1000);
  if (secs < -2) return `in ${-secs} s`;
  if (secs < 2) return "just now";
  if (secs < 60) return `${secs} s ago`;
  if (secs < 3600) return `${Math.floor(secs / 60)} min ago`;
  if (secs < 86400) return `${Math.floor(secs / 3600)} h ago`;
  return `${Math.floor(secs / 86400)} d ago`;
}

/**
 * The dwell countdown of the asset page: "DEPEG in 12 s" until the deadline, "DEPEG due" once it has passed
 * (the commit happens on the next evaluation). Null when no candidate is being timed.
 */
export function countdownText(candidate, deadlineIso, nowMs) {
  const t = parseTime(deadlineIso);
  if (typeof candidate !== "string" || candidate === "" || t === null) return null;
  const secs = Math.ceil((t - nowMs) / 1000);
  return secs > 0 ? `${candidate} in ${secs} s` : `${candidate} due`;
}

/** Thresholds object of either shape (interface 2.2) as short text. */
export function thresholdsText(t) {
  if (t === null || typeof t !== "object") return "\u2014";
  if ("cr_drift" in t) {
    return `CR drift ${t.cr_drift} / depeg ${t.cr_depeg} / critical ${t.cr_critical} / black swan ${t.cr_black_swan}`;
  }
  const parts = [`drift ${t.drift_bps}`, `depeg ${t.depeg_bps}`, `critical ${t.critical_bps}`];
  if (t.black_swan_bps !== undefined) parts.push(`black swan ${t.black_swan_bps}`);
  return `${parts.join(" / ")} bps`;
}

/** Escapes text for XML/HTML character data and attribute values. */
export function escapeXml(value) {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** URL of an asset page. Symbols such as `USD*` and `hyloSOL+` are percent-encoded. */
export function assetHref(symbol) {
  return `/asset.html?symbol=${encodeURIComponent(symbol)}`;
}

/** URL of a receipt page. */
export function receiptHref(id) {
  return `/receipt.html?id=${encodeURIComponent(id)}`;
}
