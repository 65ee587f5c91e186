import { createHash } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import { asset, NOW, SEC } from "./fixtures.ts";
import { harness, RELEASED_AT, type Harness } from "./helpers.ts";

type Obj = Record<string, unknown>;

let h: Harness;
beforeEach(() => {
  h = harness({ wsClients: () => 7 });
});

describe("GET /v1/alerts", () => {
  it("lists transitions newest first with receipt_url, labels and the wire forms", async () => {
    const body = (await h.get("/v1/alerts")).body as { ok: boolean; count: number; data: Obj[] };
    expect(body.count).toBe(h.rm.receipts.length);
    const times = body.data.map((r) => r.detected_at as string);
    expect([...times].sort().reverse()).toEqual(times);
    const premium = body.data.find((r) => r.to_state === "UNKNOWN")!;
    expect(premium).toMatchObject({
      asset: "jitoSOL",
      mint: asset("jitoSOL").mint,
      class: "lst",
      from_state: "PEGGED",
      state_reason: "premium_sanity",
      discount: "-0.15",
      discount_bps: -1500,
      dispatched_at: null,
      methodology_version: "1.0.0",
      receipt_url: `/v1/audit/${premium.id as string}`,
      monitoring_only: false,
      calibration: "calibrated",
    });
    // state_reason is omitted when null.
    expect(body.data.find((r) => r.to_state === "DEPEG")).not.toHaveProperty("state_reason");
    expect(h.rm.alertCalls.at(-1)).toEqual({ limit: 50, offset: 0 });
  });

  it("passes since, limit and offset through", async () => {
    const since = h.rm.alertList[2]!.detected_at;
    const body = (await h.get(`/v1/alerts?since=${new Date(since).toISOString()}&limit=2&offset=1`)).body as { count: number };
    expect(h.rm.alertCalls.at(-1)).toEqual({ since, limit: 2, offset: 1 });
    expect(body.count).toBe(2);
    await h.get("/v1/alerts?limit=500&offset=10000");
    await h.get("/v1/alerts?limit=1&offset=0");
  });

  it("400 invalid_query for out-of-range or malformed limit, offset and since", async () => {
    for (const q of ["limit=0", "limit=501", "limit=1.5", "limit=x", "offset=-1", "offset=10001", "offset=1e3", "since=2026-06-12", "since=now"]) {
      const a = await h.get(`/v1/alerts?${q}`, 400);
      expect((a.body as Obj).error, q).toBe("invalid_query");
    }
  });
});

describe("GET /v1/stats", () => {
  it("counts active assets by published state (stale and snapshot-less as UNKNOWN), transitions and delivery", async () => {
    const body = (await h.get("/v1/stats")).body as Obj;
    const active = h.rm.catalog.active.length;
    // Snapshots: USDC DRIFT, USDT stale -> UNKNOWN, jitoSOL PEGGED, hyUSD DRIFT, USD* PEGGED, USDY UNKNOWN, EURC PEGGED.
    const withSnapshot = 7;
    expect(body).toEqual({
      generated_at: new Date(NOW).toISOString(),
      assets_tracked: active,
      assets_by_state: { PEGGED: 3, DRIFT: 2, DEPEG: 0, CRITICAL: 0, BLACK_SWAN: 0, UNKNOWN: 2 + active - withSnapshot },
      alerts_24h: h.rm.receipts.length,
      transitions_by_state_24h: { PEGGED: 3, DRIFT: 2, DEPEG: 0, CRITICAL: 0, BLACK_SWAN: 0, UNKNOWN: 0 },
      last_sample_at: new Date(NOW - SEC).toISOString(),
      ws_clients: 7,
      delivery: {
        attempts_24h: 10,
        delivered_24h: 9,
        failed_24h: 1,
        dead_lettered_24h: 0,
        success_rate_24h: 0.9,
        p50_latency_ms_24h: 120,
        p95_latency_ms_24h: 480.5,
        pending: 0,
      },
    });
  });

  it("ws_clients is 0 without a counter", async () => {
    const plain = harness();
    expect(((await plain.get("/v1/stats")).body as Obj).ws_clients).toBe(0);
  });
});

describe("GET /v1/calibration", () => {
  it("one row per active asset: suggested_drift_bps = ceil(p99 x 1.25) exactly, noisy when p95 > drift", async () => {
    const body = (await h.get("/v1/calibration")).body as { count: number; data: Obj[] };
    expect(body.count).toBe(h.rm.catalog.active.length);
    const row = (s: string) => body.data.find((r) => r.asset === s)!;
    expect(row("USDC")).toEqual({
      asset: "USDC",
      class: "stable_fiat",
      calibration: "calibrated",
      monitoring_only: false,
      thresholds: { drift_bps: 15, depeg_bps: 50, critical_bps: 200 },
      days_covered: 8,
      p50_abs_bps_7d: 2,
      p95_abs_bps_7d: 16,
      p99_abs_bps_7d: 19,
      transitions_7d: 4,
      suggested_drift_bps: 24,
      status: "noisy",
    });
    expect(row("USDT")).toMatchObject({ suggested_drift_bps: 12, status: "ok" });
    expect(row("hyloSOL+")).toMatchObject({
      calibration: "provisional",
      monitoring_only: true,
      monitoring_reason: asset("hyloSOL+").monitoringReason,
      days_covered: 0,
      p99_abs_bps_7d: null,
      suggested_drift_bps: null,
      status: "ok",
    });
    expect(row("USDC")).not.toHaveProperty("monitoring_reason");
  });
});

describe("GET /v1/peg/feed", () => {
  it("one signal per active asset, methodology on the envelope, stale flags and receipt_url", async () => {
    const a = await h.get("/v1/peg/feed");
    const body = a.body as { ok: boolean; count: number; methodology: string; data: Obj[] };
    expect(body.methodology).toBe("1.0.0");
    expect(Object.keys(body)).toEqual(["ok", "generated_at", "count", "methodology", "data"]);
    expect(body.count).toBe(h.rm.catalog.active.length);
    const sig = (s: string) => body.data.find((r) => r.symbol === s)!;
    const lastUsdc = h.rm.alertList.filter((x) => x.asset === "USDC").sort((x, y) => y.detected_at - x.detected_at)[0]!;
    expect(sig("USDC")).toEqual({
      mint: asset("USDC").mint,
      symbol: "USDC",
      state: "DRIFT",
      discount: "0.003",
      intrinsic_usd: "1",
      market_usd: "0.997",
      risk_score: 35,
      market_cap: "997000.12",
      calibration: "calibrated",
      monitoring_only: false,
      stale: false,
      receipt_url: `/v1/audit/${lastUsdc.id}`,
      updated_at: new Date(NOW - 2 * SEC).toISOString(),
    });
    expect(sig("USDT")).toMatchObject({ state: "UNKNOWN", state_reason: "stale_source", stale: true, risk_score: null });
    expect(sig("hyloSOL+")).toMatchObject({ state: "UNKNOWN", stale: true, discount: null, updated_at: null, receipt_url: null, monitoring_only: true, calibration: "provisional" });
    expect(sig("USDC")).not.toHaveProperty("systemic");
  });

  it("strong ETag = quoted sha256 of the body; If-None-Match answers 304 with no body", async () => {
    const a = await h.get("/v1/peg/feed");
    const etag = a.headers["etag"]!;
    expect(etag).toBe(`"${createHash("sha256").update(a.text!, "utf8").digest("hex")}"`);
    expect(a.contentType).toMatch(/^application\/json/);
    // Unchanged content a second later: the same bytes and ETag.
    h.rm.clock.increment(SEC);
    const again = await h.get("/v1/peg/feed");
    expect(again.headers["etag"]).toBe(etag);
    expect(again.text).toBe(a.text);
    for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, "*"]) {
      const nm = await h.get("/v1/peg/feed", 304, { "if-none-match": inm });
      expect(nm.body).toBeUndefined();
      expect(nm.text).toBeUndefined();
      expect(nm.headers["etag"]).toBe(etag);
    }
    await h.get("/v1/peg/feed", 200, { "if-none-match": '"other"' });
    // A change in a signal moves the ETag.
    const usdc = asset("USDC").mint;
    h.rm.snapshotMap.set(usdc, { ...h.rm.snapshotMap.get(usdc)!, discount: "0.0031" });
    const changed = await h.get("/v1/peg/feed", 200, { "if-none-match": etag });
    expect(changed.headers["etag"]).not.toBe(etag);
    expect((changed.body as Obj).generated_at).toBe(new Date(NOW + SEC).toISOString());
  });
});

describe("GET /v1/methodology/current", () => {
  it("reports methodology 1.0.0 as active", async () => {
    const a = await h.get("/v1/methodology/current");
    expect(a.body).toEqual({
      version: "1.0.0",
      status: "active",
      git_tag: "methodology-v1.0.0",
      released_at: RELEASED_AT,
      status_reason: null,
      superseded_by: null,
    });
  });
});
