/**
 * Retention: raw samples live 7 days, 1-minute rollups 90 days. The job runs on the injected clock, one pass at a
 * time (the next is scheduled only after the previous finished), so a slow database never piles up deletes.
 */
import type { Clock } from "../clock.ts";
import type { EpochMs } from "../methodology/index.ts";
import { toInt, tsParam } from "./normalise.ts";
import type { Executor } from "./schema.ts";

const DAY_MS = 86_400_000;
/** Raw samples older than this are deleted. */
export const RAW_RETENTION_MS = 7 * DAY_MS;
/** 1-minute rollups older than this (by minute start) are deleted. */
export const ROLLUP_RETENTION_MS = 90 * DAY_MS;
/** Default interval between retention passes. */
export const RETENTION_EVERY_MS = 10 * 60_000;

export interface RetentionResult {
  readonly samples: number;
  readonly rollups: number;
}

/** Deletes raw samples with ts < now - 7 d and rollups with minute < now - 90 d; returns how many rows went. */
export async function applyRetention(db: Executor, now: EpochMs): Promise<RetentionResult> {
  const samples = await db
    .deleteFrom("samples")
    .where("ts", "<", tsParam(now - RAW_RETENTION_MS))
    .executeTakeFirst();
  const rollups = await db
    .deleteFrom("rollups_1m")
    .where("minute", "<", tsParam(now - ROLLUP_RETENTION_MS))
    .executeTakeFirst();
  return {
    samples: toInt(samples.numDeletedRows, "deleted samples"),
    rollups: toInt(rollups.numDeletedRows, "deleted rollups"),
  };
}

/** What the scheduler needs of a store. */
export interface RetentionTarget {
  applyRetention(now?: EpochMs): Promise<RetentionResult>;
}

export interface RetentionOptions {
  /** Called with each pass's result. */
  readonly onPass?: (result: RetentionResult) => void;
  /** Called when a pass fails; the schedule continues. Default: ignore (the next pass retries). */
  readonly onError?: (error: unknown) => void;
}

/**
 * Runs a retention pass now and then every `everyMs` (measured from the end of the previous pass) on `clock`.
 * Returns `stop`, which cancels the next pass and resolves once a pass in flight has finished. Idempotent.
 */
export function startRetention(
  store: RetentionTarget,
  clock: Clock,
  everyMs: number = RETENTION_EVERY_MS,
  options: RetentionOptions = {},
): () => Promise<void> {
  if (!(everyMs > 0) || !Number.isFinite(everyMs)) throw new RangeError("everyMs must be a positive finite number");
  let stopped = false;
  let timer: unknown = null;
  let inFlight: Promise<void> = Promise.resolve();

  const pass = async (): Promise<void> => {
    try {
      const result = await store.applyRetention(clock.now());
      options.onPass?.(result);
    } catch (e) {
      options.onError?.(e);
    }
    if (!stopped) timer = clock.setTimeout(run, everyMs);
  };
  const run = (): void => {
    timer = null;
    if (stopped) return;
    inFlight = pass();
  };

  run();
  return async () => {
    stopped = true;
    if (timer !== null) clock.clearTimeout(timer);
    timer = null;
    await inFlight;
  };
}
