import { decimalToWire, type EpochMs } from "../../methodology/index.ts";
import type { Leg, SupplyLeg } from "./legs.ts";

export const isSupplyLeg = (leg: Leg): leg is SupplyLeg => leg.kind === "supply";

/**
 * The latest circulating supply of each mint, from the `supply` legs of whichever source runs (live Solana RPC or the
 * simulated market). The sample projector stamps it on every snapshot it writes, which is how `circulating_supply`
 * and `market_cap` reach the cards: supply is a slow size signal observed on its own cadence, never a methodology
 * input, so it does not travel with samples. A reading older than the one kept is ignored; a negative one is refused.
 */
export class SupplyBook {
  readonly #byMint = new Map<string, { readonly wire: string; readonly observedAt: EpochMs }>();

  record(leg: SupplyLeg): void {
    if (leg.supply.isNegative() || !leg.supply.isFinite()) return;
    const kept = this.#byMint.get(leg.mint);
    if (kept !== undefined && kept.observedAt > leg.observed_at) return;
    this.#byMint.set(leg.mint, { wire: decimalToWire(leg.supply), observedAt: leg.observed_at });
  }

  /** The latest supply of the mint as a wire decimal, or null when none was observed. */
  wireOf(mint: string): string | null {
    return this.#byMint.get(mint)?.wire ?? null;
  }
}
