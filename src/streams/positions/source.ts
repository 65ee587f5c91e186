/** What every positions source implements: one read of all the leveraged positions it knows. */
import type { LendingPosition } from "../../advisory/index.ts";
import type { EpochMs } from "../../methodology/index.ts";

export interface PositionSource {
  /** Short id for logs (`sim`, `kamino`). */
  readonly name: string;
  /**
   * Reads the source's current positions. `now` is the reading instant on the injected clock (the simulated source
   * is a function of it). Rejects when the source cannot be read; a partly malformed payload is not a rejection:
   * unusable entries are skipped and counted.
   */
  read(now: EpochMs): Promise<readonly LendingPosition[]>;
}

/** Counters of one source, for logs and tests. */
export interface PositionSourceStats {
  reads: number;
  failures: number;
  /** Entries of a payload that could not be modelled (and were skipped). */
  skipped: number;
}
