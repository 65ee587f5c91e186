/**
 * The retry schedule of interface 6.4 and addendum F as a pure function: after attempt n fails, when attempt n + 1
 * runs, or that the delivery is dead-lettered. The waits are those of `RETRY_WAITS_MS` (0 s, 5 s, 30 s, 5 min,
 * 30 min, 2 h) multiplied by a time-scale factor, so a test can run the whole 2 h 35 min schedule in milliseconds
 * (scale 1/1000 gives 0, 5, 30, 300, 1800 and 7200 ms). Because the answer is an instant, not a timer, a worker that
 * restarts re-reads `next_attempt_at` and the schedule survives the restart unchanged.
 */
import type { EpochMs } from "../methodology/index.ts";
import { MAX_ATTEMPTS, RETRY_WAITS_MS } from "./policy.ts";

/**
 * Longest `Retry-After` honoured (unscaled): 24 h. A receiver asking for more would otherwise hold the delivery
 * pending indefinitely; beyond this it is retried after 24 h (and dead-lettered as usual after the sixth attempt).
 */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** The next attempt to run: its 1-based number and the instant it is due. */
export interface NextAttempt {
  readonly attempt: number;
  readonly at: EpochMs;
}

export type NextStep = NextAttempt | "dead_letter";

function checkScale(scale: number): void {
  if (!Number.isFinite(scale) || scale <= 0) throw new RangeError(`scale must be a positive finite number, got ${scale}`);
}

/** Wait before attempt `attempt` (1-based), in real milliseconds under `scale` (default 1). */
export function waitBefore(attempt: number, scale = 1): number {
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > MAX_ATTEMPTS) throw new RangeError(`attempt must be 1..${MAX_ATTEMPTS}, got ${attempt}`);
  checkScale(scale);
  return Math.ceil(RETRY_WAITS_MS[attempt - 1]! * scale);
}

/** The first attempt of a new delivery: attempt 1, due `createdAt` plus the (zero) first wait. */
export function firstAttempt(createdAt: EpochMs, scale = 1): NextAttempt {
  return { attempt: 1, at: createdAt + waitBefore(1, scale) };
}

/**
 * After attempt `attempt` (1-based) failed at `failedAt`: the next attempt, or `dead_letter` after the sixth.
 * `retryAfterMs` is the wait a 429's `Retry-After` asked for (unscaled, null when none); it replaces the scheduled
 * wait only when it is longer, capped at `MAX_RETRY_AFTER_MS`. Both waits are multiplied by `scale` (default 1), so a
 * scaled test sees the same ordering as production. Results are whole milliseconds (rounded up).
 */
export function nextAttempt(attempt: number, failedAt: EpochMs, retryAfterMs: number | null, scale = 1): NextStep {
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > MAX_ATTEMPTS) throw new RangeError(`attempt must be 1..${MAX_ATTEMPTS}, got ${attempt}`);
  checkScale(scale);
  if (attempt === MAX_ATTEMPTS) return "dead_letter";
  let wait = RETRY_WAITS_MS[attempt]!;
  if (retryAfterMs !== null && Number.isFinite(retryAfterMs) && retryAfterMs > wait) wait = Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return { attempt: attempt + 1, at: failedAt + Math.ceil(wait * scale) };
}
