/**
 * Read models for the HTTP layer.
 *
 * - `asset_snapshots` gains what the asset cards show beside the verdict: `sol_per_lst` (the latest sample's
 *   intrinsic SOL per share, LSTs), `oracle` (the latest sample's oracle entries, `json` so the member order is kept)
 *   and `circulating_supply` (a slow size signal, null until first observed). All nullable: rows written before this
 *   migration read back as "unknown".
 * - Alert indexes for the audit ledger and the feed: every listing orders by (detected_at desc, id desc), so the
 *   per-mint index carries `id` too (it replaces the two-column one; a keyset cursor `(detected_at, id) < (…)` and
 *   `DISTINCT ON (mint)` read it in order), and the audit index filters by `to_state`.
 */
import type { Kysely } from "kysely";

// Migrations must not depend on the app's evolving Database type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("asset_snapshots")
    .addColumn("sol_per_lst", "numeric")
    .addColumn("oracle", "json")
    .addColumn("circulating_supply", "numeric")
    .execute();

  await db.schema.dropIndex("alerts_mint_detected_at_idx").execute();
  await db.schema
    .createIndex("alerts_mint_detected_at_id_idx")
    .on("alerts")
    .columns(["mint", "detected_at desc", "id desc"])
    .execute();
  await db.schema
    .createIndex("alerts_to_state_detected_at_id_idx")
    .on("alerts")
    .columns(["to_state", "detected_at desc", "id desc"])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("alerts_to_state_detected_at_id_idx").execute();
  await db.schema.dropIndex("alerts_mint_detected_at_id_idx").execute();
  await db.schema.createIndex("alerts_mint_detected_at_idx").on("alerts").columns(["mint", "detected_at desc"]).execute();
  await db.schema
    .alterTable("asset_snapshots")
    .dropColumn("circulating_supply")
    .dropColumn("oracle")
    .dropColumn("sol_per_lst")
    .execute();
}
