/**
 * A transition's receipt: building it from a decision, its canonical form (JCS) and the hash that binds it, the
 * deterministic alert id, and the replay bundle served for it. The wire forms are in receipt-wire.ts; offline
 * verification of a bundle is in receipt-verify.ts.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import canonicalize from "canonicalize";
import { METHODOLOGY_VERSION } from "./constants.ts";
import type { Decision } from "./evaluate.ts";
import { computedToWire, inputsToWire, ReceiptFormatError, type ComputedWire, type InputsFrozen } from "./receipt-wire.ts";
import type { MethodologyAsset, PegState } from "./types.ts";

function jcs(value: unknown, what: string): string {
  const text = canonicalize(value);
  if (text === undefined) throw new ReceiptFormatError(what, "cannot be canonicalised");
  return text;
}

/** The 0x00 byte between the hashed parts. (SHA-256 is @noble/hashes', not node:crypto: browsers run this file too.) */
const SEPARATOR = new Uint8Array([0]);

/**
 * Receipt hash (methodology section 8): lowercase hex SHA-256 of
 * `version 0x00 git_sha 0x00 JCS(catalog entry) 0x00 JCS(inputs_frozen) 0x00 JCS(computed)`.
 */
export function receiptHash(
  methodologyVersion: string,
  gitSha: string,
  catalogEntry: unknown,
  inputsFrozen: unknown,
  computed: unknown,
): string {
  const h = sha256.create();
  h.update(utf8ToBytes(methodologyVersion));
  h.update(SEPARATOR);
  h.update(utf8ToBytes(gitSha));
  h.update(SEPARATOR);
  h.update(utf8ToBytes(jcs(catalogEntry, "catalog_entry")));
  h.update(SEPARATOR);
  h.update(utf8ToBytes(jcs(inputsFrozen, "inputs_frozen")));
  h.update(SEPARATOR);
  h.update(utf8ToBytes(jcs(computed, "computed")));
  return bytesToHex(h.digest());
}

/**
 * Deterministic alert id: a UUID in the version-8 layout from the first 16 bytes of
 * SHA-256(`mint|now|previous_state|final_state|methodology_version`), so a replayed decision de-duplicates.
 */
export function alertId(
  mint: string,
  nowWire: string,
  previousState: PegState | null,
  finalState: PegState,
  methodologyVersion: string,
): string {
  const digest = sha256(utf8ToBytes(`${mint}|${nowWire}|${previousState ?? ""}|${finalState}|${methodologyVersion}`));
  const b = digest.slice(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = bytesToHex(b);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A transition's receipt: the alert, its frozen inputs and verdict, and the hash that binds them. */
export interface Receipt {
  readonly alert_id: string;
  readonly asset: string;
  readonly mint: string;
  readonly from_state: PegState;
  readonly to_state: PegState;
  /** The decision instant (inputs_frozen.now). */
  readonly detected_at: string;
  /** d_smooth at the decision, wire decimal. */
  readonly discount: string;
  /** trunc(d_smooth x 10000), signed. */
  readonly discount_bps: number;
  readonly methodology_version: string;
  readonly git_sha: string;
  readonly catalog_entry: unknown;
  readonly inputs_frozen: InputsFrozen;
  readonly computed: ComputedWire;
  readonly receipt_sha256: string;
  readonly state_reason: "premium_sanity" | null;
}

export interface ReceiptContext {
  readonly asset: MethodologyAsset;
  /** The catalog entry exactly as shipped; hashed with JCS. */
  readonly catalogEntry: unknown;
  readonly gitSha: string;
}

/** Builds the receipt of a transition decision. */
export function buildReceipt(ctx: ReceiptContext, decision: Decision): Receipt {
  const inputs_frozen = inputsToWire(decision.inputs);
  const computed = computedToWire(decision.computed);
  const from = decision.inputs.previous_state;
  if (from === null) throw new Error("the first accepted sample is not a transition and has no receipt");
  const d = decision.computed.discount_smooth;
  return {
    alert_id: alertId(ctx.asset.mint, inputs_frozen.now, from, computed.final_state, METHODOLOGY_VERSION),
    asset: ctx.asset.symbol,
    mint: ctx.asset.mint,
    from_state: from,
    to_state: computed.final_state,
    detected_at: inputs_frozen.now,
    discount: computed.discount_smooth,
    discount_bps: d.times(10_000).trunc().toNumber(),
    methodology_version: METHODOLOGY_VERSION,
    git_sha: ctx.gitSha,
    catalog_entry: ctx.catalogEntry,
    inputs_frozen,
    computed,
    receipt_sha256: receiptHash(METHODOLOGY_VERSION, ctx.gitSha, ctx.catalogEntry, inputs_frozen, computed),
    state_reason: decision.state_reason,
  };
}

/** The replay bundle served at /v1/audit/{id}/replay-bundle and written by `replay --bundles`. */
export interface ReplayBundle {
  readonly schema_version: "1";
  readonly methodology_version: string;
  readonly git_sha: string;
  readonly catalog_entry: unknown;
  readonly inputs_frozen: InputsFrozen;
  readonly expected_computed: ComputedWire;
  readonly expected_receipt_sha256: string;
  /** Advisory, outside the hash. */
  readonly state_reason: string | null;
}

export function replayBundle(r: Receipt): ReplayBundle {
  return {
    schema_version: "1",
    methodology_version: r.methodology_version,
    git_sha: r.git_sha,
    catalog_entry: r.catalog_entry,
    inputs_frozen: r.inputs_frozen,
    expected_computed: r.computed,
    expected_receipt_sha256: r.receipt_sha256,
    state_reason: r.state_reason,
  };
}
