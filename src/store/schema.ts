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

/** Since migration 0009 a view over `sample_rows` and `sample_minutes` (read-only; samples.ts reads the tables). */
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

/** Since migration 0009 a view over `rollup_minutes` (read-only; samples.ts and readmodel.ts read through it). */
export interface Rollups1mTable {
  mint: string;
  minute: Timestamptz;
  avg_discount: Numeric;
  min_discount: Numeric;
  max_discount: Numeric;
  samples: number;
  last_state: string;
  last_ts: Timestamptz;
  /** Exact sum of the minute's discounts: `avg_discount` is `sum_discount / samples` (migration 0006). */
  sum_discount: Numeric;
  /** Seq of the minute's last row (with `last_ts`, its order key). */
  last_seq: number;
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

/** bigserial primary key: generated on insert, read back as int8. */
export type Serial = ColumnType<string | number | bigint, never, never>;

/** Accounts (migration 0003). `telegram_id` is the login widget's user id. */
export interface UsersTable {
  id: Serial;
  telegram_id: Int8;
  username: string | null;
  first_name: string;
  locale: string;
  preferences: Json;
  created_at: Timestamptz;
}

/** Logged-out sessions by `jti`, kept until the token would have expired anyway. */
export interface RevokedTokensTable {
  jti: string;
  revoked_at: Timestamptz;
  expires_at: Timestamptz;
}

/** Magic links, stored only as the SHA-256 of their token. */
export interface MagicLinksTable {
  token_hash: string;
  user_id: Int8;
  expires_at: Timestamptz;
  used_at: NullableTimestamptz;
}

export interface SubscriptionsTable {
  id: Serial;
  user_id: Int8;
  asset: string;
  mint: string;
  channel: string;
  threshold_bps: number;
  is_active: boolean;
  created_at: Timestamptz;
  last_fired_at: NullableTimestamptz;
}

export interface WebhooksTable {
  id: string;
  user_id: Int8;
  url: string;
  asset: string;
  mint: string;
  threshold_bps: number;
  format: string;
  is_active: boolean;
  created_at: Timestamptz;
  updated_at: Timestamptz;
  last_delivery_at: NullableTimestamptz;
  last_status: string | null;
  consecutive_failures: Generated<number>;
}

export interface DeliveriesTable {
  id: string;
  webhook_id: string;
  event_id: string;
  alert_id: string | null;
  attempt: number;
  max_attempts: number;
  status: string;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
  request_headers: NullableJson;
  response_body_excerpt: string | null;
  scheduled_at: Timestamptz;
  sent_at: NullableTimestamptz;
  next_attempt_at: NullableTimestamptz;
  test: Generated<boolean>;
}

export interface SigningKeysTable {
  kid: string;
  alg: string;
  status: string;
  public_key: string;
  /** PKCS#8 PEM. Secret. */
  private_key: string;
  created_at: Timestamptz;
  retires_at: NullableTimestamptz;
}

export interface DispatchLogTable {
  /** `webhook:<uuid>` or `subscription:<id>`. */
  target: string;
  alert_id: string;
  asset: string;
  to_state: string;
  ts: Timestamptz;
}

export interface NotificationsTable {
  id: string;
  subscription_id: Int8;
  user_id: Int8;
  channel: string;
  alert_id: string;
  status: string;
  attempts: Generated<number>;
  due_at: Timestamptz;
  held_for_quiet_hours: Generated<boolean>;
  response_status: number | null;
  error: string | null;
  message_id: ColumnType<string | number | bigint | null, number | string | null, number | string | null>;
  created_at: Timestamptz;
  sent_at: NullableTimestamptz;
}

export interface Database {
  assets: AssetsTable;
  asset_snapshots: AssetSnapshotsTable;
  samples: SamplesTable;
  rollups_1m: Rollups1mTable;
  alerts: AlertsTable;
  receipts: ReceiptsTable;
  users: UsersTable;
  revoked_tokens: RevokedTokensTable;
  magic_links: MagicLinksTable;
  subscriptions: SubscriptionsTable;
  webhooks: WebhooksTable;
  deliveries: DeliveriesTable;
  signing_keys: SigningKeysTable;
  dispatch_log: DispatchLogTable;
  notifications: NotificationsTable;
}

/** What every repository takes first: the database or a transaction on it (STYLE: kysely example app). */
export type Executor = Kysely<Database>;
