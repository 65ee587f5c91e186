import { describe, expect, it } from "vitest";
import { D, riskScore, sustained } from "../../src/methodology/index.ts";

const USDC = { drift_bps: 15, depeg_bps: 50, critical_bps: 200 }; // black swan 400
const d = (bps: string) => new D(bps).div(10_000);

describe("risk_score (methodology section 7)", () => {
  it("is null for UNKNOWN, an absent state, no fresh discount, or collateral-ratio thresholds", () => {
    expect(riskScore("UNKNOWN", d("5"), "stable_fiat", USDC)).toBeNull();
    expect(riskScore(null, d("5"), "stable_fiat", USDC)).toBeNull();
    expect(riskScore("PEGGED", null, "stable_fiat", USDC)).toBeNull();
    expect(riskScore("DRIFT", d("5"), "stable_cdp", { cr_drift: 130, cr_depeg: 115, cr_critical: 105, cr_black_swan: 100 })).toBeNull();
  });

  it("interpolates inside the committed band with floor", () => {
    expect(riskScore("PEGGED", d("0"), "stable_fiat", USDC)).toBe(0);
    expect(riskScore("PEGGED", d("14.9999"), "stable_fiat", USDC)).toBe(23); // floor(24 x 14.9999/15)
    expect(riskScore("DRIFT", d("15"), "stable_fiat", USDC)).toBe(25);
    expect(riskScore("DRIFT", d("32.5"), "stable_fiat", USDC)).toBe(37); // 25 + floor(24 x 0.5)
    expect(riskScore("DEPEG", d("50"), "stable_fiat", USDC)).toBe(50);
    expect(riskScore("CRITICAL", d("300"), "stable_fiat", USDC)).toBe(84); // 75 + floor(19 x 100/200)
    expect(riskScore("BLACK_SWAN", d("400"), "stable_fiat", USDC)).toBe(95);
    expect(riskScore("BLACK_SWAN", d("800"), "stable_fiat", USDC)).toBe(100);
    expect(riskScore("BLACK_SWAN", d("5000"), "stable_fiat", USDC)).toBe(100);
  });

  it("is anchored to the committed state: a DRIFT asset whose magnitude dropped still scores 25", () => {
    expect(riskScore("DRIFT", d("5"), "stable_fiat", USDC)).toBe(25);
  });

  it("direction-sensitive: a premium on a carve-out class scores 0, on a fiat stable it counts by magnitude", () => {
    expect(riskScore("PEGGED", d("-150"), "lst", USDC)).toBe(0);
    expect(riskScore("PEGGED", d("-150"), "stable_yield", USDC)).toBe(0);
    expect(riskScore("DEPEG", d("-150"), "stable_fiat", USDC)).toBe(50 + Math.floor((24 * 100) / 150));
  });

  it("uses the default thresholds when keys are missing", () => {
    expect(riskScore("DRIFT", d("20"), "stable_fiat", {})).toBe(25);
    expect(riskScore("BLACK_SWAN", d("600"), "stable_fiat", {})).toBe(95);
  });
});

describe("sustained", () => {
  const since = Date.UTC(2026, 0, 1);
  it("turns true once DRIFT-or-worse has been held for the configured seconds", () => {
    expect(sustained("DRIFT", since, since + 899_999, 900)).toBe(false);
    expect(sustained("DRIFT", since, since + 900_000, 900)).toBe(true);
    expect(sustained("BLACK_SWAN", since, since + 60_000, 60)).toBe(true);
  });
  it("is never true for PEGGED or UNKNOWN, or without a start", () => {
    expect(sustained("PEGGED", since, since + 10_000_000, 900)).toBe(false);
    expect(sustained("UNKNOWN", since, since + 10_000_000, 900)).toBe(false);
    expect(sustained("DEPEG", null, since, 900)).toBe(false);
  });
});
