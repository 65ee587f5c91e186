import type { LeaseRecord } from "./lease-store.ts";

/** What one engine sees and holds at one instant: the input of `planLeases`. */
export interface LeaseView {
  readonly self: string;
  readonly now: number;
  /** Every asset to run (mints). */
  readonly assets: readonly string[];
  /** Lease records by mint (absent: never leased or deleted). */
  readonly leases: ReadonlyMap<string, LeaseRecord>;
  /** Engines alive now, this one included. */
  readonly engines: number;
  /** Mints this engine holds. */
  readonly held: ReadonlySet<string>;
  /**
   * The other engines alive now (their heartbeats). Given, the free units are split among the live engines as each of
   * them splits them (`split`); absent, this engine takes free units in its own order, as far as its share goes.
   */
  readonly others?: readonly string[];
  /**
   * Of this round's free units (absent or expired, not this engine's), those left untaken for a while (an engine they
   * were split to is not taking them): anyone short takes them. Called once per round (`FreeUnits.overdue`).
   */
  readonly overdue?: (free: readonly string[]) => ReadonlySet<string>;
}

export interface LeasePlan {
  /** Free or expired leases to take, each with the revision to update (null: create). */
  readonly acquire: readonly { readonly mint: string; readonly revision: number | null }[];
  /** Held leases to hand back (over the fair share). */
  readonly release: readonly string[];
}

/** A stable per-engine order of the assets, so engines starting together reach for different ones first. */
function spread(self: string, mint: string): number {
  let h = 2166136261;
  for (const c of `${self}|${mint}`) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  return h >>> 0;
}

/**
 * The pure decision of one round: hold `ceil(assets / engines)` leases. Release the surplus; take free leases
 * (absent, or expired by `now`) up to the share. Never takes a lease another engine holds unexpired.
 */
export function planLeases(view: LeaseView): LeasePlan {
  const target = Math.ceil(view.assets.length / Math.max(1, view.engines));
  const held = view.assets.filter((m) => view.held.has(m));
  const free = view.assets
    .filter((m) => !view.held.has(m))
    .flatMap((mint): { mint: string; revision: number | null }[] => {
      const r = view.leases.get(mint);
      if (r === undefined) return [{ mint, revision: null }];
      if (r.value.expires_at <= view.now) return [{ mint, revision: r.revision }];
      return [];
    })
    .sort((a, b) => spread(view.self, a.mint) - spread(view.self, b.mint));
  // Every round, releasing or not: how long a unit has been free is counted across consecutive listings.
  const overdue = view.overdue?.(free.map((f) => f.mint)) ?? new Set<string>();
  if (held.length > target) {
    const order = [...held].sort((a, b) => spread(view.self, b) - spread(view.self, a));
    return { acquire: [], release: order.slice(0, held.length - target) };
  }
  const need = target - held.length;
  if (view.others === undefined || need === 0) return { acquire: free.slice(0, need), release: [] };
  const mine = split(view, target, need, free.filter((f) => !overdue.has(f.mint)).map((f) => f.mint));
  return { acquire: [...free.filter((f) => overdue.has(f.mint)), ...free.filter((f) => mine.has(f.mint))].slice(0, need), release: [] };
}

/**
 * This engine's part of the free units, split among the live engines the same way by each of them (they list the same
 * leases and heartbeats): first each unit to the engine that ranks it first (rendezvous hashing, `spread`) as far as
 * that engine's share goes, then what is left to the engines still short, one engine after another by id. Survivors of
 * a kill reach for disjoint units and take the dead engine's in one round; in their own orders they reached for the
 * same ones, half the writes lost to the other's, and those units waited for the next rounds (0.3-0.7 s more under
 * load, bench:cluster). A split seen differently (a listing that changed in between) costs a lost write, as before.
 */
function split(view: LeaseView, target: number, need: number, free: readonly string[]): ReadonlySet<string> {
  const engines = [...new Set([view.self, ...(view.others ?? [])])].sort();
  const short = new Map<string, number>();
  for (const e of engines) short.set(e, target);
  short.set(view.self, need);
  const assets = new Set(view.assets);
  for (const [mint, r] of view.leases) {
    const owner = r.value.owner;
    if (owner !== view.self && short.has(owner) && r.value.expires_at > view.now && assets.has(mint)) short.set(owner, short.get(owner)! - 1);
  }
  const to = new Map<string, string>();
  const take = (e: string, units: readonly string[]) => {
    const n = Math.max(0, short.get(e)!);
    const picked = [...units].sort((a, b) => spread(e, a) - spread(e, b)).slice(0, n);
    for (const u of picked) to.set(u, e);
    short.set(e, n - picked.length);
  };
  const first = (u: string) => engines.reduce((best, e) => (spread(e, u) < spread(best, u) ? e : best));
  for (const e of engines) take(e, free.filter((u) => first(u) === e));
  for (const e of engines) take(e, free.filter((u) => !to.has(u)));
  return new Set(free.filter((u) => to.get(u) === view.self));
}

/**
 * Since when each unit has been free in an engine's listings: a unit free in every listing of the last `overdueMs` is
 * overdue (`LeaseView.overdue`): the engine it was split to is not taking it (stalled, or its heartbeat outlived it),
 * so whoever is short takes it.
 */
export class FreeUnits {
  #since = new Map<string, number>();

  constructor(readonly overdueMs: number) {}

  /** Given one listing's free units at `now`: those free since `overdueMs` ago; the others are forgotten. */
  overdue(free: readonly string[], now: number): ReadonlySet<string> {
    const since = new Map<string, number>();
    for (const unit of free) since.set(unit, this.#since.get(unit) ?? now);
    this.#since = since;
    return new Set(free.filter((unit) => now - since.get(unit)! >= this.overdueMs));
  }
}
