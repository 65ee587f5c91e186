import type { HostAsset } from "../../actors/index.ts";
import type { AssetState } from "../../methodology/index.ts";
import type { LogFn } from "./engine-link.ts";
import { limiter } from "./limiter.ts";
import { BULK_FROM, lastTransitions, readRecovery, type RecoveryOptions, type RecoverySource, type TransitionPass } from "./recovery.ts";
import { TOPOLOGY, type Topology } from "./topology.ts";

/** What an acquisition needs of an asset: the state it resumes from (none: cold) and its fencing token. */
export interface RestoreRead {
  readonly recovered: { readonly state: AssetState; readonly source: RecoverySource } | undefined;
  readonly seq: number;
}

export interface RestoreReadsOptions {
  readonly topology: Topology;
  readonly log: LogFn;
  readonly fromStore?: RecoveryOptions["fromStore"];
  /**
   * A batch of at least this many assets is read in one pass over the streams (about an eighth of the catalogue).
   * Absent: never (a replicated cluster).
   */
  readonly bulkFrom?: number;
  /**
   * A batch of `BULK_FROM` (32) assets or more, below `bulkFrom`, reads its transitions in one pass over
   * `PEG_TRANSITIONS` and each snapshot on its own (one request per asset instead of two). Absent and without
   * `bulkFrom`: reads are not batched at all.
   */
  readonly passTransitions?: boolean;
  /** Reads asked for within this long of a batch's first one join it. Default 25 ms. */
  readonly windowMs?: number;
}

/** Per-asset reads in flight at once (each is two NATS requests). */
const PER_ASSET_AT_ONCE = 32;
const SNAPSHOTS_AT_ONCE = 256;
/** A pass over the transitions is used while the stream has at most this many subjects per asset of the batch. */
const PASS_WORTH = 4;
const WINDOW_MS = 25;

interface Waiting {
  readonly asset: HostAsset;
  readonly resolve: (r: RestoreRead) => void;
  readonly reject: (e: unknown) => void;
}

/**
 * Reads the states of the assets an engine acquires (issue 26 item 3: kill -> restored). A failover acquires a dead
 * engine's partitions in one lease round, thousands of assets; read asset by asset that is two NATS requests each
 * (2.4 s for 3,300 of 10,000 assets on this machine, `bench/restore-read.ts`), while one pass over the last message of
 * every subject of `peg_actors` and `PEG_TRANSITIONS` reads all 10,000 in 0.8 s. So the reads asked for within a
 * short window form a batch, read in one pass when it is at least `bulkFrom` assets, else asset by asset (a pass
 * costs the whole catalogue, a partition's few hundred assets do not pay for it). On a replicated cluster
 * (`passTransitions`, no `bulkFrom`) a batch reads its transitions in one pass and each snapshot on its own: a pass
 * over the snapshots could run on a replica that lags behind the live engines' writes and miss a snapshot, and the
 * asset would resume cold; a transition the pass misses is caught by its fencing token (the asset's next publish is
 * refused, and the asset restored from the stream's leader).
 */
export class RestoreReads {
  readonly #o: RestoreReadsOptions;
  readonly #perAsset = limiter(PER_ASSET_AT_ONCE);
  /** Snapshot reads after a pass over the transitions: one request each. */
  readonly #snapshots = limiter(SNAPSHOTS_AT_ONCE);
  #batch: Waiting[] | null = null;
  #stats = { batches: 0, bulk: 0, transitionPasses: 0 };

  constructor(options: RestoreReadsOptions) {
    this.#o = options;
  }

  get stats(): { readonly batches: number; readonly bulk: number; readonly transitionPasses: number } {
    return { ...this.#stats };
  }

  /** The asset's state as a recovery reads it; `preferTransition` (a rejected fencing token) is read on its own. */
  read(asset: HostAsset, preferTransition = false): Promise<RestoreRead> {
    if (preferTransition || (this.#o.bulkFrom === undefined && this.#o.passTransitions !== true)) return this.#perAsset.run(() => this.#readOne(asset, preferTransition));
    return new Promise<RestoreRead>((resolve, reject) => {
      if (this.#batch === null) {
        const batch: Waiting[] = [];
        this.#batch = batch;
        setTimeout(() => {
          this.#batch = null;
          void this.#run(batch);
        }, this.#o.windowMs ?? WINDOW_MS);
      }
      this.#batch.push({ asset, resolve, reject });
    });
  }

  async #run(batch: readonly Waiting[]): Promise<void> {
    this.#stats.batches++;
    const full = batch.length >= (this.#o.bulkFrom ?? Infinity);
    const pass = !full && this.#o.passTransitions === true && batch.length >= BULK_FROM;
    if (!full && !pass) {
      this.#oneByOne(batch);
      return;
    }
    if (pass) return this.#runWithTransitionPass(batch);
    this.#stats.bulk++;
    try {
      const read = await readRecovery(
        batch.map((w) => w.asset),
        this.#o.topology,
        { log: this.#o.log, bulk: true, ...(this.#o.fromStore === undefined ? {} : { fromStore: this.#o.fromStore }) },
      );
      for (const w of batch) w.resolve({ recovered: read.states.get(w.asset.mint), seq: read.transitionSeqs.get(w.asset.mint) ?? 0 });
    } catch (e) {
      for (const w of batch) w.reject(e);
    }
  }

  /**
   * The batch's transitions in one pass, then each asset's snapshot on its own, each asset settled on its own: a read
   * that times out fails its own asset's partition, not the whole batch (one survivor taking 32 partitions at once
   * released them all, again and again, when any of 5,000 reads timed out). If the pass fails, asset by asset.
   */
  async #runWithTransitionPass(batch: readonly Waiting[]): Promise<void> {
    let transitions: TransitionPass;
    try {
      // A pass delivers every asset's last transition, not just the batch's: worth it while the stream holds no more
      // than PASS_WORTH times the batch's assets (a deployment whose assets mostly have transitions, or a busy market,
      // reads a partition's asset by asset: a pass per partition over thousands of subjects slowed a take-over of 32
      // partitions until the survivor's leases lapsed, test/scale/intake-failover.test.ts).
      const info = await this.#o.topology.jsm.streams.info(TOPOLOGY.transitions.stream);
      if ((info.state.num_subjects ?? Infinity) > batch.length * PASS_WORTH) {
        this.#oneByOne(batch);
        return;
      }
      transitions = await lastTransitions(this.#o.topology);
    } catch (e) {
      this.#o.log("warn", "the restore's pass over the transitions failed; reading asset by asset", { error: e instanceof Error ? e.message : String(e) });
      this.#oneByOne(batch);
      return;
    }
    this.#stats.transitionPasses++;
    for (const w of batch) this.#snapshots.run(() => this.#readOne(w.asset, false, transitions)).then(w.resolve, w.reject);
  }

  /** Each asset of the batch read on its own (both its reads), settled on its own. */
  #oneByOne(batch: readonly Waiting[]): void {
    for (const w of batch) this.#perAsset.run(() => this.#readOne(w.asset, false)).then(w.resolve, w.reject);
  }

  async #readOne(asset: HostAsset, preferTransition: boolean, transitions?: TransitionPass): Promise<RestoreRead> {
    const read = await readRecovery([asset], this.#o.topology, {
      log: this.#o.log,
      bulk: false,
      preferTransition,
      ...(transitions === undefined ? {} : { transitions }),
      ...(this.#o.fromStore === undefined ? {} : { fromStore: this.#o.fromStore }),
    });
    return { recovered: read.states.get(asset.mint), seq: read.transitionSeqs.get(asset.mint) ?? 0 };
  }
}
