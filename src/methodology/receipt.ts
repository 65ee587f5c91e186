import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import canonicalize from "canonicalize";
import { thresholdKind } from "./bands.ts";
import { METHODOLOGY_VERSION } from "./constants.ts";
import { decimalToWire, parseDecimal, type Decimal } from "./decimal.ts";
import { FieldError } from "./errors.ts";
import { evaluate, type AssetState, type Computed, type Decision, type Inputs } from "./evaluate.ts";
import { parseTimestamp, timestampToWire } from "./time.ts";
import {
  ASSET_CLASSES,
  BANDS,
  CONFIDENCES,
  GATES,
  PEG_STATES,
  type AssetClass,
  type Band,
  type Confidence,
  type GateName,
  type MethodologyAsset,
  type OracleEntry,
  type PegState,
  type Thresholds,
  type ThresholdKind,
  type Trigger,
} from "./types.ts";

/** An oracle entry in wire form: decimal strings and an RFC 3339 publish time. */
export interface OracleEntryWire {
  readonly price: string;
  readonly conf: string;
  readonly publish_time: string;
}

/** `inputs_frozen` as published and hashed. Optional values are null, never omitted. */
export interface InputsFrozen {
  readonly asset: string;
  readonly class: AssetClass;
  readonly now: string;
  readonly alpha: string;
  readonly intrinsic_usd: string;
  readonly market_usd: string;
  readonly intrinsic_sol: string | null;
  readonly market_sol: string | null;
  readonly cr: string | null;
  readonly ewma_prev: string | null;
  readonly previous_band: Band;
  readonly previous_state: PegState | null;
  readonly candidate_state: Band | null;
  readonly candidate_since: string | null;
  readonly thresholds: Thresholds;
  readonly threshold_kind: ThresholdKind;
  readonly oracle: Readonly<Record<string, OracleEntryWire>>;
  readonly confirm_up_secs: number;
  readonly decay_down_secs: number;
  readonly deadband_pct: number;
  readonly cr_deadband_pct: number;
  readonly intrinsic_stale: boolean | null;
  readonly trigger: Trigger;
}

/** `computed` as published and hashed. */
export interface ComputedWire {
  readonly discount_raw: string;
  readonly discount_smooth: string;
  readonly band: Band;
  readonly final_state: PegState;
  readonly gate: GateName | null;
  readonly confidence: Confidence;
}

const optDec = (d: Decimal | null): string | null => (d === null ? null : decimalToWire(d));

export function inputsToWire(i: Inputs): InputsFrozen {
  const oracle: Record<string, OracleEntryWire> = {};
  for (const name of Object.keys(i.oracle).sort()) {
    const e = i.oracle[name]!;
    oracle[name] = { price: decimalToWire(e.price), conf: decimalToWire(e.conf), publish_time: timestampToWire(e.publish_time) };
  }
  return {
    asset: i.asset,
    class: i.class,
    now: timestampToWire(i.now),
    alpha: decimalToWire(i.alpha),
    intrinsic_usd: decimalToWire(i.intrinsic_usd),
    market_usd: decimalToWire(i.market_usd),
    intrinsic_sol: optDec(i.intrinsic_sol),
    market_sol: optDec(i.market_sol),
    cr: optDec(i.cr),
    ewma_prev: optDec(i.ewma_prev),
    previous_band: i.previous_band,
    previous_state: i.previous_state,
    candidate_state: i.candidate_state,
    candidate_since: i.candidate_since === null ? null : timestampToWire(i.candidate_since),
    thresholds: i.thresholds,
    threshold_kind: i.threshold_kind,
    oracle,
    confirm_up_secs: i.confirm_up_secs,
    decay_down_secs: i.decay_down_secs,
    deadband_pct: i.deadband_pct,
    cr_deadband_pct: i.cr_deadband_pct,
    intrinsic_stale: i.intrinsic_stale,
    trigger: i.trigger,
  };
}

export function computedToWire(c: Computed): ComputedWire {
  return {
    discount_raw: decimalToWire(c.discount_raw),
    discount_smooth: decimalToWire(c.discount_smooth),
    band: c.band,
    final_state: c.final_state,
    gate: c.gate,
    confidence: c.confidence,
  };
}

/** A malformed receipt or bundle: the verifier's exit 2. `path` names the offending member. */
export class ReceiptFormatError extends FieldError {
  constructor(path: string, message: string) {
    super("invalid_bundle", path, message);
  }

  /** The offending member's path, e.g. `inputs_frozen.oracle.SOL/USD.price`. */
  get path(): string {
    return this.field;
  }
}

type Obj = Readonly<Record<string, unknown>>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function member(o: Obj, key: string, path: string): unknown {
  if (!Object.prototype.hasOwnProperty.call(o, key)) throw new ReceiptFormatError(`${path}.${key}`, "is missing");
  return o[key];
}

function dec(o: Obj, key: string, path: string): Decimal {
  const v = member(o, key, path);
  const d = parseDecimal(v);
  if (d === null) throw new ReceiptFormatError(`${path}.${key}`, "must be a decimal string");
  return d;
}

function optDecIn(o: Obj, key: string, path: string): Decimal | null {
  return member(o, key, path) === null ? null : dec(o, key, path);
}

function ts(o: Obj, key: string, path: string): number {
  const t = parseTimestamp(member(o, key, path));
  if (t === null) throw new ReceiptFormatError(`${path}.${key}`, "must be an RFC 3339 timestamp");
  return t;
}

function oneOf<T extends string>(o: Obj, key: string, path: string, values: readonly T[], nullable = false): T | null {
  const v = member(o, key, path);
  if (v === null && nullable) return null;
  if (typeof v !== "string" || !(values as readonly string[]).includes(v)) {
    throw new ReceiptFormatError(`${path}.${key}`, `must be one of ${values.join(", ")}${nullable ? " or null" : ""}`);
  }
  return v as T;
}

function nonNeg(o: Obj, key: string, path: string): number {
  const v = member(o, key, path);
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
    throw new ReceiptFormatError(`${path}.${key}`, "must be a non-negative integer");
  }
  return v;
}

/** Validates a thresholds object of either shape (whole non-negative numbers). */
export function parseThresholds(v: unknown, path: string): Thresholds {
  if (!isObj(v)) throw new ReceiptFormatError(path, "must be an object");
  const spread = ["drift_bps", "depeg_bps", "critical_bps", "black_swan_bps"];
  const cr = ["cr_drift", "cr_depeg", "cr_critical", "cr_black_swan"];
  const keys = Object.keys(v);
  const isCr = keys.some((k) => cr.includes(k));
  const allowed = isCr ? cr : spread;
  for (const k of keys) {
    if (!allowed.includes(k)) throw new ReceiptFormatError(`${path}.${k}`, "is not a threshold of this shape");
    nonNeg(v, k, path);
  }
  if (isCr) for (const k of cr) member(v, k, path);
  return v as Thresholds;
}

/** Parses and validates wire `inputs_frozen` into domain inputs. */
export function inputsFromWire(w: unknown, path = "inputs_frozen"): Inputs {
  if (!isObj(w)) throw new ReceiptFormatError(path, "must be an object");
  const oracleWire = member(w, "oracle", path);
  if (!isObj(oracleWire)) throw new ReceiptFormatError(`${path}.oracle`, "must be an object");
  const oracle: Record<string, OracleEntry> = {};
  for (const [name, e] of Object.entries(oracleWire)) {
    const p = `${path}.oracle.${name}`;
    if (!isObj(e)) throw new ReceiptFormatError(p, "must be an object");
    oracle[name] = { price: dec(e, "price", p), conf: dec(e, "conf", p), publish_time: ts(e, "publish_time", p) };
  }
  const thresholds = parseThresholds(member(w, "thresholds", path), `${path}.thresholds`);
  const kind = oneOf(w, "threshold_kind", path, ["bps", "cr"] as const)!;
  if (kind !== thresholdKind(thresholds)) throw new ReceiptFormatError(`${path}.threshold_kind`, "does not match thresholds");
  const stale = member(w, "intrinsic_stale", path);
  if (stale !== null && typeof stale !== "boolean") {
    throw new ReceiptFormatError(`${path}.intrinsic_stale`, "must be a boolean or null");
  }
  const asset = member(w, "asset", path);
  if (typeof asset !== "string" || asset === "") throw new ReceiptFormatError(`${path}.asset`, "must be a symbol");
  return {
    asset,
    class: oneOf(w, "class", path, ASSET_CLASSES)!,
    now: ts(w, "now", path),
    alpha: dec(w, "alpha", path),
    intrinsic_usd: dec(w, "intrinsic_usd", path),
    market_usd: dec(w, "market_usd", path),
    intrinsic_sol: optDecIn(w, "intrinsic_sol", path),
    market_sol: optDecIn(w, "market_sol", path),
    cr: optDecIn(w, "cr", path),
    ewma_prev: optDecIn(w, "ewma_prev", path),
    previous_band: oneOf(w, "previous_band", path, BANDS)!,
    previous_state: oneOf(w, "previous_state", path, PEG_STATES, true),
    candidate_state: oneOf(w, "candidate_state", path, BANDS, true),
    candidate_since: member(w, "candidate_since", path) === null ? null : ts(w, "candidate_since", path),
    thresholds,
    threshold_kind: kind,
    oracle,
    confirm_up_secs: nonNeg(w, "confirm_up_secs", path),
    decay_down_secs: nonNeg(w, "decay_down_secs", path),
    deadband_pct: nonNeg(w, "deadband_pct", path),
    cr_deadband_pct: nonNeg(w, "cr_deadband_pct", path),
    intrinsic_stale: stale,
    trigger: oneOf(w, "trigger", path, ["sample", "dwell_timer"] as const)!,
  };
}

/** Parses and validates wire `computed`. */
export function computedFromWire(w: unknown, path = "computed"): Computed {
  if (!isObj(w)) throw new ReceiptFormatError(path, "must be an object");
  return {
    discount_raw: dec(w, "discount_raw", path),
    discount_smooth: dec(w, "discount_smooth", path),
    band: oneOf(w, "band", path, BANDS)!,
    final_state: oneOf(w, "final_state", path, PEG_STATES)!,
    gate: oneOf(w, "gate", path, GATES, true),
    confidence: oneOf(w, "confidence", path, CONFIDENCES)!,
  };
}

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

/** Reads the members of a catalog entry the methodology interprets, validating them. */
export function methodologyAssetFrom(entry: unknown, path = "catalog_entry"): MethodologyAsset {
  if (!isObj(entry)) throw new ReceiptFormatError(path, "must be an object");
  const symbol = member(entry, "symbol", path);
  const mint = member(entry, "mint", path);
  if (typeof symbol !== "string" || symbol === "") throw new ReceiptFormatError(`${path}.symbol`, "must be a string");
  if (typeof mint !== "string" || mint === "") throw new ReceiptFormatError(`${path}.mint`, "must be a string");
  const cls = oneOf(entry, "class", path, ASSET_CLASSES)!;
  const thresholds = parseThresholds(member(entry, "thresholds", path), `${path}.thresholds`);
  const feedOf = (v: unknown): { kind?: string; feed?: string } | null => {
    if (!isObj(v)) return null;
    const out: { kind?: string; feed?: string } = {};
    if (typeof v["kind"] === "string") out.kind = v["kind"];
    if (typeof v["feed"] === "string") out.feed = v["feed"];
    return out;
  };
  const oracleFeed = entry["oracle_feed_id"];
  return {
    symbol,
    mint,
    class: cls,
    thresholds,
    oracle_feed_id: typeof oracleFeed === "string" ? oracleFeed : null,
    market: feedOf(entry["market"]),
    intrinsic: feedOf(entry["intrinsic"]),
  };
}

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
