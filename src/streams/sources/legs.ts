import type { Decimal, EpochMs } from "../../methodology/index.ts";

/**
 * One observation from a price source, before sample assembly. Live adapters (Pyth, Jupiter, Sanctum, Solana RPC)
 * and simulated issuer-specific sources emit these; the assembler combines the latest fresh legs of each asset into
 * a methodology `Sample`. Every leg carries the instant it describes (`observed_at`, epoch ms): staleness is judged
 * on it, never on when it was received.
 */
export type Leg =
  /** A Pyth price feed update, by the catalog's feed name (`SOL/USD`, `USDY/USD.RR`) or `<SYMBOL>/USD` for an asset's own cross-check feed. */
  | {
      readonly kind: "pyth";
      readonly feed: string;
      readonly price: Decimal;
      readonly conf: Decimal;
      readonly observed_at: EpochMs;
    }
  /** An executable market price in USD for a mint (Jupiter Price API v3 `usdPrice`, or another DEX aggregate). */
  | {
      readonly kind: "market_usd";
      readonly mint: string;
      readonly price: Decimal;
      readonly source: string;
      readonly observed_at: EpochMs;
    }
  /** SOL per LST share: a stake pool's total_lamports / pool_token_supply, or Sanctum's SOL value. */
  | {
      readonly kind: "sol_per_lst";
      readonly mint: string;
      readonly sol: Decimal;
      readonly source: string;
      readonly observed_at: EpochMs;
      /** The stake pool's last_update_epoch, when the source reports it. */
      readonly epoch?: number;
    }
  /** An issuer-specific intrinsic value in USD (NAV, redemption value), for intrinsic kinds without a Pyth feed. */
  | {
      readonly kind: "intrinsic_usd";
      readonly mint: string;
      readonly value: Decimal;
      readonly source: string;
      readonly observed_at: EpochMs;
      /** The source says its value is frozen (feeds the intrinsic-liveness gate). */
      readonly stale?: boolean;
    }
  /** A collateral ratio (1.30 = 130 %) for collateral-ratio assets. */
  | { readonly kind: "cr"; readonly mint: string; readonly cr: Decimal; readonly source: string; readonly observed_at: EpochMs }
  /** Circulating supply (already scaled by decimals): a size signal, never a methodology input. */
  | { readonly kind: "supply"; readonly mint: string; readonly supply: Decimal; readonly observed_at: EpochMs };

export type LegKind = Leg["kind"];

/** A circulating-supply leg (live: Solana RPC `getTokenSupply`; `FEED=sim`: the simulated supplies). */
export type SupplyLeg = Extract<Leg, { kind: "supply" }>;

/** Counters every source keeps, so a bad payload is visible without ever crashing the stream. */
export interface SourceStats {
  /** Messages or responses parsed into legs. */
  readonly received: number;
  /** Payloads that could not be parsed (logged and dropped). */
  readonly malformed: number;
  /** Failed requests or dropped connections. */
  readonly errors: number;
  /** Reconnects (streams) or retries after 429 / 5xx (polling). */
  readonly retries: number;
}
