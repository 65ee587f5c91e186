/**
 * On-chain anchoring (issue 7, methodology section 8): one row per anchored receipt, the daily commit budget and the
 * fee payer key.
 *
 * - `anchors` is keyed by the alert id, so an alert is claimed once. No foreign key to `receipts`: the store contract
 *   truncates the ledger tables on their own, which PostgreSQL refuses for a referenced table. The signed transaction (its signature, wire
 *   bytes and the blockhash's last valid block height) is written before it is sent: after a restart the worker first
 *   asks the cluster about that signature and only builds a new transaction once the old one can no longer land.
 * - `anchor_budget` counts, per UTC day, the alerts that were given a commit; the increment is one conditional upsert,
 *   so two writers cannot both take the last unit.
 * - `lease_owner` / `lease_until`: the worker that holds the alert. Several engine processes may run workers on one
 *   database; only the lease holder signs and sends, and a lease left by a dead process lapses.
 * - `anchor_keys` keeps the generated fee payer (base58 address and 32-byte seed, hex). Secret.
 * - The partial index on `receipts` serves the worker's "what is waiting" scan without reading the whole ledger.
 */
import { sql, type Kysely } from "kysely";

const ts = sql`timestamptz(3)`;

// Migrations must not depend on the app's evolving Database type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("anchors")
    .addColumn("alert_id", "uuid", (c) => c.primaryKey())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("budget_day", "text")
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("memo", "text", (c) => c.notNull())
    .addColumn("signer", "text")
    .addColumn("tx_sig", "text")
    .addColumn("wire_tx", "text")
    .addColumn("last_valid_block_height", "bigint")
    .addColumn("slot", "bigint")
    .addColumn("block_time", ts)
    .addColumn("error", "text")
    .addColumn("lease_owner", "text")
    .addColumn("lease_until", ts)
    .addColumn("created_at", ts, (c) => c.notNull())
    .addColumn("updated_at", ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex("anchors_tx_sig_idx").on("anchors").column("tx_sig").where(sql.ref("tx_sig"), "is not", null).execute();

  await db.schema
    .createTable("anchor_budget")
    .addColumn("day", "text", (c) => c.primaryKey())
    .addColumn("used", "integer", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("anchor_keys")
    .addColumn("address", "text", (c) => c.primaryKey())
    .addColumn("seed_hex", "text", (c) => c.notNull())
    .addColumn("created_at", ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createIndex("receipts_not_committed_idx")
    .on("receipts")
    .column("alert_id")
    .where(sql.ref("commit_status"), "=", "not_committed_yet")
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("receipts_not_committed_idx").execute();
  for (const t of ["anchor_keys", "anchor_budget", "anchors"]) await db.schema.dropTable(t).execute();
}
