/**
 * End to end through a real HTTP client against the running service: NATS, the store, the engine, projectors and the
 * uWebSockets.js API, fed by a scenario. Every route answers, and every JSON answer matches the OpenAPI document the
 * service itself serves.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import type { Service } from "../src/cli/service.ts";
import { verifyBundle } from "../src/methodology/index.ts";
import type { DocumentedRoute } from "../src/http/routes/index.ts";
import { expectDocumented, type Answer } from "./http/helpers.ts";
import { startTestService, type TestService } from "./support/service.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
let running: TestService;
let service: Service;
let base: string;
let doc: Record<string, unknown>;

beforeAll(async () => {
  running = await startTestService({ env: { FEED: "scenario:usdc-march-2023", SCENARIO_SPEED: "5000" }, catalog, prefix: "peg-e2e-" });
  ({ service, base } = running);
  await running.scenarioDone(8);
  doc = (await (await fetch(`${base}/openapi.json`)).json()) as Record<string, unknown>;
}, 120_000);

afterAll(() => running?.stop());

async function call(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(base + path, { headers });
  const text = await res.text();
  const contentType = res.headers.get("content-type") ?? undefined;
  const body = contentType?.startsWith("application/json") && text !== "" ? JSON.parse(text) : undefined;
  const h: Record<string, string> = {};
  res.headers.forEach((v, k) => (h[k] = v));
  const answer: Answer = { status: res.status, headers: h, body, text: body === undefined && text !== "" ? text : undefined, contentType, result: { status: res.status } };
  const rawPath = path.split("?")[0]!;
  const route = service.api.routes.find((r) => {
    const segs = r.path.split("/");
    const parts = rawPath.split("/");
    return r.method === "GET" && segs.length === parts.length && segs.every((s, i) => s.startsWith("{") || s === parts[i]);
  }) as DocumentedRoute | undefined;
  if (route !== undefined && body !== undefined) expectDocumented(doc, route, answer);
  expect(h["x-request-id"]).toBeTruthy();
  return answer;
}

describe("the running service over HTTP", () => {
  it("serves every public route with documented answers", async () => {
    const alerts = (await call("/v1/alerts?limit=50")).body as { data: { id: string }[] };
    expect(alerts.data).toHaveLength(8);
    const id = alerts.data[0]!.id;
    const paths = [
      "/healthz",
      "/health",
      "/readyz",
      "/v1/assets",
      "/v1/assets?class=stable_fiat",
      "/v1/assets?class=nope",
      "/v1/assets/USDC",
      "/v1/assets/USD%2A",
      `/v1/assets/by-mint/${USDC.mint}`,
      "/v1/assets/USDC/state",
      "/v1/assets/USDC/history?bucket=raw&from=2026-03-10T00:00:00.000Z&to=2026-03-12T00:00:00.000Z&limit=10",
      "/v1/assets/USDC/history?bucket=1m&from=2026-03-10T00:00:00.000Z&to=2026-03-12T00:00:00.000Z",
      "/v1/stats",
      "/v1/calibration",
      "/v1/peg/feed",
      "/v1/methodology/current",
      "/v1/audit?from=2026-03-10T00:00:00.000Z&to=2026-03-12T00:00:00.000Z",
      `/v1/audit/${id}`,
      `/v1/audit/${id}/detail`,
      `/v1/audit/${id}/onchain`,
      `/v1/audit/${id}/replay-bundle`,
      "/v1/meta/webhook-ips",
      "/v1/meta/webhook-keys",
      "/v1/machines/band",
      "/v1/assets/USDC/machine",
    ];
    for (const p of paths) {
      const a = await call(p);
      expect([200, 404, 503], `${p}: ${a.status}`).toContain(a.status);
    }
    const bundle = (await call(`/v1/audit/${id}/replay-bundle`)).body;
    expect(verifyBundle(bundle).exit).toBe(0);
    const card = (await call("/v1/assets/USDC")).body as Record<string, unknown>;
    expect(card).toMatchObject({ symbol: "USDC", anchor: "USD", calibration: "calibrated", risk_side: "below" });
    // Scenario time is March 2026: the snapshot is older than 15 minutes, so the API collapses it.
    expect(card).toMatchObject({ state: "UNKNOWN", state_reason: "stale_source" });
  });

  it("shows the engine's live actor through NATS request/reply", async () => {
    const a = await call("/v1/assets/USDC/machine");
    expect(a.status).toBe(200);
    const v = a.body as { asset: string; mint: string; state: string; events: { type: string }[]; last_sample: { asset: string } };
    expect(v).toMatchObject({ asset: "USDC", mint: USDC.mint });
    expect(v.state).toBe(service.host.machineState("USDC"));
    expect(v.events.length).toBeGreaterThan(0);
    expect(v.events.length).toBeLessThanOrEqual(50);
    expect(v.last_sample.asset).toBe("USDC");
    const hylo = await call(`/v1/assets/${encodeURIComponent("hyloSOL+")}/machine`);
    expect(hylo.status).toBe(200);
  });

  it("serves the dashboard's static files with a strict CSP, ETags and request ids", async () => {
    for (const [path, type] of [["/", "text/html"], ["/asset.html", "text/html"], ["/receipt.html", "text/html"], ["/static/app.css", "text/css"], ["/static/index.js", "text/javascript"]] as const) {
      const res = await fetch(base + path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toContain(type);
      expect(res.headers.get("content-security-policy"), path).toContain("script-src 'self'");
      expect(res.headers.get("x-request-id"), path).toBeTruthy();
      const again = await fetch(base + path, { headers: { "if-none-match": res.headers.get("etag")! } });
      expect(again.status, path).toBe(304);
    }
    const html = await (await fetch(base + "/")).text();
    expect(html).not.toMatch(/https?:\/\//); // nothing from a CDN
    expect((await fetch(base + "/static/../package.json")).status).toBe(404);
    expect((await fetch(base + "/static/ws.d.ts")).status).toBe(404); // type declarations are not served
    const ws = await call("/v1/ws");
    expect(ws.status).toBe(426);
    expect((ws.body as { error: string }).error).toBe("upgrade_required");
  });

  it("answers the documented errors", async () => {
    expect((await call("/v1/assets/usdc")).status).toBe(404);
    expect(((await call("/v1/assets/usdc")).body as { asset: string }).asset).toBe("usdc");
    expect((await call("/v1/assets/USDC/history?bucket=5m")).status).toBe(400);
    expect((await call("/v1/alerts?limit=501")).status).toBe(400);
    expect(((await call("/v1/audit?state=SIDEWAYS")).body as { error: string }).error).toBe("invalid_state");
    expect((await call("/v1/audit/00000000-0000-8000-8000-000000000000")).status).toBe(404);
    const feed = await call("/v1/peg/feed");
    const etag = feed.headers["etag"]!;
    const again = await fetch(`${base}/v1/peg/feed`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    const csv = await fetch(`${base}/v1/audit.csv?from=2026-03-10T00:00:00.000Z&to=2026-03-12T00:00:00.000Z`);
    expect(csv.status).toBe(200);
    expect((await csv.text()).trim().split("\n")).toHaveLength(9);
    // /metrics is on the metrics listener (METRICS_HOST, loopback), not the public port.
    const metrics = await (await fetch(`http://127.0.0.1:${service.api.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/peg_oracle_http_request_duration_seconds_bucket\{.*route="\/v1\/assets\/\{symbol\}"/);
    expect(metrics).toMatch(/peg_oracle_transitions_total\{to_state="DRIFT"\} 2/);
  });
});
