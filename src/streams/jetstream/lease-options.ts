/** How a `LeaseManager` (leases.ts) is set up: its store, its units, its timings and what it calls on a change. */
import type { Clock } from "../../clock.ts";
import type { LogFn } from "./engine-link.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import type { LeaseStore } from "./lease-store.ts";

/** What the engine does when it gains or loses an asset. */
export interface LeaseHandlers {
  /**
   * The lease is ours: restore the actor (from its KV snapshot) and start feeding it. The lease can be lost while this
   * runs (`lost` is called meanwhile): check `LeaseManager.held` before starting the actor.
   */
  acquired(mint: string): Promise<void>;
  /** The lease is lost or about to expire: stop the actor now, publish and write nothing more for it. Synchronous. */
  lost(mint: string, why: "taken" | "fenced"): void;
  /** A graceful hand-back: stop the actor, wait for its transitions to be acked, flush its snapshot. */
  release(mint: string): Promise<void>;
}

export interface LeaseManagerOptions {
  readonly store: LeaseStore;
  /** This engine's id (unique per process start). */
  readonly self: string;
  /** Every asset to run (mints), or every partition when `keyPrefix` is `partition.`: the units leased. */
  readonly assets: readonly string[];
  /** The lease keys' prefix: `asset.` (default: one lease per asset) or `partition.` (one per partition). */
  readonly keyPrefix?: "asset." | "partition.";
  /** Wall clock (leases are wall-clock time, whatever the feed's clock). */
  readonly clock: Clock;
  readonly handlers: LeaseHandlers;
  /** Lease lifetime. Default `LEASE_TTL_MS` (1,250 ms): a dead engine's assets move 1.25 s after its last renewal. */
  readonly ttlMs?: number;
  /** Renewal and rebalancing period. Default `LEASE_RENEW_EVERY_MS` (300 ms). */
  readonly renewEveryMs?: number;
  /**
   * Stop an asset this long after sending its last successful renewal. Default `ttlMs - LEASE_MARGIN_MS` (1,000 ms):
   * 0.25 s of margin for clock skew before anyone may take the lease (a late fence timer does not eat into it: `live`).
   */
  readonly fenceAfterMs?: number;
  readonly log?: LogFn;
  /**
   * Renews the leases and sends the heartbeat off this thread (`LeaseKeeperThread`), so a stall of this thread's event
   * loop does not let them lapse. Default: renewed on this thread (tests on a simulated clock and store).
   */
  readonly keeper?: LeaseKeeper;
}
