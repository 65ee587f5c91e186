import { asyncScheduler, Observable, type SchedulerLike, type Subscription } from "rxjs";
import type { Clock } from "../../../clock.ts";
import type { Sample } from "../../../methodology/index.ts";

/**
 * A scenario as a live feed: each sample is emitted when `clock` reaches its `ts` (use a ScaledClock starting at the
 * first sample to replay at SCENARIO_SPEED). Backpressure: lossless and strictly ordered; the source waits on the
 * clock, so it never runs ahead of its consumer.
 *
 * Every sample already due is emitted at once, in one synchronous batch, once this feed's timer runs. That alone does
 * not keep a dwell timer that expired during a stall (load, GC, a catch-up) behind the samples stamped before its
 * deadline: Node runs overdue timers list by list, not in due order. `ScaledClock` does: it fires a timer only after
 * every Node timer due before it ran, this feed's included, so a served scenario decides in the order of the offline
 * replay (a sample before a deadline is evaluated before it). With a shared intake, engines order samples and timers
 * by the intake's watermark instead (src/streams/jetstream/intake-consumer.ts).
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
