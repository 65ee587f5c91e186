import { randomUUID } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { ActorHost, HostAsset, IngestResult } from "../../actors/index.ts";
import type { Clock } from "../../clock.ts";
import type { AssetState, EpochMs, Sample } from "../../methodology/index.ts";
import type { EngineLink, LogFn } from "./engine-link.ts";
import type { IntakeHold } from "./intake-consumer.ts";
import { leaseUnits } from "./lease-partitions.ts";
import { LeaseManager, type LeaseManagerOptions, type LeaseStore } from "./leases.ts";
import { RecentSamples, type ReceivedSample } from "./recent-samples.ts";
import { budgetedSteps } from "./limiter.ts";
import { BULK_FROM } from "./recovery.ts";
import { RestoreReads } from "./restore-reads.ts";
import type { Topology } from "./topology.ts";

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
  readonly lease?: Pick<LeaseManagerOptions, "ttlMs" | "renewEveryMs" | "fenceAfterMs">;
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

/** What the partition needs of the shared intake's consumer (`IntakeConsumer`). */
export interface PartitionIntake {
  hold(unit: string, only?: ReadonlySet<string>): IntakeHold;
  drop(unit: string): void;
}

/**
 * An asset's state as read for its acquisition. `applied`: the instant of its last evaluation (a sample evaluated at
 * or before it was seen). `appliedTs`: the stamp of the last sample it reflects. A scenario evaluates a sample at its
 * stamp, so the two agree; a live feed evaluates it when it arrived, later, and under load later than the next
 * samples' stamps, which are still to be evaluated.
 */
interface Read {
  readonly asset: HostAsset;
  readonly recovered: { readonly state: AssetState; readonly source: string } | undefined;
  readonly applied: EpochMs;
  readonly appliedTs: EpochMs;
  readonly seq: number;
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
  /** Routes a sample to its actor when this engine runs the asset and the sample is new to it. */
  ingest(sample: Sample, now: EpochMs): IngestResult;
  /** Hands every lease back (actors stopped, transitions acked, snapshots flushed). */
  stop(): Promise<void>;
}

/**
 * Runs only the assets this engine leases (src/streams/jetstream/leases.ts). Every actor starts released; on acquiring an
 * asset its state is read like a start-up recovery (KV snapshot, or a newer acknowledged transition, or the store),
 * the actor resumes at that state's own instant, is fed the samples it missed (from the scenario, or those this
 * engine received since that instant: `RecentSamples`), then re-armed at the engine clock's now. On losing a lease the actor stops at once and nothing more is written for it; on a
 * graceful release it stops, its transitions are acknowledged and its snapshot is flushed before the lease is
 * deleted. The sequence of the asset's last transition, read with its state, is the fencing token of its publishes
 * (`EngineLink.fence`): a late publish of the previous owner and this engine's can never both be stored. When this
 * engine's token turns out stale (the previous owner's late publish landed after it was read), the actor is restored
 * again, this time from the stream's last transition, by the same path.
 */
export function startPartition(o: PartitionOptions): Partition {
  const self = o.self ?? randomUUID();
  const bySymbol = new Map(o.assets.map((a) => [a.symbol, a]));
  const byMint = new Map(o.assets.map((a) => [a.mint, a]));
  /** Per symbol: samples at or before this instant were applied (replayable feeds only). */
  const fedUntil = new Map<string, EpochMs>();
  if (o.intake !== undefined && (o.partitions ?? 0) === 0) throw new RangeError("a shared intake needs lease partitions");
  /** Live feeds: what this engine received lately, every asset's (nobody can replay it; a shared intake's stream can). */
  const received = o.samplesOf === undefined && o.intake === undefined ? new RecentSamples({ windowMs: o.retainMs ?? 60_000, maxPerAsset: 1_000 }) : null;
  for (const a of o.assets) o.host.release(a.mint);
  const store = o.store;
  // A failover's thousands of acquired assets read in one pass (on a replicated cluster: their transitions in one pass,
  // their snapshots 64 at once); at most 32 per-asset reads at once otherwise (each two NATS requests: thousands in
  // flight made the engine's own lease renewals time out behind them, bench:cluster).
  const starts = budgetedSteps(50);
  const reads = new RestoreReads({
    topology: o.topology,
    log: o.log,
    ...(o.bulkRestore === false ? {} : { bulkFrom: Math.max(BULK_FROM, Math.ceil(o.assets.length / 8)) }),
    passTransitions: true,
    ...(o.fromStore === undefined ? {} : { fromStore: o.fromStore }),
  });

  /** The samples an acquired asset missed, `after` < ts (<= `now` for a replayable feed), with their instants. */
  const missed = (asset: HostAsset, after: EpochMs, now: EpochMs): readonly ReceivedSample[] => {
    if (o.samplesOf !== undefined) return o.samplesOf(asset.symbol, after, now).map((sample) => ({ sample, at: sample.ts }));
    const kept = received!.since(asset.symbol, after);
    if (kept.gapUpTo !== null) {
      o.log("warn", "samples since the restored state are no longer kept; the asset resumes without them", {
        asset: asset.symbol,
        after: Number.isFinite(after) ? new Date(after).toISOString() : null,
        lost_up_to: new Date(kept.gapUpTo).toISOString(),
      });
    }
    return kept.samples;
  };

  /**
   * Feeds a just-started actor the samples it missed, `after` < ts, at the instants they were (or would have been)
   * evaluated at, then re-arms its dwell timer from `now` (committing a deadline that passed after the last of them).
   * Returns how many were fed.
   */
  const catchUp = (asset: HostAsset, after: EpochMs, now: EpochMs, restoredEarlier: boolean, samples: readonly ReceivedSample[]): number => {
    let last = after;
    // Shared intake: `after` is the stamp of the last sample applied (`Read.appliedTs`), and a stamp at or before the
    // last one fed is a sample published twice (a new intake resumes at the stream's watermark).
    let lastAt = now;
    let fed = 0;
    for (const { sample, at } of samples) {
      if (o.intake !== undefined && sample.ts <= last) continue;
      o.host.ingest(sample, at);
      last = sample.ts;
      lastAt = Math.max(lastAt, at);
      fed++;
    }
    if (o.samplesOf !== undefined || o.intake !== undefined) fedUntil.set(asset.symbol, o.samplesOf !== undefined ? Math.max(last, now) : last);
    const state = o.host.engineState(asset.mint);
    // Re-armed at now, or at the last sample's instant when this engine's clock is behind it (a shared intake's
    // engine still evaluating a backlog): a dwell deadline before it has already fired in the step of that sample.
    if ((fed > 0 || restoredEarlier) && state !== undefined) o.host.restoreAsset(asset.mint, state, lastAt);
    return fed;
  };

  /** An asset's state as the recovery reads it (KV snapshot, a newer acknowledged transition, or the store). */
  const readState = async (mint: string, fromStream: boolean): Promise<Read> => {
    const asset = byMint.get(mint);
    if (asset === undefined) throw new Error(`unknown asset ${mint}`);
    const { recovered, seq } = await reads.read(asset, fromStream);
    const at = recovered?.state.evaluatedAt ?? null;
    // After a dwell-timer evaluation at D a sample stamped D is still due (the timer fires first).
    const applied = at === null ? -Infinity : recovered!.state.lastTrigger === "dwell_timer" ? at - 1 : at;
    const appliedTs = recovered?.state.last?.ts ?? -Infinity;
    return { asset, recovered, applied, appliedTs, seq };
  };

  /**
   * Starts a restored asset's actor (unless the lease went meanwhile), fed what it missed: `samples` (its own samples
   * in the shared intake's history of its partition) or `missed` (the scenario, or what this engine received).
   */
  const startAsset = (r: Read, fromStream: boolean, samples?: readonly ReceivedSample[]): void => {
    const { asset, recovered, applied } = r;
    const mint = asset.mint;
    // Fenced or lost while the state was being read: the actor must not start.
    if (!holds(mint)) return;
    // Before the actor starts: its first transition is published expecting the last one read with its state.
    o.link.fence(mint, r.seq);
    const what = fromStream ? "restored asset from the stream after a rejected transition" : "acquired asset";
    const now = o.engineClock.now();
    // The shared intake's samples this state has not seen: evaluated after its last evaluation, and newer than its last
    // sample (what the previous owner received before that instant, it evaluated or dropped).
    const unseen = (x: ReceivedSample): boolean => x.at > r.applied && x.sample.ts > r.appliedTs;
    const missedOf = (after: EpochMs): readonly ReceivedSample[] => samples?.filter(unseen) ?? missed(asset, after, now);
    const boundary = samples === undefined ? applied : r.appliedTs;
    if (recovered === undefined) {
      o.host.activateAsset(mint);
      const caughtUp = catchUp(asset, -Infinity, now, false, missedOf(-Infinity));
      o.log("info", what, { asset: asset.symbol, mint, from: "cold", caught_up: caughtUp });
      return;
    }
    const { state } = recovered;
    const at = state.evaluatedAt;
    let caughtUp = 0;
    // A shared intake's history is caught up even when the state is ahead of this engine's clock: its engine is still
    // evaluating a backlog (under load), and the samples after the state are in the history, or nowhere (the intake
    // had published them before the hold, when the partition was not this engine's).
    if (at !== null && (at <= now || samples !== undefined)) {
      o.host.restoreAsset(mint, state, at);
      caughtUp = catchUp(asset, boundary, Math.max(now, at), true, missedOf(applied));
    } else {
      o.host.restoreAsset(mint, state, now);
      if (o.samplesOf !== undefined || o.intake !== undefined) fedUntil.set(asset.symbol, boundary);
    }
    o.log("info", what, { asset: asset.symbol, mint, from: recovered.source, state_at: at === null ? null : new Date(at).toISOString(), caught_up: caughtUp });
  };

  /** Restores an acquired asset (or, `fromStream`, one whose fencing token was rejected) and starts its actor. */
  const acquired = async (mint: string, fromStream = false): Promise<void> => {
    startAsset(await readState(mint, fromStream), fromStream);
  };

  /**
   * Shared intake: restores assets of one unit while the unit's live samples are held, reads the unit's history from
   * PEG_INTAKE since the oldest restored state, and starts every actor with its missed samples (the history, then
   * what arrived meanwhile), synchronously, so no live sample slips in between.
   */
  const acquiredFromIntake = async (intake: PartitionIntake, unit: string, mints: readonly string[], fromStream = false): Promise<void> => {
    // A rejected transition restores its one asset: only its samples are held, its partition's others run on.
    const hold = intake.hold(unit, fromStream ? new Set(mints.map((m) => byMint.get(m)!.symbol)) : undefined);
    // Which step failed, for the operator (both are NATS reads that time out under load).
    const step = <T>(what: string, p: Promise<T>): Promise<T> =>
      p.catch((e: unknown) => {
        throw new Error(`${what}: ${e instanceof Error ? e.message : String(e)}`);
      });
    try {
      const reads = await step("reading the assets' states", Promise.all(mints.map((mint) => readState(mint, fromStream))));
      if (!leases.held.has(unit)) return hold.cancel();
      const after = Math.min(...reads.map((r) => r.applied));
      const history = await step("reading the partition's history from PEG_INTAKE", hold.history(after));
      // Partitions start in turns of the event loop, 50 ms of them at a time: a failover's (or a cold start's)
      // partitions, all read at once, started in one go blocked the loop for 1-1.6 s at 10,000 assets, and the
      // engine's own lease renewals missed their fencing deadline behind it.
      await starts.run(() => {
        if (!leases.held.has(unit)) return hold.cancel();
        // The partition's samples by asset, once (not one pass over the whole partition per asset).
        const bySymbol = new Map<string, ReceivedSample[]>();
        const held = hold.release();
        o.log("info", "partition taken over", {
          partition: unit,
          assets: reads.length,
          after: Number.isFinite(after) ? new Date(after).toISOString() : null,
          history_samples: history.length,
          held_samples: held.length,
        });
        for (const x of [...history, ...held]) {
          const list = bySymbol.get(x.sample.asset);
          if (list === undefined) bySymbol.set(x.sample.asset, [x]);
          else list.push(x);
        }
        for (const r of reads) startAsset(r, fromStream, bySymbol.get(r.asset.symbol) ?? []);
      });
    } catch (e) {
      hold.cancel();
      throw e;
    }
  };

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
        if (o.intake !== undefined) await acquiredFromIntake(o.intake, unit, units.assetsOf(unit));
        else await Promise.all(units.assetsOf(unit).map((mint) => acquired(mint)));
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

  // A rejected fencing token while the lease is still ours: the stream moved (the previous owner's late publish).
  o.link.onConflict(async (mint) => {
    if (!holds(mint)) return;
    if (o.intake !== undefined) await acquiredFromIntake(o.intake, units.unitOf(mint), [mint], true);
    else await acquired(mint, true);
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

