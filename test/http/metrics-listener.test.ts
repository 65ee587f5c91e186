/**
 * Issue 14 item 6: `/metrics` was served on the public port, outside every rate limit. It now has a listener of its
 * own (METRICS_HOST, loopback by default; METRICS_PORT, 0 here for a free port), served by uWebSockets.js like the
 * API; the public port answers 404 in the ApiError shape.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import type { Service } from "../../src/cli/service.ts";
import { ConfigError, parseConfig } from "../../src/config.ts";
import { startTestService, type TestService } from "../support/service.ts";

const catalog = loadShippedCatalog();
let running: TestService;
let service: Service;
let api: string;
let metricsBase: string;
const logs: { msg: string; fields?: Record<string, unknown> }[] = [];

beforeAll(async () => {
  running = await startTestService({ catalog, prefix: "peg-metrics-", io: { log: (_level, msg, fields) => logs.push({ msg, ...(fields === undefined ? {} : { fields }) }) } });
  ({ service, base: api } = running);
  metricsBase = `http://127.0.0.1:${service.api.metricsPort}`;
}, 120_000);

afterAll(() => running?.stop());

/** Local addresses (hex, as /proc/net/tcp{,6} write them) of the sockets listening on `port`. */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  return ["/proc/net/tcp", "/proc/net/tcp6"].flatMap((file) =>
    readFileSync(file, "utf8")
      .split("\n")
      .slice(1)
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f[1]?.endsWith(`:${hexPort}`) && f[3] === "0A")
      .map((f) => f[1]!.split(":")[0]!),
  );
}

describe("the metrics listener", () => {
  it("is not on the public port: /metrics there is a 404 in the ApiError shape", async () => {
    for (const method of ["GET", "HEAD"]) {
      const res = await fetch(`${api}/metrics`, { method });
      expect(res.status, method).toBe(404);
      expect(res.headers.get("x-request-id")).toBeTruthy();
      if (method === "GET") {
        expect(res.headers.get("content-type")).toBe("application/json");
        expect(await res.json()).toEqual({ error: "not_found", message: expect.any(String) });
      }
    }
  });

  it("serves the Prometheus text on its own port, with the public API's request metrics", async () => {
    expect((await fetch(`${api}/v1/assets/USDC`)).status).toBe(200);
    const res = await fetch(`${metricsBase}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toMatch(/peg_oracle_http_request_duration_seconds_bucket\{.*route="\/v1\/assets\/\{symbol\}"/);
    expect(text).toMatch(/peg_oracle_dependency_up\{dependency="store"\} 1/);
    expect(text).toMatch(/peg_oracle_dependency_up\{dependency="nats"\} 1/);
    expect(text).not.toMatch(/route="\/metrics"/);
  });

  it("is bound to loopback by default and its port is logged", () => {
    expect(parseConfig({}).metricsHost).toBe("127.0.0.1");
    expect(parseConfig({}).metricsPort).toBe(9464);
    const addresses = listeningAddresses(service.api.metricsPort);
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.every((a) => a === "0100007F"), addresses.join(",")).toBe(true);
    expect(logs).toContainEqual({ msg: "metrics listening", fields: { host: "127.0.0.1", port: service.api.metricsPort } });
  });

  it("answers other paths 404 and other methods 405, in the ApiError shape", async () => {
    const other = await fetch(`${metricsBase}/v1/assets/USDC`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ error: "not_found", message: expect.any(String) });
    const post = await fetch(`${metricsBase}/metrics`, { method: "POST", body: "{}" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toMatch(/GET/);
    expect(await post.json()).toEqual({ error: "method_not_allowed", message: expect.any(String) });
  });

  it("does not take from the public rate-limit budget: 70 scrapes, then the public API still answers", async () => {
    for (let i = 0; i < 70; i++) {
      const res = await fetch(`${metricsBase}/metrics`);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    expect((await fetch(`${api}/v1/assets/USDT`)).status).toBe(200);
  }, 60_000);
});

describe("METRICS_HOST and METRICS_PORT", () => {
  const issues = (env: Record<string, string>): string[] => {
    try {
      parseConfig(env);
    } catch (e) {
      if (e instanceof ConfigError) return e.issues.map((i) => i.name);
      throw e;
    }
    return [];
  };

  it("take a host and a port 0-65535 other than PORT", () => {
    expect(parseConfig({ METRICS_HOST: "0.0.0.0", METRICS_PORT: "9100" })).toMatchObject({ metricsHost: "0.0.0.0", metricsPort: 9100 });
    expect(parseConfig({ METRICS_PORT: "0" }).metricsPort).toBe(0);
    for (const bad of ["-1", "65536", "x", "1.5"]) expect(issues({ METRICS_PORT: bad }), bad).toEqual(["METRICS_PORT"]);
    expect(issues({ METRICS_HOST: "not a host!" })).toEqual(["METRICS_HOST"]);
    expect(issues({ PORT: "9464" })).toEqual(["METRICS_PORT"]);
    expect(issues({ PORT: "9000", METRICS_PORT: "9000" })).toEqual(["METRICS_PORT"]);
  });
});
