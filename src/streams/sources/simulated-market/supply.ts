/**
 * Simulated circulating supplies (`FEED=sim`): `supply` legs, the kind the live Solana RPC source emits from
 * `getTokenSupply`, so the cards' `circulating_supply` and `market_cap` are filled through the same path
 * (`SupplyBook` -> sample projector -> snapshot) in the embedded default as in production.
 *
 * Size per asset, from its own seeded stream (independent of the price paths): a mantissa 1-10 times a power of ten
 * drawn from a range by class and by whether the catalog gives the asset a Pyth cross-check feed (a listed asset is a
 * larger one). USD-priced tokens with a feed: 1e7-1e10 tokens; without: 1e5-1e8; LSTs (priced ~150-300 USD): 1e5-1e7
 * with a feed, 1e4-1e6 without. Then mints and redemptions: a bounded, weakly mean-reverting walk, 5 bps standard
 * deviation per step, within +-10 % of the start. Every level is an integer count of 10^-scale tokens (scale =
 * min(decimals, 4)), so no float reaches a Decimal.
 *
 * Backpressure: like the simulated market, a cold timer-driven Observable emitting one bounded burst (one leg per
 * asset) at subscription and every `intervalMs`; lossless, and the consumer (`SupplyBook.record`) is synchronous.
 */
import { asyncScheduler, concatMap, defer, timer, type Observable, type SchedulerLike } from "rxjs";
import type { CatalogAsset } from "../../../catalog/index.ts";
import type { Clock } from "../../../clock.ts";
import type { SupplyLeg } from "../legs.ts";
import { Prng, streamSeed } from "./prng.ts";
import { PriceWalk, fromUnits } from "./processes.ts";

/** Default: one supply reading per asset per minute (the live source reads every 10 minutes). */
export const SIM_DEFAULT_SUPPLY_EVERY_MS = 60_000;

export interface SimSupplyOptions {
  /** The assets to simulate (the active catalog assets). */
  readonly assets: readonly CatalogAsset[];
  /** The simulated market's seed: the same seed gives the same supplies. */
  readonly seed: number;
  /** Stamps every leg: `observed_at = clock.now()` at emission. */
  readonly clock: Clock;
  /** Drives the timer. Default `asyncScheduler`; tests pass a TestScheduler. */
  readonly scheduler?: SchedulerLike;
  /** Milliseconds between readings, a positive integer. Default 60 000. The first reading is at subscription. */
  readonly intervalMs?: number;
}

/** Decades of the starting supply, [lowest, highest] power of ten of the whole-token count. */
function decades(a: CatalogAsset): readonly [number, number] {
  const listed = a.oracleFeedId !== null;
  if (a.class === "lst") return listed ? [5, 6] : [4, 5];
  return listed ? [7, 9] : [5, 7];
}

/** 10^n by multiplication: exact for n <= 22, with no `Math.pow` (see prng.ts on bit-identical draws). */
function pow10(n: number): number {
  let p = 1;
  for (let i = 0; i < n; i++) p *= 10;
  return p;
}

interface AssetSupply {
  readonly mint: string;
  readonly scale: number;
  readonly walk: PriceWalk;
  readonly rng: Prng;
}

/** The supplies of a set of assets and their per-reading step (no RxJS, no clock). */
export class SimSupplyModel {
  readonly #assets: readonly AssetSupply[];
  #readings = 0;

  constructor(assets: readonly CatalogAsset[], seed: number) {
    this.#assets = assets.map((a) => {
      const rng = new Prng(streamSeed(seed, `supply:${a.symbol}`));
      const scale = Math.min(a.decimals, 4);
      const [lo, hi] = decades(a);
      const start = Math.round(rng.uniform(1, 10) * pow10(rng.int(lo, hi) + scale));
      const walk = new PriceWalk({ start, stepSd: 0.0005, revert: 0.01, min: Math.round(start * 0.9), max: Math.round(start * 1.1) });
      return { mint: a.mint, scale, walk, rng };
    });
  }

  /** One leg per asset, in asset order: the starting supplies on the first call, one walk step later on each next. */
  tick(now: number): SupplyLeg[] {
    const first = this.#readings++ === 0;
    return this.#assets.map((s) => {
      if (!first) s.walk.step(s.rng);
      return { kind: "supply", mint: s.mint, supply: fromUnits(s.walk.units, s.scale), observed_at: now };
    });
  }
}

/** A cold Observable of simulated `supply` legs: at subscription and every `intervalMs`, one per asset. */
export function simulatedSupply(options: SimSupplyOptions): Observable<SupplyLeg> {
  const intervalMs = options.intervalMs ?? SIM_DEFAULT_SUPPLY_EVERY_MS;
  if (!(Number.isSafeInteger(intervalMs) && intervalMs > 0)) throw new RangeError(`intervalMs must be a positive integer, got ${intervalMs}`);
  const scheduler = options.scheduler ?? asyncScheduler;
  const { clock } = options;
  return defer(() => {
    const model = new SimSupplyModel(options.assets, options.seed);
    return timer(0, intervalMs, scheduler).pipe(concatMap(() => model.tick(clock.now())));
  });
}
