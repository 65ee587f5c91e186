/**
 * Retention (issue 25): raw samples live 7 days, 1-minute rollups 90 days, transitions and receipts forever (both are
 * configurable: `RetentionWindows`, set from HISTORY_RAW_DAYS and HISTORY_1M_DAYS). Nothing is deleted row by row: a
 * pass packs the minutes that closed (sample-packing.ts) and the days of rollups that closed (rollup-packing.ts), then
 * drops every day partition of `sample_minutes`, `rollup_minutes` and `rollup_days` that lies wholly before its
 * window. So what is kept reaches back at least the window and at most a day more, and expiring costs a catalog lookup
 * plus one `DROP TABLE` per expired day, whatever the rows.
 *
 * The job runs on the injected clock, one pass at a time (the next is scheduled only after the previous finished).
 */
import type { Clock } from "../clock.ts";
import type { EpochMs } from "../methodology/index.ts";
import { PACKED_MINUTES, ROLLUP_DAYS, ROLLUPS, dropPartition, listPartitions, type PartitionedTable } from "./partitions.ts";
import { packClosedDays } from "./rollup-packing.ts";
import { packClosedMinutes } from "./sample-packing.ts";
import type { Executor } from "./schema.ts";

const DAY_MS = 86_400_000;
/** Default raw sample window: 7 days. */
export const RAW_RETENTION_MS = 7 * DAY_MS;
/** Default 1-minute rollup window: 90 days. */
export const ROLLUP_RETENTION_MS = 90 * DAY_MS;
/** Default interval between retention passes (each also packs the minutes that closed since the last). */
export const RETENTION_EVERY_MS = 60_000;

/** How far back each kind of history is kept, in ms. Transitions and receipts are never dropped. */
export interface RetentionWindows {
  /** Raw samples (`/history?bucket=raw`); default 7 days. */
  readonly rawMs: number;
  /** 1-minute rollups (`/history?bucket=1m`, calibration); default 90 days. */
  readonly rollupMs: number;
}

export const DEFAULT_RETENTION: RetentionWindows = { rawMs: RAW_RETENTION_MS, rollupMs: ROLLUP_RETENTION_MS };

/** Windows given in days (the HISTORY_RAW_DAYS and HISTORY_1M_DAYS settings). */
export function retentionFromDays(days: { readonly rawDays: number; readonly rollupDays: number }): RetentionWindows {
  return { rawMs: days.rawDays * DAY_MS, rollupMs: days.rollupDays * DAY_MS };
}

export interface RetentionResult {
  /** Closed minutes packed by this pass, and their samples. */
  readonly packedMinutes: number;
  readonly packedSamples: number;
  /** Closed days of rollups packed by this pass (rollup-packing.ts). */
  readonly packedRollupDays: number;
  /** Days dropped (whole partitions): raw samples, rollups (a day's packed and unpacked partitions count once). */
  readonly rawDays: number;
  readonly rollupDays: number;
  /** Bytes the dropped partitions held. */
  readonly bytesFreed: number;
}

/**
 * Packs closed minutes and the closed days of rollups inside the window, then drops the day partitions that end
 * before `now` minus their window.
 */
export async function applyRetention(db: Executor, now: EpochMs, windows: RetentionWindows = DEFAULT_RETENTION): Promise<RetentionResult> {
  const packed = await packClosedMinutes(db, now);
  const rollupDays = await packClosedDays(db, now, now - windows.rollupMs);
  const drop = async (t: PartitionedTable, windowMs: number) => {
    const days = new Set<EpochMs>();
    let bytes = 0;
    for (const p of await listPartitions(db, t)) {
      if (p.end > now - windowMs) break;
      bytes += await dropPartition(db, p);
      days.add(p.start);
    }
    return { days, bytes };
  };
  const raw = await drop(PACKED_MINUTES, windows.rawMs);
  const rollups = await drop(ROLLUPS, windows.rollupMs);
  const rollupsPacked = await drop(ROLLUP_DAYS, windows.rollupMs);
  return {
    packedMinutes: packed.minutes,
    packedSamples: packed.samples,
    packedRollupDays: rollupDays.days,
    rawDays: raw.days.size,
    rollupDays: new Set([...rollups.days, ...rollupsPacked.days]).size,
    bytesFreed: raw.bytes + rollups.bytes + rollupsPacked.bytes,
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
