/**
 * Dispatch rules (interface 6.5, addendum F): whether one transition goes to one target (a webhook or a
 * subscription). A pure function over plain data, so the worker, a replay and the tests all decide the same way.
 *
 * 1. An inactive target, or a transition of another asset, is skipped.
 * 2. The target fires when `|discount_bps| >= threshold_bps`, or when the transition returns to PEGGED and the last
 *    transition of this asset that was sent to this target was not itself a return to PEGGED (the user was told about
 *    a departure and has not yet been told it ended, even if intermediate steps stayed under the threshold).
 * 3. The same `(target, asset, to_state)` is not sent again within 30 minutes of the previous send (a send exactly
 *    30 minutes later goes out). A calibrated asset's BLACK_SWAN bypasses this floor; a provisional (beta) asset's
 *    does not (interface 6.5.1).
 *
 * Time is the transition's own `ts` (its detection instant), never the wall clock: a replay or a late worker decides
 * exactly as a live one would.
 */
import type { Calibration } from "../catalog/index.ts";
import type { EpochMs, PegState } from "../methodology/index.ts";

/** The de-duplication floor: 30 minutes, in milliseconds. */
export const DISPATCH_FLOOR_MS = 30 * 60_000;

/** The facts of one committed transition that dispatch looks at. */
export interface DispatchTransition {
  /** Asset symbol. */
  readonly asset: string;
  readonly mint: string;
  readonly from_state: PegState;
  readonly to_state: PegState;
  /** Signed discount at the trigger, integer basis points. */
  readonly discount_bps: number;
  /** Epoch ms of the state change (the alert's `detected_at`). */
  readonly ts: EpochMs;
  /** The asset's calibration (catalog). */
  readonly calibration: Calibration;
}

/** A webhook or a subscription, as far as dispatch is concerned. */
export interface DispatchTarget {
  /** Fires when `|discount_bps|` reaches this, 0-10000 basis points. */
  readonly threshold_bps: number;
  readonly is_active: boolean;
  /** The asset the target follows (symbol or mint); null or absent: every asset. */
  readonly asset?: string | null;
}

/** A transition previously sent to this target (decided `send`, whatever the delivery outcome). */
export interface PriorSend {
  /** Asset symbol or mint, matched against the transition's. */
  readonly asset: string;
  readonly to_state: PegState;
  /** The `ts` of the transition that was sent. */
  readonly ts: EpochMs;
}

export type SendReason = "threshold" | "recovery";
export type SkipReason = "inactive" | "other_asset" | "below_threshold" | "floor";

export type DispatchDecision =
  | {
      readonly send: true;
      readonly reason: SendReason;
      /** True when a calibrated BLACK_SWAN went out although a send inside the 30-minute floor exists. */
      readonly floorBypassed: boolean;
    }
  | {
      readonly send: false;
      readonly reason: SkipReason;
      /** For `floor`: the earliest instant the same (target, asset, to_state) may be sent again. */
      readonly until?: EpochMs;
    };

function sameAsset(t: DispatchTransition, asset: string): boolean {
  return asset === t.asset || asset === t.mint;
}

/**
 * Decides whether `transition` is sent to `target`. `sends` must hold every send to this target within the last
 * 30 minutes and, for each asset, the latest send (however old), in any order; more history is harmless. Sends at or
 * after the transition's `ts` are ignored (they cannot precede it).
 */
export function decideDispatch(transition: DispatchTransition, target: DispatchTarget, sends: readonly PriorSend[]): DispatchDecision {
  if (!target.is_active) return { send: false, reason: "inactive" };
  if (target.asset != null && !sameAsset(transition, target.asset)) return { send: false, reason: "other_asset" };

  const earlier = sends.filter((s) => sameAsset(transition, s.asset) && s.ts < transition.ts);
  let reason: SendReason;
  if (Math.abs(transition.discount_bps) >= target.threshold_bps) {
    reason = "threshold";
  } else if (transition.to_state === "PEGGED" && transition.from_state !== "PEGGED") {
    let last: PriorSend | undefined;
    for (const s of earlier) if (last === undefined || s.ts > last.ts) last = s;
    if (last === undefined || last.to_state === "PEGGED") return { send: false, reason: "below_threshold" };
    reason = "recovery";
  } else {
    return { send: false, reason: "below_threshold" };
  }

  let latestSame: EpochMs | undefined;
  for (const s of earlier) {
    if (s.to_state === transition.to_state && (latestSame === undefined || s.ts > latestSame)) latestSame = s.ts;
  }
  if (latestSame === undefined || transition.ts - latestSame >= DISPATCH_FLOOR_MS) return { send: true, reason, floorBypassed: false };
  if (transition.to_state === "BLACK_SWAN" && transition.calibration === "calibrated") return { send: true, reason, floorBypassed: true };
  return { send: false, reason: "floor", until: latestSame + DISPATCH_FLOOR_MS };
}
