/**
 * A receipt's wire forms: frozen inputs and verdicts as decimal strings and RFC 3339 instants, and their strict
 * parsers (a malformed member is a `ReceiptFormatError` naming its path). receipt.ts hashes these forms;
 * receipt-verify.ts re-derives a verdict from them.
 */
import { thresholdKind } from "./bands.ts";
import { decimalToWire, parseDecimal, type Decimal } from "./decimal.ts";
import { FieldError } from "./errors.ts";
import type { Computed, Inputs } from "./evaluate.ts";
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

/** A JSON object as parsed, before its members are checked. */
export type Obj = Readonly<Record<string, unknown>>;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A member of `o` that must be present; `path` names `o` in the error. */
export function member(o: Obj, key: string, path: string): unknown {
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

