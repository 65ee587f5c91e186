/** Display helpers: exact bps formatting of decimal strings, times, countdowns, links. */
import { describe, expect, it } from "vitest";
import {
  assetHref,
  bpsText,
  countdownText,
  discountBps,
  displayState,
  escapeXml,
  parseDecimal,
  receiptHref,
  relativeTime,
  riskText,
  scaleDecimal,
  severityRank,
  thresholdsText,
} from "../../public/static/format.js";

describe("discountBps", () => {
  it("multiplies the fraction by 10,000 exactly and shows one decimal", () => {
    expect(discountBps("0.0123")).toBe("123.0");
    expect(discountBps("0.01234")).toBe("123.4");
    expect(discountBps("-0.0005")).toBe("-5.0");
    expect(discountBps("0")).toBe("0.0");
    expect(discountBps("1")).toBe("10000.0");
    expect(discountBps("0.1")).toBe("1000.0");
    expect(discountBps("0.3")).toBe("3000.0"); // 0.3 * 10000 in floats is 2999.9999999999995
    expect(discountBps("0.00000001")).toBe("0.0");
    expect(discountBps("-0.00000001")).toBe("0.0"); // no "-0.0"
  });

  it("rounds half away from zero on the digits, at any precision", () => {
    expect(discountBps("0.00001234")).toBe("0.1");
    expect(discountBps("0.00001250")).toBe("0.1");
    expect(discountBps("0.00001255")).toBe("0.1");
    expect(discountBps("0.00000499999")).toBe("0.0");
    expect(discountBps("0.000005")).toBe("0.1");
    expect(discountBps("-0.000005")).toBe("-0.1");
    expect(discountBps("0.99999999")).toBe("10000.0");
    expect(discountBps("0.012345678901234567890123456789")).toBe("123.5");
    expect(discountBps("-0.0199995")).toBe("-200.0");
  });

  it("accepts exponents, signs and numbers; refuses the rest", () => {
    expect(discountBps("1.5e-3")).toBe("15.0");
    expect(discountBps("+0.002")).toBe("20.0");
    expect(discountBps(".5")).toBe("5000.0");
    expect(discountBps(1e-7)).toBe("0.0");
    expect(discountBps(0.0123)).toBe("123.0");
    expect(discountBps(null)).toBeNull();
    expect(discountBps(undefined)).toBeNull();
    expect(discountBps("abc")).toBeNull();
    expect(discountBps("")).toBeNull();
    expect(discountBps("1.2.3")).toBeNull();
    expect(bpsText(null)).toBe("\u2014");
    expect(bpsText("0.0042")).toBe("42.0");
  });

  it("parses decimals into digits and exponent", () => {
    expect(parseDecimal("0.0123")).toEqual({ negative: false, digits: "123", exp: -4 });
    expect(parseDecimal("-12.50")).toEqual({ negative: true, digits: "1250", exp: -2 });
    expect(parseDecimal("-0")).toEqual({ negative: false, digits: "0", exp: 0 });
    expect(scaleDecimal("12.345", 0, 2)).toBe("12.35");
    expect(scaleDecimal("999.96", 0, 1)).toBe("1000.0");
    expect(scaleDecimal("7", 2, 0)).toBe("700");
  });
});

describe("times", () => {
  const now = Date.parse("2026-06-12T10:00:00.000Z");
  it("relativeTime", () => {
    expect(relativeTime("2026-06-12T10:00:00.000Z", now)).toBe("just now");
    expect(relativeTime("2026-06-12T09:59:48.000Z", now)).toBe("12 s ago");
    expect(relativeTime("2026-06-12T09:55:00.000Z", now)).toBe("5 min ago");
    expect(relativeTime("2026-06-12T07:00:00.000Z", now)).toBe("3 h ago");
    expect(relativeTime("2026-06-10T10:00:00.000Z", now)).toBe("2 d ago");
    expect(relativeTime("2026-06-12T10:00:08.000Z", now)).toBe("in 8 s");
    expect(relativeTime(null, now)).toBe("\u2014");
    expect(relativeTime("not a time", now)).toBe("\u2014");
  });

  it("countdownText counts whole seconds up to the deadline", () => {
    expect(countdownText("DEPEG", "2026-06-12T10:00:12.000Z", now)).toBe("DEPEG in 12 s");
    expect(countdownText("DEPEG", "2026-06-12T10:00:11.200Z", now)).toBe("DEPEG in 12 s");
    expect(countdownText("PEGGED", "2026-06-12T10:02:00.000Z", now)).toBe("PEGGED in 120 s");
    expect(countdownText("DEPEG", "2026-06-12T10:00:00.000Z", now)).toBe("DEPEG due");
    expect(countdownText("DEPEG", "2026-06-12T09:59:00.000Z", now)).toBe("DEPEG due");
    expect(countdownText(null, "2026-06-12T10:00:12.000Z", now)).toBeNull();
    expect(countdownText("DEPEG", null, now)).toBeNull();
  });
});

describe("labels and links", () => {
  it("percent-encodes symbols such as USD* and hyloSOL+", () => {
    expect(assetHref("hyloSOL+")).toBe("/asset.html?symbol=hyloSOL%2B");
    expect(assetHref("USD*")).toBe("/asset.html?symbol=USD*");
    expect(new URLSearchParams(assetHref("USD*").split("?")[1]).get("symbol")).toBe("USD*");
    expect(new URLSearchParams(assetHref("a&b=c d").split("?")[1]).get("symbol")).toBe("a&b=c d");
    expect(receiptHref("0b6c0e1a-0000-8000-8000-000000000000")).toBe("/receipt.html?id=0b6c0e1a-0000-8000-8000-000000000000");
  });

  it("states, risk, thresholds, escaping", () => {
    expect(displayState(null)).toBe("UNKNOWN");
    expect(displayState("DEPEG")).toBe("DEPEG");
    expect(["BLACK_SWAN", "CRITICAL", "DEPEG", "DRIFT", "UNKNOWN", "PEGGED", null].map(severityRank)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(riskText(0)).toBe("0");
    expect(riskText(null)).toBe("\u2014");
    expect(thresholdsText({ drift_bps: 30, depeg_bps: 100, critical_bps: 300 })).toBe("drift 30 / depeg 100 / critical 300 bps");
    expect(thresholdsText({ cr_drift: 150, cr_depeg: 130, cr_critical: 115, cr_black_swan: 100 })).toContain("CR drift 150");
    expect(escapeXml(`<a href="x">&'</a>`)).toBe("&#60;a href=&#34;x&#34;&#62;&#38;&#39;&#60;/a&#62;");
  });
});
