/**
 * Offline verification of a replay bundle (methodology section 8): schema, methodology version, hash, then the
 * verdict re-derived from the frozen inputs with the pure pipeline; and the engine state rebuilt from a receipt.
 */
import { METHODOLOGY_VERSION } from "./constants.ts";
import { evaluate, type AssetState, type Computed } from "./evaluate.ts";
import { receiptHash, type ReplayBundle } from "./receipt.ts";
import {
  computedFromWire,
  computedToWire,
  inputsFromWire,
  isObj,
  member,
  methodologyAssetFrom,
  ReceiptFormatError,
  type ComputedWire,
  type InputsFrozen,
  type Obj,
} from "./receipt-wire.ts";

/** Field-by-field comparison of two verdicts by decimal value (not bytes). Returns the differing member names. */
export function diffComputed(a: Computed, b: Computed): string[] {
  const out: string[] = [];
  if (!a.discount_raw.eq(b.discount_raw)) out.push("discount_raw");
  if (!a.discount_smooth.eq(b.discount_smooth)) out.push("discount_smooth");
  if (a.band !== b.band) out.push("band");
  if (a.final_state !== b.final_state) out.push("final_state");
  if (a.gate !== b.gate) out.push("gate");
  if (a.confidence !== b.confidence) out.push("confidence");
  return out;
}

/** Re-derives `computed` from a bundle's frozen inputs with the pure pipeline. Throws ReceiptFormatError on bad input. */
export function rederive(bundle: Pick<ReplayBundle, "catalog_entry" | "inputs_frozen">): Computed | { skipped: string } {
  const asset = methodologyAssetFrom(bundle.catalog_entry);
  const inputs = inputsFromWire(bundle.inputs_frozen);
  if (inputs.asset !== asset.symbol) throw new ReceiptFormatError("inputs_frozen.asset", "does not match catalog_entry.symbol");
  if (inputs.class !== asset.class) throw new ReceiptFormatError("inputs_frozen.class", "does not match catalog_entry.class");
  const ev = evaluate(asset, inputs);
  return ev.ok ? ev.computed : { skipped: ev.reason };
}

/** Verifier exit codes (methodology section 8); 4 and 5 belong to the on-chain check. */
export const VERIFY_EXIT = { pass: 0, mismatch: 1, invalid: 2, version: 3 } as const;

export interface VerifyResult {
  readonly exit: 0 | 1 | 2 | 3;
  readonly verdict: "PASS" | "FAIL" | "INVALID" | "VERSION_MISMATCH";
  readonly message: string;
  readonly receipt_sha256?: string;
}

/** Offline verification of a parsed bundle: schema, methodology version, hash, then re-derivation. */
export function verifyBundle(input: unknown): VerifyResult {
  try {
    if (!isObj(input)) throw new ReceiptFormatError("bundle", "must be a JSON object");
    const schema = member(input, "schema_version", "bundle");
    if (schema !== "1") throw new ReceiptFormatError("bundle.schema_version", `unknown schema ${JSON.stringify(schema)}`);
    const version = member(input, "methodology_version", "bundle");
    if (typeof version !== "string") throw new ReceiptFormatError("bundle.methodology_version", "must be a string");
    if (version !== METHODOLOGY_VERSION) {
      return {
        exit: 3,
        verdict: "VERSION_MISMATCH",
        message: `bundle is methodology ${version}; this verifier implements ${METHODOLOGY_VERSION}: use the matching release`,
      };
    }
    const gitSha = member(input, "git_sha", "bundle");
    if (typeof gitSha !== "string") throw new ReceiptFormatError("bundle.git_sha", "must be a string");
    const expectedHash = member(input, "expected_receipt_sha256", "bundle");
    if (typeof expectedHash !== "string" || !/^[0-9a-f]{64}$/.test(expectedHash)) {
      throw new ReceiptFormatError("bundle.expected_receipt_sha256", "must be 64 lowercase hex digits");
    }
    const catalogEntry = member(input, "catalog_entry", "bundle");
    const inputsFrozen = member(input, "inputs_frozen", "bundle");
    const expectedComputed = member(input, "expected_computed", "bundle");
    const expected = computedFromWire(expectedComputed, "bundle.expected_computed");
    const actualHash = receiptHash(version, gitSha, catalogEntry, inputsFrozen, expectedComputed);
    if (actualHash !== expectedHash) {
      return { exit: 1, verdict: "FAIL", message: `receipt hash mismatch: expected ${expectedHash}, computed ${actualHash}` };
    }
    const derived = rederive({ catalog_entry: catalogEntry, inputs_frozen: inputsFrozen as InputsFrozen });
    if ("skipped" in derived) {
      return { exit: 1, verdict: "FAIL", message: `the frozen inputs do not produce a decision (${derived.skipped})` };
    }
    const diff = diffComputed(derived, expected);
    if (diff.length > 0) {
      const shown = computedToWire(derived);
      const detail = diff.map((k) => `${k}: expected ${JSON.stringify(expectedComputed && (expectedComputed as Obj)[k])}, re-derived ${JSON.stringify(shown[k as keyof ComputedWire])}`);
      return { exit: 1, verdict: "FAIL", message: `re-derivation differs: ${detail.join("; ")}` };
    }
    return { exit: 0, verdict: "PASS", message: "hash and re-derived verdict match", receipt_sha256: actualHash };
  } catch (e) {
    if (e instanceof ReceiptFormatError) return { exit: 2, verdict: "INVALID", message: e.message };
    throw e;
  }
}


/**
 * Rebuilds an asset's engine state right after a receipt's decision, exactly, by re-running the pure pipeline on
 * its frozen inputs. Recovery uses it when JetStream holds a transition newer than the last persisted snapshot (the
 * process stopped between the ack and the snapshot write), so the actor continues from the acknowledged decision
 * instead of deciding it again. `committedSince` is the decision instant when the band changed there, else unknown
 * (null) — a display figure only.
 */
export function stateFromReceipt(receipt: { readonly catalog_entry: unknown; readonly inputs_frozen: unknown }): AssetState {
  const asset = methodologyAssetFrom(receipt.catalog_entry);
  const inputs = inputsFromWire(receipt.inputs_frozen);
  const ev = evaluate(asset, inputs);
  if (!ev.ok) throw new ReceiptFormatError("inputs_frozen", `does not produce a decision (${ev.reason})`);
  const c = ev.computed;
  return {
    committed: ev.dwell.committed,
    candidate: ev.dwell.candidate,
    candidateSince: ev.dwell.candidateSince,
    ewma: c.discount_smooth,
    ewmaPrev: inputs.ewma_prev,
    last: {
      asset: inputs.asset,
      ts: inputs.now,
      intrinsic_usd: inputs.intrinsic_usd,
      market_usd: inputs.market_usd,
      intrinsic_sol: inputs.intrinsic_sol,
      market_sol: inputs.market_sol,
      cr: inputs.cr,
      oracle: inputs.oracle,
      intrinsic_stale: inputs.intrinsic_stale === true,
    },
    published: c.final_state,
    gate: c.gate,
    discountRaw: c.discount_raw,
    confidence: c.confidence,
    evaluatedAt: inputs.now,
    lastTrigger: inputs.trigger,
    publishedSince: c.final_state === inputs.previous_state ? null : inputs.now,
    committedSince: c.band === inputs.previous_band ? null : inputs.now,
  };
}
