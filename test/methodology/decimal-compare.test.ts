import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cmp, cmpAbs, D, MIN_EXPONENT, decimalToWire, isDecimalText, parseDecimal } from "../../src/methodology/index.ts";

const decimalText = fc
  .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.integer({ min: 0, max: 45 }))
  .map(([neg, digits, scale]) => {
    const s = digits.toString().padStart(scale + 1, "0");
    const text = scale === 0 ? s : `${s.slice(0, s.length - scale)}.${s.slice(s.length - scale)}`;
    return neg ? `-${text}` : text;
  });

describe("allocation-free comparisons", () => {
  it("cmp agrees with decimal.js cmp on any pair", () => {
    fc.assert(
      fc.property(decimalText, decimalText, (a, b) => {
        const x = new D(a), y = new D(b);
        expect(cmp(x, y)).toBe(x.cmp(y));
        expect(cmp(x, x)).toBe(0);
      }),
      { numRuns: 2000 },
    );
  });

  it("cmpAbs agrees with |x|.cmp(|y|) on any pair", () => {
    fc.assert(
      fc.property(decimalText, decimalText, (a, b) => {
        const x = new D(a), y = new D(b);
        expect(cmpAbs(x, y)).toBe(x.abs().cmp(y.abs()));
      }),
      { numRuns: 2000 },
    );
  });

  it("handles zero, negative zero and equal values written differently", () => {
    expect(cmp(new D("-0"), new D("0"))).toBe(0);
    expect(cmp(new D("1.50"), new D("1.5"))).toBe(0);
    expect(cmpAbs(new D("-2"), new D("2"))).toBe(0);
    expect(cmp(new D("-0.0001"), new D("0"))).toBe(-1);
    expect(cmp(new D("10000000"), new D("9999999.9999999"))).toBe(1);
  });
});

describe("underflow floor", () => {
  it("flushes magnitudes below 1e-40 to exactly 0 and keeps 1e-40", () => {
    expect(MIN_EXPONENT).toBe(-40);
    expect(decimalToWire(new D("1e-41"))).toBe("0");
    expect(decimalToWire(new D("1e-40"))).toBe("0." + "0".repeat(39) + "1");
    expect(new D("0.003").times(new D("0.7").pow(400)).isZero()).toBe(true);
  });

  it("every wire decimal of the context parses back (no length limit is hit)", () => {
    fc.assert(
      fc.property(decimalText, (a) => {
        const x = new D(a).div(new D("7"));
        const w = decimalToWire(x);
        expect(parseDecimal(w)?.eq(x)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("isDecimalText accepts exactly what parseDecimal parses", () => {
    const texts = fc.oneof(decimalText, fc.string({ maxLength: 12 }), fc.constantFrom("1e-5", "NaN", "Infinity", "-0", "+.5", "5.", "", " 1", "1".repeat(161), "0x10"));
    fc.assert(fc.property(texts, (t) => isDecimalText(t) === (parseDecimal(t) !== null)), { numRuns: 2000 });
    expect([isDecimalText(1), isDecimalText(null)]).toEqual([false, false]);
  });
});
