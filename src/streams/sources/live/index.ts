/**
 * FEED=live: the real price sources (Pyth Hermes SSE, Jupiter Price API v3, Sanctum SOL value, Solana JSON-RPC),
 * each configured by URL and key, merged into one stream of legs. Issuer-specific intrinsic kinds stay simulated
 * (see `liveCoverage` and docs/sources.md).
 *
 * Backpressure policy: `merge` of the adapters, each with its own policy (Pyth lossless per event; the pollers one
 * request in flight, latest wins). Nothing is buffered here. The Observable is cold: each subscription opens its
 * own connections, so share it (`share()`) when several consumers need it.
 */
import { merge, type Observable, type SchedulerLike } from "rxjs";
import type { Catalog, CatalogAsset } from "../../../catalog/index.ts";
import type { Clock } from "../../../clock.ts";
import type { SourcesConfig } from "../../../config.ts";
import type { Leg } from "../legs.ts";
import { liveCoverage, type AssetCoverage, type LiveSourceName } from "./coverage.ts";
import { jupiterMintsOf, jupiterPrices, type JupiterOptions } from "./jupiter.ts";
import { pythFeedsOf, pythHermesStream, type PythHermesOptions } from "./pyth-hermes.ts";
import { sanctumMintsOf, sanctumSolValues, type SanctumOptions } from "./sanctum.ts";
import { solanaRpcLegs, stakePoolsOf, type SolanaRpcOptions } from "./solana-rpc.ts";
import { SourceCounters, type LiveLog, type LiveSourceStats } from "./source.ts";

export { LIVE_SOURCES, SIMULATED_IN_LIVE, liveCoverage, type AssetCoverage, type LegCoverage, type LegMode, type LiveSourceName } from "./coverage.ts";
export { HttpStatusError, IdleTimeoutError, LIVE_ERROR_CODES, MalformedPayloadError, PayloadTooLargeError, RpcError, type LiveErrorCode } from "./errors.ts";
export { RequestBudget, endpointUrl, parseRetryAfter, type BudgetOptions, type RetryLimits } from "./http.ts";
export { JsonNumber, parseLosslessJson, type LosslessJson } from "./json.ts";
export {
  JUPITER_FREE_PER_MINUTE,
  JUPITER_KEYLESS_PER_MINUTE,
  JUPITER_MAX_IDS,
  jupiterMintsOf,
  jupiterPrices,
  parseJupiterPrices,
  type JupiterAnswer,
  type JupiterOptions,
} from "./jupiter.ts";
export { feedNamesById, normalizeFeedId, parseHermesEvent, pythFeedsOf, pythHermesStream, type PythHermesOptions } from "./pyth-hermes.ts";
export { parseSanctumSolValues, sanctumMintsOf, sanctumSolValues, type SanctumAnswer, type SanctumOptions } from "./sanctum.ts";
export {
  parseRpcResult,
  solanaRpcLegs,
  stakePoolFromResult,
  stakePoolsOf,
  supplyFromResult,
  type SolanaRpcOptions,
  type StakePoolRef,
} from "./solana-rpc.ts";
export { STAKE_POOL_LAYOUT, decodeBase64, decodeStakePool, stakePoolRate, type StakePoolState } from "./stake-pool.ts";
export {
  DEFAULT_BACKOFF,
  SourceCounters,
  backoffDelay,
  silentLog,
  type BackoffPolicy,
  type LiveAdapterOptions,
  type LiveLog,
  type LiveSourceStats,
} from "./source.ts";
export { SseDecoder } from "./sse.ts";

/** Options of `liveLegs`; per-source sections tune cadence and limits (URLs and keys come from `SourcesConfig`). */
export interface LiveLegsOptions {
  readonly scheduler?: SchedulerLike;
  readonly log?: LiveLog;
  /** Uniform [0, 1) for backoff jitter. Default: a seeded PRNG per source. */
  readonly random?: () => number;
  /** Assets to serve. Default `catalog.active`. */
  readonly assets?: readonly CatalogAsset[];
  /** Adapters to run. Default all; an adapter with nothing to read is skipped anyway. */
  readonly sources?: readonly LiveSourceName[];
  readonly pyth?: Pick<PythHermesOptions, "idleMs" | "maxEventBytes" | "rateLimitedMs" | "backoff">;
  readonly jupiter?: Pick<JupiterOptions, "intervalMs" | "batchSize" | "requestsPerMinute" | "retry" | "backoff" | "requestTimeoutMs">;
  readonly sanctum?: Pick<SanctumOptions, "intervalMs" | "batchSize" | "requestsPerMinute" | "retry" | "backoff" | "requestTimeoutMs">;
  readonly solanaRpc?: Pick<
    SolanaRpcOptions,
    "intervalMs" | "supplyIntervalMs" | "requestsPerMinute" | "commitment" | "retry" | "backoff" | "requestTimeoutMs"
  >;
}

/** The merged live feed. */
export interface LiveLegs {
  /** Every adapter's legs, merged. Cold; never errors, never completes. */
  readonly legs: Observable<Leg>;
  /** Counters per source (all four keys, zero for a source that is not running). */
  stats(): Readonly<Record<LiveSourceName, LiveSourceStats>>;
  /** Which adapters are running. */
  readonly running: readonly LiveSourceName[];
  /** Per asset: which legs are live, constant or simulated. */
  readonly coverage: readonly AssetCoverage[];
}

/**
 * Builds the live adapters for `assets` from the source URLs and keys. Pyth subscribes to every catalog feed plus
 * each asset's cross-check feed; Jupiter prices `jupiter_usd` markets; Sanctum values `sanctum_lst` assets; the RPC
 * reads `spl_stake_pool` pools and every asset's supply.
 */
export function liveLegs(catalog: Catalog, sources: SourcesConfig, clock: Clock, options: LiveLegsOptions = {}): LiveLegs {
  const assets = options.assets ?? catalog.active;
  const enabled = new Set<LiveSourceName>(options.sources ?? ["pyth", "jupiter", "sanctum", "solana_rpc"]);
  const counters: Record<LiveSourceName, SourceCounters> = {
    pyth: new SourceCounters(),
    jupiter: new SourceCounters(),
    sanctum: new SourceCounters(),
    solana_rpc: new SourceCounters(),
  };
  const common = (source: LiveSourceName) => ({
    clock,
    counters: counters[source],
    ...(options.scheduler === undefined ? {} : { scheduler: options.scheduler }),
    ...(options.log === undefined ? {} : { log: options.log }),
    ...(options.random === undefined ? {} : { random: options.random }),
  });
  const streams: Observable<Leg>[] = [];
  const running: LiveSourceName[] = [];

  const feeds = pythFeedsOf(catalog, assets);
  if (enabled.has("pyth") && feeds.size > 0) {
    streams.push(pythHermesStream({ ...common("pyth"), ...options.pyth, baseUrl: sources.pythHermesUrl, feeds }));
    running.push("pyth");
  }
  const jupiterMints = jupiterMintsOf(assets);
  if (enabled.has("jupiter") && jupiterMints.length > 0) {
    streams.push(
      jupiterPrices({
        ...common("jupiter"),
        ...options.jupiter,
        baseUrl: sources.jupiterApiUrl,
        apiKey: sources.jupiterApiKey,
        mints: jupiterMints,
      }),
    );
    running.push("jupiter");
  }
  const lsts = sanctumMintsOf(assets);
  if (enabled.has("sanctum") && lsts.length > 0) {
    streams.push(sanctumSolValues({ ...common("sanctum"), ...options.sanctum, baseUrl: sources.sanctumApiUrl, mints: lsts }));
    running.push("sanctum");
  }
  const pools = stakePoolsOf(assets);
  if (enabled.has("solana_rpc") && assets.length > 0) {
    streams.push(
      solanaRpcLegs({
        ...common("solana_rpc"),
        ...options.solanaRpc,
        rpcUrl: sources.solanaRpcUrl,
        pools,
        supplyMints: assets.map((a) => a.mint),
      }),
    );
    running.push("solana_rpc");
  }

  return {
    legs: merge(...streams),
    stats: () => ({
      pyth: counters.pyth.snapshot(),
      jupiter: counters.jupiter.snapshot(),
      sanctum: counters.sanctum.snapshot(),
      solana_rpc: counters.solana_rpc.snapshot(),
    }),
    running: Object.freeze(running),
    coverage: Object.freeze(liveCoverage(catalog, assets)),
  };
}
