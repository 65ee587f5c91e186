/**
 * Account repositories (issue 6): users, revoked sessions, magic links, subscriptions, webhooks, delivery records and
 * the webhook signing keys. Every function takes the executor first (STYLE: kysely example app) and returns epoch-ms
 * instants and safe integers on both drivers (normalise.ts).
 *
 * Invariants kept here rather than in the routes, so two concurrent requests cannot break them:
 * - a magic link is used once: the exchange is one conditional update (`... where used_at is null`);
 * - at most one active subscription per (user, asset): a partial unique index, checked first for a clean answer;
 * - the per-user caps (50 active subscriptions, 10 active webhooks): counted under a row lock on the user, so two
 *   creates of the same user are serialised.
 */
import { randomUUID } from "node:crypto";
import { sql, type Selectable } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { atomically, toEnum, toEnumOrNull, toInt, toMs, toMsOrNull, tsParam, tsParamOrNull } from "./normalise.ts";
import type { Database, Executor } from "./schema.ts";

/** Caps per user (addendum: 409 `conflict` beyond). */
export const MAX_ACTIVE_SUBSCRIPTIONS = 50;
export const MAX_ACTIVE_WEBHOOKS = 10;

export const SUBSCRIPTION_CHANNELS = ["telegram", "webhook", "dashboard"] as const;
export type SubscriptionChannel = (typeof SUBSCRIPTION_CHANNELS)[number];
export const WEBHOOK_FORMATS = ["signed", "chat"] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];
export const WEBHOOK_STATUSES = ["delivered", "failed", "dead_lettered"] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];
export const DELIVERY_STATUSES = ["pending", "delivered", "failed", "dead_lettered"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export const DELIVERY_ERRORS = ["timeout", "dns", "tls", "refused", "ssrf_blocked", "redirect", "http_status"] as const;
export type DeliveryError = (typeof DELIVERY_ERRORS)[number];
export const MIN_SEVERITIES = ["DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN"] as const;
export type MinSeverity = (typeof MIN_SEVERITIES)[number];

/** A user's preferences (addendum A). `quiet_hours` times are "HH:MM" in `timezone`. */
export interface Preferences {
  readonly locale: string;
  /** IANA time zone. */
  readonly timezone: string;
  readonly quiet_hours: { readonly start: string; readonly end: string } | null;
  readonly digest: "off" | "daily";
  readonly min_severity: MinSeverity;
}

export const DEFAULT_LOCALE = "en";

export const defaultPreferences = (locale = DEFAULT_LOCALE): Preferences => ({
  locale,
  timezone: "UTC",
  quiet_hours: null,
  digest: "off",
  min_severity: "DRIFT",
});

export interface UserRecord {
  readonly id: number;
  readonly telegram_id: number;
  /** Null for an account without a public user name. */
  readonly username: string | null;
  readonly first_name: string;
  readonly locale: string;
  readonly preferences: Preferences;
  readonly created_at: EpochMs;
}

export interface MagicLinkRecord {
  readonly tokenHash: string;
  readonly userId: number;
  readonly expiresAt: EpochMs;
  readonly usedAt: EpochMs | null;
}

export interface SubscriptionRecord {
  readonly id: number;
  readonly user_id: number;
  /** Symbol at creation. */
  readonly asset: string;
  readonly mint: string;
  readonly channel: SubscriptionChannel;
  readonly threshold_bps: number;
  readonly is_active: boolean;
  readonly created_at: EpochMs;
  readonly last_fired_at: EpochMs | null;
}

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

/** A webhook signing key as stored (the same shape as delivery's `WebhookSigningKey`; the store does not import it). */
export interface SigningKeyRecord {
  readonly kid: string;
  readonly alg: "Ed25519";
  readonly status: "active" | "retiring";
  readonly created_at: EpochMs;
  readonly retires_at: EpochMs | null;
  readonly public_key: string;
  readonly private_key: string;
}

/** Outcome of a write that may hit a cap or a uniqueness rule. */
export type WriteResult<T> =
  | { readonly kind: "ok"; readonly value: T }
  | { readonly kind: "not_found" }
  | { readonly kind: "conflict"; readonly reason: "duplicate" | "limit" };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUniqueViolation = (e: unknown): boolean => typeof e === "object" && e !== null && (e as { code?: unknown }).code === "23505";

// ---------------------------------------------------------------------------------------------------------------
// Users.

export function userFromRow(r: Selectable<Database["users"]>): UserRecord {
  const stored = (typeof r.preferences === "string" ? JSON.parse(r.preferences) : r.preferences) as Partial<Preferences> | null;
  return {
    id: toInt(r.id, "users.id"),
    telegram_id: toInt(r.telegram_id, "users.telegram_id"),
    username: r.username,
    first_name: r.first_name,
    locale: r.locale,
    preferences: { ...defaultPreferences(r.locale), ...(stored ?? {}), locale: r.locale },
    created_at: toMs(r.created_at, "users.created_at"),
  };
}

/** The login widget's user: created on first login, name fields refreshed on every later one. */
export async function upsertTelegramUser(
  db: Executor,
  u: { readonly telegram_id: number; readonly username: string | null; readonly first_name: string },
  now: EpochMs,
): Promise<UserRecord> {
  const r = await db
    .insertInto("users")
    .values({
      telegram_id: u.telegram_id,
      username: u.username,
      first_name: u.first_name,
      locale: DEFAULT_LOCALE,
      preferences: JSON.stringify(defaultPreferences()),
      created_at: tsParam(now),
    })
    .onConflict((oc) => oc.column("telegram_id").doUpdateSet({ username: u.username, first_name: u.first_name }))
    .returningAll()
    .executeTakeFirstOrThrow();
  return userFromRow(r);
}

export async function userById(db: Executor, id: number): Promise<UserRecord | undefined> {
  if (!Number.isSafeInteger(id) || id <= 0) return undefined;
  const r = await db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst();
  return r === undefined ? undefined : userFromRow(r);
}

/** Merges `patch` into the user's preferences (the locale also into `users.locale`). Undefined for an unknown user. */
export async function updatePreferences(db: Executor, id: number, patch: Partial<Preferences>): Promise<UserRecord | undefined> {
  return atomically(db, async (trx) => {
    const current = await trx.selectFrom("users").selectAll().where("id", "=", id).forUpdate().executeTakeFirst();
    if (current === undefined) return undefined;
    const merged: Preferences = { ...userFromRow(current).preferences, ...patch };
    const r = await trx
      .updateTable("users")
      .set({ preferences: JSON.stringify(merged), locale: merged.locale })
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return userFromRow(r);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Sessions and magic links.

/** Revokes a session by `jti` (idempotent). Kept until `expiresAt`, after which the token is refused anyway. */
export async function revokeToken(db: Executor, jti: string, expiresAt: EpochMs, now: EpochMs): Promise<void> {
  await db
    .insertInto("revoked_tokens")
    .values({ jti, revoked_at: tsParam(now), expires_at: tsParam(expiresAt) })
    .onConflict((oc) => oc.column("jti").doNothing())
    .execute();
}

export async function isRevoked(db: Executor, jti: string): Promise<boolean> {
  const r = await db.selectFrom("revoked_tokens").select("jti").where("jti", "=", jti).executeTakeFirst();
  return r !== undefined;
}

export async function insertMagicLink(db: Executor, link: { readonly tokenHash: string; readonly userId: number; readonly expiresAt: EpochMs }): Promise<void> {
  await db
    .insertInto("magic_links")
    .values({ token_hash: link.tokenHash, user_id: link.userId, expires_at: tsParam(link.expiresAt), used_at: null })
    .execute();
}

export async function magicLinkByHash(db: Executor, tokenHash: string): Promise<MagicLinkRecord | undefined> {
  const r = await db.selectFrom("magic_links").selectAll().where("token_hash", "=", tokenHash).executeTakeFirst();
  if (r === undefined) return undefined;
  return {
    tokenHash: r.token_hash,
    userId: toInt(r.user_id, "magic_links.user_id"),
    expiresAt: toMs(r.expires_at, "magic_links.expires_at"),
    usedAt: toMsOrNull(r.used_at, "magic_links.used_at"),
  };
}

/**
 * Marks the link used at `now` if it is unused and unexpired, in one conditional update: of two concurrent
 * exchanges exactly one gets the user id, the other null.
 */
export async function useMagicLink(db: Executor, tokenHash: string, now: EpochMs): Promise<number | null> {
  const r = await db
    .updateTable("magic_links")
    .set({ used_at: tsParam(now) })
    .where("token_hash", "=", tokenHash)
    .where("used_at", "is", null)
    .where("expires_at", ">", tsParam(now))
    .returning("user_id")
    .executeTakeFirst();
  return r === undefined ? null : toInt(r.user_id, "magic_links.user_id");
}

/** Deletes revocations of tokens that have expired and magic links past their lifetime. */
export async function purgeExpiredAuth(db: Executor, now: EpochMs): Promise<{ revoked: number; magic: number }> {
  const a = await db.deleteFrom("revoked_tokens").where("expires_at", "<=", tsParam(now)).executeTakeFirst();
  const b = await db.deleteFrom("magic_links").where("expires_at", "<=", tsParam(now)).executeTakeFirst();
  return { revoked: Number(a.numDeletedRows), magic: Number(b.numDeletedRows) };
}

// ---------------------------------------------------------------------------------------------------------------
// Subscriptions.

export function subscriptionFromRow(r: Selectable<Database["subscriptions"]>): SubscriptionRecord {
  return {
    id: toInt(r.id, "subscriptions.id"),
    user_id: toInt(r.user_id, "subscriptions.user_id"),
    asset: r.asset,
    mint: r.mint,
    channel: toEnum(r.channel, SUBSCRIPTION_CHANNELS, "subscriptions.channel"),
    threshold_bps: r.threshold_bps,
    is_active: r.is_active,
    created_at: toMs(r.created_at, "subscriptions.created_at"),
    last_fired_at: toMsOrNull(r.last_fired_at, "subscriptions.last_fired_at"),
  };
}

/** Takes the user's row lock for the rest of the transaction; false for an unknown user. */
async function lockUser(trx: Executor, userId: number): Promise<boolean> {
  const r = await trx.selectFrom("users").select("id").where("id", "=", userId).forUpdate().executeTakeFirst();
  return r !== undefined;
}

async function activeSubscriptionCount(trx: Executor, userId: number): Promise<number> {
  const r = await trx
    .selectFrom("subscriptions")
    .select((eb) => eb.fn.countAll().as("n"))
    .where("user_id", "=", userId)
    .where("is_active", "=", true)
    .executeTakeFirstOrThrow();
  return toInt(r.n, "count(subscriptions)");
}

/** The user's subscriptions: active ones first, then newest first. */
export async function subscriptionsOf(db: Executor, userId: number): Promise<SubscriptionRecord[]> {
  const rows = await db
    .selectFrom("subscriptions")
    .selectAll()
    .where("user_id", "=", userId)
    .orderBy("is_active", "desc")
    .orderBy("created_at", "desc")
    .orderBy("id", "desc")
    .execute();
  return rows.map(subscriptionFromRow);
}

export interface NewSubscription {
  readonly asset: string;
  readonly mint: string;
  readonly channel: SubscriptionChannel;
  readonly threshold_bps: number;
}

/** Creates an active subscription; `conflict` when one is already active for the asset or the cap is reached. */
export async function createSubscription(
  db: Executor,
  userId: number,
  s: NewSubscription,
  now: EpochMs,
  max = MAX_ACTIVE_SUBSCRIPTIONS,
): Promise<WriteResult<SubscriptionRecord>> {
  try {
    return await atomically(db, async (trx): Promise<WriteResult<SubscriptionRecord>> => {
      if (!(await lockUser(trx, userId))) return { kind: "not_found" };
      const dup = await trx
        .selectFrom("subscriptions")
        .select("id")
        .where("user_id", "=", userId)
        .where("mint", "=", s.mint)
        .where("is_active", "=", true)
        .executeTakeFirst();
      if (dup !== undefined) return { kind: "conflict", reason: "duplicate" };
      if ((await activeSubscriptionCount(trx, userId)) >= max) return { kind: "conflict", reason: "limit" };
      const r = await trx
        .insertInto("subscriptions")
        .values({ user_id: userId, ...s, is_active: true, created_at: tsParam(now), last_fired_at: null })
        .returningAll()
        .executeTakeFirstOrThrow();
      return { kind: "ok", value: subscriptionFromRow(r) };
    });
  } catch (e) {
    if (isUniqueViolation(e)) return { kind: "conflict", reason: "duplicate" };
    throw e;
  }
}

export interface SubscriptionPatch {
  readonly threshold_bps?: number;
  readonly channel?: SubscriptionChannel;
  readonly is_active?: boolean;
}

/**
 * Updates the user's subscription to `mint`: the active one, else (to re-activate it) the newest inactive one.
 * Re-activation counts against the cap.
 */
export async function updateSubscription(
  db: Executor,
  userId: number,
  mint: string,
  patch: SubscriptionPatch,
  max = MAX_ACTIVE_SUBSCRIPTIONS,
): Promise<WriteResult<SubscriptionRecord>> {
  return atomically(db, async (trx): Promise<WriteResult<SubscriptionRecord>> => {
    if (!(await lockUser(trx, userId))) return { kind: "not_found" };
    const current = await trx
      .selectFrom("subscriptions")
      .selectAll()
      .where("user_id", "=", userId)
      .where("mint", "=", mint)
      .orderBy("is_active", "desc")
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .executeTakeFirst();
    if (current === undefined) return { kind: "not_found" };
    if (patch.is_active === true && !current.is_active && (await activeSubscriptionCount(trx, userId)) >= max) {
      return { kind: "conflict", reason: "limit" };
    }
    if (Object.keys(patch).length === 0) return { kind: "ok", value: subscriptionFromRow(current) };
    const r = await trx.updateTable("subscriptions").set({ ...patch }).where("id", "=", current.id).returningAll().executeTakeFirstOrThrow();
    return { kind: "ok", value: subscriptionFromRow(r) };
  });
}

/** Soft-deletes the user's active subscription to `mint`. False when there is none. */
export async function deactivateSubscription(db: Executor, userId: number, mint: string): Promise<boolean> {
  const r = await db
    .updateTable("subscriptions")
    .set({ is_active: false })
    .where("user_id", "=", userId)
    .where("mint", "=", mint)
    .where("is_active", "=", true)
    .returning("id")
    .execute();
  return r.length > 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Webhooks.

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

// ---------------------------------------------------------------------------------------------------------------
// Delivery records.

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

// ---------------------------------------------------------------------------------------------------------------
// Signing keys.

export async function loadSigningKeys(db: Executor): Promise<SigningKeyRecord[]> {
  const rows = await db.selectFrom("signing_keys").selectAll().orderBy("created_at").orderBy("kid").execute();
  return rows.map((r) => ({
    kid: r.kid,
    alg: toEnum(r.alg, ["Ed25519"] as const, "signing_keys.alg"),
    status: toEnum(r.status, ["active", "retiring"] as const, "signing_keys.status"),
    created_at: toMs(r.created_at, "signing_keys.created_at"),
    retires_at: toMsOrNull(r.retires_at, "signing_keys.retires_at"),
    public_key: r.public_key,
    private_key: r.private_key,
  }));
}

/** Any number, fixed: the advisory lock that serialises every change of the signing-key set across processes. */
const SIGNING_KEYS_LOCK = 0x7065_6b65; // "peke"

/**
 * Runs `fn` in one transaction holding the signing keys' advisory lock, so two processes that start on an empty
 * database (or rotate at once) change the key set one after the other: the second sees the first's key.
 */
export function withSigningKeysLock<T>(db: Executor, fn: (trx: Executor) => Promise<T>): Promise<T> {
  return atomically(db, async (trx) => {
    await sql`select pg_advisory_xact_lock(${SIGNING_KEYS_LOCK})`.execute(trx);
    return fn(trx);
  });
}

/**
 * Persists a key set as `rotate`/`ensureActiveKey` return it: upserts every key (status and retirement may change;
 * the key itself never does, but its stored form may: a plaintext private key of an earlier build is replaced by its
 * sealed form, src/delivery/key-ring.ts) and deletes the ones no longer in the set, in one transaction.
 */
export async function saveSigningKeys(db: Executor, keys: readonly SigningKeyRecord[]): Promise<void> {
  await atomically(db, async (trx) => {
    const kids = keys.map((k) => k.kid);
    let del = trx.deleteFrom("signing_keys");
    if (kids.length > 0) del = del.where("kid", "not in", kids);
    await del.execute();
    for (const k of keys) {
      await trx
        .insertInto("signing_keys")
        .values({ ...k, created_at: tsParam(k.created_at), retires_at: tsParamOrNull(k.retires_at) })
        .onConflict((oc) => oc.column("kid").doUpdateSet({ status: k.status, retires_at: tsParamOrNull(k.retires_at), private_key: k.private_key }))
        .execute();
    }
  });
}
