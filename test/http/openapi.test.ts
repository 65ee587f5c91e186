import { describe, expect, it } from "vitest";
import { ERROR_STATUS } from "../../src/http/errors.ts";
import { Router } from "../../src/http/router.ts";
import { routeErrorCodes } from "../../src/http/openapi.ts";
import { harness } from "./helpers.ts";
import { redoclyLint } from "./redocly.ts";

type Obj = Record<string, unknown>;

const h = harness();

describe("the OpenAPI document", () => {
  it("describes exactly the router's paths and methods", () => {
    const router = new Router(h.routes);
    const served = router.routes.map((r) => `${r.method} ${r.path}`).sort();
    const paths = h.doc["paths"] as Record<string, Obj>;
    const documented = Object.entries(paths)
      .flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`))
      .sort();
    expect(documented).toEqual(served);
  });

  it("is OpenAPI 3.1, interface version 1.0.0, schemas by $ref in components", () => {
    expect(h.doc["openapi"]).toBe("3.1.0");
    expect((h.doc["info"] as Obj)["version"]).toBe("1.0.0");
    const schemas = (h.doc["components"] as Obj)["schemas"] as Obj;
    for (const id of ["AssetCard", "AssetState", "HistoryRawRow", "HistoryMinuteRow", "AlertRow", "Stats", "CalibrationRow", "PegFeedSignal", "PegFeed", "MethodologyStatus", "AuditReceipt", "AuditDetail", "AuditIndexRow", "AuditIndex", "OnchainNotAnchored", "ReplayBundle", "WebhookIps", "WebhookKeys", "Readiness", "ApiError"]) {
      expect(schemas, id).toHaveProperty(id);
    }
    const text = JSON.stringify(h.doc);
    expect(text).not.toContain('"$schema"');
    for (const m of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) expect(schemas, m[1]).toHaveProperty(m[1]!);
    // AssetCard: the interface's required fields, and nothing else required beyond the null-when-unknown ones.
    const card = schemas["AssetCard"] as { required: string[] };
    for (const k of ["symbol", "name", "mint", "class", "anchor", "peg_target", "decimals", "monitoring_only", "calibration", "risk_side"]) {
      expect(card.required).toContain(k);
    }
    for (const k of ["state_reason", "sustained", "current_state_duration_secs", "confidence", "sol_per_lst", "jitter_bps_24h", "worst_abs_24h", "monitoring_reason", "monitoring_since", "oracle_degraded"]) {
      expect(card.required).not.toContain(k);
    }
  });

  it("lists every error a route answers with the ApiError schema", () => {
    const paths = h.doc["paths"] as Record<string, Record<string, Obj>>;
    for (const route of h.routes) {
      const responses = paths[route.path]![route.method.toLowerCase()]!["responses"] as Record<string, Obj>;
      for (const code of routeErrorCodes(route)) {
        const r = responses[String(ERROR_STATUS[code])];
        expect(r, `${route.path} ${code}`).toBeDefined();
        expect(JSON.stringify(r), `${route.path} ${code}`).toContain("#/components/schemas/ApiError");
        expect(r!["description"], `${route.path} ${code}`).toContain(`\`${code}\``);
      }
      // Every route documents its success: a 2xx, or 101 for the WebSocket upgrade.
      expect(Object.keys(responses).some((s) => s.startsWith("2") || (route.path === "/v1/ws" && s === "101")), route.path).toBe(true);
    }
    const audit = paths["/v1/audit"]!["get"]!;
    const params = (audit["parameters"] as Obj[]).map((p) => p["name"]);
    expect(params).toEqual(["state", "asset", "from", "to", "before", "limit"]);
    const limit = (audit["parameters"] as Obj[]).find((p) => p["name"] === "limit")!;
    expect(limit["schema"]).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 50 });
    expect(Object.keys(paths["/v1/audit/{id}"]!["get"]!["responses"] as Obj).sort()).toEqual(["200", "202", "400", "404", "410", "429", "500"]);
  });

  it("passes redocly lint with no errors", async () => {
    const { code, out } = await redoclyLint(h.doc);
    expect(code, out).toBe(0);
    expect(out).not.toMatch(/\berror\b.*\s{2}/);
    expect(out).toMatch(/valid/i);
  }, 120_000);
});
