/**
 * Alerts (one row per published transition) and their audit receipts. A transition is written once: the alert id is
 * deterministic (methodology section 8), so a re-delivered or replayed decision hits ON CONFLICT and changes nothing.
 * The alert and its receipt are written in one transaction, so an alert row always has its receipt.
 */
import {
  ASSET_CLASSES,
  PEG_STATES,
  parseTimestamp,
  type AssetClass,
  type EpochMs,
  type PegState,
  type Receipt,
} from "../methodology/index.ts";
import {
  atomically,
  decimalParam,
  toDecimal,
  toEnum,
  toInt,
  toIntOrNull,
  toMs,
  toMsOrNull,
  tsParam,
} from "./normalise.ts";
import type { Database, Executor } from "./schema.ts";
import type { Selectable } from "kysely";

/** On-chain anchoring status of a receipt (interface part 3). */
export const COMMIT_STATUSES = [
  "not_applicable",
  "not_committed_yet",
  "committed",
  "retry_exhausted",
  "wallet_drained",
  "persistence_failed",
] as const;
export type CommitStatus = (typeof COMMIT_STATUSES)[number];

const ANCHORED_STATES: ReadonlySet<PegState> = new Set(["DEPEG", "CRITICAL", "BLACK_SWAN"]);

/** Methodology section 8: only transitions into DEPEG, CRITICAL or BLACK_SWAN are anchored on chain. */
export function initialCommitStatus(toState: PegState): CommitStatus {
  return ANCHORED_STATES.has(toState) ? "not_committed_yet" : "not_applicable";
}

/** What the transition's receipt does not carry. */
export interface TransitionMeta {
  /** JetStream stream sequence of the transition message, or null when not (yet) published. */
  readonly seq: number | null;
  readonly monitoringOnly: boolean;
  /** `provisional` or `calibrated`. */
  readonly calibration: string;
}

/** An alert row (addendum A, minus `receipt_url`, which the HTTP layer builds). Instants are epoch ms. */
export interface AlertRecord {
  readonly id: string;
  readonly asset: string;
  readonly mint: string;
  readonly class: AssetClass;
  readonly from_state: PegState;
  readonly to_state: PegState;
  readonly discount: string;
  readonly discount_bps: number;
  readonly state_reason: string | null;
  readonly detected_at: EpochMs;
  /** Null until fanned out. */
  readonly dispatched_at: EpochMs | null;
  readonly methodology_version: string;
  readonly monitoring_only: boolean;
  readonly calibration: string;
  readonly receipt_sha256: string;
  readonly seq: number | null;
}

/** A persisted receipt: the Receipt exactly as built, plus its storage-side status. */
export interface StoredReceipt {
  readonly receipt: Receipt;
  readonly receipt_sha256: string;
  readonly commit_status: CommitStatus;
  readonly monitoring_only: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Writes the alert and its receipt atomically. Returns true when newly inserted, false when the id was known. */
export async function insertTransition(db: Executor, receipt: Receipt, meta: TransitionMeta): Promise<boolean> {
  const detectedAt = parseTimestamp(receipt.detected_at);
  if (detectedAt === null) throw new RangeError(`receipt.detected_at is not a timestamp: ${receipt.detected_at}`);
  if (meta.seq !== null && (!Number.isSafeInteger(meta.seq) || meta.seq < 0)) throw new RangeError("seq must be a non-negative integer");
  return atomically(db, async (trx) => {
    const inserted = await trx
      .insertInto("alerts")
      .values({
        id: receipt.alert_id,
        mint: receipt.mint,
        asset: receipt.asset,
        class: receipt.inputs_frozen.class,
        from_state: receipt.from_state,
        to_state: receipt.to_state,
        discount: decimalParam(receipt.discount, "receipt.discount"),
        discount_bps: receipt.discount_bps,
        state_reason: receipt.state_reason,
        detected_at: tsParam(detectedAt),
        dispatched_at: null,
        methodology_version: receipt.methodology_version,
        monitoring_only: meta.monitoringOnly,
        calibration: meta.calibration,
        receipt_sha256: receipt.receipt_sha256,
        seq: meta.seq,
      })
      .onConflict((oc) => oc.column("id").doNothing())
      .returning("id")
      .execute();
    if (inserted.length === 0) return false;
    await trx
      .insertInto("receipts")
      .values({
        alert_id: receipt.alert_id,
        receipt: JSON.stringify(receipt),
        receipt_sha256: receipt.receipt_sha256,
        commit_status: initialCommitStatus(receipt.to_state),
      })
      .execute();
    return true;
  });
}

/** Stamps the fan-out instant once; later calls keep the first. Returns true when this call stamped it. */
export async function markDispatched(db: Executor, id: string, at: EpochMs): Promise<boolean> {
  if (!UUID.test(id)) return false;
  const r = await db
    .updateTable("alerts")
    .set({ dispatched_at: tsParam(at) })
    .where("id", "=", id)
    .where("dispatched_at", "is", null)
    .returning("id")
    .execute();
  return r.length > 0;
}

function alertFromRow(r: Selectable<Database["alerts"]>): AlertRecord {
  return {
    id: r.id,
    asset: r.asset,
    mint: r.mint,
    class: toEnum(r.class, ASSET_CLASSES, "alerts.class"),
    from_state: toEnum(r.from_state, PEG_STATES, "alerts.from_state"),
    to_state: toEnum(r.to_state, PEG_STATES, "alerts.to_state"),
    discount: toDecimal(r.discount, "alerts.discount"),
    discount_bps: r.discount_bps,
    state_reason: r.state_reason,
    detected_at: toMs(r.detected_at, "alerts.detected_at"),
    dispatched_at: toMsOrNull(r.dispatched_at, "alerts.dispatched_at"),
    methodology_version: r.methodology_version,
    monitoring_only: r.monitoring_only,
    calibration: r.calibration,
    receipt_sha256: r.receipt_sha256,
    seq: toIntOrNull(r.seq, "alerts.seq"),
  };
}

/** Query of the alert feed. `since` is an inclusive lower bound on `detected_at`. */
export interface AlertsQuery {
  readonly since?: EpochMs;
  readonly mint?: string;
  readonly limit: number;
  readonly offset: number;
}

/** Alerts newest first (ties by id, so pages are stable). */
export async function alerts(db: Executor, q: AlertsQuery): Promise<AlertRecord[]> {
  if (!Number.isSafeInteger(q.limit) || q.limit < 0) throw new RangeError("limit must be a non-negative integer");
  if (!Number.isSafeInteger(q.offset) || q.offset < 0) throw new RangeError("offset must be a non-negative integer");
  let query = db.selectFrom("alerts").selectAll();
  if (q.since !== undefined) query = query.where("detected_at", ">=", tsParam(q.since));
  if (q.mint !== undefined) query = query.where("mint", "=", q.mint);
  const rows = await query.orderBy("detected_at", "desc").orderBy("id", "desc").limit(q.limit).offset(q.offset).execute();
  return rows.map(alertFromRow);
}

export async function alertById(db: Executor, id: string): Promise<AlertRecord | undefined> {
  if (!UUID.test(id)) return undefined;
  const r = await db.selectFrom("alerts").selectAll().where("id", "=", id).executeTakeFirst();
  return r === undefined ? undefined : alertFromRow(r);
}

export async function receiptById(db: Executor, id: string): Promise<StoredReceipt | undefined> {
  if (!UUID.test(id)) return undefined;
  const r = await db
    .selectFrom("receipts")
    .innerJoin("alerts", "alerts.id", "receipts.alert_id")
    .select(["receipts.receipt", "receipts.receipt_sha256", "receipts.commit_status", "alerts.monitoring_only"])
    .where("receipts.alert_id", "=", id)
    .executeTakeFirst();
  if (r === undefined) return undefined;
  return {
    // Stored as json (not jsonb) from JSON.stringify(receipt): parsing gives back the same members in the same order.
    receipt: r.receipt as Receipt,
    receipt_sha256: r.receipt_sha256,
    commit_status: toEnum(r.commit_status, COMMIT_STATUSES, "receipts.commit_status"),
    monitoring_only: r.monitoring_only,
  };
}

/** Number of alerts detected at or after `ts`. */
export async function countAlertsSince(db: Executor, ts: EpochMs): Promise<number> {
  const r = await db
    .selectFrom("alerts")
    .select((eb) => eb.fn.countAll().as("n"))
    .where("detected_at", ">=", tsParam(ts))
    .executeTakeFirstOrThrow();
  return toInt(r.n, "count(alerts)");
}

/**
 * Alerts with a stream sequence above `afterSeq`, in stream order (the agent tools' event cursor; the partial index
 * on `seq` serves it). Rows not yet projected are simply absent: the caller decides how long to wait for a gap.
 */
export async function alertsAfterSeq(db: Executor, afterSeq: number, limit: number): Promise<AlertRecord[]> {
  if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) throw new RangeError("afterSeq must be a non-negative integer");
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError("limit must be a positive integer");
  const rows = await db.selectFrom("alerts").selectAll().where("seq", "is not", null).where("seq", ">", afterSeq).orderBy("seq", "asc").limit(limit).execute();
  return rows.map(alertFromRow);
}

/** The highest stream sequence of a stored alert (0: none). */
export async function lastAlertSeq(db: Executor): Promise<number> {
  const r = await db.selectFrom("alerts").select((eb) => eb.fn.max("seq").as("seq")).executeTakeFirst();
  return toIntOrNull(r?.seq ?? null, "max(alerts.seq)") ?? 0;
}
