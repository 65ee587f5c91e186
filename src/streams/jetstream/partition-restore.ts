import type { ActorHost, HostAsset } from "../../actors/index.ts";
import type { Clock } from "../../clock.ts";
import type { AssetState, EpochMs, Sample } from "../../methodology/index.ts";
import type { EngineLink, LogFn } from "./engine-link.ts";
import type { IntakeHold } from "./intake-consumer.ts";
import { budgetedSteps } from "./limiter.ts";
import type { RecentSamples, ReceivedSample } from "./recent-samples.ts";
import type { RestoreReads } from "./restore-reads.ts";

/** What the partition needs of the shared intake's consumer (`IntakeConsumer`). */
export interface PartitionIntake {
  hold(unit: string, only?: ReadonlySet<string>): IntakeHold;
  drop(unit: string): void;
}

export interface AcquiredAssetsOptions {
  readonly host: ActorHost;
  readonly link: EngineLink;
  /** The engine's clock (a scenario's scaled clock): where a restored actor resumes. */
  readonly engineClock: Clock;
  readonly log: LogFn;
  readonly reads: RestoreReads;
  readonly byMint: ReadonlyMap<string, HostAsset>;
  /** A replayable feed's samples of one asset (`PartitionOptions.samplesOf`). */
  readonly samplesOf?: (symbol: string, after: EpochMs, until: EpochMs) => readonly Sample[];
  /** Live feeds without a shared intake: what this engine received lately. */
  readonly received: RecentSamples | null;
  /** The shared intake (`PartitionOptions.intake`). */
  readonly intake?: PartitionIntake;
  /** Whether this engine still holds the lease of the asset, and of a unit. */
  holds(mint: string): boolean;
  holdsUnit(unit: string): boolean;
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

/** An asset whose actor started: where its state came from ("cold": nowhere) and how many missed samples it was fed. */
interface Started {
  readonly mint: string;
  readonly from: string;
  readonly caughtUp: number;
}

/**
 * Starts the actors of the assets a partition acquired: each asset's state is read like a start-up recovery (KV
 * snapshot, or a newer acknowledged transition, or the store), the actor starts at that state, is fed the samples it
 * missed (from the scenario, the shared intake's history, or those this engine received since the state's instant:
 * `RecentSamples`), then resumed once at the engine clock's now. The sequence of the asset's last transition,
 * read with its state, is the fencing token of its publishes (`EngineLink.fence`).
 */
export class AcquiredAssets {
  /** Per symbol: samples at or before this instant were applied (replayable feeds and the shared intake). */
  readonly fedUntil = new Map<string, EpochMs>();
  readonly #o: AcquiredAssetsOptions;
  // Partitions start in turns of the event loop, 50 ms of them at a time: a failover's (or a cold start's)
  // partitions, all read at once, started in one go blocked the loop for 1-1.6 s at 10,000 assets, and the
  // engine's own lease renewals missed their fencing deadline behind it.
  readonly #starts = budgetedSteps(50);

  constructor(options: AcquiredAssetsOptions) {
    this.#o = options;
  }

  /**
   * Restores an acquired asset (or, `fromStream`, one whose fencing token was rejected) and starts its actor, unless
   * `live` (default: the asset's lease is held) turned false meanwhile.
   */
  async acquired(mint: string, fromStream = false, live = (): boolean => this.#o.holds(mint)): Promise<void> {
    this.#startAsset(await this.#readState(mint, fromStream), fromStream, live);
  }

  /** Restores and starts the assets of an acquired unit, each as soon as its state is read, while `live` holds. */
  async acquiredUnit(unit: string, mints: readonly string[], live: () => boolean): Promise<void> {
    const started = await Promise.all(mints.map(async (mint) => this.#startAsset(await this.#readState(mint, false), false, live)));
    this.#logAcquired(unit, started);
  }

  /**
   * Shared intake: restores assets of one unit while the unit's live samples are held, reads the unit's history from
   * PEG_INTAKE since the oldest restored state, and starts every actor with its missed samples (the history, then
   * what arrived meanwhile), synchronously, so no live sample slips in between.
   */
  async acquiredFromIntake(intake: PartitionIntake, unit: string, mints: readonly string[], fromStream = false, live = (): boolean => this.#o.holdsUnit(unit)): Promise<void> {
    // A rejected transition restores its one asset: only its samples are held, its partition's others run on.
    const hold = intake.hold(unit, fromStream ? new Set(mints.map((m) => this.#o.byMint.get(m)!.symbol)) : undefined);
    // Which step failed, for the operator (both are NATS reads that time out under load).
    const step = <T>(what: string, p: Promise<T>): Promise<T> =>
      p.catch((e: unknown) => {
        throw new Error(`${what}: ${e instanceof Error ? e.message : String(e)}`);
      });
    // Where a take-over's time goes (kill -> restored, bench:cluster): reading the states, the history, waiting its turn.
    const t0 = performance.now();
    try {
      const reads = await step("reading the assets' states", Promise.all(mints.map((mint) => this.#readState(mint, fromStream))));
      if (!live()) return hold.cancel();
      const t1 = performance.now();
      const after = Math.min(...reads.map((r) => r.applied));
      const history = await step("reading the partition's history from PEG_INTAKE", hold.history(after));
      const t2 = performance.now();
      await this.#starts.run(() => {
        if (!live()) return hold.cancel();
        // The partition's samples by asset, once (not one pass over the whole partition per asset).
        const bySymbol = new Map<string, ReceivedSample[]>();
        const held = hold.release();
        this.#o.log("info", "partition taken over", {
          partition: unit,
          assets: reads.length,
          after: Number.isFinite(after) ? new Date(after).toISOString() : null,
          history_samples: history.length,
          held_samples: held.length,
          read_ms: Math.round(t1 - t0),
          history_ms: Math.round(t2 - t1),
          queued_ms: Math.round(performance.now() - t2),
        });
        for (const x of [...history, ...held]) {
          const list = bySymbol.get(x.sample.asset);
          if (list === undefined) bySymbol.set(x.sample.asset, [x]);
          else list.push(x);
        }
        const started = reads.map((r) => this.#startAsset(r, fromStream, live, bySymbol.get(r.asset.symbol) ?? []));
        if (!fromStream) this.#logAcquired(unit, started);
      });
    } catch (e) {
      hold.cancel();
      throw e;
    }
  }

  /**
   * One line per acquired unit, not one per asset: a failover's thousands of lines, each a synchronous write to a
   * pipe, took 12 % of the engines' partition starts (bench:cluster profile). Each asset's line is at debug level.
   */
  #logAcquired(unit: string, started: readonly (Started | null)[]): void {
    const done = started.filter((s): s is Started => s !== null);
    if (done.length === 0) return;
    const from: Record<string, number> = {};
    let caughtUp = 0;
    for (const s of done) {
      from[s.from] = (from[s.from] ?? 0) + 1;
      caughtUp += s.caughtUp;
    }
    const cold = done.filter((s) => s.from === "cold").map((s) => s.mint);
    this.#o.log("info", "acquired assets", { unit, assets: done.length, from, cold, caught_up: caughtUp, mints: done.map((s) => s.mint) });
  }

  /** The samples an acquired asset missed, `after` < ts (<= `now` for a replayable feed), with their instants. */
  #missed(asset: HostAsset, after: EpochMs, now: EpochMs): readonly ReceivedSample[] {
    const o = this.#o;
    if (o.samplesOf !== undefined) return o.samplesOf(asset.symbol, after, now).map((sample) => ({ sample, at: sample.ts }));
    const kept = o.received!.since(asset.symbol, after);
    if (kept.gapUpTo !== null) {
      o.log("warn", "samples since the restored state are no longer kept; the asset resumes without them", {
        asset: asset.symbol,
        after: Number.isFinite(after) ? new Date(after).toISOString() : null,
        lost_up_to: new Date(kept.gapUpTo).toISOString(),
      });
    }
    return kept.samples;
  }

  /**
   * Feeds a just-started actor the samples it missed, `after` < ts, at the instants they were (or would have been)
   * evaluated at, then resumes it from `now` (committing a deadline that passed after the last of them, arming the
   * next): always when it was started from a state (`fromState`), else once something was fed. Returns how many were fed.
   */
  #catchUp(asset: HostAsset, after: EpochMs, now: EpochMs, fromState: boolean, samples: readonly ReceivedSample[]): number {
    const o = this.#o;
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
    if (o.samplesOf !== undefined || o.intake !== undefined) this.fedUntil.set(asset.symbol, o.samplesOf !== undefined ? Math.max(last, now) : last);
    // Re-armed at now, or at the last sample's instant when this engine's clock is behind it (a shared intake's
    // engine still evaluating a backlog): a dwell deadline before it has already fired in the step of that sample.
    if ((fed > 0 || fromState) && o.host.runs(asset.mint)) o.host.resumeAsset(asset.mint, lastAt);
    return fed;
  }

  /** An asset's state as the recovery reads it (KV snapshot, a newer acknowledged transition, or the store). */
  async #readState(mint: string, fromStream: boolean): Promise<Read> {
    const asset = this.#o.byMint.get(mint);
    if (asset === undefined) throw new Error(`unknown asset ${mint}`);
    const { recovered, seq } = await this.#o.reads.read(asset, fromStream);
    const at = recovered?.state.evaluatedAt ?? null;
    // After a dwell-timer evaluation at D a sample stamped D is still due (the timer fires first).
    const applied = at === null ? -Infinity : recovered!.state.lastTrigger === "dwell_timer" ? at - 1 : at;
    const appliedTs = recovered?.state.last?.ts ?? -Infinity;
    return { asset, recovered, applied, appliedTs, seq };
  }

  /**
   * Starts a restored asset's actor (unless the lease went meanwhile), fed what it missed: `samples` (its own samples
   * in the shared intake's history of its partition) or `missed` (the scenario, or what this engine received).
   */
  #startAsset(r: Read, fromStream: boolean, live: () => boolean, samples?: readonly ReceivedSample[]): Started | null {
    const o = this.#o;
    const { asset, recovered, applied } = r;
    const mint = asset.mint;
    // Fenced or lost while the state was being read: the actor must not start.
    if (!live()) return null;
    // Before the actor starts: its first transition is published expecting the last one read with its state.
    o.link.fence(mint, r.seq);
    // A rejected transition's restore is rare and said at once; an acquired unit's assets in one line (`#logAcquired`).
    const [level, what] = fromStream ? (["info", "restored asset from the stream after a rejected transition"] as const) : (["debug", "acquired asset"] as const);
    const now = o.engineClock.now();
    // The shared intake's samples this state has not seen: evaluated after its last evaluation, and newer than its last
    // sample (what the previous owner received before that instant, it evaluated or dropped).
    const unseen = (x: ReceivedSample): boolean => x.at > r.applied && x.sample.ts > r.appliedTs;
    const missedOf = (after: EpochMs): readonly ReceivedSample[] => samples?.filter(unseen) ?? this.#missed(asset, after, now);
    const boundary = samples === undefined ? applied : r.appliedTs;
    if (recovered === undefined) {
      o.host.activateAsset(mint);
      const caughtUp = this.#catchUp(asset, -Infinity, now, false, missedOf(-Infinity));
      o.log(level, what, { asset: asset.symbol, mint, from: "cold", caught_up: caughtUp });
      return { mint, from: "cold", caughtUp };
    }
    const { state } = recovered;
    const at = state.evaluatedAt;
    let caughtUp = 0;
    // A shared intake's history is caught up even when the state is ahead of this engine's clock: its engine is still
    // evaluating a backlog (under load), and the samples after the state are in the history, or nowhere (the intake
    // had published them before the hold, when the partition was not this engine's).
    if (at !== null && (at <= now || samples !== undefined)) {
      // Started at its state, fed what it missed, then resumed once (`#catchUp`): `restoreAsset` at the state's own
      // instant would resume it twice.
      o.host.activateAsset(mint, state);
      caughtUp = this.#catchUp(asset, boundary, Math.max(now, at), true, missedOf(applied));
    } else {
      o.host.restoreAsset(mint, state, now);
      if (o.samplesOf !== undefined || o.intake !== undefined) this.fedUntil.set(asset.symbol, boundary);
    }
    o.log(level, what, { asset: asset.symbol, mint, from: recovered.source, state_at: at === null ? null : new Date(at).toISOString(), caught_up: caughtUp });
    return { mint, from: recovered.source, caughtUp };
  }
}
