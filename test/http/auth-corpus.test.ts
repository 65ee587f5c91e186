/**
 * The session-JWT attack corpus (test/auth/corpus.ts) through the real HTTP routes: every token the unit test feeds to
 * `verifySession` / `verifyForLogout` is sent as `Authorization: Bearer <token>` to `GET /v1/me` and
 * `POST /v1/auth/logout`, over the real accounts model on an in-memory PGlite, with the route clock at the corpus's
 * NOW and JWT_SECRET = the corpus's SECRET. Every answer is also checked against the OpenAPI document (an ApiError
 * body for every 401) by the harness.
 *
 * Every test starts from the same store state (the corpus's user exists, the revocation list is empty or holds just
 * GOOD_JTI), so the cases do not depend on their order: logging out an authentic token revokes GOOD_JTI, which
 * almost every authentic case in the corpus shares.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { attacks, valid, type Expect } from "../auth/corpus.ts";
import { GOOD_JTI, NOW, SECRET, claimsAt } from "../auth/forge.ts";
import { accountsHarness, BOT_TOKEN, type AccountsHarness, type Answer } from "./helpers.ts";

type RouteExpect = Expect | "unauthorized";

interface RouteCase {
  readonly name: string;
  /** The Authorization header value sent. */
  readonly authorization: string;
  /** What GET /v1/me must answer: "accepted" (200) or the 401 code, with nothing revoked. */
  readonly me: RouteExpect;
  /** What POST /v1/auth/logout must answer: "accepted" (204) or the 401 code. */
  readonly logout: RouteExpect;
  /** The token's jti when it is authentic enough to be revoked by a logout. */
  readonly jti: string | undefined;
}

/**
 * Cases whose token cannot be carried verbatim in `Authorization: Bearer <token>`: the header grammar
 * (`Bearer 1*SP token`, src/http/routes/auth.ts) reads something else than the string the unit test passes, so
 * their route answers are stated here rather than derived from the corpus.
 */
const TRANSPORT: Readonly<Record<string, { readonly authorization: string; readonly me: RouteExpect; readonly logout: RouteExpect }>> = {
  // "Bearer " carries no credentials at all: 401 unauthorized before any token is read.
  "empty string": { authorization: "Bearer ", me: "unauthorized", logout: "unauthorized" },
  // "Bearer  <valid>": any run of spaces may separate the scheme from the token, so the route reads the valid token.
  "token with whitespace": { authorization: `Bearer  ${valid}`, me: "accepted", logout: "accepted" },
  // "Bearer Bearer <valid>" is not one token after the scheme: 401 unauthorized.
  "Bearer prefix left in": { authorization: `Bearer Bearer ${valid}`, me: "unauthorized", logout: "unauthorized" },
};

/** The jti of a token's payload, if it decodes to one (only used for tokens the corpus says are authentic). */
function jtiOf(token: string): string | undefined {
  try {
    const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as { jti?: unknown };
    return typeof claims.jti === "string" ? claims.jti : undefined;
  } catch {
    return undefined;
  }
}

/** verifyForLogout accepts what verifySession refuses only for expiry or revocation. */
const forLogout = (expected: Expect): Expect => (expected === "token_expired" || expected === "token_revoked" ? "accepted" : expected);

const skipped: string[] = [];
const cases: RouteCase[] = attacks.flatMap(([name, token, expected]): RouteCase[] => {
  // Non-string "tokens" (a number, undefined) test the verifier's type check, which HTTP cannot reach: a header value
  // is always a string, and "no header" is the `unauthorized` case of test/http/auth.test.ts. Skipped here.
  if (typeof token !== "string") {
    skipped.push(name);
    return [];
  }
  const transport = TRANSPORT[name];
  if (transport !== undefined) return [{ name, ...transport, jti: transport.logout === "accepted" ? jtiOf(valid) : undefined }];
  const logout = forLogout(expected);
  return [{ name, authorization: `Bearer ${token}`, me: expected, logout, jti: logout === "accepted" ? jtiOf(token) : undefined }];
});

/** The corpus's valid claims name this user; it must exist for an accepted token to read /v1/me. */
const SUBJECT = Number(claimsAt()["sub"]);

let ah: AccountsHarness;
beforeAll(async () => {
  ah = await accountsHarness({ JWT_SECRET: SECRET, TELEGRAM_BOT_TOKEN: BOT_TOKEN }, { now: NOW });
  expect(ah.h.rm.clock.now()).toBe(NOW);
  // Users get ids 1, 2, ... (a fresh store): sign in until the corpus's subject exists.
  for (let telegramId = 1000; ; telegramId++) {
    const { userId } = await ah.login(telegramId, `User${telegramId}`);
    expect(userId, "a signed-in user must read /v1/me at the corpus's NOW").toBeTypeOf("number");
    if (userId === SUBJECT) break;
    expect(userId).toBeLessThan(SUBJECT);
  }
}, 120_000);
afterAll(async () => {
  await ah.close();
});

const errorOf = (a: Answer) => (a.body as { error: string }).error;
const revokedJtis = async () => (await ah.store.db.selectFrom("revoked_tokens").select("jti").execute()).map((r) => r.jti);
const clearRevocations = () => sql`delete from revoked_tokens`.execute(ah.store.db);
const call = (method: "GET" | "POST", path: string, authorization: string) => ah.h.call(path, { method, headers: { authorization } });

/** Asserts an answer: 200/204 for "accepted" (the 200 names the corpus's user), else 401 with that error code. */
function expectOutcome(a: Answer, expected: RouteExpect, okStatus: 200 | 204): void {
  if (expected === "accepted") {
    expect(a.status, JSON.stringify(a.body)).toBe(okStatus);
    if (okStatus === 200) expect((a.body as { id: number }).id).toBe(SUBJECT);
    return;
  }
  expect([a.status, errorOf(a)], JSON.stringify(a.body)).toEqual([401, expected]);
}

describe("the session-JWT attack corpus through the routes", () => {
  it("covers the corpus: every string case is sent, only non-string ones are skipped", () => {
    expect(cases.length + skipped.length).toBe(attacks.length);
    expect(skipped).toEqual(attacks.filter(([, token]) => typeof token !== "string").map(([name]) => name));
    // Every string the header cannot carry verbatim has a stated route answer (and no stale entries).
    const notVerbatim = attacks.filter(([, token]) => typeof token === "string" && !/^[\x21-\x7e]+$/.test(token)).map(([name]) => name);
    expect(notVerbatim.sort()).toEqual(Object.keys(TRANSPORT).sort());
    // The revocation phase below relies on every authentic token carrying GOOD_JTI.
    for (const c of cases) if (c.logout === "accepted") expect(c.jti, c.name).toBe(GOOD_JTI);
    expect(cases.filter((c) => c.me === "accepted").length).toBeGreaterThan(0);
  });

  describe("GET /v1/me, nothing revoked (as verifySession)", () => {
    beforeEach(clearRevocations);
    it.each(cases.map((c) => [c.name, c.me, c] as const))("%s -> %s", async (_name, expected, c) => {
      expectOutcome(await call("GET", "/v1/me", c.authorization), expected, 200);
      expect(await revokedJtis()).toEqual([]);
    });
  });

  describe("POST /v1/auth/logout (as verifyForLogout: expired or revoked authentic tokens log out)", () => {
    beforeEach(clearRevocations);
    it.each(cases.map((c) => [c.name, c.logout, c] as const))("%s -> %s", async (_name, expected, c) => {
      expectOutcome(await call("POST", "/v1/auth/logout", c.authorization), expected, 204);
      // A 204 revokes exactly the token's jti; a refused logout revokes nothing.
      expect(await revokedJtis()).toEqual(expected === "accepted" ? [c.jti] : []);
    });
  });

  describe("GET /v1/me with GOOD_JTI revoked through POST /v1/auth/logout", () => {
    beforeEach(async () => {
      await clearRevocations();
      expect((await call("POST", "/v1/auth/logout", `Bearer ${valid}`)).status).toBe(204);
      expect(await revokedJtis()).toEqual([GOOD_JTI]);
    });
    // verifySession checks revocation last: only tokens it would accept turn into token_revoked.
    const revoked = (c: RouteCase): RouteExpect => (c.me === "accepted" && c.jti === GOOD_JTI ? "token_revoked" : c.me);
    it.each(cases.map((c) => [c.name, revoked(c), c] as const))("%s -> %s", async (_name, expected, c) => {
      expectOutcome(await call("GET", "/v1/me", c.authorization), expected, 200);
    });
  });
});
