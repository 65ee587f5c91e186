/**
 * The messenger login-widget check behind `POST /v1/auth/messenger` (interface 4.6, addendum C):
 * data-check-string = every received field except `hash`, as `key=value`, sorted by key, joined with `\n`;
 * secret = SHA-256(bot token); expected = hex HMAC-SHA-256(data-check-string, secret), compared in constant time;
 * `auth_date` at most 86,400 s old and at most 60 s in the future.
 *
 * Every received field is signed, including ones we do not use, so a field added or removed after signing breaks the
 * hash. Values must be single-line strings (or integers for `id` and `auth_date`): a newline inside a value could
 * otherwise pass for a field boundary, letting the same signed string be read as different fields.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { AuthError } from "./auth-error.ts";
import { hasControlCharacter } from "./text.ts";

/** Oldest accepted `auth_date`, in seconds before now (addendum C). */
export const LOGIN_MAX_AGE_SECONDS = 86_400;
/** Furthest accepted `auth_date`, in seconds after now (addendum C). */
export const LOGIN_MAX_FUTURE_SECONDS = 60;
/** Most fields accepted, `hash` included; the widget sends at most 7. */
export const LOGIN_MAX_FIELDS = 16;
/** Longest accepted value, in UTF-16 code units (a `photo_url` is about 100). */
export const LOGIN_MAX_VALUE_LENGTH = 1024;

const KEY = /^[a-z][a-z0-9_]{0,63}$/;
const HASH = /^[0-9a-f]{64}$/;
const CANONICAL_INT = /^(0|[1-9][0-9]{0,15})$/;

/** The widget fields a user record needs, named as the interface names them (2.11, addendum A). */
export interface TelegramLoginUser {
  readonly telegram_id: number;
  readonly first_name: string;
  readonly last_name: string | null;
  /** Not every account has one. */
  readonly username: string | null;
  readonly photo_url: string | null;
  /** Unix seconds at which the widget signed the payload. */
  readonly auth_date: number;
}

export interface TelegramLoginOptions {
  /** The bot's token (`TELEGRAM_BOT_TOKEN`); the HMAC key is its SHA-256. */
  readonly botToken: string;
  /** Epoch milliseconds. */
  readonly now: number;
}

const invalidBody = (message: string): AuthError => new AuthError("invalid_body", message);

/** A field's value as it appears in the data-check-string, or null when it is not an accepted value. */
function fieldText(key: string, value: unknown): string | null {
  if (key === "id" || key === "auth_date") {
    if (typeof value === "number") return Number.isSafeInteger(value) && value > 0 ? String(value) : null;
    return typeof value === "string" && CANONICAL_INT.test(value) && Number.isSafeInteger(Number(value)) && value !== "0" ? value : null;
  }
  if (typeof value !== "string" || value.length > LOGIN_MAX_VALUE_LENGTH || hasControlCharacter(value)) return null;
  return value;
}

/** The data-check-string of addendum C, from already validated `key=value` pairs. */
export function dataCheckString(fields: ReadonlyMap<string, string>): string {
  return [...fields.keys()]
    .filter((key) => key !== "hash")
    .sort()
    .map((key) => `${key}=${fields.get(key) ?? ""}`)
    .join("\n");
}

/**
 * Checks a login-widget payload (the parsed JSON body) and returns the user it signs. Throws an `AuthError`:
 * - `invalid_body` (addendum B, schema-invalid): not an object, too many fields, a key that is not lower-case
 *   `[a-z0-9_]`, a value that is not a single-line string of at most 1,024 characters (`id` and `auth_date`: a
 *   positive integer), `id`, `first_name`, `auth_date` or `hash` missing;
 * - `invalid_token` (addendum B, bad signature or malformed): `hash` not 64 lower-case hex digits, a hash that does
 *   not match (wrong key, a field changed, added or removed), `auth_date` more than 60 s in the future;
 * - `token_expired`: `auth_date` more than 86,400 s old (the signed credential has outlived addendum C's window).
 */
export function checkTelegramLogin(payload: unknown, options: TelegramLoginOptions): TelegramLoginUser {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) throw invalidBody("expected a JSON object");
  const entries = Object.entries(payload);
  if (entries.length > LOGIN_MAX_FIELDS) throw invalidBody(`at most ${LOGIN_MAX_FIELDS} fields`);
  const fields = new Map<string, string>();
  for (const [key, value] of entries) {
    if (!KEY.test(key)) throw invalidBody(`field name ${JSON.stringify(key.slice(0, 64))} is not accepted`);
    if (key === "hash") {
      if (typeof value !== "string") throw invalidBody("hash must be a string");
      fields.set(key, value);
      continue;
    }
    const text = fieldText(key, value);
    if (text === null) throw invalidBody(`${key} must be ${key === "id" || key === "auth_date" ? "a positive integer" : "a single-line string of at most 1024 characters"}`);
    fields.set(key, text);
  }
  for (const required of ["id", "first_name", "auth_date", "hash"]) {
    if (!fields.has(required)) throw invalidBody(`${required} is required`);
  }

  const hash = fields.get("hash") ?? "";
  if (!HASH.test(hash)) throw new AuthError("invalid_token", "hash must be 64 lower-case hex digits");
  const secret = createHash("sha256").update(options.botToken, "utf8").digest();
  const expected = createHmac("sha256", secret).update(dataCheckString(fields), "utf8").digest();
  if (!timingSafeEqual(Buffer.from(hash, "hex"), expected)) throw new AuthError("invalid_token", "the login hash does not match");

  // Only now is auth_date authentic; compared in milliseconds so the window edges are exact.
  const authDate = Number(fields.get("auth_date"));
  const ageMs = options.now - authDate * 1000;
  if (ageMs > LOGIN_MAX_AGE_SECONDS * 1000) throw new AuthError("token_expired", "the login is older than 24 hours");
  if (-ageMs > LOGIN_MAX_FUTURE_SECONDS * 1000) throw new AuthError("invalid_token", "auth_date is in the future");

  return {
    telegram_id: Number(fields.get("id")),
    first_name: fields.get("first_name") ?? "",
    last_name: fields.get("last_name") ?? null,
    username: fields.get("username") ?? null,
    photo_url: fields.get("photo_url") ?? null,
    auth_date: authDate,
  };
}
