/**
 * Auth routes (interface 4.6 and 5, addendum A "Magic link", B, C) through the router, every answer checked against
 * the OpenAPI document, over the real accounts model on an in-memory PGlite.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { mintSession } from "../../src/auth/index.ts";
import { ERROR_STATUS } from "../../src/http/errors.ts";
import { routeErrorCodes } from "../../src/http/openapi.ts";
import { Router } from "../../src/http/router.ts";
import { DAY, MIN, NOW } from "./fixtures.ts";
import { accountsHarness, BOT_TOKEN, JWT_SECRET, widgetPayload, type AccountsHarness } from "./helpers.ts";
import { redoclyLint } from "./redocly.ts";

type Obj = Record<string, unknown>;

let ah: AccountsHarness;
beforeAll(async () => {
  ah = await accountsHarness();
});
afterAll(async () => {
  await ah.close();
});
beforeEach(async () => {
  await ah.reset();
});

const errorOf = (a: { body: unknown }) => (a.body as { error: string }).error;

describe("POST /v1/auth/messenger", () => {
  it("signs in with a valid widget payload, creating the user once", async () => {
    const a = await ah.send("POST", "/v1/auth/messenger", null, widgetPayload({ id: 777000111, first_name: "Alice", username: "alice" }, NOW));
    expect(a.status).toBe(200);
    expect(a.headers["cache-control"]).toBe("no-store");
    expect(a.body).toMatchObject({ expires_at: new Date(NOW + 7 * DAY).toISOString(), user: { telegram_id: 777000111, username: "alice", locale: "en" } });
    const token = (a.body as { token: string }).token;
    const me = await ah.send("GET", "/v1/me", token);
    expect(me.body).toMatchObject({ telegram_id: 777000111, first_name: "Alice", username: "alice" });

    const again = await ah.send("POST", "/v1/auth/messenger", null, widgetPayload({ id: 777000111, first_name: "Alicia" }, NOW));
    const me2 = await ah.send("GET", "/v1/me", (again.body as { token: string }).token);
    expect(me2.body).toMatchObject({ id: (me.body as { id: number }).id, first_name: "Alicia", username: "" });
  });

  it("refuses a wrong hash, a field added after signing, an old or future auth_date", async () => {
    const good = widgetPayload({ id: 5, first_name: "Bob" }, NOW);
    const bad = async (body: unknown, status: number, code: string) => {
      const a = await ah.send("POST", "/v1/auth/messenger", null, body);
      expect([a.status, errorOf(a)], JSON.stringify(a.body)).toEqual([status, code]);
    };
    await bad({ ...good, hash: "0".repeat(64) }, 401, "invalid_token");
    await bad(widgetPayload({ id: 5, first_name: "Bob" }, NOW, "999:other-bot"), 401, "invalid_token");
    await bad({ ...good, username: "mallory" }, 401, "invalid_token");
    await bad(widgetPayload({ id: 5, first_name: "Bob", auth_date: Math.floor(NOW / 1000) - 86_401 }, NOW), 401, "token_expired");
    await bad(widgetPayload({ id: 5, first_name: "Bob", auth_date: Math.floor(NOW / 1000) + 120 }, NOW), 401, "invalid_token");
    await bad({ first_name: "Bob", auth_date: 1, hash: good["hash"] }, 400, "invalid_body");
    await bad([good], 400, "invalid_body");
  });

  it("needs a JSON body", async () => {
    const body = JSON.stringify(widgetPayload({ id: 5, first_name: "Bob" }, NOW));
    const a = await ah.h.call("/v1/auth/messenger", { method: "POST", headers: { "content-type": "text/plain" }, body });
    expect([a.status, errorOf(a)]).toEqual([415, "unsupported_media_type"]);
    const b = await ah.h.call("/v1/auth/messenger", { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" });
    expect([b.status, errorOf(b)]).toEqual([400, "invalid_body"]);
    const c = await ah.h.call("/v1/auth/messenger", { method: "POST", headers: { "content-type": "application/json; charset=utf-8" } });
    expect([c.status, errorOf(c)]).toEqual([400, "invalid_body"]);
    const d = await ah.h.call("/v1/auth/messenger", { method: "POST", headers: { "content-type": "Application/JSON; charset=utf-8" }, body });
    expect(d.status).toBe(200);
  });
});

describe("magic links", () => {
  it("mint (bearer) -> 201, consume once -> a session for the same user", async () => {
    const { token, userId } = await ah.login(42);
    expect((await ah.send("POST", "/v1/auth/magic/mint", null)).status).toBe(401);
    const m = await ah.send("POST", "/v1/auth/magic/mint", token);
    expect(m.status).toBe(201);
    const link = m.body as { token: string; url: string; expires_at: string };
    expect(link.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(link.url).toBe(`/login#token=${link.token}`);
    expect(link.expires_at).toBe(new Date(NOW + 10 * MIN).toISOString());
    // Stored only as its hash.
    const rows = await ah.store.db.selectFrom("magic_links").selectAll().execute();
    expect(rows.map((r) => r.token_hash)).not.toContain(link.token);

    const c = await ah.send("POST", "/v1/auth/magic/consume", null, { token: link.token });
    expect(c.status).toBe(200);
    const me = await ah.send("GET", "/v1/me", (c.body as { token: string }).token);
    expect((me.body as { id: number }).id).toBe(userId);

    const again = await ah.send("POST", "/v1/auth/magic/consume", null, { token: link.token });
    expect([again.status, errorOf(again)]).toEqual([401, "invalid_token"]);
  });

  it("concurrent exchanges of one link: exactly one session", async () => {
    const { token } = await ah.login(42);
    const link = (await ah.send("POST", "/v1/auth/magic/mint", token)).body as { token: string };
    const tries = await Promise.all([1, 2, 3, 4].map(() => ah.send("POST", "/v1/auth/magic/consume", null, { token: link.token })));
    expect(tries.map((t) => t.status).sort()).toEqual([200, 401, 401, 401]);
  });

  it("an expired, unknown or malformed token is invalid_token; a bad body is invalid_body", async () => {
    const { token } = await ah.login(42);
    const link = (await ah.send("POST", "/v1/auth/magic/mint", token)).body as { token: string };
    ah.h.rm.clock.set(NOW + 10 * MIN);
    for (const t of [link.token, "A".repeat(43), "short"]) {
      const a = await ah.send("POST", "/v1/auth/magic/consume", null, { token: t });
      expect([a.status, errorOf(a)]).toEqual([401, "invalid_token"]);
    }
    for (const body of [{}, { token: link.token, extra: 1 }, { token: 5 }]) {
      const a = await ah.send("POST", "/v1/auth/magic/consume", null, body);
      expect([a.status, errorOf(a)]).toEqual([400, "invalid_body"]);
    }
  });
});

describe("sessions and logout", () => {
  it("logout revokes by jti (204); the token is then refused on every route", async () => {
    const { token } = await ah.login(42);
    const a = await ah.send("POST", "/v1/auth/logout", token);
    expect(a.status).toBe(204);
    expect(a.body).toBeUndefined();
    for (const path of ["/v1/me", "/v1/me/subs", "/v1/me/webhooks"]) {
      const r = await ah.send("GET", path, token);
      expect([r.status, errorOf(r)]).toEqual([401, "token_revoked"]);
    }
    expect((await ah.send("POST", "/v1/auth/magic/mint", token)).status).toBe(401);
    // Twice is not an error.
    expect((await ah.send("POST", "/v1/auth/logout", token)).status).toBe(204);
  });

  it("an expired but authentic token can log out; it cannot read /v1/me", async () => {
    const { token } = await ah.login(42);
    ah.h.rm.clock.set(NOW + 8 * DAY);
    const me = await ah.send("GET", "/v1/me", token);
    expect([me.status, errorOf(me)]).toEqual([401, "token_expired"]);
    expect((await ah.send("POST", "/v1/auth/logout", token)).status).toBe(204);
  });

  it("missing, malformed, tampered, foreign-key and unknown-user tokens", async () => {
    const { token } = await ah.login(42);
    const check = async (headers: Record<string, string>, code: string) => {
      for (const [method, path] of [["GET", "/v1/me"], ["POST", "/v1/auth/logout"]] as const) {
        const a = await ah.h.call(path, { method, headers });
        expect([a.status, errorOf(a)], `${method} ${path}`).toEqual([401, code]);
      }
    };
    await check({}, "unauthorized");
    await check({ authorization: `Basic ${token}` }, "unauthorized");
    await check({ authorization: "Bearer not.a.jwt" }, "invalid_token");
    const [h, p, s] = token.split(".");
    await check({ authorization: `Bearer ${h}.${p}x.${s}` }, "invalid_token");
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${p}.`;
    await check({ authorization: `Bearer ${none}` }, "invalid_token");
    const foreign = (await mintSession({ secret: "another-key-of-at-least-32-bytes-long!!", userId: 1, now: NOW })).token;
    await check({ authorization: `Bearer ${foreign}` }, "invalid_token");
    // Authentic, but for a user that does not exist: refused on /v1/me (logout still revokes it).
    const ghost = (await mintSession({ secret: JWT_SECRET, userId: 999, now: NOW })).token;
    const a = await ah.send("GET", "/v1/me", ghost);
    expect([a.status, errorOf(a)]).toEqual([401, "invalid_token"]);
    // lower-case scheme is accepted (RFC 9110: case-insensitive).
    expect((await ah.h.call("/v1/me", { headers: { authorization: `bearer ${token}` } })).status).toBe(200);
  });
});

describe("disabled features", () => {
  it("without JWT_SECRET every account route answers 503 not_ready", async () => {
    const off = await accountsHarness({ TELEGRAM_BOT_TOKEN: BOT_TOKEN });
    try {
      const t = (await mintSession({ secret: JWT_SECRET, userId: 1, now: NOW })).token;
      for (const [method, path, body] of [
        ["POST", "/v1/auth/messenger", widgetPayload({ id: 1, first_name: "A" }, NOW)],
        ["POST", "/v1/auth/magic/mint", undefined],
        ["POST", "/v1/auth/magic/consume", { token: "A".repeat(43) }],
        ["POST", "/v1/auth/logout", undefined],
        ["GET", "/v1/me", undefined],
        ["GET", "/v1/me/subs", undefined],
        ["POST", "/v1/me/webhooks", { url: "https://hooks.example.com/", asset: "USDC", threshold_bps: 1 }],
      ] as const) {
        const a = await off.send(method, path, t, body);
        expect([a.status, errorOf(a)], path).toEqual([503, "not_ready"]);
        expect((a.body as { message: string }).message).toMatch(/disabled/);
      }
    } finally {
      await off.close();
    }
  });

  it("without TELEGRAM_BOT_TOKEN only the messenger login is off", async () => {
    const off = await accountsHarness({ JWT_SECRET });
    try {
      const a = await off.send("POST", "/v1/auth/messenger", null, widgetPayload({ id: 1, first_name: "A" }, NOW));
      expect([a.status, errorOf(a)]).toEqual([503, "not_ready"]);
      expect((a.body as { message: string }).message).toMatch(/TELEGRAM_BOT_TOKEN/);
      const ghost = (await mintSession({ secret: JWT_SECRET, userId: 1, now: NOW })).token;
      expect((await off.send("POST", "/v1/auth/logout", ghost)).status).toBe(204);
    } finally {
      await off.close();
    }
  });
});

describe("the OpenAPI document with the account routes", () => {

  it("lists exactly the router's paths and methods, bodies, bearer security and every error", () => {
    const h = ah.h;
    const served = new Router(h.routes).routes.map((r) => `${r.method} ${r.path}`).sort();
    const paths = h.doc["paths"] as Record<string, Record<string, Obj>>;
    const documented = Object.entries(paths).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`)).sort();
    expect(documented).toEqual(served);
    for (const m of ["POST /v1/auth/messenger", "PATCH /v1/me/preferences", "DELETE /v1/me/webhooks/{id}", "GET /v1/me/webhooks/{id}/deliveries"]) {
      expect(served).toContain(m);
    }
    expect(served.filter((m) => m.endsWith("/test") || m.endsWith("/replay"))).toEqual(["POST /v1/me/webhooks/{id}/replay", "POST /v1/me/webhooks/{id}/test"]);
    const components = h.doc["components"] as Obj;
    expect(components["securitySchemes"]).toEqual({ bearerAuth: expect.objectContaining({ type: "http", scheme: "bearer", bearerFormat: "JWT" }) });
    for (const route of h.routes) {
      const op = paths[route.path]![route.method.toLowerCase()]!;
      const needsBearer = route.path === "/v1/me" || route.path.startsWith("/v1/me/") || route.path === "/v1/auth/logout" || route.path === "/v1/auth/magic/mint";
      expect(op["security"], `${route.method} ${route.path}`).toEqual(needsBearer ? [{ bearerAuth: [] }] : undefined);
      for (const code of routeErrorCodes(route)) {
        expect((op["responses"] as Obj)[String(ERROR_STATUS[code])], `${route.path} ${code}`).toBeDefined();
      }
    }
    expect(paths["/v1/me/subs"]!["post"]!["requestBody"]).toEqual({
      required: true,
      content: { "application/json": { schema: { $ref: "#/components/schemas/SubscriptionCreate" } } },
    });
    expect(Object.keys(paths["/v1/me/subs/{asset}"]!["delete"]!["responses"] as Obj)).toContain("204");
  });

  it("passes redocly lint", async () => {
    const { code, out } = await redoclyLint(ah.h.doc);
    expect(code, out).toBe(0);
  }, 120_000);
});
