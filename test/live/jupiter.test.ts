import { asyncScheduler, type Subscription } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import { base58Encode } from "../../src/catalog/index.ts";
import { systemClock } from "../../src/clock.ts";
import { decimalToWire } from "../../src/methodology/index.ts";
import type { Leg } from "../../src/streams/sources/legs.ts";
import { RequestBudget, SourceCounters, jupiterPrices, parseJupiterPrices } from "../../src/streams/sources/live/index.ts";
import { json, recordingLog, startServer, waitFor, type TestServer } from "./server.ts";

/** A valid-looking mint per index (32 bytes, base58). */
const mintOf = (i: number): string => base58Encode(Uint8Array.from({ length: 32 }, (_, k) => (k === 0 ? i : (i * 7 + k) % 256)));
const MINTS = Array.from({ length: 120 }, (_, i) => mintOf(i));

/** Price text per mint index, written raw into the JSON body: some have more digits than a double holds. */
function priceText(i: number): string {
  if (i === 1) return "1.00000000000000000001";
  if (i === 2) return "1.5e-7";
  if (i === 3) return "0.9997073145154354";
  return `${i}.25`;
}

/** Price v3's shape, with `usdPrice` written as a JSON number. */
function answer(ids: readonly string[], omit: (i: number) => boolean): string {
  const entries = ids
    .map((m) => MINTS.indexOf(m))
    .filter((i) => !omit(i))
    .map((i) => `"${MINTS[i]}":{"createdAt":"2024-06-05T08:55:25.527Z","liquidity":621679197.67,"usdPrice":${priceText(i)},"blockId":348004023,"decimals":6,"priceChange24h":-0.003}`);
  return `{${entries.join(",")}}`;
}

let server: TestServer | undefined;
let sub: Subscription | undefined;
afterEach(async () => {
  sub?.unsubscribe();
  await server?.close();
  sub = server = undefined;
});

const prices = (legs: Leg[]) => new Map(legs.map((l) => [l.kind === "market_usd" ? l.mint : "", l.kind === "market_usd" ? decimalToWire(l.price) : ""]));

describe("jupiterPrices against a loopback Price API v3", () => {
  it("splits 120 mints into 3 budgeted calls of <= 50 with x-api-key; omitted mints give no leg; digits kept exactly", async () => {
    server = await startServer((req, res) => {
      expect(req.url.pathname).toBe("/price/v3");
      json(res, 200, answer(req.url.searchParams.get("ids")!.split(","), (i) => i % 10 === 0));
    });
    const counters = new SourceCounters();
    const legs: Leg[] = [];
    // How many requests the server had received each time a call asked the budget for a token.
    const asked: number[] = [];
    const srv = server;
    class CountingBudget extends RequestBudget {
      override take(signal: AbortSignal): Promise<boolean> {
        asked.push(srv.requests.length);
        return super.take(signal);
      }
    }
    sub = jupiterPrices({
      baseUrl: server.url,
      apiKey: "test-key",
      mints: MINTS,
      clock: systemClock,
      counters,
      intervalMs: 60_000,
      budget: new CountingBudget({ perMinute: 600 }, asyncScheduler),
    }).subscribe((l) => legs.push(l));
    await waitFor(() => legs.length === 108, "108 legs");

    const sizes = server.requests.map((r) => r.url.searchParams.get("ids")!.split(",").length);
    expect(sizes).toEqual([50, 50, 20]);
    expect(server.requests.flatMap((r) => r.url.searchParams.get("ids")!.split(","))).toEqual(MINTS);
    for (const r of server.requests) expect(r.headers["x-api-key"]).toBe("test-key");
    // Every call waited for a token of the budget first, the next one once the previous was answered (the spacing of
    // the tokens is proven on RequestBudget itself in helpers.test.ts; timing the arrivals here failed under CI load).
    expect(asked).toEqual([0, 1, 2]);

    const byMint = prices(legs);
    for (let i = 0; i < 120; i += 10) expect(byMint.has(MINTS[i]!)).toBe(false);
    expect(byMint.get(MINTS[1]!)).toBe("1.00000000000000000001");
    expect(byMint.get(MINTS[2]!)).toBe("0.00000015");
    expect(byMint.get(MINTS[3]!)).toBe("0.9997073145154354");
    expect(byMint.get(MINTS[119]!)).toBe("119.25");
    expect(legs.every((l) => l.kind === "market_usd" && l.source === "jupiter")).toBe(true);
    expect(counters.snapshot()).toEqual({ received: 3, malformed: 0, errors: 0, retries: 0, omitted: 12 });
  });

  it("honours a 429's Retry-After, then retries the same batch", async () => {
    server = await startServer((req, res) => {
      if (req.n === 0) return json(res, 429, '{"error":"Too Many Requests"}', { "retry-after": "1" });
      json(res, 200, answer(req.url.searchParams.get("ids")!.split(","), () => false));
    });
    const counters = new SourceCounters();
    const legs: Leg[] = [];
    sub = jupiterPrices({
      baseUrl: server.url,
      apiKey: "k",
      mints: MINTS.slice(4, 7),
      clock: systemClock,
      counters,
      intervalMs: 60_000,
      requestsPerMinute: 6000,
      backoff: { baseMs: 10, capMs: 20 },
    }).subscribe((l) => legs.push(l));
    await waitFor(() => legs.length === 3, "legs after the 429", 4000);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.url.search).toBe(server.requests[0]!.url.search);
    expect(server.requests[1]!.at - server.requests[0]!.at).toBeGreaterThanOrEqual(950);
    expect(counters.snapshot()).toMatchObject({ received: 1, errors: 1, retries: 1 });
  });

  it("retries with backoff when the server drops the connection mid-body", async () => {
    server = await startServer((req, res) => {
      const body = answer(req.url.searchParams.get("ids")!.split(","), () => false);
      if (req.n === 0) {
        res.writeHead(200, { "content-type": "application/json", "content-length": String(body.length) });
        res.write(body.slice(0, 10));
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      json(res, 200, body);
    });
    const counters = new SourceCounters();
    const legs: Leg[] = [];
    sub = jupiterPrices({
      baseUrl: server.url,
      apiKey: null,
      mints: MINTS.slice(4, 6),
      clock: systemClock,
      counters,
      intervalMs: 60_000,
      requestsPerMinute: 60_000,
      backoff: { baseMs: 10, capMs: 20 },
    }).subscribe((l) => legs.push(l));
    await waitFor(() => legs.length === 2, "legs after the dropped connection");
    expect(server.requests).toHaveLength(2);
    expect(counters.snapshot()).toEqual({ received: 1, malformed: 0, errors: 1, retries: 1, omitted: 0 });
  });

  it("counts truncated, non-JSON and wrongly typed answers as malformed and keeps polling (keyless: no x-api-key)", async () => {
    const [a, b] = [MINTS[5]!, MINTS[6]!];
    const bodies = [
      `{"${a}": {"usdPrice": 1.0`, // partial body
      "<html>502 Bad Gateway</html>", // 200 with a non-JSON body
      `{"${a}": {"usdPrice": "1.0"}, "${b}": {"usdPrice": 2}, "${MINTS[9]}": {"usdPrice": 3}}`, // string price, unasked mint
      `{"${a}": {"usdPrice": 1.01}, "${b}": {"usdPrice": -2}}`, // negative price
      `{"${a}": {"usdPrice": 1.02}, "${b}": null}`, // null = no price
    ];
    server = await startServer((req, res) => json(res, 200, bodies[Math.min(req.n, bodies.length - 1)]!));
    const counters = new SourceCounters();
    const { log, lines } = recordingLog();
    const legs: Leg[] = [];
    sub = jupiterPrices({
      baseUrl: server.url,
      apiKey: null,
      mints: [a, b],
      clock: systemClock,
      counters,
      log,
      intervalMs: 20,
      requestsPerMinute: 60_000,
    }).subscribe((l) => legs.push(l));
    await waitFor(() => server!.requests.length >= 5 && legs.length >= 3, "five answers");
    sub.unsubscribe();

    expect(legs.slice(0, 3).map((l) => (l.kind === "market_usd" ? `${l.mint === a ? "a" : "b"} ${decimalToWire(l.price)}` : ""))).toEqual([
      "b 2",
      "a 1.01",
      "a 1.02",
    ]);
    expect(counters.snapshot()).toMatchObject({ malformed: 5, errors: 0 });
    expect(lines.filter((l) => l.level === "warn" && l.msg.startsWith("malformed")).length).toBe(5);
    for (const r of server.requests) expect(r.headers["x-api-key"]).toBeUndefined();
  });

  it("rejects more than 50 mints per call up front", () => {
    expect(() => jupiterPrices({ baseUrl: "http://127.0.0.1:1", apiKey: null, mints: MINTS, clock: systemClock, batchSize: 51 })).toThrow(
      RangeError,
    );
  });

  it("parses only the mints asked for", () => {
    const r = parseJupiterPrices(`{"${MINTS[0]}": {"usdPrice": 1e2}}`, [MINTS[0]!, MINTS[1]!]);
    expect([...r.prices].map(([m, p]) => [m, decimalToWire(p)])).toEqual([[MINTS[0], "100"]]);
    expect(r.omitted).toEqual([MINTS[1]]);
    expect(r.problems).toEqual([]);
  });
});
