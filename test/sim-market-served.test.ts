/**
 * Issue 14 item 3, end to end: the real service on the embedded default feed (`FEED=sim`, nothing else configured but
 * ports, NATS and the data directory) serves `circulating_supply` and `market_cap` on every card, through the same
 * path a live supply takes (supply legs -> SupplyBook -> sample projector -> snapshot -> GET /v1/assets/{symbol}).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { startService, type Service } from "../src/cli/service.ts";
import { parseConfig } from "../src/config.ts";
import { startNats, type TestNats } from "./support/nats.ts";
import { freePort, waitFor } from "./support/ports.ts";

const catalog = loadShippedCatalog();
let nats: TestNats;
let service: Service;
let base: string;
const dataDir = mkdtempSync(join(tmpdir(), "peg-sim-served-"));

type Card = { symbol: string; circulating_supply: string | null; market_cap: string | null; market_usd: string | null };

const get = async <T,>(path: string): Promise<T> => {
  const res = await fetch(base + path);
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
};

beforeAll(async () => {
  nats = await startNats();
  const config = parseConfig({ PORT: String(await freePort()), METRICS_PORT: "0", HOST: "127.0.0.1", NATS_URL: nats.url, DATA_DIR: dataDir, FEED: "sim" });
  service = await startService(config, catalog, { log: () => {} });
  base = `http://127.0.0.1:${service.api.port}`;
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await nats?.dispose();
  rmSync(dataDir, { recursive: true, force: true });
});

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
