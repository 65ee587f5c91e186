import canonicalize from "canonicalize";
import fc from "fast-check";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  Base58Error,
  CatalogError,
  base58Decode,
  base58Encode,
  isBase58OfLength,
  loadCatalog,
  loadShippedCatalog,
  type Anchor,
  type CatalogAsset,
} from "../src/catalog/index.ts";
import { ASSET_CLASSES, isCrThresholds, type AssetClass } from "../src/methodology/index.ts";

type Entry = Record<string, unknown> & { thresholds: Record<string, unknown>; market: Record<string, unknown> };
interface Doc {
  pyth_feeds: Record<string, string>;
  pyth_staleness_secs: Record<string, number>;
  assets: Entry[];
  [key: string]: unknown;
}

const FILE_URL = new URL("../src/catalog/assets.json", import.meta.url);
const RAW: Doc = JSON.parse(readFileSync(FILE_URL, "utf8")) as Doc;
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

/** A deep copy of the shipped document, with `edit` applied. */
function mutated(edit: (doc: Doc) => void): Doc {
  const doc = structuredClone(RAW);
  edit(doc);
  return doc;
}

function entryOf(doc: Doc, symbol: string): Entry {
  const e = doc.assets.find((a) => a["symbol"] === symbol);
  if (e === undefined) throw new Error(`no ${symbol} in the fixture`);
  return e;
}

/** The issues loadCatalog reports for `doc` (fails the test when it loads). */
function issuesOf(doc: unknown): readonly string[] {
  try {
    loadCatalog(doc);
  } catch (e) {
    expect(e).toBeInstanceOf(CatalogError);
    const err = e as CatalogError;
    expect(err.code).toBe("invalid_catalog");
    return err.issues;
  }
  throw new Error("the catalog loaded, but a CatalogError was expected");
}

describe("base58", () => {
  it("decodes the system program id to 32 zero bytes", () => {
    const bytes = base58Decode("11111111111111111111111111111111");
    expect(bytes).toHaveLength(32);
    expect(bytes.every((b) => b === 0)).toBe(true);
  });

  it("decodes known Solana program ids", () => {
    expect(hex(base58Decode("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"))).toBe(
      "054a535a992921064d24e87160da387c7c35b5ddbc92bb81e41fa8404105448d",
    );
    expect(hex(base58Decode("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"))).toBe(
      "06ddf6e1d765a193d9cbe146ceeb79ac1cb485ed5f5b37913a8cf5857eff00a9",
    );
  });

  it.each([
    ["", ""],
    ["2g", "61"],
    ["a3gV", "626262"],
    ["2cFupjhnEsSn59qHXstmK2ffpLv2", "73696d706c792061206c6f6e6720737472696e67"],
    ["1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L", "00eb15231dfceb60925886b67d065299925915aeb172c06647"],
    ["1111111111", "00000000000000000000"],
  ])("Bitcoin vector %j", (text, bytes) => {
    expect(hex(base58Decode(text))).toBe(bytes);
    expect(base58Encode(Buffer.from(bytes, "hex"))).toBe(text);
  });

  it.each(["0", "O", "I", "l"])("rejects %j with its position", (bad) => {
    const text = `Memo${bad}Sq4gq`;
    expect(() => base58Decode(text)).toThrow(Base58Error);
    try {
      base58Decode(text);
    } catch (e) {
      expect((e as Base58Error).position).toBe(4);
      expect((e as Base58Error).char).toBe(bad);
    }
    expect(isBase58OfLength(text, 32)).toBe(false);
  });

  it("rejects non-ASCII and whitespace", () => {
    expect(() => base58Decode("abc é")).toThrow(Base58Error);
    expect(() => base58Decode("Memo€")).toThrow(/position 4/);
  });

  it("round-trips any bytes, leading zeros included", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        expect(hex(base58Decode(base58Encode(bytes)))).toBe(hex(bytes));
      }),
    );
  });
});

describe("the shipped catalog", () => {
  const catalog = loadShippedCatalog();

  it("loads every asset in file order", () => {
    expect(catalog.all).toHaveLength(72);
    expect(catalog.all.map((a) => a.symbol)).toEqual(RAW.assets.map((a) => a["symbol"]));
    const activeCount = RAW.assets.filter((a) => a["active"] === true).length;
    expect(catalog.active).toHaveLength(activeCount);
    expect(catalog.active.every((a) => a.active)).toBe(true);
    expect(loadShippedCatalog()).toBe(catalog);
  });

  it("resolves exact, case-sensitive symbols", () => {
    expect(catalog.bySymbol("USD*")?.name).toBe("Perena USD Star");
    expect(catalog.bySymbol("hyloSOL+")?.class).toBe("lst");
    expect(catalog.bySymbol("USDC")?.symbol).toBe("USDC");
    expect(catalog.bySymbol("usdc")).toBeUndefined();
    expect(catalog.bySymbol("USD")).toBeUndefined();
    expect(catalog.bySymbol("hylosol+")).toBeUndefined();
  });

  it("resolves every asset by its mint", () => {
    expect(catalog.byMint("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v")?.symbol).toBe("USDC");
    for (const a of catalog.all) expect(catalog.byMint(a.mint)).toBe(a);
    expect(catalog.byMint("11111111111111111111111111111111")).toBeUndefined();
  });

  it("keeps each raw entry exactly as shipped, deep-frozen", () => {
    catalog.all.forEach((a, i) => {
      expect(JSON.stringify(a.entry)).toBe(JSON.stringify(RAW.assets[i]));
      expect(Object.isFrozen(a)).toBe(true);
      expect(Object.isFrozen(a.entry)).toBe(true);
      expect(Object.isFrozen(a.entry["thresholds"])).toBe(true);
      expect(Object.isFrozen(a.entry["market"])).toBe(true);
    });
    expect(Object.isFrozen(catalog.all)).toBe(true);
  });

  it("builds the methodology view from the entry", () => {
    for (const a of catalog.all) {
      expect(a.methodology.symbol).toBe(a.symbol);
      expect(a.methodology.mint).toBe(a.mint);
      expect(a.methodology.class).toBe(a.class);
      expect(a.methodology.thresholds).toEqual(a.thresholds);
      expect(a.methodology.oracle_feed_id).toBe(a.oracleFeedId);
    }
  });

  it("derives anchor and risk side from the class, one asset of every class", () => {
    const expected: Record<AssetClass, Anchor> = {
      stable_fiat: "USD",
      stable_dn: "USD",
      stable_cdp: "USD",
      stable_fx: "FX",
      lst: "NAV",
      stable_yield: "NAV",
      synth_lev: "NAV",
    };
    for (const cls of ASSET_CLASSES) {
      const a = catalog.all.find((x) => x.class === cls);
      expect(a, `an asset of class ${cls}`).toBeDefined();
      const asset = a as CatalogAsset;
      expect(asset.anchor).toBe(expected[cls]);
      expect(asset.riskSide).toBe(expected[cls] === "NAV" ? "either" : "below");
    }
    for (const a of catalog.all) expect(a.anchor).toBe(expected[a.class]);
  });

  it("never derives the anchor from peg_target", () => {
    // Yield-bearing stables peg to USD yet are NAV-anchored; FX stables peg to BRL or EUR.
    const usdx = catalog.bySymbol("USD*")!;
    expect([usdx.pegTarget, usdx.anchor, usdx.riskSide]).toEqual(["USD", "NAV", "either"]);
    const brz = catalog.bySymbol("BRZ")!;
    expect([brz.pegTarget, brz.anchor, brz.riskSide]).toEqual(["BRL", "FX", "below"]);
  });

  it("is provisional if and only if monitoring-only", () => {
    for (const a of catalog.all) {
      expect(a.calibration).toBe(a.monitoringOnly ? "provisional" : "calibrated");
      expect(a.monitoringReason !== null).toBe(a.monitoringOnly);
      expect(a.monitoringSince !== null).toBe(a.monitoringOnly);
    }
    const hylo = catalog.bySymbol("hyloSOL+")!;
    expect(hylo.calibration).toBe("provisional");
    expect(hylo.monitoringSince).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(catalog.bySymbol("USDC")!.calibration).toBe("calibrated");
  });

  it("has hyUSD as its only collateral-ratio asset", () => {
    const cr = catalog.all.filter((a) => a.thresholdKind === "cr");
    expect(cr.map((a) => a.symbol)).toEqual(["hyUSD"]);
    expect(isCrThresholds(cr[0]!.thresholds)).toBe(true);
    expect(cr[0]!.thresholds).toEqual({ cr_drift: 130, cr_depeg: 115, cr_critical: 105, cr_black_swan: 100 });
    expect(catalog.all.filter((a) => a.thresholdKind === "bps")).toHaveLength(71);
  });

  it("serves pyth feeds and staleness", () => {
    expect(catalog.pythFeeds.size).toBe(Object.keys(RAW.pyth_feeds).length);
    expect(catalog.pythFeeds.get("SOL/USD")).toBe(RAW.pyth_feeds["SOL/USD"]);
    expect(catalog.stalenessSecs("ONYC/USD.NAV")).toBe(604800);
    expect(catalog.stalenessSecs("SOL/USD")).toBe(RAW.pyth_staleness_secs["default"]);
    expect(catalog.stalenessSecs("NOPE/USD")).toBe(RAW.pyth_staleness_secs["default"]);
  });

  it("is versioned by the SHA-256 of the JCS form, independent of formatting", () => {
    const expected = createHash("sha256").update(canonicalize(RAW)!, "utf8").digest("hex");
    expect(catalog.version).toBe(expected);
    const reordered = Object.fromEntries(Object.entries(structuredClone(RAW)).reverse());
    expect(loadCatalog(reordered).version).toBe(expected);
    expect(loadCatalog(mutated((d) => (entryOf(d, "USDC")["decimals"] = 7))).version).not.toBe(expected);
  });

  it("neither freezes nor retains the caller's object", () => {
    const doc = structuredClone(RAW);
    const c = loadCatalog(doc);
    expect(Object.isFrozen(doc)).toBe(false);
    doc.assets[0]!["symbol"] = "changed";
    expect(c.all[0]!.symbol).toBe(RAW.assets[0]!["symbol"]);
  });
});

describe("validation", () => {
  it.each<[string, (d: Doc) => void, RegExp]>([
    ["duplicate symbol", (d) => (entryOf(d, "mSOL")["symbol"] = "jitoSOL"), /assets\[1\] \(jitoSOL\): symbol "jitoSOL" duplicates assets\[0\]/],
    ["duplicate mint", (d) => (entryOf(d, "USDT")["mint"] = entryOf(d, "USDC")["mint"]), /\(USDT\): mint "EPjF\w+" duplicates assets\[\d+\] \(USDC\)/],
    ["bad base58 char", (d) => (entryOf(d, "USDC")["mint"] = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt10"), /\(USDC\): mint ".*" is not base58: invalid base58 character "0" at position 43/],
    ["31-byte mint", (d) => (entryOf(d, "USDC")["mint"] = base58Encode(new Uint8Array(31).fill(7))), /\(USDC\): mint ".*" decodes to 31 bytes, not 32/],
    ["unknown class", (d) => (entryOf(d, "USDC")["class"] = "stable_gold"), /\(USDC\): class "stable_gold" is not one of lst, stable_fiat/],
    ["class in the wrong case", (d) => (entryOf(d, "USDC")["class"] = "LST"), /\(USDC\): class "LST" is not one of/],
    ["non-increasing thresholds", (d) => (entryOf(d, "USDC").thresholds["depeg_bps"] = entryOf(d, "USDC").thresholds["drift_bps"]), /\(USDC\): thresholds must be strictly increasing: need drift_bps \d+ < depeg_bps \d+ < critical_bps \d+/],
    ["black swan not above critical", (d) => (entryOf(d, "USDC").thresholds["black_swan_bps"] = 1), /\(USDC\): thresholds must be strictly increasing: .* < black_swan_bps 1/],
    ["non-integer threshold", (d) => (entryOf(d, "USDC").thresholds["drift_bps"] = 2.5), /\(USDC\): thresholds.drift_bps must be a positive integer, got 2.5/],
    ["zero threshold", (d) => (entryOf(d, "USDC").thresholds["drift_bps"] = 0), /\(USDC\): thresholds.drift_bps must be a positive integer, got 0/],
    ["missing spread threshold", (d) => delete entryOf(d, "USDC").thresholds["critical_bps"], /\(USDC\): thresholds.critical_bps is missing/],
    ["mixed threshold forms", (d) => (entryOf(d, "USDC").thresholds["cr_drift"] = 130), /\(USDC\): thresholds mixes the spread form \(drift_bps, depeg_bps, critical_bps\) with the collateral-ratio form \(cr_drift\)/],
    ["unknown threshold key", (d) => (entryOf(d, "USDC").thresholds["drift"] = 10), /\(USDC\): thresholds.drift is not a threshold \(allowed: drift_bps, depeg_bps, critical_bps, black_swan_bps\)/],
    ["partial CR thresholds", (d) => delete entryOf(d, "hyUSD").thresholds["cr_black_swan"], /\(hyUSD\): thresholds.cr_black_swan is missing \(the collateral-ratio form needs all four\)/],
    ["non-decreasing CR thresholds", (d) => (entryOf(d, "hyUSD").thresholds["cr_critical"] = 120), /\(hyUSD\): thresholds must be strictly decreasing: need cr_drift 130 > cr_depeg 115 > cr_critical 120 > cr_black_swan 100/],
    ["missing monitoring_reason", (d) => (entryOf(d, "hyloSOL+")["monitoring_reason"] = null), /\(hyloSOL\+\): monitoring_reason must be a non-empty string when monitoring_only is true, got null/],
    ["impossible monitoring_since", (d) => (entryOf(d, "hyloSOL+")["monitoring_since"] = "2026-02-30"), /\(hyloSOL\+\): monitoring_since must be a YYYY-MM-DD date/],
    ["reason on a calibrated asset", (d) => (entryOf(d, "USDC")["monitoring_reason"] = "why"), /\(USDC\): monitoring_reason must be null when monitoring_only is false/],
    ["non-boolean monitoring_only", (d) => (entryOf(d, "USDC")["monitoring_only"] = "no"), /\(USDC\): monitoring_only must be a boolean, got "no"/],
    ["non-boolean active", (d) => delete entryOf(d, "USDC")["active"], /\(USDC\): active must be a boolean, got missing/],
    ["decimals out of range", (d) => (entryOf(d, "USDC")["decimals"] = 19), /\(USDC\): decimals must be an integer from 0 to 18, got 19/],
    ["empty symbol", (d) => (d.assets[2]!["symbol"] = ""), /assets\[2\]: symbol must be a non-empty string, got ""/],
    ["empty name", (d) => (entryOf(d, "USDC")["name"] = ""), /\(USDC\): name must be a non-empty string/],
    ["missing peg_target", (d) => delete entryOf(d, "USDC")["peg_target"], /\(USDC\): peg_target must be a non-empty string, got missing/],
    ["bad oracle_feed_id", (d) => (entryOf(d, "USDC")["oracle_feed_id"] = "0x1234"), /\(USDC\): oracle_feed_id must be null or 0x followed by 64 hex digits/],
    ["market without kind", (d) => delete entryOf(d, "USDC").market["kind"], /\(USDC\): market.kind must be a non-empty string, got missing/],
    ["unknown feed", (d) => (entryOf(d, "USDC").market["feed"] = "USDC/EUR"), /\(USDC\): market.feed "USDC\/EUR" is not in pyth_feeds/],
    ["bad pyth feed id", (d) => (d.pyth_feeds["SOL/USD"] = "0xzz"), /pyth_feeds\["SOL\/USD"\] must be 0x followed by 64 hex digits, got "0xzz"/],
    ["staleness without default", (d) => delete d.pyth_staleness_secs["default"], /pyth_staleness_secs.default is missing/],
    ["non-positive staleness", (d) => (d.pyth_staleness_secs["default"] = 0), /pyth_staleness_secs\["default"\] must be a positive integer, got 0/],
    ["staleness of an unknown feed", (d) => (d.pyth_staleness_secs["NOPE/USD"] = 60), /pyth_staleness_secs\["NOPE\/USD"\] names no feed in pyth_feeds/],
  ])("rejects %s", (_name, edit, message) => {
    const issues = issuesOf(mutated(edit));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(message);
  });

  it("rejects a document that is not a catalog", () => {
    expect(issuesOf(null)).toEqual(["catalog must be a JSON object, got null"]);
    expect(issuesOf([])).toEqual(["catalog must be a JSON object, got an array"]);
    expect(issuesOf(mutated((d) => delete (d as Partial<Doc>).assets))).toEqual(["assets must be an array, got missing"]);
    expect(issuesOf(mutated((d) => d.assets.push(7 as unknown as Entry)))).toEqual(["assets[72]: must be an object, got 7"]);
    expect(issuesOf(10n)[0]).toMatch(/catalog is not JSON data/);
  });

  it("reports several problems together, in document order", () => {
    const doc = mutated((d) => {
      entryOf(d, "mSOL")["symbol"] = "jitoSOL";
      entryOf(d, "USDC")["class"] = "stable_gold";
      entryOf(d, "USDC")["decimals"] = -1;
      entryOf(d, "hyUSD").thresholds["cr_drift"] = 100;
      entryOf(d, "USD*").market["feed"] = "NOPE";
    });
    const issues = issuesOf(doc);
    expect(issues).toHaveLength(5);
    const expected = [
      /^assets\[1\] \(jitoSOL\): symbol "jitoSOL" duplicates assets\[0\]/,
      /^assets\[6\] \(USDC\): class "stable_gold"/,
      /^assets\[6\] \(USDC\): decimals must be/,
      /^assets\[11\] \(hyUSD\): thresholds must be strictly decreasing/,
      /^assets\[71\] \(USD\*\): market.feed "NOPE"/,
    ];
    expected.forEach((re, i) => expect(issues[i]).toMatch(re));
    const err = (() => {
      try {
        loadCatalog(doc);
      } catch (e) {
        return e as CatalogError;
      }
      throw new Error("expected a CatalogError");
    })();
    expect(err.message).toMatch(/^invalid catalog \(5 problems\):/);
    for (const issue of issues) expect(err.message).toContain(issue);
  });

  it("accepts an optional black_swan_bps above critical", () => {
    const c = loadCatalog(mutated((d) => (entryOf(d, "USDC").thresholds["black_swan_bps"] = 10_000)));
    expect(c.bySymbol("USDC")!.thresholds).toMatchObject({ black_swan_bps: 10_000 });
  });
});
