import { asyncScheduler, concatMap, from, map, timer, type Observable, type SchedulerLike } from "rxjs";
import type { Clock } from "../clock.ts";
import type { Sample } from "../methodology/index.ts";

/**
 * A scenario as a live feed: each sample is emitted when `clock` reaches its `ts` (use a ScaledClock starting at the
 * first sample to replay at SCENARIO_SPEED). Backpressure: lossless and strictly ordered (`concatMap`); the source
 * waits on the clock, so it never runs ahead of its consumer by more than one sample.
 */
export function scenarioFeed(
  samples: readonly Sample[],
  clock: Clock,
  speed: number,
  scheduler: SchedulerLike = asyncScheduler,
): Observable<Sample> {
  return from(samples).pipe(
    concatMap((s) => timer(Math.max(0, Math.ceil((s.ts - clock.now()) / speed)), scheduler).pipe(map(() => s))),
  );
}
