/** The read side of the advisory figures: what the HTTP layer asks, whatever feeds it (simulated or real sources). */
import type { EpochMs } from "../methodology/index.ts";
import type { ExposureLookup } from "./exposure.ts";

/** The exposures computed from one refresh of the positions sources. */
export interface ExposureSnapshot {
  /** When the positions behind this snapshot were read (epoch ms): the figures' `updated_at`. */
  readonly updatedAt: EpochMs;
  /** Loop exposure per collateral mint; a mint that is absent has no tracked leverage. */
  readonly byMint: ExposureLookup;
}

export interface ExposureReader {
  /** The latest snapshot, or null before the first successful refresh. */
  snapshot(): ExposureSnapshot | null;
}
