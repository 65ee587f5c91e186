/** `parseDecimal`: wire decimals to exact decimals and back, with the service's own rounding for arithmetic. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseDecimal } from "@peg-oracle/client";
import { D, decimalToWire } from "../../src/methodology/decimal.ts";

describe("parseDecimal", () => {
  it("keeps every digit: the wire form of the parsed value is the text it came from", () => {
    const wire = fc
      .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.option(fc.stringMatching(/^\d{0,45}[1-9]$/), { nil: undefined }))
      .map(([neg, int, frac]) => `${neg && (int !== 0n || frac !== undefined) ? "-" : ""}${int}${frac === undefined ? "" : `.${frac}`}`)
      .filter((s) => !/^-?0\.0{40}/.test(s)); // below 1e-40 the methodology's context reads 0 (its documented floor)
    fc.assert(fc.property(wire, (s) => decimalToWire(parseDecimal(s)) === s));
    // The service's own outputs read back identically.
    expect(parseDecimal("0.02205897396064939373649584839885478").toFixed()).toBe("0.02205897396064939373649584839885478");
  });

  it("computes like the service: 34 significant digits, half-even", () => {
    const d = parseDecimal("0.00534463705121415");
    expect(d.times(10_000).toFixed()).toBe("53.4463705121415");
    expect(parseDecimal("1").dividedBy(3).toFixed()).toBe(new D(1).dividedBy(3).toFixed());
    expect(parseDecimal("1").dividedBy(3).toFixed().replace("0.", "").length).toBe(34);
    expect(parseDecimal("2.5").toDecimalPlaces(0).toFixed()).toBe("2");
  });

  it("passes null through and refuses what is not a wire decimal", () => {
    expect(parseDecimal(null)).toBeNull();
    for (const bad of ["", " 1", "1 ", "+1", "1.", ".5", "01", "1e-5", "1E5", "NaN", "Infinity", "0x10", "1,5", "--1", "-"]) {
      expect(() => parseDecimal(bad), bad).toThrow(TypeError);
    }
    expect(() => parseDecimal(0.5 as unknown as string)).toThrow(/not a wire decimal: 0.5/);
  });
});
