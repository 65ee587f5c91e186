/**
 * Incidents of the simulated market: seeded, Poisson-ish events that each hit one asset (or one oracle feed) for a
 * while, so a viewer sees every state and every card field the service can publish, the first of them within a minute
 * of starting the service.
 *
 * Shapes:
 * - `depeg`: the market discount ramps in (45-90 s), holds (60-120 s) and ramps out (90-150 s). The peak sits between
 *   drift and depeg (`drift` severity), past depeg (`depeg`) or past critical (`critical`). Collateral-ratio assets
 *   instead see their CR fall into the matching CR band (with a small market discount alongside). A share of depegs
 *   is `long`: a drift or depeg level held 17-25 minutes, longer than the card's default `sustained` window (900 s),
 *   so `sustained: true` shows up.
 * - `oracle_conf`: one Pyth feed's confidence widens to 6-15 % of price for 45-75 s (oracle_confidence gate). Feeds
 *   used by a single asset are preferred, so one incident does not blank a whole class.
 * - `oracle_wide`: a feed the API joins to an asset's oracle check widens to 1.5-4 % of price for 2-6 minutes: past
 *   the card's `oracle_confidence_wide` level (1 %), under the 5 % gate, so the card carries `oracle_degraded` and
 *   the confidence drops to `low` while the state stays put.
 * - `zero_print`: a single $0 market print (implausible: the engine skips it).
 * - `garbage_nav`: a stable_yield NAV printed 500-8000x too high for 3-5 s (discount_sanity gate).
 * - `outage`: one asset's source stops publishing for 17-28 minutes. The card shows `oracle_degraded`
 *   (`oracle_stale`) once its oracle entry is older than the feed's staleness, and `state_reason: "stale_source"`
 *   once its snapshot is older than the API's 15 minutes.
 *
 * Timing: each tick starts an incident with probability tickMs / meanMs (a Bernoulli approximation of a Poisson
 * process). Concurrency is bounded: at most 3 short incidents, 2 long depegs and 1 outage at once. The first incident
 * is always a long depeg past the depeg level with a fast onset (6-10 s), forced no later than a seeded instant 3-12 s
 * after start, so the first transition (30 s entry dwell) comes within the first minute whatever the configured rate.
 * The next ones come at the configured rate and first make a tour of every kind once (the outage first, since its
 * `stale_source` takes 15 minutes to show; the rest in a seeded order), so every kind has shown after about six mean
 * intervals (rarely more than twelve); then kinds are drawn by weight.
 */
import type { Prng } from "./prng.ts";

export const INCIDENT_KINDS = ["depeg", "oracle_conf", "oracle_wide", "zero_print", "garbage_nav", "outage"] as const;
export type IncidentKind = (typeof INCIDENT_KINDS)[number];
export type DepegSeverity = "drift" | "depeg" | "critical";

/** What the director needs to know of an asset. Levels are entry thresholds (bps, or CR in whole percent). */
export interface IncidentTarget {
  readonly symbol: string;
  /** Asset class: incidents pick a class first, then an asset of it. */
  readonly group: string;
  readonly yieldBearing: boolean;
  readonly spread: { readonly drift: number; readonly depeg: number; readonly critical: number; readonly blackSwan: number };
  readonly cr: { readonly drift: number; readonly depeg: number; readonly critical: number; readonly blackSwan: number } | null;
  /** Pyth feed names the asset's samples carry. */
  readonly feeds: readonly string[];
  /** The carried feed the API joins to the asset's oracle check (`oracle_degraded`), or null when none is. */
  readonly watchedFeed: string | null;
}

/** A started incident, for logs and tests. Ticks are indices since subscription; `endTick` is exclusive. */
export interface IncidentRecord {
  readonly kind: IncidentKind;
  /** The asset hit (for `oracle_conf` and `oracle_wide`, the first user of the feed). */
  readonly asset: string;
  readonly startTick: number;
  readonly endTick: number;
  readonly severity?: DepegSeverity;
  /** A depeg held long enough to count as sustained at the default 900 s. */
  readonly long?: boolean;
  /** Peak extra market discount in bps (`depeg`). */
  readonly peakBps?: number;
  /** CR floor in whole percent (`depeg` of a collateral-ratio asset). */
  readonly crTargetPct?: number;
  /** Feed and confidence in ppm of price (`oracle_conf`, `oracle_wide`). */
  readonly feed?: string;
  readonly confPpm?: number;
  /** NAV multiplier (`garbage_nav`). */
  readonly factor?: number;
}

/** How one asset is perturbed on one tick. */
export interface AssetOverlay {
  /** Extra market discount in micro-units (1e-6 = 0.01 bps). */
  readonly spreadMicro: number;
  /** Fraction 0..1 of the way from the organic CR to `crTargetPct`. */
  readonly crWeight: number;
  readonly crTargetPct: number | null;
  readonly zeroMarket: boolean;
  /** Integer multiplier of the intrinsic (NAV) leg; 1 when healthy. */
  readonly intrinsicFactor: number;
  /** No sample this tick (`outage`). */
  readonly silent: boolean;
}

export interface TickIncidents {
  readonly assets: ReadonlyMap<string, AssetOverlay>;
  /** Feed name -> confidence in ppm of price while blown out. */
  readonly confPpm: ReadonlyMap<string, number>;
}

export const NO_INCIDENTS: TickIncidents = { assets: new Map(), confPpm: new Map() };

/** Crude shares of each kind among incidents (a kind with no eligible target falls back to `depeg`). */
const KIND_WEIGHTS: readonly (readonly [IncidentKind, number])[] = [
  ["depeg", 0.4],
  ["oracle_conf", 0.12],
  ["oracle_wide", 0.15],
  ["zero_print", 0.1],
  ["garbage_nav", 0.1],
  ["outage", 0.13],
];
const SEVERITY_WEIGHTS: readonly (readonly [DepegSeverity, number])[] = [
  ["drift", 0.15],
  ["depeg", 0.55],
  ["critical", 0.3],
];
/** A long episode is a slow bleed, not a crash. */
const LONG_SEVERITY_WEIGHTS: readonly (readonly [DepegSeverity, number])[] = [
  ["drift", 0.4],
  ["depeg", 0.6],
];
/** Share of depegs (after the first) that are long. */
const LONG_SHARE = 0.3;
/** Hold of a long depeg: past the default SUSTAINED_SECS (900 s) even after the 30 s entry dwell. */
const LONG_HOLD_MS = [17 * 60_000, 25 * 60_000] as const;
/** An outage outlasts the API's 15-minute staleness, so the card turns `stale_source`. */
const OUTAGE_MS = [17 * 60_000, 28 * 60_000] as const;
/** The first incident: forced within this window after start, with this ramp-in. */
const FIRST_AT_MS = [3_000, 12_000] as const;
const FIRST_RAMP_IN_MS = [6_000, 10_000] as const;
/** A depeg deeper than this is no longer a "peg" story; it also keeps market prices well above 0. */
const MAX_PEAK_BPS = 9000;
/** Bounded concurrency: a demo with every asset in trouble at once teaches nothing. Short incidents at once: */
const MAX_SHORT = 3;
/** Besides them, long depegs and outages at once. */
const MAX_LONG_DEPEGS = 2;
const MAX_OUTAGES = 1;
/** The tour (each kind once, after the first incident) opens with an outage; the other kinds follow in a seeded order. */
const TOUR_FIRST: IncidentKind = "outage";

const HEALTHY: AssetOverlay = { spreadMicro: 0, crWeight: 0, crTargetPct: null, zeroMarket: false, intrinsicFactor: 1, silent: false };

interface Active {
  readonly record: IncidentRecord;
  /** Assets this incident occupies (all users of a blown-out feed). */
  readonly assets: readonly string[];
  readonly rampIn: number;
  readonly hold: number;
  readonly rampOut: number;
}

function weighted<T>(rng: Prng, table: readonly (readonly [T, number])[]): T {
  const total = table.reduce((s, [, w]) => s + w, 0);
  let u = rng.next() * total;
  for (const [item, w] of table) {
    if (u < w) return item;
    u -= w;
  }
  return table[table.length - 1]![0];
}

const lerp = (a: number, b: number, t: number): number => a + (b - a) * t;
const isLong = (a: Active): boolean => a.record.long === true || a.record.kind === "outage";

/** A seeded Fisher-Yates shuffle. */
function shuffled<T>(rng: Prng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export class IncidentDirector {
  readonly #targets: readonly IncidentTarget[];
  readonly #feedUsers: ReadonlyMap<string, readonly string[]>;
  readonly #watched: ReadonlySet<string>;
  readonly #rng: Prng;
  readonly #tickMs: number;
  readonly #perTick: number;
  readonly #firstBy: number;
  /** Kinds still to show once each, in order: the outage first (its stale_source needs 15 minutes), then the rest. */
  readonly #tour: IncidentKind[];
  readonly #active: Active[] = [];
  readonly #log: IncidentRecord[] = [];

  constructor(targets: readonly IncidentTarget[], rng: Prng, tickMs: number, meanMs: number) {
    this.#targets = targets;
    const users = new Map<string, string[]>();
    // Appended in place: a copy per target made this quadratic in the assets sharing a feed (0.15 s per model at
    // 10,000 assets, built again at every intake take-over, its event loop blocked meanwhile).
    for (const t of targets) {
      for (const f of t.feeds) {
        const list = users.get(f);
        if (list === undefined) users.set(f, [t.symbol]);
        else list.push(t.symbol);
      }
    }
    this.#feedUsers = users;
    this.#watched = new Set(targets.flatMap((t) => (t.watchedFeed === null ? [] : [t.watchedFeed])));
    this.#rng = rng;
    this.#tickMs = tickMs;
    this.#perTick = Math.min(1, tickMs / meanMs);
    // Never on tick 0: the engine's first sample only initialises an asset.
    this.#firstBy = Math.max(1, Math.round(rng.uniform(FIRST_AT_MS[0], FIRST_AT_MS[1]) / tickMs));
    // Only kinds these targets can ever show (a subset of the catalog may have no yield asset or no watched feed).
    const possible = (x: IncidentKind): boolean =>
      (x !== "garbage_nav" || targets.some((t) => t.yieldBearing)) &&
      (x !== "oracle_wide" || this.#watched.size > 0) &&
      (x !== "oracle_conf" || users.size > 0);
    this.#tour = [TOUR_FIRST, ...shuffled(rng, INCIDENT_KINDS.filter((x) => x !== TOUR_FIRST))].filter(possible);
  }

  /** Every incident started so far, in start order. */
  get log(): readonly IncidentRecord[] {
    return this.#log;
  }

  /** Retires finished incidents, maybe starts one, and returns this tick's perturbations. */
  tick(k: number): TickIncidents {
    for (let i = this.#active.length - 1; i >= 0; i--) if (this.#active[i]!.record.endTick <= k) this.#active.splice(i, 1);
    // Drawn on every tick (even when nothing may start) so the schedule is a pure function of seed and tick count.
    const fire = this.#rng.chance(this.#perTick);
    if (k > 0 && this.#targets.length > 0) {
      if (this.#log.length === 0) {
        if (fire || k >= this.#firstBy) this.#startFirst(k);
      } else if (fire) {
        // The tour: every kind once, in order, at the configured rate; then the weighted draw.
        const touring = this.#tour.length > 0;
        const started = this.#start(k, touring ? this.#tour[0]! : weighted(this.#rng, KIND_WEIGHTS), touring);
        if (touring && started) this.#tour.shift();
      }
    }
    if (this.#active.length === 0) return NO_INCIDENTS;
    const assets = new Map<string, AssetOverlay>();
    const confPpm = new Map<string, number>();
    for (const a of this.#active) {
      const r = a.record;
      const t = (k - r.startTick) * this.#tickMs;
      switch (r.kind) {
        case "depeg": {
          const w = t < a.rampIn ? t / a.rampIn : t < a.rampIn + a.hold ? 1 : Math.max(0, 1 - (t - a.rampIn - a.hold) / a.rampOut);
          assets.set(r.asset, { ...HEALTHY, spreadMicro: Math.round(w * (r.peakBps ?? 0) * 100), crWeight: w, crTargetPct: r.crTargetPct ?? null });
          break;
        }
        case "zero_print":
          assets.set(r.asset, { ...HEALTHY, zeroMarket: true });
          break;
        case "garbage_nav":
          assets.set(r.asset, { ...HEALTHY, intrinsicFactor: r.factor ?? 1 });
          break;
        case "outage":
          assets.set(r.asset, { ...HEALTHY, silent: true });
          break;
        case "oracle_conf":
        case "oracle_wide":
          confPpm.set(r.feed!, r.confPpm!);
          break;
      }
    }
    return { assets, confPpm };
  }

  #busy(): Set<string> {
    return new Set(this.#active.flatMap((a) => a.assets));
  }

  #free(): IncidentTarget[] {
    const busy = this.#busy();
    return this.#targets.filter((t) => !busy.has(t.symbol));
  }

  /** Feeds (within `only`, if given) none of whose users is busy: the single-user ones when there are any. */
  #freeFeeds(only: ReadonlySet<string> | null): (readonly [string, readonly string[]])[] {
    const busy = this.#busy();
    const feeds = [...this.#feedUsers].filter(([f, users]) => (only === null || only.has(f)) && users.every((u) => !busy.has(u)));
    const single = feeds.filter(([, users]) => users.length === 1);
    return single.length > 0 ? single : feeds;
  }

  #startFirst(k: number): void {
    const free = this.#free();
    if (free.length === 0) return;
    const rampIn = this.#rng.uniform(FIRST_RAMP_IN_MS[0], FIRST_RAMP_IN_MS[1]);
    this.#startDepeg(k, this.#pickByClass(free), true, rampIn, "depeg");
  }

  /** Starts an incident of (about) the wanted kind; false when none could start (every slot or target busy). */
  #start(k: number, wanted: IncidentKind, touring: boolean): boolean {
    const rng = this.#rng;
    const free = this.#free();
    if (free.length === 0) return false;
    const count = (p: (a: Active) => boolean): number => this.#active.filter(p).length;
    const shortFree = count((a) => !isLong(a)) < MAX_SHORT;
    let kind = wanted;

    if (kind === "outage" && count((a) => a.record.kind === "outage") < MAX_OUTAGES) {
      // On the tour (and for half of the others) the outage hits an asset whose card joins an oracle entry, which
      // then shows `oracle_stale` as well.
      const watched = free.filter((t) => t.watchedFeed !== null);
      const target = this.#pickByClass((touring || rng.chance(0.5)) && watched.length > 0 ? watched : free);
      const end = k + Math.max(1, Math.round(rng.uniform(OUTAGE_MS[0], OUTAGE_MS[1]) / this.#tickMs));
      return this.#push({ record: { kind, asset: target.symbol, startTick: k, endTick: end }, assets: [target.symbol], rampIn: 0, hold: 0, rampOut: 0 });
    }
    if (kind === "depeg" || kind === "outage") {
      const long = rng.chance(LONG_SHARE) && count((a) => a.record.long === true) < MAX_LONG_DEPEGS;
      if (!long && !shortFree) return false;
      this.#startDepeg(k, this.#pickByClass(free), long, rng.uniform(45_000, 90_000));
      return kind === "depeg";
    }
    if (!shortFree) return false;
    if (kind === "oracle_conf" || kind === "oracle_wide") {
      const pool = this.#freeFeeds(kind === "oracle_wide" ? this.#watched : null);
      if (pool.length > 0) {
        const [feed, users] = rng.pick(pool);
        const [lo, hi] = kind === "oracle_conf" ? [45_000, 75_000] : [120_000, 360_000];
        const end = k + Math.max(1, Math.round(rng.uniform(lo, hi) / this.#tickMs));
        const confPpm = kind === "oracle_conf" ? rng.int(60_000, 150_000) : rng.int(15_000, 40_000);
        return this.#push({ record: { kind, asset: users[0]!, startTick: k, endTick: end, feed, confPpm }, assets: users, rampIn: 0, hold: 0, rampOut: 0 });
      }
      kind = "depeg";
    }
    if (kind === "garbage_nav") {
      const yieldAssets = free.filter((t) => t.yieldBearing);
      if (yieldAssets.length > 0) {
        const target = rng.pick(yieldAssets);
        // Short on purpose: at 1 s ticks the EWMA is back under drift before the 30 s escalation dwell matures, so
        // the print shows as a brief UNKNOWN (discount_sanity) and never commits a band.
        const end = k + Math.max(1, Math.round(rng.uniform(3000, 5500) / this.#tickMs));
        const record: IncidentRecord = { kind, asset: target.symbol, startTick: k, endTick: end, factor: rng.int(500, 8000) };
        return this.#push({ record, assets: [target.symbol], rampIn: 0, hold: 0, rampOut: 0 });
      }
      kind = "depeg";
    }
    const target = this.#pickByClass(free);
    if (kind === "zero_print") {
      return this.#push({ record: { kind, asset: target.symbol, startTick: k, endTick: k + 1 }, assets: [target.symbol], rampIn: 0, hold: 0, rampOut: 0 });
    }
    // A kind without an eligible target: a short depeg instead (the tour still owes that kind).
    this.#startDepeg(k, target, false, rng.uniform(45_000, 90_000));
    return wanted === "depeg";
  }

  /** Classes first, then an asset: the ~40 LSTs would otherwise take almost every incident. */
  #pickByClass(free: readonly IncidentTarget[]): IncidentTarget {
    const groups = new Map<string, IncidentTarget[]>();
    for (const t of free) {
      groups.set(t.group, [...(groups.get(t.group) ?? []), t]);
    }
    return this.#rng.pick(this.#rng.pick([...groups.values()]));
  }

  #startDepeg(k: number, target: IncidentTarget, long: boolean, rampIn: number, forced?: DepegSeverity): void {
    const rng = this.#rng;
    const severity = forced ?? weighted(rng, long ? LONG_SEVERITY_WEIGHTS : SEVERITY_WEIGHTS);
    const hold = long ? rng.uniform(LONG_HOLD_MS[0], LONG_HOLD_MS[1]) : rng.uniform(60_000, 120_000);
    const rampOut = rng.uniform(90_000, 150_000);
    const end = k + Math.ceil((rampIn + hold + rampOut) / this.#tickMs) + 1;
    const s = target.spread;
    let peakBps: number;
    let crTargetPct: number | undefined;
    if (target.cr !== null) {
      const c = target.cr;
      const u = rng.uniform(0.3, 0.7);
      crTargetPct =
        severity === "drift" ? lerp(c.depeg, c.drift, u) : severity === "depeg" ? lerp(c.critical, c.depeg, u) : lerp(c.blackSwan, c.critical, u);
      crTargetPct = Math.round(crTargetPct * 100) / 100;
      // The spread does not drive a CR asset's band; a modest discount alongside keeps the picture coherent.
      peakBps = Math.round(s.drift * rng.uniform(0.3, 0.6));
    } else {
      const raw =
        severity === "drift"
          ? lerp(s.drift, s.depeg, rng.uniform(0.35, 0.75))
          : severity === "depeg"
            ? lerp(s.depeg, s.critical, rng.uniform(0.3, 0.7))
            : lerp(s.critical, s.blackSwan, rng.uniform(0.15, 0.45));
      peakBps = Math.min(MAX_PEAK_BPS, Math.round(raw));
    }
    const record: IncidentRecord = {
      kind: "depeg",
      asset: target.symbol,
      startTick: k,
      endTick: end,
      severity,
      ...(long ? { long } : {}),
      peakBps,
      ...(crTargetPct === undefined ? {} : { crTargetPct }),
    };
    this.#push({ record, assets: [target.symbol], rampIn, hold, rampOut });
  }

  #push(a: Active): true {
    this.#active.push(a);
    this.#log.push(a.record);
    return true;
  }
}
