/**
 * Magic-link tokens (interface 5.4(b), addendum A "Magic link"): 32 random bytes as base64url, stored only as their
 * SHA-256, valid for 10 minutes, single use; a used, expired or unknown token is `invalid_token` (addendum A, which
 * deliberately does not tell the caller which of the three it was).
 *
 * Pure: minting draws randomness but touches no store. Single use is only as strong as the store's write, so the
 * consume route must mark the record used with a conditional update (`... WHERE used_at IS NULL`) and treat "no row
 * updated" as used; `checkMagic` is the decision, not the lock.
 */
import { createHash, randomBytes } from "node:crypto";
import { AuthError } from "./auth-error.ts";

/** Lifetime of a magic link: 10 minutes, in milliseconds (addendum A). */
export const MAGIC_TTL_MS = 10 * 60 * 1000;
/** Random bytes in a token (addendum A: 32, so 256 bits). */
export const MAGIC_TOKEN_BYTES = 32;

/** 32 bytes in unpadded base64url are 43 characters. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** What the store keeps for a magic link: never the token itself. Times in epoch milliseconds. */
export interface MagicRecord {
  /** Lower-case hex SHA-256 of the token's text; the lookup key. */
  readonly tokenHash: string;
  /** The first instant at which the link no longer works. */
  readonly expiresAt: number;
  /** When it was exchanged for a session; null while unused. */
  readonly usedAt: number | null;
}

export interface MintedMagic {
  /** Goes to the user (in the link) and nowhere else: not stored, not logged. */
  readonly token: string;
  readonly tokenHash: string;
  /** Epoch milliseconds, `now + MAGIC_TTL_MS`. */
  readonly expiresAt: number;
  /** Exactly what to persist. */
  readonly record: MagicRecord;
}

/** Mints a magic link at `now` (epoch milliseconds). */
export function mintMagic(now: number): MintedMagic {
  const token = randomBytes(MAGIC_TOKEN_BYTES).toString("base64url");
  const tokenHash = hashMagic(token);
  const expiresAt = now + MAGIC_TTL_MS;
  return { token, tokenHash, expiresAt, record: { tokenHash, expiresAt, usedAt: null } };
}

/**
 * The stored form of a presented token: hex SHA-256 of its text. A string that is not a token we could have minted
 * is refused with `invalid_token` before any lookup.
 */
export function hashMagic(token: unknown): string {
  if (typeof token !== "string" || !TOKEN.test(token)) throw new AuthError("invalid_token", "malformed magic-link token");
  return createHash("sha256").update(token, "ascii").digest("hex");
}

/**
 * Whether a looked-up link may be exchanged at `now` (epoch milliseconds). Returns the record, or throws
 * `invalid_token` when it is unknown (`undefined`/`null`), already used, or expired (`now >= expiresAt`: it works
 * for exactly 10 minutes, the instant `expiresAt` included in the refusal).
 */
export function checkMagic(stored: MagicRecord | null | undefined, now: number): MagicRecord {
  if (stored == null) throw new AuthError("invalid_token", "unknown magic link");
  if (stored.usedAt !== null) throw new AuthError("invalid_token", "magic link already used");
  if (now >= stored.expiresAt) throw new AuthError("invalid_token", "magic link expired");
  return stored;
}

/** `checkMagic`, then the record as it must be written back: used at `now`. */
export function consumeMagic(stored: MagicRecord | null | undefined, now: number): MagicRecord {
  const record = checkMagic(stored, now);
  return { ...record, usedAt: now };
}
