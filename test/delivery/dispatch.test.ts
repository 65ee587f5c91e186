import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DISPATCH_FLOOR_MS, decideDispatch, type DispatchTarget, type DispatchTransition, type PriorSend } from "../../src/delivery/dispatch.ts";

const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);
const MIN = 60_000;
const MINT = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

function tr(over: Partial<DispatchTransition> = {}): DispatchTransition {
  return { asset: "USDC", mint: MINT, from_state: "PEGGED", to_state: "DEPEG", discount_bps: -212, ts: T0, calibration: "calibrated", ...over };
}
const target = (over: Partial<DispatchTarget> = {}): DispatchTarget => ({ threshold_bps: 100, is_active: true, asset: "USDC", ...over });
const sent = (to_state: PriorSend["to_state"], ts: number, asset = "USDC"): PriorSend => ({ asset, to_state, ts });

describe("decideDispatch: target and threshold", () => {
  it("skips an inactive target and a transition of another asset", () => {
    expect(decideDispatch(tr(), target({ is_active: false }), [])).toEqual({ send: false, reason: "inactive" });
    expect(decideDispatch(tr({ asset: "USDT", mint: "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB" }), target(), [])).toEqual({ send: false, reason: "other_asset" });
  });

  it("matches the target's asset by symbol or by mint, and a target without an asset follows every asset", () => {
    expect(decideDispatch(tr(), target({ asset: MINT }), [])).toMatchObject({ send: true });
    expect(decideDispatch(tr(), target({ asset: null }), [])).toMatchObject({ send: true });
    const { asset: _asset, ...noAsset } = target();
    expect(decideDispatch(tr(), noAsset, [])).toMatchObject({ send: true });
  });

  it("fires at |discount_bps| >= threshold_bps, on either sign, and not one basis point below", () => {
    expect(decideDispatch(tr({ discount_bps: -100 }), target(), [])).toEqual({ send: true, reason: "threshold", floorBypassed: false });
    expect(decideDispatch(tr({ discount_bps: 100 }), target(), [])).toEqual({ send: true, reason: "threshold", floorBypassed: false });
    expect(decideDispatch(tr({ discount_bps: -99 }), target(), [])).toEqual({ send: false, reason: "below_threshold" });
    expect(decideDispatch(tr({ discount_bps: 99 }), target(), [])).toEqual({ send: false, reason: "below_threshold" });
    expect(decideDispatch(tr({ discount_bps: 0 }), target({ threshold_bps: 0 }), [])).toMatchObject({ send: true, reason: "threshold" });
    expect(decideDispatch(tr({ discount_bps: -10_000 }), target({ threshold_bps: 10_000 }), [])).toMatchObject({ send: true });
  });
});

describe("decideDispatch: recovery to PEGGED", () => {
  const back = tr({ from_state: "DEPEG", to_state: "PEGGED", discount_bps: -5, ts: T0 + 10 * MIN });

  it("fires on the return to PEGGED after a transition that fired for this target, whatever the discount", () => {
    expect(decideDispatch(back, target(), [sent("DEPEG", T0)])).toEqual({ send: true, reason: "recovery", floorBypassed: false });
  });

  it("fires when intermediate steps stayed under the threshold (the last send is still the departure)", () => {
    const viaDrift = tr({ from_state: "DRIFT", to_state: "PEGGED", discount_bps: -3, ts: T0 + 20 * MIN });
    expect(decideDispatch(viaDrift, target(), [sent("DEPEG", T0)])).toMatchObject({ send: true, reason: "recovery" });
  });

  it("does not fire when nothing fired before, or the last send was already a return to PEGGED", () => {
    expect(decideDispatch(back, target(), [])).toEqual({ send: false, reason: "below_threshold" });
    expect(decideDispatch(back, target(), [sent("DEPEG", T0 - 60 * MIN), sent("PEGGED", T0 - 40 * MIN)])).toEqual({ send: false, reason: "below_threshold" });
  });

  it("looks only at sends of this asset, and only at sends before the transition", () => {
    expect(decideDispatch(back, target({ asset: null }), [sent("DEPEG", T0, "USDT")])).toEqual({ send: false, reason: "below_threshold" });
    expect(decideDispatch(back, target(), [sent("DEPEG", back.ts)])).toEqual({ send: false, reason: "below_threshold" });
    expect(decideDispatch(back, target(), [sent("DEPEG", back.ts + 1)])).toEqual({ send: false, reason: "below_threshold" });
  });

  it("recognises sends recorded by mint", () => {
    expect(decideDispatch(back, target(), [sent("DEPEG", T0, MINT)])).toMatchObject({ send: true, reason: "recovery" });
  });

  it("is itself subject to the 30-minute floor (a flapping asset does not spam recoveries)", () => {
    const sends = [sent("PEGGED", T0 - 5 * MIN), sent("DEPEG", T0)];
    expect(decideDispatch(back, target(), sends)).toEqual({ send: false, reason: "floor", until: T0 - 5 * MIN + DISPATCH_FLOOR_MS });
  });

  it("a transition to PEGGED that reaches the threshold fires as a threshold send", () => {
    expect(decideDispatch(tr({ from_state: "DEPEG", to_state: "PEGGED", discount_bps: -150 }), target(), [])).toMatchObject({ send: true, reason: "threshold" });
  });
});

describe("decideDispatch: the 30-minute floor", () => {
  const again = (dt: number, over: Partial<DispatchTransition> = {}): DispatchTransition => tr({ from_state: "DRIFT", ts: T0 + dt, ...over });

  it("does not send the same (target, asset, to_state) within 30 minutes: 30 min - 1 ms is suppressed", () => {
    expect(decideDispatch(again(DISPATCH_FLOOR_MS - 1), target(), [sent("DEPEG", T0)])).toEqual({ send: false, reason: "floor", until: T0 + DISPATCH_FLOOR_MS });
    expect(decideDispatch(again(1), target(), [sent("DEPEG", T0)])).toMatchObject({ send: false, reason: "floor" });
  });

  it("sends again at exactly 30 minutes, and later", () => {
    expect(decideDispatch(again(DISPATCH_FLOOR_MS), target(), [sent("DEPEG", T0)])).toEqual({ send: true, reason: "threshold", floorBypassed: false });
    expect(decideDispatch(again(DISPATCH_FLOOR_MS + 1), target(), [sent("DEPEG", T0)])).toMatchObject({ send: true });
  });

  it("measures from the latest such send, whatever the order of the list", () => {
    const sends = [sent("DEPEG", T0 + 10 * MIN), sent("DEPEG", T0)];
    expect(decideDispatch(again(DISPATCH_FLOOR_MS), target(), sends)).toEqual({ send: false, reason: "floor", until: T0 + 10 * MIN + DISPATCH_FLOOR_MS });
  });

  it("applies per to_state and per asset", () => {
    expect(decideDispatch(again(MIN, { to_state: "CRITICAL", discount_bps: -600 }), target(), [sent("DEPEG", T0)])).toMatchObject({ send: true });
    expect(decideDispatch(again(MIN), target({ asset: null }), [sent("DEPEG", T0, "USDT")])).toMatchObject({ send: true });
  });

  it("a calibrated asset's BLACK_SWAN bypasses the floor, at any distance inside it", () => {
    const swan = (dt: number): DispatchTransition => again(dt, { from_state: "CRITICAL", to_state: "BLACK_SWAN", discount_bps: -2500 });
    const sends = [sent("BLACK_SWAN", T0)];
    expect(decideDispatch(swan(1), target(), sends)).toEqual({ send: true, reason: "threshold", floorBypassed: true });
    expect(decideDispatch(swan(DISPATCH_FLOOR_MS - 1), target(), sends)).toEqual({ send: true, reason: "threshold", floorBypassed: true });
    expect(decideDispatch(swan(DISPATCH_FLOOR_MS), target(), sends)).toEqual({ send: true, reason: "threshold", floorBypassed: false });
  });

  it("a provisional (beta) asset's BLACK_SWAN does not bypass the floor (interface 6.5.1)", () => {
    const swan = (dt: number): DispatchTransition =>
      again(dt, { from_state: "CRITICAL", to_state: "BLACK_SWAN", discount_bps: -2500, calibration: "provisional" });
    const sends = [sent("BLACK_SWAN", T0)];
    expect(decideDispatch(swan(DISPATCH_FLOOR_MS - 1), target(), sends)).toEqual({ send: false, reason: "floor", until: T0 + DISPATCH_FLOOR_MS });
    expect(decideDispatch(swan(DISPATCH_FLOOR_MS), target(), sends)).toEqual({ send: true, reason: "threshold", floorBypassed: false });
  });

  it("the bypass is for BLACK_SWAN only, not for other severe states of a calibrated asset", () => {
    const crit = again(MIN, { to_state: "CRITICAL", discount_bps: -900 });
    expect(decideDispatch(crit, target(), [sent("CRITICAL", T0)])).toMatchObject({ send: false, reason: "floor" });
  });

  it("the bypass does not override the threshold or an inactive target", () => {
    const swan = again(MIN, { to_state: "BLACK_SWAN", discount_bps: -50 });
    expect(decideDispatch(swan, target(), [sent("BLACK_SWAN", T0)])).toEqual({ send: false, reason: "below_threshold" });
    expect(decideDispatch(again(MIN, { to_state: "BLACK_SWAN", discount_bps: -3000 }), target({ is_active: false }), [])).toEqual({ send: false, reason: "inactive" });
  });
});

describe("decideDispatch: a whole episode", () => {
  it("departure, suppressed repeat, deeper state, recovery, and a new departure after the floor", () => {
    const t = target({ threshold_bps: 150 });
    const sends: PriorSend[] = [];
    const run = (x: DispatchTransition): string => {
      const d = decideDispatch(x, t, sends);
      if (d.send) sends.push({ asset: x.asset, to_state: x.to_state, ts: x.ts });
      return d.reason;
    };
    const steps: [Partial<DispatchTransition>, string][] = [
      [{ from_state: "PEGGED", to_state: "DRIFT", discount_bps: -60, ts: T0 }, "below_threshold"],
      [{ from_state: "DRIFT", to_state: "DEPEG", discount_bps: -210, ts: T0 + MIN }, "threshold"],
      [{ from_state: "DEPEG", to_state: "DRIFT", discount_bps: -90, ts: T0 + 5 * MIN }, "below_threshold"],
      [{ from_state: "DRIFT", to_state: "DEPEG", discount_bps: -220, ts: T0 + 8 * MIN }, "floor"],
      [{ from_state: "DEPEG", to_state: "DRIFT", discount_bps: -80, ts: T0 + 12 * MIN }, "below_threshold"],
      [{ from_state: "DRIFT", to_state: "PEGGED", discount_bps: -10, ts: T0 + 20 * MIN }, "recovery"],
      [{ from_state: "PEGGED", to_state: "DEPEG", discount_bps: -300, ts: T0 + 31 * MIN }, "threshold"],
    ];
    expect(steps.map(([x]) => run(tr(x)))).toEqual(steps.map(([, r]) => r));
  });
});

describe("decideDispatch: properties", () => {
  const states = ["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"] as const;
  const arbSend = fc.record({ asset: fc.constantFrom("USDC", MINT, "USDT"), to_state: fc.constantFrom(...states), ts: fc.integer({ min: T0 - 90 * MIN, max: T0 + 90 * MIN }) });
  const arbTransition = fc.record({
    from_state: fc.constantFrom(...states),
    to_state: fc.constantFrom(...states),
    discount_bps: fc.integer({ min: -10_000, max: 10_000 }),
    ts: fc.integer({ min: T0 - 60 * MIN, max: T0 + 60 * MIN }),
    calibration: fc.constantFrom("calibrated" as const, "provisional" as const),
  });

  it("a send never repeats (asset, to_state) within 30 minutes unless it is a calibrated BLACK_SWAN, and the reasons are consistent", () => {
    fc.assert(
      fc.property(arbTransition, fc.array(arbSend, { maxLength: 8 }), fc.integer({ min: 0, max: 10_000 }), (x, sends, threshold) => {
        const t = tr(x);
        const d = decideDispatch(t, target({ threshold_bps: threshold }), sends);
        const recentSame = sends.some((s) => (s.asset === "USDC" || s.asset === MINT) && s.to_state === t.to_state && s.ts < t.ts && t.ts - s.ts < DISPATCH_FLOOR_MS);
        if (Math.abs(t.discount_bps) >= threshold) expect(d.reason === "threshold" || d.reason === "floor").toBe(true);
        if (d.send) {
          expect(d.floorBypassed).toBe(recentSame);
          if (recentSame) expect([t.to_state, t.calibration]).toEqual(["BLACK_SWAN", "calibrated"]);
          if (d.reason === "recovery") expect(t.to_state).toBe("PEGGED");
        } else if (d.reason === "floor") {
          expect(recentSame).toBe(true);
          expect(d.until).toBeGreaterThan(t.ts);
        }
      }),
      { numRuns: 2_000 },
    );
  });
});
