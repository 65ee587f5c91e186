// RFC 8785 JSON Canonicalization Scheme and the receipt hash of methodology section 8, for the browser.
// Pure apart from WebCrypto (taken from globalThis.crypto.subtle, or passed in; outside a secure context, where
// browsers withhold it, the plain-JS SHA-256 of sha256.js is used instead); importable under Node.

import { fallbackSubtle } from "./sha256.js";

/** Compares two strings by UTF-16 code units (RFC 8785 3.2.3), not by locale or code point. */
function compareUtf16(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a.charCodeAt(i) - b.charCodeAt(i);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

const SHORT_ESCAPES = { 0x08: "\\b", 0x09: "\\t", 0x0a: "\\n", 0x0c: "\\f", 0x0d: "\\r", 0x22: '\\"', 0x5c: "\\\\" };

/** A JSON string literal per RFC 8785 3.2.2.2. Lone surrogates are not valid Unicode and are refused. */
export function serializeString(s) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (!(next >= 0xdc00 && next <= 0xdfff)) throw new TypeError("JCS: lone surrogate in string");
      out += s[i] + s[i + 1];
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      throw new TypeError("JCS: lone surrogate in string");
    } else if (Object.prototype.hasOwnProperty.call(SHORT_ESCAPES, c)) {
      out += SHORT_ESCAPES[c];
    } else if (c < 0x20) {
      out += "\\u" + c.toString(16).padStart(4, "0");
    } else {
      out += s[i];
    }
  }
  return out + '"';
}

/**
 * A JSON number per RFC 8785 3.2.2.3: the ECMAScript Number-to-String algorithm (which is what String() does),
 * -0 as 0; NaN and the infinities have no JSON form.
 */
export function serializeNumber(n) {
  if (!Number.isFinite(n)) throw new TypeError("JCS: NaN and Infinity are not allowed");
  return Object.is(n, -0) ? "0" : String(n);
}

function serialize(value, seen) {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      return serializeNumber(value);
    case "string":
      return serializeString(value);
    case "bigint":
      throw new TypeError("JCS: BigInt is not JSON");
    case "object":
      break;
    default:
      return undefined; // undefined, function, symbol: no JSON form
  }
  if (seen.has(value)) throw new TypeError("JCS: circular structure");
  if (typeof value.toJSON === "function") {
    seen.add(value);
    const out = serialize(value.toJSON(), seen);
    seen.delete(value);
    return out;
  }
  seen.add(value);
  let out;
  if (Array.isArray(value)) {
    out = `[${value.map((v) => serialize(v, seen) ?? "null").join(",")}]`;
  } else {
    const members = [];
    for (const key of Object.keys(value).sort(compareUtf16)) {
      const v = serialize(value[key], seen);
      if (v !== undefined) members.push(`${serializeString(key)}:${v}`);
    }
    out = `{${members.join(",")}}`;
  }
  seen.delete(value);
  return out;
}

/**
 * RFC 8785 canonical JSON text of a JSON value: members sorted by UTF-16 code units, no whitespace, ECMAScript
 * number form, minimal string escapes. Members whose value is undefined are omitted (as JSON.stringify does).
 */
export function canonicalize(value) {
  const out = serialize(value, new Set());
  if (out === undefined) throw new TypeError("JCS: value has no JSON form");
  return out;
}

/** UTF-8 bytes of a string (well-formed: canonicalize has already refused lone surrogates). */
export function utf8(s) {
  return new globalThis.TextEncoder().encode(s);
}

/**
 * The bytes hashed into a receipt (methodology section 8):
 * version 0x00 git_sha 0x00 JCS(catalog_entry) 0x00 JCS(inputs_frozen) 0x00 JCS(computed), all UTF-8.
 */
export function receiptPreimage(methodologyVersion, gitSha, catalogEntry, inputsFrozen, computed) {
  const parts = [
    utf8(methodologyVersion),
    utf8(gitSha),
    utf8(canonicalize(catalogEntry)),
    utf8(canonicalize(inputsFrozen)),
    utf8(canonicalize(computed)),
  ];
  const total = parts.reduce((n, p) => n + p.length, 0) + parts.length - 1;
  const out = new Uint8Array(total);
  let at = 0;
  parts.forEach((p, i) => {
    if (i > 0) out[at++] = 0;
    out.set(p, at);
    at += p.length;
  });
  return out;
}

/** Lowercase hex of bytes. */
export function toHex(bytes) {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += b.toString(16).padStart(2, "0");
  return s;
}

/** Lowercase hex SHA-256 with WebCrypto (or the plain-JS fallback when the page has no WebCrypto). */
export async function sha256Hex(bytes, subtle = globalThis.crypto?.subtle ?? fallbackSubtle) {
  return toHex(await subtle.digest("SHA-256", bytes));
}

/** The receipt hash (lowercase hex), as the server's receiptHash computes it. */
export async function receiptHash(methodologyVersion, gitSha, catalogEntry, inputsFrozen, computed, subtle) {
  return sha256Hex(receiptPreimage(methodologyVersion, gitSha, catalogEntry, inputsFrozen, computed), subtle);
}

/**
 * Recomputes the hash of a receipt as served by `/v1/audit/{id}/detail` and compares it with `receipt_sha256`.
 * Resolves to `{ ok, expected, actual }`.
 */
export async function verifyReceipt(detail, subtle) {
  const actual = await receiptHash(
    detail.methodology_version,
    detail.git_sha ?? "",
    detail.catalog_entry,
    detail.inputs_frozen,
    detail.computed,
    subtle,
  );
  const expected = typeof detail.receipt_sha256 === "string" ? detail.receipt_sha256 : null;
  return { ok: expected !== null && actual === expected.toLowerCase(), expected, actual };
}
