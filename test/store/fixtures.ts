/**
 * Fixtures for the store contract: real receipts built by running the engine (ActorHost on a SimulatedClock), and
 * sample rows with exact decimal strings.
 */
import { ActorHost, type StateEvent } from "../../src/actors/index.ts";
import { loadShippedCatalog, type CatalogAsset } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, type Receipt } from "../../src/methodology/index.ts";
import type { SampleRow } from "../../src/store/index.ts";

export const catalog = loadShippedCatalog();
export const USDC: CatalogAsset = catalog.bySymbol("USDC")!;
export const USDT: CatalogAsset = catalog.bySymbol("USDT")!;

/** 2026-06-12T10:00:00.000Z */
export const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);
export const MIN = 60_000;
export const DAY = 86_400_000;

export interface EngineRun {
  readonly receipts: Receipt[];
  readonly states: StateEvent[];
}

/**
 * Drives USDC through PEGGED -> DEPEG (market 0.99 held past the 30 s confirm window) and back to PEGGED (par held
 * past the 120 s decay window), collecting every published state and every transition receipt.
 */
export function runEngine(start = T0): EngineRun {
  const clock = new SimulatedClock(start);
  const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
  const receipts: Receipt[] = [];
  const states: StateEvent[] = [];
  const sub = host.events$.subscribe((e) => {
    if (e.kind === "transition") receipts.push(e.receipt);
    else states.push(e);
  });
  const feed = (market: string) =>
    host.ingest({
      asset: "USDC",
      ts: clock.now(),
      intrinsic_usd: new D(1),
      market_usd: new D(market),
      intrinsic_sol: null,
      market_sol: null,
      cr: null,
      oracle: {},
      intrinsic_stale: false,
    });
  feed("1");
  clock.increment(1_000);
  for (let i = 0; i < 40; i++) {
    feed("0.99");
    clock.increment(1_000);
  }
  for (let i = 0; i < 400; i++) {
    feed("1");
    clock.increment(1_000);
  }
  sub.unsubscribe();
  host.stop();
  return { receipts, states };
}

/** A sample row with distinct, exact decimals derived from `discount`. */
export function sample(mint: string, ts: number, discount: string, extra: Partial<SampleRow> = {}): SampleRow {
  return {
    mint,
    ts,
    seq: 0,
    discount,
    discount_raw: discount,
    state: "PEGGED",
    market_usd: "0.9990000000000000000000000000000001",
    intrinsic_usd: "1",
    ...extra,
  };
}
