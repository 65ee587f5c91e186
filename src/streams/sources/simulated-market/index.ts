/**
 * The simulated market (`FEED=sim`, the default feed): a seeded, deterministic market for every asset given, with
 * occasional incidents (the first within a minute), so a newcomer sees every state and card field the service
 * publishes; `simulatedSupply` adds the circulating supplies.
 *
 * Backpressure policy: the source is a cold, timer-driven Observable. Each subscription builds its own market from
 * the seed and emits a bounded burst per tick: one sample per asset (none for an asset in an `outage` incident), in
 * asset order. The feed neither buffers nor drops a sample it has produced. By default a tick's burst is synchronous,
 * and a consumer must process it synchronously (as `ActorHost.ingest` does). With `sliceSize` the burst is emitted in
 * slices of that many samples, each after a zero-delay hop on the scheduler, so a consumer's I/O (acknowledgements,
 * HTTP) is served while thousands of samples of one tick are evaluated. A tick that comes due while the previous
 * one's slices are still being emitted runs right after them (at its own, later instant); a second one meanwhile is
 * skipped, not queued, and so is a tick when `admit()` says the consumer is behind: the market then produces fewer
 * samples instead of anyone dropping them (`onSkip` counts it).
 *
 * The price model per class, the incident shapes and the supplies are documented in `model.ts`, `incidents.ts` and
 * `supply.ts`.
 */
import { asyncScheduler, Observable, timer, type SchedulerLike, type Subscription } from "rxjs";
import type { CatalogAsset } from "../../../catalog/index.ts";
import type { Clock } from "../../../clock.ts";
import type { Sample } from "../../../methodology/index.ts";
import { SimMarketModel } from "./model.ts";

export { SimMarketModel, type SimModelOptions } from "./model.ts";
export { INCIDENT_KINDS, type DepegSeverity, type IncidentKind, type IncidentRecord } from "./incidents.ts";
export { SIM_DEFAULT_SUPPLY_EVERY_MS, SimSupplyModel, simulatedSupply, type SimSupplyOptions } from "./supply.ts";

/** Default tick: one sample per asset per second. */
export const SIM_DEFAULT_TICK_MS = 1000;
/** Default mean time between incidents: 10 minutes. */
export const SIM_DEFAULT_INCIDENT_EVERY_MS = 10 * 60_000;
/**
 * Default simulated epoch: 5 minutes stand for a ~2-day Solana epoch, so stake-pool rates step up visibly (2-4.5 bps
 * per epoch, a realistic per-epoch yield) within a demo session.
 */
export const SIM_DEFAULT_EPOCH_MS = 5 * 60_000;

export interface SimOptions {
  /** The assets to simulate (the active catalog assets). Symbols must be unique. */
  readonly assets: readonly CatalogAsset[];
  /** Any integer; the same seed and the same scheduler times give an identical sample sequence. */
  readonly seed: number;
  /** Stamps every sample: `ts = clock.now()` at emission (and oracle `publish_time` up to 1 s before). */
  readonly clock: Clock;
  /** Drives the tick timer. Default `asyncScheduler`; tests pass a TestScheduler. */
  readonly scheduler?: SchedulerLike;
  /** Milliseconds between ticks, a positive integer. Default 1000. The first tick fires at subscription. */
  readonly tickMs?: number;
  /** Mean milliseconds between incidents. Default 10 minutes; 0 disables incidents. */
  readonly incidentEveryMs?: number;
  /** Milliseconds per simulated stake/NAV epoch. Default 5 minutes. */
  readonly epochMs?: number;
  /** Samples per slice of a tick's burst, a positive integer; between slices the feed yields. Default: no slicing. */
  readonly sliceSize?: number;
  /** Asked at every tick: false skips it (the consumer is behind). Default: every tick is admitted. */
  readonly admit?: () => boolean;
  /** Told each skipped tick, and why: `behind` (`admit()` said no) or `busy` (a late tick was already waiting). */
  readonly onSkip?: (why: "behind" | "busy") => void;
}

/**
 * A cold Observable of simulated samples: at subscription and every `tickMs` after, one sample per asset. Options are
 * validated eagerly (a RangeError here, not at subscription).
 */
export function simulatedMarket(options: SimOptions): Observable<Sample> {
  const modelOptions = {
    assets: options.assets,
    seed: options.seed,
    tickMs: options.tickMs ?? SIM_DEFAULT_TICK_MS,
    incidentEveryMs: options.incidentEveryMs ?? SIM_DEFAULT_INCIDENT_EVERY_MS,
    epochMs: options.epochMs ?? SIM_DEFAULT_EPOCH_MS,
  };
  // Fail fast on bad options; each subscriber still gets a fresh model below.
  void new SimMarketModel(modelOptions);
  const sliceSize = options.sliceSize ?? Infinity;
  if (sliceSize !== Infinity && !(Number.isSafeInteger(sliceSize) && sliceSize > 0)) throw new RangeError("sliceSize must be a positive integer");
  const scheduler = options.scheduler ?? asyncScheduler;
  const { clock, admit, onSkip } = options;
  return new Observable<Sample>((subscriber) => {
    const model = new SimMarketModel(modelOptions);
    // The hop to the tick's next slice (or to a tick that came due meanwhile), while a tick's slices are emitted.
    let slicing: Subscription | null = null;
    // A tick came due while the previous one was still being emitted: it runs right after, at its own instant.
    let late = false;
    const runTick = () => {
      if (admit !== undefined && !admit()) return onSkip?.("behind");
      const samples = model.tick(clock.now());
      let next = 0;
      const emitSlice = () => {
        slicing = null;
        const end = Math.min(next + sliceSize, samples.length);
        while (next < end && !subscriber.closed) subscriber.next(samples[next++]!);
        if (subscriber.closed) return;
        if (next < samples.length) slicing = scheduler.schedule(emitSlice);
        else if (late) {
          late = false;
          slicing = scheduler.schedule(() => {
            slicing = null;
            runTick();
          });
        }
      };
      emitSlice();
    };
    // One late tick at most: a second one due while a tick is still emitted is skipped.
    const ticks = timer(0, modelOptions.tickMs, scheduler).subscribe(() => {
      if (slicing === null) return runTick();
      if (late) return onSkip?.("busy");
      late = true;
    });
    return () => {
      ticks.unsubscribe();
      (slicing as Subscription | null)?.unsubscribe();
    };
  });
}
