/**
 * Issue 14 item 3, end to end: the real service on the embedded default feed (`FEED=sim`, nothing else configured but
 * ports, NATS and the data directory) serves `circulating_supply` and `market_cap` on every card, through the same
 * path a live supply takes (supply legs -> SupplyBook -> sample projector -> snapshot -> GET /v1/assets/{symbol}).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { waitFor } from "./support/ports.ts";
import { startTestService, type TestService } from "./support/service.ts";

const catalog = loadShippedCatalog();
let running: TestService;
let base: string;

type Card = { symbol: string; circulating_supply: string | null; market_cap: string | null; market_usd: string | null };

const get = async <T,>(path: string): Promise<T> => {
  const res = await fetch(base + path);
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
};

beforeAll(async () => {
  running = await startTestService({ env: { FEED: "sim" }, catalog, prefix: "peg-sim-served-" });
  ({ base } = running);
}, 60_000);

afterAll(() => running?.stop());

describe("the served card on the embedded default feed", () => {
  it("has circulating_supply and market_cap for every active asset", async () => {
    let cards: Card[] = [];
    await waitFor(
      async () => {
        cards = (await get<{ data: Card[] }>("/v1/assets")).data;
        return cards.length === catalog.active.length && cards.every((c) => c.circulating_supply !== null && c.market_cap !== null);
      },
      30_000,
      "every card with a supply and a market cap",
      250,
    );
    for (const c of cards) {
      expect(Number(c.circulating_supply), c.symbol).toBeGreaterThan(0);
      expect(Number(c.market_cap) / (Number(c.circulating_supply) * Number(c.market_usd)), c.symbol).toBeCloseTo(1, 4);
    }
    const usdc = await get<Card>("/v1/assets/USDC");
    expect(usdc.circulating_supply).toMatch(/^\d+(\.\d+)?$/);
    expect(usdc.market_cap).not.toBeNull();
  });
});
