/**
 * Incidents of the simulated market: seeded, Poisson-ish events that each hit one asset (or one oracle feed) for a
 * while, so a viewer sees the engine's transitions, gates and skips within minutes of starting the service.
 *
 * Shapes:
 * - `depeg`: the market discount ramps in (45-90 s), holds (60-120 s) and ramps out (90-150 s). The peak sits between
 *   drift and depeg (`drift` severity), past depeg (`depeg`) or past critical (`critical`). Collateral-ratio assets
 *   instead see their CR fall into the matching CR band (with a small market discount alongside).
 * - `oracle_conf`: one Pyth feed's confidence widens to 6-15 % of price for 45-75 s (oracle_confidence gate). Feeds
 *   used by a single asset are preferred, so one incident does not blank a whole class.
 * - `zero_print`: a single $0 market print (implausible: the engine skips it).
 * - `garbage_nav`: a stable_yield NAV printed 500-8000x too high for 3-5 s (discount_sanity gate).
 *
 * Timing: each tick starts an incident with probability tickMs / meanMs (a Bernoulli approximation of a Poisson
 * process). The first incident is always a depeg, and is forced no later than a seeded instant in [mean/6, mean/2], so
 * a newcomer sees a full transition cycle early whatever the draw.
 */
import type { Prng } from "./prng.ts";

export const INCIDENT_KINDS = ["depeg", "oracle_conf", "zero_print", "garbage_nav"] as const;
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
}

/** A started incident, for logs and tests. Ticks are indices since subscription; `endTick` is exclusive. */
export interface IncidentRecord {
  readonly kind: IncidentKind;
  /** The asset hit (for `oracle_conf`, the first user of the feed). */
  readonly asset: string;
  readonly startTick: number;
  readonly endTick: number;
  readonly severity?: DepegSeverity;
  /** Peak extra market discount in bps (`depeg`). */
  readonly peakBps?: number;
  /** CR floor in whole percent (`depeg` of a collateral-ratio asset). */
  readonly crTargetPct?: number;
  /** Feed and confidence in ppm of price (`oracle_conf`). */
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
}

export interface TickIncidents {
  readonly assets: ReadonlyMap<string, AssetOverlay>;
  /** Feed name -> confidence in ppm of price while blown out. */
  readonly confPpm: ReadonlyMap<string, number>;
}

export const NO_INCIDENTS: TickIncidents = { assets: new Map(), confPpm: new Map() };

/** Crude shares of each kind among incidents (a kind with no eligible target falls back to `depeg`). */
const KIND_WEIGHTS: readonly (readonly [IncidentKind, number])[] = [
  ["depeg", 0.5],
  ["oracle_conf", 0.2],
  ["zero_print", 0.15],
  ["garbage_nav", 0.15],
];
const SEVERITY_WEIGHTS: readonly (readonly [DepegSeverity, number])[] = [
  ["drift", 0.15],
  ["depeg", 0.55],
  ["critical", 0.3],
];
/** A depeg deeper than this is no longer a "peg" story; it also keeps market prices well above 0. */
const MAX_PEAK_BPS = 9000;
/** Bounded concurrency: a demo with every asset in trouble at once teaches nothing. */
const MAX_CONCURRENT = 3;

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

export class IncidentDirector {
  readonly #targets: readonly IncidentTarget[];
  readonly #feedUsers: ReadonlyMap<string, readonly string[]>;
  readonly #rng: Prng;
  readonly #tickMs: number;
  readonly #perTick: number;
  readonly #firstBy: number;
  readonly #active: Active[] = [];
  readonly #log: IncidentRecord[] = [];

  constructor(targets: readonly IncidentTarget[], rng: Prng, tickMs: number, meanMs: number) {
    this.#targets = targets;
    const users = new Map<string, string[]>();
    for (const t of targets) for (const f of t.feeds) users.set(f, [...(users.get(f) ?? []), t.symbol]);
    this.#feedUsers = users;
    this.#rng = rng;
    this.#tickMs = tickMs;
    this.#perTick = Math.min(1, tickMs / meanMs);
    // Never on tick 0: the engine's first sample only initialises an asset.
    this.#firstBy = Math.max(1, Math.round(rng.uniform(meanMs / 6, meanMs / 2) / tickMs));
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
    if (k > 0 && this.#targets.length > 0 && this.#active.length < MAX_CONCURRENT) {
      if (this.#log.length === 0) {
        if (fire || k >= this.#firstBy) this.#start(k, "depeg");
      } else if (fire) this.#start(k, weighted(this.#rng, KIND_WEIGHTS));
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
          assets.set(r.asset, {
            spreadMicro: Math.round(w * (r.peakBps ?? 0) * 100),
            crWeight: w,
            crTargetPct: r.crTargetPct ?? null,
            zeroMarket: false,
            intrinsicFactor: 1,
          });
          break;
        }
        case "zero_print":
          assets.set(r.asset, { spreadMicro: 0, crWeight: 0, crTargetPct: null, zeroMarket: true, intrinsicFactor: 1 });
          break;
        case "garbage_nav":
          assets.set(r.asset, { spreadMicro: 0, crWeight: 0, crTargetPct: null, zeroMarket: false, intrinsicFactor: r.factor ?? 1 });
          break;
        case "oracle_conf":
          confPpm.set(r.feed!, r.confPpm!);
          break;
      }
    }
    return { assets, confPpm };
  }

  #busy(): Set<string> {
    return new Set(this.#active.flatMap((a) => a.assets));
  }

  #start(k: number, wanted: IncidentKind): void {
    const rng = this.#rng;
    const busy = this.#busy();
    const free = this.#targets.filter((t) => !busy.has(t.symbol));
    if (free.length === 0) return;
    let kind = wanted;

    if (kind === "oracle_conf") {
      const feeds = [...this.#feedUsers].filter(([, users]) => users.every((u) => !busy.has(u)));
      const single = feeds.filter(([, users]) => users.length === 1);
      const pool = single.length > 0 ? single : feeds;
      if (pool.length > 0) {
        const [feed, users] = rng.pick(pool);
        const end = k + Math.max(1, Math.round(rng.uniform(45_000, 75_000) / this.#tickMs));
        const confPpm = rng.int(60_000, 150_000);
        this.#push({ record: { kind, asset: users[0]!, startTick: k, endTick: end, feed, confPpm }, assets: users, rampIn: 0, hold: 0, rampOut: 0 });
        return;
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
        this.#push({ record, assets: [target.symbol], rampIn: 0, hold: 0, rampOut: 0 });
        return;
      }
      kind = "depeg";
    }
    const target = this.#pickByClass(free);
    if (kind === "zero_print") {
      this.#push({ record: { kind, asset: target.symbol, startTick: k, endTick: k + 1 }, assets: [target.symbol], rampIn: 0, hold: 0, rampOut: 0 });
      return;
    }
    this.#startDepeg(k, target);
  }

  /** Classes first, then an asset: the ~40 LSTs would otherwise take almost every incident. */
  #pickByClass(free: readonly IncidentTarget[]): IncidentTarget {
    const groups = new Map<string, IncidentTarget[]>();
    for (const t of free) {
      groups.set(t.group, [...(groups.get(t.group) ?? []), t]);
    }
    return this.#rng.pick(this.#rng.pick([...groups.values()]));
  }

  #startDepeg(k: number, target: IncidentTarget): void {
    const rng = this.#rng;
    const severity = weighted(rng, SEVERITY_WEIGHTS);
    const rampIn = rng.uniform(45_000, 90_000);
    const hold = rng.uniform(60_000, 120_000);
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
      peakBps,
      ...(crTargetPct === undefined ? {} : { crTargetPct }),
    };
    this.#push({ record, assets: [target.symbol], rampIn, hold, rampOut });
  }

  #push(a: Active): void {
    this.#active.push(a);
    this.#log.push(a.record);
  }
}
