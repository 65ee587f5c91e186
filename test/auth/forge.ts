/**
 * Hand-built tokens for the attack corpus, made with node:crypto only (never with the module under test), so a test
 * fails when the verifier accepts what it must not.
 */
import { createHmac } from "node:crypto";
import { AuthError, SESSION_AUDIENCE, SESSION_ISSUER } from "../../src/auth/index.ts";

export const SECRET = "test-session-key-0123456789abcdef-0123";
export const OTHER_SECRET = "another-session-key-0123456789abcdef-99";
/** 2026-06-12T10:00:00Z, a whole second. */
export const NOW = Date.UTC(2026, 5, 12, 10, 0, 0);
export const NOW_S = NOW / 1000;
export const DAY_S = 86_400;
export const GOOD_JTI = "AAECAwQFBgcICQoLDA0ODw";

export const b64 = (value: string | Buffer): string => Buffer.from(value).toString("base64url");
export const b64json = (value: unknown): string => b64(JSON.stringify(value));

export const PINNED_HEADER = b64json({ alg: "HS256", typ: "JWT" });

export function hmac(input: string, secret: string, hash = "sha256"): string {
  return createHmac(hash, secret).update(input).digest("base64url");
}

/** A token over the given header and payload segments, HMAC-signed (SHA-256 unless told) with `secret`. */
export function signSegments(header: string, payload: string, secret = SECRET, hash = "sha256"): string {
  return `${header}.${payload}.${hmac(`${header}.${payload}`, secret, hash)}`;
}

/** A correctly signed token with these claims (and the pinned header unless told). */
export function forge(claims: unknown, opts: { header?: unknown; secret?: string; hash?: string } = {}): string {
  const header = opts.header === undefined ? PINNED_HEADER : b64json(opts.header);
  return signSegments(header, b64json(claims), opts.secret ?? SECRET, opts.hash ?? "sha256");
}

/** Claims a valid session at NOW would carry. */
export function claimsAt(nowS = NOW_S): Record<string, unknown> {
  return { iss: SESSION_ISSUER, aud: SESSION_AUDIENCE, sub: "42", jti: GOOD_JTI, iat: nowS, exp: nowS + 7 * DAY_S };
}

/** The AuthError code a call fails with, or "accepted". Anything that is not an AuthError is rethrown. */
export async function outcome(call: () => unknown): Promise<string> {
  try {
    await call();
  } catch (err) {
    if (err instanceof AuthError) return err.code;
    throw err;
  }
  return "accepted";
}
