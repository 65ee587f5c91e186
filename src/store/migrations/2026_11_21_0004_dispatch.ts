/**
 * Durable dispatch and the Telegram channel (issue 6).
 *
 * - `dispatch_log`: one row per (target, alert) that dispatch decided to send: the transition's asset, target state
 *   and detection instant. It is the history the addendum F rules read (the 30-minute floor, "returns to PEGGED after
 *   one that fired"), written before the transition's message is acknowledged, so a decision never depends on how
 *   far the alert projection has got and a redelivered transition finds its own earlier decision. `target` is
 *   `webhook:<uuid>` or `subscription:<id>`.
 * - `notifications`: one row per alert sent to a subscription through the Telegram Bot API: the attempt count, the
 *   instant it is due (held to the end of the user's quiet hours), and the outcome. The id is derived from
 *   (subscription, alert), so dispatching the same transition twice creates nothing new.
 */
import { sql, type Kysely } from "kysely";

const ts = sql`timestamptz(3)`;

// Migrations must not depend on the app's evolving Database type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("dispatch_log")
    .addColumn("target", "text", (c) => c.notNull())
    .addColumn("alert_id", "uuid", (c) => c.notNull())
    .addColumn("asset", "text", (c) => c.notNull())
    .addColumn("to_state", "text", (c) => c.notNull())
    .addColumn("ts", ts, (c) => c.notNull())
    .addPrimaryKeyConstraint("dispatch_log_pk", ["target", "alert_id"])
    .execute();
  await db.schema.createIndex("dispatch_log_target_ts_idx").on("dispatch_log").columns(["target", "ts desc"]).execute();

  await db.schema
    .createTable("notifications")
    .addColumn("id", "uuid", (c) => c.primaryKey())
    .addColumn("subscription_id", "bigint", (c) => c.notNull().references("subscriptions.id").onDelete("cascade"))
    .addColumn("user_id", "bigint", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("channel", "text", (c) => c.notNull())
    .addColumn("alert_id", "uuid", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("due_at", ts, (c) => c.notNull())
    .addColumn("held_for_quiet_hours", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("response_status", "integer")
    .addColumn("error", "text")
    .addColumn("message_id", "bigint")
    .addColumn("created_at", ts, (c) => c.notNull())
    .addColumn("sent_at", ts)
    .execute();
  await db.schema.createIndex("notifications_subscription_idx").on("notifications").columns(["subscription_id", "created_at desc"]).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ["notifications", "dispatch_log"]) await db.schema.dropTable(t).execute();
}
