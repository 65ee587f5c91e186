/**
 * The simulated market (`FEED=sim`, the default feed): a seeded, deterministic market for every asset given, with
 * occasional incidents (the first within a minute), so a newcomer sees every state and card field the service
 * publishes; `simulatedSupply` adds the circulating supplies.
 *
 * Backpressure policy: the source is a cold, timer-driven Observable. Each subscription builds its own market from
 * the seed and emits a bounded burst per tick: one sample per asset (none for an asset in an `outage` incident),
 * synchronously, in asset order. The feed itself is lossless (it neither buffers nor drops); a consumer must process
 * each burst synchronously (as `ActorHost.ingest` does) or apply its own lossy policy, e.g. latest-wins per asset with
 * `groupBy` + `sampleTime`.
 * With the default asyncScheduler a slow synchronous consumer delays the next tick; missed periods are not queued.
 *
 * The price model per class, the incident shapes and the supplies are documented in `model.ts`, `incidents.ts` and
 * `supply.ts`.
 */
import { asyncScheduler, defer, timer, concatMap, type Observable, type SchedulerLike } from "rxjs";
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
  const scheduler = options.scheduler ?? asyncScheduler;
  const { clock } = options;
  return defer(() => {
    const model = new SimMarketModel(modelOptions);
    return timer(0, modelOptions.tickMs, scheduler).pipe(concatMap(() => model.tick(clock.now())));
  });
}
