/**
 * Accounts and webhook delivery (issue 6): users, revoked sessions, magic links, alert subscriptions, webhooks, their
 * delivery records and the webhook signing keys.
 *
 * - No foreign key points at `assets`: the store contract truncates `assets` on its own, and PostgreSQL refuses to
 *   truncate a table another one references. Subscriptions and webhooks keep the asset's symbol and mint as text.
 * - "At most one active subscription per (user, asset)" is a partial unique index, so two concurrent creates cannot
 *   both win; the per-user caps are checked under a row lock on the user (accounts.ts).
 * - Listings read newest first by (instant desc, id desc): the indexes carry both, so keyset pages read in order.
 * - `preferences` and `request_headers` are `json` (not jsonb) like the other documents: served as written.
 */
import { sql, type Kysely } from "kysely";

const ts = sql`timestamptz(3)`;

// Migrations must not depend on the app's evolving Database type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("users")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    .addColumn("telegram_id", "bigint", (c) => c.notNull().unique())
    .addColumn("username", "text")
    .addColumn("first_name", "text", (c) => c.notNull())
    .addColumn("locale", "text", (c) => c.notNull())
    .addColumn("preferences", "json", (c) => c.notNull())
    .addColumn("created_at", ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("revoked_tokens")
    .addColumn("jti", "text", (c) => c.primaryKey())
    .addColumn("revoked_at", ts, (c) => c.notNull())
    .addColumn("expires_at", ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex("revoked_tokens_expires_at_idx").on("revoked_tokens").column("expires_at").execute();

  await db.schema
    .createTable("magic_links")
    .addColumn("token_hash", "text", (c) => c.primaryKey())
    .addColumn("user_id", "bigint", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("expires_at", ts, (c) => c.notNull())
    .addColumn("used_at", ts)
    .execute();
  await db.schema.createIndex("magic_links_expires_at_idx").on("magic_links").column("expires_at").execute();

  await db.schema
    .createTable("subscriptions")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    .addColumn("user_id", "bigint", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("asset", "text", (c) => c.notNull())
    .addColumn("mint", "text", (c) => c.notNull())
    .addColumn("channel", "text", (c) => c.notNull())
    .addColumn("threshold_bps", "integer", (c) => c.notNull())
    .addColumn("is_active", "boolean", (c) => c.notNull())
    .addColumn("created_at", ts, (c) => c.notNull())
    .addColumn("last_fired_at", ts)
    .execute();
  await db.schema
    .createIndex("subscriptions_one_active_idx")
    .on("subscriptions")
    .columns(["user_id", "mint"])
    .unique()
    .where(sql.ref("is_active"), "=", true)
    .execute();
  await db.schema.createIndex("subscriptions_user_idx").on("subscriptions").columns(["user_id", "created_at desc", "id desc"]).execute();
  // Dispatch: the active subscribers of one asset.
  await db.schema.createIndex("subscriptions_mint_active_idx").on("subscriptions").column("mint").where(sql.ref("is_active"), "=", true).execute();

  await db.schema
    .createTable("webhooks")
    .addColumn("id", "uuid", (c) => c.primaryKey())
    .addColumn("user_id", "bigint", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("asset", "text", (c) => c.notNull())
    .addColumn("mint", "text", (c) => c.notNull())
    .addColumn("threshold_bps", "integer", (c) => c.notNull())
    .addColumn("format", "text", (c) => c.notNull())
    .addColumn("is_active", "boolean", (c) => c.notNull())
    .addColumn("created_at", ts, (c) => c.notNull())
    .addColumn("updated_at", ts, (c) => c.notNull())
    .addColumn("last_delivery_at", ts)
    .addColumn("last_status", "text")
    .addColumn("consecutive_failures", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex("webhooks_user_idx").on("webhooks").columns(["user_id", "created_at desc", "id desc"]).execute();
  await db.schema.createIndex("webhooks_mint_active_idx").on("webhooks").column("mint").where(sql.ref("is_active"), "=", true).execute();

  await db.schema
    .createTable("deliveries")
    .addColumn("id", "uuid", (c) => c.primaryKey())
    .addColumn("webhook_id", "uuid", (c) => c.notNull().references("webhooks.id").onDelete("cascade"))
    .addColumn("event_id", "uuid", (c) => c.notNull())
    .addColumn("alert_id", "uuid")
    .addColumn("attempt", "integer", (c) => c.notNull())
    .addColumn("max_attempts", "integer", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("response_status", "integer")
    .addColumn("error", "text")
    .addColumn("duration_ms", "integer")
    .addColumn("request_headers", "json")
    .addColumn("response_body_excerpt", "text")
    .addColumn("scheduled_at", ts, (c) => c.notNull())
    .addColumn("sent_at", ts)
    .addColumn("next_attempt_at", ts)
    .addColumn("test", "boolean", (c) => c.notNull().defaultTo(false))
    .execute();
  // The history page (newest first, keyset cursor) and replay (undelivered events of one webhook in a window).
  await db.schema.createIndex("deliveries_webhook_scheduled_idx").on("deliveries").columns(["webhook_id", "scheduled_at desc", "id desc"]).execute();
  await db.schema.createIndex("deliveries_event_idx").on("deliveries").columns(["webhook_id", "event_id"]).execute();
  // The worker's due list.
  await db.schema.createIndex("deliveries_due_idx").on("deliveries").column("next_attempt_at").where(sql.ref("status"), "=", "pending").execute();

  await db.schema
    .createTable("signing_keys")
    .addColumn("kid", "text", (c) => c.primaryKey())
    .addColumn("alg", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("public_key", "text", (c) => c.notNull())
    .addColumn("private_key", "text", (c) => c.notNull())
    .addColumn("created_at", ts, (c) => c.notNull())
    .addColumn("retires_at", ts)
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ["signing_keys", "deliveries", "webhooks", "subscriptions", "magic_links", "revoked_tokens", "users"]) {
    await db.schema.dropTable(t).execute();
  }
}
