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
  if (held.length > target) {
    const order = [...held].sort((a, b) => spread(view.self, b) - spread(view.self, a));
    return { acquire: [], release: order.slice(0, held.length - target) };
  }
  const free = view.assets
    .filter((m) => !view.held.has(m))
    .flatMap((mint): { mint: string; revision: number | null }[] => {
      const r = view.leases.get(mint);
      if (r === undefined) return [{ mint, revision: null }];
      if (r.value.expires_at <= view.now) return [{ mint, revision: r.revision }];
      return [];
    })
    .sort((a, b) => spread(view.self, a.mint) - spread(view.self, b.mint));
  return { acquire: free.slice(0, target - held.length), release: [] };
}
