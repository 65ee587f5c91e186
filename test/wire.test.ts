import { describe, it, expect } from "vitest";
import fc from "fast-check";
import {
  D,
  bpsToWireInt,
  decimalOrNull,
  decimalToWire,
  listEnvelope,
  parseDecimal,
  parseTimestamp,
  timestampOrNull,
  timestampToWire,
  usdAggregateOrNull,
  usdAggregateToWire,
  type Decimal,
} from "../src/wire/index.ts";

const WIRE_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** The canonical wire decimal: no leading zeros, no trailing fractional zeros, no exponent, no `-0`. */
const CANONICAL_DECIMAL = /^(?:0|-?(?:[1-9]\d*(?:\.\d*[1-9])?|0\.\d*[1-9]))$/;

const digit = fc.constantFrom(..."0123456789".split(""));
const digits = (min: number, max: number): fc.Arbitrary<string> => fc.string({ unit: digit, minLength: min, maxLength: max });

/** Places a decimal point `scale` digits from the right of an integer digit string, padding with zeros as needed. */
function withScale(intDigits: string, scale: number): string {
  if (scale === 0) return intDigits;
  const padded = intDigits.padStart(scale + 1, "0");
  return `${padded.slice(0, padded.length - scale)}.${padded.slice(padded.length - scale)}`;
}

/** What the wire form of a plain decimal string must be, computed by string rules alone (no decimal library). */
function canonical(text: string): string {
  const negative = text.startsWith("-");
  const body = negative ? text.slice(1) : text;
  const [intPart = "", fracPart = ""] = body.split(".");
  const int = intPart.replace(/^0+/, "") || "0";
  const frac = fracPart.replace(/0+$/, "");
  const magnitude = frac === "" ? int : `${int}.${frac}`;
  return magnitude === "0" ? "0" : negative ? `-${magnitude}` : magnitude;
}

/** Random plain decimals built from big integer digit strings (up to 40 digits) and scales (0-35), either sign. */
const plainDecimal = fc
  .record({ negative: fc.boolean(), intDigits: digits(1, 40), scale: fc.integer({ min: 0, max: 35 }) })
  .map(({ negative, intDigits, scale }) => `${negative ? "-" : ""}${withScale(intDigits, scale)}`);

function parsed(text: string): Decimal {
  const d = parseDecimal(text);
  if (d === null) throw new Error(`parseDecimal refused ${text}`);
  return d;
}

describe("decimal wire form", () => {
  it("round-trips exactly through decimalToWire and parseDecimal", () => {
    fc.assert(
      fc.property(plainDecimal, (text) => {
        const value = parsed(text);
        const wire = decimalToWire(value);
        const back = parsed(wire);
        expect(back.eq(value)).toBe(true);
        expect(decimalToWire(back)).toBe(wire);
        expect(wire).toBe(canonical(text));
        expect(wire).toMatch(CANONICAL_DECIMAL);
      }),
      { numRuns: 2000 },
    );
  });

  it("never uses exponent form from 1e-30 to 1e30, either sign", () => {
    const texts: string[] = [];
    for (let k = 1; k <= 30; k++) {
      texts.push(`1${"0".repeat(k)}`, `0.${"0".repeat(k - 1)}1`, `0.${"0".repeat(k - 1)}123456789`, `9${"9".repeat(k)}.5`);
    }
    for (const text of [...texts, ...texts.map((t) => `-${t}`)]) {
      const wire = decimalToWire(parsed(text));
      expect(wire, text).not.toMatch(/[eE]/);
      expect(wire).toBe(canonical(text));
    }
    // Computed values too, not only parsed ones: decimal.js would switch to exponent form under default settings.
    fc.assert(
      fc.property(fc.integer({ min: -30, max: 30 }), digits(1, 20), fc.boolean(), (exp, mantissa, negative) => {
        const value = parsed(`${negative ? "-" : ""}${mantissa}`).div(7).times(new D(10).pow(exp));
        expect(decimalToWire(value)).not.toMatch(/[eE]/);
        expect(parsed(decimalToWire(value)).eq(value)).toBe(true);
      }),
    );
  });

  it("trims trailing zeros and writes -0 as 0", () => {
    expect(decimalToWire(parsed("0.9990"))).toBe("0.999");
    expect(decimalToWire(parsed("1.000"))).toBe("1");
    expect(decimalToWire(parsed("100"))).toBe("100");
    expect(decimalToWire(parsed("-12.50"))).toBe("-12.5");
    expect(decimalToWire(parsed("-0"))).toBe("0");
    expect(decimalToWire(parsed("-0.000"))).toBe("0");
    expect(decimalToWire(new D(-0))).toBe("0");
    expect(decimalToWire(new D("1e-30").neg().times(0))).toBe("0");
  });

  it("refuses floats' spellings and non-finite values", () => {
    for (const bad of ["1e3", "NaN", "Infinity", "0x10", "", " 1", "1,5", 1.5 as unknown as string]) {
      expect(parseDecimal(bad), String(bad)).toBeNull();
    }
    expect(() => decimalToWire(new D(NaN))).toThrow(RangeError);
  });

  it("decimalOrNull maps unknown to null", () => {
    expect(decimalOrNull(null)).toBeNull();
    expect(decimalOrNull(undefined)).toBeNull();
    expect(decimalOrNull(parsed("0.0100"))).toBe("0.01");
  });
});

describe("USD aggregates", () => {
  it("round half-even to cents, then trim", () => {
    const cases: [string, string][] = [
      ["1.005", "1"],
      ["1.015", "1.02"],
      ["2.5", "2.5"],
      ["0.125", "0.12"],
      ["0.135", "0.14"],
      ["-0.001", "0"],
      ["-0.005", "0"],
      ["-0.015", "-0.02"],
      ["1234567890123456789012345.675", "1234567890123456789012345.68"],
      ["10.10", "10.1"],
      ["0", "0"],
    ];
    for (const [input, wire] of cases) expect(usdAggregateToWire(parsed(input)), input).toBe(wire);
    expect(usdAggregateOrNull(null)).toBeNull();
    expect(usdAggregateOrNull(parsed("3.999"))).toBe("4");
  });

  it("stay within half a cent, with at most two decimals and no exponent", () => {
    fc.assert(
      fc.property(plainDecimal, (text) => {
        const value = parsed(text);
        const wire = usdAggregateToWire(value);
        expect(wire).toMatch(/^-?\d+(?:\.\d{1,2})?$/);
        expect(wire).toMatch(CANONICAL_DECIMAL);
        expect(parsed(wire).minus(value).abs().lte("0.005")).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("basis points", () => {
  it("truncate toward zero and never give -0", () => {
    expect(bpsToWireInt(parsed("0.0123"))).toBe(123);
    expect(bpsToWireInt(parsed("0.005999"))).toBe(59);
    expect(bpsToWireInt(parsed("-0.005999"))).toBe(-59);
    expect(Object.is(bpsToWireInt(parsed("-0.00001")), 0)).toBe(true);
    expect(bpsToWireInt(parsed("-1"))).toBe(-10_000);
    expect(() => bpsToWireInt(parsed("1000000"))).toThrow(RangeError);
  });
});

describe("timestamp wire form", () => {
  const MIN_MS = Date.UTC(1000, 0, 1);
  const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

  it("is RFC 3339 UTC with milliseconds and Z, and round-trips", () => {
    fc.assert(
      fc.property(fc.integer({ min: MIN_MS, max: MAX_MS }), (ms) => {
        const wire = timestampToWire(ms);
        expect(wire).toMatch(WIRE_TIMESTAMP);
        expect(parseTimestamp(wire)).toBe(ms);
      }),
      { numRuns: 2000 },
    );
    expect(timestampToWire(0)).toBe("1970-01-01T00:00:00.000Z");
    expect(timestampOrNull(null)).toBeNull();
    expect(timestampOrNull(undefined)).toBeNull();
    expect(timestampOrNull(1_781_258_400_000)).toBe("2026-06-12T10:00:00.000Z");
  });

  it("accepts any offset and converts it to UTC", () => {
    expect(parseTimestamp("2026-06-12T12:00:00.000+02:00")).toBe(Date.UTC(2026, 5, 12, 10));
    expect(parseTimestamp("2026-06-12T05:30:00-04:30")).toBe(Date.UTC(2026, 5, 12, 10));
    expect(parseTimestamp("2026-06-12T10:00:00.123456789Z")).toBe(Date.UTC(2026, 5, 12, 10, 0, 0, 123));
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(9998, 0, 1) }),
        fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
        (ms, offsetMin) => {
          const local = new Date(ms + offsetMin * 60_000).toISOString().slice(0, -1);
          const abs = Math.abs(offsetMin);
          const zone = `${offsetMin < 0 ? "-" : "+"}${String(Math.trunc(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
          expect(parseTimestamp(local + zone)).toBe(ms);
        },
      ),
    );
  });

  it("rejects impossible dates, a missing zone and other shapes", () => {
    for (const bad of [
      "2026-02-30T00:00:00.000Z",
      "2025-02-29T00:00:00.000Z",
      "2026-13-01T00:00:00.000Z",
      "2026-06-12T24:00:00.000Z",
      "2026-06-12T10:00:00.000",
      "2026-06-12T10:00:00",
      "2026-06-12",
      "2026-06-12 10:00:00Z",
      "2026-06-12T10:00:00.000+0200",
      1_781_258_400_000 as unknown as string,
    ]) {
      expect(parseTimestamp(bad), String(bad)).toBeNull();
    }
    expect(parseTimestamp("2024-02-29T00:00:00.000Z")).toBe(Date.UTC(2024, 1, 29));
  });

  it("refuses to write a non-integer instant", () => {
    expect(() => timestampToWire(1.5)).toThrow(RangeError);
    expect(() => timestampToWire(Number.NaN)).toThrow(RangeError);
  });
});

describe("list envelope", () => {
  const AT = Date.UTC(2026, 5, 12, 10, 0, 0, 7);

  it("has ok, generated_at, count and data, in that order", () => {
    const rows = [{ symbol: "USDC" }, { symbol: "USDT" }];
    const env = listEnvelope(rows, AT);
    expect(env).toEqual({ ok: true, generated_at: "2026-06-12T10:00:00.007Z", count: 2, data: rows });
    expect(Object.keys(env)).toEqual(["ok", "generated_at", "count", "data"]);
    expect(env.generated_at).toMatch(WIRE_TIMESTAMP);
    expect(JSON.stringify(env)).toBe('{"ok":true,"generated_at":"2026-06-12T10:00:00.007Z","count":2,"data":[{"symbol":"USDC"},{"symbol":"USDT"}]}');
  });

  it("puts methodology after count when given, and omits it otherwise", () => {
    const env = listEnvelope([], AT, { methodology: "1.0.0" });
    expect(Object.keys(env)).toEqual(["ok", "generated_at", "count", "methodology", "data"]);
    expect(env).toEqual({ ok: true, generated_at: "2026-06-12T10:00:00.007Z", count: 0, methodology: "1.0.0", data: [] });
    expect("methodology" in listEnvelope([], AT, {})).toBe(false);
  });

  it("count always equals data.length", () => {
    fc.assert(
      fc.property(fc.array(fc.integer()), fc.integer({ min: 0, max: Date.UTC(9999, 0, 1) }), (rows, at) => {
        const env = listEnvelope(rows, at);
        expect(env.count).toBe(rows.length);
        expect(env.data).toBe(rows);
        expect(parseTimestamp(env.generated_at)).toBe(at);
      }),
    );
  });
});
