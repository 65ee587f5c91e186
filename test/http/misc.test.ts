import { beforeEach, describe, expect, it } from "vitest";
import { ApiError } from "../../src/http/errors.ts";
import { Router } from "../../src/http/router.ts";
import { publicRoutes } from "../../src/http/routes/index.ts";
import { MethodologyRegistryError } from "../../src/methodology/index.ts";
import { fakeReadModel, NOW } from "./fixtures.ts";
import { harness, type Harness } from "./helpers.ts";

type Obj = Record<string, unknown>;

let h: Harness;
beforeEach(() => {
  h = harness();
});

describe("health", () => {
  it("/healthz and /health are 200 {ok: true} and exempt from rate limiting", async () => {
    for (const p of ["/healthz", "/health"]) {
      expect((await h.get(p)).body).toEqual({ ok: true });
      expect(h.routes.find((r) => r.path === p)?.unlimited).toBe(true);
    }
    expect(h.routes.find((r) => r.path === "/readyz")?.unlimited).toBe(true);
    expect(h.routes.filter((r) => r.unlimited === true).map((r) => r.path).sort()).toEqual(["/health", "/healthz", "/readyz"]);
  });

  it("/readyz is 200 when every check passes", async () => {
    expect((await h.get("/readyz")).body).toEqual({ ok: true, checks: { database: true, nats: true, snapshot_age_secs: 2, engine: true } });
  });

  it("/readyz is 503 with the checks when a dependency is down, the snapshot is too old or missing", async () => {
    h.rm.readinessState = { database: true, nats: false, engine: true, snapshot_age_secs: 2 };
    const nats = await h.get("/readyz", 503);
    expect(nats.body).toMatchObject({ ok: false, error: "not_ready", checks: { nats: false } });
    expect((nats.body as Obj).message).toBe("nats is down");
    // What the service knows beyond "down" is the message (the checks stay booleans).
    h.rm.readinessState = {
      database: false,
      nats: false,
      engine: true,
      snapshot_age_secs: 2,
      reasons: { database: "database has no room to write (disk full)", nats: "nats did not answer a ping within 2 s (down, or the connection is backed up)" },
    };
    const both = await h.get("/readyz", 503);
    expect(both.body).toMatchObject({ ok: false, checks: { database: false, nats: false } });
    expect((both.body as Obj).message).toBe("database has no room to write (disk full); nats did not answer a ping within 2 s (down, or the connection is backed up)");
    h.rm.readinessState = { database: true, nats: true, engine: true, snapshot_age_secs: 901 };
    expect(((await h.get("/readyz", 503)).body as Obj).message).toContain("901 s");
    h.rm.readinessState = { database: true, nats: true, engine: true, snapshot_age_secs: 900 };
    await h.get("/readyz", 200);
    h.rm.readinessState = { database: true, nats: true, engine: true, snapshot_age_secs: null };
    await h.get("/readyz", 503);
    h.rm.readiness = async () => {
      throw new Error("database gone");
    };
    expect((await h.get("/readyz", 503)).body).toMatchObject({ ok: false, checks: { database: false, nats: false, engine: false, snapshot_age_secs: null } });
  });
});

describe("meta", () => {
  it("/v1/meta/webhook-ips lists the configured addresses", async () => {
    expect((await h.get("/v1/meta/webhook-ips")).body).toEqual({ ips: ["203.0.113.7", "2001:db8::1"], updated_at: new Date(NOW - 60_000).toISOString() });
  });

  it("/v1/meta/webhook-keys is empty until webhooks exist", async () => {
    expect((await h.get("/v1/meta/webhook-keys")).body).toEqual({ keys: [] });
  });
});

describe("docs", () => {
  it("/openapi.json serves the document of these routes", async () => {
    const doc = (await h.get("/openapi.json")).body as Obj;
    expect(doc).toEqual(JSON.parse(JSON.stringify(h.doc)));
    expect(doc.openapi).toBe("3.1.0");
    expect((doc.info as Obj).version).toBe("1.0.0");
  });

  it("/docs is a Swagger UI page whose assets come from this service, not a CDN", async () => {
    const page = await h.get("/docs");
    expect(page.contentType).toMatch(/^text\/html/);
    expect(page.text).toContain('<div id="swagger-ui"></div>');
    const srcs = [...page.text!.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(srcs.length).toBeGreaterThan(3);
    for (const s of srcs) expect(s.startsWith("/docs/"), s).toBe(true);
    expect(page.text).not.toMatch(/https?:\/\//);
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    for (const s of srcs) {
      const a = await h.get(s);
      expect(a.text!.length, s).toBeGreaterThan(0);
    }
    const init = await h.get("/docs/init.js");
    expect(init.text).toContain('"/openapi.json"');
    expect((await h.get("/docs/swagger-ui-bundle.js")).contentType).toMatch(/javascript/);
    expect((await h.get("/docs/favicon-32x32.png")).contentType).toBe("image/png");
  });

  it("/docs/{file} serves only the listed files", async () => {
    for (const f of ["package.json", "..%2Fpackage.json", "swagger-ui-bundle.js.map", "index.html"]) {
      expect(((await h.get(`/docs/${f}`, 404)).body as Obj).error, f).toBe("not_found");
    }
  });
});

describe("router integration", () => {
  it("an unknown path is 404 not_found; a known path with another method is 405 with Allow", async () => {
    expect(((await h.get("/v1/nope", 404)).body as Obj).error).toBe("not_found");
    const post = await h.call("/v1/assets", { method: "POST" });
    expect(post.status).toBe(405);
    expect((post.body as Obj).error).toBe("method_not_allowed");
    expect(post.headers["allow"]).toContain("GET");
    const del = await h.call("/v1/audit/x", { method: "DELETE" });
    expect(del.status).toBe(405);
  });

  it("HEAD is routed to GET", async () => {
    expect((await h.call("/v1/stats", { method: "HEAD" })).status).toBe(200);
  });

  it("every route is GET, documented and unique", () => {
    const keys = h.routes.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(h.routes.every((r) => r.method === "GET")).toBe(true);
    expect(() => new Router(h.routes)).not.toThrow();
  });

  it("the requestsWsClients alias feeds ws_clients", async () => {
    const rm = fakeReadModel();
    const router = new Router(publicRoutes(rm, { requestsWsClients: () => 3 }));
    const res = await router.handle({ method: "GET", path: "/v1/stats", query: new URLSearchParams(), headers: {}, ip: "::1", requestId: "r", body: null });
    expect((res.json as Obj).ws_clients).toBe(3);
  });

  it("a broken methodology needs a fix_url, which it then reports", async () => {
    const rm = fakeReadModel();
    const broken = { ...rm.config.methodology, status: "broken" as const, status_reason: "hash bug", superseded_by: "1.0.1", fix_url: null };
    expect(() => publicRoutes({ ...rm, config: { ...rm.config, methodology: broken } })).toThrow(MethodologyRegistryError);
    const fixUrl = "docs/methodology-lifecycle.md#broken";
    const router = new Router(publicRoutes({ ...rm, config: { ...rm.config, methodology: { ...broken, fix_url: fixUrl } } }));
    const res = await router.handle({ method: "GET", path: "/v1/methodology/current", query: new URLSearchParams(), headers: {}, ip: "::1", requestId: "r", body: null });
    expect(res.json).toMatchObject({ status: "broken", status_reason: "hash bug", superseded_by: "1.0.1", fix_url: fixUrl });
    await expect(router.handle({ method: "GET", path: "/nope", query: new URLSearchParams(), headers: {}, ip: "::1", requestId: "r", body: null })).rejects.toBeInstanceOf(ApiError);
  });
});
