/**
 * The `/v1/me` routes (interface 4.7, addendum A) through the router, every answer checked against the OpenAPI
 * document, over the real accounts model on an in-memory PGlite and a fake DNS resolver.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createPipeline } from "../../src/http/pipeline.ts";
import { Router } from "../../src/http/router.ts";
import { MAX_BODY_BYTES, serveUws, uwsIsNative, type UwsServer } from "../../src/http/uws-adapter.ts";
import { insertDelivery, type NewDelivery } from "../../src/store/index.ts";
import { catalog, NOW } from "./fixtures.ts";
import { accountsHarness, type AccountsHarness } from "./helpers.ts";

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
const expectError = (a: { status: number; body: unknown }, status: number, code: string) =>
  expect([a.status, errorOf(a)], JSON.stringify(a.body)).toEqual([status, code]);

describe("GET /v1/me and PATCH /v1/me/preferences", () => {
  it("serves the user with default preferences, privately", async () => {
    const { token, userId } = await ah.login(1001, "Carol");
    const a = await ah.send("GET", "/v1/me", token);
    expect(a.status).toBe(200);
    expect(a.headers["cache-control"]).toBe("no-store");
    expect(a.body).toEqual({
      id: userId,
      telegram_id: 1001,
      username: "carol",
      first_name: "Carol",
      locale: "en",
      created_at: new Date(NOW).toISOString(),
      preferences: { locale: "en", timezone: "UTC", quiet_hours: null, digest: "off", min_severity: "DRIFT" },
    });
    expectError(await ah.send("GET", "/v1/me", null), 401, "unauthorized");
  });

  it("takes any subset; the rest keeps its values", async () => {
    const { token } = await ah.login(1001);
    const a = await ah.send("PATCH", "/v1/me/preferences", token, { timezone: "Europe/Berlin", quiet_hours: { start: "22:00", end: "07:30" } });
    expect(a.status).toBe(200);
    expect((a.body as { preferences: unknown }).preferences).toEqual({
      locale: "en",
      timezone: "Europe/Berlin",
      quiet_hours: { start: "22:00", end: "07:30" },
      digest: "off",
      min_severity: "DRIFT",
    });
    const b = await ah.send("PATCH", "/v1/me/preferences", token, { locale: "pt-BR", min_severity: "CRITICAL", quiet_hours: null });
    expect(b.body).toMatchObject({ locale: "pt-BR", preferences: { locale: "pt-BR", timezone: "Europe/Berlin", quiet_hours: null, min_severity: "CRITICAL" } });
    expect((await ah.send("PATCH", "/v1/me/preferences", token, {})).status).toBe(200);
  });

  it("refuses unknown keys and bad values with invalid_body, non-JSON with 415", async () => {
    const { token } = await ah.login(1001);
    for (const body of [
      { theme: "dark" },
      { timezone: "Mars/Olympus" },
      { quiet_hours: { start: "24:00", end: "07:00" } },
      { quiet_hours: { start: "22:00" } },
      { digest: "weekly" },
      { min_severity: "PEGGED" },
      { locale: "english please" },
      [],
      "x",
    ]) {
      expectError(await ah.send("PATCH", "/v1/me/preferences", token, body), 400, "invalid_body");
    }
    const a = await ah.h.call("/v1/me/preferences", { method: "PATCH", headers: { authorization: `Bearer ${token}` }, body: "{}" });
    expectError(a, 415, "unsupported_media_type");
    // Authentication comes before the body.
    expectError(await ah.send("PATCH", "/v1/me/preferences", null, { theme: "dark" }), 401, "unauthorized");
  });
});

describe("subscriptions", () => {
  it("create 201, a second active one for the asset 409, list active first, patch, soft delete 204", async () => {
    const { token } = await ah.login(1001);
    const a = await ah.send("POST", "/v1/me/subs", token, { asset: "USDC", channel: "webhook", threshold_bps: 50 });
    expect(a.status).toBe(201);
    expect(a.body).toEqual({ id: expect.any(Number), asset: "USDC", channel: "webhook", created_at: new Date(NOW).toISOString(), is_active: true, threshold_bps: 50 });
    expectError(await ah.send("POST", "/v1/me/subs", token, { asset: "USDC", channel: "dashboard", threshold_bps: 5 }), 409, "conflict");
    expect((await ah.send("POST", "/v1/me/subs", token, { asset: "USDT", channel: "telegram", threshold_bps: 0 })).status).toBe(201);

    expect((await ah.send("DELETE", "/v1/me/subs/USDC", token)).status).toBe(204);
    expectError(await ah.send("DELETE", "/v1/me/subs/USDC", token), 404, "not_found");
    const list = await ah.send("GET", "/v1/me/subs", token);
    expect(Array.isArray(list.body)).toBe(true);
    expect((list.body as { asset: string; is_active: boolean }[]).map((s) => [s.asset, s.is_active])).toEqual([["USDT", true], ["USDC", false]]);

    const p = await ah.send("PATCH", "/v1/me/subs/USDT", token, { threshold_bps: 120 });
    expect(p.body).toMatchObject({ asset: "USDT", threshold_bps: 120, channel: "telegram", is_active: true });
    const re = await ah.send("PATCH", "/v1/me/subs/USDC", token, { is_active: true });
    expect(re.body).toMatchObject({ asset: "USDC", is_active: true });
    // A new subscription after a soft delete is a new row: the old one stays in the history.
    expect((await ah.send("DELETE", "/v1/me/subs/USDC", token)).status).toBe(204);
    expect((await ah.send("POST", "/v1/me/subs", token, { asset: "USDC", channel: "webhook", threshold_bps: 1 })).status).toBe(201);
    expect((await ah.send("GET", "/v1/me/subs", token)).body).toHaveLength(3);
  });

  it("validates the body and the asset", async () => {
    const { token } = await ah.login(1001);
    for (const body of [
      { asset: "USDC", channel: "sms", threshold_bps: 1 },
      { asset: "USDC", channel: "webhook", threshold_bps: 10_001 },
      { asset: "USDC", channel: "webhook", threshold_bps: 1.5 },
      { asset: "USDC", channel: "webhook" },
      { asset: "USDC", channel: "webhook", threshold_bps: 1, extra: true },
    ]) {
      expectError(await ah.send("POST", "/v1/me/subs", token, body), 400, "invalid_body");
    }
    expectError(await ah.send("POST", "/v1/me/subs", token, { asset: "NOPE", channel: "webhook", threshold_bps: 1 }), 404, "asset_not_found");
    expectError(await ah.send("POST", "/v1/me/subs", token, { asset: "BRZ", channel: "webhook", threshold_bps: 1 }), 404, "asset_not_found");
    expectError(await ah.send("PATCH", "/v1/me/subs/NOPE", token, { threshold_bps: 1 }), 404, "asset_not_found");
    expectError(await ah.send("PATCH", "/v1/me/subs/USDC", token, { threshold_bps: 1 }), 404, "not_found");
    expectError(await ah.send("PATCH", "/v1/me/subs/USDC", token, { asset: "USDT" }), 400, "invalid_body");
  });

  it("at most 50 active per user; someone else's are invisible", async () => {
    const { token } = await ah.login(1001);
    const assets = catalog.active.slice(0, 51);
    expect(assets).toHaveLength(51);
    for (const a of assets.slice(0, 50)) {
      expect((await ah.send("POST", "/v1/me/subs", token, { asset: a.symbol, channel: "dashboard", threshold_bps: 10 })).status).toBe(201);
    }
    expectError(await ah.send("POST", "/v1/me/subs", token, { asset: assets[50]!.symbol, channel: "dashboard", threshold_bps: 10 }), 409, "conflict");
    expect((await ah.send("DELETE", `/v1/me/subs/${encodeURIComponent(assets[0]!.symbol)}`, token)).status).toBe(204);
    expect((await ah.send("POST", "/v1/me/subs", token, { asset: assets[50]!.symbol, channel: "dashboard", threshold_bps: 10 })).status).toBe(201);
    expectError(await ah.send("PATCH", `/v1/me/subs/${encodeURIComponent(assets[0]!.symbol)}`, token, { is_active: true }), 409, "conflict");

    const other = await ah.login(2002, "Dave");
    expect((await ah.send("GET", "/v1/me/subs", other.token)).body).toEqual([]);
    expectError(await ah.send("PATCH", `/v1/me/subs/${encodeURIComponent(assets[1]!.symbol)}`, other.token, { threshold_bps: 1 }), 404, "not_found");
    expectError(await ah.send("DELETE", `/v1/me/subs/${encodeURIComponent(assets[1]!.symbol)}`, other.token), 404, "not_found");
  });
});

describe("GET /v1/me/alerts", () => {
  it("only the subscribed assets' transitions, newest first, with since/limit/offset", async () => {
    const { token } = await ah.login(1001);
    const empty = await ah.send("GET", "/v1/me/alerts", token);
    expect(empty.body).toMatchObject({ ok: true, count: 0, data: [] });

    await ah.send("POST", "/v1/me/subs", token, { asset: "USDT", channel: "dashboard", threshold_bps: 0 });
    await ah.send("POST", "/v1/me/subs", token, { asset: "jitoSOL", channel: "dashboard", threshold_bps: 0 });
    const expected = ah.h.rm.alertList
      .filter((a) => a.asset === "USDT" || a.asset === "jitoSOL")
      .sort((a, b) => b.detected_at - a.detected_at || (a.id < b.id ? 1 : -1));
    expect(expected.length).toBeGreaterThan(1);
    const all = await ah.send("GET", "/v1/me/alerts", token);
    expect((all.body as { data: { id: string }[] }).data.map((a) => a.id)).toEqual(expected.map((a) => a.id));
    const page = await ah.send("GET", "/v1/me/alerts?limit=1&offset=1", token);
    expect((page.body as { data: { id: string }[] }).data.map((a) => a.id)).toEqual([expected[1]!.id]);
    const since = await ah.send("GET", `/v1/me/alerts?since=${new Date(expected[0]!.detected_at).toISOString()}`, token);
    expect((since.body as { count: number }).count).toBe(expected.filter((a) => a.detected_at >= expected[0]!.detected_at).length);
    expectError(await ah.send("GET", "/v1/me/alerts?limit=501", token), 400, "invalid_query");

    // A deleted subscription no longer contributes.
    await ah.send("DELETE", "/v1/me/subs/USDT", token);
    const after = await ah.send("GET", "/v1/me/alerts", token);
    expect((after.body as { data: { asset: string }[] }).data.every((a) => a.asset === "jitoSOL")).toBe(true);
  });
});

describe("webhooks", () => {
  const hook = { url: "https://hooks.example.com/peg?x=1", asset: "USDC", threshold_bps: 25 };

  it("create 201 (checked, normalised, signed), list, patch, soft delete 200", async () => {
    const { token } = await ah.login(1001);
    const a = await ah.send("POST", "/v1/me/webhooks", token, { ...hook, url: "https://HOOKS.example.com:443/peg?x=1" });
    expect(a.status).toBe(201);
    const w = a.body as { id: string };
    expect(a.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: "https://hooks.example.com/peg?x=1",
      asset: "USDC",
      threshold_bps: 25,
      is_active: true,
      created_at: new Date(NOW).toISOString(),
      updated_at: new Date(NOW).toISOString(),
      last_delivery_at: null,
      last_status: null,
      consecutive_failures: 0,
      format: "signed",
    });
    const slack = await ah.send("POST", "/v1/me/webhooks", token, { ...hook, url: "https://hooks.slack.com/services/T000/B000/XXXX" });
    expect(slack.body).toMatchObject({ format: "chat" });

    const list = await ah.send("GET", "/v1/me/webhooks", token);
    expect(list.body).toMatchObject({ ok: true, count: 2 });

    ah.h.rm.clock.increment(5_000);
    const p = await ah.send("PATCH", `/v1/me/webhooks/${w.id}`, token, { threshold_bps: 100, url: "https://other.example.net/hook" });
    expect(p.body).toMatchObject({ threshold_bps: 100, url: "https://other.example.net/hook", updated_at: new Date(NOW + 5_000).toISOString(), created_at: new Date(NOW).toISOString() });

    const d = await ah.send("DELETE", `/v1/me/webhooks/${w.id}`, token);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ id: w.id, is_active: false });
    // Kept in the list (history), inactive.
    const after = (await ah.send("GET", "/v1/me/webhooks", token)).body as { data: { id: string; is_active: boolean }[] };
    expect(after.data.find((x) => x.id === w.id)?.is_active).toBe(false);
  });

  it("refuses hostile destinations at registration and on update", async () => {
    const { token } = await ah.login(1001);
    for (const url of [
      "http://hooks.example.com/",
      "https://127.0.0.1/",
      "https://[::1]/",
      "https://169.254.169.254/latest/meta-data",
      "https://0x7f.1/",
      "https://localhost/",
      "https://printer.local/",
      "https://metadata.google.internal/",
      "https://user:pw@hooks.example.com/",
      "https://rebind.example.com/",
      "https://mixed.example.com/",
      "https://unknown.example.org/",
      "not a url",
    ]) {
      const a = await ah.send("POST", "/v1/me/webhooks", token, { ...hook, url });
      expectError(a, 400, "invalid_body");
      expect((a.body as { message: string }).message).toMatch(/^url: /);
    }
    const ok = (await ah.send("POST", "/v1/me/webhooks", token, hook)).body as { id: string };
    expectError(await ah.send("PATCH", `/v1/me/webhooks/${ok.id}`, token, { url: "https://rebind.example.com/" }), 400, "invalid_body");
    for (const body of [{ url: "https://hooks.example.com/", asset: "USDC" }, { ...hook, format: "chat" }, { ...hook, threshold_bps: -1 }]) {
      expectError(await ah.send("POST", "/v1/me/webhooks", token, body), 400, "invalid_body");
    }
    expectError(await ah.send("PATCH", `/v1/me/webhooks/${ok.id}`, token, { asset: "USDT" }), 400, "invalid_body");
    expectError(await ah.send("POST", "/v1/me/webhooks", token, { ...hook, asset: "NOPE" }), 404, "asset_not_found");
  });

  it("at most 10 active per user; someone else's webhook is a 404 everywhere", async () => {
    const { token } = await ah.login(1001);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(((await ah.send("POST", "/v1/me/webhooks", token, { ...hook, url: `https://hooks.example.com/${i}` })).body as { id: string }).id);
    expectError(await ah.send("POST", "/v1/me/webhooks", token, hook), 409, "conflict");
    await ah.send("DELETE", `/v1/me/webhooks/${ids[0]}`, token);
    expect((await ah.send("POST", "/v1/me/webhooks", token, hook)).status).toBe(201);
    expectError(await ah.send("PATCH", `/v1/me/webhooks/${ids[0]}`, token, { is_active: true }), 409, "conflict");

    const other = await ah.login(2002, "Dave");
    expectError(await ah.send("PATCH", `/v1/me/webhooks/${ids[1]}`, other.token, { threshold_bps: 1 }), 404, "not_found");
    expectError(await ah.send("DELETE", `/v1/me/webhooks/${ids[1]}`, other.token), 404, "not_found");
    expectError(await ah.send("GET", `/v1/me/webhooks/${ids[1]}/deliveries`, other.token), 404, "not_found");
    expectError(await ah.send("DELETE", "/v1/me/webhooks/not-a-uuid", token), 404, "not_found");
    expect(((await ah.send("GET", "/v1/me/webhooks", other.token)).body as { count: number }).count).toBe(0);
    // Still active for its owner.
    expect(((await ah.send("GET", "/v1/me/webhooks", token)).body as { count: number }).count).toBe(11);
  });

  it("test and replay: someone else's webhook is a 404, a bad window a 400, and without a delivery worker 503", async () => {
    const { token } = await ah.login(1001);
    const id = ((await ah.send("POST", "/v1/me/webhooks", token, hook)).body as { id: string }).id;
    const since = new Date(NOW - 3_600_000).toISOString();
    const other = await ah.login(2002, "Dave");
    expectError(await ah.send("POST", `/v1/me/webhooks/${id}/test`, other.token), 404, "not_found");
    expectError(await ah.send("POST", `/v1/me/webhooks/${id}/replay`, other.token, { since }), 404, "not_found");
    expectError(await ah.send("POST", `/v1/me/webhooks/${id}/test`, null), 401, "unauthorized");
    expectError(await ah.send("POST", `/v1/me/webhooks/${id}/replay`, token, { since: new Date(NOW - 8 * 86_400_000).toISOString() }), 400, "invalid_body");
    expectError(await ah.send("POST", `/v1/me/webhooks/${id}/replay`, token, { since, until: new Date(NOW - 7_200_000).toISOString() }), 400, "invalid_body");
    expectError(await ah.send("POST", `/v1/me/webhooks/${id}/replay`, token, { since: "yesterday" }), 400, "invalid_body");
    expectError(await ah.send("POST", `/v1/me/webhooks/${id}/replay`, token, { since, extra: 1 }), 400, "invalid_body");
    // This harness runs no delivery worker.
    expectError(await ah.send("POST", `/v1/me/webhooks/${id}/test`, token), 503, "not_ready");
    expectError(await ah.send("POST", `/v1/me/webhooks/${id}/replay`, token, { since }), 503, "not_ready");
  });

  it("delivery history: newest first, limit <= 100, before cursor", async () => {
    const { token } = await ah.login(1001);
    const w = (await ah.send("POST", "/v1/me/webhooks", token, hook)).body as { id: string };
    const base: NewDelivery = {
      webhook_id: w.id,
      event_id: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b",
      alert_id: null,
      attempt: 1,
      max_attempts: 6,
      status: "failed",
      response_status: 500,
      error: "http_status",
      duration_ms: 31,
      request_headers: { "content-type": "application/json" },
      response_body_excerpt: "oops",
      scheduled_at: NOW,
      sent_at: NOW + 3,
      next_attempt_at: NOW + 5_000,
    };
    for (let i = 0; i < 5; i++) await insertDelivery(ah.store.db, { ...base, attempt: i + 1, scheduled_at: NOW + i * 1000 });
    const p1 = await ah.send("GET", `/v1/me/webhooks/${w.id}/deliveries?limit=2`, token);
    const b1 = p1.body as { data: { attempt: number }[]; next_before: string | null; count: number };
    expect(b1.data.map((d) => d.attempt)).toEqual([5, 4]);
    expect(b1.data[0]).toMatchObject({ status: "failed", error: "http_status", response_status: 500, request_headers: { "content-type": "application/json" }, scheduled_at: new Date(NOW + 4000).toISOString() });
    const p2 = await ah.send("GET", `/v1/me/webhooks/${w.id}/deliveries?limit=2&before=${b1.next_before}`, token);
    const b2 = p2.body as { data: { attempt: number }[]; next_before: string | null };
    expect(b2.data.map((d) => d.attempt)).toEqual([3, 2]);
    const p3 = await ah.send("GET", `/v1/me/webhooks/${w.id}/deliveries?limit=2&before=${b2.next_before}`, token);
    expect(p3.body).toMatchObject({ count: 1, next_before: null });
    expect((await ah.send("GET", `/v1/me/webhooks/${w.id}/deliveries`, token)).body).toMatchObject({ count: 5, next_before: null });
    expectError(await ah.send("GET", `/v1/me/webhooks/${w.id}/deliveries?limit=101`, token), 400, "invalid_query");
    expectError(await ah.send("GET", `/v1/me/webhooks/${w.id}/deliveries?before=garbage!`, token), 400, "invalid_cursor");
  });
});

describe("over a real uWS server", () => {
  let server: UwsServer | undefined;
  let base = "";
  beforeAll(async () => {
    if (!uwsIsNative()) return;
    const pipeline = createPipeline({ router: new Router(ah.h.routes), clock: ah.h.rm.clock, ratePerMinute: 1_000, corsOrigins: [] });
    server = await serveUws(pipeline, { host: "127.0.0.1", port: 0, trustProxy: false });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server?.close());

  it.skipIf(!uwsIsNative())("reads JSON bodies of POST, PATCH and DELETE; 413 beyond 16 KiB; rate-limit headers on /v1/me", async () => {
    const { token } = await ah.login(1001);
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const created = await fetch(`${base}/v1/me/subs`, { method: "POST", headers, body: JSON.stringify({ asset: "USDC", channel: "webhook", threshold_bps: 7 }) });
    expect(created.status).toBe(201);
    expect(created.headers.get("ratelimit-limit")).toBe("1000");
    const patched = await fetch(`${base}/v1/me/subs/USDC`, { method: "PATCH", headers, body: JSON.stringify({ threshold_bps: 9 }) });
    expect(await patched.json()).toMatchObject({ threshold_bps: 9 });
    const deleted = await fetch(`${base}/v1/me/subs/USDC`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
    expect(deleted.status).toBe(204);
    const big = await fetch(`${base}/v1/me/preferences`, { method: "PATCH", headers, body: JSON.stringify({ locale: "x".repeat(MAX_BODY_BYTES) }) });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error: "payload_too_large" });
  });
});
