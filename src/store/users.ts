/**
 * Users (issue 6) and their preferences; the row lock on a user that serialises the per-user caps of subscriptions
 * and webhooks (two concurrent creates of one user cannot both pass the count), and the outcome shape of such writes.
 */
import type { Selectable } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { atomically, toInt, toMs, tsParam } from "./normalise.ts";
import type { Database, Executor } from "./schema.ts";

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

/** Outcome of a write that may hit a cap or a uniqueness rule. */
export type WriteResult<T> =
  | { readonly kind: "ok"; readonly value: T }
  | { readonly kind: "not_found" }
  | { readonly kind: "conflict"; readonly reason: "duplicate" | "limit" };

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

/** Takes the user's row lock for the rest of the transaction; false for an unknown user. */
export async function lockUser(trx: Executor, userId: number): Promise<boolean> {
  const r = await trx.selectFrom("users").select("id").where("id", "=", userId).forUpdate().executeTakeFirst();
  return r !== undefined;
}
