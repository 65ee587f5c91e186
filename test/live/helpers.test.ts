import { asyncScheduler } from "rxjs";
import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import {
  JsonNumber,
  RequestBudget,
  SIMULATED_IN_LIVE,
  SseDecoder,
  PayloadTooLargeError,
  MalformedPayloadError,
  backoffDelay,
  endpointUrl,
  liveCoverage,
  parseLosslessJson,
  parseRetryAfter,
} from "../../src/streams/sources/live/index.ts";

describe("SseDecoder", () => {
  it("dispatches on blank lines whatever the line ends and chunk boundaries", () => {
    const text = ': comment\r\ndata: {"a":\r\ndata: 1}\r\n\r\nevent: price\rdata:x\r\rid: 7\ndata\n\n';
    const whole = new SseDecoder().push(text);
    expect(whole).toEqual(['{"a":\n1}', "x", ""]);
    // Every split point, including between \r and \n, gives the same events.
    for (let cut = 0; cut <= text.length; cut++) {
      const d = new SseDecoder();
      expect([...d.push(text.slice(0, cut)), ...d.push(text.slice(cut))]).toEqual(whole);
    }
    // One character at a time.
    const d = new SseDecoder();
    expect([...text].flatMap((c) => d.push(c))).toEqual(whole);
  });

  it("keeps an unfinished event until its blank line, and caps its size", () => {
    const d = new SseDecoder(64);
    expect(d.push("data: half")).toEqual([]);
    expect(d.push(" done\n")).toEqual([]);
    expect(d.push("\n")).toEqual(["half done"]);
    expect(() => d.push(`data: ${"x".repeat(100)}`)).toThrow(PayloadTooLargeError);
    expect(d.push("data: fresh\n\n")).toEqual(["fresh"]);
  });
});

describe("parseLosslessJson", () => {
  it("keeps number text and decodes strings like JSON.parse", () => {
    const v = parseLosslessJson('{"p": 0.10000000000000000555, "e": -1.5E+3, "s": "a\\u00e9\\n", "l": [true, false, null], "o": {}}') as Record<string, unknown>;
    expect(v["p"]).toEqual(new JsonNumber("0.10000000000000000555"));
    expect(v["e"]).toEqual(new JsonNumber("-1.5E+3"));
    expect(v["s"]).toBe("a\u00e9\n");
    expect(v["l"]).toEqual([true, false, null]);
    expect(v["o"]).toEqual({});
  });

  it("refuses what JSON refuses", () => {
    for (const bad of ['{"a": 1', "01", "1.", '{"a" 1}', "[1,]", "{'a': 1}", "NaN", '"\u0001"', "1 2", "", '{"a": 1}}']) {
      expect(() => parseLosslessJson(bad), bad).toThrow(MalformedPayloadError);
    }
    expect(() => parseLosslessJson("[".repeat(100) + "]".repeat(100))).toThrow(/deeply/);
  });
});

describe("HTTP helpers", () => {
  it("parses Retry-After as seconds or an HTTP date", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:05 GMT", now)).toBe(5000);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("1.5", now)).toBeNull();
    expect(parseRetryAfter("soon", now)).toBeNull();
    expect(parseRetryAfter(null, now)).toBeNull();
  });

  it("backs off exponentially with jitter, capped", () => {
    const policy = { baseMs: 100, capMs: 1000 };
    expect([0, 1, 2, 3, 4, 10].map((n) => backoffDelay(n, policy, () => 0))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([0, 1, 2, 3, 4, 10].map((n) => backoffDelay(n, policy, () => 0.999999))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("builds URLs that keep the base URL's path and query", () => {
    expect(endpointUrl("https://h.example/base/?apiKey=k", "/v1/x", [["lst", "a"], ["lst", "b"]])).toBe("https://h.example/base/v1/x?apiKey=k&lst=a&lst=b");
    expect(endpointUrl("https://h.example", "/price/v3", [["ids", "a,b"]])).toBe("https://h.example/price/v3?ids=a%2Cb");
    expect(endpointUrl("https://h.example", "/v2/stream", [["ids[]", "0xab"]])).toBe("https://h.example/v2/stream?ids%5B%5D=0xab");
  });

  it("spaces requests by the budget and holds them after a 429", async () => {
    const budget = new RequestBudget({ perMinute: 1200 }, asyncScheduler); // one per 50 ms
    const signal = new AbortController().signal;
    const times: number[] = [];
    for (let i = 0; i < 4; i++) {
      await budget.take(signal);
      times.push(performance.now());
    }
    for (let i = 1; i < 4; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(45);
    budget.holdFor(200);
    const held = performance.now();
    await budget.take(signal);
    expect(performance.now() - held).toBeGreaterThanOrEqual(195);
    const aborted = new AbortController();
    aborted.abort();
    expect(await budget.take(aborted.signal)).toBe(false);
  });
});

describe("liveCoverage", () => {
  const catalog = loadShippedCatalog();
  const rows = new Map(liveCoverage(catalog, catalog.all).map((r) => [r.symbol, r]));

  it("marks stake pools, Sanctum LSTs, Pyth and Jupiter legs live and issuer-specific kinds simulated", () => {
    expect(rows.get("jitoSOL")).toMatchObject({ intrinsic: { mode: "live", source: "solana_rpc" }, market: { mode: "live", source: "jupiter" }, fullyLive: true });
    expect(rows.get("mSOL")).toMatchObject({ intrinsic: { mode: "live", source: "sanctum" }, fullyLive: true });
    expect(rows.get("USDC")).toMatchObject({ intrinsic: { mode: "constant" }, market: { mode: "live", source: "pyth" }, oracle: { mode: "live" } });
    expect(rows.get("USDY")).toMatchObject({ intrinsic: { mode: "live", source: "pyth" }, fullyLive: true });
    expect(rows.get("hyUSD")).toMatchObject({ intrinsic: { kind: "hylo_cr", mode: "simulated" }, fullyLive: false });
    expect(rows.get("sUSD")).toMatchObject({ intrinsic: { mode: "simulated" }, market: { kind: "dex_screener_usd", mode: "simulated" } });
    expect(rows.get("JupSOL")!.oracle).toBeNull();
  });

  it("documents every simulated kind the catalog uses", () => {
    for (const r of rows.values()) {
      for (const leg of [r.intrinsic, r.market]) if (leg.mode === "simulated") expect(SIMULATED_IN_LIVE, leg.kind).toHaveProperty(leg.kind);
    }
  });
});
