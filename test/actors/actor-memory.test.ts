import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { ActorHost, type HostAsset } from "../../src/actors/index.ts";
import { SharedThresholds } from "../../src/actors/shared-thresholds.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, type MethodologyAsset, type Sample } from "../../src/methodology/index.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!; // 15 / 50 / 200 bps
const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);

const asset = (symbol: string, thresholds: MethodologyAsset["thresholds"]): MethodologyAsset =>
  Object.freeze({ symbol, mint: `${symbol}-mint`, class: "stable_fiat", thresholds, oracle_feed_id: null, market: null, intrinsic: null });

describe("shared thresholds", () => {
  it("hands every asset with equal thresholds the first one's object, members unchanged", () => {
    const pool = new SharedThresholds();
    const a = asset("A", { drift_bps: 15, depeg_bps: 50, critical_bps: 200 });
    const b = asset("B", { drift_bps: 15, depeg_bps: 50, critical_bps: 200 });
    const c = asset("C", { drift_bps: 15, depeg_bps: 50, critical_bps: 250 });
    const d = asset("D", { depeg_bps: 50, drift_bps: 15, critical_bps: 200 }); // same values, other order: not shared
    const e = asset("E", { drift_bps: 15, "depeg_bps=50;critical_bps": 200 } as MethodologyAsset["thresholds"]);
    expect(pool.methodologyOf(a)).toBe(a);
    const sharedB = pool.methodologyOf(b);
    expect(sharedB).toEqual(b);
    expect(sharedB.thresholds).toBe(a.thresholds);
    expect(Object.isFrozen(sharedB)).toBe(true);
    expect(pool.methodologyOf(c)).toBe(c);
    expect(pool.methodologyOf(d)).toBe(d);
    expect(pool.methodologyOf(e)).toBe(e);
    expect(pool.methodologyOf(a)).toBe(a);
  });

  it("never shares thresholds that are not a plain object of numbers", () => {
    const pool = new SharedThresholds();
    const odd = [{ drift_bps: -0 }, { drift_bps: -0 }, Object.assign(Object.create(null) as object, { drift_bps: 1 }), Object.assign(Object.create(null) as object, { drift_bps: 1 })];
    for (const [i, t] of odd.entries()) {
      const a = asset(`X${i}`, t);
      expect(pool.methodologyOf(a)).toBe(a);
    }
  });

  it("an asset decides the same, receipt for receipt, whether or not its thresholds are shared", () => {
    const twin = catalog.active.find((a) => a !== USDC && JSON.stringify(a.methodology.thresholds) === JSON.stringify(USDC.methodology.thresholds));
    expect(twin).toBeDefined(); // the shipped catalog has assets with USDC's thresholds
    const run = (assets: readonly HostAsset[]) => {
      const clock = new SimulatedClock(T0);
      const host = new ActorHost({ assets, clock, gitSha: "" });
      const receipts: string[] = [];
      host.events$.subscribe((e) => e.kind === "transition" && e.receipt.asset === "USDC" && receipts.push(JSON.stringify(e.receipt)));
      ["1", "0.99", "0.985", "0.99", "0.97", "0.96", "0.99", "1", "1", "1", "1", "1"].forEach((p, i) => {
        clock.set(T0 + i * 20_000);
        host.ingest(usdc(clock, p));
      });
      clock.set(T0 + 600_000);
      host.stop();
      return receipts;
    };
    const alone = run([USDC]);
    expect(alone.length).toBeGreaterThan(1);
    expect(run([twin!, USDC])).toEqual(alone);
  });
});

describe("outbox", () => {
  it("keeps nothing once delivered: a transition's receipt is collectable after its event", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const clock = new SimulatedClock(T0);
    const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
    const receipts: WeakRef<object>[] = [];
    host.events$.subscribe((e) => e.kind === "transition" && receipts.push(new WeakRef(e.receipt)));
    host.ingest(usdc(clock, "1"));
    clock.increment(1000);
    host.ingest(usdc(clock, "0.99"));
    clock.increment(30_000); // the dwell timer commits DRIFT: its outbox holds the decision and the receipt
    expect(host.machineState("USDC")).toBe("DRIFT");
    expect(receipts).toHaveLength(1);
    await new Promise((resolve) => setImmediate(resolve)); // a WeakRef holds its target until the job ends
    gc();
    expect(receipts[0]!.deref()).toBeUndefined();
    host.stop();
  });
});

function usdc(clock: SimulatedClock, market: string): Sample {
  return { asset: "USDC", ts: clock.now(), intrinsic_usd: new D(1), market_usd: new D(market), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
}
