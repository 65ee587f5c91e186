/**
 * Shared builders for the methodology tests: samples, catalog entries, frozen inputs, and a tiny driver that runs a
 * timeline of triggers through `step`.
 */
import {
  ALPHA,
  buildReceipt,
  receiptHash,
  replayBundle,
  timestampToWire,
  type Receipt,
  type ReplayBundle,
  CONFIRM_UP_SECS,
  CR_DEADBAND_PCT,
  D,
  DEADBAND_PCT,
  DECAY_DOWN_SECS,
  INITIAL_STATE,
  methodologyAssetFrom,
  step,
  thresholdKind,
  type AssetClass,
  type AssetState,
  type Decimal,
  type Decision,
  type Inputs,
  type MethodologyAsset,
  type OracleEntry,
  type Sample,
  type StepOptions,
  type StepOutcome,
  type Thresholds,
} from "../../src/methodology/index.ts";

/** 2026-06-12T10:00:00.000Z */
export const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);
export const SEC = 1000;

export const dec = (v: string | number): Decimal => new D(v);

export interface CatalogEntry {
  readonly symbol: string;
  readonly mint: string;
  readonly class: AssetClass;
  readonly thresholds: Thresholds;
  readonly [extra: string]: unknown;
}

export function catalogEntry(
  cls: AssetClass,
  thresholds: Thresholds = { drift_bps: 20, depeg_bps: 100, critical_bps: 300 },
  extra: Readonly<Record<string, unknown>> = {},
): CatalogEntry {
  return { symbol: `T${cls.toUpperCase()}`, mint: `Mint${cls}1111111111111111111111111111`, class: cls, thresholds, ...extra };
}

export function assetOf(
  cls: AssetClass,
  thresholds?: Thresholds,
  extra?: Readonly<Record<string, unknown>>,
): { entry: CatalogEntry; asset: MethodologyAsset } {
  const entry = catalogEntry(cls, thresholds, extra);
  return { entry, asset: methodologyAssetFrom(entry) };
}

export interface SampleOpts {
  readonly intrinsic?: string;
  readonly intrinsicSol?: string | null;
  readonly marketSol?: string | null;
  readonly cr?: string | null;
  readonly oracle?: Readonly<Record<string, OracleEntry>>;
  readonly stale?: boolean;
  readonly asset?: string;
}

/** A sample with market `market` (USD leg) at `ts`; intrinsic defaults to 1. */
export function sample(market: string, ts: number = T0, o: SampleOpts = {}): Sample {
  return {
    asset: o.asset ?? "T",
    ts,
    intrinsic_usd: new D(o.intrinsic ?? "1"),
    market_usd: new D(market),
    intrinsic_sol: o.intrinsicSol == null ? null : new D(o.intrinsicSol),
    market_sol: o.marketSol == null ? null : new D(o.marketSol),
    cr: o.cr == null ? null : new D(o.cr),
    oracle: o.oracle ?? {},
    intrinsic_stale: o.stale ?? false,
  };
}

export function oracleEntry(price: string, conf: string, publishTime: number = T0): OracleEntry {
  return { price: new D(price), conf: new D(conf), publish_time: publishTime };
}

/** Frozen inputs for a direct `evaluate` call; everything defaults to a cold-start PEGGED asset at T0. */
export function mkInputs(asset: MethodologyAsset, over: Partial<Inputs> = {}): Inputs {
  return {
    asset: asset.symbol,
    class: asset.class,
    now: T0,
    alpha: ALPHA,
    intrinsic_usd: new D("1"),
    market_usd: new D("1"),
    intrinsic_sol: null,
    market_sol: null,
    cr: null,
    ewma_prev: null,
    previous_band: "PEGGED",
    previous_state: null,
    candidate_state: null,
    candidate_since: null,
    thresholds: asset.thresholds,
    threshold_kind: thresholdKind(asset.thresholds),
    oracle: {},
    confirm_up_secs: CONFIRM_UP_SECS,
    decay_down_secs: DECAY_DOWN_SECS,
    deadband_pct: DEADBAND_PCT,
    cr_deadband_pct: CR_DEADBAND_PCT,
    intrinsic_stale: null,
    trigger: "sample",
    ...over,
  };
}

export type TimelineEvent =
  | { readonly kind: "sample"; readonly sample: Sample; readonly now: number }
  | { readonly kind: "dwell_timer"; readonly now: number };

/** Feeds triggers through `step`, collecting every outcome in order. */
export function runTimeline(
  asset: MethodologyAsset,
  events: readonly TimelineEvent[],
  options?: StepOptions,
  initial: AssetState = INITIAL_STATE,
): { state: AssetState; outcomes: StepOutcome[]; states: AssetState[] } {
  let state = initial;
  const outcomes: StepOutcome[] = [];
  const states: AssetState[] = [];
  for (const ev of events) {
    const r = step(asset, state, ev, options);
    state = r.state;
    outcomes.push(...r.outcomes);
    states.push(state);
  }
  return { state, outcomes, states };
}

export function at(now: number, market: string, o: SampleOpts = {}): TimelineEvent {
  return { kind: "sample", sample: sample(market, now, o), now };
}

export function decisions(outcomes: readonly StepOutcome[]): Decision[] {
  const out: Decision[] = [];
  for (const o of outcomes) if (o.kind === "decision") out.push(o.decision);
  return out;
}

export function transitions(outcomes: readonly StepOutcome[]): Decision[] {
  return decisions(outcomes).filter((d) => d.transition);
}

/** The only decision of a step's outcome list, failing loudly when there is none. */
export function onlyDecision(outcomes: readonly StepOutcome[]): Decision {
  const ds = decisions(outcomes);
  if (ds.length !== 1) throw new Error(`expected exactly one decision, got ${ds.length}`);
  return ds[0]!;
}

export const GIT_SHA = "0123456789abcdef0123456789abcdef01234567";

/** Receipts and replay bundles of every transition among `outcomes`. */
export function bundlesOf(
  entry: unknown,
  asset: MethodologyAsset,
  outcomes: readonly StepOutcome[],
  gitSha: string = GIT_SHA,
): { receipt: Receipt; bundle: ReplayBundle; decision: Decision }[] {
  return transitions(outcomes).map((decision) => {
    const receipt = buildReceipt({ asset, catalogEntry: entry, gitSha }, decision);
    return { receipt, bundle: replayBundle(receipt), decision };
  });
}

/** A deep, JSON-shaped copy (what a bundle file or URL delivers). */
export function jsonCopy<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

export type Json = Record<string, unknown>;
export const DELETE = Symbol("delete");

export function rehash(b: Json): Json {
  return {
    ...b,
    expected_receipt_sha256: receiptHash(
      b["methodology_version"] as string,
      b["git_sha"] as string,
      b["catalog_entry"],
      b["inputs_frozen"],
      b["expected_computed"],
    ),
  };
}

export function mutate(
  bundle: ReplayBundle,
  part: "inputs_frozen" | "expected_computed" | "catalog_entry" | null,
  key: string,
  value: unknown,
  recomputeHash: boolean,
): Json {
  const b = jsonCopy(bundle) as unknown as Json;
  const target = part === null ? b : (b[part] as Json);
  if (value === DELETE) delete target[key];
  else target[key] = value;
  return recomputeHash ? rehash(b) : b;
}

/** A well-formed different value for any member of inputs_frozen / expected_computed. */
export function altered(key: string, v: unknown): unknown {
  if (typeof v === "number") return v + 1;
  if (typeof v === "boolean") return !v;
  if (v === null) {
    const byKey: Record<string, unknown> = {
      intrinsic_sol: "1",
      market_sol: "1",
      cr: "1.5",
      ewma_prev: "0.5",
      previous_state: "DEPEG",
      candidate_state: "DEPEG",
      candidate_since: "2026-06-12T09:00:00.000Z",
      intrinsic_stale: true,
      gate: "oracle_confidence",
    };
    return byKey[key];
  }
  if (typeof v === "object") {
    const o = { ...(v as Json) };
    const k = Object.keys(o)[0];
    if (k === undefined) {
      return key === "thresholds"
        ? { drift_bps: 21 }
        : { extra: { price: "1", conf: "0.5", publish_time: "2026-06-12T10:00:00.000Z" } };
    }
    const inner = o[k];
    o[k] = typeof inner === "number" ? inner + 1 : { ...(inner as Json), conf: "0.123" };
    return o;
  }
  const s = v as string;
  if (/^\d{4}-/.test(s)) return timestampToWire(Date.parse(s) + 1);
  if (/^-?\d/.test(s)) return new D(s).plus("0.0001").toFixed();
  const enums: Record<string, readonly string[]> = {
    previous_band: ["PEGGED", "DRIFT"],
    previous_state: ["PEGGED", "DRIFT"],
    candidate_state: ["PEGGED", "DRIFT"],
    band: ["PEGGED", "DRIFT"],
    final_state: ["PEGGED", "DRIFT"],
    gate: ["premium_sanity", "oracle_confidence"],
    confidence: ["high", "low"],
    trigger: ["sample", "dwell_timer"],
    threshold_kind: ["bps", "cr"],
    class: ["stable_fiat", "lst"],
  };
  const opts = enums[key];
  if (opts) return opts[0] === s ? opts[1] : opts[0];
  return s + "X";
}
