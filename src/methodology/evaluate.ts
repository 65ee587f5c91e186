import { classifyCr, classifySpread, isCrThresholds, thresholdKind } from "./bands.ts";
import { ALPHA, CONFIRM_UP_SECS, CR_DEADBAND_PCT, DEADBAND_PCT, DECAY_DOWN_SECS } from "./constants.ts";
import type { Decimal } from "./decimal.ts";
import { ewma, plausible, rawDiscount } from "./discount.ts";
import { hasOracleDependency } from "./display.ts";
import { dwell, dwellDeadline, type DwellState } from "./dwell.ts";
import { confidenceOf, firstGate, gateStateReason, oracleSpread } from "./gates.ts";
import type { EpochMs } from "./time.ts";
import type {
  AssetClass,
  Band,
  Confidence,
  GateName,
  MethodologyAsset,
  OracleEntry,
  PegState,
  Sample,
  Thresholds,
  ThresholdKind,
  Trigger,
} from "./types.ts";

/**
 * Everything one decision uses (methodology section 8, `inputs_frozen`), in domain form. Re-deriving `Computed`
 * from these and the catalog entry must give the same result, byte for byte in wire form.
 */
export interface Inputs {
  readonly asset: string;
  readonly class: AssetClass;
  readonly now: EpochMs;
  readonly alpha: Decimal;
  readonly intrinsic_usd: Decimal;
  readonly market_usd: Decimal;
  readonly intrinsic_sol: Decimal | null;
  readonly market_sol: Decimal | null;
  readonly cr: Decimal | null;
  /** The EWMA state before this sample was applied (null before the first accepted sample). */
  readonly ewma_prev: Decimal | null;
  /** Committed band before the evaluation. */
  readonly previous_band: Band;
  /** Published state before the evaluation (null before the first accepted sample). */
  readonly previous_state: PegState | null;
  /** Tracked candidate before the evaluation. */
  readonly candidate_state: Band | null;
  readonly candidate_since: EpochMs | null;
  readonly thresholds: Thresholds;
  readonly threshold_kind: ThresholdKind;
  readonly oracle: Readonly<Record<string, OracleEntry>>;
  readonly confirm_up_secs: number;
  readonly decay_down_secs: number;
  readonly deadband_pct: number;
  readonly cr_deadband_pct: number;
  /** The intrinsic-liveness gate's input; null when that gate is disabled by configuration. */
  readonly intrinsic_stale: boolean | null;
  readonly trigger: Trigger;
}

/** The verdict of one evaluation (methodology section 8, `computed`). */
export interface Computed {
  readonly discount_raw: Decimal;
  readonly discount_smooth: Decimal;
  /** Committed band after the evaluation. */
  readonly band: Band;
  /** Published state after the evaluation. */
  readonly final_state: PegState;
  readonly gate: GateName | null;
  readonly confidence: Confidence;
}

export type SkipReason = "no_value" | "implausible" | "missing_cr";

export type Evaluation =
  | { readonly ok: true; readonly computed: Computed; readonly dwell: DwellState }
  | { readonly ok: false; readonly reason: SkipReason; readonly discount_raw: Decimal | null };

/**
 * The per-tick pipeline (methodology section 2) on frozen inputs: raw discount, plausibility, EWMA, candidate band
 * with the Schmitt deadband, dwell, gates. Pure; the engine and the offline verifier both call it.
 */
export function evaluate(asset: MethodologyAsset, inputs: Inputs): Evaluation {
  const dRaw = rawDiscount(inputs.class, inputs);
  if (dRaw === null) return { ok: false, reason: "no_value", discount_raw: null };
  if (!plausible(dRaw)) return { ok: false, reason: "implausible", discount_raw: dRaw };
  const dSmooth = ewma(dRaw, inputs.ewma_prev, inputs.alpha);
  let candidate: Band;
  if (isCrThresholds(inputs.thresholds)) {
    if (inputs.cr === null) return { ok: false, reason: "missing_cr", discount_raw: dRaw };
    candidate = classifyCr(inputs.cr, inputs.thresholds, inputs.previous_band, inputs.cr_deadband_pct);
  } else {
    candidate = classifySpread(dSmooth, inputs.class, inputs.thresholds, inputs.previous_band, inputs.deadband_pct);
  }
  const next = dwell(
    { committed: inputs.previous_band, candidate: inputs.candidate_state, candidateSince: inputs.candidate_since },
    candidate,
    inputs.now,
    { confirmUpSecs: inputs.confirm_up_secs, decayDownSecs: inputs.decay_down_secs },
  );
  const oracle = oracleSpread(inputs.oracle);
  const gate = firstGate({
    cls: inputs.class,
    committed: next.committed,
    dSmooth,
    oracle: inputs.oracle,
    spread: oracle,
    intrinsicStale: inputs.intrinsic_stale,
  });
  return {
    ok: true,
    dwell: next,
    computed: {
      discount_raw: dRaw,
      discount_smooth: dSmooth,
      band: next.committed,
      final_state: gate === null ? next.committed : "UNKNOWN",
      gate,
      confidence: confidenceOf(oracle, hasOracleDependency(asset)),
    },
  };
}

/** Per-asset engine state between evaluations. Plain data: it is what the band machine keeps in its context. */
export interface AssetState {
  readonly committed: Band;
  readonly candidate: Band | null;
  readonly candidateSince: EpochMs | null;
  /** d_smooth after the last accepted sample (the EWMA state). */
  readonly ewma: Decimal | null;
  /** The EWMA state before the last accepted sample: what a dwell-timer evaluation freezes as `ewma_prev`. */
  readonly ewmaPrev: Decimal | null;
  /** The last accepted sample, which a dwell-timer evaluation re-uses. */
  readonly last: Sample | null;
  readonly published: PegState | null;
  readonly gate: GateName | null;
  readonly discountRaw: Decimal | null;
  readonly confidence: Confidence | null;
  /** `now` of the last evaluation. */
  readonly evaluatedAt: EpochMs | null;
  /**
   * What made the last evaluation. After a dwell-timer evaluation at D, a sample stamped exactly D is still to come
   * (the timer fires first); after a sample evaluation at T, nothing at T is. A feed that resumes uses this.
   */
  readonly lastTrigger: Trigger | null;
  /** When the current published state began. */
  readonly publishedSince: EpochMs | null;
  /** When the current committed band began. */
  readonly committedSince: EpochMs | null;
}

export const INITIAL_STATE: AssetState = {
  committed: "PEGGED",
  candidate: null,
  candidateSince: null,
  ewma: null,
  ewmaPrev: null,
  last: null,
  published: null,
  gate: null,
  discountRaw: null,
  confidence: null,
  evaluatedAt: null,
  lastTrigger: null,
  publishedSince: null,
  committedSince: null,
};

/** Engine options that are configuration, not methodology: they are frozen into inputs where they matter. */
export interface StepOptions {
  /** Enables the intrinsic-liveness gate (off by default). */
  readonly intrinsicLivenessGate: boolean;
}

export const DEFAULT_STEP_OPTIONS: StepOptions = { intrinsicLivenessGate: false };

export function deadlineOf(state: AssetState): EpochMs | null {
  return dwellDeadline(
    { committed: state.committed, candidate: state.candidate, candidateSince: state.candidateSince },
    { confirmUpSecs: CONFIRM_UP_SECS, decayDownSecs: DECAY_DOWN_SECS },
  );
}

/** One evaluated decision: its frozen inputs, its verdict and, when the published state changed, the transition. */
export interface Decision {
  readonly inputs: Inputs;
  readonly computed: Computed;
  /** True when the published state changed (never for the first accepted sample). */
  readonly transition: boolean;
  readonly state_reason: "premium_sanity" | null;
  /** The sample this decision evaluated (for a dwell-timer decision, the last accepted sample). */
  readonly sample: Sample;
}

export type StepOutcome =
  /** `state` is the asset state right after this decision. */
  | { readonly kind: "decision"; readonly decision: Decision; readonly state: AssetState }
  | { readonly kind: "skipped"; readonly reason: SkipReason; readonly now: EpochMs };

export type StepTrigger =
  | { readonly kind: "sample"; readonly sample: Sample; readonly now: EpochMs }
  | { readonly kind: "dwell_timer"; readonly now: EpochMs };

export interface StepResult {
  readonly state: AssetState;
  readonly outcomes: readonly StepOutcome[];
}

function freeze(
  asset: MethodologyAsset,
  state: AssetState,
  sample: Sample,
  ewmaPrev: Decimal | null,
  now: EpochMs,
  trigger: Trigger,
  options: StepOptions,
): Inputs {
  return {
    asset: asset.symbol,
    class: asset.class,
    now,
    alpha: ALPHA,
    intrinsic_usd: sample.intrinsic_usd,
    market_usd: sample.market_usd,
    intrinsic_sol: sample.intrinsic_sol,
    market_sol: sample.market_sol,
    cr: sample.cr,
    ewma_prev: ewmaPrev,
    previous_band: state.committed,
    previous_state: state.published,
    candidate_state: state.candidate,
    candidate_since: state.candidateSince,
    thresholds: asset.thresholds,
    threshold_kind: thresholdKind(asset.thresholds),
    oracle: sample.oracle,
    confirm_up_secs: CONFIRM_UP_SECS,
    decay_down_secs: DECAY_DOWN_SECS,
    deadband_pct: DEADBAND_PCT,
    cr_deadband_pct: CR_DEADBAND_PCT,
    intrinsic_stale: options.intrinsicLivenessGate ? sample.intrinsic_stale : null,
    trigger,
  };
}

function apply(
  asset: MethodologyAsset,
  state: AssetState,
  sample: Sample,
  ewmaPrev: Decimal | null,
  now: EpochMs,
  trigger: Trigger,
  options: StepOptions,
): { state: AssetState; outcome: StepOutcome } {
  const inputs = freeze(asset, state, sample, ewmaPrev, now, trigger, options);
  const ev = evaluate(asset, inputs);
  if (!ev.ok) return { state, outcome: { kind: "skipped", reason: ev.reason, now } };
  const c = ev.computed;
  const transition = state.published !== null && state.published !== c.final_state;
  const next: AssetState = {
    committed: ev.dwell.committed,
    candidate: ev.dwell.candidate,
    candidateSince: ev.dwell.candidateSince,
    ewma: c.discount_smooth,
    ewmaPrev,
    last: sample,
    published: c.final_state,
    gate: c.gate,
    discountRaw: c.discount_raw,
    confidence: c.confidence,
    evaluatedAt: now,
    lastTrigger: trigger,
    publishedSince: state.published === c.final_state ? state.publishedSince : now,
    committedSince: state.committed === ev.dwell.committed && state.committedSince !== null ? state.committedSince : now,
  };
  return {
    state: next,
    outcome: {
      kind: "decision",
      decision: { inputs, computed: c, transition, state_reason: gateStateReason(c.gate), sample },
      state: next,
    },
  };
}

/**
 * Advances one asset by one trigger. A sample first lets a dwell deadline at or before its instant fire (the timer
 * fires first, then the sample is evaluated), so the result never depends on timer jitter. A dwell-timer trigger
 * re-evaluates the last accepted sample at `now` with its pre-sample EWMA state, which reproduces the same d_smooth.
 */
export function step(
  asset: MethodologyAsset,
  state: AssetState,
  trigger: StepTrigger,
  options: StepOptions = DEFAULT_STEP_OPTIONS,
): StepResult {
  const outcomes: StepOutcome[] = [];
  let current = state;
  const deadline = deadlineOf(current);
  if (deadline !== null && current.last !== null && deadline <= trigger.now) {
    // A late timer evaluates at its own deadline, never later: the receipt freezes the deadline instant.
    const r = apply(asset, current, current.last, current.ewmaPrev, deadline, "dwell_timer", options);
    current = r.state;
    outcomes.push(r.outcome);
  }
  if (trigger.kind === "sample") {
    const r = apply(asset, current, trigger.sample, current.ewma, trigger.now, "sample", options);
    current = r.state;
    outcomes.push(r.outcome);
  }
  return { state: current, outcomes };
}
