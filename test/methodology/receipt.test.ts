/** Methodology section 8: receipts, receipt hash, alert id, replay bundles and the offline verifier. */
import canonicalize from "canonicalize";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  alertId,
  buildReceipt,
  D,
  INITIAL_STATE,
  METHODOLOGY_VERSION,
  receiptHash,
  replayBundle,
  step,
  timestampToWire,
  verifyBundle,
  VERIFY_EXIT,
} from "../../src/methodology/index.ts";
import {
  assetOf,
  altered,
  at,
  bundlesOf,
  decisions,
  DELETE,
  GIT_SHA,
  jsonCopy,
  mutate,
  oracleEntry,
  runTimeline,
  SEC,
  T0,
  type Json,
  type TimelineEvent,
} from "./helpers.ts";

const BAD = { px: oracleEntry("1", "0.06", T0) };
const GOOD = { px: oracleEntry("1", "0.0005", T0) };

/** stable_fiat with an oracle dependency, three transitions: PEGGED->DRIFT (timer), DRIFT->UNKNOWN, UNKNOWN->DRIFT. */
function fiatScenario() {
  const { entry, asset } = assetOf(
    "stable_fiat",
    { drift_bps: 20, depeg_bps: 100, critical_bps: 300 },
    { name: "Test USD", decimals: 6, oracle_feed_id: "feedUSD", market: { kind: "pyth", feed: "feedUSD" } },
  );
  const events: TimelineEvent[] = [
    at(T0, "0.999"), // d_smooth 0.001
    at(T0 + SEC, "0.99"), // 0.0037: DRIFT candidate since T0 + 1 s
    { kind: "dwell_timer", now: T0 + 31 * SEC }, // commit DRIFT: transition 1 (dwell_timer)
    at(T0 + 40 * SEC, "0.99", { oracle: BAD }), // oracle gate: transition 2 DRIFT -> UNKNOWN
    at(T0 + 50 * SEC, "0.99", { oracle: GOOD }), // gate clears: transition 3 UNKNOWN -> DRIFT
  ];
  const run = runTimeline(asset, events);
  return { entry, asset, run, items: bundlesOf(entry, asset, run.outcomes) };
}

function lstPremiumScenario() {
  const { entry, asset } = assetOf("lst", { drift_bps: 60, depeg_bps: 150, critical_bps: 300 });
  const run = runTimeline(asset, [
    at(T0, "150", { intrinsic: "150", intrinsicSol: "1.25", marketSol: "1.25" }),
    at(T0 + SEC, "150", { intrinsic: "150", intrinsicSol: "1.25", marketSol: "1.8" }), // -0.44 x 0.3 = -0.132
  ]);
  return { entry, asset, run, items: bundlesOf(entry, asset, run.outcomes) };
}

function crScenario() {
  const { entry, asset } = assetOf("stable_cdp", { cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 });
  const run = runTimeline(asset, [
    at(T0, "1", { cr: "1.6" }),
    at(T0 + SEC, "0.998", { cr: "1.05" }), // CRITICAL candidate
    at(T0 + 45 * SEC, "0.998", { cr: "1.05" }), // timer at T0 + 31 s commits CRITICAL, then this sample
    at(T0 + 60 * SEC, "0.999", { cr: "1.55" }), // relaxation candidate PEGGED (>= exit 153)
    { kind: "dwell_timer", now: T0 + 180 * SEC }, // commits PEGGED
  ]);
  return { entry, asset, run, items: bundlesOf(entry, asset, run.outcomes) };
}

/** stable_fiat 60/150/300, committed DRIFT relaxing at 40 bps (exit 45) to PEGGED after 120 s. */
function relaxScenario() {
  const { entry, asset } = assetOf("stable_fiat", { drift_bps: 60, depeg_bps: 150, critical_bps: 300 });
  const run = runTimeline(asset, [
    at(T0, "0.99"), // 100 bps: DRIFT candidate
    { kind: "dwell_timer", now: T0 + 30 * SEC }, // DRIFT
    at(T0 + 40 * SEC, "1.0031"), // 0.3 x -0.0031 + 0.7 x 0.01 = 0.00607 (60 bps) DRIFT
    at(T0 + 50 * SEC, "1.0031"), // 0.3 x -0.0031 + 0.7 x 0.00607 = 0.003319 (33 bps): PEGGED candidate
    { kind: "dwell_timer", now: T0 + 170 * SEC },
  ]);
  return { entry, asset, run, items: bundlesOf(entry, asset, run.outcomes) };
}

const HEX64 = /^[0-9a-f]{64}$/;
const UUID8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const WIRE_DECIMAL = /^-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?$/;

describe("scenario sanity", () => {
  it("the fiat scenario yields the three expected transitions", () => {
    const { items } = fiatScenario();
    expect(items.map((i) => [i.receipt.from_state, i.receipt.to_state, i.decision.inputs.trigger])).toEqual([
      ["PEGGED", "DRIFT", "dwell_timer"],
      ["DRIFT", "UNKNOWN", "sample"],
      ["UNKNOWN", "DRIFT", "sample"],
    ]);
  });

  it("the lst scenario yields PEGGED -> UNKNOWN (premium_sanity) from the SOL legs", () => {
    const { items } = lstPremiumScenario();
    expect(items).toHaveLength(1);
    expect(items[0]!.receipt.to_state).toBe("UNKNOWN");
    expect(items[0]!.receipt.state_reason).toBe("premium_sanity");
    expect(items[0]!.bundle.state_reason).toBe("premium_sanity");
    expect(items[0]!.receipt.computed.discount_raw).toBe("-0.44");
  });

  it("the CR scenario yields PEGGED -> CRITICAL -> PEGGED", () => {
    const { items } = crScenario();
    expect(items.map((i) => [i.receipt.from_state, i.receipt.to_state])).toEqual([
      ["PEGGED", "CRITICAL"],
      ["CRITICAL", "PEGGED"],
    ]);
    expect(items[0]!.receipt.inputs_frozen.threshold_kind).toBe("cr");
  });

  it("the relaxation scenario yields PEGGED -> DRIFT -> PEGGED", () => {
    const { items } = relaxScenario();
    expect(items.map((i) => [i.receipt.from_state, i.receipt.to_state])).toEqual([
      ["PEGGED", "DRIFT"],
      ["DRIFT", "PEGGED"],
    ]);
  });
});

describe("verifyBundle PASS", () => {
  const all = () => [
    ...fiatScenario().items,
    ...lstPremiumScenario().items,
    ...crScenario().items,
    ...relaxScenario().items,
  ];

  it("every real transition produced by step verifies with exit 0", () => {
    const items = all();
    expect(items.length).toBeGreaterThanOrEqual(8);
    for (const { bundle, receipt } of items) {
      const r = verifyBundle(bundle);
      expect(r, r.message).toMatchObject({ exit: 0, verdict: "PASS" });
      expect(r.receipt_sha256).toBe(receipt.receipt_sha256);
    }
  });

  it("and after a JSON round trip (a bundle file)", () => {
    for (const { bundle } of all()) {
      const r = verifyBundle(jsonCopy(bundle));
      expect(r.exit, r.message).toBe(VERIFY_EXIT.pass);
    }
  });

  it("with an empty git_sha", () => {
    const { entry, asset, run } = fiatScenario();
    for (const { bundle } of bundlesOf(entry, asset, run.outcomes, "")) expect(verifyBundle(bundle).exit).toBe(0);
  });

  it("state_reason is outside the hash: changing it still passes", () => {
    const { items } = lstPremiumScenario();
    expect(verifyBundle(mutate(items[0]!.bundle, null, "state_reason", null, false)).exit).toBe(0);
    const f = fiatScenario().items[1]!;
    expect(verifyBundle(mutate(f.bundle, null, "state_reason", "premium_sanity", false)).exit).toBe(0);
  });

  it("compares by decimal value: an equivalent decimal spelling with a matching hash passes", () => {
    const b = fiatScenario().items[0]!.bundle;
    expect(b.expected_computed.discount_raw).toBe("0.01");
    expect(verifyBundle(mutate(b, "expected_computed", "discount_raw", "0.010", true)).exit).toBe(0);
    expect(verifyBundle(mutate(b, "expected_computed", "discount_smooth", "0.00370", true)).exit).toBe(0);
    expect(verifyBundle(mutate(b, "inputs_frozen", "market_usd", "0.9900", true)).exit).toBe(0);
    expect(verifyBundle(mutate(b, "inputs_frozen", "alpha", "0.30", true)).exit).toBe(0);
  });
});

describe("receipt contents and wire form", () => {
  it("buildReceipt refuses the first accepted sample (no transition, no receipt)", () => {
    const { asset, entry } = assetOf("stable_fiat");
    const first = decisions(step(asset, INITIAL_STATE, at(T0, "1")).outcomes)[0]!;
    expect(() => buildReceipt({ asset, catalogEntry: entry, gitSha: GIT_SHA }, first)).toThrow();
  });

  it("inputs_frozen and computed hold every member, optional ones as null, never omitted", () => {
    const r = fiatScenario().items[0]!.receipt;
    expect(Object.keys(r.inputs_frozen).sort()).toEqual(
      [
        "asset",
        "class",
        "now",
        "alpha",
        "intrinsic_usd",
        "market_usd",
        "intrinsic_sol",
        "market_sol",
        "cr",
        "ewma_prev",
        "previous_band",
        "previous_state",
        "candidate_state",
        "candidate_since",
        "thresholds",
        "threshold_kind",
        "oracle",
        "confirm_up_secs",
        "decay_down_secs",
        "deadband_pct",
        "cr_deadband_pct",
        "intrinsic_stale",
        "trigger",
      ].sort(),
    );
    expect(Object.keys(r.computed).sort()).toEqual(
      ["discount_raw", "discount_smooth", "band", "final_state", "gate", "confidence"].sort(),
    );
    expect(r.inputs_frozen.intrinsic_sol).toBeNull();
    expect(r.inputs_frozen.market_sol).toBeNull();
    expect(r.inputs_frozen.cr).toBeNull();
    expect(r.inputs_frozen.intrinsic_stale).toBeNull();
    expect(r.computed.gate).toBeNull();
  });

  it("frozen constants: alpha 0.3, windows 30/120, deadbands 25/2", () => {
    const f = fiatScenario().items[0]!.receipt.inputs_frozen;
    expect(f.alpha).toBe("0.3");
    expect(f.confirm_up_secs).toBe(30);
    expect(f.decay_down_secs).toBe(120);
    expect(f.deadband_pct).toBe(25);
    expect(f.cr_deadband_pct).toBe(2);
  });

  it("the dwell-timer receipt freezes the deadline instant, the last sample and the pre-sample EWMA", () => {
    const r = fiatScenario().items[0]!.receipt;
    expect(r.inputs_frozen.trigger).toBe("dwell_timer");
    expect(r.inputs_frozen.now).toBe("2026-06-12T10:00:31.000Z");
    expect(r.detected_at).toBe("2026-06-12T10:00:31.000Z");
    expect(r.inputs_frozen.market_usd).toBe("0.99");
    expect(r.inputs_frozen.ewma_prev).toBe("0.001");
    expect(r.inputs_frozen.candidate_state).toBe("DRIFT");
    expect(r.inputs_frozen.candidate_since).toBe("2026-06-12T10:00:01.000Z");
    expect(r.computed).toEqual({
      discount_raw: "0.01",
      discount_smooth: "0.0037",
      band: "DRIFT",
      final_state: "DRIFT",
      gate: null,
      confidence: "unknown",
    });
    expect(r.discount).toBe("0.0037");
    expect(r.discount_bps).toBe(37);
  });

  it("decimals are plain strings with trailing zeros trimmed and no exponent; timestamps RFC 3339 ms Z", () => {
    const items = [...fiatScenario().items, ...lstPremiumScenario().items, ...crScenario().items];
    for (const { receipt: r } of items) {
      const f = r.inputs_frozen;
      for (const v of [f.alpha, f.intrinsic_usd, f.market_usd, f.intrinsic_sol, f.market_sol, f.cr, f.ewma_prev]) {
        if (v !== null) expect(v).toMatch(WIRE_DECIMAL);
      }
      expect(r.computed.discount_raw).toMatch(WIRE_DECIMAL);
      expect(r.computed.discount_smooth).toMatch(WIRE_DECIMAL);
      expect(f.now).toMatch(RFC3339_MS);
      if (f.candidate_since !== null) expect(f.candidate_since).toMatch(RFC3339_MS);
      for (const e of Object.values(f.oracle)) {
        expect(e.price).toMatch(WIRE_DECIMAL);
        expect(e.conf).toMatch(WIRE_DECIMAL);
        expect(e.publish_time).toMatch(RFC3339_MS);
      }
    }
  });

  it("a tiny decimal is written without an exponent", () => {
    const { entry, asset } = assetOf("stable_fiat");
    const run = runTimeline(asset, [
      at(T0, "0.99999999999"),
      at(T0 + SEC, "0.99999999999", { oracle: BAD }),
    ]);
    const [item] = bundlesOf(entry, asset, run.outcomes);
    expect(item!.receipt.computed.discount_raw).toBe("0.00000000001");
    expect(verifyBundle(item!.bundle).exit).toBe(0);
  });

  it("states are spelled as in the API", () => {
    const r = crScenario().items[0]!.receipt;
    expect(r.computed.final_state).toBe("CRITICAL");
    expect(r.inputs_frozen.previous_state).toBe("PEGGED");
  });
});

describe("receipt hash", () => {
  it("is lowercase hex SHA-256 of version 0x00 git_sha 0x00 JCS(entry) 0x00 JCS(inputs) 0x00 JCS(computed)", () => {
    for (const { receipt: r } of [...fiatScenario().items, ...crScenario().items]) {
      const bytes = Buffer.concat([
        Buffer.from(METHODOLOGY_VERSION, "utf8"),
        Buffer.from([0]),
        Buffer.from(GIT_SHA, "utf8"),
        Buffer.from([0]),
        Buffer.from(canonicalize(r.catalog_entry)!, "utf8"),
        Buffer.from([0]),
        Buffer.from(canonicalize(r.inputs_frozen)!, "utf8"),
        Buffer.from([0]),
        Buffer.from(canonicalize(r.computed)!, "utf8"),
      ]);
      expect(r.receipt_sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
      expect(r.receipt_sha256).toMatch(HEX64);
    }
  });

  it("does not depend on member order (JCS)", () => {
    const r = fiatScenario().items[0]!.receipt;
    const reversed = (o: object): Json => Object.fromEntries(Object.entries(o).reverse());
    expect(
      receiptHash(METHODOLOGY_VERSION, GIT_SHA, reversed(r.catalog_entry as object), reversed(r.inputs_frozen), reversed(r.computed)),
    ).toBe(r.receipt_sha256);
  });

  it("changes with git_sha", () => {
    const { entry, asset, run } = fiatScenario();
    const a = bundlesOf(entry, asset, run.outcomes, GIT_SHA)[0]!.receipt.receipt_sha256;
    const b = bundlesOf(entry, asset, run.outcomes, "")[0]!.receipt.receipt_sha256;
    const c = bundlesOf(entry, asset, run.outcomes, "fedcba9876543210fedcba9876543210fedcba98")[0]!.receipt.receipt_sha256;
    expect(new Set([a, b, c]).size).toBe(3);
    for (const h of [a, b, c]) expect(h).toMatch(HEX64);
  });

  it("changes with the methodology version and with every part", () => {
    const r = fiatScenario().items[0]!.receipt;
    const base = receiptHash(METHODOLOGY_VERSION, GIT_SHA, r.catalog_entry, r.inputs_frozen, r.computed);
    expect(base).toBe(r.receipt_sha256);
    expect(receiptHash("1.0.1", GIT_SHA, r.catalog_entry, r.inputs_frozen, r.computed)).not.toBe(base);
    expect(receiptHash(METHODOLOGY_VERSION, GIT_SHA, { ...(r.catalog_entry as Json), x: 1 }, r.inputs_frozen, r.computed)).not.toBe(base);
    expect(receiptHash(METHODOLOGY_VERSION, GIT_SHA, r.catalog_entry, { ...r.inputs_frozen, cr: "1" }, r.computed)).not.toBe(base);
    expect(receiptHash(METHODOLOGY_VERSION, GIT_SHA, r.catalog_entry, r.inputs_frozen, { ...r.computed, gate: "oracle_confidence" })).not.toBe(base);
  });

  it("the separators matter: moving bytes between version and git_sha changes the hash", () => {
    const r = fiatScenario().items[0]!.receipt;
    expect(receiptHash("1.0.0a", "bc", r.catalog_entry, r.inputs_frozen, r.computed)).not.toBe(
      receiptHash("1.0.0", "abc", r.catalog_entry, r.inputs_frozen, r.computed),
    );
  });

  it("replaying the same timeline gives byte-identical receipts (same hash, same alert id)", () => {
    const a = fiatScenario().items.map((i) => i.receipt);
    const b = fiatScenario().items.map((i) => i.receipt);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });
});

describe("alert id", () => {
  const MINT = "MintABC111111111111111111111111111111111111";
  const NOW = "2026-06-12T10:00:31.000Z";

  it("is a UUID with version nibble 8 and variant 10xx", () => {
    const id = alertId(MINT, NOW, "PEGGED", "DRIFT", "1.0.0");
    expect(id).toMatch(UUID8);
    for (const { receipt } of [...fiatScenario().items, ...crScenario().items]) expect(receipt.alert_id).toMatch(UUID8);
  });

  it("is the first 16 bytes of SHA-256(mint|now|previous|final|version) in the version-8 layout", () => {
    const digest = createHash("sha256").update(`${MINT}|${NOW}|PEGGED|DRIFT|1.0.0`, "utf8").digest();
    const hex = digest.subarray(0, 16).toString("hex");
    const id = alertId(MINT, NOW, "PEGGED", "DRIFT", "1.0.0").replace(/-/g, "");
    // every bit except the version nibble and the two variant bits is the digest's
    expect(id.slice(0, 12)).toBe(hex.slice(0, 12));
    expect(id[12]).toBe("8");
    expect(id.slice(13, 16)).toBe(hex.slice(13, 16));
    expect((parseInt(id[16]!, 16) & 0x3) === (parseInt(hex[16]!, 16) & 0x3)).toBe(true);
    expect(parseInt(id[16]!, 16) >> 2).toBe(2);
    expect(id.slice(17)).toBe(hex.slice(17));
  });

  it("is deterministic", () => {
    expect(alertId(MINT, NOW, "PEGGED", "DRIFT", "1.0.0")).toBe(alertId(MINT, NOW, "PEGGED", "DRIFT", "1.0.0"));
  });

  it("differs when any of mint, now, previous, final or version differs", () => {
    const ids = [
      alertId(MINT, NOW, "PEGGED", "DRIFT", "1.0.0"),
      alertId(MINT + "2", NOW, "PEGGED", "DRIFT", "1.0.0"),
      alertId(MINT, "2026-06-12T10:00:31.001Z", "PEGGED", "DRIFT", "1.0.0"),
      alertId(MINT, NOW, "UNKNOWN", "DRIFT", "1.0.0"),
      alertId(MINT, NOW, "PEGGED", "DEPEG", "1.0.0"),
      alertId(MINT, NOW, "PEGGED", "DRIFT", "1.0.1"),
    ];
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("a receipt's alert id is derived from its mint, detected_at, from/to states and version", () => {
    const { asset, items } = fiatScenario();
    for (const { receipt: r } of items) {
      expect(r.alert_id).toBe(alertId(asset.mint, r.detected_at, r.from_state, r.to_state, METHODOLOGY_VERSION));
    }
  });

  it("does not depend on git_sha (a re-published decision de-duplicates)", () => {
    const { entry, asset, run } = fiatScenario();
    expect(bundlesOf(entry, asset, run.outcomes, "")[0]!.receipt.alert_id).toBe(
      bundlesOf(entry, asset, run.outcomes, GIT_SHA)[0]!.receipt.alert_id,
    );
  });
});

describe("verifyBundle exit 3: another methodology version", () => {
  it.each(["1.0.1", "2.0.0", "0.9.0", ""])("methodology_version %j -> exit 3 (hash recomputed for it)", (v) => {
    const b = mutate(fiatScenario().items[0]!.bundle, null, "methodology_version", v, true);
    const r = verifyBundle(b);
    expect(r.exit).toBe(VERIFY_EXIT.version);
    expect(r.verdict).toBe("VERSION_MISMATCH");
  });

  it("the version check comes before the hash check", () => {
    const b = mutate(fiatScenario().items[0]!.bundle, null, "methodology_version", "1.1.0", false);
    expect(verifyBundle(b).exit).toBe(3);
  });
});

describe("verifyBundle exit 2: malformed bundles", () => {
  const bundle = () => fiatScenario().items[0]!.bundle;
  const lst = () => lstPremiumScenario().items[0]!.bundle;

  it.each([null, [], "bundle", 42, true])("a non-object bundle (%j) -> exit 2", (b) => {
    expect(verifyBundle(b).exit).toBe(VERIFY_EXIT.invalid);
  });

  it.each(["2", "0", "1.0", 1, null])("unknown schema_version %j -> exit 2", (v) => {
    expect(verifyBundle(mutate(bundle(), null, "schema_version", v, false)).exit).toBe(2);
  });

  it.each([
    "schema_version",
    "methodology_version",
    "git_sha",
    "catalog_entry",
    "inputs_frozen",
    "expected_computed",
    "expected_receipt_sha256",
  ])("missing top-level member %s -> exit 2", (key) => {
    expect(verifyBundle(mutate(bundle(), null, key, DELETE, false)).exit).toBe(2);
  });

  it.each(["ABCDEF", "", "g".repeat(64), "A".repeat(64), 12])("expected_receipt_sha256 %j -> exit 2", (v) => {
    expect(verifyBundle(mutate(bundle(), null, "expected_receipt_sha256", v, false)).exit).toBe(2);
  });

  it.each(Object.keys(fiatScenario().items[0]!.bundle.inputs_frozen))(
    "inputs_frozen missing %s (hash recomputed) -> exit 2",
    (key) => {
      expect(verifyBundle(mutate(bundle(), "inputs_frozen", key, DELETE, true)).exit).toBe(2);
    },
  );

  it.each(Object.keys(fiatScenario().items[0]!.bundle.expected_computed))(
    "expected_computed missing %s -> exit 2 (with or without a recomputed hash)",
    (key) => {
      expect(verifyBundle(mutate(bundle(), "expected_computed", key, DELETE, true)).exit).toBe(2);
      expect(verifyBundle(mutate(bundle(), "expected_computed", key, DELETE, false)).exit).toBe(2);
    },
  );

  it.each(["symbol", "mint", "class", "thresholds"])("catalog_entry missing %s (hash recomputed) -> exit 2", (key) => {
    expect(verifyBundle(mutate(bundle(), "catalog_entry", key, DELETE, true)).exit).toBe(2);
  });

  const NON_DECIMALS: readonly unknown[] = ["abc", "1e-3", "1E5", "NaN", "Infinity", "-Infinity", "", "0x10", "1,5", " 1", "1 ", 0.99, true, {}];

  it.each(["alpha", "intrinsic_usd", "market_usd", "intrinsic_sol", "market_sol", "cr", "ewma_prev"])(
    "inputs_frozen.%s not a decimal string (hash recomputed) -> exit 2",
    (key) => {
      for (const v of NON_DECIMALS) {
        const r = verifyBundle(mutate(bundle(), "inputs_frozen", key, v, true));
        expect(r.exit, `${key} = ${JSON.stringify(v)}: ${r.message}`).toBe(2);
      }
    },
  );

  it.each(["discount_raw", "discount_smooth"])("expected_computed.%s not a decimal string -> exit 2", (key) => {
    for (const v of NON_DECIMALS) {
      expect(verifyBundle(mutate(bundle(), "expected_computed", key, v, true)).exit).toBe(2);
      expect(verifyBundle(mutate(bundle(), "expected_computed", key, v, false)).exit).toBe(2);
    }
  });

  it("an oracle entry with a non-decimal price or conf (hash recomputed) -> exit 2", () => {
    const ok = { price: "1", conf: "0.0005", publish_time: timestampToWire(T0) };
    for (const e of [
      { ...ok, price: "abc" },
      { ...ok, conf: "1e-4" },
      { ...ok, price: 1 },
      { conf: "0.1", publish_time: ok.publish_time },
      "entry",
    ]) {
      expect(verifyBundle(mutate(bundle(), "inputs_frozen", "oracle", { px: e }, true)).exit).toBe(2);
    }
    expect(verifyBundle(mutate(bundle(), "inputs_frozen", "oracle", [ok], true)).exit).toBe(2);
  });

  const BAD_TIMES: readonly unknown[] = [
    "2026-02-30T00:00:00.000Z",
    "2026-13-01T00:00:00.000Z",
    "2026-06-12T24:00:00.000Z",
    "2026-06-12 10:00:31.000Z",
    "2026-06-12T10:00:31.000",
    "yesterday",
    "",
    T0 + 31 * SEC,
    null,
  ];

  it("a bad inputs_frozen.now (hash recomputed) -> exit 2", () => {
    for (const v of BAD_TIMES) {
      const r = verifyBundle(mutate(bundle(), "inputs_frozen", "now", v, true));
      expect(r.exit, `now = ${JSON.stringify(v)}`).toBe(2);
    }
  });

  it("a bad inputs_frozen.candidate_since (hash recomputed) -> exit 2", () => {
    for (const v of BAD_TIMES.filter((t) => t !== null)) {
      expect(verifyBundle(mutate(bundle(), "inputs_frozen", "candidate_since", v, true)).exit).toBe(2);
    }
  });

  it("a bad oracle publish_time (hash recomputed) -> exit 2", () => {
    for (const v of BAD_TIMES) {
      const entry = { price: "1", conf: "0.0005", publish_time: v };
      expect(verifyBundle(mutate(bundle(), "inputs_frozen", "oracle", { px: entry }, true)).exit).toBe(2);
    }
  });

  it.each([
    ["inputs_frozen", "class", "stable_xyz"],
    ["inputs_frozen", "class", "stable_dn"], // does not match the catalog entry
    ["inputs_frozen", "asset", "OTHER"], // does not match the catalog entry
    ["inputs_frozen", "asset", ""],
    ["inputs_frozen", "previous_band", "UNKNOWN"],
    ["inputs_frozen", "previous_band", "MOON"],
    ["inputs_frozen", "previous_state", "MOON"],
    ["inputs_frozen", "candidate_state", "UNKNOWN"],
    ["inputs_frozen", "threshold_kind", "cr"],
    ["inputs_frozen", "threshold_kind", "pct"],
    ["inputs_frozen", "thresholds", { drift_bps: "20" }],
    ["inputs_frozen", "thresholds", { drift_bps: -1 }],
    ["inputs_frozen", "thresholds", { drift_bps: 1.5 }],
    ["inputs_frozen", "thresholds", { bogus_bps: 1 }],
    ["inputs_frozen", "thresholds", "20/100/300"],
    ["inputs_frozen", "confirm_up_secs", -1],
    ["inputs_frozen", "confirm_up_secs", "30"],
    ["inputs_frozen", "decay_down_secs", 1.5],
    ["inputs_frozen", "intrinsic_stale", "yes"],
    ["inputs_frozen", "trigger", "cron"],
    ["expected_computed", "band", "UNKNOWN"],
    ["expected_computed", "band", "MOON"],
    ["expected_computed", "final_state", "pegged"],
    ["expected_computed", "gate", "stale_source"],
    ["expected_computed", "confidence", "certain"],
    ["catalog_entry", "class", "stable_xyz"],
    ["catalog_entry", "thresholds", { drift_bps: "x" }],
  ] as const)("%s.%s = %j (hash recomputed) -> exit 2", (part, key, v) => {
    const r = verifyBundle(mutate(bundle(), part, key, v, true));
    expect(r.exit, r.message).toBe(2);
  });

  it("a bad inputs_frozen with a stale hash is rejected (non-zero)", () => {
    const r = verifyBundle(mutate(bundle(), "inputs_frozen", "market_usd", "abc", false));
    expect(r.exit).not.toBe(0);
  });

  it("malformed SOL legs of an lst bundle (hash recomputed) -> exit 2", () => {
    expect(verifyBundle(mutate(lst(), "inputs_frozen", "market_sol", "1.8e0", true)).exit).toBe(2);
  });
});

describe("verifyBundle exit 1: altered fields", () => {
  const items = () => [
    ...fiatScenario().items,
    ...lstPremiumScenario().items,
    ...crScenario().items,
    ...relaxScenario().items,
  ];

  it("any single altered inputs_frozen member (hash not recomputed) -> exit 1", () => {
    for (const { bundle } of items()) {
      for (const [k, v] of Object.entries(bundle.inputs_frozen)) {
        const r = verifyBundle(mutate(bundle, "inputs_frozen", k, altered(k, v), false));
        expect(r.exit, `inputs_frozen.${k}: ${r.message}`).toBe(VERIFY_EXIT.mismatch);
      }
    }
  });

  it("any single altered expected_computed member (hash not recomputed) -> exit 1", () => {
    for (const { bundle } of items()) {
      for (const [k, v] of Object.entries(bundle.expected_computed)) {
        const r = verifyBundle(mutate(bundle, "expected_computed", k, altered(k, v), false));
        expect(r.exit, `expected_computed.${k}: ${r.message}`).toBe(1);
      }
    }
  });

  it("an altered catalog entry or git_sha (hash not recomputed) -> exit 1", () => {
    const b = fiatScenario().items[0]!.bundle;
    expect(verifyBundle(mutate(b, "catalog_entry", "name", "Other USD", false)).exit).toBe(1);
    expect(verifyBundle(mutate(b, "catalog_entry", "decimals", 9, false)).exit).toBe(1);
    expect(verifyBundle(mutate(b, null, "git_sha", "", false)).exit).toBe(1);
    expect(verifyBundle(mutate(b, null, "expected_receipt_sha256", "0".repeat(64), false)).exit).toBe(1);
  });

  it("an altered decimal spelling without a recomputed hash -> exit 1 (the hash binds the bytes)", () => {
    const b = fiatScenario().items[0]!.bundle;
    expect(verifyBundle(mutate(b, "expected_computed", "discount_raw", "0.010", false)).exit).toBe(1);
  });

  // The dwell-timer PEGGED -> DRIFT decision: ewma_prev 0.001, market 0.99 (raw 0.01, smooth 0.0037 = 37 bps),
  // candidate DRIFT since T0 + 1 s, now T0 + 31 s, thresholds 20/100/300, no oracle entry.
  it.each([
    ["intrinsic_usd", "1.01"],
    ["market_usd", "0.999"],
    ["ewma_prev", "0.002"],
    ["ewma_prev", null],
    ["alpha", "0.5"],
    ["previous_band", "DEPEG"],
    ["candidate_state", null],
    ["candidate_since", "2026-06-12T10:00:02.000Z"],
    ["candidate_since", null],
    ["now", "2026-06-12T10:00:30.999Z"],
    ["thresholds", { drift_bps: 40, depeg_bps: 100, critical_bps: 300 }],
    ["thresholds", { drift_bps: 20, depeg_bps: 30, critical_bps: 300 }],
    ["oracle", { px: { price: "1", conf: "0.06", publish_time: "2026-06-12T10:00:30.000Z" } }],
    ["oracle", { px: { price: "1", conf: "0.0001", publish_time: "2026-06-12T10:00:30.000Z" } }],
    ["intrinsic_stale", true],
    ["confirm_up_secs", 31],
    ["intrinsic_sol", "1"],
  ] as const)("inputs_frozen.%s = %j with a recomputed hash -> exit 1 (re-derivation mismatch)", (key, v) => {
    const b = fiatScenario().items[0]!.bundle;
    const r = verifyBundle(mutate(b, "inputs_frozen", key, v, true));
    if (key === "intrinsic_sol") {
      // a non-lst ignores the SOL legs: the verdict is unchanged and the bundle still passes
      expect(r.exit).toBe(0);
      return;
    }
    expect(r.exit, r.message).toBe(VERIFY_EXIT.mismatch);
    expect(r.verdict).toBe("FAIL");
  });

  it.each([
    ["discount_raw", "0.02"],
    ["discount_raw", "-0.01"],
    ["discount_smooth", "0.0038"],
    ["discount_smooth", "0.00370000000000000000000000000001"],
    ["band", "DEPEG"],
    ["band", "PEGGED"],
    ["final_state", "PEGGED"],
    ["final_state", "UNKNOWN"],
    ["gate", "oracle_confidence"],
    ["confidence", "high"],
  ] as const)("expected_computed.%s = %j with a recomputed hash -> exit 1", (key, v) => {
    const b = fiatScenario().items[0]!.bundle;
    const r = verifyBundle(mutate(b, "expected_computed", key, v, true));
    expect(r.exit, r.message).toBe(1);
  });

  it("an lst bundle whose SOL legs are altered with a recomputed hash -> exit 1", () => {
    const b = lstPremiumScenario().items[0]!.bundle;
    expect(verifyBundle(mutate(b, "inputs_frozen", "market_sol", "1.25", true)).exit).toBe(1);
    expect(verifyBundle(mutate(b, "inputs_frozen", "intrinsic_sol", "1.5", true)).exit).toBe(1);
  });

  it("a CR bundle whose cr is altered with a recomputed hash -> exit 1", () => {
    const b = crScenario().items[0]!.bundle;
    expect(verifyBundle(mutate(b, "inputs_frozen", "cr", "1.2", true)).exit).toBe(1);
    expect(verifyBundle(mutate(b, "inputs_frozen", "cr", "0.99", true)).exit).toBe(1);
  });

  it("frozen inputs that no longer produce a decision (implausible) with a recomputed hash -> exit 1", () => {
    const b = fiatScenario().items[0]!.bundle;
    const r = verifyBundle(mutate(b, "inputs_frozen", "market_usd", "0", true));
    expect(r.exit, r.message).toBe(1);
  });

  it("relaxation bundle: decay_down_secs 121 with a recomputed hash -> exit 1", () => {
    const b = relaxScenario().items[1]!.bundle;
    expect(b.inputs_frozen.trigger).toBe("dwell_timer");
    expect(verifyBundle(mutate(b, "inputs_frozen", "decay_down_secs", 121, true)).exit).toBe(1);
  });

  // Methodology section 8: the frozen inputs hold "everything the decision used", including deadband_pct and
  // cr_deadband_pct, and the verifier re-derives `computed` from inputs_frozen. A frozen deadband different from the one
  // the verdict was computed with (and that changes the verdict) must not PASS.
  it("relaxation bundle: deadband_pct 50 (exit drift 30 bps, 33 bps stays DRIFT) with a recomputed hash does not pass", () => {
    const b = relaxScenario().items[1]!.bundle;
    expect(b.expected_computed.band).toBe("PEGGED");
    const r = verifyBundle(mutate(b, "inputs_frozen", "deadband_pct", 50, true));
    expect(r.exit, r.message).not.toBe(0);
  });

  it("CR relaxation bundle: cr_deadband_pct 10 (exit drift 165 %, cr 155 % stays DRIFT) with a recomputed hash does not pass", () => {
    const b = crScenario().items[1]!.bundle;
    expect(b.expected_computed.band).toBe("PEGGED");
    expect(b.inputs_frozen.cr).toBe("1.55");
    const r = verifyBundle(mutate(b, "inputs_frozen", "cr_deadband_pct", 10, true));
    expect(r.exit, r.message).not.toBe(0);
  });
});

describe("long quiet runs at par", () => {
  // At exactly par the EWMA decays geometrically (x 0.7 per sample) and never reaches 0 at 34 significant digits,
  // so d_smooth grows ever more leading zeros. Its wire form is still a valid decimal (section 8) and the receipt of
  // a transition taken then must still verify.
  it("a transition after 400 samples at exactly par still verifies (exit 0)", () => {
    const { entry, asset } = assetOf("stable_fiat");
    const events: TimelineEvent[] = [at(T0, "0.9999")];
    for (let i = 1; i <= 400; i++) events.push(at(T0 + i * SEC, "1"));
    events.push(at(T0 + 401 * SEC, "1", { oracle: BAD }));
    const run = runTimeline(asset, events);
    const items = bundlesOf(entry, asset, run.outcomes);
    expect(items).toHaveLength(1);
    expect(items[0]!.receipt.to_state).toBe("UNKNOWN");
    const r = verifyBundle(jsonCopy(items[0]!.bundle));
    expect(r.exit, r.message).toBe(0);
  });

  it("the same receipt's d_smooth is a plain decimal that parses back to the exact value", () => {
    const { entry, asset } = assetOf("stable_fiat");
    const events: TimelineEvent[] = [at(T0, "0.9999")];
    for (let i = 1; i <= 400; i++) events.push(at(T0 + i * SEC, "1"));
    events.push(at(T0 + 401 * SEC, "1", { oracle: BAD }));
    const run = runTimeline(asset, events);
    const [item] = bundlesOf(entry, asset, run.outcomes);
    const wire = item!.receipt.computed.discount_smooth;
    expect(wire).toMatch(WIRE_DECIMAL);
    expect(new D(wire).eq(item!.decision.computed.discount_smooth)).toBe(true);
  });
});

describe("replayBundle", () => {
  it("carries schema 1, the version, git_sha, entry, inputs, computed, hash and state_reason", () => {
    const { receipt } = lstPremiumScenario().items[0]!;
    const b = replayBundle(receipt);
    expect(b).toEqual({
      schema_version: "1",
      methodology_version: METHODOLOGY_VERSION,
      git_sha: GIT_SHA,
      catalog_entry: receipt.catalog_entry,
      inputs_frozen: receipt.inputs_frozen,
      expected_computed: receipt.computed,
      expected_receipt_sha256: receipt.receipt_sha256,
      state_reason: "premium_sanity",
    });
  });
});
