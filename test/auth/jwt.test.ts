import { describe, expect, it, vi } from "vitest";
import { SignJWT, jwtVerify } from "jose";
import {
  SESSION_AUDIENCE,
  SESSION_ISSUER,
  SESSION_TTL_SECONDS,
  SessionSecretError,
  mintSession,
  verifyForLogout,
  verifySession,
  type SessionClaims,
} from "../../src/auth/index.ts";
import { attacks, nonCanonicalSignature, valid, validHeader, validSignature } from "./corpus.ts";
import { DAY_S, GOOD_JTI, NOW, NOW_S, OTHER_SECRET, SECRET, b64json, claimsAt, forge, outcome } from "./forge.ts";

const verify = (token: unknown, now = NOW, revoked: ReadonlySet<string> = new Set()): Promise<SessionClaims> =>
  verifySession(token, { secret: SECRET, now, isRevoked: (jti) => revoked.has(jti) });
const logout = (token: unknown, now = NOW): Promise<SessionClaims> => verifyForLogout(token, { secret: SECRET, now });

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
    const minted = await mintSession({ userId: 42, now: NOW + 999, secret: SECRET });
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

  it("gives every session its own jti", async () => {
    const minted = await Promise.all(Array.from({ length: 1000 }, () => mintSession({ userId: 1, now: NOW, secret: SECRET })));
    const jtis = new Set(minted.map((m) => m.claims.jti));
    expect(jtis.size).toBe(1000);
  });

  it("accepts until the instant of exp and refuses from it", async () => {
    const { token, expiresAt } = await mintSession({ userId: "u-1", now: NOW, secret: SECRET });
    expect(await outcome(() => verify(token, expiresAt - 1))).toBe("accepted");
    expect(await outcome(() => verify(token, expiresAt))).toBe("token_expired");
  });

  it("uses a configured issuer and audience and refuses the defaults then", async () => {
    const key = { secret: SECRET, issuer: "https://oracle.example", audience: "dash" };
    const { token } = await mintSession({ ...key, userId: 7, now: NOW });
    expect((await verifySession(token, { ...key, now: NOW, isRevoked: () => false })).aud).toBe("dash");
    expect(await outcome(() => verify(token))).toBe("invalid_token");
  });

  it("checks revocation by jti, after the signature, and accepts an async list", async () => {
    const { token, claims } = await mintSession({ userId: 42, now: NOW, secret: SECRET });
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
    const { token } = await mintSession({ userId: 42, now: NOW, secret: SECRET });
    const down = new Error("store down");
    await expect(verifySession(token, { secret: SECRET, now: NOW, isRevoked: () => Promise.reject(down) })).rejects.toBe(down);
    await expect(verifySession(token, { secret: SECRET, now: NOW, isRevoked: () => { throw down; } })).rejects.toBe(down);
  });

  it("refuses a session key shorter than 32 bytes (addendum C), counting UTF-8 bytes", async () => {
    await expect(mintSession({ userId: 1, now: NOW, secret: "x".repeat(31) })).rejects.toThrow(SessionSecretError);
    await expect(mintSession({ userId: 1, now: NOW, secret: new Uint8Array(31) })).rejects.toThrow(SessionSecretError);
    await expect(verifyForLogout(valid, { secret: "short", now: NOW })).rejects.toThrow(SessionSecretError);
    await expect(verifySession(valid, { secret: "short", now: NOW, isRevoked: () => false })).rejects.toThrow(SessionSecretError);
    expect((await mintSession({ userId: 1, now: NOW, secret: "x".repeat(32) })).token).toBeTypeOf("string");
    expect((await mintSession({ userId: 1, now: NOW, secret: "é".repeat(16) })).token).toBeTypeOf("string");
  });

  it("refuses to mint for a malformed user id", async () => {
    for (const userId of [-1, 1.5, Number.NaN, 2 ** 53, "", "a\nb", "x".repeat(65)]) {
      await expect(mintSession({ userId, now: NOW, secret: SECRET })).rejects.toThrow(RangeError);
    }
  });

  it("interoperates with jose both ways (HS256, iss, aud pinned)", async () => {
    const key = new TextEncoder().encode(SECRET);
    const { token } = await mintSession({ userId: 42, now: NOW, secret: SECRET });
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
  it("accepts an expired but authentic token and returns its jti", async () => {
    const { token, claims } = await mintSession({ userId: 42, now: NOW, secret: SECRET });
    const yearLater = NOW + 365 * DAY_S * 1000;
    expect(await logout(token, yearLater)).toEqual(claims);
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
