import { Decimal } from "decimal.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ActorHost, EVENT_HISTORY, EventRing, machineView, type RecordedEvent } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { BANDS, D, PEG_STATES, decimalToWire, type AssetState } from "../../src/methodology/index.ts";

/** The naive ring the compact one must be indistinguishable from: an array of the pushed objects. */
class ReferenceRing {
  readonly #items: RecordedEvent[] = [];
  constructor(readonly capacity: number) {}
  push(e: RecordedEvent): void {
    if (this.capacity === 0) return;
    this.#items.push(e);
    if (this.#items.length > this.capacity) this.#items.shift();
  }
  toArray(): RecordedEvent[] {
    return [...this.#items];
  }
}

/** A context far wider than the methodology's: huge exponents, more digits, exponent notation in toString(). */
const Wide = Decimal.clone({ precision: 60, minE: -9e15, maxE: 9e15, toExpNeg: -7, toExpPos: 21 });

const digits = (min: number, max: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: min, maxLength: max }).map((a) => a.join(""));
const sign = fc.constantFrom("", "-");
const smallExp = fc.integer({ min: -60, max: 40 });
const anyExp = fc.oneof(smallExp, fc.integer({ min: -9000, max: 9000 }), fc.constantFrom(-8192, -8191, 8191, 8192, -9e15, 9e15), fc.integer({ min: -2e9, max: 2e9 }));

/** Decimals of the methodology's context as the engine makes them: parsed, and 34-digit results of arithmetic. */
const engineDecimal = fc.oneof(
  fc.tuple(sign, digits(1, 34), smallExp).map(([s, m, e]) => new D(`${s}${m}e${e}`)),
  fc.tuple(fc.integer({ min: -1_000_000, max: 1_000_000 }), fc.integer({ min: 1, max: 1_000_000 }), smallExp).map(([a, b, e]) => new D(a).div(b).mul(new D(10).pow(e))),
  fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 34n - 1n }), fc.integer({ min: -40, max: 20 }), fc.boolean()).map(([c, e, neg]) => {
    const v = new D(`${c}e${e - c.toString().length + 1}`);
    return neg ? v.neg() : v;
  }),
  fc.constantFrom(new D(0), new D("-0"), new D(1), new D(-1), new D("1e-40"), new D("9".repeat(34)), new D(`0.${"9".repeat(34)}`), new D(`-${"1".repeat(34)}e-40`)),
);

/** Anything a Decimal can be, including what no slot holds: more digits, far exponents, another context, non-finite. */
const anyDecimal = fc.oneof(
  engineDecimal,
  fc.tuple(sign, digits(1, 60), anyExp).map(([s, m, e]) => new Wide(`${s}${m}e${e}`)),
  fc.tuple(sign, digits(35, 50), smallExp).map(([s, m, e]) => new D(`${s}${m}e${e}`)),
  fc.constantFrom(new D(NaN), new D(Infinity), new D(-Infinity), new Wide(NaN), new Wide("-0")),
);

/** Epoch milliseconds, as the host records them (and as the wire form accepts). */
const epochMs = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2040, 0, 1) });
/** Any number: the ring keeps `at` bit for bit, whatever it is. */
const anyAt = fc.oneof(
  epochMs,
  fc.double(),
  fc.constantFrom(0, -0, Number.MAX_SAFE_INTEGER, Number.MIN_VALUE, NaN, Infinity),
);

const event = (discount: fc.Arbitrary<Decimal>, at: fc.Arbitrary<number>): fc.Arbitrary<RecordedEvent> =>
  fc.record({
    type: fc.constantFrom("SAMPLE", "DWELL_DUE", "RESUME"),
    at,
    result: fc.constantFrom("accepted", "skipped"),
    skipReason: fc.constantFrom(null, "no_value", "implausible", "missing_cr"),
    state: fc.constantFrom(null, ...PEG_STATES),
    band: fc.constantFrom(...BANDS),
    candidate: fc.constantFrom(null, ...BANDS),
    discount: fc.option(discount, { nil: null }),
    transition: fc.boolean(),
  });

const capacity = fc.oneof(fc.constantFrom(0, 1, 2, EVENT_HISTORY), fc.integer({ min: 0, max: 64 }));

function fill(cap: number, events: readonly RecordedEvent[]): [RecordedEvent[], RecordedEvent[]] {
  const ring = new EventRing(cap);
  const ref = new ReferenceRing(cap);
  for (const e of events) {
    ring.push(e);
    ref.push(e);
  }
  return [ring.toArray(), ref.toArray()];
}

/** Exactly the same events: every field, and the discount's sign, exponent, words, context and text. */
function expectSame(got: readonly RecordedEvent[], want: readonly RecordedEvent[]): void {
  expect(got).toEqual(want);
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => {
    const w = want[i]!;
    expect(Object.keys(g)).toEqual(Object.keys(w));
    expect(Object.is(g.at, w.at)).toBe(true);
    if (w.discount === null) {
      expect(g.discount).toBeNull();
      return;
    }
    const gd = g.discount!, wd = w.discount;
    expect(gd.constructor).toBe(wd.constructor);
    expect([gd.s, gd.e, gd.d]).toEqual([wd.s, wd.e, wd.d]);
    expect(gd.toString()).toBe(wd.toString());
    if (wd.isFinite() && Math.abs(wd.e) < 10_000) {
      // (the wire form writes every digit: not for exponents in the quadrillions)
      expect(decimalToWire(gd)).toBe(decimalToWire(wd));
      expect(gd.eq(wd)).toBe(true);
    }
  });
}

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const engine: AssetState = new ActorHost({ assets: [USDC], clock: new SimulatedClock(0), gitSha: "" }).engineState("USDC")!;

describe("compact event ring", () => {
  it("returns exactly what a naive array ring returns, and the same machine view, for engine decimals", () => {
    fc.assert(
      fc.property(capacity, fc.array(event(engineDecimal, epochMs), { maxLength: 130 }), (cap, events) => {
        const [got, want] = fill(cap, events);
        expectSame(got, want);
        // Engine events are packed into the ring's store, not kept by reference.
        got.forEach((g, i) => expect(g).not.toBe(want[i]));
        const view = (evs: RecordedEvent[]) => machineView(USDC, "cold", engine, evs).events;
        expect(view(got)).toEqual(view(want));
        expect(JSON.stringify(view(got))).toBe(JSON.stringify(view(want)));
      }),
      { numRuns: 1500 },
    );
  });

  it("is exact for any decimal, including those no slot holds (more digits, far exponents, other contexts, NaN)", () => {
    fc.assert(
      fc.property(capacity, fc.array(event(anyDecimal, anyAt), { maxLength: 130 }), (cap, events) => {
        const [got, want] = fill(cap, events);
        expectSame(got, want);
      }),
      { numRuns: 1500 },
    );
  });

  it("keeps 34 significant digits exactly at every word alignment and exponent of the methodology", () => {
    const ring = new EventRing(EVENT_HISTORY);
    const ref = new ReferenceRing(EVENT_HISTORY);
    const base: RecordedEvent = { type: "SAMPLE", at: 1, result: "accepted", skipReason: null, state: "PEGGED", band: "PEGGED", candidate: null, discount: null, transition: false };
    for (const m of ["1234567890123456789012345678901234", "9".repeat(34), `1${"0".repeat(32)}1`, "1"]) {
      for (let e = -40; e <= 30; e++) {
        for (const s of ["", "-"]) {
          const e1 = { ...base, at: e, discount: new D(`${s}${m[0]}.${m.slice(1)}e${e}`) };
          ring.push(e1);
          ref.push(e1);
          expect(ring.toArray().at(-1)!.discount!.toString()).toBe(e1.discount.toString());
        }
      }
    }
    expectSame(ring.toArray(), ref.toArray());
  });

  it("keeps a value it cannot pack, and fields outside the known values, as they are", () => {
    const ring = new EventRing(3);
    const odd = { type: "SAMPLE", at: 5, result: "accepted", skipReason: "brand_new", state: null, band: "PEGGED", candidate: null, discount: new D(`${"7".repeat(45)}e-3`), transition: false } as unknown as RecordedEvent;
    const plain: RecordedEvent = { type: "RESUME", at: 6, result: "accepted", skipReason: null, state: "UNKNOWN", band: "BLACK_SWAN", candidate: "DRIFT", discount: new D("-0.5"), transition: true };
    ring.push(odd);
    ring.push(plain);
    expectSame(ring.toArray(), [odd, plain]);
    for (let i = 0; i < 3; i++) ring.push(plain); // the kept-aside slot is overwritten
    expectSame(ring.toArray(), [plain, plain, plain]);
  });

  it("holds nothing with capacity 0 and rejects an invalid capacity", () => {
    const none = new EventRing(0);
    none.push({ type: "SAMPLE", at: 1, result: "accepted", skipReason: null, state: null, band: "PEGGED", candidate: null, discount: new D(1), transition: false });
    expect(none.toArray()).toEqual([]);
    expect(new EventRing().capacity).toBe(EVENT_HISTORY);
    expect(() => new EventRing(-1)).toThrow(RangeError);
    expect(() => new EventRing(1.5)).toThrow(RangeError);
  });
});
