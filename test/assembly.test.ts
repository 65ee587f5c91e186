import { TestScheduler } from "rxjs/testing";
import { describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import type { Clock } from "../src/clock.ts";
import { D, decimalToWire, type Sample } from "../src/methodology/index.ts";
import { assembleSamples, crossCheckFeed } from "../src/streams/sources/assembly.ts";
import type { Leg } from "../src/streams/sources/legs.ts";

const catalog = loadShippedCatalog();
const asset = (s: string) => catalog.bySymbol(s)!;
const HOUR = 3600_000;

function scheduler() {
  return new TestScheduler((a, b) => expect(a).toEqual(b));
}

function clockOf(ts: TestScheduler, offset = 0): Clock {
  return { now: () => ts.now() + offset, setTimeout: () => 0, clearTimeout: () => {} };
}

const pyth = (feed: string, price: string, at: number, conf = "0.0001"): Leg => ({ kind: "pyth", feed, price: new D(price), conf: new D(conf), observed_at: at });
const market = (mint: string, price: string, at: number): Leg => ({ kind: "market_usd", mint, price: new D(price), source: "test", observed_at: at });

/** Wire form for comparisons: decimals by value. */
function wire(s: Sample) {
  return {
    asset: s.asset,
    ts: s.ts,
    intrinsic_usd: decimalToWire(s.intrinsic_usd),
    market_usd: decimalToWire(s.market_usd),
    intrinsic_sol: s.intrinsic_sol === null ? null : decimalToWire(s.intrinsic_sol),
    market_sol: s.market_sol === null ? null : decimalToWire(s.market_sol),
    cr: s.cr === null ? null : decimalToWire(s.cr),
    oracle: Object.keys(s.oracle).sort(),
  };
}

describe("sample assembly (marbles)", () => {
  it("emits at most one sample per asset per throttle window, built from the latest legs", () => {
    const ts = scheduler();
    ts.run(({ cold, expectObservable }) => {
      const usdc = asset("USDC");
      const legs = cold<Leg>("a 9ms b 9ms c", {
        a: pyth("USDC/USD", "0.9999", 0),
        b: pyth("USDC/USD", "0.9998", 10),
        c: pyth("USDC/USD", "0.9997", 20),
      });
      const out = assembleSamples(legs, { assets: [usdc], catalog, clock: clockOf(ts), scheduler: ts, throttleMs: 100 });
      expectObservable(out).toBe("100ms x", {
        x: expect.objectContaining({ asset: "USDC", ts: 100, market_usd: new D("0.9997") }),
      });
    });
  });

  it("throttles each asset independently", () => {
    const ts = scheduler();
    ts.run(({ cold, expectObservable }) => {
      const legs = cold<Leg>("a 49ms b", { a: pyth("USDC/USD", "1", 0), b: pyth("USDT/USD", "1", 50) });
      const out = assembleSamples(legs, { assets: [asset("USDC"), asset("USDT")], catalog, clock: clockOf(ts), scheduler: ts, throttleMs: 100 });
      expectObservable(out).toBe("100ms x 49ms y", {
        x: expect.objectContaining({ asset: "USDC" }),
        y: expect.objectContaining({ asset: "USDT" }),
      });
    });
  });

  it("a stale required leg means no sample (30 s default for spot feeds)", () => {
    const ts = scheduler();
    ts.run(({ cold, expectObservable }) => {
      // The clock reads 31 s after the leg's publish time: stale.
      const legs = cold<Leg>("a", { a: pyth("USDC/USD", "1", -31_000 + 100) });
      const out = assembleSamples(legs, { assets: [asset("USDC")], catalog, clock: clockOf(ts, 0), scheduler: ts, throttleMs: 100 });
      expectObservable(out).toBe("");
    });
  });
});

function build(assets: string[], legs: Leg[], now: number): Sample[] {
  const ts = scheduler();
  let result: Sample[] = [];
  ts.run(({ cold, flush }) => {
    const marble = legs.map((_, i) => String.fromCharCode(97 + i)).join("");
    const values = Object.fromEntries(legs.map((l, i) => [String.fromCharCode(97 + i), l]));
    const out = assembleSamples(cold<Leg>(marble, values), {
      assets: assets.map(asset),
      catalog,
      clock: clockOf(ts, now),
      scheduler: ts,
      throttleMs: 10,
    });
    const got: Sample[] = [];
    out.subscribe((s) => got.push(s));
    flush();
    result = got;
  });
  return result;
}

describe("sample assembly per asset kind", () => {
  const now = Date.UTC(2026, 5, 12, 10, 0, 0);

  it("LST: SOL legs from the pool rate and SOL/USD; intrinsic_usd = rate x SOL/USD; own cross-check feed reported", () => {
    const jito = asset("jitoSOL");
    const out = build(
      ["jitoSOL"],
      [
        { kind: "sol_per_lst", mint: jito.mint, sol: new D("1.2534"), source: "rpc", observed_at: now - 3 * HOUR },
        pyth("SOL/USD", "150", now - 1000, "0.07"),
        pyth(crossCheckFeed(jito), "188", now - 1000, "0.2"),
        market(jito.mint, "187.5", now - 500),
      ],
      now,
    );
    expect(out.map(wire).at(-1)).toEqual({
      asset: "jitoSOL",
      ts: now + 10,
      intrinsic_usd: "188.01",
      market_usd: "187.5",
      intrinsic_sol: "1.2534",
      market_sol: "1.25",
      cr: null,
      oracle: ["SOL/USD", "jitoSOL/USD"],
    });
  });

  it("LST without a fresh SOL/USD gives no sample", () => {
    const jito = asset("jitoSOL");
    const out = build(
      ["jitoSOL"],
      [
        { kind: "sol_per_lst", mint: jito.mint, sol: new D("1.2534"), source: "rpc", observed_at: now },
        pyth("SOL/USD", "150", now - 31_000),
        market(jito.mint, "187.5", now),
      ],
      now,
    );
    expect(out).toEqual([]);
  });

  it("redemption-rate feeds stay fresh for 36 h, not longer", () => {
    const usdy = asset("USDY");
    const legs = (age: number) => [pyth("USDY/USD.RR", "1.085", now - age), pyth("USDY/USD", "1.0848", now)];
    expect(build(["USDY"], legs(35 * HOUR), now).map(wire).at(-1)).toMatchObject({ intrinsic_usd: "1.085", market_usd: "1.0848" });
    expect(build(["USDY"], legs(37 * HOUR), now)).toEqual([]);
    expect(usdy.intrinsic.kind).toBe("pyth_redemption_rate");
  });

  it("a redemption rate quoted in USDC is converted through USDC/USD", () => {
    const syrup = asset("syrupUSDC");
    const out = build(["syrupUSDC"], [pyth("SYRUPUSDC/USDC.RR", "1.12", now), pyth("USDC/USD", "0.9999", now), pyth("SYRUPUSDC/USD", "1.1198", now)], now);
    expect(out.map(wire).at(-1)).toMatchObject({ intrinsic_usd: "1.119888", market_usd: "1.1198" });
    expect(syrup.market.kind).toBe("pyth_spot");
  });

  it("FX cross: EUR/USD directly, USD/BRL inverted", () => {
    const eurc = asset("EURC");
    expect(build(["EURC"], [pyth("EUR/USD", "1.085", now), pyth("USDC/USD", "1", now), market(eurc.mint, "1.0847", now)], now).map(wire).at(-1)).toMatchObject({
      intrinsic_usd: "1.085",
      market_usd: "1.0847",
    });
    const brz = asset("BRZ");
    const out = build(["BRZ"], [pyth("USD/BRL", "5", now), pyth("USDC/USD", "1", now), market(brz.mint, "0.1999", now)], now);
    expect(out.map(wire).at(-1)).toMatchObject({ intrinsic_usd: "0.2" });
  });

  it("collateral-ratio assets need a fresh cr", () => {
    const hy = asset("hyUSD");
    const base = [market(hy.mint, "0.9996", now), pyth("USDC/USD", "1", now)];
    expect(build(["hyUSD"], base, now)).toEqual([]);
    const out = build(["hyUSD"], [...base, { kind: "cr", mint: hy.mint, cr: new D("1.61"), source: "sim", observed_at: now }], now);
    expect(out.map(wire).at(-1)).toMatchObject({ cr: "1.61", intrinsic_usd: "1" });
  });

  it("issuer-specific intrinsics come from intrinsic_usd legs and carry the frozen flag", () => {
    const star = asset("USD*");
    const out = build(
      ["USD*"],
      [{ kind: "intrinsic_usd", mint: star.mint, value: new D("1.0421"), source: "sim", observed_at: now, stale: true }, market(star.mint, "1.04", now), pyth("USDC/USD", "1", now)],
      now,
    );
    expect(out.at(-1)?.intrinsic_stale).toBe(true);
    expect(out.map(wire).at(-1)).toMatchObject({ intrinsic_usd: "1.0421" });
  });

  it("legs for unknown mints or feeds are ignored", () => {
    expect(build(["USDC"], [market("So11111111111111111111111111111111111111112", "150", now), pyth("XYZ/USD", "1", now)], now)).toEqual([]);
  });
});
