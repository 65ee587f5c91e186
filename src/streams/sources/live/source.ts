/**
 * What every live adapter shares: the log callback, the counters, the common options, a scheduler-driven `sleep`,
 * and the polling loop.
 *
 * Backpressure policy of `pollingSource`: at most one request in flight per source. A cycle runs to completion (all
 * its batches, one after another), then the loop sleeps `intervalMs` on the scheduler and starts the next cycle, so a
 * slow upstream stretches the cadence instead of piling up requests; missed periods are never queued. Legs are
 * emitted synchronously as each response is parsed (no buffer): every poll carries the current value, so a consumer
 * that keeps only the latest leg per asset loses nothing it needs (latest wins).
 */
import { Observable, asyncScheduler, type SchedulerLike } from "rxjs";
import type { Clock } from "../../../clock.ts";
import type { LogLevel } from "../../../config.ts";
import type { Leg, SourceStats } from "../legs.ts";
import { Prng, streamSeed } from "../simulated-market/prng.ts";
import { describeError } from "./errors.ts";

/** Structured log callback: `msg` is a constant sentence, the variable parts go in `fields`. Never receives secrets. */
export type LiveLog = (level: LogLevel, msg: string, fields?: Readonly<Record<string, unknown>>) => void;

export const silentLog: LiveLog = () => {};

/** `SourceStats` plus the tokens a source was asked for and did not answer (Jupiter omissions, Sanctum `errs`). */
export interface LiveSourceStats extends SourceStats {
  readonly omitted: number;
}

/**
 * Live counters of one source. Pass one in an adapter's options to read them while it runs (`snapshot()`); every
 * subscription of the adapter adds to the same counters.
 */
export class SourceCounters {
  received = 0;
  malformed = 0;
  errors = 0;
  retries = 0;
  omitted = 0;

  snapshot(): LiveSourceStats {
    return {
      received: this.received,
      malformed: this.malformed,
      errors: this.errors,
      retries: this.retries,
      omitted: this.omitted,
    };
  }
}

/** Capped exponential backoff: attempt n waits between half and all of min(capMs, baseMs * 2^n) ("equal jitter"). */
export interface BackoffPolicy {
  /** First delay in ms before jitter. */
  readonly baseMs: number;
  /** Largest delay in ms before jitter. */
  readonly capMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 500, capMs: 30_000 });

/** Options every adapter takes. */
export interface LiveAdapterOptions {
  /** Stamps legs whose source carries no time of its own (`observed_at` = `clock.now()` when the answer arrived). */
  readonly clock: Clock;
  /**
   * Drives every wait: poll intervals, backoff, Retry-After, the request budget and the SSE idle watchdog (which read
   * `scheduler.now()`). Default `asyncScheduler`. Request timeouts are socket timeouts and always use real time.
   */
  readonly scheduler?: SchedulerLike;
  /** Default: silent. */
  readonly log?: LiveLog;
  /** Where the adapter counts; default a private instance (pass one to read the stats). */
  readonly counters?: SourceCounters;
  /** Uniform [0, 1) for backoff jitter. Default: a seeded PRNG, so retries are reproducible. */
  readonly random?: () => number;
  /** Default `DEFAULT_BACKOFF` (500 ms doubling to 30 s). */
  readonly backoff?: BackoffPolicy;
  /** Per-request timeout in ms (connect, headers and body). Default 10 000. */
  readonly requestTimeoutMs?: number;
}

/** The options with their defaults applied. */
export interface ResolvedOptions {
  readonly clock: Clock;
  readonly scheduler: SchedulerLike;
  readonly log: LiveLog;
  readonly counters: SourceCounters;
  readonly random: () => number;
  readonly backoff: BackoffPolicy;
  readonly requestTimeoutMs: number;
}

export function resolveOptions(source: string, o: LiveAdapterOptions): ResolvedOptions {
  const backoff = o.backoff ?? DEFAULT_BACKOFF;
  if (!(backoff.baseMs > 0 && backoff.capMs >= backoff.baseMs)) throw new RangeError(`${source}: backoff needs 0 < baseMs <= capMs`);
  const timeout = o.requestTimeoutMs ?? 10_000;
  if (!(timeout > 0)) throw new RangeError(`${source}: requestTimeoutMs must be > 0`);
  let random = o.random;
  if (random === undefined) {
    const prng = new Prng(streamSeed(1, `live:${source}`));
    random = () => prng.next();
  }
  const log = o.log ?? silentLog;
  return {
    clock: o.clock,
    scheduler: o.scheduler ?? asyncScheduler,
    // Every line names its source, so one log callback can serve all adapters.
    log: (level, msg, fields) => log(level, msg, { source, ...fields }),
    counters: o.counters ?? new SourceCounters(),
    random,
    backoff,
    requestTimeoutMs: timeout,
  };
}

/** Delay before retry number `attempt` (0-based). */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number): number {
  const full = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(full / 2 + (random() * full) / 2);
}

/** Resolves after `ms` on the scheduler, or as soon as `signal` aborts (never rejects). */
export function sleep(ms: number, scheduler: SchedulerLike, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = (): void => {
      action.unsubscribe();
      resolve();
    };
    const action = scheduler.schedule(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** What a polling cycle gets: the subscription's lifetime and the emitter. */
export interface CycleContext {
  /** Aborted when the subscriber unsubscribes: stop, emit nothing more. */
  readonly signal: AbortSignal;
  readonly emit: (leg: Leg) => void;
}

/**
 * A cold Observable that runs `cycle` at subscription and then `intervalMs` after each cycle ends, until
 * unsubscribed (which aborts the request in flight). It never errors and never completes: a cycle that throws is a
 * bug, logged and counted, and the loop carries on.
 */
export function pollingSource(
  intervalMs: number,
  o: ResolvedOptions,
  cycle: (ctx: CycleContext) => Promise<void>,
): Observable<Leg> {
  if (!(intervalMs > 0)) throw new RangeError("intervalMs must be > 0");
  return new Observable<Leg>((subscriber) => {
    const life = new AbortController();
    const ctx: CycleContext = {
      signal: life.signal,
      emit: (leg) => {
        if (!life.signal.aborted) subscriber.next(leg);
      },
    };
    void (async () => {
      while (!life.signal.aborted) {
        try {
          await cycle(ctx);
        } catch (e) {
          if (life.signal.aborted) break;
          o.counters.errors++;
          o.log("error", "poll cycle failed unexpectedly", { error: describeError(e) });
        }
        await sleep(intervalMs, o.scheduler, life.signal);
      }
    })().catch((e: unknown) => o.log("error", "poll loop stopped unexpectedly", { error: describeError(e) }));
    return () => life.abort();
  });
}

/** Splits a list into consecutive batches of at most `size`. */
export function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
