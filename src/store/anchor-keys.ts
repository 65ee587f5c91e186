/** The anchoring fee payer as stored (secret, sealed), and the daily commit budget's count. */
import type { EpochMs } from "../methodology/index.ts";
import { tables } from "./anchor-tables.ts";
import { toInt, toMs, tsParam } from "./normalise.ts";
import type { Executor } from "./schema.ts";

/** Commits counted against a UTC day's budget so far. */
export async function anchorBudgetUsed(db: Executor, day: string): Promise<number> {
  const r = await tables(db).selectFrom("anchor_budget").select("used").where("day", "=", day).executeTakeFirst();
  return r === undefined ? 0 : toInt(r.used, "anchor_budget.used");
}

/** The stored fee payer: base58 address and its 32-byte seed. Secret. */
export interface AnchorKeyRecord {
  readonly address: string;
  /**
   * The seed as stored: sealed under the secrets key (`peg-sealed:v1:…`, src/secret-box.ts), or 64 lowercase hex
   * digits as an earlier build stored it (sealed in place at the next start, src/anchor/fee-payer.ts).
   */
  readonly seed_hex: string;
  readonly created_at: EpochMs;
}

/**
 * Stores `key` unless a fee payer exists already, and returns the one in force (the oldest), so two processes
 * starting together end up with the same key.
 */
export async function ensureAnchorKey(db: Executor, key: AnchorKeyRecord): Promise<AnchorKeyRecord> {
  if (!key.seed_hex.startsWith("peg-sealed:")) throw new RangeError("seed_hex must be a sealed seed (src/secret-box.ts)");
  const t = tables(db);
  const first = await loadAnchorKey(db);
  if (first !== undefined) return first;
  await t
    .insertInto("anchor_keys")
    .values({ address: key.address, seed_hex: key.seed_hex, created_at: tsParam(key.created_at) })
    .onConflict((oc) => oc.column("address").doNothing())
    .execute();
  const stored = await loadAnchorKey(db);
  if (stored === undefined) throw new Error("the anchor key was not stored");
  return stored;
}

/**
 * Replaces a fee payer's stored seed by its sealed form, if it still is `was` (a concurrent start may have sealed it
 * first). True when this call replaced it.
 */
export async function resealAnchorKey(db: Executor, address: string, was: string, sealed: string): Promise<boolean> {
  const r = await tables(db).updateTable("anchor_keys").set({ seed_hex: sealed }).where("address", "=", address).where("seed_hex", "=", was).executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

export async function loadAnchorKey(db: Executor): Promise<AnchorKeyRecord | undefined> {
  const r = await tables(db).selectFrom("anchor_keys").selectAll().orderBy("created_at").orderBy("address").limit(1).executeTakeFirst();
  return r === undefined ? undefined : { address: r.address, seed_hex: r.seed_hex, created_at: toMs(r.created_at, "anchor_keys.created_at") };
}
