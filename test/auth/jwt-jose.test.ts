/**
 * Session tokens on jose: what src/auth/jwt.ts leaves to jose and what it adds. Minted tokens are jose's `SignJWT`
 * output for the pinned header and the claims in order; every jose error class maps to a stated code; an expired
 * token is accepted by the logout
 * check only when jose verified its signature and every other claim (jose reports expiry with `JWTExpired`, which the
 * module catches: these cases prove nothing is skipped on that path); `nbf` follows the injected clock with the
 * same skew as `iat`.
 */
import { SignJWT, errors } from "jose";
import { describe, expect, it } from "vitest";
import { AuthError, CLOCK_SKEW_SECONDS, mintSession, verifyForLogout, verifySession } from "../../src/auth/index.ts";
import { sessionRefusal } from "../../src/auth/jwt.ts";
import { DAY_S, NOW, NOW_S, OTHER_SECRET, PINNED_HEADER, SECRET, b64json, claimsAt, forge, outcome, signSegments } from "./forge.ts";

const session = (token: string, now = NOW) => outcome(() => verifySession(token, { secret: SECRET, now, isRevoked: () => false }));
const logout = (token: string, now = NOW) => outcome(() => verifyForLogout(token, { secret: SECRET, now }));

describe("minting", () => {
  it("gives exactly the token jose's SignJWT signs for the same claims", async () => {
    const minted = await mintSession({ userId: 42, now: NOW + 123, secret: SECRET });
    const signed = await new SignJWT({ ...minted.claims }).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(new TextEncoder().encode(SECRET));
    expect(minted.token).toBe(signed);
  });
});

describe("jose's errors", () => {
  it("each class jwtVerify throws for a token maps to invalid_token", () => {
    const refused = [
      new errors.JWSSignatureVerificationFailed(),
      new errors.JOSEAlgNotAllowed("alg"),
      new errors.JWTClaimValidationFailed("claim", {}, "aud", "check_failed"),
      new errors.JWSInvalid("jws"),
      new errors.JWTInvalid("jwt"),
      new errors.JOSENotSupported("unsupported"),
    ];
    for (const err of refused) {
      const mapped = sessionRefusal(err);
      expect(mapped, err.name).toBeInstanceOf(AuthError);
      expect((mapped as AuthError).code, err.name).toBe("invalid_token");
    }
  });

  it("JWTExpired (handled by the caller) and anything that is not a token refusal pass through unchanged", () => {
    for (const err of [new errors.JWTExpired("exp", {}), new errors.JWKSNoMatchingKey(), new TypeError("bad option"), "thrown text"]) {
      expect(sessionRefusal(err)).toBe(err);
    }
  });
});

describe("an expired token (jose's JWTExpired path)", () => {
  const expired = (changes: Record<string, unknown>, opts: { secret?: string } = {}): string =>
    forge({ ...claimsAt(NOW_S - 30 * DAY_S), ...changes }, opts);

  it("authentic: token_expired for a session, accepted for logout", async () => {
    expect(await session(expired({}))).toBe("token_expired");
    expect(await logout(expired({}))).toBe("accepted");
  });

  it.each([
    ["another secret", expired({}, { secret: OTHER_SECRET })],
    ["a flipped signature bit", (() => {
      const t = expired({});
      const i = t.length - 5;
      return t.slice(0, i) + (t[i] === "A" ? "B" : "A") + t.slice(i + 1);
    })()],
    ["a wrong iss", expired({ iss: "someone-else" })],
    ["a wrong aud", expired({ aud: "another-api" })],
    ["aud as an array", expired({ aud: [claimsAt()["aud"]] })],
    ["a malformed jti", expired({ jti: "short" })],
    ["a numeric sub", expired({ sub: 42 })],
    ["exp further than 7 days after iat", expired({ exp: NOW_S - 30 * DAY_S + 8 * DAY_S })],
    ["a fractional exp", expired({ exp: NOW_S - 29 * DAY_S + 0.5 })],
    ["nbf as a string", expired({ nbf: "0" })],
    ["nbf after the check time", expired({ nbf: NOW_S + CLOCK_SKEW_SECONDS + 1 })],
  ])("with %s is invalid_token for a session and for logout", async (_name, token) => {
    expect(await session(token)).toBe("invalid_token");
    expect(await logout(token)).toBe("invalid_token");
  });

  it("with a payload that is not a JSON object is invalid_token", async () => {
    const token = signSegments(PINNED_HEADER, b64json([claimsAt(NOW_S - 30 * DAY_S)]));
    expect(await logout(token)).toBe("invalid_token");
  });
});

describe("nbf and the injected clock", () => {
  const token = forge({ ...claimsAt(), nbf: NOW_S + CLOCK_SKEW_SECONDS });

  it("accepts nbf up to CLOCK_SKEW_SECONDS ahead of the clock, as iat, and refuses beyond", async () => {
    expect(await session(token, NOW)).toBe("accepted");
    expect(await session(token, NOW - 1000)).toBe("invalid_token");
    expect(await logout(token, NOW - 1000)).toBe("invalid_token");
  });

  it("judges time by the injected clock, not the machine's (a token of 2026 checked a year on and a year before)", async () => {
    const minted = (await mintSession({ userId: 1, now: NOW, secret: SECRET })).token;
    expect(await session(minted, NOW + 7 * DAY_S * 1000 - 1)).toBe("accepted");
    expect(await session(minted, NOW + 365 * DAY_S * 1000)).toBe("token_expired");
    expect(await logout(minted, NOW + 365 * DAY_S * 1000)).toBe("accepted");
    expect(await session(minted, NOW - 365 * DAY_S * 1000)).toBe("invalid_token");
  });
});
