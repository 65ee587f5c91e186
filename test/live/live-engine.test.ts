/**
 * FEED=live end to end against a loopback server that speaks the four sources' wire formats: live legs -> sample
 * assembly -> band machines. The discounts the engine computes are the ones the sources imply.
 */
import type { Subscription } from "rxjs";
import { afterEach, expect, it } from "vitest";
import { ActorHost, type StateEvent } from "../../src/actors/index.ts";
import { base58Decode, loadShippedCatalog } from "../../src/catalog/index.ts";
import { systemClock } from "../../src/clock.ts";
import { decimalToWire } from "../../src/methodology/index.ts";
import { assembleSamples } from "../../src/streams/sources/assembly.ts";
import { liveLegs } from "../../src/streams/sources/live/index.ts";
import { json, startServer, waitFor, type TestServer } from "./server.ts";

const catalog = loadShippedCatalog();
const assets = ["jitoSOL", "mSOL", "USDC"].map((s) => catalog.bySymbol(s)!);
const [JITO, MSOL] = assets as [(typeof assets)[number], (typeof assets)[number]];
const id = (feed: string) => catalog.pythFeeds.get(feed)!.slice(2);

let server: TestServer | undefined;
let sub: Subscription | undefined;
afterEach(async () => {
  sub?.unsubscribe();
  await server?.close();
});

function poolAccount(): string {
  const buf = Buffer.alloc(611);
  buf[0] = 1;
  Buffer.from(base58Decode(JITO.mint)).copy(buf, 162);
  buf.writeBigUInt64LE(12_500_000_000_000_000n, 258); // total lamports
  buf.writeBigUInt64LE(10_000_000_000_000_000n, 266); // pool tokens: rate 1.25
  buf.writeBigUInt64LE(800n, 274);
  return buf.toString("base64");
}

it("turns live source payloads into samples the engine evaluates", async () => {
  server = await startServer((req, res) => {
    const path = req.url.pathname;
    if (path.endsWith("/v2/updates/price/stream")) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = () => {
        const now = Math.floor(systemClock.now() / 1000);
        const parsed = [
          { id: id("SOL/USD"), price: { price: "15000000000", conf: "7500000", expo: -8, publish_time: now } },
          { id: id("USDC/USD"), price: { price: "99990000", conf: "20000", expo: -8, publish_time: now } },
        ].map((p) => ({ ...p, ema_price: p.price }));
        res.write(`data: ${JSON.stringify({ binary: { encoding: "base64", data: [] }, parsed })}\n\n`);
      };
      send();
      const t = setInterval(send, 200);
      res.on("close", () => clearInterval(t));
      return;
    }
    if (path.endsWith("/price/v3")) {
      // jitoSOL trades at 187.2 (rate 1.25 x 150 = 187.5: 16 bps below); mSOL at 193.5 (1.29 x 150: at par).
      return json(res, 200, `{"${JITO.mint}":{"usdPrice":187.2,"blockId":1,"decimals":9,"priceChange24h":0},"${MSOL.mint}":{"usdPrice":193.5,"blockId":1,"decimals":9,"priceChange24h":0}}`);
    }
    if (path.endsWith("/v1/sol-value/current")) {
      return json(res, 200, JSON.stringify({ solValues: { [MSOL.mint]: "1290000000" }, errs: {} }));
    }
    const call = JSON.parse(req.body) as { id: number; method: string };
    if (call.method === "getAccountInfo") {
      return json(res, 200, JSON.stringify({ jsonrpc: "2.0", id: call.id, result: { context: { slot: 1 }, value: { data: [poolAccount(), "base64"], owner: JITO.intrinsic["program"], lamports: 1, executable: false } } }));
    }
    return json(res, 200, JSON.stringify({ jsonrpc: "2.0", id: call.id, result: { context: { slot: 1 }, value: { amount: "5000000", decimals: 6, uiAmountString: "5" } } }));
  });
  const live = liveLegs(
    catalog,
    { pythHermesUrl: server.url, jupiterApiUrl: server.url, jupiterApiKey: null, sanctumApiUrl: server.url, solanaRpcUrl: `${server.url}/rpc` },
    systemClock,
    { assets, jupiter: { requestsPerMinute: 60_000, intervalMs: 200 }, sanctum: { requestsPerMinute: 60_000 }, solanaRpc: { requestsPerMinute: 60_000 } },
  );
  const host = new ActorHost({ assets, clock: systemClock, gitSha: "" });
  const seen = new Map<string, StateEvent>();
  host.events$.subscribe((e) => {
    if (e.kind === "state") seen.set(e.asset, e);
  });
  sub = assembleSamples(live.legs, { assets, catalog, clock: systemClock, throttleMs: 100 }).subscribe((s) => host.ingest(s));
  await waitFor(() => seen.size === 3, "a sample of every asset", 10_000);
  host.stop();

  const jito = seen.get("jitoSOL")!;
  expect(decimalToWire(jito.sample.intrinsic_sol!)).toBe("1.25");
  expect(decimalToWire(jito.sample.intrinsic_usd)).toBe("187.5");
  expect(decimalToWire(jito.discount_raw)).toBe("0.0016");
  expect(Object.keys(jito.sample.oracle)).toContain("SOL/USD");
  const msol = seen.get("mSOL")!;
  expect(decimalToWire(msol.discount_raw)).toBe("0");
  const usdc = seen.get("USDC")!;
  expect(decimalToWire(usdc.sample.market_usd)).toBe("0.9999");
  expect(usdc.confidence).toBe("high");
  expect(usdc.state).toBe("PEGGED");
});
