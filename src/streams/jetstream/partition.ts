import { randomUUID } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { ActorHost, HostAsset, IngestResult } from "../../actors/index.ts";
import type { Clock } from "../../clock.ts";
import type { EpochMs, Sample } from "../../methodology/index.ts";
import type { EngineLink, LogFn } from "./engine-link.ts";
import { leaseUnits } from "./lease-partitions.ts";
import { LeaseManager, type LeaseManagerOptions, type LeaseStore } from "./leases.ts";
import { AcquiredAssets, type PartitionIntake } from "./partition-restore.ts";
import { RecentSamples } from "./recent-samples.ts";
import { BULK_FROM } from "./recovery.ts";
import { RestoreReads } from "./restore-reads.ts";
import type { Topology } from "./topology.ts";

export type { PartitionIntake } from "./partition-restore.ts";

/** A receipt-shaped record from the store, for assets with neither snapshot nor transition in NATS. */
type FromStore = (mint: string) => Promise<{ catalog_entry: unknown; inputs_frozen: unknown; detected_at: string } | null>;

export interface PartitionOptions {
  /** The lease bucket (`natsLeaseStore`). */
  readonly store: LeaseStore;
  readonly host: ActorHost;
  readonly link: EngineLink;
  readonly topology: Topology;
  readonly assets: readonly HostAsset[];
  /** Wall clock, for leases. */
  readonly clock: Clock;
  /** The engine's clock (a scenario's scaled clock): where a restored actor resumes. */
  readonly engineClock: Clock;
  readonly log: LogFn;
  readonly fromStore?: FromStore;
  /**
   * A replayable feed (a scenario): the samples of one asset (by symbol) after `after`, up to `until`, in order. An
   * acquired asset is fed them first, so no sample is lost between its previous owner's last state and now. Without
   * it (a live feed) the engine keeps the samples it received lately (`RecentSamples`) and feeds an acquired asset
   * those received since its restored state.
   */
  readonly samplesOf?: (symbol: string, after: EpochMs, until: EpochMs) => readonly Sample[];
  /**
   * How long received samples are kept for a take-over, in wall-clock ms (live feeds). Default 60,000: longer than a
   * snapshot period, a lease and the restore, and than the JetStream leader elections after a lost nats-server
   * (several seconds, up to 20 s seen), during which an engine fences its assets and takes them back afterwards.
   */
  readonly retainMs?: number;
  readonly lease?: Pick<LeaseManagerOptions, "ttlMs" | "renewEveryMs" | "fenceAfterMs" | "keeper">;
  /**
   * Lease partitions (LEASE_PARTITIONS): 0 (default) leases each asset; P > 0 leases partitions of the assets by
   * `partitionOf(mint, P)` (src/streams/jetstream/lease-partitions.ts), every asset of a partition gained, lost and
   * handed back together.
   */
  readonly partitions?: number;
  /** Engine id (default a random UUID: unique per process start). */
  readonly self?: string;
  /**
   * The shared intake (`INTAKE=shared`, intake-consumer.ts): an acquired partition's missed samples are read from
   * PEG_INTAKE, and its live samples are held meanwhile. Requires `partitions` > 0.
   */
  readonly intake?: PartitionIntake;
  /**
   * Read a lease round's many acquired states in one pass over the buckets (`RestoreReads`; default true). Not on a
   * replicated cluster: the pass's consumer can sit on a follower that lags behind the writes of the live engines.
   */
  readonly bulkRestore?: boolean;
}

/** The assets of one engine process among several (docs/scaling.md). */
export interface Partition {
  readonly self: string;
  /** The lease manager: its units are assets, or partitions (`partitions` > 0). */
  readonly leases: LeaseManager;
  readonly store: LeaseStore;
  /** True when this engine holds the lease of the asset (its own, or its partition's). */
  holds(mint: string): boolean;
  /** How many assets this engine holds leases for. */
  heldAssets(): number;
  /**
   * Whether this engine runs the cluster's chores now (the stream leaders' placement, `LeaderSpread`): it holds the
   * first lease unit, which one engine at a time does.
   */
  leadsChores(): boolean;
  /** Routes a sample to its actor when this engine runs the asset and the sample is new to it. */
  ingest(sample: Sample, now: EpochMs): IngestResult;
  /** Hands every lease back (actors stopped, transitions acked, snapshots flushed). */
  stop(): Promise<void>;
}

/**
 * Runs only the assets this engine leases (src/streams/jetstream/leases.ts). Every actor starts released; an acquired
 * asset is restored and caught up by `AcquiredAssets` (partition-restore.ts). On losing a lease the actor stops at
 * once and nothing more is written for it; on a graceful release it stops, its transitions are acknowledged and its
 * snapshot is flushed before the lease is deleted. The sequence of the asset's last transition, read with its state,
 * is the fencing token of its publishes (`EngineLink.fence`): a late publish of the previous owner and this engine's
 * can never both be stored. When this engine's token turns out stale (the previous owner's late publish landed after
 * it was read), the actor is restored again, this time from the stream's last transition, by the same path.
 */
export function startPartition(o: PartitionOptions): Partition {
  const self = o.self ?? randomUUID();
  const bySymbol = new Map(o.assets.map((a) => [a.symbol, a]));
  if (o.intake !== undefined && (o.partitions ?? 0) === 0) throw new RangeError("a shared intake needs lease partitions");
  /** Live feeds: what this engine received lately, every asset's (nobody can replay it; a shared intake's stream can). */
  const received = o.samplesOf === undefined && o.intake === undefined ? new RecentSamples({ windowMs: o.retainMs ?? 60_000, maxPerAsset: 1_000 }) : null;
  for (const a of o.assets) o.host.release(a.mint);
  const store = o.store;
  // A failover's thousands of acquired assets read in one pass (on a replicated cluster: their transitions in one pass,
  // their snapshots 64 at once); at most 32 per-asset reads at once otherwise (each two NATS requests: thousands in
  // flight made the engine's own lease renewals time out behind them, bench:cluster).
  const reads = new RestoreReads({
    topology: o.topology,
    log: o.log,
    ...(o.bulkRestore === false ? {} : { bulkFrom: Math.max(BULK_FROM, Math.ceil(o.assets.length / 8)) }),
    passTransitions: true,
    ...(o.fromStore === undefined ? {} : { fromStore: o.fromStore }),
  });
  const starting = new AcquiredAssets({
    host: o.host,
    link: o.link,
    engineClock: o.engineClock,
    log: o.log,
    reads,
    byMint: new Map(o.assets.map((a) => [a.mint, a])),
    received,
    ...(o.samplesOf === undefined ? {} : { samplesOf: o.samplesOf }),
    ...(o.intake === undefined ? {} : { intake: o.intake }),
    holds: (mint) => holds(mint),
    holdsUnit: (unit) => leases.held.has(unit),
  });
  const { fedUntil } = starting;

  const units = leaseUnits(
    o.assets.map((a) => a.mint),
    o.partitions ?? 0,
  );
  const holds = (mint: string): boolean => leases.held.has(units.unitOf(mint));
  const leases = new LeaseManager({
    store,
    self,
    assets: units.units,
    keyPrefix: units.keyPrefix,
    clock: o.clock,
    log: o.log,
    ...o.lease,
    handlers: {
      // A partition's assets are restored together (a failover restores all of a dead engine's partitions at once).
      acquired: async (unit) => {
        // This term of the lease: a restore that outlives it (fenced, then taken again) starts nothing.
        const live = leases.term(unit);
        if (o.intake !== undefined) await starting.acquiredFromIntake(o.intake, unit, units.assetsOf(unit), false, live);
        else await starting.acquiredUnit(unit, units.assetsOf(unit), live);
      },
      lost: (unit) => {
        o.intake?.drop(unit);
        for (const mint of units.assetsOf(unit)) {
          if (o.host.runs(mint)) o.host.release(mint);
          o.link.revoke(mint);
        }
        o.log("warn", "assets stopped: lease lost", { lease: `${units.keyPrefix}${unit}`, assets: units.assetsOf(unit).length });
      },
      // Every asset of the unit is stopped, its transitions acknowledged and its snapshot flushed before the lease goes.
      release: async (unit) => {
        o.intake?.drop(unit);
        const mints = units.assetsOf(unit);
        for (const mint of mints) if (o.host.runs(mint)) o.host.release(mint);
        await Promise.all(mints.map((mint) => o.link.settle(mint)));
        o.log("info", "released assets", { lease: `${units.keyPrefix}${unit}`, assets: mints.length });
      },
    },
  });

  // A dwell timer that runs past the lease's fencing deadline fences its partition instead of deciding, as `ingest` does.
  o.host.guardTimers((mint) => leases.fenceIfDue(units.unitOf(mint)));

  // A rejected fencing token while the lease is still ours: the stream moved (the previous owner's late publish).
  o.link.onConflict(async (mint) => {
    if (!holds(mint)) return;
    if (o.intake !== undefined) await starting.acquiredFromIntake(o.intake, units.unitOf(mint), [mint], true);
    else await starting.acquired(mint, true);
  });

  return {
    self,
    leases,
    store,
    holds,
    heldAssets: () => {
      let n = 0;
      for (const unit of leases.held) n += units.assetsOf(unit).length;
      return n;
    },
    leadsChores: () => units.units.length > 0 && leases.live(units.units[0]!),
    ingest: (sample, now) => {
      const asset = bySymbol.get(sample.asset);
      if (asset === undefined) return { status: "unknown_asset" };
      received?.record(sample, now, o.clock.now());
      if (!o.host.runs(asset.mint)) return { status: "released" };
      // Past the lease's fencing deadline, its timer not run yet (a busy event loop): fenced now, not deciding. (Not
      // just skipped: a renewal answered meanwhile would keep the lease, and the sample would be lost. Fenced, the
      // partition is taken again, by this engine or another, with its history.)
      if (!leases.fenceIfDue(units.unitOf(asset.mint))) return { status: "released" };
      const until = fedUntil.get(sample.asset);
      if (until !== undefined && sample.ts <= until) return { status: "released" };
      // Shared intake: a sample published twice (a new intake resumes at the stream's watermark) is evaluated once.
      if (o.intake !== undefined) fedUntil.set(sample.asset, sample.ts);
      return o.host.ingest(sample, now);
    },
    stop: () => leases.stop(),
  };
}

/**
 * The scenario instant shared by every engine of a deployment replaying a scenario: the first engine records which
 * wall-clock instant its replay started at (key `scenario.origin` of the lease bucket); the others join that
 * timeline, so an asset that moves between engines continues at the same scenario time. Returns the scenario
 * instant for `wallNow`.
 */
export async function sharedScenarioNow(kv: KV, first: EpochMs, wallNow: EpochMs, speed: number): Promise<EpochMs> {
  const key = "scenario.origin";
  const mine = { scenario_ms: first, wall_ms: wallNow };
  let origin = mine;
  try {
    await kv.create(key, JSON.stringify(mine));
  } catch {
    const e = await kv.get(key);
    if (e === null || e.operation !== "PUT") throw new Error("the shared scenario origin could not be created or read");
    origin = e.json<typeof mine>();
  }
  return origin.scenario_ms + Math.floor((wallNow - origin.wall_ms) * speed);
}

