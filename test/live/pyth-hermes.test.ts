import { performance } from "node:perf_hooks";
import type { ServerResponse } from "node:http";
import type { Subscription } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { systemClock } from "../../src/clock.ts";
import { decimalToWire } from "../../src/methodology/index.ts";
import type { Leg } from "../../src/streams/sources/legs.ts";
import { SourceCounters, parseHermesEvent, feedNamesById, pythFeedsOf, pythHermesStream } from "../../src/streams/sources/live/index.ts";
import { delay, recordingLog, startServer, waitFor, type TestServer } from "./server.ts";

const SOL_ID = "ef0d8b6fda2ceba41da15d4095d1da392a0d2f8ed0c6c7bc0f4cfac8c280b56d";
const USDC_ID = "eaa020c61cc479712813461ce153894a96a6c00b21ed0cfc2798d1f9a9e9c94a";
const UNKNOWN_ID = "11".repeat(32);

const feeds = new Map([
  ["SOL/USD", `0x${SOL_ID}`],
  ["USDC/USD", `0x${USDC_ID}`],
  ["USDC-cross/USD", `0x${USDC_ID}`],
]);

function item(id: string, price: string, conf: string, expo: number, publishTime: number): Record<string, unknown> {
  const p = { price, conf, expo, publish_time: publishTime };
  return { id, price: p, ema_price: p, metadata: { slot: 1, proof_available_time: publishTime, prev_publish_time: publishTime - 1 } };
}

/** One SSE event in Hermes' shape (`parsed` plus the binary update we ignore). */
function event(...items: Record<string, unknown>[]): string {
  return `data: ${JSON.stringify({ binary: { encoding: "base64", data: ["UE5BVQ=="] }, parsed: items })}\n\n`;
}

function openStream(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
}

const view = (legs: Leg[]) =>
  legs.map((l) => (l.kind === "pyth" ? `${l.feed} ${decimalToWire(l.price)} ±${decimalToWire(l.conf)} @${l.observed_at}` : l.kind));

let server: TestServer | undefined;
let sub: Subscription | undefined;
afterEach(async () => {
  sub?.unsubscribe();
  await server?.close();
  sub = server = undefined;
});

describe("pythHermesStream against a loopback Hermes", () => {
  it("scales exactly, survives a malformed event, a split event, a server disconnect and an idle connection", async () => {
    const idleSince: number[] = [];
    server = await startServer(async (req, res) => {
      expect(req.url.pathname).toBe("/v2/updates/price/stream");
      if (req.n === 0) {
        openStream(res);
        res.write(": keep-alive comment\n\n");
        res.write(event(item(SOL_ID, "15012345678", "7512345", -8, 1_700_000_000)));
        res.write("data: {\"parsed\": [oops\n\n"); // not JSON: dropped, stream continues
        res.write(
          event(
            item(UNKNOWN_ID, "1", "1", 0, 1_700_000_001), // unknown id: dropped
            item(SOL_ID, "1.5", "1", -8, 1_700_000_001), // not an integer string: dropped
            item(USDC_ID, "99990000", "1000", -8, 1_700_000_002),
          ),
        );
        // One event cut mid-line, with CRLF line ends split between \r and \n across TCP writes.
        const split = event(item(`0x${SOL_ID.toUpperCase()}`, "-123", "0", 2, 1_700_000_003)).replace(/\n/g, "\r\n");
        const cut = split.indexOf("\r\n") + 1;
        res.write(split.slice(0, 40));
        await delay(30);
        res.write(split.slice(40, cut));
        await delay(30);
        res.write(split.slice(cut));
        await delay(30);
        res.socket?.destroy(); // server-side disconnect mid-stream
      } else if (req.n === 1) {
        openStream(res);
        res.write(event(item(SOL_ID, "15100000000", "1", -8, 1_700_000_010)));
        idleSince.push(performance.now());
        // ...then silence: the client must give up on this connection by itself.
      } else {
        openStream(res);
        res.write(event(item(SOL_ID, "15200000000", "2", -8, 1_700_000_020)));
      }
    });
    const counters = new SourceCounters();
    const { log, lines } = recordingLog();
    const legs: Leg[] = [];
    sub = pythHermesStream({
      baseUrl: server.url,
      feeds,
      clock: systemClock,
      counters,
      log,
      idleMs: 400,
      backoff: { baseMs: 20, capMs: 100 },
    }).subscribe((l) => legs.push(l));

    await waitFor(() => legs.length >= 6, "legs from the third connection");
    const reconnectedAt = server.requests[2]!.at;
    expect(reconnectedAt - idleSince[0]!).toBeGreaterThanOrEqual(390);
    expect(reconnectedAt - idleSince[0]!).toBeLessThan(2000);

    expect(view(legs)).toEqual([
      "SOL/USD 150.12345678 ±0.07512345 @1700000000000",
      "USDC/USD 0.9999 ±0.00001 @1700000002000",
      "USDC-cross/USD 0.9999 ±0.00001 @1700000002000",
      "SOL/USD -12300 ±0 @1700000003000",
      "SOL/USD 151 ±0.00000001 @1700000010000",
      "SOL/USD 152 ±0.00000002 @1700000020000",
    ]);
    expect(counters.snapshot()).toEqual({ received: 5, malformed: 3, errors: 2, retries: 2, omitted: 0 });
    expect(lines.some((l) => l.msg === "event stream idle, treating it as dead")).toBe(true);
    expect(lines.filter((l) => l.msg.startsWith("malformed")).length).toBe(3);

    const q = server.requests[0]!.url.searchParams;
    expect(q.getAll("ids[]").sort()).toEqual([`0x${SOL_ID}`, `0x${USDC_ID}`].sort());
    expect(q.get("parsed")).toBe("true");
    expect(server.requests[0]!.headers["accept"]).toBe("text/event-stream");
  });

  it("waits a 429's Retry-After before reconnecting", async () => {
    server = await startServer((req, res) => {
      if (req.n === 0) {
        res.writeHead(429, { "retry-after": "1" });
        res.end("too many requests");
        return;
      }
      openStream(res);
      res.write(event(item(SOL_ID, "100", "1", 0, 1_700_000_000)));
    });
    const counters = new SourceCounters();
    const legs: Leg[] = [];
    sub = pythHermesStream({ baseUrl: server.url, feeds, clock: systemClock, counters, backoff: { baseMs: 10, capMs: 20 } }).subscribe((l) =>
      legs.push(l),
    );
    await waitFor(() => legs.length === 1, "a leg after the 429", 4000);
    expect(server.requests[1]!.at - server.requests[0]!.at).toBeGreaterThanOrEqual(950);
    expect(counters.snapshot()).toMatchObject({ received: 1, errors: 1, retries: 1 });
  });

  it("stops reading and reconnecting once unsubscribed", async () => {
    server = await startServer((_req, res) => {
      openStream(res);
      res.write(event(item(SOL_ID, "100", "1", 0, 1_700_000_000)));
    });
    const legs: Leg[] = [];
    sub = pythHermesStream({ baseUrl: server.url, feeds, clock: systemClock, idleMs: 100, backoff: { baseMs: 10, capMs: 20 } }).subscribe((l) =>
      legs.push(l),
    );
    await waitFor(() => legs.length === 1, "first leg");
    sub.unsubscribe();
    await delay(300);
    expect(server.requests.length).toBe(1);
  });
});

describe("Hermes feed naming and parsing", () => {
  it("subscribes every catalog feed plus each asset's cross-check feed as <SYMBOL>/USD", () => {
    const catalog = loadShippedCatalog();
    const feedsOf = pythFeedsOf(catalog);
    for (const [name, id] of catalog.pythFeeds) expect(feedsOf.get(name)).toBe(id);
    const jito = catalog.bySymbol("jitoSOL")!;
    expect(feedsOf.get("jitoSOL/USD")).toBe(jito.oracleFeedId);
    // A feed id shared by two names yields one leg per name.
    const byId = feedNamesById(feedsOf);
    const usdc = catalog.bySymbol("USDC")!;
    expect(byId.get(usdc.oracleFeedId!.slice(2).toLowerCase())).toContain("USDC/USD");
  });

  it("reports each bad item and keeps the good ones", () => {
    const byId = feedNamesById(feeds);
    const bad = [
      { id: SOL_ID },
      { id: SOL_ID, price: { price: "1", conf: "-1", expo: -8, publish_time: 1 } },
      { id: SOL_ID, price: { price: "1", conf: "1", expo: 1.5, publish_time: 1 } },
      { id: SOL_ID, price: { price: "1", conf: "1", expo: -8, publish_time: "1" } },
      { id: "xyz", price: { price: "1", conf: "1", expo: -8, publish_time: 1 } },
      7,
    ];
    const good = item(SOL_ID, "42", "1", -1, 5);
    const { legs, problems } = parseHermesEvent(JSON.stringify({ parsed: [...bad, good] }), byId);
    expect(problems).toHaveLength(bad.length);
    expect(view(legs)).toEqual(["SOL/USD 4.2 ±0.1 @5000"]);
    expect(() => parseHermesEvent('{"binary": {}}', byId)).toThrow(/parsed/);
    expect(() => parseHermesEvent("{", byId)).toThrow(/not JSON/);
  });
});
