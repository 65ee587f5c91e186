/**
 * Offline verification of a receipt's replay bundle (docs/receipts.md section 2), with the methodology code itself:
 * `verifyBundle` of `src/methodology/receipt-verify.ts` is what `peg-oracle verify` runs and what the engine decides with,
 * so a receipt passes here exactly when it passes there. Pure: no network, no clock, no Node built-ins.
 */
import type { ReplayBundle } from "../../../src/methodology/receipt.ts";
import { verifyBundle } from "../../../src/methodology/receipt-verify.ts";

export type { ReplayBundle };

/**
 * The verdict, narrowed by outcome: `PASS` (the hash and the re-derived verdict match; `receiptSha256` is the recomputed
 * hash, what an on-chain memo must carry), `FAIL` (either differs: the bundle was altered or the decision does not
 * follow from its inputs), `INVALID` (not a replay bundle of the expected shape) or `VERSION_MISMATCH` (another
 * methodology version: use the release that implements it); those three carry `receiptSha256: null`. `exit` is the
 * code `peg-oracle verify` and `peg-verify` exit with for the same bundle (0, 1, 2, 3); `message` says why, in words.
 */
export type ReceiptVerdict =
  | { readonly ok: true; readonly verdict: "PASS"; readonly exit: 0; readonly message: string; readonly receiptSha256: string }
  | { readonly ok: false; readonly verdict: "FAIL"; readonly exit: 1; readonly message: string; readonly receiptSha256: null }
  | { readonly ok: false; readonly verdict: "INVALID"; readonly exit: 2; readonly message: string; readonly receiptSha256: null }
  | { readonly ok: false; readonly verdict: "VERSION_MISMATCH"; readonly exit: 3; readonly message: string; readonly receiptSha256: null };

/**
 * Re-derives a receipt from its replay bundle (`GET /v1/audit/{id}/replay-bundle`, parsed JSON or its text) and
 * checks the hash and the verdict. Never throws on bad input: an unreadable bundle is `INVALID`.
 *
 * @example
 * ```ts
 * const bundle = await client.get("/v1/audit/{id}/replay-bundle", { params: { path: { id } } });
 * const v = verifyReceipt(bundle);
 * if (!v.ok) throw new Error(`receipt ${id} does not verify: ${v.message}`);
 * ```
 */
export function verifyReceipt(bundle: unknown): ReceiptVerdict {
  let parsed = bundle;
  if (typeof bundle === "string") {
    try {
      parsed = JSON.parse(bundle);
    } catch (e) {
      return { ok: false, verdict: "INVALID", exit: 2, message: `not JSON: ${e instanceof Error ? e.message : String(e)}`, receiptSha256: null };
    }
  }
  const r = verifyBundle(parsed);
  switch (r.verdict) {
    case "PASS": // verifyBundle passes only with the hash it recomputed
      return { ok: true, verdict: "PASS", exit: 0, message: r.message, receiptSha256: r.receipt_sha256! };
    case "FAIL":
      return { ok: false, verdict: "FAIL", exit: 1, message: r.message, receiptSha256: null };
    case "INVALID":
      return { ok: false, verdict: "INVALID", exit: 2, message: r.message, receiptSha256: null };
    case "VERSION_MISMATCH":
      return { ok: false, verdict: "VERSION_MISMATCH", exit: 3, message: r.message, receiptSha256: null };
  }
}
