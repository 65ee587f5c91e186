/**
 * Offline verification of a receipt's replay bundle (docs/receipts.md section 2), with the methodology code itself:
 * `verifyBundle` of `src/methodology/receipt.ts` is what `peg-oracle verify` runs and what the engine decides with,
 * so a receipt passes here exactly when it passes there. Pure: no network, no clock, no Node built-ins.
 */
import { verifyBundle, type ReplayBundle } from "../../../src/methodology/receipt.ts";

export type { ReplayBundle };

/**
 * The verdict: `PASS` (the hash and the re-derived verdict match), `FAIL` (either differs: the bundle was altered or
 * the decision does not follow from its inputs), `INVALID` (not a replay bundle of the expected shape) or
 * `VERSION_MISMATCH` (another methodology version: use the release that implements it). `exit` is the code
 * `peg-oracle verify` exits with for the same bundle (0, 1, 2, 3).
 */
export interface ReceiptVerdict {
  readonly ok: boolean;
  readonly verdict: "PASS" | "FAIL" | "INVALID" | "VERSION_MISMATCH";
  readonly exit: 0 | 1 | 2 | 3;
  /** Why, in words (which member differs, which field is malformed). */
  readonly message: string;
  /** The recomputed receipt hash, on PASS: what an on-chain memo must carry. */
  readonly receiptSha256: string | null;
}

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
  return { ok: r.exit === 0, verdict: r.verdict, exit: r.exit, message: r.message, receiptSha256: r.receipt_sha256 ?? null };
}
