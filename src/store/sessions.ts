/**
 * Sessions and magic links (issue 6): revoked session ids, and magic links used once: the exchange is one
 * conditional update (`... where used_at is null`), so two concurrent exchanges cannot both succeed.
 */
import type { EpochMs } from "../methodology/index.ts";
import { toInt, toMs, toMsOrNull, tsParam } from "./normalise.ts";
import type { Executor } from "./schema.ts";

export interface MagicLinkRecord {
  readonly tokenHash: string;
  readonly userId: number;
  readonly expiresAt: EpochMs;
  readonly usedAt: EpochMs | null;
}

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
