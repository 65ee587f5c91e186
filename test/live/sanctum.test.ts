import type { Subscription } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { systemClock } from "../../src/clock.ts";
import { decimalToWire } from "../../src/methodology/index.ts";
import type { Leg } from "../../src/streams/sources/legs.ts";
import { SourceCounters, parseSanctumSolValues, sanctumMintsOf, sanctumSolValues } from "../../src/streams/sources/live/index.ts";
import { json, recordingLog, startServer, waitFor, type TestServer } from "./server.ts";

const catalog = loadShippedCatalog();
const mint = (symbol: string): string => catalog.bySymbol(symbol)!.mint;
const [MSOL, BSOL, INF, JUPSOL] = [mint("mSOL"), mint("bSOL"), mint("INF"), mint("JupSOL")];

let server: TestServer | undefined;
let sub: Subscription | undefined;
afterEach(async () => {
  sub?.unsubscribe();
  await server?.close();
  sub = server = undefined;
});

const view = (legs: Leg[]) =>
  legs.map((l) => (l.kind === "sol_per_lst" ? `${catalog.byMint(l.mint)!.symbol} ${decimalToWire(l.sol)} ${l.source}` : l.kind));

describe("sanctumSolValues against a loopback Sanctum API", () => {
  it("turns lamport strings into exact SOL, skips errs entries, keeps the base URL's apiKey, retries a 503", async () => {
    server = await startServer((req, res) => {
      expect(req.url.pathname).toBe("/v1/sol-value/current");
      const lsts = req.url.searchParams.getAll("lst");
      if (req.n === 0) return json(res, 503, "upstream unavailable");
      if (lsts.includes(MSOL)) return json(res, 200, JSON.stringify({ solValues: { [MSOL]: "1284000000", [BSOL]: "1000000001" }, errs: {} }));
      json(
        res,
        200,
        JSON.stringify({
          solValues: { [INF]: "1407837461" },
          errs: { [JUPSOL]: { code: "LST_NOT_FOUND", message: "no sol value for this lst" } },
        }),
      );
    });
    const counters = new SourceCounters();
    const legs: Leg[] = [];
    sub = sanctumSolValues({
      baseUrl: `${server.url}?apiKey=secret-key`,
      mints: [MSOL, BSOL, INF, JUPSOL],
      batchSize: 2,
      clock: systemClock,
      counters,
      intervalMs: 60_000,
      requestsPerMinute: 60_000,
      backoff: { baseMs: 10, capMs: 20 },
    }).subscribe((l) => legs.push(l));
    await waitFor(() => legs.length === 3, "three SOL values");

    expect(view(legs)).toEqual(["mSOL 1.284 sanctum", "bSOL 1.000000001 sanctum", "INF 1.407837461 sanctum"]);
    expect(server.requests.map((r) => r.url.searchParams.getAll("lst"))).toEqual([[MSOL, BSOL], [MSOL, BSOL], [INF, JUPSOL]]);
    for (const r of server.requests) expect(r.url.searchParams.get("apiKey")).toBe("secret-key");
    expect(counters.snapshot()).toEqual({ received: 2, malformed: 0, errors: 1, retries: 1, omitted: 1 });
  });

  it("counts malformed answers and values, never errors, keeps polling", async () => {
    const bodies = [
      '{"solValues": {"', // partial
      '{"values": {}}', // no solValues
      JSON.stringify({ solValues: { [MSOL]: "1.5", [BSOL]: -3, [INF]: "0" } }),
      JSON.stringify({ solValues: { [MSOL]: "1300000000", So11111111111111111111111111111111111111112: "1000000000" } }),
      JSON.stringify({ solValues: { [MSOL]: "1300000001", [BSOL]: "1000000000", [INF]: "1400000000" }, errs: {} }), // clean from here on
    ];
    server = await startServer((req, res) => json(res, 200, bodies[Math.min(req.n, bodies.length - 1)]!));
    const counters = new SourceCounters();
    const { log, lines } = recordingLog();
    const legs: Leg[] = [];
    sub = sanctumSolValues({
      baseUrl: server.url,
      mints: [MSOL, BSOL, INF],
      clock: systemClock,
      counters,
      log,
      intervalMs: 20,
      requestsPerMinute: 60_000,
    }).subscribe((l) => legs.push(l));
    await waitFor(() => legs.length >= 4, "good answers after the bad ones");
    sub.unsubscribe();
    expect(view(legs.slice(0, 4))).toEqual(["mSOL 1.3 sanctum", "mSOL 1.300000001 sanctum", "bSOL 1 sanctum", "INF 1.4 sanctum"]);
    // 1 partial + 1 shapeless + 3 bad values + 1 unasked LST
    expect(counters.snapshot().malformed).toBe(6);
    expect(lines.some((l) => l.fields?.["source"] === "sanctum")).toBe(true);
  });

  it("reads the sanctum_lst assets of the catalog", () => {
    const mints = sanctumMintsOf(catalog.active);
    expect(mints).toContain(MSOL);
    expect(mints).not.toContain(mint("jitoSOL")); // an spl_stake_pool, read from the chain
    const r = parseSanctumSolValues('{"solValues":{"x":"999999999999999999999"},"errs":{}}', ["x"]);
    expect(decimalToWire(r.values.get("x")!)).toBe("999999999999.999999999");
  });
});
