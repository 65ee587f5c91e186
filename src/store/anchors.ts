/**
 * On-chain anchoring records (issue 7, methodology section 8; migration 0005). The worker (src/anchor) drives one row
 * per alert through `reserved` → `sent` → `committed`, or to a terminal failure; every terminal step also sets the
 * receipt's `commit_status` in the same transaction, so the ledger and the anchor row never disagree.
 *
 * Idempotency: the row is keyed by the alert id and the signed transaction is recorded before it is sent, so a
 * restarted worker asks the cluster about that signature before it ever signs another one.
 */
import { PEG_STATES, type EpochMs, type PegState } from "../methodology/index.ts";
import { atomically, toEnum, toMs, tsParam } from "./normalise.ts";
import type { Executor } from "./schema.ts";
import type { CommitStatus } from "./alerts.ts";
import { anchorFromRow, tables, type AnchorFailure, type AnchorRecord, type AnchorRowStatus } from "./anchor-tables.ts";

export { ANCHOR_ROW_STATUSES, type AnchorFailure, type AnchorRecord, type AnchorRowStatus } from "./anchor-tables.ts";
export { anchorBudgetUsed, ensureAnchorKey, loadAnchorKey, resealAnchorKey, type AnchorKeyRecord } from "./anchor-keys.ts";

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
