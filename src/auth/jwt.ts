/**
 * Session tokens (interface 5.3, addendum C): compact JWS, HS256 only, 7-day lifetime, claims `sub, jti, iat, exp,
 * iss, aud`, revocation by `jti` on every request, and a logout check that ignores `exp` but not the signature.
 *
 * The algorithm is pinned, not negotiated: the header segment must be exactly the base64url of
 * `{"alg":"HS256","typ":"JWT"}` and the key is always the HMAC secret, so `alg: none`, RS256/ES256 (algorithm
 * confusion), HS512, a missing `typ` or a `kid`/`jku` header are refused before anything else is read. Times are epoch milliseconds in (`Clock.now()`), NumericDate seconds in the claims.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { AuthError, SessionSecretError, invalidToken } from "./auth-error.ts";
import { decodeBase64url, encodeBase64url } from "./base64url.ts";
import { hasControlCharacter } from "./text.ts";

/** Session lifetime: 7 days in seconds (interface 5.3 and 8, "JWT lifetime 7 days"). */
export const SESSION_TTL_SECONDS = 7 * 24 * 60 * 60;
/** Shortest accepted HS256 key, in bytes (addendum C). */
export const MIN_SECRET_BYTES = 32;
/** How far in the future `iat` may be, in seconds, before a token counts as not yet valid. */
export const CLOCK_SKEW_SECONDS = 60;
/** Longest token accepted, in characters; ours are about 250. Bounds the work done on hostile input. */
export const MAX_TOKEN_LENGTH = 2048;
/** Default `iss` claim. */
export const SESSION_ISSUER = "peg-oracle";
/** Default `aud` claim: the REST API's user routes. */
export const SESSION_AUDIENCE = "peg-oracle/v1";

/** The only header we mint or accept, compared as text: `{"alg":"HS256","typ":"JWT"}` in base64url. */
const HEADER_SEGMENT = encodeBase64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
const HMAC_BYTES = 32;
const JTI = /^[A-Za-z0-9_-]{16,128}$/;
const MAX_SUB_LENGTH = 64;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The HMAC key and the expected `iss`/`aud` (defaults `SESSION_ISSUER`/`SESSION_AUDIENCE`). */
export interface SessionKey {
  /** HS256 key, at least 32 bytes (UTF-8 bytes for a string). */
  readonly secret: string | Uint8Array;
  readonly issuer?: string;
  readonly audience?: string;
}

/** The verified claims of a session token. Times in NumericDate seconds. */
export interface SessionClaims {
  readonly iss: string;
  readonly aud: string;
  /** The user id, as a decimal string for a numeric id. */
  readonly sub: string;
  /** Token id; the revocation list is keyed by it. */
  readonly jti: string;
  readonly iat: number;
  readonly exp: number;
}

export interface MintSessionInput extends SessionKey {
  /** The user's id: a non-negative safe integer or a non-empty string of at most 64 printable characters. */
  readonly userId: number | string;
  /** Epoch milliseconds; `iat` is its whole second. */
  readonly now: number;
}

export interface MintedSession {
  readonly token: string;
  readonly claims: SessionClaims;
  /** `exp` in epoch milliseconds, for the login response's `expires_at`. */
  readonly expiresAt: number;
}

export interface VerifySessionOptions extends SessionKey {
  /** Epoch milliseconds. */
  readonly now: number;
  /**
   * Whether the session was revoked (logout). Checked for every token that is otherwise valid; a throw or rejection
   * propagates (the request fails, it is never let through).
   */
  readonly isRevoked: (jti: string) => boolean | Promise<boolean>;
}

export interface VerifyForLogoutOptions extends SessionKey {
  /** Epoch milliseconds. */
  readonly now: number;
}

/**
 * The key bytes, or a `SessionSecretError` when shorter than 32 bytes (addendum C: refuse to start with a shorter
 * one). Call it at start-up; mint and verify call it too.
 */
export function sessionSecretBytes(secret: string | Uint8Array): Buffer {
  const bytes = typeof secret === "string" ? Buffer.from(secret, "utf8") : Buffer.from(secret);
  if (bytes.length < MIN_SECRET_BYTES) {
    throw new SessionSecretError(`the session key is ${bytes.length} bytes; HS256 needs at least ${MIN_SECRET_BYTES}`);
  }
  return bytes;
}

function sign(signingInput: string, secret: Buffer): Buffer {
  return createHmac("sha256", secret).update(signingInput, "ascii").digest();
}

function subjectOf(userId: number | string): string {
  if (typeof userId === "number") {
    if (!Number.isSafeInteger(userId) || userId < 0) throw new RangeError(`userId ${userId} is not a non-negative safe integer`);
    return String(userId);
  }
  if (!isSubject(userId)) throw new RangeError("userId must be 1 to 64 printable characters");
  return userId;
}

function isSubject(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_SUB_LENGTH && !hasControlCharacter(value);
}

/**
 * Mints a session token (interface 5.3): HS256, `iat` = now in whole seconds, `exp` = `iat` + 7 days, a random
 * 128-bit `jti` (base64url), `iss` and `aud` from the key.
 */
export function mintSession(input: MintSessionInput): MintedSession {
  const secret = sessionSecretBytes(input.secret);
  const iat = Math.floor(input.now / 1000);
  const claims: SessionClaims = {
    iss: input.issuer ?? SESSION_ISSUER,
    aud: input.audience ?? SESSION_AUDIENCE,
    sub: subjectOf(input.userId),
    jti: randomBytes(16).toString("base64url"),
    iat,
    exp: iat + SESSION_TTL_SECONDS,
  };
  const signingInput = `${HEADER_SEGMENT}.${encodeBase64url(JSON.stringify(claims))}`;
  const token = `${signingInput}.${encodeBase64url(sign(signingInput, secret))}`;
  return { token, claims, expiresAt: claims.exp * 1000 };
}

function parseObject(bytes: Buffer): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch {
    return null;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

const isNumericDate = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

/**
 * Everything but expiry and revocation, in an order that never reads an unauthenticated claim: shape, pinned
 * header, constant-time signature check, then the claims. Refusals are `invalid_token` (addendum B: bad signature,
 * wrong alg/iss/aud, malformed).
 */
function authenticate(token: unknown, key: SessionKey, now: number): SessionClaims {
  const secret = sessionSecretBytes(key.secret);
  if (typeof token !== "string" || token.length === 0) throw invalidToken("no token");
  if (token.length > MAX_TOKEN_LENGTH) throw invalidToken("token too long");
  const parts = token.split(".");
  if (parts.length !== 3) throw invalidToken("a token has three dot-separated segments");
  const [headerText, payloadText, signatureText] = parts as [string, string, string];

  // Byte-exact: no JSON parser differences (duplicate keys, key order) and no `kid`/`jku`/`crit` to honour.
  if (headerText !== HEADER_SEGMENT) throw invalidToken("the header must be exactly {\"alg\":\"HS256\",\"typ\":\"JWT\"}");

  const payloadBytes = decodeBase64url(payloadText);
  const signature = decodeBase64url(signatureText);
  if (payloadBytes === null || signature === null) throw invalidToken("malformed segment");
  const expected = sign(`${headerText}.${payloadText}`, secret);
  // Length first: timingSafeEqual needs equal lengths, and the length of an HS256 MAC is public anyway.
  if (signature.length !== HMAC_BYTES || !timingSafeEqual(signature, expected)) throw invalidToken("bad signature");

  const claims = parseObject(payloadBytes);
  if (claims === null) throw invalidToken("malformed payload");
  const { iss, aud, sub, jti, iat, exp } = claims;
  if (iss !== (key.issuer ?? SESSION_ISSUER)) throw invalidToken("wrong or missing iss");
  if (aud !== (key.audience ?? SESSION_AUDIENCE)) throw invalidToken("wrong or missing aud");
  if (!isSubject(sub)) throw invalidToken("missing or malformed sub");
  if (typeof jti !== "string" || !JTI.test(jti)) throw invalidToken("missing or malformed jti");
  if (!isNumericDate(iat) || !isNumericDate(exp)) throw invalidToken("iat and exp must be integer NumericDates");
  if (exp <= iat || exp - iat > SESSION_TTL_SECONDS) throw invalidToken("exp is not within the session lifetime of iat");
  if (iat * 1000 > now + CLOCK_SKEW_SECONDS * 1000) throw invalidToken("token issued in the future");
  return { iss, aud, sub, jti, iat, exp };
}

/**
 * Verifies a bearer token for a user route (interface 5.2-5.3, addendum B and C). Resolves to its claims, or rejects
 * with an `AuthError`: `invalid_token` (malformed, not HS256/JWT, bad signature, wrong or missing claim, issued in
 * the future beyond `CLOCK_SKEW_SECONDS`), `token_expired` (now >= exp) or `token_revoked` (`isRevoked(jti)`).
 */
export async function verifySession(token: unknown, options: VerifySessionOptions): Promise<SessionClaims> {
  const claims = authenticate(token, options, options.now);
  if (options.now >= claims.exp * 1000) throw new AuthError("token_expired", "the session has expired");
  if (await options.isRevoked(claims.jti)) throw new AuthError("token_revoked", "the session was revoked");
  return claims;
}

/**
 * Verifies the token presented to `POST /v1/auth/logout` (interface 4.6 and 5.5, addendum C: "verifies the signature,
 * ignores exp, revokes"). An expired but authentic token is accepted so its `jti` can be revoked; everything else is
 * checked as in `verifySession` (`invalid_token`). Revocation is not checked: logging out twice is not an error.
 */
export function verifyForLogout(token: unknown, options: VerifyForLogoutOptions): SessionClaims {
  return authenticate(token, options, options.now);
}
