// RFC 8785 JSON Canonicalization Scheme and the receipt hash of methodology section 8, for the browser. The
// canonical JSON is the `canonicalize` package's, the one the server hashes receipts with (served from node_modules
// at /static/vendor/canonicalize.js and mapped by the page's import map; under Node the specifier resolves to the
// package). SHA-256 is WebCrypto's (globalThis.crypto.subtle, or passed in); outside a secure context, where browsers
// withhold it, @noble/hashes' through sha256.js. Importable under Node.

import canonicalizeJson from "canonicalize";
import { fallbackSubtle } from "./sha256.js";

/**
 * RFC 8785 canonical JSON text of a JSON value: members sorted by UTF-16 code units, no whitespace, ECMAScript
 * number form, minimal string escapes. Members whose value is undefined are omitted (as JSON.stringify does); a value
 * with no JSON form (undefined, a function), NaN, the infinities, lone surrogates and cycles are refused.
 */
export function canonicalize(value) {
  const out = canonicalizeJson(value);
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

/** Lowercase hex SHA-256 with WebCrypto (or @noble/hashes' through sha256.js when the page has no WebCrypto). */
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
