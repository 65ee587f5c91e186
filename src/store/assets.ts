/**
 * Assets (upserted from the catalog) and the latest published snapshot of each. A snapshot write carries the
 * evaluation instant and a monotonic version; it applies only when (updated_at, version) is strictly newer than the
 * stored row's, so a late or re-ordered write never overwrites a newer one (STYLE "monotonic versions on writes").
 */
import { sql } from "kysely";
import { createHash } from "node:crypto";
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
  type OracleEntry,
  type PegState,
} from "../methodology/index.ts";
import {
  StoreDataError,
  decimalParam,
  decimalParamOrNull,
  toDecimal,
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
  // Every start after the first finds the same catalog: one digest of the stored rows, instead of sending them all
  // (10,000 assets are 60,000 parameters) to change none. Any difference, whatever its cause, takes the upsert.
  if ((await storedAssetsDigest(db, rows)) === assetsDigest(rows)) return 0;
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

type AssetRow = { readonly mint: string; readonly symbol: string; readonly class: string; readonly active: boolean; readonly entry: string };

/** SHA-256 (hex) of the rows' upserted columns in mint order, as `storedAssetsDigest` computes it in SQL. */
function assetsDigest(rows: readonly AssetRow[]): string {
  const sorted = [...rows].sort((a, b) => (a.mint < b.mint ? -1 : a.mint > b.mint ? 1 : 0));
  return createHash("sha256")
    .update(sorted.map((r) => [r.mint, r.symbol, r.class, String(r.active), r.entry].join("\u0001")).join("\u0002"))
    .digest("hex");
}

/** The same digest over the stored rows of these mints (a missing or differing row gives another digest). */
async function storedAssetsDigest(db: Executor, rows: readonly AssetRow[]): Promise<string | null> {
  const r = await sql<{ digest: string | null }>`
    select encode(sha256(convert_to(string_agg(
      mint || chr(1) || symbol || chr(1) || class || chr(1) || active::text || chr(1) || entry::text, chr(2) order by mint collate "C"
    ), 'UTF8')), 'hex') as digest
    from assets where mint = any(${rows.map((x) => x.mint)}::text[])`.execute(db);
  return r.rows[0]?.digest ?? null;
}

/** One oracle entry of a snapshot: wire decimals in the feed's quote units, `publish_time` in epoch ms. */
export interface OracleSnapshot {
  readonly price: string;
  readonly conf: string;
  readonly publish_time: EpochMs;
}

/** A snapshot's oracle entries by feed name (as the sample named them), in the sample's member order. */
export type OracleSnapshots = Readonly<Record<string, OracleSnapshot>>;

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
  /** Intrinsic SOL per share of the latest sample (the stake-pool rate; LSTs), or null when the sample had none. */
  readonly sol_per_lst: string | null;
  /** The latest sample's oracle entries ({} when it used none); null when unknown (rows from before migration 0002). */
  readonly oracle: OracleSnapshots | null;
  /**
   * Circulating supply scaled by decimals, or null until first observed. A slow signal: a write carrying null keeps
   * the stored value (see upsertSnapshot), so per-sample writes never erase it.
   */
  readonly circulating_supply: string | null;
}

/** The oracle entries of an engine sample in snapshot form, feeds in name order (as the wire sample writes them). */
export function oracleSnapshotsOf(oracle: Readonly<Record<string, OracleEntry>>): OracleSnapshots {
  const out: Record<string, OracleSnapshot> = {};
  for (const name of Object.keys(oracle).sort()) {
    const e = oracle[name]!;
    out[name] = { price: decimalToWire(e.price), conf: decimalToWire(e.conf), publish_time: e.publish_time };
  }
  return out;
}

function oracleParamOrNull(oracle: OracleSnapshots | null): string | null {
  if (oracle === null) return null;
  for (const [name, e] of Object.entries(oracle)) {
    decimalParam(e.price, `oracle.${name}.price`);
    decimalParam(e.conf, `oracle.${name}.conf`);
    if (!Number.isSafeInteger(e.publish_time)) throw new RangeError(`oracle.${name}.publish_time must be integer epoch ms`);
  }
  return JSON.stringify(oracle);
}

/** The `oracle` json column read back (parsed by both drivers), checked member by member. */
function toOracleOrNull(v: unknown, column: string): OracleSnapshots | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== "object" || Array.isArray(v)) throw new StoreDataError(column, v);
  const out: Record<string, OracleSnapshot> = {};
  for (const [name, raw] of Object.entries(v as Record<string, unknown>)) {
    if (typeof raw !== "object" || raw === null) throw new StoreDataError(`${column}.${name}`, raw);
    const e = raw as Record<string, unknown>;
    const publish = e["publish_time"];
    if (typeof publish !== "number" || !Number.isSafeInteger(publish)) throw new StoreDataError(`${column}.${name}.publish_time`, publish);
    out[name] = {
      price: toDecimal(e["price"], `${column}.${name}.price`),
      conf: toDecimal(e["conf"], `${column}.${name}.conf`),
      publish_time: publish,
    };
  }
  return out;
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
    sol_per_lst: e.sample.intrinsic_sol === null ? null : decimalToWire(e.sample.intrinsic_sol),
    oracle: oracleSnapshotsOf(e.sample.oracle),
    circulating_supply: null,
  };
}

/**
 * Writes the snapshot unless the stored one is as new or newer. Returns true when it was applied. A null
 * `circulating_supply` keeps the stored one (the supply is observed on its own slow cadence, not with every sample).
 */
export async function upsertSnapshot(db: Executor, row: SnapshotRow): Promise<boolean> {
  return (await upsertSnapshots(db, [row])) > 0;
}

/** Snapshots per statement: 17 parameters each stays far below PostgreSQL's 65,535-parameter limit. */
const SNAPSHOT_CHUNK = 2000;

/**
 * `upsertSnapshot` for many assets in one statement per chunk (a sample batch of thousands of assets costs one round
 * trip, not one each). Of several rows for one mint only the newest (updated_at, version) is written. Returns how
 * many were applied.
 */
export async function upsertSnapshots(db: Executor, rows: readonly SnapshotRow[]): Promise<number> {
  const newest = new Map<string, SnapshotRow>();
  for (const row of rows) {
    if (!Number.isSafeInteger(row.version) || row.version < 0) throw new RangeError("version must be a non-negative integer");
    const seen = newest.get(row.mint);
    if (seen === undefined || row.updated_at > seen.updated_at || (row.updated_at === seen.updated_at && row.version > seen.version)) {
      newest.set(row.mint, row);
    }
  }
  const all = [...newest.values()].map(snapshotValues);
  let applied = 0;
  for (let i = 0; i < all.length; i += SNAPSHOT_CHUNK) {
    const written = await db
      .insertInto("asset_snapshots")
      .values(all.slice(i, i + SNAPSHOT_CHUNK))
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
            sol_per_lst: eb.ref("excluded.sol_per_lst"),
            oracle: eb.ref("excluded.oracle"),
            circulating_supply: sql<string | null>`coalesce(excluded.circulating_supply, asset_snapshots.circulating_supply)`,
          }))
          .where(sql<boolean>`(excluded.updated_at, excluded.version) > (asset_snapshots.updated_at, asset_snapshots.version)`),
      )
      .returning("mint")
      .execute();
    applied += written.length;
  }
  return applied;
}

function snapshotValues(row: SnapshotRow) {
  return {
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
    sol_per_lst: decimalParamOrNull(row.sol_per_lst, "sol_per_lst"),
    oracle: oracleParamOrNull(row.oracle),
    circulating_supply: decimalParamOrNull(row.circulating_supply, "circulating_supply"),
  };
}

/** The newest snapshot's `updated_at`, or null when there is none: one aggregate, not every row (readiness). */
export async function newestSnapshotAt(db: Executor): Promise<EpochMs | null> {
  const r = await db.selectFrom("asset_snapshots").select((eb) => eb.fn.max("updated_at").as("at")).executeTakeFirst();
  return toMsOrNull(r?.at ?? null, "max(asset_snapshots.updated_at)");
}

/** One asset's latest published state, the part a live feed starts from (`latestStates`). */
export interface LatestState {
  readonly mint: string;
  readonly state: PegState;
  /** d_smooth, wire decimal. */
  readonly discount: string | null;
  readonly updated_at: EpochMs;
}

/**
 * Every stored snapshot's state, discount and instant: what the WebSocket hub is seeded with at start, read without the
 * other columns (a fraction of `latestSnapshots`' decoding for thousands of assets, on the way to the HTTP listener).
 */
export async function latestStates(db: Executor): Promise<LatestState[]> {
  const rows = await db.selectFrom("asset_snapshots").select(["mint", "state", "discount", "updated_at"]).execute();
  return rows.map((r) => ({
    mint: r.mint,
    state: toEnum(r.state, PEG_STATES, "asset_snapshots.state"),
    discount: toDecimalOrNull(r.discount, "asset_snapshots.discount"),
    updated_at: toMs(r.updated_at, "asset_snapshots.updated_at"),
  }));
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
    sol_per_lst: toDecimalOrNull(r.sol_per_lst, "asset_snapshots.sol_per_lst"),
    oracle: toOracleOrNull(r.oracle, "asset_snapshots.oracle"),
    circulating_supply: toDecimalOrNull(r.circulating_supply, "asset_snapshots.circulating_supply"),
  }));
}
