/**
 * Session tokens (interface 5.3, addendum C): compact JWS, HS256 only, 7-day lifetime, claims `sub, jti, iat, exp,
 * iss, aud`, revocation by `jti` on every request, and a logout check that ignores `exp` but not the signature.
 *
 * Verification is jose's `jwtVerify` (signature, `alg` pinned to HS256, `typ`, `iss`, `aud`, required claims, `nbf`),
 * between two checks of ours for what jose accepts and a session must not (each one is a case of the attack corpus,
 * test/auth/corpus.ts): before it, the token's shape, so nothing is parsed before the header is known to be exactly
 * `{"alg":"HS256","typ":"JWT"}` (jose takes reordered or duplicate keys, `kid`/`jku`, `typ: "jwt"`) and every segment
 * has its one canonical base64url spelling (jose's decoder takes `=` padding and stray low bits); after it, the
 * claims' exact types (`aud` a string, not an array; integer NumericDates; `sub` and `jti` formats) and the lifetime
 * (`exp` within 7 days after `iat`, `iat` at most `CLOCK_SKEW_SECONDS` ahead). Expiry is decided last and by us, to
 * the millisecond of the injected clock; every refusal keeps the code it had (`sessionRefusal` maps jose's errors).
 *
 * Times are epoch milliseconds in (`Clock.now()`), NumericDate seconds in the claims.
 */
import { randomBytes, webcrypto } from "node:crypto";
import { SignJWT, errors, jwtVerify, type JWTPayload, type JWTVerifyOptions } from "jose";
import { AuthError, SessionSecretError, invalidToken } from "./auth-error.ts";
import { hasControlCharacter } from "./text.ts";

/** Session lifetime: 7 days in seconds (interface 5.3 and 8, "JWT lifetime 7 days"). */
export const SESSION_TTL_SECONDS = 7 * 24 * 60 * 60;
/** Shortest accepted HS256 key, in bytes (addendum C). */
export const MIN_SECRET_BYTES = 32;
/** How far in the future `iat` (and `nbf`) may be, in seconds, before a token counts as not yet valid. */
export const CLOCK_SKEW_SECONDS = 60;
/** Longest token accepted, in characters; ours are about 250. Bounds the work done on hostile input. */
export const MAX_TOKEN_LENGTH = 2048;
/** Default `iss` claim. */
export const SESSION_ISSUER = "peg-oracle";
/** Default `aud` claim: the REST API's user routes. */
export const SESSION_AUDIENCE = "peg-oracle/v1";

const base64url = (bytes: string | Uint8Array): string => Buffer.from(bytes).toString("base64url");
/** The only header we mint or accept, compared as text: `{"alg":"HS256","typ":"JWT"}` in base64url. */
const HEADER_SEGMENT = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
const JTI = /^[A-Za-z0-9_-]{16,128}$/;
const MAX_SUB_LENGTH = 64;
/** What jose checks for us; `issuer`, `audience` and `currentDate` are added per call. */
const JOSE_OPTIONS = {
  algorithms: ["HS256"],
  typ: "JWT",
  requiredClaims: ["iss", "aud", "sub", "jti", "iat", "exp"],
  // Applies to jose's `nbf` check (the same skew `iat` gets); its `exp` check is superseded by ours (see `authentic`).
  clockTolerance: CLOCK_SKEW_SECONDS,
} as const satisfies JWTVerifyOptions;

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
 * Mints a session token (interface 5.3) with jose's `SignJWT`: HS256, `typ: JWT`, `iat` = now in whole seconds,
 * `exp` = `iat` + 7 days, a random 128-bit `jti` (base64url), `iss` and `aud` from the key. The header is exactly
 * the pinned one `verifySession` accepts.
 */
export async function mintSession(input: MintSessionInput): Promise<MintedSession> {
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
  const token = await new SignJWT({ ...claims }).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(await hmacKey(secret));
  return { token, claims, expiresAt: claims.exp * 1000 };
}

/**
 * The HS256 key as a WebCrypto key, imported once per secret: jose imports a raw `Uint8Array` on every call, which
 * costs more than the verification itself. A process has one session secret (tests a few), so the cache is tiny.
 */
const hmacKeys = new Map<string, Promise<webcrypto.CryptoKey>>();
const MAX_CACHED_KEYS = 8;
function hmacKey(secret: Buffer): Promise<webcrypto.CryptoKey> {
  const id = secret.toString("base64");
  let key = hmacKeys.get(id);
  if (key === undefined) {
    if (hmacKeys.size >= MAX_CACHED_KEYS) hmacKeys.clear();
    key = webcrypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    hmacKeys.set(id, key);
  }
  return key;
}

/**
 * The session code of an error thrown by `jwtVerify`, by jose class. `JWTExpired` is not here: jose throws it only
 * after the signature and every claim check before `exp` passed, so it means "authentic, expired" (see `authentic`).
 * Anything not listed (a `TypeError` for a bad option or key) is a bug of ours and propagates unchanged.
 */
export function sessionRefusal(err: unknown): unknown {
  if (err instanceof errors.JWSSignatureVerificationFailed) return invalidToken("bad signature");
  if (err instanceof errors.JOSEAlgNotAllowed) return invalidToken("the algorithm is not HS256");
  if (err instanceof errors.JWTClaimValidationFailed) return invalidToken(`claim ${err.claim}: ${err.message}`);
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return invalidToken(`malformed token: ${err.message}`);
  if (err instanceof errors.JOSENotSupported) return invalidToken(`unsupported token: ${err.message}`);
  return err;
}

/** A canonical unpadded base64url text: its bytes re-encode to the same text (one spelling per token). */
function isCanonicalBase64url(text: string): boolean {
  return /^[A-Za-z0-9_-]*$/.test(text) && text.length % 4 !== 1 && Buffer.from(text, "base64url").toString("base64url") === text;
}

/** The token when its shape is one we mint: a string of three segments, the pinned header, canonical base64url. */
function pinnedShape(token: unknown): string {
  if (typeof token !== "string" || token.length === 0) throw invalidToken("no token");
  if (token.length > MAX_TOKEN_LENGTH) throw invalidToken("token too long");
  const parts = token.split(".");
  if (parts.length !== 3) throw invalidToken("a token has three dot-separated segments");
  const [header, payload, signature] = parts as [string, string, string];
  // Byte-exact: no JSON parser differences (duplicate keys, key order) and no `kid`/`jku`/`crit` to honour.
  if (header !== HEADER_SEGMENT) throw invalidToken("the header must be exactly {\"alg\":\"HS256\",\"typ\":\"JWT\"}");
  if (!isCanonicalBase64url(payload) || !isCanonicalBase64url(signature)) throw invalidToken("malformed segment");
  return token;
}

/** The verified payload, expired or not; every other failure is refused (`sessionRefusal`). */
async function authentic(token: string, secret: Buffer, key: SessionKey, now: number): Promise<JWTPayload> {
  try {
    const options = { ...JOSE_OPTIONS, issuer: key.issuer ?? SESSION_ISSUER, audience: key.audience ?? SESSION_AUDIENCE, currentDate: new Date(now) };
    return (await jwtVerify(token, await hmacKey(secret), options)).payload;
  } catch (err) {
    // Thrown after the signature, typ, iss, aud and nbf checks passed (jose's validateClaimsSet order); its payload
    // is the verified claims set. The claim checks below run on it all the same.
    if (err instanceof errors.JWTExpired) return err.payload;
    throw sessionRefusal(err);
  }
}

const isNumericDate = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

/** Our claim rules on a verified payload (jose's own checks repeated where they are looser: `aud` arrays). */
function sessionClaims(payload: JWTPayload, key: SessionKey, now: number): SessionClaims {
  const { iss, aud, sub, jti, iat, exp } = payload;
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
 * Everything but expiry and revocation, in an order that never reads an unauthenticated claim: shape and pinned
 * header, then jose (signature first), then the claims. Refusals are `invalid_token` (addendum B: bad signature,
 * wrong alg/iss/aud, malformed).
 */
async function authenticate(token: unknown, key: SessionKey, now: number): Promise<SessionClaims> {
  const secret = sessionSecretBytes(key.secret);
  return sessionClaims(await authentic(pinnedShape(token), secret, key, now), key, now);
}

/**
 * Verifies a bearer token for a user route (interface 5.2-5.3, addendum B and C). Resolves to its claims, or rejects
 * with an `AuthError`: `invalid_token` (malformed, not HS256/JWT, bad signature, wrong or missing claim, issued in
 * the future beyond `CLOCK_SKEW_SECONDS`), `token_expired` (now >= exp) or `token_revoked` (`isRevoked(jti)`); with
 * a `SessionSecretError` for a key shorter than 32 bytes.
 */
export async function verifySession(token: unknown, options: VerifySessionOptions): Promise<SessionClaims> {
  const claims = await authenticate(token, options, options.now);
  if (options.now >= claims.exp * 1000) throw new AuthError("token_expired", "the session has expired");
  if (await options.isRevoked(claims.jti)) throw new AuthError("token_revoked", "the session was revoked");
  return claims;
}

/**
 * Verifies the token presented to `POST /v1/auth/logout` (interface 4.6 and 5.5, addendum C: "verifies the signature,
 * ignores exp, revokes"). An expired but authentic token is accepted so its `jti` can be revoked; everything else is
 * checked as in `verifySession` (`invalid_token`; an expired token with a bad signature included). Revocation is not
 * checked: logging out twice is not an error.
 */
export async function verifyForLogout(token: unknown, options: VerifyForLogoutOptions): Promise<SessionClaims> {
  return authenticate(token, options, options.now);
}
