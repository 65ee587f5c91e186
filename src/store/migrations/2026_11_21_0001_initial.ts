/**
 * Initial schema. Timestamps are timestamptz(3): the engine works in whole milliseconds, so storing microseconds would
 * only invite round-trip drift. Prices and discounts are unconstrained `numeric`, so a 34-digit decimal comes back
 * exactly. Receipts and catalog entries are `json`, not `jsonb`: jsonb reorders object keys, and both are served
 * (and hashed by verifiers) exactly as built.
 */
import { sql, type Kysely } from "kysely";

const ts = sql`timestamptz(3)`;

// Migrations must not depend on the app's evolving Database type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("assets")
    .addColumn("mint", "text", (c) => c.primaryKey())
    .addColumn("symbol", "text", (c) => c.notNull().unique())
    .addColumn("class", "text", (c) => c.notNull())
    .addColumn("active", "boolean", (c) => c.notNull())
    .addColumn("entry", "json", (c) => c.notNull())
    .addColumn("updated_at", ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("asset_snapshots")
    .addColumn("mint", "text", (c) => c.primaryKey().references("assets.mint"))
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("band", "text", (c) => c.notNull())
    .addColumn("gate", "text")
    .addColumn("state_reason", "text")
    .addColumn("discount", "numeric")
    .addColumn("discount_raw", "numeric")
    .addColumn("intrinsic_usd", "numeric")
    .addColumn("market_usd", "numeric")
    .addColumn("confidence", "text")
    .addColumn("committed_since", ts)
    .addColumn("published_since", ts)
    .addColumn("updated_at", ts, (c) => c.notNull())
    .addColumn("version", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("samples")
    .addColumn("mint", "text", (c) => c.notNull().references("assets.mint"))
    .addColumn("ts", ts, (c) => c.notNull())
    .addColumn("seq", "integer", (c) => c.notNull())
    .addColumn("discount", "numeric", (c) => c.notNull())
    .addColumn("discount_raw", "numeric", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("market_usd", "numeric", (c) => c.notNull())
    .addColumn("intrinsic_usd", "numeric", (c) => c.notNull())
    .addPrimaryKeyConstraint("samples_pkey", ["mint", "ts", "seq"])
    .execute();
  // Retention deletes and the global "last sample" read scan by time across assets.
  await db.schema.createIndex("samples_ts_idx").on("samples").column("ts").execute();

  await db.schema
    .createTable("rollups_1m")
    .addColumn("mint", "text", (c) => c.notNull())
    .addColumn("minute", ts, (c) => c.notNull())
    .addColumn("avg_discount", "numeric", (c) => c.notNull())
    .addColumn("min_discount", "numeric", (c) => c.notNull())
    .addColumn("max_discount", "numeric", (c) => c.notNull())
    .addColumn("samples", "integer", (c) => c.notNull())
    .addColumn("last_state", "text", (c) => c.notNull())
    .addColumn("last_ts", ts, (c) => c.notNull())
    .addPrimaryKeyConstraint("rollups_1m_pkey", ["mint", "minute"])
    .execute();
  await db.schema.createIndex("rollups_1m_minute_idx").on("rollups_1m").column("minute").execute();

  await db.schema
    .createTable("alerts")
    .addColumn("id", "uuid", (c) => c.primaryKey())
    .addColumn("mint", "text", (c) => c.notNull().references("assets.mint"))
    .addColumn("asset", "text", (c) => c.notNull())
    .addColumn("class", "text", (c) => c.notNull())
    .addColumn("from_state", "text", (c) => c.notNull())
    .addColumn("to_state", "text", (c) => c.notNull())
    .addColumn("discount", "numeric", (c) => c.notNull())
    .addColumn("discount_bps", "integer", (c) => c.notNull())
    .addColumn("state_reason", "text")
    .addColumn("detected_at", ts, (c) => c.notNull())
    .addColumn("dispatched_at", ts)
    .addColumn("methodology_version", "text", (c) => c.notNull())
    .addColumn("monitoring_only", "boolean", (c) => c.notNull())
    .addColumn("calibration", "text", (c) => c.notNull())
    .addColumn("receipt_sha256", "text", (c) => c.notNull())
    .addColumn("seq", "bigint")
    .execute();
  // Feeds list newest first (id breaks ties within one millisecond); per-asset views filter by mint first.
  await db.schema.createIndex("alerts_detected_at_idx").on("alerts").columns(["detected_at desc", "id desc"]).execute();
  await db.schema.createIndex("alerts_mint_detected_at_idx").on("alerts").columns(["mint", "detected_at desc"]).execute();
  // WebSocket resume reads transitions after a stream sequence.
  await db.schema.createIndex("alerts_seq_idx").on("alerts").column("seq").where(sql.ref("seq"), "is not", null).execute();

  await db.schema
    .createTable("receipts")
    .addColumn("alert_id", "uuid", (c) => c.primaryKey().references("alerts.id"))
    .addColumn("receipt", "json", (c) => c.notNull())
    .addColumn("receipt_sha256", "text", (c) => c.notNull())
    .addColumn("commit_status", "text", (c) => c.notNull().defaultTo("not_applicable"))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ["receipts", "alerts", "rollups_1m", "samples", "asset_snapshots", "assets"]) {
    await db.schema.dropTable(t).execute();
  }
}
