/**
 * Assets (upserted from the catalog) and the latest published snapshot of each. A snapshot write carries the
 * evaluation instant and a monotonic version; it applies only when (updated_at, version) is strictly newer than the
 * stored row's, so a late or re-ordered write never overwrites a newer one (STYLE "monotonic versions on writes").
 */
import { sql } from "kysely";
import type { StateEvent } from "../actors/index.ts";
import type { CatalogAsset } from "../catalog/index.ts";
import {
  BANDS,
  CONFIDENCES,
  GATES,
  PEG_STATES,
  decimalToWire,
  type Band,
  type Confidence,
  type EpochMs,
  type GateName,
  type PegState,
} from "../methodology/index.ts";
import {
  decimalParamOrNull,
  toDecimalOrNull,
  toEnum,
  toEnumOrNull,
  toInt,
  toMs,
  toMsOrNull,
  tsParam,
  tsParamOrNull,
} from "./normalise.ts";
import type { Executor } from "./schema.ts";

/**
 * Inserts every catalog asset, or updates it when its symbol, class, active flag or entry changed (then `updated_at`
 * moves to `now`). Returns how many rows were inserted or changed. Assets are never deleted: alerts and samples refer
 * to them, and a retired asset is `active: false` in the catalog. Call it at start, before any sample, snapshot or
 * alert is written: those rows reference `assets.mint`. A symbol moving to a different mint (symbols are unique) fails
 * the whole upsert; that is a catalog error to fix, not to paper over.
 */
export async function upsertAssets(db: Executor, assets: readonly CatalogAsset[], now: EpochMs): Promise<number> {
  if (assets.length === 0) return 0;
  const rows = assets.map((a) => ({
    mint: a.mint,
    symbol: a.symbol,
    class: a.class,
    active: a.active,
    entry: JSON.stringify(a.entry),
    updated_at: tsParam(now),
  }));
  const changed = await db
    .insertInto("assets")
    .values(rows)
    .onConflict((oc) =>
      oc
        .column("mint")
        .doUpdateSet((eb) => ({
          symbol: eb.ref("excluded.symbol"),
          class: eb.ref("excluded.class"),
          active: eb.ref("excluded.active"),
          entry: eb.ref("excluded.entry"),
          updated_at: eb.ref("excluded.updated_at"),
        }))
        // json has no equality operator; its text is the entry exactly as shipped.
        .where(sql<boolean>`(assets.symbol, assets.class, assets.active, assets.entry::text)
          is distinct from (excluded.symbol, excluded.class, excluded.active, excluded.entry::text)`),
    )
    .returning("mint")
    .execute();
  return changed.length;
}

/** One asset's latest published evaluation. Decimals are wire strings; instants are epoch ms. */
export interface SnapshotRow {
  readonly mint: string;
  readonly state: PegState;
  readonly band: Band;
  readonly gate: GateName | null;
  readonly state_reason: string | null;
  /** d_smooth. */
  readonly discount: string | null;
  readonly discount_raw: string | null;
  readonly intrinsic_usd: string | null;
  readonly market_usd: string | null;
  readonly confidence: Confidence | null;
  readonly committed_since: EpochMs | null;
  readonly published_since: EpochMs | null;
  /** The evaluation instant. */
  readonly updated_at: EpochMs;
  /** Monotonic per asset within one writer; breaks ties between writes of the same instant. */
  readonly version: number;
}

/** The snapshot row of a published recompute. */
export function snapshotFromStateEvent(e: StateEvent, version: number): SnapshotRow {
  return {
    mint: e.mint,
    state: e.state,
    band: e.band,
    gate: e.gate,
    state_reason: e.state_reason,
    discount: decimalToWire(e.discount),
    discount_raw: decimalToWire(e.discount_raw),
    intrinsic_usd: decimalToWire(e.sample.intrinsic_usd),
    market_usd: decimalToWire(e.sample.market_usd),
    confidence: e.confidence,
    committed_since: e.engine.committedSince,
    published_since: e.engine.publishedSince,
    updated_at: e.now,
    version,
  };
}

/** Writes the snapshot unless the stored one is as new or newer. Returns true when it was applied. */
export async function upsertSnapshot(db: Executor, row: SnapshotRow): Promise<boolean> {
  if (!Number.isSafeInteger(row.version) || row.version < 0) throw new RangeError("version must be a non-negative integer");
  const values = {
    mint: row.mint,
    state: row.state,
    band: row.band,
    gate: row.gate,
    state_reason: row.state_reason,
    discount: decimalParamOrNull(row.discount, "discount"),
    discount_raw: decimalParamOrNull(row.discount_raw, "discount_raw"),
    intrinsic_usd: decimalParamOrNull(row.intrinsic_usd, "intrinsic_usd"),
    market_usd: decimalParamOrNull(row.market_usd, "market_usd"),
    confidence: row.confidence,
    committed_since: tsParamOrNull(row.committed_since),
    published_since: tsParamOrNull(row.published_since),
    updated_at: tsParam(row.updated_at),
    version: row.version,
  };
  const applied = await db
    .insertInto("asset_snapshots")
    .values(values)
    .onConflict((oc) =>
      oc
        .column("mint")
        .doUpdateSet((eb) => ({
          state: eb.ref("excluded.state"),
          band: eb.ref("excluded.band"),
          gate: eb.ref("excluded.gate"),
          state_reason: eb.ref("excluded.state_reason"),
          discount: eb.ref("excluded.discount"),
          discount_raw: eb.ref("excluded.discount_raw"),
          intrinsic_usd: eb.ref("excluded.intrinsic_usd"),
          market_usd: eb.ref("excluded.market_usd"),
          confidence: eb.ref("excluded.confidence"),
          committed_since: eb.ref("excluded.committed_since"),
          published_since: eb.ref("excluded.published_since"),
          updated_at: eb.ref("excluded.updated_at"),
          version: eb.ref("excluded.version"),
        }))
        .where(sql<boolean>`(excluded.updated_at, excluded.version) > (asset_snapshots.updated_at, asset_snapshots.version)`),
    )
    .returning("mint")
    .execute();
  return applied.length > 0;
}

/** Every stored snapshot, by mint. */
export async function latestSnapshots(db: Executor): Promise<SnapshotRow[]> {
  const rows = await db.selectFrom("asset_snapshots").selectAll().orderBy("mint").execute();
  return rows.map((r) => ({
    mint: r.mint,
    state: toEnum(r.state, PEG_STATES, "asset_snapshots.state"),
    band: toEnum(r.band, BANDS, "asset_snapshots.band"),
    gate: toEnumOrNull(r.gate, GATES, "asset_snapshots.gate"),
    state_reason: r.state_reason,
    discount: toDecimalOrNull(r.discount, "asset_snapshots.discount"),
    discount_raw: toDecimalOrNull(r.discount_raw, "asset_snapshots.discount_raw"),
    intrinsic_usd: toDecimalOrNull(r.intrinsic_usd, "asset_snapshots.intrinsic_usd"),
    market_usd: toDecimalOrNull(r.market_usd, "asset_snapshots.market_usd"),
    confidence: toEnumOrNull(r.confidence, CONFIDENCES, "asset_snapshots.confidence"),
    committed_since: toMsOrNull(r.committed_since, "asset_snapshots.committed_since"),
    published_since: toMsOrNull(r.published_since, "asset_snapshots.published_since"),
    updated_at: toMs(r.updated_at, "asset_snapshots.updated_at"),
    version: toInt(r.version, "asset_snapshots.version"),
  }));
}
