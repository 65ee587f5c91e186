/**
 * x402 payments (issue 16): one row per payment the agent tools were offered, keyed by the SHA-256 of the payment
 * transaction's message (the x402 Solana scheme's own duplicate key), so a payment is accepted once, across
 * restarts and processes. A row is inserted (`claimed`) before the payment is verified or settled: a second request
 * with the same payment finds it and is refused, however close the two arrive. A claim given back before anything
 * was charged (the RPC was unreachable, the tool failed) is deleted; every other outcome stays.
 */
import { sql, type Kysely } from "kysely";

const ts = sql`timestamptz(3)`;

// Migrations must not depend on the app's evolving Database type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("x402_payments")
    .addColumn("key", "text", (c) => c.primaryKey())
    .addColumn("tool", "text", (c) => c.notNull())
    .addColumn("network", "text", (c) => c.notNull())
    .addColumn("amount", "bigint", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("payer", "text")
    .addColumn("tx_sig", "text")
    .addColumn("reason", "text")
    .addColumn("created_at", ts, (c) => c.notNull())
    .addColumn("updated_at", ts, (c) => c.notNull())
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("x402_payments").execute();
}
