/**
 * KAMINO_POSITIONS_URL through the running service: with it set, the advisory figures come from Kamino's obligations
 * (read from a local server in Kamino's JSON shape) instead of the simulated book, and the owner, wallet and
 * obligation addresses the payload carries appear nowhere in the answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { KAMINO_MAIN_MARKET } from "../../src/streams/positions/index.ts";
import { startServer, type TestServer } from "../live/server.ts";
import { OBLIGATION, OWNER, SOL, obligation } from "./kamino-fixture.ts";
import { startTestService, type TestService } from "../support/service.ts";

const catalog = loadShippedCatalog();
const JITOSOL = catalog.bySymbol("jitoSOL")!.mint;
// Six jitoSOL loops of 1,000-1,500 USD against SOL debt (threshold 0.9): enough positions, none dominant.
const LOOPS: [string, string][] = [
  ["1000", "850"],
  ["1100", "900"],
  ["1200", "1000"],
  ["1300", "1050"],
  ["1400", "1100"],
  ["1500", "1300"],
];

let running: TestService;
let kamino: TestServer;
let base: string;

beforeAll(async () => {
  kamino = await startServer((req, res) => {
    if (req.url.pathname !== `/kamino-market/${KAMINO_MAIN_MARKET}/obligations`) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(LOOPS.map(([c, d]) => obligation({ deposits: [[JITOSOL, c]], borrows: [[SOL, d]], liquidationLtv: "0.9" }))));
  });
  running = await startTestService({ env: { FEED: "scenario:usdc-march-2023", KAMINO_POSITIONS_URL: kamino.url }, catalog, prefix: "peg-kamino-" });
  ({ base } = running);
}, 60_000);

afterAll(async () => {
  await running?.stop();
  await kamino?.close();
});

describe("advisory figures from Kamino obligations", () => {
  it("serves the loop exposure of the obligations the Kamino URL lists, and nothing simulated", async () => {
    // The positions load after the service serves (503 not_ready until then).
    let res = await fetch(`${base}/v1/assets/jitoSOL/loop-exposure`);
    for (const until = Date.now() + 10_000; res.status === 503 && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 50));
      res = await fetch(`${base}/v1/assets/jitoSOL/loop-exposure`);
    }
    expect(res.status).toBe(200);
    const text = await res.text();
    const body = JSON.parse(text) as Record<string, unknown>;
    expect(body).toMatchObject({
      asset: "jitoSOL",
      loop_exposure_usd: "7500",
      debt_usd: "6200",
      // Some cascade rungs would isolate fewer than 5 of the six loops: withheld.
      coverage: "partial",
      by_protocol: [{ protocol: "kamino", collateral_lev_usd: "7500", debt_usd: "6200" }],
    });
    expect(kamino.requests.length).toBeGreaterThanOrEqual(1);
    for (const secret of [OWNER, OBLIGATION]) expect(text).not.toContain(secret);
    // An asset no obligation holds has no leverage tracked.
    const usdc = (await (await fetch(`${base}/v1/assets/USDC/loop-exposure`)).json()) as Record<string, unknown>;
    expect(usdc).toMatchObject({ loop_exposure_usd: "0", by_protocol: [], cascade: [] });
  });
});
