/**
 * On-chain anchoring records (issue 7, methodology section 8; migration 0005). The worker (src/anchor) drives one row
 * per alert through `reserved` → `sent` → `committed`, or to a terminal failure; every terminal step also sets the
 * receipt's `commit_status` in the same transaction, so the ledger and the anchor row never disagree.
 *
 * Idempotency: the row is keyed by the alert id and the signed transaction is recorded before it is sent, so a
 * restarted worker asks the cluster about that signature before it ever signs another one.
 */
import { PEG_STATES, type EpochMs, type PegState } from "../methodology/index.ts";
import { atomically, toEnum, toInt, toIntOrNull, toMs, toMsOrNull, tsParam } from "./normalise.ts";
import type { Executor, NullableTimestamptz, Timestamptz } from "./schema.ts";
import type { CommitStatus } from "./alerts.ts";
import type { ColumnType, Kysely, Selectable } from "kysely";

/** Life of one anchor row. `over_budget` rows exist only to remember that the budget refused the alert. */
export const ANCHOR_ROW_STATUSES = [
  "reserved",
  "sent",
  "committed",
  "retry_exhausted",
  "wallet_drained",
  "persistence_failed",
  "over_budget",
] as const;
export type AnchorRowStatus = (typeof ANCHOR_ROW_STATUSES)[number];

/** The failures that end an anchor for good (they are also the receipt's `commit_status`). */
export type AnchorFailure = "retry_exhausted" | "wallet_drained" | "persistence_failed";

interface AnchorsTable {
  alert_id: string;
  status: string;
  budget_day: string | null;
  attempts: ColumnType<number, number | undefined, number>;
  memo: string;
  signer: string | null;
  tx_sig: string | null;
  wire_tx: string | null;
  last_valid_block_height: ColumnType<string | number | bigint | null, string | null, string | null>;
  slot: ColumnType<string | number | bigint | null, string | null, string | null>;
  block_time: NullableTimestamptz;
  error: string | null;
  lease_owner: string | null;
  lease_until: NullableTimestamptz;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}

interface AnchorBudgetTable {
  day: string;
  used: number;
}

interface AnchorKeysTable {
  address: string;
  seed_hex: string;
  created_at: Timestamptz;
}

type AnchorTables = { anchors: AnchorsTable; anchor_budget: AnchorBudgetTable; anchor_keys: AnchorKeysTable };
type AnchorDb = Kysely<Executor extends Kysely<infer D> ? D & AnchorTables : never>;

// The tables of migration 0005 are declared here, next to the only code that touches them.
const tables = (db: Executor): AnchorDb => db.withTables<AnchorTables>() as unknown as AnchorDb;

/** One anchor row. Instants are epoch ms; `last_valid_block_height` and `slot` are safe integers. */
export interface AnchorRecord {
  readonly alert_id: string;
  readonly status: AnchorRowStatus;
  /** UTC day (`YYYY-MM-DD`) whose budget paid for this alert; null when refused. */
  readonly budget_day: string | null;
  /** Transactions signed so far. */
  readonly attempts: number;
  readonly memo: string;
  readonly signer: string | null;
  /** Signature of the transaction in flight (`sent`) or landed (`committed`). */
  readonly tx_sig: string | null;
  /** Base64 wire transaction in flight, so it can be re-sent unchanged after a restart. */
  readonly wire_tx: string | null;
  readonly last_valid_block_height: number | null;
  readonly slot: number | null;
  readonly block_time: EpochMs | null;
  readonly error: string | null;
  /** The worker holding the alert, until `lease_until`. */
  readonly lease_owner: string | null;
  readonly lease_until: EpochMs | null;
  readonly updated_at: EpochMs;
}

function anchorFromRow(r: Selectable<AnchorsTable>): AnchorRecord {
  return {
    alert_id: r.alert_id,
    status: toEnum(r.status, ANCHOR_ROW_STATUSES, "anchors.status"),
    budget_day: r.budget_day,
    attempts: toInt(r.attempts, "anchors.attempts"),
    memo: r.memo,
    signer: r.signer,
    tx_sig: r.tx_sig,
    wire_tx: r.wire_tx,
    last_valid_block_height: toIntOrNull(r.last_valid_block_height, "anchors.last_valid_block_height"),
    slot: toIntOrNull(r.slot, "anchors.slot"),
    block_time: toMsOrNull(r.block_time, "anchors.block_time"),
    error: r.error,
    lease_owner: r.lease_owner,
    lease_until: toMsOrNull(r.lease_until, "anchors.lease_until"),
    updated_at: toMs(r.updated_at, "anchors.updated_at"),
  };
}

/** A receipt waiting for its commit (`commit_status` = `not_committed_yet`), with its anchor row if it has one. */
export interface WaitingAnchor {
  readonly alert_id: string;
  readonly to_state: PegState;
  readonly methodology_version: string;
  readonly receipt_sha256: string;
  readonly detected_at: EpochMs;
  readonly anchor: AnchorRecord | null;
}

/** Receipts still `not_committed_yet`, oldest decision first. */
export async function waitingAnchors(db: Executor, limit: number): Promise<WaitingAnchor[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError("limit must be a positive integer");
  const rows = await tables(db)
    .selectFrom("receipts")
    .innerJoin("alerts", "alerts.id", "receipts.alert_id")
    .select(["receipts.alert_id", "receipts.receipt_sha256", "alerts.to_state", "alerts.methodology_version", "alerts.detected_at"])
    .where("receipts.commit_status", "=", "not_committed_yet")
    .orderBy("alerts.detected_at")
    .orderBy("receipts.alert_id")
    .limit(limit)
    .execute();
  if (rows.length === 0) return [];
  const anchors = await tables(db)
    .selectFrom("anchors")
    .selectAll()
    .where(
      "alert_id",
      "in",
      rows.map((r) => r.alert_id),
    )
    .execute();
  const byId = new Map(anchors.map((a) => [a.alert_id, anchorFromRow(a)]));
  return rows.map((r) => ({
    alert_id: r.alert_id,
    to_state: toEnum(r.to_state, PEG_STATES, "alerts.to_state"),
    methodology_version: r.methodology_version,
    receipt_sha256: r.receipt_sha256,
    detected_at: toMs(r.detected_at, "alerts.detected_at"),
    anchor: byId.get(r.alert_id) ?? null,
  }));
}

export async function anchorById(db: Executor, alertId: string): Promise<AnchorRecord | undefined> {
  const r = await tables(db).selectFrom("anchors").selectAll().where("alert_id", "=", alertId).executeTakeFirst();
  return r === undefined ? undefined : anchorFromRow(r);
}

/** The outcome of claiming one alert: held (with its row), refused by the budget, or held by another live worker. */
export type Reservation =
  | { readonly kind: "reserved"; readonly anchor: AnchorRecord }
  | { readonly kind: "over_budget" }
  | { readonly kind: "busy"; readonly owner: string };

/**
 * Claims the alert for anchoring under a lease (`owner` until `leaseUntil`) and, the first time, takes one unit of
 * `day`'s budget (`budget` commits per UTC day). An alert that already has a row keeps it (no second unit) and is
 * claimed only when its lease is free, ours, or lapsed. Over budget, the receipt becomes `not_applicable`.
 */
export async function reserveAnchor(
  db: Executor,
  r: {
    readonly alertId: string;
    readonly memo: string;
    readonly day: string;
    readonly budget: number;
    readonly now: EpochMs;
    readonly owner: string;
    readonly leaseUntil: EpochMs;
  },
): Promise<Reservation> {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(r.day)) throw new RangeError(`day must be YYYY-MM-DD, got ${r.day}`);
  if (!Number.isSafeInteger(r.budget) || r.budget < 0) throw new RangeError("budget must be a non-negative integer");
  return atomically(db, async (trx) => {
    const t = tables(trx);
    const existing = await t.selectFrom("anchors").selectAll().where("alert_id", "=", r.alertId).forUpdate().executeTakeFirst();
    if (existing !== undefined) {
      const a = anchorFromRow(existing);
      if (a.status === "over_budget") return { kind: "over_budget" };
      if (a.lease_owner !== null && a.lease_owner !== r.owner && a.lease_until !== null && a.lease_until > r.now) {
        return { kind: "busy", owner: a.lease_owner };
      }
      const claimed = await t
        .updateTable("anchors")
        .set({ lease_owner: r.owner, lease_until: tsParam(r.leaseUntil) })
        .where("alert_id", "=", r.alertId)
        .returningAll()
        .executeTakeFirstOrThrow();
      return { kind: "reserved", anchor: anchorFromRow(claimed) };
    }
    // One conditional upsert: the unit is taken only while `used` is below the budget.
    const took =
      r.budget === 0
        ? []
        : await t
            .insertInto("anchor_budget")
            .values({ day: r.day, used: 1 })
            .onConflict((oc) =>
              oc
                .column("day")
                .doUpdateSet((eb) => ({ used: eb("anchor_budget.used", "+", 1) }))
                .where("anchor_budget.used", "<", r.budget),
            )
            .returning("used")
            .execute();
    const over = took.length === 0;
    const row = await t
      .insertInto("anchors")
      .values({
        alert_id: r.alertId,
        status: over ? "over_budget" : "reserved",
        budget_day: over ? null : r.day,
        memo: r.memo,
        signer: null,
        tx_sig: null,
        wire_tx: null,
        last_valid_block_height: null,
        slot: null,
        block_time: null,
        error: over ? `the daily budget of ${r.budget} commits for ${r.day} is spent` : null,
        lease_owner: over ? null : r.owner,
        lease_until: over ? null : tsParam(r.leaseUntil),
        created_at: tsParam(r.now),
        updated_at: tsParam(r.now),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    if (over) {
      await setCommitStatus(trx, r.alertId, "not_applicable");
      return { kind: "over_budget" };
    }
    return { kind: "reserved", anchor: anchorFromRow(row) };
  });
}

async function setCommitStatus(db: Executor, alertId: string, status: CommitStatus): Promise<void> {
  await db
    .updateTable("receipts")
    .set({ commit_status: status })
    .where("alert_id", "=", alertId)
    .where("commit_status", "=", "not_committed_yet")
    .execute();
}

/** The worker no longer holds the alert's lease: it must not send anything for it. */
export class LeaseLostError extends Error {
  readonly code = "anchor_lease_lost";
  constructor(alertId: string) {
    super(`the anchor lease of ${alertId} is held by another worker`);
    this.name = "LeaseLostError";
  }
}

/** Extends the lease while `owner` still holds it (or it is free); throws LeaseLostError when another worker took it. */
export async function renewAnchorLease(db: Executor, alertId: string, owner: string, leaseUntil: EpochMs): Promise<void> {
  const r = await tables(db)
    .updateTable("anchors")
    .set({ lease_owner: owner, lease_until: tsParam(leaseUntil) })
    .where("alert_id", "=", alertId)
    .where((eb) => eb.or([eb("lease_owner", "=", owner), eb("lease_owner", "is", null)]))
    .returning("alert_id")
    .execute();
  if (r.length === 0) throw new LeaseLostError(alertId);
}

/** Lets go of the alert (on stop), so a restarted worker takes it up at once instead of waiting for the lease. */
export async function releaseAnchorLease(db: Executor, alertId: string, owner: string): Promise<void> {
  await tables(db).updateTable("anchors").set({ lease_owner: null, lease_until: null }).where("alert_id", "=", alertId).where("lease_owner", "=", owner).execute();
}

/**
 * A signed transaction about to be sent: recorded first, so a crash right after the send cannot lose it. Only the
 * lease holder may record (and then send) one: throws LeaseLostError otherwise.
 */
export async function recordSent(
  db: Executor,
  alertId: string,
  s: {
    readonly attempts: number;
    readonly signer: string;
    readonly txSig: string;
    readonly wireTx: string;
    readonly lastValidBlockHeight: number;
    readonly now: EpochMs;
    readonly owner: string;
  },
): Promise<void> {
  const r = await tables(db)
    .updateTable("anchors")
    .set({
      status: "sent",
      attempts: s.attempts,
      signer: s.signer,
      tx_sig: s.txSig,
      wire_tx: s.wireTx,
      last_valid_block_height: String(s.lastValidBlockHeight),
      error: null,
      updated_at: tsParam(s.now),
    })
    .where("alert_id", "=", alertId)
    .where("status", "in", ["reserved", "sent"])
    .where("lease_owner", "=", s.owner)
    .returning("alert_id")
    .execute();
  if (r.length === 0) throw new LeaseLostError(alertId);
}

/** The transaction in flight can no longer land (expired or refused): back to `reserved`, with why. */
export async function recordDead(db: Executor, alertId: string, error: string, now: EpochMs): Promise<void> {
  await tables(db)
    .updateTable("anchors")
    .set({ status: "reserved", tx_sig: null, wire_tx: null, last_valid_block_height: null, error: error.slice(0, 500), updated_at: tsParam(now) })
    .where("alert_id", "=", alertId)
    .where("status", "in", ["reserved", "sent"])
    .execute();
}

/** The memo landed: the anchor row and the receipt's `commit_status` in one transaction. */
export async function recordCommitted(
  db: Executor,
  alertId: string,
  c: { readonly txSig: string; readonly signer: string; readonly slot: number; readonly blockTime: EpochMs; readonly now: EpochMs },
): Promise<void> {
  await atomically(db, async (trx) => {
    await tables(trx)
      .updateTable("anchors")
      .set({
        status: "committed",
        tx_sig: c.txSig,
        signer: c.signer,
        wire_tx: null,
        slot: String(c.slot),
        block_time: tsParam(c.blockTime),
        error: null,
        lease_owner: null,
        lease_until: null,
        updated_at: tsParam(c.now),
      })
      .where("alert_id", "=", alertId)
      .execute();
    await setCommitStatus(trx, alertId, "committed");
  });
}

/** A terminal failure: the anchor row and the receipt's `commit_status` in one transaction. */
export async function recordAnchorFailure(db: Executor, alertId: string, status: AnchorFailure, error: string, now: EpochMs): Promise<void> {
  await atomically(db, async (trx) => {
    await tables(trx)
      .updateTable("anchors")
      .set({ status, wire_tx: null, error: error.slice(0, 500), lease_owner: null, lease_until: null, updated_at: tsParam(now) })
      .where("alert_id", "=", alertId)
      .execute();
    await setCommitStatus(trx, alertId, status);
  });
}

/**
 * Brings a receipt still `not_committed_yet` in line with its anchor row when that row already ended (a write the
 * process did not finish), so the worker never finds the same settled alert again.
 */
export async function settleFromAnchor(db: Executor, alertId: string, status: Exclude<AnchorRowStatus, "reserved" | "sent">): Promise<void> {
  await setCommitStatus(db, alertId, status === "over_budget" ? "not_applicable" : status);
}

/** Marks a receipt the worker must never anchor (a state outside DEPEG, CRITICAL, BLACK_SWAN). */
export async function markNotApplicable(db: Executor, alertId: string): Promise<void> {
  await setCommitStatus(db, alertId, "not_applicable");
}

/** The on-chain commit of an anchored receipt (addendum A `/v1/audit/{id}/onchain`), or undefined. */
export interface OnchainCommitRecord {
  readonly tx_sig: string;
  readonly slot: number;
  readonly block_time: EpochMs;
  readonly memo: string;
  readonly signer: string;
}

export async function onchainCommit(db: Executor, alertId: string): Promise<OnchainCommitRecord | undefined> {
  const a = await anchorById(db, alertId);
  if (a === undefined || a.status !== "committed" || a.tx_sig === null || a.slot === null || a.block_time === null || a.signer === null) {
    return undefined;
  }
  return { tx_sig: a.tx_sig, slot: a.slot, block_time: a.block_time, memo: a.memo, signer: a.signer };
}

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

