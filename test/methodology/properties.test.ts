/** Property tests (fast-check) over random assets and random trigger timelines. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ASSET_CLASSES,
  BANDS,
  classifyCr,
  classifyCrPlain,
  classifySpread,
  classifySpreadPlain,
  computedToWire,
  D,
  INITIAL_STATE,
  inputsToWire,
  methodologyAssetFrom,
  rank,
  verifyBundle,
  type AssetClass,
  type AssetState,
  type CrThresholds,
  type Decimal,
  type OracleEntry,
  type Sample,
  type SpreadThresholds,
  type StepOptions,
  type Thresholds,
} from "../../src/methodology/index.ts";
import {
  altered,
  bundlesOf,
  catalogEntry,
  decisions,
  jsonCopy,
  mutate,
  runTimeline,
  SEC,
  T0,
  type TimelineEvent,
} from "./helpers.ts";

const RUNS = 150;

// ---------------------------------------------------------------- arbitraries

const spreadThresholdsArb: fc.Arbitrary<SpreadThresholds> = fc.oneof(
  fc.constantFrom<SpreadThresholds>(
    {},
    { drift_bps: 15, depeg_bps: 50, critical_bps: 200 },
    { drift_bps: 20, depeg_bps: 100, critical_bps: 300 },
    { drift_bps: 60, depeg_bps: 150, critical_bps: 300 },
    { drift_bps: 15, depeg_bps: 50, critical_bps: 200, black_swan_bps: 350 },
  ),
  fc
    .tuple(
      fc.integer({ min: 1, max: 200 }),
      fc.integer({ min: 1, max: 300 }),
      fc.integer({ min: 1, max: 500 }),
      fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }),
    )
    .map(([a, b, c, bs]): SpreadThresholds => {
      const t = { drift_bps: a, depeg_bps: a + b, critical_bps: a + b + c };
      return bs === undefined ? t : { ...t, black_swan_bps: a + b + c + bs };
    }),
);

const crThresholdsArb: fc.Arbitrary<CrThresholds> = fc.oneof(
  fc.constantFrom<CrThresholds>(
    { cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 },
    { cr_drift: 130, cr_depeg: 115, cr_critical: 105, cr_black_swan: 100 },
  ),
  fc
    .tuple(
      fc.integer({ min: 50, max: 110 }),
      fc.integer({ min: 1, max: 20 }),
      fc.integer({ min: 1, max: 20 }),
      fc.integer({ min: 1, max: 30 }),
    )
    .map(([bs, c, d, dr]) => ({
      cr_black_swan: bs,
      cr_critical: bs + c,
      cr_depeg: bs + c + d,
      cr_drift: bs + c + d + dr,
    })),
);

interface AssetSpec {
  readonly cls: AssetClass;
  readonly thresholds: Thresholds;
  readonly oracleFeed: boolean;
}

const assetSpecArb: fc.Arbitrary<AssetSpec> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ cls: fc.constantFrom(...ASSET_CLASSES), thresholds: spreadThresholdsArb, oracleFeed: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({ cls: fc.constant<AssetClass>("stable_cdp"), thresholds: crThresholdsArb, oracleFeed: fc.boolean() }),
  },
);

interface EventSpec {
  readonly dt: number;
  readonly timer: boolean;
  /** Discount in thousandths of a basis point. */
  readonly milliBps: number;
  readonly intrinsic: string;
  readonly special: "none" | "market0" | "intrinsic0";
  readonly oracle: "none" | "good" | "wide" | "bad" | "zero";
  readonly crBp: number;
  readonly stale: boolean;
  readonly sol: boolean;
}

const eventArb: fc.Arbitrary<EventSpec> = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 5_000, max: 150_000 })),
  timer: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  milliBps: fc.oneof(
    fc.integer({ min: -50_000, max: 50_000 }),
    fc.integer({ min: -1_500_000, max: 1_500_000 }),
    fc.integer({ min: 0, max: 9_000_000 }),
  ),
  intrinsic: fc.constantFrom("1", "1", "1.0734", "150.25", "21817.55"),
  special: fc.constantFrom("none", "none", "none", "none", "none", "none", "none", "none", "market0", "intrinsic0"),
  oracle: fc.constantFrom("none", "none", "good", "wide", "bad", "zero"),
  crBp: fc.integer({ min: 8_000, max: 20_000 }),
  stale: fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
  sol: fc.boolean(),
});

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  spec: assetSpecArb,
  events: fc.array(eventArb, { minLength: 1, maxLength: 40 }),
  liveness: fc.boolean(),
});

function oracleOf(kind: EventSpec["oracle"], ts: number): Record<string, OracleEntry> {
  const e = (price: string, conf: string): OracleEntry => ({ price: new D(price), conf: new D(conf), publish_time: ts });
  switch (kind) {
    case "none":
      return {};
    case "good":
      return { px: e("1.0001", "0.0001") };
    case "wide":
      return { px: e("1", "0.003"), sol: e("150.5", "0.01") };
    case "bad":
      return { px: e("1", "0.0500001") };
    case "zero":
      return { px: e("0", "1") };
  }
}

function buildSample(symbol: string, e: EventSpec, ts: number): Sample {
  const d = new D(e.milliBps).div(10_000_000);
  const intrinsic = e.special === "intrinsic0" ? new D(0) : new D(e.intrinsic);
  const market = e.special === "market0" ? new D(0) : new D(e.intrinsic).times(new D(1).minus(d));
  const intrinsicSol = new D("1.2534");
  return {
    asset: symbol,
    ts,
    intrinsic_usd: intrinsic,
    market_usd: market,
    intrinsic_sol: e.sol ? intrinsicSol : null,
    market_sol: e.sol ? (e.special === "market0" ? new D(0) : intrinsicSol.times(new D(1).minus(d))) : null,
    cr: new D(e.crBp).div(10_000),
    oracle: oracleOf(e.oracle, ts),
    intrinsic_stale: e.stale,
  };
}

interface Scenario {
  readonly spec: AssetSpec;
  readonly events: readonly EventSpec[];
  readonly liveness: boolean;
}

function materialise(s: Scenario) {
  const extra = s.spec.oracleFeed ? { oracle_feed_id: "feed-1" } : {};
  const entry = catalogEntry(s.spec.cls, s.spec.thresholds, extra);
  const asset = methodologyAssetFrom(entry);
  const events: TimelineEvent[] = [];
  let t = T0;
  for (const e of s.events) {
    t += e.dt;
    events.push(e.timer ? { kind: "dwell_timer", now: t } : { kind: "sample", sample: buildSample(asset.symbol, e, t), now: t });
  }
  const options: StepOptions = { intrinsicLivenessGate: s.liveness };
  return { entry, asset, events, options };
}

function run(s: Scenario) {
  const m = materialise(s);
  return { ...m, result: runTimeline(m.asset, m.events, m.options) };
}

function wireOf(r: ReturnType<typeof runTimeline>): unknown[] {
  return r.outcomes.map((o) =>
    o.kind === "skipped"
      ? o
      : {
          inputs: inputsToWire(o.decision.inputs),
          computed: computedToWire(o.decision.computed),
          transition: o.decision.transition,
          state_reason: o.decision.state_reason,
        },
  );
}

const isD = (v: unknown): boolean => v instanceof D;

// ---------------------------------------------------------------- properties

describe("properties", () => {
  it("replay determinism: the same sample sequence through step twice gives identical wire outputs", () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const a = run(s);
        const b = run(s); // freshly built samples and Decimals
        expect(JSON.stringify(wireOf(b.result))).toBe(JSON.stringify(wireOf(a.result)));
        const ra = bundlesOf(a.entry, a.asset, a.result.outcomes).map((i) => i.receipt);
        const rb = bundlesOf(b.entry, b.asset, b.result.outcomes).map((i) => i.receipt);
        expect(JSON.stringify(rb)).toBe(JSON.stringify(ra));
      }),
      { numRuns: RUNS },
    );
  });

  it("every transition's replay bundle verifies with exit 0 (also after a JSON round trip)", () => {
    let total = 0;
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { entry, asset, result } = run(s);
        for (const { bundle } of bundlesOf(entry, asset, result.outcomes)) {
          total++;
          const r = verifyBundle(bundle);
          expect(r.exit, r.message).toBe(0);
          expect(verifyBundle(jsonCopy(bundle)).exit).toBe(0);
        }
      }),
      { numRuns: RUNS },
    );
    expect(total).toBeGreaterThan(50); // the generator really produces transitions
  });

  it("altering any single field of inputs_frozen or expected_computed makes verify fail with exit 1", () => {
    fc.assert(
      fc.property(scenarioArb, fc.nat(), fc.boolean(), (s, pick, inComputed) => {
        const { entry, asset, result } = run(s);
        for (const { bundle } of bundlesOf(entry, asset, result.outcomes)) {
          const part = inComputed ? "expected_computed" : "inputs_frozen";
          const obj = bundle[part] as unknown as Record<string, unknown>;
          const keys = Object.keys(obj);
          const key = keys[pick % keys.length]!;
          const value = altered(key, obj[key]);
          expect(JSON.stringify(value)).not.toBe(JSON.stringify(obj[key]));
          const r = verifyBundle(mutate(bundle, part, key, value, false));
          expect(r.exit, `${part}.${key}: ${r.message}`).toBe(1);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("escalation is never delayed by the deadband (spread path)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -9_999_999, max: 9_999_999 }),
        fc.constantFrom(...ASSET_CLASSES),
        spreadThresholdsArb,
        fc.constantFrom(...BANDS),
        (n, cls, t, committed) => {
          const d = new D(n).div(10_000_000);
          const plain = classifySpreadPlain(d, cls, t);
          const got = classifySpread(d, cls, t, committed);
          if (rank(plain) >= rank(committed)) {
            expect(got).toBe(plain);
          }
          // the deadband only ever holds a band: the result is never below the plain band
          expect(rank(got)).toBeGreaterThanOrEqual(rank(plain));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("escalation is never delayed by the deadband (collateral-ratio path)", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1_000, max: 30_000 }), crThresholdsArb, fc.constantFrom(...BANDS), (n, t, committed) => {
        const cr = new D(n).div(10_000);
        const plain = classifyCrPlain(cr, t);
        const got = classifyCr(cr, t, committed);
        if (rank(plain) >= rank(committed)) expect(got).toBe(plain);
        expect(rank(got)).toBeGreaterThanOrEqual(rank(plain));
      }),
      { numRuns: 400 },
    );
  });

  it("Decimal never becomes number: decimal outputs are Decimal instances, wire outputs are strings", () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { result } = run(s);
        for (const d of decisions(result.outcomes)) {
          const i = d.inputs;
          const c = d.computed;
          for (const v of [c.discount_raw, c.discount_smooth, i.alpha, i.intrinsic_usd, i.market_usd]) expect(isD(v)).toBe(true);
          for (const v of [i.intrinsic_sol, i.market_sol, i.cr, i.ewma_prev]) if (v !== null) expect(isD(v)).toBe(true);
          for (const e of Object.values(i.oracle)) {
            expect(isD(e.price)).toBe(true);
            expect(isD(e.conf)).toBe(true);
          }
          const w = inputsToWire(i);
          for (const v of [w.alpha, w.intrinsic_usd, w.market_usd, w.now]) expect(typeof v).toBe("string");
          for (const v of [w.intrinsic_sol, w.market_sol, w.cr, w.ewma_prev, w.candidate_since]) {
            if (v !== null) expect(typeof v).toBe("string");
          }
          for (const e of Object.values(w.oracle)) {
            expect(typeof e.price).toBe("string");
            expect(typeof e.conf).toBe("string");
            expect(typeof e.publish_time).toBe("string");
          }
          const cw = computedToWire(c);
          expect(typeof cw.discount_raw).toBe("string");
          expect(typeof cw.discount_smooth).toBe("string");
        }
        for (const st of result.states) {
          const decimals: (Decimal | null)[] = [st.ewma, st.ewmaPrev, st.discountRaw];
          for (const v of decimals) if (v !== null) expect(isD(v)).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("a band only commits after its dwell window, from a tracked candidate", () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { result } = run(s);
        for (const d of decisions(result.outcomes)) {
          const i = d.inputs;
          if (d.computed.band === i.previous_band) continue;
          expect(i.candidate_state).not.toBeNull();
          expect(i.candidate_since).not.toBeNull();
          const escalating = rank(d.computed.band) > rank(i.previous_band);
          const elapsed = Math.trunc((i.now - i.candidate_since!) / SEC);
          expect(elapsed).toBeGreaterThanOrEqual(escalating ? 30 : 120);
          // the tracked candidate was on the same side
          expect(rank(i.candidate_state!) > rank(i.previous_band)).toBe(escalating);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("a dwell-timer decision reproduces the previous d_smooth and freezes a now no later than any later sample", () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { result } = run(s);
        const ds = decisions(result.outcomes);
        ds.forEach((d, k) => {
          if (d.inputs.trigger !== "dwell_timer") return;
          expect(k).toBeGreaterThan(0);
          const prev = ds[k - 1]!;
          expect(d.computed.discount_smooth.eq(prev.computed.discount_smooth)).toBe(true);
          expect(d.computed.discount_raw.eq(prev.computed.discount_raw)).toBe(true);
          expect(d.inputs.now).toBeGreaterThanOrEqual(prev.inputs.now);
          const next = ds[k + 1];
          if (next) expect(next.inputs.now).toBeGreaterThanOrEqual(d.inputs.now);
        });
      }),
      { numRuns: RUNS },
    );
  });

  it("gates never mask a committed BLACK_SWAN; a gate always publishes UNKNOWN", () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { result } = run(s);
        for (const d of decisions(result.outcomes)) {
          if (d.computed.band === "BLACK_SWAN") expect(d.computed.final_state).toBe("BLACK_SWAN");
          expect(d.computed.final_state === "UNKNOWN").toBe(d.computed.gate !== null);
          expect(d.state_reason).toBe(d.computed.gate === "premium_sanity" ? "premium_sanity" : null);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("skipped samples never change the state", () => {
    let skips = 0;
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const m = materialise(s);
        let state: AssetState = INITIAL_STATE;
        for (const ev of m.events) {
          const r = runTimeline(m.asset, [ev], m.options, state);
          if (r.outcomes.length === 1 && r.outcomes[0]!.kind === "skipped") {
            skips++;
            expect(r.state).toEqual(state);
          }
          state = r.state;
        }
      }),
      { numRuns: 100 },
    );
    expect(skips).toBeGreaterThan(20);
  });
});
