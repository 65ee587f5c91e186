/**
 * Positions sources: the simulated book, the Kamino adapter (parsed from the API's obligation shape and read from a
 * local HTTP server), and the refreshing book on a simulated clock. No wallet, owner or authority reaches the model.
 */
import { afterEach, describe, expect, it } from "vitest";
import { lendingPosition, loopExposure, type LendingPosition } from "../../src/advisory/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { HttpStatusError, MalformedPayloadError, PayloadTooLargeError } from "../../src/streams/sources/live/errors.ts";
import {
  kaminoPositions,
  KAMINO_MAIN_MARKET,
  parseKaminoObligations,
  PositionsBook,
  simulatedPositions,
  SIM_PROTOCOLS,
  type PositionSource,
  type PositionSourceStats,
} from "../../src/streams/positions/index.ts";
import { startServer, type TestServer } from "../live/server.ts";
import { OBLIGATION, OWNER, SOL, obligation } from "./kamino-fixture.ts";

const catalog = loadShippedCatalog();
const JITOSOL = catalog.bySymbol("jitoSOL")!.mint;
const USDC = catalog.bySymbol("USDC")!.mint;
const MODEL_KEYS = ["collateral_mint", "collateral_usd", "debt_usd", "liquidation_threshold", "protocol"];

const PAYLOAD = [
  obligation({ deposits: [[JITOSOL, "1000"]], borrows: [[SOL, "850"]], liquidationLtv: "0.9" }),
  // Two collaterals: debt split by collateral value (600/1000 and 400/1000 of 500); Kamino's binary-scaled LTV noise.
  obligation({ deposits: [[JITOSOL, "600"], [USDC, "400"], ["11111111111111111111111111111111", "0"]], borrows: [[SOL, "500"]], liquidationLtv: "0.75000000000000000001", adjustedDebt: "500" }),
  // No debt: not leverage.
  obligation({ deposits: [[USDC, "5000"]], borrows: [], liquidationLtv: "0.9" }),
  // Unusable: no refreshedStats.
  { obligationAddress: OBLIGATION, state: { owner: OWNER }, deposits: [], borrows: [] },
  // Unusable: a value in a form that is not a decimal.
  obligation({ deposits: [[JITOSOL, "1,000"]], borrows: [[SOL, "1"]], liquidationLtv: "0.9" }),
];

const fresh = (): PositionSourceStats => ({ reads: 0, failures: 0, skipped: 0 });

function plain(ps: readonly LendingPosition[]) {
  return ps.map((p) => ({ ...p, collateral_usd: p.collateral_usd.toFixed(), debt_usd: p.debt_usd.toFixed(), liquidation_threshold: p.liquidation_threshold.toFixed() }));
}

describe("the Kamino obligations parser", () => {
  it("maps deposits to positions with the obligation's threshold and apportioned debt, skipping what it cannot model", () => {
    const stats = fresh();
    const ps = parseKaminoObligations(PAYLOAD, stats);
    expect(plain(ps)).toEqual([
      { protocol: "kamino", collateral_mint: JITOSOL, collateral_usd: "1000", debt_usd: "850", liquidation_threshold: "0.9" },
      { protocol: "kamino", collateral_mint: JITOSOL, collateral_usd: "600", debt_usd: "300", liquidation_threshold: "0.75000000000000000001" },
      { protocol: "kamino", collateral_mint: USDC, collateral_usd: "400", debt_usd: "200", liquidation_threshold: "0.75000000000000000001" },
    ]);
    expect(stats.skipped).toBe(2);
    expect(parseKaminoObligations({ obligations: PAYLOAD }).length).toBe(3);
    expect(() => parseKaminoObligations({ data: [] })).toThrow(MalformedPayloadError);
  });

  it("never carries a wallet, owner, authority or account address into the model", () => {
    const ps = parseKaminoObligations(PAYLOAD);
    for (const p of ps) expect(Object.keys(p).sort()).toEqual(MODEL_KEYS);
    const text = JSON.stringify(plain(ps));
    expect(text).not.toContain(OWNER);
    expect(text).not.toContain(OBLIGATION);
    expect(text).not.toMatch(/owner|wallet|authority|obligation/i);
  });
});

describe("the Kamino adapter against a local server", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("reads each market's obligations from the configured base URL, keeping its query string", async () => {
    server = await startServer((req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(req.url.pathname.includes(KAMINO_MAIN_MARKET) ? PAYLOAD : [PAYLOAD[0]]));
    });
    const stats = fresh();
    const src = kaminoPositions({ baseUrl: `${server.url}/api?apiKey=k1`, markets: [KAMINO_MAIN_MARKET, "DxXdAyU3kCjnyggvHmY8nAwg3cRDbHfcbDqFtzJ3aNUv"], stats });
    const ps = await src.read(0);
    expect(ps.length).toBe(4);
    expect(server.requests.map((r) => r.url.pathname)).toEqual([
      `/api/kamino-market/${KAMINO_MAIN_MARKET}/obligations`,
      "/api/kamino-market/DxXdAyU3kCjnyggvHmY8nAwg3cRDbHfcbDqFtzJ3aNUv/obligations",
    ]);
    expect(server.requests[0]!.url.searchParams.get("apiKey")).toBe("k1");
    expect(server.requests[0]!.url.searchParams.get("env")).toBe("mainnet-beta");
    expect(stats).toEqual({ reads: 1, failures: 0, skipped: 2 });
    for (const p of ps) expect(Object.keys(p).sort()).toEqual(MODEL_KEYS);
  });

  it("rejects (and counts) an HTTP error, a body that is not JSON, and an oversized body", async () => {
    let mode: "500" | "text" | "big" = "500";
    server = await startServer((_req, res) => {
      if (mode === "500") {
        res.writeHead(503);
        res.end("down");
      } else if (mode === "text") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end("<html>");
      } else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(PAYLOAD));
      }
    });
    const stats = fresh();
    const src = kaminoPositions({ baseUrl: server.url, stats, maxBodyBytes: 2048 });
    await expect(src.read(0)).rejects.toBeInstanceOf(HttpStatusError);
    mode = "text";
    await expect(src.read(0)).rejects.toBeInstanceOf(MalformedPayloadError);
    mode = "big";
    await expect(src.read(0)).rejects.toBeInstanceOf(PayloadTooLargeError);
    expect(stats.failures).toBe(3);
    expect(stats.reads).toBe(0);
    expect(() => kaminoPositions({ baseUrl: "not a url" })).toThrow();
  });
});

describe("the simulated positions", () => {
  const src = simulatedPositions({ assets: catalog.active, seed: 1 });

  it("are deterministic per seed and epoch, and move a little between epochs", async () => {
    const a = plain(await src.read(60_000 * 10 + 5));
    const b = plain(await simulatedPositions({ assets: catalog.active, seed: 1 }).read(60_000 * 10 + 59_999));
    expect(a).toEqual(b);
    const next = plain(await src.read(60_000 * 11));
    expect(next.length).toBe(a.length);
    expect(next).not.toEqual(a);
    expect(plain(await simulatedPositions({ assets: catalog.active, seed: 2 }).read(60_000 * 10))).not.toEqual(a);
  });

  it("by mint, built on demand, are exactly the positions `read` gives, and the book's figures are the same", async () => {
    const now = 60_000 * 10 + 5;
    const all = await src.read(now);
    const byMint = await src.readByMint!(now);
    const mints = [...byMint.keys()];
    expect(mints.flatMap((m) => plain(byMint.get(m)!))).toEqual(plain(all));
    expect(byMint.get(mints[0]!)).toBe(byMint.get(mints[0]!));
    expect(byMint.get("NotACatalogMint1111111111111111111111111111")).toBeUndefined();
    // A book over the source (by mint) and over its plain read (grouped) give the same figures for every mint.
    const clock = new SimulatedClock(now);
    const lazy = new PositionsBook({ sources: [src], clock });
    const plainSource = { name: "plain", read: (t: number) => src.read(t) };
    const grouped = new PositionsBook({ sources: [plainSource], clock });
    await Promise.all([lazy.refresh(), grouped.refresh()]);
    for (const m of mints) expect(lazy.snapshot()!.byMint.get(m), m).toEqual(grouped.snapshot()!.byMint.get(m));
    expect([...lazy.snapshot()!.byMint.keys()]).toEqual([...grouped.snapshot()!.byMint.keys()]);
  });

  it("spread loops over several protocols, for LST and stablecoin classes only, near their liquidation line", async () => {
    const ps = await src.read(0);
    expect(new Set(ps.map((p) => p.protocol))).toEqual(new Set(SIM_PROTOCOLS));
    const classes = new Set(ps.map((p) => catalog.byMint(p.collateral_mint)!.class));
    expect(classes.has("lst")).toBe(true);
    expect([...classes].some((c) => c.startsWith("stable_"))).toBe(true);
    expect(classes.has("synth_lev")).toBe(false);
    expect(classes.has("stable_fx")).toBe(false);
    for (const p of ps) {
      expect(Object.keys(p).sort()).toEqual(MODEL_KEYS);
      expect(p.debt_usd.gt(0)).toBe(true);
      // Healthy before any shock, so every liquidation comes from the shock itself.
      expect(p.collateral_usd.times(p.liquidation_threshold).gt(p.debt_usd)).toBe(true);
    }
    const mints = new Set(ps.map((p) => p.collateral_mint));
    const exposures = [...mints].map((m) => loopExposure(ps, m));
    // The default book exercises every case: untracked assets, full and partial coverage.
    expect(mints.size).toBeLessThan(catalog.active.length);
    expect(exposures.some((e) => e.coverage === "full")).toBe(true);
    expect(exposures.some((e) => e.coverage === "partial")).toBe(true);
    expect(exposures.some((e) => e.cascade.some((r) => r.liquidatable_usd.gt(0)))).toBe(true);
  });
});

describe("the positions book", () => {
  /** Five equal positions of 1000 x n collateral on jitoSOL. */
  const position = (n: number): LendingPosition[] =>
    Array.from({ length: 5 }, () => lendingPosition({ protocol: "kamino", collateral_mint: JITOSOL, collateral_usd: String(1000 * n), debt_usd: "500", liquidation_threshold: "0.9" }));

  it("has no snapshot until every source was read once, then refreshes on the clock and keeps a failed source's last positions", async () => {
    const clock = new SimulatedClock(1_000_000);
    let failB = true;
    let calls = 0;
    const a: PositionSource = { name: "a", read: async () => (calls++, position(1)) };
    const b: PositionSource = {
      name: "b",
      read: async () => {
        if (failB) throw new Error("upstream down");
        return position(2);
      },
    };
    const logs: string[] = [];
    const book = new PositionsBook({ sources: [a, b], clock, refreshMs: 60_000, log: (_l, msg) => logs.push(msg) });
    await book.start();
    expect(book.snapshot()).toBeNull();
    expect(logs).toContain("positions source failed; keeping its last positions");

    failB = false;
    clock.increment(60_000);
    await book.refresh(); // the timer's refresh is in flight: this waits for it, not a second one
    const first = book.snapshot()!;
    expect(first.updatedAt).toBe(1_060_000);
    // 5 x 1000 + 5 x 2000 collateral on jitoSOL from the two sources.
    expect(first.byMint.get(JITOSOL)!.loop_exposure_usd.toFixed()).toBe("15000");

    failB = true;
    clock.increment(60_000);
    await book.refresh();
    const second = book.snapshot()!;
    expect(second).not.toBe(first);
    // b failed: its last good read (at 1 060 000) is kept, and updated_at is the oldest read in the mix.
    expect(second.updatedAt).toBe(1_060_000);
    expect(second.byMint.get(JITOSOL)!.loop_exposure_usd.toFixed()).toBe("15000");

    await book.stop();
    const before = calls;
    clock.increment(600_000);
    await Promise.resolve();
    expect(calls).toBe(before);
    expect(book.snapshot()).toBe(second);
  });

  it("refuses to be built without a source or with a non-positive cadence", () => {
    const clock = new SimulatedClock(0);
    expect(() => new PositionsBook({ sources: [], clock })).toThrow(RangeError);
    expect(() => new PositionsBook({ sources: [simulatedPositions({ assets: [], seed: 1 })], clock, refreshMs: 0 })).toThrow(RangeError);
  });
});
