import { rank } from "./bands.ts";
import type { EpochMs } from "./time.ts";
import type { Band } from "./types.ts";

/** The dwell state: the committed band and, optionally, a tracked candidate with the instant it was first seen. */
export interface DwellState {
  readonly committed: Band;
  readonly candidate: Band | null;
  readonly candidateSince: EpochMs | null;
}

export interface DwellWindows {
  /** Seconds a worsening candidate must persist (entry dwell). */
  readonly confirmUpSecs: number;
  /** Seconds an improving candidate must persist (exit dwell). */
  readonly decayDownSecs: number;
}

/**
 * Time hysteresis (methodology section 5), evaluated at `now` for the candidate band of this tick.
 * A first sighting (or a side flip) never commits; on the same side the original `since` is kept while the candidate
 * itself may change (so DRIFT<->DEPEG flicker above a PEGGED commit still commits, with the current candidate).
 */
export function dwell(state: DwellState, candidate: Band, now: EpochMs, windows: DwellWindows): DwellState {
  const { committed } = state;
  if (candidate === committed) return { committed, candidate: null, candidateSince: null };
  const escalating = rank(candidate) > rank(committed);
  const tracked = state.candidate;
  const sameSide = tracked !== null && state.candidateSince !== null && rank(tracked) > rank(committed) === escalating;
  if (!sameSide) return { committed, candidate, candidateSince: now };
  const since = state.candidateSince;
  const needed = escalating ? windows.confirmUpSecs : windows.decayDownSecs;
  // Whole seconds, truncated toward zero. A `since` in the future never matures (checked on the sign first: a
  // sub-second lead would truncate to -0, which compares >= 0).
  const elapsedMs = now - since;
  const elapsed = (elapsedMs - (elapsedMs % 1000)) / 1000;
  if (elapsedMs >= 0 && elapsed >= needed) return { committed: candidate, candidate: null, candidateSince: null };
  return { committed, candidate, candidateSince: since };
}

/**
 * The instant the tracked candidate would mature (since + needed), or null when nothing is tracked. The band
 * machine arms its dwell timer here, so a quiet feed still commits on time.
 */
export function dwellDeadline(state: DwellState, windows: DwellWindows): EpochMs | null {
  if (state.candidate === null || state.candidateSince === null) return null;
  const escalating = rank(state.candidate) > rank(state.committed);
  return state.candidateSince + (escalating ? windows.confirmUpSecs : windows.decayDownSecs) * 1000;
}
