import type { Subscription } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import { base58Decode, loadShippedCatalog } from "../../src/catalog/index.ts";
import { systemClock } from "../../src/clock.ts";
import type { SourcesConfig } from "../../src/config.ts";
import { decimalToWire } from "../../src/methodology/index.ts";
import type { Leg } from "../../src/streams/sources/legs.ts";
import { liveLegs } from "../../src/streams/sources/live/index.ts";
import { json, startServer, waitFor, type TestServer } from "./server.ts";

const catalog = loadShippedCatalog();
const assets = ["jitoSOL", "mSOL", "USDC", "hyUSD"].map((s) => catalog.bySymbol(s)!);
const [JITO, MSOL, USDC, HYUSD] = assets as [(typeof assets)[number], (typeof assets)[number], (typeof assets)[number], (typeof assets)[number]];
const SOL_ID = catalog.pythFeeds.get("SOL/USD")!.slice(2);

let server: TestServer | undefined;
let sub: Subscription | undefined;
afterEach(async () => {
  sub?.unsubscribe();
  await server?.close();
  sub = server = undefined;
});

function poolAccount(): string {
  const buf = Buffer.alloc(611);
  buf[0] = 1;
  Buffer.from(base58Decode(JITO.mint)).copy(buf, 162);
  buf.writeBigUInt64LE(15_000_000_000_000_000n, 258);
  buf.writeBigUInt64LE(12_000_000_000_000_000n, 266);
  buf.writeBigUInt64LE(800n, 274);
  return buf.toString("base64");
}

describe("liveLegs", () => {
  it("runs every adapter from SourcesConfig and merges their legs, with stats per source", async () => {
    server = await startServer((req, res) => {
      const path = req.url.pathname;
      if (path.endsWith("/v2/updates/price/stream")) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const price = { price: "14523000000", conf: "4500000", expo: -8, publish_time: 1_750_000_000 };
        res.write(`data: ${JSON.stringify({ binary: { encoding: "base64", data: [] }, parsed: [{ id: SOL_ID, price, ema_price: price }] })}\n\n`);
        return;
      }
      if (path.endsWith("/price/v3")) {
        expect(req.headers["x-api-key"]).toBe("jup-key");
        const ids = req.url.searchParams.get("ids")!.split(",");
        return json(res, 200, `{${ids.map((m) => `"${m}":{"usdPrice":1.0001,"blockId":1,"decimals":6,"priceChange24h":0}`).join(",")}}`);
      }
      if (path.endsWith("/v1/sol-value/current")) {
        return json(res, 200, JSON.stringify({ solValues: Object.fromEntries(req.url.searchParams.getAll("lst").map((m) => [m, "1290000000"])), errs: {} }));
      }
      const call = JSON.parse(req.body) as { id: number; method: string; params: [string] };
      if (call.method === "getAccountInfo") {
        return json(res, 200, JSON.stringify({ jsonrpc: "2.0", id: call.id, result: { context: { slot: 1 }, value: { data: [poolAccount(), "base64"], owner: JITO.intrinsic["program"], lamports: 1, executable: false } } }));
      }
      return json(res, 200, JSON.stringify({ jsonrpc: "2.0", id: call.id, result: { context: { slot: 1 }, value: { amount: "5000000", decimals: 6, uiAmountString: "5" } } }));
    });
    const sources: SourcesConfig = {
      pythHermesUrl: server.url,
      jupiterApiUrl: server.url,
      jupiterApiKey: "jup-key",
      sanctumApiUrl: `${server.url}/sanctum`,
      solanaRpcUrl: `${server.url}/rpc`,
    };
    const live = liveLegs(catalog, sources, systemClock, {
      assets,
      jupiter: { requestsPerMinute: 60_000 },
      sanctum: { requestsPerMinute: 60_000 },
      solanaRpc: { requestsPerMinute: 60_000 },
    });
    expect(live.running).toEqual(["pyth", "jupiter", "sanctum", "solana_rpc"]);
    expect(live.coverage.find((c) => c.symbol === "hyUSD")).toMatchObject({ fullyLive: false, intrinsic: { mode: "simulated" } });

    const legs: Leg[] = [];
    sub = live.legs.subscribe((l) => legs.push(l));
    const has = (pred: (l: Leg) => boolean) => legs.some(pred);
    await waitFor(
      () =>
        has((l) => l.kind === "pyth" && l.feed === "SOL/USD") &&
        legs.filter((l) => l.kind === "market_usd").length === 3 &&
        has((l) => l.kind === "sol_per_lst" && l.source === "sanctum") &&
        has((l) => l.kind === "sol_per_lst" && l.source === "solana_rpc") &&
        legs.filter((l) => l.kind === "supply").length === 4,
      "a leg of every kind",
    );
    const text = (l: Leg | undefined): string => {
      if (l === undefined) return "none";
      if (l.kind === "pyth") return `${l.feed} ${decimalToWire(l.price)}`;
      if (l.kind === "sol_per_lst") return `${l.mint === JITO.mint ? "jitoSOL" : "mSOL"} ${decimalToWire(l.sol)} ${l.source}${l.epoch === undefined ? "" : ` @${l.epoch}`}`;
      if (l.kind === "supply") return `supply ${decimalToWire(l.supply)}`;
      return l.kind === "market_usd" ? `market ${decimalToWire(l.price)}` : l.kind;
    };
    expect(text(legs.find((l) => l.kind === "pyth" && l.feed === "SOL/USD"))).toBe("SOL/USD 145.23");
    expect(text(legs.find((l) => l.kind === "sol_per_lst" && l.source === "solana_rpc"))).toBe("jitoSOL 1.25 solana_rpc @800");
    expect(text(legs.find((l) => l.kind === "sol_per_lst" && l.source === "sanctum"))).toBe("mSOL 1.29 sanctum");
    expect(text(legs.find((l) => l.kind === "supply" && l.mint === USDC.mint))).toBe("supply 5");
    // USDC's market is pyth_spot: Jupiter prices only the jupiter_usd markets.
    expect(legs.filter((l) => l.kind === "market_usd").map((l) => (l.kind === "market_usd" ? l.mint : "")).sort()).toEqual(
      [JITO.mint, MSOL.mint, HYUSD.mint].sort(),
    );
    expect(text(legs.find((l) => l.kind === "market_usd"))).toBe("market 1.0001");
    const stats = live.stats();
    expect(Object.keys(stats).sort()).toEqual(["jupiter", "pyth", "sanctum", "solana_rpc"]);
    for (const s of Object.values(stats)) expect(s).toMatchObject({ malformed: 0, errors: 0 });
    expect(stats.pyth.received).toBeGreaterThanOrEqual(1);
    expect(server.requests.some((r) => r.url.pathname === "/sanctum/v1/sol-value/current")).toBe(true);
    expect(server.requests.some((r) => r.url.pathname === "/rpc" && r.method === "POST")).toBe(true);
  });
});
