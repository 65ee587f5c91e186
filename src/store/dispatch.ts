/**
 * What durable dispatch and the Telegram channel read and write (issue 6): the dispatch log (the sends decided per
 * target, the history the addendum F rules read), the active subscriptions of an asset with their users, and the
 * Telegram notifications (one row per alert and subscription, its attempts counted on the row).
 */
import type { EpochMs } from "../methodology/index.ts";
import { subscriptionFromRow, userFromRow, type SubscriptionRecord, type UserRecord } from "./accounts.ts";
import { toInt, toIntOrNull, toMs, toMsOrNull, tsParam } from "./normalise.ts";
import type { Executor } from "./schema.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A dispatch target's key in the log. */
export const webhookTarget = (id: string): string => `webhook:${id}`;
export const subscriptionTarget = (id: number): string => `subscription:${id}`;

/** A transition a target was sent: the asset, the state it went to and its detection instant. */
export interface LoggedSend {
  readonly alert_id: string;
  readonly asset: string;
  readonly to_state: string;
  readonly ts: EpochMs;
}

/** The target's logged sends, newest first, at most `limit`: enough history for the floor and the recovery rule. */
export async function loggedSends(db: Executor, target: string, limit = 500): Promise<LoggedSend[]> {
  const rows = await db
    .selectFrom("dispatch_log")
    .select(["alert_id", "asset", "to_state", "ts"])
    .where("target", "=", target)
    .orderBy("ts", "desc")
    .limit(limit)
    .execute();
  return rows.map((r) => ({ alert_id: r.alert_id, asset: r.asset, to_state: r.to_state, ts: toMs(r.ts, "dispatch_log.ts") }));
}

/** Logs a send decision once; true when this call logged it (false: it was decided before, e.g. on redelivery). */
export async function logSend(db: Executor, target: string, s: LoggedSend): Promise<boolean> {
  const r = await db
    .insertInto("dispatch_log")
    .values({ target, alert_id: s.alert_id, asset: s.asset, to_state: s.to_state, ts: tsParam(s.ts) })
    .onConflict((oc) => oc.columns(["target", "alert_id"]).doNothing())
    .returning("alert_id")
    .execute();
  return r.length > 0;
}

/** An active subscription and its user (whose preferences and telegram id the channel needs). */
export interface SubscriberOf {
  readonly subscription: SubscriptionRecord;
  readonly user: UserRecord;
}

/** Active subscriptions following the asset with this mint, oldest first, with their users. */
export async function activeSubscriptionsForMint(db: Executor, mint: string): Promise<SubscriberOf[]> {
  const rows = await db
    .selectFrom("subscriptions as s")
    .innerJoin("users as u", "u.id", "s.user_id")
    .selectAll("s")
    .select([
      "u.telegram_id as u_telegram_id",
      "u.username as u_username",
      "u.first_name as u_first_name",
      "u.locale as u_locale",
      "u.preferences as u_preferences",
      "u.created_at as u_created_at",
    ])
    .where("s.mint", "=", mint)
    .where("s.is_active", "=", true)
    .orderBy("s.created_at")
    .orderBy("s.id")
    .execute();
  return rows.map((r) => ({
    subscription: subscriptionFromRow(r),
    user: userFromRow({
      id: r.user_id,
      telegram_id: r.u_telegram_id,
      username: r.u_username,
      first_name: r.u_first_name,
      locale: r.u_locale,
      preferences: r.u_preferences,
      created_at: r.u_created_at,
    }),
  }));
}

/** Stamps the subscription's `last_fired_at` (never moving it back). */
export async function markSubscriptionFired(db: Executor, id: number, at: EpochMs): Promise<void> {
  await db
    .updateTable("subscriptions")
    .set({ last_fired_at: tsParam(at) })
    .where("id", "=", id)
    .where((eb) => eb.or([eb("last_fired_at", "is", null), eb("last_fired_at", "<", tsParam(at))]))
    .execute();
}

export const NOTIFICATION_STATUSES = ["pending", "delivered", "dead_lettered", "suppressed"] as const;
export type NotificationStatus = (typeof NOTIFICATION_STATUSES)[number];

export interface NotificationRecord {
  readonly id: string;
  readonly subscription_id: number;
  readonly user_id: number;
  readonly channel: "telegram";
  readonly alert_id: string;
  readonly status: NotificationStatus;
  /** Attempts made so far. */
  readonly attempts: number;
  /** When the next (or first) attempt is due; the end of the quiet hours when held. */
  readonly due_at: EpochMs;
  readonly held_for_quiet_hours: boolean;
  readonly response_status: number | null;
  /** `http_status: <description>`, `timeout`, `refused`, or `below_min_severity` when suppressed. */
  readonly error: string | null;
  /** The Bot API message id once delivered. */
  readonly message_id: number | null;
  readonly created_at: EpochMs;
  readonly sent_at: EpochMs | null;
}

const statusOf = (v: string): NotificationStatus => {
  if ((NOTIFICATION_STATUSES as readonly string[]).includes(v)) return v as NotificationStatus;
  throw new RangeError(`notifications.status: unknown value ${JSON.stringify(v)}`);
};

function notificationFromRow(r: {
  id: string;
  subscription_id: unknown;
  user_id: unknown;
  alert_id: string;
  status: string;
  attempts: number;
  due_at: unknown;
  held_for_quiet_hours: boolean;
  response_status: number | null;
  error: string | null;
  message_id: unknown;
  created_at: unknown;
  sent_at: unknown;
}): NotificationRecord {
  return {
    id: r.id,
    subscription_id: toInt(r.subscription_id, "notifications.subscription_id"),
    user_id: toInt(r.user_id, "notifications.user_id"),
    channel: "telegram",
    alert_id: r.alert_id,
    status: statusOf(r.status),
    attempts: r.attempts,
    due_at: toMs(r.due_at, "notifications.due_at"),
    held_for_quiet_hours: r.held_for_quiet_hours,
    response_status: r.response_status,
    error: r.error,
    message_id: toIntOrNull(r.message_id, "notifications.message_id"),
    created_at: toMs(r.created_at, "notifications.created_at"),
    sent_at: toMsOrNull(r.sent_at, "notifications.sent_at"),
  };
}

export interface NewNotification {
  readonly id: string;
  readonly subscription_id: number;
  readonly user_id: number;
  readonly alert_id: string;
  readonly status: "pending" | "suppressed";
  readonly due_at: EpochMs;
  readonly held_for_quiet_hours: boolean;
  readonly error: string | null;
  readonly created_at: EpochMs;
}

/** Inserts the notification unless one with its id exists; true when this call inserted it. */
export async function insertNotificationOnce(db: Executor, n: NewNotification): Promise<boolean> {
  const r = await db
    .insertInto("notifications")
    .values({
      id: n.id,
      subscription_id: n.subscription_id,
      user_id: n.user_id,
      channel: "telegram",
      alert_id: n.alert_id,
      status: n.status,
      due_at: tsParam(n.due_at),
      held_for_quiet_hours: n.held_for_quiet_hours,
      error: n.error,
      response_status: null,
      message_id: null,
      created_at: tsParam(n.created_at),
      sent_at: null,
    })
    .onConflict((oc) => oc.column("id").doNothing())
    .returning("id")
    .execute();
  return r.length > 0;
}

export async function notificationById(db: Executor, id: string): Promise<NotificationRecord | undefined> {
  if (!UUID.test(id)) return undefined;
  const r = await db.selectFrom("notifications").selectAll().where("id", "=", id.toLowerCase()).executeTakeFirst();
  return r === undefined ? undefined : notificationFromRow(r);
}

/** A user's notifications, newest first (operators and tests read the channel's outcomes here). */
export async function notificationsOfSubscription(db: Executor, subscriptionId: number, limit = 100): Promise<NotificationRecord[]> {
  const rows = await db
    .selectFrom("notifications")
    .selectAll()
    .where("subscription_id", "=", subscriptionId)
    .orderBy("created_at", "desc")
    .orderBy("id")
    .limit(limit)
    .execute();
  return rows.map(notificationFromRow);
}

export interface NotificationAttempt {
  /** The attempt number this outcome belongs to (1-based): recorded only if the row has made `attempt - 1`. */
  readonly attempt: number;
  readonly status: "pending" | "delivered" | "dead_lettered";
  readonly response_status: number | null;
  readonly error: string | null;
  readonly message_id: number | null;
  readonly sent_at: EpochMs;
  /** The next attempt's due instant when `pending`. */
  readonly due_at: EpochMs | null;
}

/**
 * Records attempt `attempt`'s outcome once: the update applies only while the row is pending with `attempt - 1`
 * attempts made, so a redelivered work message cannot count an attempt twice. True when this call recorded it.
 */
export async function recordNotificationAttempt(db: Executor, id: string, a: NotificationAttempt): Promise<boolean> {
  const r = await db
    .updateTable("notifications")
    .set({
      status: a.status,
      attempts: a.attempt,
      response_status: a.response_status,
      error: a.error,
      message_id: a.message_id,
      sent_at: tsParam(a.sent_at),
      ...(a.due_at === null ? {} : { due_at: tsParam(a.due_at) }),
    })
    .where("id", "=", id)
    .where("status", "=", "pending")
    .where("attempts", "=", a.attempt - 1)
    .returning("id")
    .execute();
  return r.length > 0;
}

/** Whether the subscription exists and is active (a notification waiting for a deleted one is not sent). */
export async function subscriptionIsActive(db: Executor, id: number): Promise<boolean> {
  const r = await db.selectFrom("subscriptions").select("is_active").where("id", "=", id).executeTakeFirst();
  return r?.is_active === true;
}

/** Closes a pending notification without sending it (`suppressed`, with the reason in `error`); true when closed. */
export async function suppressNotification(db: Executor, id: string, reason: string): Promise<boolean> {
  const r = await db
    .updateTable("notifications")
    .set({ status: "suppressed", error: reason })
    .where("id", "=", id)
    .where("status", "=", "pending")
    .returning("id")
    .execute();
  return r.length > 0;
}
