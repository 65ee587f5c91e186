import type { EpochMs, Sample } from "../../methodology/index.ts";

/** One sample as the intake received it: `at` is the engine instant it was (or would have been) evaluated at. */
export interface ReceivedSample {
  readonly sample: Sample;
  readonly at: EpochMs;
}

interface Kept extends ReceivedSample {
  /** Wall-clock arrival, for eviction (a scenario's engine clock may run many times faster than the wall). */
  readonly wall: EpochMs;
}

interface Ring {
  items: Kept[];
  head: number;
  /** The newest sample timestamp evicted so far: samples at or before it are gone. */
  evictedUpTo: EpochMs;
}

export interface RecentSamplesOptions {
  /** Keep what arrived in the last `windowMs` of wall-clock time. */
  readonly windowMs: number;
  /** At most this many per asset (a feed far faster than expected cannot grow memory without bound). */
  readonly maxPerAsset: number;
}

/**
 * The samples an engine received lately, for every asset (docs/scaling.md, "Take over"). With a live feed nobody can
 * replay what arrived while an asset had no owner, but every engine receives the whole feed: it keeps what it received
 * for a window longer than a snapshot period plus a lease's lifetime, and the engine that takes an asset over (or back,
 * after fencing itself) evaluates, in order, the samples received since the state it restored.
 */
export class RecentSamples {
  readonly #o: RecentSamplesOptions;
  readonly #bySymbol = new Map<string, Ring>();

  constructor(options: RecentSamplesOptions) {
    if (!(options.windowMs > 0 && Number.isInteger(options.maxPerAsset) && options.maxPerAsset > 0)) {
      throw new RangeError("windowMs must be positive and maxPerAsset a positive integer");
    }
    this.#o = options;
  }

  /** Keeps one received sample (evicting what fell out of the window or over the cap). */
  record(sample: Sample, at: EpochMs, wall: EpochMs): void {
    let ring = this.#bySymbol.get(sample.asset);
    if (ring === undefined) {
      ring = { items: [], head: 0, evictedUpTo: -Infinity };
      this.#bySymbol.set(sample.asset, ring);
    }
    ring.items.push({ sample, at, wall });
    const oldest = wall - this.#o.windowMs;
    while (ring.head < ring.items.length && (ring.items.length - ring.head > this.#o.maxPerAsset || ring.items[ring.head]!.wall < oldest)) {
      ring.evictedUpTo = Math.max(ring.evictedUpTo, ring.items[ring.head]!.sample.ts);
      ring.head++;
    }
    if (ring.head > 64 && ring.head * 2 > ring.items.length) {
      ring.items = ring.items.slice(ring.head);
      ring.head = 0;
    }
  }

  /**
   * One asset's kept samples stamped after `after`, in arrival order, and whether they are complete: `gapUpTo` is the
   * newest evicted timestamp after `after` (samples up to it are no longer here), or null.
   */
  since(symbol: string, after: EpochMs): { readonly samples: readonly ReceivedSample[]; readonly gapUpTo: EpochMs | null } {
    const ring = this.#bySymbol.get(symbol);
    if (ring === undefined) return { samples: [], gapUpTo: null };
    const samples = ring.items.slice(ring.head).filter((k) => k.sample.ts > after).map(({ sample, at }) => ({ sample, at }));
    return { samples, gapUpTo: ring.evictedUpTo > after ? ring.evictedUpTo : null };
  }

  /** Samples kept, over every asset. */
  get size(): number {
    let n = 0;
    for (const r of this.#bySymbol.values()) n += r.items.length - r.head;
    return n;
  }
}
