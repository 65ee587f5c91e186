import { beforeEach, describe, expect, it } from "vitest";
import { ASSET_LIST_TTL_MS } from "../../src/http/routes/index.ts";
import { asset, MIN, NOW, SEC } from "./fixtures.ts";
import { harness, type Harness } from "./helpers.ts";

type Card = Record<string, unknown>;

let h: Harness;
beforeEach(() => {
  h = harness();
});

const card = async (symbol: string): Promise<Card> => (await h.get(`/v1/assets/${encodeURIComponent(symbol)}`)).body as Card;

describe("GET /v1/assets", () => {
  it("lists every active asset (monitoring-only included, inactive excluded) in a list envelope", async () => {
    const a = await h.get("/v1/assets");
    const body = a.body as { ok: boolean; generated_at: string; count: number; data: Card[] };
    expect(body.ok).toBe(true);
    expect(body.generated_at).toBe(new Date(NOW).toISOString());
    expect(body.count).toBe(h.rm.catalog.active.length);
    expect(body.data.map((c) => c.symbol)).toEqual(h.rm.catalog.active.map((x) => x.symbol));
    expect(body.data.some((c) => c.symbol === "BRZ")).toBe(false);
    expect(body.data.find((c) => c.symbol === "hyloSOL+")?.monitoring_only).toBe(true);
    // List rows carry series_24h but never the detail-only oracle annotation.
    expect(body.data.find((c) => c.symbol === "USDC")?.series_24h).toHaveLength(24);
    expect(body.data.every((c) => !("oracle_degraded" in c))).toBe(true);
  });

  it("filters by exact class; an unknown class is 200 with no rows", async () => {
    const lst = (await h.get("/v1/assets?class=lst")).body as { count: number; data: Card[] };
    expect(lst.count).toBe(h.rm.catalog.active.filter((a) => a.class === "lst").length);
    expect(lst.data.every((c) => c.class === "lst")).toBe(true);
    for (const q of ["class=LST", "class=nope", "class="]) {
      const none = (await h.get(`/v1/assets?${q}`)).body as { count: number; data: Card[] };
      expect(none).toMatchObject({ ok: true, count: 0, data: [] });
    }
  });

  it("filters by published state with peg (after the staleness collapse); a bad value is 400 invalid_query", async () => {
    const drift = (await h.get("/v1/assets?peg=DRIFT")).body as { data: Card[] };
    expect(drift.data.map((c) => c.symbol).sort()).toEqual(["USDC", "hyUSD"]);
    const unknown = (await h.get("/v1/assets?peg=UNKNOWN")).body as { data: Card[] };
    expect(unknown.data.map((c) => c.symbol).sort()).toEqual(["USDT", "USDY"]);
    const both = (await h.get("/v1/assets?peg=DRIFT&class=cdp")).body as { count: number };
    expect(both.count).toBe(0);
    for (const q of ["peg=drift", "peg=STALE", "peg=DRIFT&peg=PEGGED"]) {
      const bad = await h.get(`/v1/assets?${q}`, 400);
      expect((bad.body as Card).error).toBe("invalid_query");
    }
  });

  it("is memoised for 5 s on the injected clock", async () => {
    const first = (await h.get("/v1/assets?class=stable_fiat")).body as { data: Card[] };
    expect(first.data.find((c) => c.symbol === "USDC")?.discount).toBe("0.003");
    const usdc = asset("USDC").mint;
    h.rm.snapshotMap.set(usdc, { ...h.rm.snapshotMap.get(usdc)!, discount: "0.004" });
    h.rm.clock.increment(ASSET_LIST_TTL_MS - 1);
    const cached = (await h.get("/v1/assets")).body as { generated_at: string; data: Card[] };
    expect(cached.generated_at).toBe(new Date(NOW).toISOString());
    expect(cached.data.find((c) => c.symbol === "USDC")?.discount).toBe("0.003");
    h.rm.clock.increment(1);
    const fresh = (await h.get("/v1/assets")).body as { generated_at: string; data: Card[] };
    expect(fresh.generated_at).toBe(new Date(NOW + ASSET_LIST_TTL_MS).toISOString());
    expect(fresh.data.find((c) => c.symbol === "USDC")?.discount).toBe("0.004");
  });
});

describe("GET /v1/assets/{symbol}", () => {
  it("serves a fresh card with exact decimals, risk_score, sustained, duration, confidence, market_cap, 24 h figures and oracle_degraded", async () => {
    const c = await card("USDC");
    expect(c).toMatchObject({
      symbol: "USDC",
      name: asset("USDC").name,
      mint: asset("USDC").mint,
      class: "stable_fiat",
      anchor: "USD",
      peg_target: "USD",
      decimals: 6,
      monitoring_only: false,
      calibration: "calibrated",
      risk_side: "below",
      state: "DRIFT",
      discount: "0.003",
      intrinsic_usd: "1",
      market_usd: "0.997",
      sustained: true,
      current_state_duration_secs: 1000,
      confidence: "high",
      circulating_supply: "1000000.123456",
      market_cap: "997000.12",
      jitter_bps_24h: "0.0042",
      worst_abs_24h: "0.0051",
      thresholds: { drift_bps: 15, depeg_bps: 50, critical_bps: 200 },
      oracle_degraded: { reason: "oracle_divergence", age_secs: 5, conf_bps: 2, spread_bps: 30 },
      updated_at: new Date(NOW - 2 * SEC).toISOString(),
    });
    // DRIFT [15, 50) -> 25..49: 30 bps is 15/35 of the way: 25 + floor(24 x 15/35) = 35.
    expect(c.risk_score).toBe(35);
    expect(c.series_24h).toEqual([null, null, ...Array.from({ length: 22 }, (_, i) => Number((0.0001 * (i + 2)).toFixed(8)))]);
    for (const k of ["state_reason", "sol_per_lst", "monitoring_reason", "monitoring_since"]) expect(c).not.toHaveProperty(k);
    expect(Object.keys(c).at(-1)).toBe("updated_at");
  });

  it("collapses a snapshot older than 15 minutes to UNKNOWN / stale_source with no risk_score or confidence", async () => {
    const c = await card("USDT");
    expect(c).toMatchObject({ state: "UNKNOWN", state_reason: "stale_source", risk_score: null, sustained: false });
    expect(c).not.toHaveProperty("confidence");
    // The last values stay visible, dated by updated_at.
    expect(c.discount).toBe("0.002");
    expect(c.updated_at).toBe(new Date(NOW - 16 * MIN).toISOString());
  });

  it("collapses exactly after 15 minutes, not at 15 minutes", async () => {
    const usdt = asset("USDT").mint;
    h.rm.snapshotMap.set(usdt, { ...h.rm.snapshotMap.get(usdt)!, updated_at: NOW - 15 * MIN });
    expect((await card("USDT")).state).toBe("DRIFT");
    h.rm.clock.increment(1);
    expect((await card("USDT")).state).toBe("UNKNOWN");
  });

  it("an asset without a snapshot: null fields present, omitted fields absent", async () => {
    const c = await card("hyloSOL+");
    expect(c).toMatchObject({
      symbol: "hyloSOL+",
      class: "lst",
      anchor: "NAV",
      risk_side: "either",
      monitoring_only: true,
      calibration: "provisional",
      state: null,
      discount: null,
      intrinsic_usd: null,
      market_usd: null,
      risk_score: null,
      circulating_supply: null,
      market_cap: null,
      sol_per_lst: null,
      series_24h: null,
      updated_at: null,
      monitoring_reason: asset("hyloSOL+").monitoringReason,
      monitoring_since: asset("hyloSOL+").monitoringSince,
    });
    for (const k of ["state_reason", "sustained", "current_state_duration_secs", "confidence", "jitter_bps_24h", "worst_abs_24h", "oracle_degraded"]) {
      expect(c, k).not.toHaveProperty(k);
    }
  });

  it("an LST carries sol_per_lst and scores a premium as 0; no committed_since means no sustained or duration", async () => {
    const c = await card("jitoSOL");
    expect(c).toMatchObject({ state: "PEGGED", sol_per_lst: "1.2345", risk_score: 0, confidence: "medium", discount: "-0.0012" });
    expect(c).not.toHaveProperty("sustained");
    expect(c).not.toHaveProperty("current_state_duration_secs");
    // jitoSOL has an oracle_feed_id but no joined cross-check entry: no annotation.
    expect(c).not.toHaveProperty("oracle_degraded");
  });

  it("the collateral-ratio asset has risk_score null and its thresholds in CR form", async () => {
    const c = await card("hyUSD");
    expect(c).toMatchObject({
      state: "DRIFT",
      risk_score: null,
      sustained: false,
      current_state_duration_secs: 60,
      thresholds: { cr_drift: 130, cr_depeg: 115, cr_critical: 105, cr_black_swan: 100 },
    });
    expect(c).not.toHaveProperty("sol_per_lst");
  });

  it("oracle_degraded: omitted under the oracle-confidence gate; stale and wide reasons worst first", async () => {
    const usdy = await card("USDY");
    expect(usdy.state).toBe("UNKNOWN");
    expect(usdy).not.toHaveProperty("oracle_degraded");
    expect(usdy).not.toHaveProperty("state_reason");
    expect(usdy.risk_score).toBeNull();
    // EURC: 200 bps confidence and a 120 s old publish (staleness 30 s): confidence_wide wins over stale.
    const eurc = await card("EURC");
    expect(eurc.oracle_degraded).toEqual({ reason: "oracle_confidence_wide", age_secs: 120, conf_bps: 200, spread_bps: 0 });
    const mint = asset("EURC").mint;
    const s = h.rm.snapshotMap.get(mint)!;
    h.rm.snapshotMap.set(mint, { ...s, oracle: { "EURC/USD": { price: "1.08", conf: "0.0001", publish_time: NOW - 2 * MIN } } });
    expect((await card("EURC")).oracle_degraded).toEqual({ reason: "oracle_stale", age_secs: 120, conf_bps: 0, spread_bps: 0 });
    h.rm.snapshotMap.set(mint, { ...s, market_usd: "0", oracle: { "EURC/USD": { price: "1.08", conf: "0.0001", publish_time: NOW - 2 * MIN } } });
    expect((await card("EURC")).oracle_degraded).toEqual({ reason: "oracle_stale", age_secs: 120, conf_bps: 0, spread_bps: null });
    h.rm.snapshotMap.set(mint, { ...s, oracle: { "EURC/USD": { price: "1.08", conf: "0.0001", publish_time: NOW - SEC } } });
    expect(await card("EURC")).not.toHaveProperty("oracle_degraded");
  });

  it("decodes percent-encoded symbols (USD*, hyloSOL+)", async () => {
    const star = await h.get("/v1/assets/USD%2A");
    expect((star.body as Card).symbol).toBe("USD*");
    expect((star.body as Card).market_cap).toBe("5203.92");
    const plus = await h.get("/v1/assets/hyloSOL%2B");
    expect((plus.body as Card).symbol).toBe("hyloSOL+");
    expect(((await h.get("/v1/assets/USD*")).body as Card).symbol).toBe("USD*");
  });

  it("an unknown, wrong-case or inactive symbol is 404 asset_not_found naming it", async () => {
    for (const [path, sym] of [
      ["/v1/assets/usdc", "usdc"],
      ["/v1/assets/NOPE", "NOPE"],
      ["/v1/assets/BRZ", "BRZ"],
      ["/v1/assets/hylosol%2B", "hylosol+"],
    ] as const) {
      const a = await h.get(path, 404);
      expect(a.body).toMatchObject({ error: "asset_not_found", asset: sym });
    }
  });

  it("a malformed percent-encoding is 400 invalid_query", async () => {
    const a = await h.get("/v1/assets/%E0%A4%A", 400);
    expect((a.body as Card).error).toBe("invalid_query");
  });
});

describe("GET /v1/assets/by-mint/{mint}", () => {
  it("serves the same detail card as by symbol", async () => {
    const byMint = (await h.get(`/v1/assets/by-mint/${asset("USDC").mint}`)).body;
    expect(byMint).toEqual(await card("USDC"));
  });

  it("404 asset_not_found when no active asset has the mint", async () => {
    const inactive = await h.get(`/v1/assets/by-mint/${asset("BRZ").mint}`, 404);
    expect(inactive.body).toMatchObject({ error: "asset_not_found", asset: "BRZ" });
    const unknown = await h.get("/v1/assets/by-mint/11111111111111111111111111111111", 404);
    expect(unknown.body).toMatchObject({ error: "asset_not_found" });
    expect(unknown.body).not.toHaveProperty("asset");
  });
});

describe("GET /v1/assets/{symbol}/state", () => {
  it("serves the state object", async () => {
    const a = await h.get("/v1/assets/USDC/state");
    expect(a.body).toEqual({
      asset: "USDC",
      state: "DRIFT",
      since: new Date(NOW - 1000 * SEC).toISOString(),
      discount: "0.003",
      risk_score: 35,
      intrinsic_usd: "1",
      market_usd: "0.997",
    });
  });

  it("a stale snapshot is UNKNOWN since it went stale", async () => {
    const a = await h.get("/v1/assets/USDT/state");
    expect(a.body).toMatchObject({ asset: "USDT", state: "UNKNOWN", since: new Date(NOW - MIN).toISOString(), risk_score: null });
  });

  it("404 for an unknown asset (asset_not_found) and for no snapshot yet (not_found with asset)", async () => {
    expect((await h.get("/v1/assets/NOPE/state", 404)).body).toMatchObject({ error: "asset_not_found", asset: "NOPE" });
    expect((await h.get("/v1/assets/hyloSOL%2B/state", 404)).body).toMatchObject({ error: "not_found", asset: "hyloSOL+" });
  });
});

describe("GET /v1/assets/{symbol}/history", () => {
  it("defaults to 1m rows over the last 24 h, limit 500, newest first", async () => {
    const a = await h.get("/v1/assets/USDC/history");
    const body = a.body as { count: number; data: Card[] };
    expect(body.count).toBe(2);
    expect(body.data[0]).toEqual({
      ts: new Date(NOW - MIN).toISOString(),
      discount: "0.0029",
      min_discount: "0.0021",
      max_discount: "0.0035",
      samples: 60,
      state: "DRIFT",
      discount_raw: null,
    });
    expect(h.rm.historyCalls.at(-1)).toEqual({ mint: asset("USDC").mint, q: { bucket: "1m", from: NOW - 86_400_000, to: NOW, limit: 500 } });
  });

  it("serves raw rows with from/to and clamps limit to 1..5000", async () => {
    const from = "2026-06-12T11:00:00Z";
    const to = "2026-06-12T13:00:00+01:00";
    const a = await h.get(`/v1/assets/USDC/history?bucket=raw&from=${from}&to=${encodeURIComponent(to)}&limit=99999`);
    const body = a.body as { data: Card[] };
    expect(body.data[0]).toEqual({
      ts: new Date(NOW).toISOString(),
      discount: "0.003",
      discount_raw: "0.003",
      state: "DRIFT",
      market_usd: "0.997",
      intrinsic_usd: "1",
    });
    expect(h.rm.historyCalls.at(-1)?.q).toEqual({ bucket: "raw", from: NOW - 3_600_000, to: NOW, limit: 5000 });
    await h.get("/v1/assets/USDC/history?limit=0");
    expect(h.rm.historyCalls.at(-1)?.q.limit).toBe(1);
    await h.get("/v1/assets/USDC/history?limit=-5");
    expect(h.rm.historyCalls.at(-1)?.q.limit).toBe(1);
    // An unencoded "+01:00" arrives as " 01:00" after form decoding: still read as the offset.
    await h.get("/v1/assets/USDC/history?to=2026-06-12T13:00:00+01:00");
    expect(h.rm.historyCalls.at(-1)?.q.to).toBe(NOW);
    // Only `to`: the window is the 24 h before it.
    await h.get(`/v1/assets/USDC/history?to=${from}`);
    expect(h.rm.historyCalls.at(-1)?.q).toMatchObject({ from: NOW - 3_600_000 - 86_400_000, to: NOW - 3_600_000 });
  });

  it("400 invalid_query for a bad bucket, a non-integer limit, a malformed timestamp or from after to", async () => {
    for (const q of [
      "bucket=5m",
      "bucket=RAW",
      "limit=1.5",
      "limit=abc",
      "limit=",
      "from=yesterday",
      "to=2026-02-30T00:00:00Z",
      "from=2026-06-12T12:00:00Z&to=2026-06-12T11:00:00Z",
    ]) {
      const a = await h.get(`/v1/assets/USDC/history?${q}`, 400);
      expect((a.body as Card).error, q).toBe("invalid_query");
    }
  });

  it("a window older than what is kept: the empty list, with the reason and the oldest instant kept in headers", async () => {
    const calls = h.rm.historyCalls.length;
    const iso = (ms: number) => new Date(ms).toISOString();
    const raw = await h.get(`/v1/assets/USDC/history?bucket=raw&to=${iso(NOW - 7 * 86_400_000 - 1)}`);
    expect(raw.body).toMatchObject({ count: 0, data: [] });
    expect(raw.headers["x-history-kept-from"]).toBe(iso(NOW - 7 * 86_400_000));
    expect(raw.headers["x-history-reason"]).toBe(`bucket=raw history is kept for 7 days: this window ends before ${iso(NOW - 7 * 86_400_000)}; bucket=1m keeps 90 days`);
    const minutes = await h.get(`/v1/assets/USDC/history?bucket=1m&to=${iso(NOW - 90 * 86_400_000 - 1)}`);
    expect(minutes.headers["x-history-reason"]).toContain("kept for 90 days");
    expect(h.rm.historyCalls.length).toBe(calls);
    // A window that reaches into what is kept is read as before; starting earlier, it says from when rows are kept.
    const part = await h.get(`/v1/assets/USDC/history?bucket=raw&from=${iso(NOW - 30 * 86_400_000)}&to=${iso(NOW - 7 * 86_400_000)}`);
    expect(part.headers["x-history-kept-from"]).toBe(iso(NOW - 7 * 86_400_000));
    expect(part.headers["x-history-reason"]).toBeUndefined();
    const recent = await h.get("/v1/assets/USDC/history");
    expect(recent.headers["x-history-kept-from"]).toBeUndefined();
    expect(h.rm.historyCalls.length).toBe(calls + 2);
  });

  it("404 asset_not_found for an unknown asset", async () => {
    expect((await h.get("/v1/assets/usdc/history", 404)).body).toMatchObject({ error: "asset_not_found", asset: "usdc" });
  });
});
