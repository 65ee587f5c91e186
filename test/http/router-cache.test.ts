import { describe, expect, it } from "vitest";
import { Router } from "../../src/http/router.ts";

const ok = () => ({ status: 200 });

describe("router match memory", () => {
  it("answers a repeated path from memory, with frozen parameters, and forgets when a route is added", () => {
    const r = new Router([{ method: "GET", path: "/v1/assets/{symbol}", handler: ok }]);
    const a = r.match("GET", "/v1/assets/USD%2A");
    expect(a).toMatchObject({ params: { symbol: "USD*" } });
    expect(r.match("GET", "/v1/assets/USD%2A")).toBe(a);
    expect(Object.isFrozen((a as { params: object }).params)).toBe(true);
    expect(r.match("POST", "/v1/assets/USD%2A")).toEqual({ allow: ["GET"] });
    r.add({ method: "GET", path: "/v1/assets/by-mint", handler: ok });
    expect(r.match("GET", "/v1/assets/by-mint")).toMatchObject({ route: { path: "/v1/assets/by-mint" } });
    r.add({ method: "POST", path: "/v1/assets/{symbol}", handler: ok });
    expect(r.match("POST", "/v1/assets/USD%2A")).toMatchObject({ route: { method: "POST" } });
  });

  it("stays bounded under many distinct paths and still refuses malformed escapes every time", () => {
    const r = new Router([{ method: "GET", path: "/v1/assets/{symbol}", handler: ok }]);
    for (let i = 0; i < 10_000; i++) expect(r.match("GET", `/v1/assets/S${i}`)).toMatchObject({ params: { symbol: `S${i}` } });
    expect(() => r.match("GET", "/v1/assets/%E0%A4%A")).toThrow(/malformed/);
    expect(() => r.match("GET", "/v1/assets/%E0%A4%A")).toThrow(/malformed/);
  });
});
