/**
 * Alert subscriptions (issue 6): at most one active subscription per (user, asset), a partial unique index checked
 * first for a clean answer; at most 50 active per user, counted under the user's row lock.
 */
import type { Selectable } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { atomically, toEnum, toInt, toMs, toMsOrNull, tsParam } from "./normalise.ts";
import type { Database, Executor } from "./schema.ts";
import { lockUser, type WriteResult } from "./users.ts";

/** Cap per user (addendum: 409 `conflict` beyond). */
export const MAX_ACTIVE_SUBSCRIPTIONS = 50;

export const SUBSCRIPTION_CHANNELS = ["telegram", "webhook", "dashboard"] as const;
export type SubscriptionChannel = (typeof SUBSCRIPTION_CHANNELS)[number];

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

const isUniqueViolation = (e: unknown): boolean => typeof e === "object" && e !== null && (e as { code?: unknown }).code === "23505";

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
