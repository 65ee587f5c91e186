import { asyncScheduler, Observable, type SchedulerLike, type Subscription } from "rxjs";
import type { Clock } from "../../../clock.ts";
import type { Sample } from "../../../methodology/index.ts";

/**
 * A scenario as a live feed: each sample is emitted when `clock` reaches its `ts` (use a ScaledClock starting at the
 * first sample to replay at SCENARIO_SPEED). Backpressure: lossless and strictly ordered; the source waits on the
 * clock, so it never runs ahead of its consumer.
 *
 * Every sample already due is emitted at once, in one synchronous batch: after the event loop stalled (load, GC, a
 * catch-up), no due sample waits behind a dwell timer that expired during the stall, so a served scenario decides in
 * the same order as the offline replay (a sample before a deadline is evaluated before it).
 */
export function scenarioFeed(
  samples: readonly Sample[],
  clock: Clock,
  speed: number,
  scheduler: SchedulerLike = asyncScheduler,
): Observable<Sample> {
  return new Observable<Sample>((subscriber) => {
    let i = 0;
    let pending: Subscription | null = null;
    const pump = (): void => {
      while (i < samples.length && samples[i]!.ts <= clock.now()) {
        subscriber.next(samples[i++]!);
        if (subscriber.closed) return;
      }
      if (i >= samples.length) {
        subscriber.complete();
        return;
      }
      pending = scheduler.schedule(pump, Math.max(1, Math.ceil((samples[i]!.ts - clock.now()) / speed)));
    };
    pending = scheduler.schedule(pump, 0);
    return () => pending?.unsubscribe();
  });
}
