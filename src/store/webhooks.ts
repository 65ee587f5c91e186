/**
 * Webhooks (issue 6) and the record of each delivery to them: at most 10 active webhooks per user, counted under the
 * user's row lock.
 */
import { randomUUID } from "node:crypto";
import type { Selectable } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { atomically, toEnum, toEnumOrNull, toInt, toMs, toMsOrNull, tsParam, tsParamOrNull } from "./normalise.ts";
import type { Database, Executor } from "./schema.ts";
import { lockUser, type WriteResult } from "./users.ts";

/** Cap per user (addendum: 409 `conflict` beyond). */
export const MAX_ACTIVE_WEBHOOKS = 10;

export const WEBHOOK_FORMATS = ["signed", "chat"] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];
export const WEBHOOK_STATUSES = ["delivered", "failed", "dead_lettered"] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];
export const DELIVERY_STATUSES = ["pending", "delivered", "failed", "dead_lettered"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export const DELIVERY_ERRORS = ["timeout", "dns", "tls", "refused", "ssrf_blocked", "redirect", "http_status"] as const;
export type DeliveryError = (typeof DELIVERY_ERRORS)[number];

export interface WebhookRecord {
  readonly id: string;
  readonly user_id: number;
  readonly url: string;
  readonly asset: string;
  readonly mint: string;
  readonly threshold_bps: number;
  readonly format: WebhookFormat;
  readonly is_active: boolean;
  readonly created_at: EpochMs;
  readonly updated_at: EpochMs;
  readonly last_delivery_at: EpochMs | null;
  readonly last_status: WebhookStatus | null;
  readonly consecutive_failures: number;
}

export interface DeliveryRecord {
  readonly id: string;
  readonly webhook_id: string;
  readonly event_id: string;
  readonly alert_id: string | null;
  readonly attempt: number;
  readonly max_attempts: number;
  readonly status: DeliveryStatus;
  readonly response_status: number | null;
  readonly error: DeliveryError | null;
  readonly duration_ms: number | null;
  readonly request_headers: Readonly<Record<string, string>> | null;
  /** At most 1 KiB. */
  readonly response_body_excerpt: string | null;
  readonly scheduled_at: EpochMs;
  readonly sent_at: EpochMs | null;
  readonly next_attempt_at: EpochMs | null;
  readonly test: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function webhookFromRow(r: Selectable<Database["webhooks"]>): WebhookRecord {
  return {
    id: r.id,
    user_id: toInt(r.user_id, "webhooks.user_id"),
    url: r.url,
    asset: r.asset,
    mint: r.mint,
    threshold_bps: r.threshold_bps,
    format: toEnum(r.format, WEBHOOK_FORMATS, "webhooks.format"),
    is_active: r.is_active,
    created_at: toMs(r.created_at, "webhooks.created_at"),
    updated_at: toMs(r.updated_at, "webhooks.updated_at"),
    last_delivery_at: toMsOrNull(r.last_delivery_at, "webhooks.last_delivery_at"),
    last_status: toEnumOrNull(r.last_status, WEBHOOK_STATUSES, "webhooks.last_status"),
    consecutive_failures: r.consecutive_failures,
  };
}

async function activeWebhookCount(trx: Executor, userId: number): Promise<number> {
  const r = await trx
    .selectFrom("webhooks")
    .select((eb) => eb.fn.countAll().as("n"))
    .where("user_id", "=", userId)
    .where("is_active", "=", true)
    .executeTakeFirstOrThrow();
  return toInt(r.n, "count(webhooks)");
}

/** The user's webhooks, newest first (soft-deleted ones included: their history is kept). */
export async function webhooksOf(db: Executor, userId: number): Promise<WebhookRecord[]> {
  const rows = await db.selectFrom("webhooks").selectAll().where("user_id", "=", userId).orderBy("created_at", "desc").orderBy("id", "desc").execute();
  return rows.map(webhookFromRow);
}

/** One of the user's webhooks; undefined for an unknown id or someone else's. */
export async function webhookOf(db: Executor, userId: number, id: string): Promise<WebhookRecord | undefined> {
  if (!UUID.test(id)) return undefined;
  const r = await db.selectFrom("webhooks").selectAll().where("id", "=", id.toLowerCase()).where("user_id", "=", userId).executeTakeFirst();
  return r === undefined ? undefined : webhookFromRow(r);
}

export interface NewWebhook {
  readonly url: string;
  readonly asset: string;
  readonly mint: string;
  readonly threshold_bps: number;
  readonly format: WebhookFormat;
}

export async function createWebhook(db: Executor, userId: number, w: NewWebhook, now: EpochMs, max = MAX_ACTIVE_WEBHOOKS): Promise<WriteResult<WebhookRecord>> {
  return atomically(db, async (trx): Promise<WriteResult<WebhookRecord>> => {
    if (!(await lockUser(trx, userId))) return { kind: "not_found" };
    if ((await activeWebhookCount(trx, userId)) >= max) return { kind: "conflict", reason: "limit" };
    const r = await trx
      .insertInto("webhooks")
      .values({ id: randomUUID(), user_id: userId, ...w, is_active: true, created_at: tsParam(now), updated_at: tsParam(now), last_delivery_at: null, last_status: null })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { kind: "ok", value: webhookFromRow(r) };
  });
}

export interface WebhookPatch {
  readonly url?: string;
  readonly threshold_bps?: number;
  readonly is_active?: boolean;
  readonly format?: WebhookFormat;
}

/** Updates one of the user's webhooks (stamping `updated_at`); re-activation counts against the cap. */
export async function updateWebhook(
  db: Executor,
  userId: number,
  id: string,
  patch: WebhookPatch,
  now: EpochMs,
  max = MAX_ACTIVE_WEBHOOKS,
): Promise<WriteResult<WebhookRecord>> {
  if (!UUID.test(id)) return { kind: "not_found" };
  return atomically(db, async (trx): Promise<WriteResult<WebhookRecord>> => {
    if (!(await lockUser(trx, userId))) return { kind: "not_found" };
    const current = await trx.selectFrom("webhooks").selectAll().where("id", "=", id.toLowerCase()).where("user_id", "=", userId).executeTakeFirst();
    if (current === undefined) return { kind: "not_found" };
    if (patch.is_active === true && !current.is_active && (await activeWebhookCount(trx, userId)) >= max) {
      return { kind: "conflict", reason: "limit" };
    }
    const r = await trx
      .updateTable("webhooks")
      .set({ ...patch, updated_at: tsParam(now) })
      .where("id", "=", current.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return { kind: "ok", value: webhookFromRow(r) };
  });
}

export function deliveryFromRow(r: Selectable<Database["deliveries"]>): DeliveryRecord {
  return {
    id: r.id,
    webhook_id: r.webhook_id,
    event_id: r.event_id,
    alert_id: r.alert_id,
    attempt: r.attempt,
    max_attempts: r.max_attempts,
    status: toEnum(r.status, DELIVERY_STATUSES, "deliveries.status"),
    response_status: r.response_status,
    error: toEnumOrNull(r.error, DELIVERY_ERRORS, "deliveries.error"),
    duration_ms: r.duration_ms,
    request_headers: (r.request_headers ?? null) as Record<string, string> | null,
    response_body_excerpt: r.response_body_excerpt,
    scheduled_at: toMs(r.scheduled_at, "deliveries.scheduled_at"),
    sent_at: toMsOrNull(r.sent_at, "deliveries.sent_at"),
    next_attempt_at: toMsOrNull(r.next_attempt_at, "deliveries.next_attempt_at"),
    test: r.test,
  };
}

export type NewDelivery = Omit<DeliveryRecord, "id" | "test"> & { readonly id?: string; readonly test?: boolean };

/** Records one delivery attempt (the worker's write; also used by tests). Returns the record. */
export async function insertDelivery(db: Executor, d: NewDelivery): Promise<DeliveryRecord> {
  const r = await db
    .insertInto("deliveries")
    .values({
      id: d.id ?? randomUUID(),
      webhook_id: d.webhook_id,
      event_id: d.event_id,
      alert_id: d.alert_id,
      attempt: d.attempt,
      max_attempts: d.max_attempts,
      status: d.status,
      response_status: d.response_status,
      error: d.error,
      duration_ms: d.duration_ms,
      request_headers: d.request_headers === null ? null : JSON.stringify(d.request_headers),
      response_body_excerpt: d.response_body_excerpt,
      scheduled_at: tsParam(d.scheduled_at),
      sent_at: tsParamOrNull(d.sent_at),
      next_attempt_at: tsParamOrNull(d.next_attempt_at),
      test: d.test ?? false,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return deliveryFromRow(r);
}

/** Keyset position in a delivery history: the last row served. */
export interface DeliveryCursor {
  readonly scheduled_at: EpochMs;
  readonly id: string;
}

/** A webhook's delivery records, newest first by (scheduled_at, id), strictly older than `before`. */
export async function deliveriesOf(db: Executor, webhookId: string, q: { readonly limit: number; readonly before?: DeliveryCursor }): Promise<DeliveryRecord[]> {
  if (!Number.isSafeInteger(q.limit) || q.limit < 0) throw new RangeError("limit must be a non-negative integer");
  if (!UUID.test(webhookId)) return [];
  let query = db.selectFrom("deliveries").selectAll().where("webhook_id", "=", webhookId.toLowerCase());
  const before = q.before;
  if (before !== undefined) {
    const at = tsParam(before.scheduled_at);
    query = query.where((eb) => eb.or([eb("scheduled_at", "<", at), eb.and([eb("scheduled_at", "=", at), eb("id", "<", before.id)])]));
  }
  const rows = await query.orderBy("scheduled_at", "desc").orderBy("id", "desc").limit(q.limit).execute();
  return rows.map(deliveryFromRow);
}
