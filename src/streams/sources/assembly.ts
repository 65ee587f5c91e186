import { asyncScheduler, auditTime, filter, groupBy, map, mergeMap, type Observable, type SchedulerLike } from "rxjs";
import type { Catalog, CatalogAsset } from "../../catalog/index.ts";
import type { Clock } from "../../clock.ts";
import { ONE, type Decimal, type OracleEntry, type Sample } from "../../methodology/index.ts";
import type { Leg } from "./legs.ts";

/** Staleness of legs that are not Pyth feeds (Pyth feeds use the catalog's `pyth_staleness_secs`). */
export const LEG_STALENESS_MS = {
  /** Executable market quotes (Jupiter, DEX aggregates). */
  market_usd: 30_000,
  /** Stake-pool rates move once per epoch: treated like redemption-rate feeds (36 h). */
  sol_per_lst: 36 * 3600_000,
  /** Issuer NAVs and redemption values: like redemption-rate feeds (36 h). */
  intrinsic_usd: 36 * 3600_000,
  /** Collateral ratios move with collateral prices. */
  cr: 60_000,
} as const;

/** What one asset needs to form a sample: which legs, by key. */
interface Recipe {
  readonly asset: CatalogAsset;
  /** Market leg: a Pyth feed name (pyth_spot) or the mint (market_usd). */
  readonly market: { readonly pyth: string } | { readonly mint: string };
  /** Intrinsic: fixed 1, SOL per LST x SOL/USD, a Pyth feed (optionally inverted, or times a quote feed), or an issuer value. */
  readonly intrinsic:
    | { readonly kind: "fixed" }
    | { readonly kind: "lst" }
    | { readonly kind: "pyth"; readonly feed: string; readonly invert: boolean; readonly quote: string | null }
    | { readonly kind: "issuer" };
  readonly needsSol: boolean;
  readonly needsCr: boolean;
  /** Every Pyth feed the sample reports as oracle entries (required ones and the asset's cross-check feed). */
  readonly oracleFeeds: readonly string[];
}

const SOL_FEED = "SOL/USD";

function recipeOf(a: CatalogAsset, catalog: Catalog): Recipe {
  const feeds = new Set<string>();
  const market = a.market.kind === "pyth_spot" && a.market.feed !== undefined ? { pyth: a.market.feed } : { mint: a.mint };
  if ("pyth" in market) feeds.add(market.pyth);
  let intrinsic: Recipe["intrinsic"];
  const ik = a.intrinsic.kind;
  if (ik === "fixed_1_usd" || ik === "hylo_cr") intrinsic = { kind: "fixed" };
  else if (ik === "sanctum_lst" || ik === "spl_stake_pool") intrinsic = { kind: "lst" };
  else if ((ik === "pyth_redemption_rate" || ik === "pyth_fx_cross") && a.intrinsic.feed !== undefined) {
    const feed = a.intrinsic.feed;
    // A redemption-rate feed BASE/QUOTE.RR quoted in something other than USD is converted through QUOTE/USD.
    const quoteName = /\/([A-Z0-9]+)\.(?:RR|NAV)$/.exec(feed)?.[1];
    const quote = quoteName !== undefined && quoteName !== "USD" && catalog.pythFeeds.has(`${quoteName}/USD`) ? `${quoteName}/USD` : null;
    intrinsic = { kind: "pyth", feed, invert: a.intrinsic["invert"] === true, quote };
    feeds.add(feed);
    if (quote !== null) feeds.add(quote);
  } else intrinsic = { kind: "issuer" };
  const needsSol = a.class === "lst";
  if (needsSol) feeds.add(SOL_FEED);
  if (a.market.feed !== undefined && a.market.kind !== "pyth_spot") feeds.add(a.market.feed); // numeraire feed
  if (a.oracleFeedId !== null) feeds.add(crossCheckFeed(a));
  return { asset: a, market, intrinsic, needsSol, needsCr: a.thresholdKind === "cr", oracleFeeds: [...feeds] };
}

/** The name under which an asset's own Pyth cross-check feed (its `oracle_feed_id`) is reported: `<SYMBOL>/USD`. */
export function crossCheckFeed(a: CatalogAsset): string {
  return `${a.symbol}/USD`;
}

type PythLeg = Extract<Leg, { kind: "pyth" }>;

/** Latest legs, and the recipes that read them. */
class LegBook {
  readonly pyth = new Map<string, PythLeg>();
  readonly market = new Map<string, Extract<Leg, { kind: "market_usd" }>>();
  readonly sol = new Map<string, Extract<Leg, { kind: "sol_per_lst" }>>();
  readonly issuer = new Map<string, Extract<Leg, { kind: "intrinsic_usd" }>>();
  readonly cr = new Map<string, Extract<Leg, { kind: "cr" }>>();
  readonly byFeed = new Map<string, string[]>();
  readonly byMint = new Map<string, string>();
  readonly recipes = new Map<string, Recipe>();

  constructor(
    assets: readonly CatalogAsset[],
    catalog: Catalog,
    private readonly staleMs: (feed: string) => number,
  ) {
    for (const a of assets) {
      const r = recipeOf(a, catalog);
      this.recipes.set(a.symbol, r);
      this.byMint.set(a.mint, a.symbol);
      for (const f of r.oracleFeeds) {
        const list = this.byFeed.get(f) ?? [];
        list.push(a.symbol);
        this.byFeed.set(f, list);
      }
    }
  }

  /** Records a leg; returns the symbols whose sample it may change. */
  record(leg: Leg): readonly string[] {
    switch (leg.kind) {
      case "pyth":
        this.pyth.set(leg.feed, leg);
        return this.byFeed.get(leg.feed) ?? [];
      case "market_usd":
        this.market.set(leg.mint, leg);
        break;
      case "sol_per_lst":
        this.sol.set(leg.mint, leg);
        break;
      case "intrinsic_usd":
        this.issuer.set(leg.mint, leg);
        break;
      case "cr":
        this.cr.set(leg.mint, leg);
        break;
      case "supply":
        return [];
    }
    const symbol = this.byMint.get(leg.mint);
    return symbol === undefined ? [] : [symbol];
  }

  #freshPyth(feed: string, now: number): PythLeg | null {
    const p = this.pyth.get(feed);
    return p !== undefined && now - p.observed_at <= this.staleMs(feed) && now - p.observed_at >= -5_000 ? p : null;
  }

  #fresh<T extends { observed_at: number }>(leg: T | undefined, maxAgeMs: number, now: number): T | null {
    return leg !== undefined && now - leg.observed_at <= maxAgeMs && now - leg.observed_at >= -5_000 ? leg : null;
  }

  /** The sample of one asset at `now`, or null when a required leg is missing or stale. */
  build(symbol: string, now: number): Sample | null {
    const r = this.recipes.get(symbol);
    if (r === undefined) return null;
    const mint = r.asset.mint;
    let market: Decimal;
    if ("pyth" in r.market) {
      const p = this.#freshPyth(r.market.pyth, now);
      if (p === null) return null;
      market = p.price;
    } else {
      const m = this.#fresh(this.market.get(r.market.mint), LEG_STALENESS_MS.market_usd, now);
      if (m === null) return null;
      market = m.price;
    }
    let sol: PythLeg | null = null;
    if (r.needsSol) {
      sol = this.#freshPyth(SOL_FEED, now);
      if (sol === null || sol.price.isZero()) return null;
    }
    let intrinsic: Decimal;
    let intrinsicSol: Decimal | null = null;
    let intrinsicStale = false;
    switch (r.intrinsic.kind) {
      case "fixed":
        intrinsic = ONE;
        break;
      case "lst": {
        const s = this.#fresh(this.sol.get(mint), LEG_STALENESS_MS.sol_per_lst, now);
        if (s === null || sol === null) return null;
        intrinsicSol = s.sol;
        intrinsic = s.sol.times(sol.price);
        break;
      }
      case "pyth": {
        const p = this.#freshPyth(r.intrinsic.feed, now);
        if (p === null || p.price.isZero()) return null;
        intrinsic = r.intrinsic.invert ? ONE.div(p.price) : p.price;
        if (r.intrinsic.quote !== null) {
          const q = this.#freshPyth(r.intrinsic.quote, now);
          if (q === null) return null;
          intrinsic = intrinsic.times(q.price);
        }
        break;
      }
      case "issuer": {
        const v = this.#fresh(this.issuer.get(mint), LEG_STALENESS_MS.intrinsic_usd, now);
        if (v === null) return null;
        intrinsic = v.value;
        intrinsicStale = v.stale === true;
        break;
      }
    }
    let cr: Decimal | null = null;
    if (r.needsCr) {
      const c = this.#fresh(this.cr.get(mint), LEG_STALENESS_MS.cr, now);
      if (c === null) return null;
      cr = c.cr;
    }
    const oracle: Record<string, OracleEntry> = {};
    for (const f of r.oracleFeeds) {
      const p = this.#freshPyth(f, now);
      if (p !== null) oracle[f] = { price: p.price, conf: p.conf, publish_time: p.observed_at };
    }
    return {
      asset: symbol,
      ts: now,
      intrinsic_usd: intrinsic,
      market_usd: market,
      intrinsic_sol: intrinsicSol,
      market_sol: sol === null ? null : market.div(sol.price),
      cr,
      oracle,
      intrinsic_stale: intrinsicStale,
    };
  }
}

export interface AssemblyOptions {
  readonly assets: readonly CatalogAsset[];
  readonly catalog: Catalog;
  readonly clock: Clock;
  readonly scheduler?: SchedulerLike;
  /** At most one sample per asset per this many ms (latest legs win). Default 1000. */
  readonly throttleMs?: number;
}

/**
 * Sample assembly (issue 3): combines each asset's latest legs (market, intrinsic, SOL/USD numeraire, oracle
 * entries) into methodology samples. A leg older than its staleness (Pyth feeds: the catalog's
 * `pyth_staleness_secs`, 30 s by default, 36 h for redemption-rate feeds, 7 days for NAV feeds; other legs:
 * `LEG_STALENESS_MS`) means no sample; a stale cross-check feed is only left out of `oracle`.
 *
 * Backpressure: lossy and bounded per asset. Legs update a book synchronously; each asset emits at most one sample
 * per `throttleMs` (`auditTime`: the trailing, latest state wins), built from the book at emission time.
 */
export function assembleSamples(legs$: Observable<Leg>, options: AssemblyOptions): Observable<Sample> {
  const scheduler = options.scheduler ?? asyncScheduler;
  const book = new LegBook(options.assets, options.catalog, (feed) => options.catalog.stalenessSecs(feed) * 1000);
  return legs$.pipe(
    mergeMap((leg) => book.record(leg)),
    groupBy((symbol) => symbol),
    mergeMap((group$) => group$.pipe(auditTime(options.throttleMs ?? 1000, scheduler))),
    map((symbol) => book.build(symbol, options.clock.now())),
    filter((s): s is Sample => s !== null),
  );
}

