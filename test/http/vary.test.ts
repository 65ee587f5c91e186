/**
 * `Vary: Origin` on every answer whose headers depend on the Origin (issue 23, item 4). With CORS_ORIGINS set, an
 * answer carries Access-Control-Allow-Origin or not depending on the request's Origin, so every answer of every route
 * says `Vary: Origin`, also to a request that had no Origin: otherwise a shared cache stores the copy without the CORS
 * headers and serves it to an allowed origin, whose browser then refuses it. Without CORS_ORIGINS no header depends on
 * the Origin and none claims to.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import type { AccountsModel } from "../../src/http/accounts-model.ts";
import { createPipeline, type HandledResult } from "../../src/http/pipeline.ts";
import { Router } from "../../src/http/router.ts";
import { publicRoutes } from "../../src/http/routes/index.ts";
import { serveUws, type UwsServer } from "../../src/http/uws-adapter.ts";
import { asset, fakeReadModel, NOW } from "./fixtures.ts";

const ORIGIN = "https://app.example.com";
const rm = fakeReadModel();
const routes = publicRoutes(rm, { accounts: { model: {} as AccountsModel } });
const router = new Router(routes);
const clock = new SimulatedClock(NOW);
const withCors = createPipeline({ router, clock, ratePerMinute: 1e9, corsOrigins: [ORIGIN] });
const withoutCors = createPipeline({ router, clock, ratePerMinute: 1e9, corsOrigins: [] });

/** A concrete path of a route template. */
function pathOf(template: string): string {
  const values: Readonly<Record<string, string>> = { symbol: "USDC", mint: asset("USDC").mint, id: rm.alertList[0]!.id, file: "swagger-ui.css", asset: "USDC" };
  return template.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? "x");
}

const ORIGINS: readonly (string | undefined)[] = [undefined, ORIGIN, "https://evil.example"];

async function call(pipeline: typeof withCors, method: string, path: string, origin: string | undefined, ip = "198.51.100.30"): Promise<HandledResult> {
  return pipeline({ method, path, query: new URLSearchParams(), headers: origin === undefined ? {} : { origin }, ip, body: null });
}

const varies = (r: HandledResult): boolean => (r.headers["vary"] ?? "").split(",").some((v) => v.trim().toLowerCase() === "origin");

describe("with CORS_ORIGINS set, every answer carries Vary: Origin", () => {
  it("every route and method, with no Origin, an allowed one and another one", async () => {
    const seen = new Set<number>();
    for (const route of routes) {
      for (const origin of ORIGINS) {
        const r = await call(withCors, route.method, pathOf(route.path), origin);
        seen.add(r.status);
        expect(varies(r), `${route.method} ${route.path} (Origin ${origin ?? "absent"}): ${r.status} vary=${r.headers["vary"]}`).toBe(true);
        expect(r.headers["access-control-allow-origin"]).toBe(origin === ORIGIN ? ORIGIN : undefined);
      }
    }
    // Successes and failures alike (the stand-in accounts model fails its routes).
    expect([...seen].some((s) => s < 300)).toBe(true);
    expect([...seen].some((s) => s >= 400)).toBe(true);
  });

  it("HEAD, OPTIONS (plain and preflight), 404, 405 and 429 too", async () => {
    for (const origin of ORIGINS) {
      const what = `Origin ${origin ?? "absent"}`;
      expect(varies(await call(withCors, "HEAD", "/v1/assets", origin)), `HEAD ${what}`).toBe(true);
      expect(varies(await call(withCors, "OPTIONS", "/v1/assets", origin)), `OPTIONS ${what}`).toBe(true);
      expect(varies(await call(withCors, "GET", "/nope", origin)), `404 ${what}`).toBe(true);
      expect(varies(await call(withCors, "DELETE", "/v1/assets", origin)), `405 ${what}`).toBe(true);
    }
    const limited = createPipeline({ router, clock, ratePerMinute: 1, corsOrigins: [ORIGIN] });
    expect((await call(limited, "GET", "/v1/assets", undefined)).status).toBe(200);
    const refused = await call(limited, "GET", "/v1/assets", undefined);
    expect(refused.status).toBe(429);
    expect(varies(refused)).toBe(true);
  });

  it("Vary names Origin once, whatever the request", async () => {
    for (const origin of ORIGINS) expect((await call(withCors, "GET", "/v1/assets", origin)).headers["vary"]).toBe("Origin");
  });
});

describe("without CORS_ORIGINS no header depends on the Origin", () => {
  it("no CORS headers and no Vary: Origin, with or without an Origin", async () => {
    for (const origin of ORIGINS) {
      const r = await call(withoutCors, "GET", "/v1/assets", origin);
      expect(r.headers["access-control-allow-origin"]).toBeUndefined();
      expect(varies(r)).toBe(false);
    }
  });
});

describe("over the uWS server", () => {
  let server: UwsServer;
  beforeAll(async () => {
    server = await serveUws(withCors, { host: "127.0.0.1", port: 0, trustProxy: false });
  });
  afterAll(() => server?.close());

  it("a response to a request without Origin carries Vary: Origin, as one with an allowed Origin does", async () => {
    const base = `http://127.0.0.1:${server.port}`;
    const plain = await fetch(`${base}/v1/assets`);
    expect(plain.status).toBe(200);
    expect(plain.headers.get("vary")).toBe("Origin");
    expect(plain.headers.get("access-control-allow-origin")).toBeNull();
    const cors = await fetch(`${base}/v1/assets`, { headers: { origin: ORIGIN } });
    expect(cors.headers.get("vary")).toBe("Origin");
    expect(cors.headers.get("access-control-allow-origin")).toBe(ORIGIN);
  });
});
