import type { HostAsset } from "../../actors/index.ts";
import type { AssetState } from "../../methodology/index.ts";
import type { LogFn } from "./engine-link.ts";
import { limiter } from "./limiter.ts";
import { readRecovery, type RecoveryOptions, type RecoverySource } from "./recovery.ts";
import type { Topology } from "./topology.ts";

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
   * Absent: never (a replicated cluster), and reads are not batched at all.
   */
  readonly bulkFrom?: number;
  /** Reads asked for within this long of a batch's first one join it. Default 25 ms. */
  readonly windowMs?: number;
}

/** Per-asset reads in flight at once (each is two NATS requests). */
const PER_ASSET_AT_ONCE = 32;
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
 * costs the whole catalogue, a partition's few hundred assets do not pay for it).
 */
export class RestoreReads {
  readonly #o: RestoreReadsOptions;
  readonly #perAsset = limiter(PER_ASSET_AT_ONCE);
  #batch: Waiting[] | null = null;
  #stats = { batches: 0, bulk: 0 };

  constructor(options: RestoreReadsOptions) {
    this.#o = options;
  }

  get stats(): { readonly batches: number; readonly bulk: number } {
    return { ...this.#stats };
  }

  /** The asset's state as a recovery reads it; `preferTransition` (a rejected fencing token) is read on its own. */
  read(asset: HostAsset, preferTransition = false): Promise<RestoreRead> {
    if (preferTransition || this.#o.bulkFrom === undefined) return this.#perAsset.run(() => this.#readOne(asset, preferTransition));
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
    if (batch.length < (this.#o.bulkFrom ?? Infinity)) {
      for (const w of batch) this.#perAsset.run(() => this.#readOne(w.asset, false)).then(w.resolve, w.reject);
      return;
    }
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

  async #readOne(asset: HostAsset, preferTransition: boolean): Promise<RestoreRead> {
    const read = await readRecovery([asset], this.#o.topology, {
      log: this.#o.log,
      bulk: false,
      preferTransition,
      ...(this.#o.fromStore === undefined ? {} : { fromStore: this.#o.fromStore }),
    });
    return { recovered: read.states.get(asset.mint), seq: read.transitionSeqs.get(asset.mint) ?? 0 };
  }
}
