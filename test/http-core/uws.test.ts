import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { ApiError } from "../../src/http/errors.ts";
import { createPipeline } from "../../src/http/pipeline.ts";
import { Router } from "../../src/http/router.ts";
import { serveUws, uwsIsNative, type UwsServer } from "../../src/http/uws-adapter.ts";
import { SlidingWindowLimiter } from "../../src/http/rate-limit.ts";

const clock = new SimulatedClock(Date.UTC(2026, 5, 12, 10, 0, 30));
const router = new Router([
  { method: "GET", path: "/healthz", unlimited: true, handler: () => ({ status: 200, json: { ok: true } }) },
  { method: "GET", path: "/v1/assets/{symbol}", handler: (r) => ({ status: 200, json: { symbol: r.params["symbol"], requestId: r.requestId } }) },
  { method: "GET", path: "/v1/assets/by-mint/{mint}", handler: (r) => ({ status: 200, json: { mint: r.params["mint"] } }) },
  { method: "GET", path: "/v1/audit.csv", bucket: { name: "audit_csv", perMinute: 2 }, handler: () => ({ status: 200, text: "a,b\n", contentType: "text/csv" }) },
  { method: "POST", path: "/v1/echo", handler: (r) => ({ status: 200, json: { bytes: r.body?.byteLength ?? 0 } }) },
  { method: "GET", path: "/v1/boom", handler: () => { throw new Error("kaboom"); } },
  { method: "GET", path: "/v1/teapot", handler: () => { throw new ApiError("asset_not_found", "nope", { asset: "X" }); } },
]);

let server: UwsServer;
let base: string;
const errors: unknown[] = [];

beforeAll(async () => {
  const handle = createPipeline({ router, clock, ratePerMinute: 5, corsOrigins: ["https://app.example.com"], onError: (e) => errors.push(e) });
  server = await serveUws(handle, { host: "127.0.0.1", port: 0, trustProxy: false });
  base = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server?.close());

/** The JSON body of a response, for assertions. */
const body = async (r: Response): Promise<Record<string, unknown>> => (await r.json()) as Record<string, unknown>;
const get = (path: string, headers: Record<string, string> = {}, method = "GET") => fetch(base + path, { method, headers });

describe("uWS adapter and pipeline", () => {
  it("runs on the native binary", () => expect(uwsIsNative()).toBe(true));

  it("decodes path parameters and echoes a sane x-request-id, replacing an insane one", async () => {
    const a = await get("/v1/assets/USD%2A", { "x-request-id": "abc-123" });
    expect(a.status).toBe(200);
    expect(a.headers.get("x-request-id")).toBe("abc-123");
    expect(await body(a)).toEqual({ symbol: "USD*", requestId: "abc-123" });
    const b = await get("/v1/assets/hyloSOL%2B", { "x-request-id": "bad id with spaces" });
    expect((await body(b)).symbol).toBe("hyloSOL+");
    expect(b.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const c = await get("/v1/assets/by-mint/EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
    expect(await body(c)).toEqual({ mint: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" });
    const bad = await get("/v1/assets/%E0%A4%A");
    expect(bad.status).toBe(400);
    expect((await body(bad)).error).toBe("invalid_query");
  });

  it("answers unknown paths 404 and wrong methods 405, always as ApiError with x-request-id", async () => {
    const nf = await get("/nope");
    expect(nf.status).toBe(404);
    expect(await body(nf)).toMatchObject({ error: "not_found" });
    expect(nf.headers.get("x-request-id")).toBeTruthy();
    const na = await get("/v1/assets/USDC", {}, "DELETE");
    expect(na.status).toBe(405);
    expect(na.headers.get("allow")).toMatch(/GET/);
    expect((await body(na)).error).toBe("method_not_allowed");
    const err = await get("/v1/teapot");
    expect(err.status).toBe(404);
    expect(await body(err)).toEqual({ error: "asset_not_found", message: "nope", asset: "X" });
  });

  it("turns unexpected failures into 500 internal without leaking details", async () => {
    const r = await get("/v1/boom");
    expect(r.status).toBe(500);
    expect(await body(r)).toMatchObject({ error: "internal" });
    expect(String(errors.at(-1))).toMatch(/kaboom/);
  });

  it("HEAD answers like GET without a body", async () => {
    const r = await get("/healthz", {}, "HEAD");
    expect(r.status).toBe(200);
    expect(await r.text()).toBe("");
  });

  it("reads bodies up to 16 KiB and refuses larger ones with 413", async () => {
    clock.set(Date.UTC(2026, 5, 12, 10, 2, 0)); // a fresh rate-limit window
    const small = await fetch(base + "/v1/echo", { method: "POST", body: "x".repeat(1000), headers: { "content-type": "application/json" } });
    expect(await body(small)).toEqual({ bytes: 1000 });
    const big = await fetch(base + "/v1/echo", { method: "POST", body: "x".repeat(17 * 1024), headers: { "content-type": "application/json" } });
    expect(big.status).toBe(413);
    expect((await body(big)).error).toBe("payload_too_large");
  });

  it("CORS: allowed origins get headers and preflights; others get none", async () => {
    const r = await get("/healthz", { origin: "https://app.example.com" });
    expect(r.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(r.headers.get("access-control-expose-headers")).toMatch(/ratelimit-remaining.*etag.*x-request-id/);
    const pf = await fetch(base + "/v1/assets/USDC", { method: "OPTIONS", headers: { origin: "https://app.example.com", "access-control-request-method": "GET" } });
    expect(pf.status).toBe(204);
    expect(pf.headers.get("access-control-allow-methods")).toMatch(/GET/);
    const other = await get("/healthz", { origin: "https://evil.example" });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("rate limiting", () => {
  it("limits per IP with headers and Retry-After; health routes are exempt; the CSV has its own bucket", async () => {
    clock.set(Date.UTC(2026, 5, 12, 10, 5, 0)); // a fresh window
    const seen: number[] = [];
    let last: Response | null = null;
    for (let i = 0; i < 6; i++) {
      last = await get("/v1/assets/USDC");
      seen.push(last.status);
      if (i === 0) {
        expect(last.headers.get("ratelimit-limit")).toBe("5");
        expect(last.headers.get("x-ratelimit-remaining")).toBe(last.headers.get("ratelimit-remaining"));
        expect(last.headers.get("ratelimit-policy")).toBe('"default";q=5;w=60');
      }
    }
    expect(seen.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
    expect(last!.status).toBe(429);
    expect(await last!.json()).toMatchObject({ error: "rate_limited" });
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 10; i++) expect((await get("/healthz")).status).toBe(200);
    clock.set(Date.UTC(2026, 5, 12, 10, 8, 0)); // two windows later: budget back
    expect((await get("/v1/assets/USDC")).status).toBe(200);
    expect((await get("/v1/audit.csv")).status).toBe(200);
    expect((await get("/v1/audit.csv")).status).toBe(200);
    const third = await get("/v1/audit.csv");
    expect(third.status).toBe(429);
    expect(third.headers.get("ratelimit-policy")).toBe('"audit_csv";q=2;w=60');
  });

  it("the sliding window refills continuously and memory stays bounded", () => {
    const l = new SlidingWindowLimiter(10, 60_000, 1000);
    const t0 = 60_000 * 100;
    for (let i = 0; i < 10; i++) expect(l.take("a", t0 + 59_000).allowed).toBe(true);
    expect(l.take("a", t0 + 59_000).allowed).toBe(false);
    // Half-way into the next window half of the previous 10 still weighs (5): 5 more fit under the limit of 10.
    let allowed = 0;
    for (let i = 0; i < 10; i++) if (l.take("a", t0 + 90_000).allowed) allowed++;
    expect(allowed).toBe(5);
    for (let i = 0; i < 100_000; i++) l.take(`ip-${i}`, t0);
    expect(l.size).toBeLessThanOrEqual(1000);
  });
});

describe("port ownership", () => {
  it("refuses a port another server holds (uWS would otherwise share it through SO_REUSEPORT)", async () => {
    const handle = createPipeline({ router, clock, ratePerMinute: 5, corsOrigins: [] });
    await expect(serveUws(handle, { host: "127.0.0.1", port: server.port, trustProxy: false })).rejects.toThrow(/cannot listen on 127\.0\.0\.1:\d+: EADDRINUSE/);
    // The first server still answers.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});

describe("fallback refusal", () => {
  it("refuses to serve on the JavaScript fallback", () => {
    const r = spawnSync(process.execPath, ["--import", "tsx", "-e", `
      const { serveUws } = await import("./src/http/uws-adapter.ts");
      try { await serveUws(async () => ({ status: 200, headers: {} }), { host: "127.0.0.1", port: 0, trustProxy: false }); console.log("served"); process.exit(0); }
      catch (e) { console.log(e.code); process.exit(3); }
    `], { env: { ...process.env, UWS_USE_FALLBACK: "1" }, encoding: "utf8", cwd: process.cwd() });
    expect(r.stdout).toMatch(/uws_fallback/);
    expect(r.status).toBe(3);
  });
});

describe("client address behind proxies", () => {
  it("is the socket peer unless proxies are trusted, then the right-most untrusted X-Forwarded-For hop", async () => {
    const { clientAddress } = await import("../../src/http/uws-adapter.ts");
    const none = new Set<string>();
    const proxies = new Set(["10.0.0.2", "10.0.0.3"]);
    expect(clientAddress("203.0.113.9", "1.2.3.4", false, none)).toBe("203.0.113.9");
    // TRUST_PROXY=true: the peer is the one proxy; its appended hop is the client.
    expect(clientAddress("10.0.0.2", "6.6.6.6, 198.51.100.7", true, none)).toBe("198.51.100.7");
    // A list: skip trusted hops from the right; spoofed hops further left are ignored.
    expect(clientAddress("10.0.0.2", "6.6.6.6, 198.51.100.7, 10.0.0.3", true, proxies)).toBe("198.51.100.7");
    // A peer that is not a trusted proxy cannot speak for anyone.
    expect(clientAddress("203.0.113.9", "198.51.100.7", true, proxies)).toBe("203.0.113.9");
    expect(clientAddress("10.0.0.2", undefined, true, proxies)).toBe("10.0.0.2");
  });
});

describe("closing the server", () => {
  it("answers a request on a kept-alive connection 503 not_ready and closes that connection", async () => {
    const { Agent, request } = await import("node:http");
    const handle = createPipeline({ router, clock, ratePerMinute: 1000, corsOrigins: [] });
    const s = await serveUws(handle, { host: "127.0.0.1", port: 0, trustProxy: false });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const call = () =>
      new Promise<{ status: number; body: string; connection: string | undefined; socket: unknown }>((resolve, reject) => {
        const req = request({ host: "127.0.0.1", port: s.port, path: "/healthz", agent }, (res) => {
          let b = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => (b += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: b, connection: res.headers["connection"], socket: req.socket }));
        });
        req.on("error", reject);
        req.end();
      });
    try {
      const first = await call();
      expect(first.status).toBe(200);
      s.close();
      // The same pooled connection: the listen socket is gone, the connection is not.
      const second = await call();
      expect(second.socket).toBe(first.socket);
      expect(second.status).toBe(503);
      expect(JSON.parse(second.body)).toMatchObject({ error: "not_ready", message: "the server is shutting down" });
      expect(second.connection).toBe("close");
    } finally {
      agent.destroy();
    }
  });
});
