import { generateKeyPairSync, sign as signWith } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { SignJWT, jwtVerify } from "jose";
import {
  AuthError,
  SESSION_AUDIENCE,
  SESSION_ISSUER,
  SESSION_TTL_SECONDS,
  SessionSecretError,
  mintSession,
  verifyForLogout,
  verifySession,
  type SessionClaims,
} from "../../src/auth/index.ts";
import {
  DAY_S,
  GOOD_JTI,
  NOW,
  NOW_S,
  OTHER_SECRET,
  PINNED_HEADER,
  SECRET,
  b64,
  b64json,
  claimsAt,
  forge,
  hmac,
  signSegments,
} from "./forge.ts";

const verify = (token: unknown, now = NOW, revoked: ReadonlySet<string> = new Set()): Promise<SessionClaims> =>
  verifySession(token, { secret: SECRET, now, isRevoked: (jti) => revoked.has(jti) });
const logout = (token: unknown, now = NOW): SessionClaims => verifyForLogout(token, { secret: SECRET, now });

/** The AuthError code a call fails with, or "accepted". Anything that is not an AuthError is rethrown. */
async function outcome(call: () => unknown): Promise<string> {
  try {
    await call();
  } catch (err) {
    if (err instanceof AuthError) return err.code;
    throw err;
  }
  return "accepted";
}

const valid = forge(claimsAt());
const [validHeader, validPayload, validSignature] = valid.split(".") as [string, string, string];
const signingInput = `${PINNED_HEADER}.${validPayload}`;
const without = (key: string): Record<string, unknown> => Object.fromEntries(Object.entries(claimsAt()).filter(([k]) => k !== key));

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
const rsaPublicPem = rsa.publicKey.export({ type: "spki", format: "pem" }).toString();

function withHeader(header: unknown, signature: (input: string) => string): string {
  const input = `${b64json(header)}.${validPayload}`;
  return `${input}.${signature(input)}`;
}

/** The signature with its last character swapped for one that differs only in the unused low bits. */
function nonCanonicalSignature(): { token: string; sameBytes: boolean } {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const last = validSignature.at(-1) ?? "";
  const alt = alphabet[alphabet.indexOf(last) ^ 1] ?? "";
  const altSignature = validSignature.slice(0, -1) + alt;
  const sameBytes = Buffer.from(altSignature, "base64url").equals(Buffer.from(validSignature, "base64url"));
  return { token: `${signingInput}.${altSignature}`, sameBytes };
}

/** A valid token whose signature contains `-` or `_`, re-spelled in standard base64 (`+`, `/`). */
function standardBase64Signature(): string {
  for (let i = 0; ; i++) {
    const token = forge({ ...claimsAt(), jti: `${GOOD_JTI}${i}` });
    const signature = token.split(".")[2] ?? "";
    if (/[-_]/.test(signature)) return token.replace(/\.[^.]+$/, `.${signature.replaceAll("-", "+").replaceAll("_", "/")}`);
  }
}

/** Valid claims spelled in standard base64 with at least one `+`, `/` or `=` (so not also base64url). */
function standardBase64Payload(): string {
  for (let i = 0; ; i++) {
    const text = Buffer.from(JSON.stringify({ ...claimsAt(), sub: `${42 + i}?>` })).toString("base64");
    if (/[+/=]/.test(text)) return text;
  }
}

type Expect = "accepted" | "invalid_token" | "token_expired" | "token_revoked";
/** [name, token, code from verifySession]; logout expects the same except that expired and revoked are accepted. */
const attacks: ReadonlyArray<readonly [string, unknown, Expect]> = [
  ["a valid token", valid, "accepted"],

  // Header: the algorithm is pinned.
  ["alg none, empty signature", `${b64json({ alg: "none", typ: "JWT" })}.${validPayload}.`, "invalid_token"],
  ["alg none, no signature segment", `${b64json({ alg: "none", typ: "JWT" })}.${validPayload}`, "invalid_token"],
  ["alg none with a valid HMAC signature", forge(claimsAt(), { header: { alg: "none", typ: "JWT" } }), "invalid_token"],
  ["alg None", forge(claimsAt(), { header: { alg: "None", typ: "JWT" } }), "invalid_token"],
  ["alg NONE, empty signature", `${b64json({ alg: "NONE", typ: "JWT" })}.${validPayload}.`, "invalid_token"],
  ["alg RS256, real RSA signature", withHeader({ alg: "RS256", typ: "JWT" }, (i) => signWith("sha256", Buffer.from(i), rsa.privateKey).toString("base64url")), "invalid_token"],
  ["alg RS256, HMAC keyed by the RSA public key (confusion)", withHeader({ alg: "RS256", typ: "JWT" }, (i) => hmac(i, rsaPublicPem)), "invalid_token"],
  ["alg RS256, HMAC keyed by the real secret", withHeader({ alg: "RS256", typ: "JWT" }, (i) => hmac(i, SECRET)), "invalid_token"],
  ["alg ES256, real ECDSA signature", withHeader({ alg: "ES256", typ: "JWT" }, (i) => signWith("sha256", Buffer.from(i), { key: ec.privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")), "invalid_token"],
  ["alg ES256, HMAC keyed by the real secret", withHeader({ alg: "ES256", typ: "JWT" }, (i) => hmac(i, SECRET)), "invalid_token"],
  ["alg HS512 with the real secret", forge(claimsAt(), { header: { alg: "HS512", typ: "JWT" }, hash: "sha512" }), "invalid_token"],
  ["alg HS384 with the real secret", forge(claimsAt(), { header: { alg: "HS384", typ: "JWT" }, hash: "sha384" }), "invalid_token"],
  ["alg lower-case hs256", forge(claimsAt(), { header: { alg: "hs256", typ: "JWT" } }), "invalid_token"],
  ["typ missing", forge(claimsAt(), { header: { alg: "HS256" } }), "invalid_token"],
  ["typ at+jwt", forge(claimsAt(), { header: { alg: "HS256", typ: "at+jwt" } }), "invalid_token"],
  ["typ lower-case jwt", forge(claimsAt(), { header: { alg: "HS256", typ: "jwt" } }), "invalid_token"],
  ["extra kid header", forge(claimsAt(), { header: { alg: "HS256", typ: "JWT", kid: "1" } }), "invalid_token"],
  ["extra jku header", forge(claimsAt(), { header: { alg: "HS256", typ: "JWT", jku: "https://evil.example/jwks" } }), "invalid_token"],
  ["crit header", forge(claimsAt(), { header: { alg: "HS256", typ: "JWT", crit: ["b64"], b64: false } }), "invalid_token"],
  ["header keys reordered (not the pinned bytes)", forge(claimsAt(), { header: { typ: "JWT", alg: "HS256" } }), "invalid_token"],
  ["duplicate alg keys", signSegments(b64('{"alg":"none","alg":"HS256","typ":"JWT"}'), validPayload), "invalid_token"],
  ["header is an array", forge(claimsAt(), { header: ["HS256", "JWT"] }), "invalid_token"],
  ["header is not JSON", signSegments(b64("HS256"), validPayload), "invalid_token"],

  // Key and signature.
  ["signed with another secret", forge(claimsAt(), { secret: OTHER_SECRET }), "invalid_token"],
  ["expired and signed with another secret", forge({ ...claimsAt(NOW_S - 30 * DAY_S) }, { secret: OTHER_SECRET }), "invalid_token"],
  ["tampered payload, original signature", `${validHeader}.${b64json({ ...claimsAt(), sub: "1" })}.${validSignature}`, "invalid_token"],
  ["tampered header, original signature", `${b64json({ alg: "HS256", typ: "JWT", x: 1 })}.${validPayload}.${validSignature}`, "invalid_token"],
  ["signature bit flipped", `${signingInput}.${validSignature.slice(0, 5)}${validSignature[5] === "A" ? "B" : "A"}${validSignature.slice(6)}`, "invalid_token"],
  ["a 64-byte HMAC-SHA-512 signature under the pinned header", forge(claimsAt(), { hash: "sha512" }), "invalid_token"],
  ["signature non-canonical in its unused bits", nonCanonicalSignature().token, "invalid_token"],
  ["signature padded with =", `${valid}=`, "invalid_token"],
  ["signature in standard base64", standardBase64Signature(), "invalid_token"],

  // Shape.
  ["truncated by one character", valid.slice(0, -1), "invalid_token"],
  ["truncated to the first two segments", `${validHeader}.${validPayload}`, "invalid_token"],
  ["truncated mid-payload", valid.slice(0, validHeader.length + 10), "invalid_token"],
  ["an extra segment", `${valid}.${validSignature}`, "invalid_token"],
  ["a trailing dot", `${valid}.`, "invalid_token"],
  ["empty string", "", "invalid_token"],
  ["only dots", "..", "invalid_token"],
  ["empty header segment", `.${validPayload}.${validSignature}`, "invalid_token"],
  ["empty payload segment", signSegments(PINNED_HEADER, ""), "invalid_token"],
  ["empty signature segment", `${signingInput}.`, "invalid_token"],
  ["payload is not JSON", signSegments(PINNED_HEADER, b64("not json")), "invalid_token"],
  ["payload is a JSON array", signSegments(PINNED_HEADER, b64json([claimsAt()])), "invalid_token"],
  ["payload is JSON null", signSegments(PINNED_HEADER, b64("null")), "invalid_token"],
  ["payload is invalid UTF-8", signSegments(PINNED_HEADER, b64(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]))), "invalid_token"],
  ["payload has characters outside base64url", signSegments(PINNED_HEADER, `${validPayload.slice(0, 8)}*${validPayload.slice(9)}`), "invalid_token"],
  ["payload in standard base64 (+, /, =)", signSegments(PINNED_HEADER, standardBase64Payload()), "invalid_token"],
  ["token with whitespace", ` ${valid}`, "invalid_token"],
  ["Bearer prefix left in", `Bearer ${valid}`, "invalid_token"],
  ["longer than 2048 characters", forge({ ...claimsAt(), pad: "x".repeat(2000) }), "invalid_token"],
  ["not a string (number)", 42, "invalid_token"],
  ["not a string (undefined)", undefined, "invalid_token"],

  // Time.
  ["expired a day ago", forge(claimsAt(NOW_S - 8 * DAY_S)), "token_expired"],
  ["expires exactly now", forge({ ...claimsAt(NOW_S - 7 * DAY_S) }), "token_expired"],
  ["expires one second from now", forge({ ...claimsAt(NOW_S - 7 * DAY_S + 1) }), "accepted"],
  ["issued 61 s in the future", forge(claimsAt(NOW_S + 61)), "invalid_token"],
  ["issued a day in the future", forge(claimsAt(NOW_S + DAY_S)), "invalid_token"],
  ["issued 60 s in the future (within skew)", forge(claimsAt(NOW_S + 60)), "accepted"],
  ["exp further than 7 days after iat", forge({ ...claimsAt(), exp: NOW_S + 7 * DAY_S + 1 }), "invalid_token"],
  ["exp equal to iat", forge({ ...claimsAt(), exp: NOW_S }), "invalid_token"],
  ["exp before iat", forge({ ...claimsAt(), exp: NOW_S - 1 }), "invalid_token"],
  ["exp as a string", forge({ ...claimsAt(), exp: String(NOW_S + DAY_S) }), "invalid_token"],
  ["exp as a fraction", forge({ ...claimsAt(), exp: NOW_S + DAY_S + 0.5 }), "invalid_token"],
  ["exp null", forge({ ...claimsAt(), exp: null }), "invalid_token"],
  ["exp negative", forge({ ...claimsAt(), iat: -10, exp: -5 }), "invalid_token"],
  ["iat as a string", forge({ ...claimsAt(), iat: String(NOW_S) }), "invalid_token"],

  // Claims.
  ...(["iss", "aud", "sub", "jti", "iat", "exp"] as const).map(
    (claim) => [`missing ${claim}`, forge(without(claim)), "invalid_token"] as const,
  ),
  ["empty claims object", forge({}), "invalid_token"],
  ["wrong iss", forge({ ...claimsAt(), iss: "someone-else" }), "invalid_token"],
  ["iss differs in case", forge({ ...claimsAt(), iss: SESSION_ISSUER.toUpperCase() }), "invalid_token"],
  ["wrong aud", forge({ ...claimsAt(), aud: "another-api" }), "invalid_token"],
  ["aud as an array", forge({ ...claimsAt(), aud: [SESSION_AUDIENCE] }), "invalid_token"],
  ["sub as a number", forge({ ...claimsAt(), sub: 42 }), "invalid_token"],
  ["sub empty", forge({ ...claimsAt(), sub: "" }), "invalid_token"],
  ["sub with a newline", forge({ ...claimsAt(), sub: "42\n43" }), "invalid_token"],
  ["jti too short", forge({ ...claimsAt(), jti: "abc" }), "invalid_token"],
  ["jti not a string", forge({ ...claimsAt(), jti: 1234567890123456 }), "invalid_token"],
  ["jti with characters outside base64url", forge({ ...claimsAt(), jti: "AAAAAAAAAAAAAAAA/AAAAA" }), "invalid_token"],
];

const corpus = attacks.map(([name, token, expected]) => [name, expected, token] as const);

describe("session JWT attack corpus", () => {
  it("makes meaningful tokens (the non-canonical signature decodes to the same bytes)", () => {
    expect(nonCanonicalSignature().sameBytes).toBe(true);
    expect(forge({ ...claimsAt(), pad: "x".repeat(2000) }).length).toBeGreaterThan(2048);
  });

  it.each(corpus)("verifySession: %s -> %s", async (_name, expected, token) => {
    expect(await outcome(() => verify(token))).toBe(expected);
  });

  it.each(corpus)("verifyForLogout: %s (session: %s)", async (_name, expected, token) => {
    const forLogout = expected === "token_expired" || expected === "token_revoked" ? "accepted" : expected;
    expect(await outcome(() => logout(token))).toBe(forLogout);
  });
});

describe("mintSession / verifySession", () => {
  it("mints HS256 with iss, aud, sub, iat, exp (7 days) and a random jti", async () => {
    const minted = mintSession({ userId: 42, now: NOW + 999, secret: SECRET });
    const [header, payload] = minted.token.split(".") as [string, string];
    expect(JSON.parse(Buffer.from(header, "base64url").toString())).toEqual({ alg: "HS256", typ: "JWT" });
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    expect(Object.keys(claims).sort()).toEqual(["aud", "exp", "iat", "iss", "jti", "sub"]);
    expect(claims).toMatchObject({ iss: SESSION_ISSUER, aud: SESSION_AUDIENCE, sub: "42", iat: NOW_S, exp: NOW_S + 604_800 });
    expect(SESSION_TTL_SECONDS).toBe(7 * 24 * 3600);
    expect(claims["jti"]).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(Buffer.from(claims["jti"] as string, "base64url")).toHaveLength(16);
    expect(minted.claims).toEqual(claims);
    expect(minted.expiresAt).toBe((NOW_S + 604_800) * 1000);
    expect(await verify(minted.token, NOW + 1000)).toEqual(claims);
  });

  it("gives every session its own jti", () => {
    const jtis = new Set(Array.from({ length: 1000 }, () => mintSession({ userId: 1, now: NOW, secret: SECRET }).claims.jti));
    expect(jtis.size).toBe(1000);
  });

  it("accepts until the instant of exp and refuses from it", async () => {
    const { token, expiresAt } = mintSession({ userId: "u-1", now: NOW, secret: SECRET });
    expect(await outcome(() => verify(token, expiresAt - 1))).toBe("accepted");
    expect(await outcome(() => verify(token, expiresAt))).toBe("token_expired");
  });

  it("uses a configured issuer and audience and refuses the defaults then", async () => {
    const key = { secret: SECRET, issuer: "https://oracle.example", audience: "dash" };
    const { token } = mintSession({ ...key, userId: 7, now: NOW });
    expect((await verifySession(token, { ...key, now: NOW, isRevoked: () => false })).aud).toBe("dash");
    expect(await outcome(() => verify(token))).toBe("invalid_token");
  });

  it("checks revocation by jti, after the signature, and accepts an async list", async () => {
    const { token, claims } = mintSession({ userId: 42, now: NOW, secret: SECRET });
    const isRevoked = vi.fn(async (jti: string) => jti === claims.jti);
    expect(await outcome(() => verifySession(token, { secret: SECRET, now: NOW, isRevoked }))).toBe("token_revoked");
    expect(isRevoked).toHaveBeenCalledWith(claims.jti);
    expect(await outcome(() => verify(token, NOW, new Set(["someone-else"])))).toBe("accepted");

    isRevoked.mockClear();
    const forged = forge({ ...claimsAt(), jti: claims.jti }, { secret: OTHER_SECRET });
    expect(await outcome(() => verifySession(forged, { secret: SECRET, now: NOW, isRevoked }))).toBe("invalid_token");
    expect(isRevoked).not.toHaveBeenCalled();
  });

  it("fails closed when the revocation list cannot be read", async () => {
    const { token } = mintSession({ userId: 42, now: NOW, secret: SECRET });
    const down = new Error("store down");
    await expect(verifySession(token, { secret: SECRET, now: NOW, isRevoked: () => Promise.reject(down) })).rejects.toBe(down);
    await expect(verifySession(token, { secret: SECRET, now: NOW, isRevoked: () => { throw down; } })).rejects.toBe(down);
  });

  it("refuses a session key shorter than 32 bytes (addendum C), counting UTF-8 bytes", async () => {
    expect(() => mintSession({ userId: 1, now: NOW, secret: "x".repeat(31) })).toThrow(SessionSecretError);
    expect(() => mintSession({ userId: 1, now: NOW, secret: new Uint8Array(31) })).toThrow(SessionSecretError);
    expect(() => verifyForLogout(valid, { secret: "short", now: NOW })).toThrow(SessionSecretError);
    await expect(verifySession(valid, { secret: "short", now: NOW, isRevoked: () => false })).rejects.toThrow(SessionSecretError);
    expect(mintSession({ userId: 1, now: NOW, secret: "x".repeat(32) }).token).toBeTypeOf("string");
    expect(mintSession({ userId: 1, now: NOW, secret: "é".repeat(16) }).token).toBeTypeOf("string");
  });

  it("refuses to mint for a malformed user id", () => {
    for (const userId of [-1, 1.5, Number.NaN, 2 ** 53, "", "a\nb", "x".repeat(65)]) {
      expect(() => mintSession({ userId, now: NOW, secret: SECRET })).toThrow(RangeError);
    }
  });

  it("interoperates with jose both ways (HS256, iss, aud pinned)", async () => {
    const key = new TextEncoder().encode(SECRET);
    const { token } = mintSession({ userId: 42, now: NOW, secret: SECRET });
    const { payload, protectedHeader } = await jwtVerify(token, key, {
      algorithms: ["HS256"],
      issuer: SESSION_ISSUER,
      audience: SESSION_AUDIENCE,
      currentDate: new Date(NOW),
    });
    expect(protectedHeader).toEqual({ alg: "HS256", typ: "JWT" });
    expect(payload.sub).toBe("42");

    const joseToken = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setIssuer(SESSION_ISSUER)
      .setAudience(SESSION_AUDIENCE)
      .setSubject("9")
      .setJti(GOOD_JTI)
      .setIssuedAt(NOW_S)
      .setExpirationTime(NOW_S + DAY_S)
      .sign(key);
    expect((await verify(joseToken)).sub).toBe("9");
  });
});

describe("verifyForLogout", () => {
  it("accepts an expired but authentic token and returns its jti", () => {
    const { token, claims } = mintSession({ userId: 42, now: NOW, secret: SECRET });
    const yearLater = NOW + 365 * DAY_S * 1000;
    expect(logout(token, yearLater)).toEqual(claims);
  });

  it("refuses a forged expired token and alg none", async () => {
    const expiredForged = forge(claimsAt(NOW_S - 30 * DAY_S), { secret: OTHER_SECRET });
    expect(await outcome(() => logout(expiredForged))).toBe("invalid_token");
    const none = `${b64json({ alg: "none", typ: "JWT" })}.${b64json(claimsAt(NOW_S - 30 * DAY_S))}.`;
    expect(await outcome(() => logout(none))).toBe("invalid_token");
    const tampered = `${validHeader}.${b64json({ ...claimsAt(), jti: "BBBBBBBBBBBBBBBBBBBBBB" })}.${validSignature}`;
    expect(await outcome(() => logout(tampered))).toBe("invalid_token");
  });
});
