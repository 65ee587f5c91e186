/**
 * The AssetCard (interface 2.2) and the published view of a snapshot (methodology sections 6-7): the 15-minute
 * staleness collapse to UNKNOWN, risk_score, sustained, confidence, size signals, 24 h figures and the advisory
 * `oracle_degraded` annotation. Pure functions of (catalog asset, snapshot, 24 h window, now).
 */
import type { Catalog, CatalogAsset } from "../../catalog/index.ts";
import {
  D,
  DEFAULT_DRIFT_BPS,
  isCrThresholds,
  parseDecimal,
  riskScore,
  sustained,
  timestampToWire,
  type Decimal,
  type EpochMs,
  type PegState,
} from "../../methodology/index.ts";
import { crossCheckFeed } from "../../streams/sources/assembly.ts";
import { usdAggregateToWire } from "../../wire/index.ts";
import type { SnapshotView, Window24h } from "../read-model.ts";
import type { AssetCardBody, AssetStateBody, OracleDegradedBody } from "../schemas/index.ts";

/** A snapshot older than this is published as UNKNOWN with `state_reason: "stale_source"` (interface part 8). */
export const STALE_AFTER_MS = 15 * 60_000;
/** `oracle_confidence_wide` fires above this conf/price (bps); the hard UNKNOWN gate is at 500. */
export const ORACLE_CONF_WIDE_BPS = 100;

const TEN_THOUSAND = new D(10_000);
const INT32_MAX = 2_147_483_647;

export interface CardContext {
  readonly now: EpochMs;
  readonly catalog: Catalog;
  /** Config `sustainedSecs`. */
  readonly sustainedSecs: number;
}

/** What the API publishes of a snapshot at `now`. */
export interface Published {
  readonly state: PegState;
  readonly stateReason: string | null;
  /** Older than 15 minutes: collapsed to UNKNOWN, no fresh discount. */
  readonly stale: boolean;
  /** The smoothed discount when fresh, else null (risk_score and confidence need a fresh one). */
  readonly freshDiscount: Decimal | null;
  /**
   * When `state` began, or null when unknown: the one instant behind the state object's `since`, the card's
   * `current_state_duration_secs` and `sustained` (see `publishedSinceOf`).
   */
  readonly since: EpochMs | null;
}

export function isStale(snap: SnapshotView, now: EpochMs): boolean {
  return now - snap.updated_at > STALE_AFTER_MS;
}

/**
 * When the published state of a snapshot began (docs/methodology-notes.md, "Time in the published state"): the
 * staleness instant for a collapsed snapshot; else the engine's `published_since`, which a gate (UNKNOWN over a
 * committed band that persists underneath) and its clearing both restart, and which a restart keeps (from the actor
 * snapshot or the last receipt). The engine's `committed_since` is not used when a `published_since` is known: it
 * keeps running under a gate and a recovery from a receipt can reset it to the restart. Null when unknown.
 */
export function publishedSinceOf(snap: SnapshotView, now: EpochMs): EpochMs | null {
  if (isStale(snap, now)) return snap.updated_at + STALE_AFTER_MS;
  if (snap.published_since !== null) return snap.published_since;
  // A row without published_since: the band's start is the state's start only when the state is that band (no gate).
  return snap.state === snap.band ? snap.committed_since : null;
}

export function publishedOf(snap: SnapshotView, now: EpochMs): Published {
  const since = publishedSinceOf(snap, now);
  if (isStale(snap, now)) return { state: "UNKNOWN", stateReason: "stale_source", stale: true, freshDiscount: null, since };
  return { state: snap.state, stateReason: snap.state_reason, stale: false, freshDiscount: parseDecimal(snap.discount), since };
}

/** risk_score of the published state (null for UNKNOWN, no fresh discount, collateral-ratio thresholds). */
export function riskScoreOf(asset: CatalogAsset, p: Published): number | null {
  return riskScore(p.state, p.freshDiscount, asset.class, asset.thresholds);
}

/** circulating_supply x market_usd, cent-rounded; null when either factor is missing. */
export function marketCapOf(snap: SnapshotView | undefined): string | null {
  if (snap === undefined) return null;
  const supply = parseDecimal(snap.circulating_supply);
  const price = parseDecimal(snap.market_usd);
  return supply === null || price === null ? null : usdAggregateToWire(supply.times(price));
}

const wholeSecs = (ms: number): number => Math.max(0, Math.trunc(ms / 1000));

/** |x| in bps as a non-negative int32 (truncated), or null. */
function bpsInt(x: Decimal | null): number | null {
  if (x === null || !x.isFinite()) return null;
  const v = x.abs().trunc();
  return v.gt(INT32_MAX) ? INT32_MAX : v.toNumber();
}

/** The oracle entry joined to an asset: its `<SYMBOL>/USD` cross-check feed, else the catalog feed of its id. */
function joinedOracle(asset: CatalogAsset, catalog: Catalog, snap: SnapshotView): { feed: string; price: string; conf: string; publish_time: EpochMs } | null {
  if (asset.oracleFeedId === null || snap.oracle === null) return null;
  const own = crossCheckFeed(asset);
  const e = snap.oracle[own];
  if (e !== undefined) return { feed: own, ...e };
  for (const [name, id] of catalog.pythFeeds) {
    if (id.toLowerCase() !== asset.oracleFeedId.toLowerCase()) continue;
    const entry = snap.oracle[name];
    if (entry !== undefined) return { feed: name, ...entry };
  }
  return null;
}

/**
 * Advisory `oracle_degraded` (interface 2.2), worst first: oracle_divergence (|market - oracle| / oracle in bps above
 * the asset's drift threshold), oracle_confidence_wide (conf / price above 100 bps), oracle_stale (published longer ago
 * than the feed's catalog staleness). Undefined when the asset has no oracle feed (or none joined to the snapshot),
 * when the state is UNKNOWN by the oracle-confidence gate, or when nothing fired.
 */
export function oracleDegradedOf(asset: CatalogAsset, catalog: Catalog, snap: SnapshotView, now: EpochMs): OracleDegradedBody | undefined {
  if (snap.gate === "oracle_confidence") return undefined;
  const o = joinedOracle(asset, catalog, snap);
  if (o === null) return undefined;
  const price = parseDecimal(o.price);
  const conf = parseDecimal(o.conf);
  const usable = price !== null && !price.isZero();
  const confBps = usable && conf !== null ? conf.div(price).abs().times(TEN_THOUSAND) : null;
  const market = parseDecimal(snap.market_usd);
  const spreadBps = usable && market !== null && market.gt(0) ? market.minus(price).div(price).abs().times(TEN_THOUSAND) : null;
  const driftBps = isCrThresholds(asset.thresholds) ? DEFAULT_DRIFT_BPS : (asset.thresholds.drift_bps ?? DEFAULT_DRIFT_BPS);
  const ageMs = now - o.publish_time;
  const reasons: OracleDegradedBody["reason"][] = [];
  if (spreadBps !== null && spreadBps.gt(driftBps)) reasons.push("oracle_divergence");
  if (confBps !== null && confBps.gt(ORACLE_CONF_WIDE_BPS)) reasons.push("oracle_confidence_wide");
  if (ageMs > catalog.stalenessSecs(o.feed) * 1000) reasons.push("oracle_stale");
  const reason = reasons[0];
  if (reason === undefined) return undefined;
  return { reason, age_secs: wholeSecs(ageMs), conf_bps: bpsInt(confBps), spread_bps: bpsInt(spreadBps) };
}

/**
 * One AssetCard. `detail` adds `oracle_degraded` (single-asset endpoints only). Field presence follows the
 * interface table exactly: null-when-unknown fields are always present, omitted-when-unknown ones are left out.
 */
export function buildAssetCard(
  asset: CatalogAsset,
  snap: SnapshotView | undefined,
  win: Window24h | undefined,
  ctx: CardContext,
  detail = false,
): AssetCardBody {
  const p = snap === undefined ? null : publishedOf(snap, ctx.now);
  const card: AssetCardBody = {
    symbol: asset.symbol,
    name: asset.name,
    mint: asset.mint,
    class: asset.class,
    anchor: asset.anchor,
    peg_target: asset.pegTarget,
    decimals: asset.decimals,
    monitoring_only: asset.monitoringOnly,
    calibration: asset.calibration,
    risk_side: asset.riskSide,
    state: p?.state ?? null,
    ...(p?.stateReason == null ? {} : { state_reason: p.stateReason }),
    discount: snap?.discount ?? null,
    intrinsic_usd: snap?.intrinsic_usd ?? null,
    market_usd: snap?.market_usd ?? null,
    risk_score: p === null ? null : riskScoreOf(asset, p),
    ...(p === null || p.since === null
      ? {}
      : {
          sustained: sustained(p.state, p.since, ctx.now, ctx.sustainedSecs),
          current_state_duration_secs: wholeSecs(ctx.now - p.since),
        }),
    ...(snap === undefined || p === null || p.freshDiscount === null ? {} : { confidence: snap.confidence }),
    circulating_supply: snap?.circulating_supply ?? null,
    market_cap: marketCapOf(snap),
    ...(asset.class === "lst" ? { sol_per_lst: snap?.sol_per_lst ?? null } : {}),
    ...(win === undefined || win.jitter === null ? {} : { jitter_bps_24h: win.jitter }),
    ...(win === undefined || win.worst === null ? {} : { worst_abs_24h: win.worst }),
    series_24h: win === undefined ? null : [...win.series],
    ...(asset.monitoringOnly ? { monitoring_reason: asset.monitoringReason, monitoring_since: asset.monitoringSince } : {}),
    thresholds: asset.thresholds as NonNullable<AssetCardBody["thresholds"]>,
    updated_at: snap === undefined ? null : timestampToWire(snap.updated_at),
  };
  if (detail && snap !== undefined) {
    const od = oracleDegradedOf(asset, ctx.catalog, snap, ctx.now);
    if (od !== undefined) {
      // Keep `updated_at` last, as in every other card.
      const { updated_at, ...rest } = card;
      return { ...rest, oracle_degraded: od, updated_at };
    }
  }
  return card;
}

/**
 * The asset state object (interface 2.5), or null when there is no complete snapshot. `since` is the instant the
 * card's `current_state_duration_secs` counts from (a stale snapshot is UNKNOWN since the instant it went stale); when
 * that is unknown (the card then omits the duration), the snapshot's own instant.
 */
export function buildAssetState(asset: CatalogAsset, snap: SnapshotView | undefined, now: EpochMs): AssetStateBody | null {
  if (snap === undefined || snap.discount === null || snap.intrinsic_usd === null || snap.market_usd === null) return null;
  const p = publishedOf(snap, now);
  return {
    asset: asset.symbol,
    state: p.state,
    since: timestampToWire(p.since ?? snap.updated_at),
    discount: snap.discount,
    risk_score: riskScoreOf(asset, p),
    intrinsic_usd: snap.intrinsic_usd,
    market_usd: snap.market_usd,
  };
}
