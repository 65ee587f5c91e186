/**
 * What the webhook dispatcher and worker read and write (issue 6), beside the account repositories: the active
 * webhooks of an asset, the sends a webhook already had (for the dispatch floor), one attempt's row created once and
 * finished once (both idempotent, so a redelivered work message cannot record an attempt twice), the webhook's
 * outcome columns, and the undelivered events of a window (replay).
 */
import { sql } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { deliveryFromRow, insertDelivery, webhookFromRow, type DeliveryError, type DeliveryRecord, type NewDelivery, type WebhookRecord, type WebhookStatus } from "./accounts.ts";
import { toMs, tsParam, tsParamOrNull } from "./normalise.ts";
import type { Executor } from "./schema.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Active webhooks following the asset with this mint. */
export async function activeWebhooksForMint(db: Executor, mint: string): Promise<WebhookRecord[]> {
  const rows = await db.selectFrom("webhooks").selectAll().where("mint", "=", mint).where("is_active", "=", true).orderBy("created_at").execute();
  return rows.map(webhookFromRow);
}

/** A webhook by id, whoever owns it (the worker's lookup). */
export async function webhookById(db: Executor, id: string): Promise<WebhookRecord | undefined> {
  if (!UUID.test(id)) return undefined;
  const r = await db.selectFrom("webhooks").selectAll().where("id", "=", id.toLowerCase()).executeTakeFirst();
  return r === undefined ? undefined : webhookFromRow(r);
}

/** A transition sent to a webhook: the asset, the state it went to and its detection instant. */
export interface SentTransition {
  readonly asset: string;
  readonly to_state: string;
  readonly ts: EpochMs;
}

/**
 * The transitions sent to a webhook (first attempts of non-test deliveries whose alert is projected), newest first,
 * at most `limit`. Enough history for the dispatch floor and the recovery rule.
 */
export async function sentTransitions(db: Executor, webhookId: string, limit = 500): Promise<SentTransition[]> {
  const rows = await db
    .selectFrom("deliveries as d")
    .innerJoin("alerts as a", "a.id", "d.alert_id")
    .select(["a.asset", "a.to_state", "a.detected_at"])
    .where("d.webhook_id", "=", webhookId)
    .where("d.attempt", "=", 1)
    .where("d.test", "=", false)
    .orderBy("a.detected_at", "desc")
    .limit(limit)
    .execute();
  return rows.map((r) => ({ asset: r.asset, to_state: r.to_state, ts: toMs(r.detected_at, "alerts.detected_at") }));
}

/** Inserts the row unless one with its id exists; true when this call inserted it. */
export async function insertDeliveryOnce(db: Executor, d: NewDelivery & { readonly id: string }): Promise<boolean> {
  const existing = await db.selectFrom("deliveries").select("id").where("id", "=", d.id).executeTakeFirst();
  if (existing !== undefined) return false;
  try {
    await insertDelivery(db, d);
    return true;
  } catch (e) {
    if (typeof e === "object" && e !== null && (e as { code?: unknown }).code === "23505") return false;
    throw e;
  }
}

export async function deliveryById(db: Executor, id: string): Promise<DeliveryRecord | undefined> {
  if (!UUID.test(id)) return undefined;
  const r = await db.selectFrom("deliveries").selectAll().where("id", "=", id.toLowerCase()).executeTakeFirst();
  return r === undefined ? undefined : deliveryFromRow(r);
}

/** The outcome of one attempt, as recorded on its row. */
export interface AttemptOutcome {
  readonly status: "delivered" | "failed" | "dead_lettered";
  readonly response_status: number | null;
  readonly error: DeliveryError | null;
  readonly duration_ms: number | null;
  readonly request_headers: Readonly<Record<string, string>> | null;
  readonly response_body_excerpt: string | null;
  readonly sent_at: EpochMs | null;
  readonly next_attempt_at: EpochMs | null;
}

/** Records an attempt's outcome on its pending row; false when the row was already finished (a redelivery). */
export async function finishDelivery(db: Executor, id: string, o: AttemptOutcome): Promise<boolean> {
  const r = await db
    .updateTable("deliveries")
    .set({
      status: o.status,
      response_status: o.response_status,
      error: o.error,
      duration_ms: o.duration_ms,
      request_headers: o.request_headers === null ? null : JSON.stringify(o.request_headers),
      response_body_excerpt: o.response_body_excerpt,
      sent_at: tsParamOrNull(o.sent_at),
      next_attempt_at: tsParamOrNull(o.next_attempt_at),
    })
    .where("id", "=", id)
    .where("status", "=", "pending")
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** The webhook's outcome columns after an attempt: delivered resets the failure count, anything else adds one. */
export async function recordWebhookOutcome(db: Executor, webhookId: string, status: WebhookStatus, at: EpochMs): Promise<void> {
  await db
    .updateTable("webhooks")
    .set((eb) => ({
      last_delivery_at: tsParam(at),
      last_status: status,
      consecutive_failures: status === "delivered" ? 0 : eb("consecutive_failures", "+", 1),
    }))
    .where("id", "=", webhookId)
    .execute();
}

/** An event of a webhook that no attempt delivered. */
export interface UndeliveredEvent {
  readonly event_id: string;
  readonly alert_id: string;
}

/**
 * The webhook's events (non-test) first scheduled within `[since, until]` that no attempt delivered and that have
 * no attempt still pending (those are in flight), oldest first.
 */
export async function undeliveredEvents(db: Executor, webhookId: string, since: EpochMs, until: EpochMs | null): Promise<UndeliveredEvent[]> {
  let q = db
    .selectFrom("deliveries")
    .select(["event_id", "alert_id", (eb) => eb.fn.min("scheduled_at").as("first")])
    .where("webhook_id", "=", webhookId)
    .where("test", "=", false)
    .where("alert_id", "is not", null)
    .groupBy(["event_id", "alert_id"])
    .having(sql<boolean>`bool_or(status = 'delivered')`, "=", false)
    .having(sql<boolean>`bool_or(status = 'pending')`, "=", false)
    .having((eb) => eb.fn.min("scheduled_at"), ">=", tsParam(since));
  if (until !== null) q = q.having((eb) => eb.fn.min("scheduled_at"), "<=", tsParam(until));
  const rows = await q.orderBy("first").execute();
  return rows.map((r) => ({ event_id: r.event_id, alert_id: r.alert_id! }));
}
