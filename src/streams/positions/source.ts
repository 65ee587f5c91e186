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
  /**
   * The same positions grouped by collateral mint, each mint's built when first asked for: a source that can produce
   * one asset's positions on their own (the simulated book) offers this, so a refresh costs nothing per asset until a
   * route reads it. `read(now)` is exactly the concatenation of every mint's `get`.
   */
  readByMint?(now: EpochMs): Promise<PositionsByMint>;
}

/** Positions by collateral mint: `keys` the mints with positions, `get` one mint's (the same array every time). */
export interface PositionsByMint {
  keys(): Iterable<string>;
  get(mint: string): readonly LendingPosition[] | undefined;
}

/** Counters of one source, for logs and tests. */
export interface PositionSourceStats {
  reads: number;
  failures: number;
  /** Entries of a payload that could not be modelled (and were skipped). */
  skipped: number;
}
