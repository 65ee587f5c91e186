/**
 * The state of the simulated market and its per-tick step (no RxJS, no clock): `SimMarketModel.tick(now)` advances
 * every process by one tick and returns one sample per asset, in asset order. The path depends only on the seed, the
 * asset list, `tickMs`, `epochMs`, `incidentEveryMs` and the tick count; `now` only stamps `ts` and `publish_time`.
 *
 * Price model per class (every level is an integer unit count turned into a Decimal by `fromUnits`):
 * - SOL/USD: bounded, weakly mean-reverting random walk from 150 (2 bps per sqrt-second), units of 1e-8 (Pyth expo).
 * - lst: a seeded stake-pool rate 1.05-1.35 SOL per token (1e-12 units) that grows 2-4.5 bps each simulated epoch;
 *   intrinsic_sol = rate, market_sol = rate x (1 - spread), USD legs = SOL legs x SOL/USD. The spread is an AR(1)
 *   around a small seeded discount (0 to drift/5), standard deviation drift/10.
 * - stable_fiat / stable_dn / stable_cdp: intrinsic 1, market 1 - spread, spread AR(1) around a seeded bias within
 *   +-drift/10 with standard deviation drift/8 (so |spread| < drift/3 on ~95 % of ticks and never reaches drift).
 *   Collateral-ratio assets also carry `cr`, an AR(1) around 1.6 (sd 0.025).
 * - stable_yield: intrinsic = NAV from 1.0-1.2 accruing 1-3 bps per simulated epoch, market = NAV x (1 - spread).
 * - stable_fx: intrinsic = the FX feed (EUR/USD ~1.08, USD/BRL ~5.5 inverted when the catalog says `invert`), a slow
 *   bounded walk; market = intrinsic x (1 - spread).
 * - synth_lev: NAV moves with SOL times a seeded leverage 2-4; market = NAV x (1 - spread), spread sized to its wide
 *   thresholds like the stables.
 * Oracle entries: one per feed named by the asset's `market.feed` / `intrinsic.feed`, shared by every asset using the
 * feed on that tick; confidence 1.5-3.5 bps of price for major feeds, 5-25 bps for the others, +-40 % per tick.
 */
import type { CatalogAsset } from "../../../catalog/index.ts";
import {
  D,
  ONE,
  ZERO,
  isCrThresholds,
  spreadEntryLevels,
  type AssetClass,
  type Decimal,
  type OracleEntry,
  type Sample,
} from "../../../methodology/index.ts";
import { IncidentDirector, NO_INCIDENTS, type AssetOverlay, type IncidentRecord } from "./incidents.ts";
import { Prng, streamSeed } from "./prng.ts";
import { feedOf, feedsOf, incidentTargetOf } from "./targets.ts";
import { MeanReverting, PriceWalk, discounted, fromUnits } from "./processes.ts";

export interface SimModelOptions {
  readonly assets: readonly CatalogAsset[];
  readonly seed: number;
  /** Milliseconds between ticks (> 0). */
  readonly tickMs: number;
  /** Mean milliseconds between incidents; 0 disables them. */
  readonly incidentEveryMs: number;
  /** Milliseconds per simulated epoch (> 0). */
  readonly epochMs: number;
}

const SOL_FEED = "SOL/USD";
const SOL_SCALE = 8;
const RATE_SCALE = 12;
const FX_SCALE = 8;
/** Decimal places of market prices and confidences: fine enough that rounding never moves a discount by 0.01 bps. */
const MARKET_DP = 12;
const CONF_DP = 12;
/** Feeds quoted tightly on Pyth. */
const MAJOR_FEEDS: ReadonlySet<string> = new Set(["SOL/USD", "USDC/USD", "USDT/USD", "EUR/USD", "USD/BRL"]);
/** Starting FX levels by Pyth feed name (quote units per base unit); unknown pairs start at 1. */
const FX_START: Readonly<Record<string, number>> = {
  "EUR/USD": 1.08,
  "USD/BRL": 5.5,
  "GBP/USD": 1.27,
  "USD/JPY": 150,
  "USD/CHF": 0.88,
  "USD/MXN": 18.5,
};
/** Market spreads never leave (-20 %, +99 %): prices stay positive whatever an incident adds. */
const MIN_SPREAD_MICRO = -200_000;
const MAX_SPREAD_MICRO = 990_000;

type ClassState =
  | { readonly kind: "lst"; rate: number; readonly growthPpm: number }
  | { readonly kind: "usd"; readonly cr: MeanReverting | null }
  | { readonly kind: "yield"; nav: number; readonly growthPpm: number }
  | { readonly kind: "fx"; readonly walk: string; readonly invert: boolean }
  | { readonly kind: "lev"; nav: number; readonly leverage: number; readonly floor: number };

interface AssetSim {
  readonly symbol: string;
  readonly cls: AssetClass;
  readonly rng: Prng;
  readonly spread: MeanReverting;
  readonly state: ClassState;
  /** Sorted, unique feed names the asset's samples carry. */
  readonly feeds: readonly string[];
}

interface Legs {
  readonly intrinsic_usd: Decimal;
  readonly market_usd: Decimal;
  readonly intrinsic_sol: Decimal | null;
  readonly market_sol: Decimal | null;
  readonly cr: Decimal | null;
  /** Market before a $0 print: what a spot feed of this asset shows. */
  readonly healthyMarket: Decimal;
}

type FeedSource =
  | { readonly kind: "sol" }
  | { readonly kind: "spot"; readonly symbol: string }
  | { readonly kind: "fx"; readonly walk: string }
  | { readonly kind: "intrinsic"; readonly symbol: string }
  | { readonly kind: "unit"; readonly spread: MeanReverting };

interface Feed {
  readonly name: string;
  readonly source: FeedSource;
  readonly rng: Prng;
  readonly confPpm: number;
}

/** Per-tick persistence of an AR(1) with the given per-second persistence, for any tick length. */
function persistence(perSecondDecay: number, tickMs: number): number {
  return Math.min(0.999, Math.max(0, 1 - (perSecondDecay * tickMs) / 1000));
}

export class SimMarketModel {
  readonly #opts: SimModelOptions;
  readonly #assets: readonly AssetSim[];
  readonly #feeds: readonly Feed[];
  readonly #solRng: Prng;
  readonly #sol: PriceWalk;
  /** FX walks by feed name (or `fx:<symbol>`), each on its own stream. */
  readonly #fx = new Map<string, { readonly walk: PriceWalk; readonly rng: Prng }>();
  readonly #director: IncidentDirector | null;
  #tick = 0;
  #prevSolUnits: number;

  constructor(options: SimModelOptions) {
    const { seed, tickMs } = options;
    if (!(Number.isSafeInteger(tickMs) && tickMs > 0)) throw new RangeError(`tickMs must be a positive integer, got ${tickMs}`);
    if (!(Number.isSafeInteger(options.epochMs) && options.epochMs > 0)) {
      throw new RangeError(`epochMs must be a positive integer, got ${options.epochMs}`);
    }
    if (!(Number.isFinite(options.incidentEveryMs) && options.incidentEveryMs >= 0)) {
      throw new RangeError(`incidentEveryMs must be 0 or positive, got ${options.incidentEveryMs}`);
    }
    this.#opts = options;
    this.#solRng = new Prng(streamSeed(seed, "sol"));
    const rootSd = Math.sqrt(tickMs / 1000);
    this.#sol = new PriceWalk({ start: 150e8, stepSd: 0.0002 * rootSd, revert: tickMs / 3_600_000, min: 90e8, max: 240e8 });
    this.#prevSolUnits = this.#sol.units;

    const symbols = new Set<string>();
    this.#assets = options.assets.map((a) => {
      if (symbols.has(a.symbol)) throw new Error(`duplicate asset symbol ${a.symbol}`);
      symbols.add(a.symbol);
      return this.#makeAsset(a);
    });
    this.#feeds = this.#makeFeeds(options.assets);

    if (options.incidentEveryMs > 0) {
      const targets = options.assets.map(incidentTargetOf);
      this.#director = new IncidentDirector(targets, new Prng(streamSeed(seed, "incidents")), tickMs, options.incidentEveryMs);
    } else {
      this.#director = null;
    }
  }

  /** Incidents started so far (empty when incidents are disabled). */
  get incidents(): readonly IncidentRecord[] {
    return this.#director?.log ?? [];
  }

  /** Ticks taken so far. */
  get ticks(): number {
    return this.#tick;
  }

  /**
   * Advances the market by one tick and returns one sample per asset (asset order), stamped `now`; an asset in an
   * `outage` incident has none (its processes still step, so its path does not depend on the outage).
   */
  tick(now: number): Sample[] {
    const k = this.#tick++;
    const { tickMs, epochMs } = this.#opts;
    const epochs = k === 0 ? 0 : Math.floor((k * tickMs) / epochMs) - Math.floor(((k - 1) * tickMs) / epochMs);

    this.#prevSolUnits = this.#sol.units;
    if (k > 0) {
      this.#sol.step(this.#solRng);
      for (const fx of this.#fx.values()) fx.walk.step(fx.rng);
    }
    const sol = fromUnits(this.#sol.units, SOL_SCALE);
    const incidents = this.#director?.tick(k) ?? NO_INCIDENTS;

    const legs = new Map<string, Legs>();
    for (const a of this.#assets) legs.set(a.symbol, this.#legs(a, k, epochs, sol, incidents.assets.get(a.symbol)));

    const entries = new Map<string, OracleEntry>();
    for (const f of this.#feeds) {
      const price = this.#feedPrice(f, k, sol, legs);
      const jitter = f.rng.uniform(0.6, 1.4);
      const ppm = incidents.confPpm.get(f.name) ?? Math.round(f.confPpm * jitter);
      const lag = f.rng.int(0, 999);
      const conf = price.times(fromUnits(ppm, 6)).toDecimalPlaces(CONF_DP);
      entries.set(f.name, { price, conf, publish_time: Math.max(0, now - lag) });
    }

    return this.#assets.filter((a) => incidents.assets.get(a.symbol)?.silent !== true).map((a) => {
      const l = legs.get(a.symbol)!;
      const oracle: Record<string, OracleEntry> = {};
      for (const name of a.feeds) oracle[name] = entries.get(name)!;
      return {
        asset: a.symbol,
        ts: now,
        intrinsic_usd: l.intrinsic_usd,
        market_usd: l.market_usd,
        intrinsic_sol: l.intrinsic_sol,
        market_sol: l.market_sol,
        cr: l.cr,
        oracle,
        intrinsic_stale: false,
      };
    });
  }

  #makeAsset(a: CatalogAsset): AssetSim {
    const rng = new Prng(streamSeed(this.#opts.seed, `asset:${a.symbol}`));
    const tickMs = this.#opts.tickMs;
    const drift = spreadEntryLevels(isCrThresholds(a.thresholds) ? {} : a.thresholds).drift;
    const rho = persistence(0.1, tickMs);
    const feeds = feedsOf(a);
    let state: ClassState;
    let spread: MeanReverting;
    switch (a.class) {
      case "lst":
        state = { kind: "lst", rate: Math.round(rng.uniform(1.05, 1.35) * 1e12), growthPpm: rng.int(200, 450) };
        spread = new MeanReverting(rng.uniform(0, drift / 5), drift / 10, rho, rng);
        break;
      case "stable_fiat":
      case "stable_dn":
      case "stable_cdp": {
        const cr = isCrThresholds(a.thresholds)
          ? new MeanReverting(16_000 + rng.uniform(-400, 400), 250, persistence(0.005, tickMs), rng)
          : null;
        state = { kind: "usd", cr };
        spread = new MeanReverting(rng.uniform(-drift / 10, drift / 10), drift / 8, rho, rng);
        break;
      }
      case "stable_yield":
        state = { kind: "yield", nav: Math.round(rng.uniform(1.0, 1.2) * 1e12), growthPpm: rng.int(100, 300) };
        spread = new MeanReverting(rng.uniform(-drift / 10, drift / 10), drift / 8, rho, rng);
        break;
      case "stable_fx": {
        const feed = feedOf(a.intrinsic);
        const walk = feed ?? `fx:${a.symbol}`;
        this.#fxWalk(walk, feed === null ? 1 : (FX_START[feed] ?? 1));
        state = { kind: "fx", walk, invert: a.intrinsic["invert"] === true };
        spread = new MeanReverting(rng.uniform(-drift / 10, drift / 10), drift / 8, rho, rng);
        break;
      }
      case "synth_lev": {
        const nav = Math.round(rng.uniform(0.8, 1.6) * 1e12);
        state = { kind: "lev", nav, leverage: rng.uniform(2, 4), floor: Math.round(nav / 100) };
        spread = new MeanReverting(rng.uniform(-drift / 10, drift / 10), drift / 8, rho, rng);
        break;
      }
    }
    return { symbol: a.symbol, cls: a.class, rng, spread, state, feeds };
  }

  #fxWalk(name: string, level: number): void {
    if (this.#fx.has(name)) return;
    const rng = new Prng(streamSeed(this.#opts.seed, `fx:${name}`));
    const start = Math.round(level * rng.uniform(0.995, 1.005) * 10 ** FX_SCALE);
    const stepSd = 0.00002 * Math.sqrt(this.#opts.tickMs / 1000);
    const revert = this.#opts.tickMs / 7_200_000;
    const walk = new PriceWalk({ start, stepSd, revert, min: Math.round(start * 0.92), max: Math.round(start * 1.08) });
    this.#fx.set(name, { walk, rng });
  }

  #makeFeeds(assets: readonly CatalogAsset[]): Feed[] {
    const sources = new Map<string, FeedSource>();
    const offer = (name: string, source: FeedSource, rank: number, ranks: Map<string, number>): void => {
      if ((ranks.get(name) ?? Infinity) <= rank) return;
      ranks.set(name, rank);
      sources.set(name, source);
    };
    const ranks = new Map<string, number>();
    for (const a of assets) {
      const market = feedOf(a.market);
      const intrinsic = feedOf(a.intrinsic);
      if (market !== null) {
        if (market === SOL_FEED) offer(market, { kind: "sol" }, 0, ranks);
        else if (a.market.kind === "pyth_spot") offer(market, { kind: "spot", symbol: a.symbol }, 1, ranks);
      }
      if (intrinsic !== null) {
        if (intrinsic === SOL_FEED) offer(intrinsic, { kind: "sol" }, 0, ranks);
        else if (a.class === "stable_fx") offer(intrinsic, { kind: "fx", walk: intrinsic }, 2, ranks);
        else offer(intrinsic, { kind: "intrinsic", symbol: a.symbol }, 3, ranks);
      }
    }
    const names = [...new Set(this.#assets.flatMap((a) => a.feeds))].sort();
    return names.map((name) => {
      const rng = new Prng(streamSeed(this.#opts.seed, `feed:${name}`));
      const confPpm = MAJOR_FEEDS.has(name) ? rng.int(150, 350) : rng.int(500, 2500);
      // A quote feed no tracked asset prices (e.g. USDC/USD without USDC) gets its own tight noise around 1.
      const source = sources.get(name) ?? { kind: "unit", spread: new MeanReverting(0, 1, persistence(0.1, this.#opts.tickMs), rng) };
      return { name, source, rng, confPpm };
    });
  }

  #feedPrice(f: Feed, k: number, sol: Decimal, legs: ReadonlyMap<string, Legs>): Decimal {
    const s = f.source;
    switch (s.kind) {
      case "sol":
        return sol;
      case "spot":
        return legs.get(s.symbol)!.healthyMarket;
      case "intrinsic":
        return legs.get(s.symbol)!.intrinsic_usd;
      case "fx":
        return fromUnits(this.#fx.get(s.walk)!.walk.units, FX_SCALE);
      case "unit":
        if (k > 0) s.spread.step(f.rng);
        return fromUnits(1_000_000 - Math.round(s.spread.value * 100), 6);
    }
  }

  #legs(a: AssetSim, k: number, epochs: number, sol: Decimal, overlay: AssetOverlay | undefined): Legs {
    if (k > 0) a.spread.step(a.rng);
    const micro = Math.min(MAX_SPREAD_MICRO, Math.max(MIN_SPREAD_MICRO, Math.round(a.spread.value * 100) + (overlay?.spreadMicro ?? 0)));
    const zero = overlay?.zeroMarket === true;
    const factor = overlay?.intrinsicFactor ?? 1;
    const { tickMs, epochMs } = this.#opts;
    const st = a.state;
    switch (st.kind) {
      case "lst": {
        for (let e = 0; e < epochs; e++) st.rate += Math.round((st.rate * st.growthPpm) / 1e6);
        const intrinsicSol = fromUnits(st.rate, RATE_SCALE);
        const marketSol = discounted(intrinsicSol, micro).toDecimalPlaces(MARKET_DP);
        const healthy = marketSol.times(sol).toDecimalPlaces(MARKET_DP);
        return {
          intrinsic_usd: intrinsicSol.times(sol).toDecimalPlaces(MARKET_DP),
          market_usd: zero ? ZERO : healthy,
          intrinsic_sol: intrinsicSol,
          market_sol: zero ? ZERO : marketSol,
          cr: null,
          healthyMarket: healthy,
        };
      }
      case "usd": {
        const healthy = fromUnits(1_000_000 - micro, 6);
        let cr: Decimal | null = null;
        if (st.cr !== null) {
          if (k > 0) st.cr.step(a.rng);
          let units = st.cr.value;
          const target = overlay?.crTargetPct ?? null;
          if (target !== null) units -= (overlay?.crWeight ?? 0) * (units - target * 100);
          cr = fromUnits(Math.max(1, Math.round(units)), 4);
        }
        return { intrinsic_usd: ONE, market_usd: zero ? ZERO : healthy, intrinsic_sol: null, market_sol: null, cr, healthyMarket: healthy };
      }
      case "yield": {
        if (k > 0) st.nav += Math.round((st.nav * st.growthPpm * tickMs) / (1e6 * epochMs));
        const nav = fromUnits(st.nav, RATE_SCALE);
        const healthy = discounted(nav, micro).toDecimalPlaces(MARKET_DP);
        return {
          intrinsic_usd: factor === 1 ? nav : nav.times(new D(factor.toFixed(0))),
          market_usd: zero ? ZERO : healthy,
          intrinsic_sol: null,
          market_sol: null,
          cr: null,
          healthyMarket: healthy,
        };
      }
      case "fx": {
        const rate = fromUnits(this.#fx.get(st.walk)!.walk.units, FX_SCALE);
        const intrinsic = st.invert ? ONE.div(rate).toDecimalPlaces(MARKET_DP) : rate;
        const healthy = discounted(intrinsic, micro).toDecimalPlaces(MARKET_DP);
        return { intrinsic_usd: intrinsic, market_usd: zero ? ZERO : healthy, intrinsic_sol: null, market_sol: null, cr: null, healthyMarket: healthy };
      }
      case "lev": {
        if (k > 0) {
          const ret = (this.#sol.units - this.#prevSolUnits) / this.#prevSolUnits;
          st.nav = Math.max(st.floor, Math.round(st.nav * (1 + st.leverage * ret)));
        }
        const nav = fromUnits(st.nav, RATE_SCALE);
        const healthy = discounted(nav, micro).toDecimalPlaces(MARKET_DP);
        return { intrinsic_usd: nav, market_usd: zero ? ZERO : healthy, intrinsic_sol: null, market_sol: null, cr: null, healthyMarket: healthy };
      }
    }
  }
}
