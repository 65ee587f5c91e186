/**
 * Edge behaviour found by the outside audit (issue 14, items 4 and 6), each through the real pipeline or server:
 * 1. `/v1/audit.csv` success responses carry the CSV budget (10 per minute) that its 429 enforces;
 * 2. OPTIONS and CORS preflights list the methods the path has, exactly as its 405 does;
 * 3. a JSON body with a charset other than UTF-8 is refused with 415 `unsupported_media_type`;
 * 4. a WebSocket message over the 16 KiB limit is closed with 1009 (message too big), seen by the `ws` client.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { SimulatedClock } from "../../src/clock.ts";
import type { AccountsModel } from "../../src/http/accounts-model.ts";
import { createPipeline, type HandledResult } from "../../src/http/pipeline.ts";
import { allowHeader, Router } from "../../src/http/router.ts";
import { publicRoutes } from "../../src/http/routes/index.ts";
import { serveUws, type UwsServer } from "../../src/http/uws-adapter.ts";
import { WsHub } from "../../src/http/ws/hub.ts";
import { WS_LIMITS } from "../../src/http/ws/protocol.ts";
import { attachWs, uwsTransport } from "../../src/http/ws/uws.ts";
import { catalog, fakeReadModel, NOW } from "./fixtures.ts";
import { accountsHarness, widgetPayload, type AccountsHarness } from "./helpers.ts";

const ORIGIN = "https://app.example.com";
const rm = fakeReadModel();
const routes = publicRoutes(rm, { accounts: { model: {} as AccountsModel } });
const router = new Router(routes);
const clock = new SimulatedClock(NOW);
const pipeline = createPipeline({ router, clock, ratePerMinute: 60, corsOrigins: [ORIGIN] });

async function call(method: string, path: string, headers: Record<string, string> = {}): Promise<HandledResult> {
  const q = path.indexOf("?");
  return pipeline({
    method,
    path: q < 0 ? path : path.slice(0, q),
    query: new URLSearchParams(q < 0 ? "" : path.slice(q + 1)),
    headers,
    ip: "198.51.100.20",
    body: null,
  });
}

describe("rate-limit headers of a route with its own budget", () => {
  it("/v1/audit.csv answers with the CSV budget (10 per minute), counting down to the 429 that enforces it", async () => {
    clock.set(Date.UTC(2026, 5, 12, 13, 0, 0)); // a fresh window
    const plain = await call("GET", "/v1/assets");
    expect(plain.headers["ratelimit-limit"]).toBe("60");
    expect(plain.headers["ratelimit-policy"]).toBe('"default";q=60;w=60');
    const remaining: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await call("GET", "/v1/audit.csv");
      expect(r.status, r.text === undefined ? JSON.stringify(r.json) : "").toBe(200);
      expect(r.headers["ratelimit-limit"]).toBe("10");
      expect(r.headers["x-ratelimit-limit"]).toBe("10");
      expect(r.headers["x-ratelimit-remaining"]).toBe(r.headers["ratelimit-remaining"]);
      // Both budgets in the structured lists, the route's own first: the global one is spent too (1 + i + 1 of 60).
      expect(r.headers["ratelimit-policy"]).toBe('"audit_csv";q=10;w=60, "default";q=60;w=60');
      expect(r.headers["ratelimit"]).toMatch(new RegExp(`^"audit_csv";r=${9 - i};t=\\d+, "default";r=${58 - i};t=\\d+$`));
      remaining.push(r.headers["ratelimit-remaining"]!);
    }
    expect(remaining).toEqual(["9", "8", "7", "6", "5", "4", "3", "2", "1", "0"]);
    const refused = await call("GET", "/v1/audit.csv");
    expect(refused.status).toBe(429);
    expect(refused.headers).toMatchObject({ "ratelimit-limit": "10", "ratelimit-remaining": "0", "ratelimit-policy": '"audit_csv";q=10;w=60' });
  });
});

describe("Allow on OPTIONS and on 405", () => {
  /** Every route template, with its methods. */
  const byPath = new Map<string, string[]>();
  for (const r of routes) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r.method]);
  const concrete = (template: string) => template.replace(/\{[^}]+\}/g, "x");

  it("a GET-only path lists GET, HEAD and OPTIONS, on a plain OPTIONS and on a preflight", async () => {
    clock.set(Date.UTC(2026, 5, 12, 14, 0, 0));
    const plain = await call("OPTIONS", "/v1/assets");
    expect(plain.status).toBe(204);
    expect(plain.headers["allow"]).toBe("GET, HEAD, OPTIONS");
    const pf = await call("OPTIONS", "/v1/assets/USDC", { origin: ORIGIN, "access-control-request-method": "GET" });
    expect(pf.status).toBe(204);
    expect(pf.headers).toMatchObject({ allow: "GET, HEAD, OPTIONS", "access-control-allow-methods": "GET, HEAD, OPTIONS", "access-control-allow-origin": ORIGIN });
    const post = await call("OPTIONS", "/v1/auth/messenger");
    expect(post.headers["allow"]).toBe("POST, OPTIONS");
  });

  it("every path answers OPTIONS with exactly its methods, the same list its 405 gives", async () => {
    expect(byPath.size).toBeGreaterThan(30);
    for (const [template, methods] of byPath) {
      clock.increment(120_000);
      const path = concrete(template);
      const options = await call("OPTIONS", path, { origin: ORIGIN });
      // Another template of the same shape may share the concrete path (only by-mint here, which needs a literal).
      expect(options.status, template).toBe(204);
      expect(options.headers["allow"], template).toBe(allowHeader(methods));
      expect(options.headers["access-control-allow-methods"], template).toBe(allowHeader(methods));
      const absent = ["PUT", "PATCH", "DELETE", "POST", "GET"].find((m) => !methods.includes(m))!;
      const wrong = await call(absent, path);
      expect(wrong.status, `${absent} ${template}`).toBe(405);
      expect(wrong.headers["allow"], `${absent} ${template}`).toBe(options.headers["allow"]);
    }
    expect((await call("OPTIONS", "/v1/nope")).status).toBe(404);
  });
});

describe("JSON bodies are UTF-8", () => {
  let ah: AccountsHarness;
  beforeAll(async () => {
    ah = await accountsHarness();
  }, 60_000);
  afterAll(async () => {
    await ah?.close();
  });

  const login = (contentType: string, id: number) =>
    ah.h.call("/v1/auth/messenger", {
      method: "POST",
      headers: { "content-type": contentType },
      body: JSON.stringify(widgetPayload({ id, first_name: "Ann", username: "ann" }, ah.h.rm.clock.now())),
    });

  it("refuses a charset other than utf-8 with 415 unsupported_media_type, before reading the body", async () => {
    for (const type of ["application/json; charset=latin1", "application/json;charset=ISO-8859-1", 'application/json; charset="utf-16"', "application/json; charset=us-ascii", "application/json; charset"]) {
      const a = await login(type, 9001);
      expect(a.status, type).toBe(415);
      expect((a.body as { error: string }).error, type).toBe("unsupported_media_type");
    }
    const { token } = await ah.login(9002, "Bob");
    const patch = await ah.h.call("/v1/me/preferences", {
      method: "PATCH",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json; charset=windows-1252" },
      body: JSON.stringify({ locale: "de" }),
    });
    expect(patch.status).toBe(415);
  });

  it("accepts utf-8 however it is spelled, and no charset at all", async () => {
    for (const type of ["application/json", "application/json; charset=utf-8", 'Application/JSON; Charset="UTF-8"', "application/json; charset=utf8; foo=bar"]) {
      expect((await login(type, 9003)).status, type).toBe(200);
    }
  });
});

describe("WebSocket message size", () => {
  let server: UwsServer;
  let hub: WsHub;
  let url: string;

  beforeAll(async () => {
    const transport = uwsTransport();
    hub = new WsHub({ catalog, clock: new SimulatedClock(NOW), transport });
    server = await serveUws(pipeline, {
      host: "127.0.0.1",
      port: 0,
      trustProxy: false,
      configure: (app) => {
        transport.bind(app);
        attachWs(app, hub, { trustProxy: false });
      },
    });
    url = `ws://127.0.0.1:${server.port}/v1/ws`;
  });
  afterAll(() => {
    hub?.stop();
    server?.close();
  });

  /** Opens a client, waits for `hello`, sends `payload`, and resolves with the close (or the first reply). */
  function exchange(payload: string): Promise<{ closed: { code: number; reason: string } | null; reply: Record<string, unknown> | null }> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      let greeted = false;
      ws.on("error", reject);
      ws.on("message", (data) => {
        if (!greeted) {
          greeted = true;
          ws.send(payload);
          return;
        }
        const m = JSON.parse(data.toString()) as Record<string, unknown>;
        if (m["type"] === "ping") return;
        ws.close();
        resolve({ closed: null, reply: m });
      });
      ws.on("close", (code, reason) => resolve({ closed: { code, reason: reason.toString() }, reply: null }));
    });
  }

  it("closes a client whose message is over 16 KiB with 1009 and a reason", async () => {
    for (const size of [WS_LIMITS.maxPayloadBytes + 1, 64 * 1024, WS_LIMITS.maxReadBytes]) {
      const r = await exchange("x".repeat(size));
      expect(r.closed, `${size} bytes`).toEqual({ code: 1009, reason: `message too big: at most ${WS_LIMITS.maxPayloadBytes} bytes` });
    }
    expect(hub.stats.clients).toBe(0);
  });

  it("reads a message of exactly 16 KiB (an invalid one is answered, not closed)", async () => {
    const r = await exchange("x".repeat(WS_LIMITS.maxPayloadBytes));
    expect(r.closed).toBeNull();
    expect(r.reply).toMatchObject({ type: "error", error: "invalid_message" });
  });
});
