/**
 * Table types of the store (Kysely's `Database` shape). Select types are what either driver may hand back: node-postgres
 * returns int8 as a string and PGlite as a number, both return timestamptz as a Date and numeric as a string. The
 * repositories normalise them (see normalise.ts) so callers only ever see epoch-ms numbers and exact decimal strings.
 * Inserts take ISO-8601 strings for timestamps and wire decimal strings for numerics.
 */
import type { ColumnType, Generated, Kysely } from "kysely";

/** timestamptz(3): written as an RFC 3339 string, read back as a Date (or a string on exotic drivers). */
export type Timestamptz = ColumnType<Date | string, string, string>;
/** Nullable timestamptz(3). */
export type NullableTimestamptz = ColumnType<Date | string | null, string | null, string | null>;
/** bigint: node-postgres reads a string, PGlite a number (or a bigint beyond 2^53). */
export type Int8 = ColumnType<string | number | bigint, number | string, number | string>;
/** numeric: exact decimal text both ways, never a JS number. */
export type Numeric = ColumnType<string, string, string>;
export type NullableNumeric = ColumnType<string | null, string | null, string | null>;
/** json: written as JSON text, read back parsed (key order preserved, unlike jsonb). */
export type Json = ColumnType<unknown, string, string>;
/** Nullable json. */
export type NullableJson = ColumnType<unknown, string | null, string | null>;

export interface AssetsTable {
  mint: string;
  symbol: string;
  class: string;
  active: boolean;
  entry: Json;
  updated_at: Timestamptz;
}

export interface AssetSnapshotsTable {
  mint: string;
  state: string;
  band: string;
  gate: string | null;
  state_reason: string | null;
  discount: NullableNumeric;
  discount_raw: NullableNumeric;
  intrinsic_usd: NullableNumeric;
  market_usd: NullableNumeric;
  confidence: string | null;
  committed_since: NullableTimestamptz;
  published_since: NullableTimestamptz;
  updated_at: Timestamptz;
  version: Int8;
  /** Intrinsic SOL per LST share of the latest sample (migration 0002). */
  sol_per_lst: NullableNumeric;
  /** The latest sample's oracle entries: `{feed: {price, conf, publish_time (epoch ms)}}` (migration 0002). */
  oracle: NullableJson;
  /** Circulating supply scaled by decimals; kept across snapshot writes that do not carry it (migration 0002). */
  circulating_supply: NullableNumeric;
}

export interface SamplesTable {
  mint: string;
  ts: Timestamptz;
  seq: number;
  discount: Numeric;
  discount_raw: Numeric;
  state: string;
  market_usd: Numeric;
  intrinsic_usd: Numeric;
}

export interface Rollups1mTable {
  mint: string;
  minute: Timestamptz;
  avg_discount: Numeric;
  min_discount: Numeric;
  max_discount: Numeric;
  samples: number;
  last_state: string;
  last_ts: Timestamptz;
}

export interface AlertsTable {
  id: string;
  mint: string;
  asset: string;
  class: string;
  from_state: string;
  to_state: string;
  discount: Numeric;
  discount_bps: number;
  state_reason: string | null;
  detected_at: Timestamptz;
  dispatched_at: NullableTimestamptz;
  methodology_version: string;
  monitoring_only: boolean;
  calibration: string;
  receipt_sha256: string;
  seq: ColumnType<string | number | bigint | null, number | string | null, number | string | null>;
}

export interface ReceiptsTable {
  alert_id: string;
  receipt: Json;
  receipt_sha256: string;
  commit_status: Generated<string>;
}

export interface Database {
  assets: AssetsTable;
  asset_snapshots: AssetSnapshotsTable;
  samples: SamplesTable;
  rollups_1m: Rollups1mTable;
  alerts: AlertsTable;
  receipts: ReceiptsTable;
}

/** What every repository takes first: the database or a transaction on it (STYLE: kysely example app). */
export type Executor = Kysely<Database>;
