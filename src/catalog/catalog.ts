import canonicalize from "canonicalize";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  methodologyAssetFrom,
  ReceiptFormatError,
  thresholdKind,
  type AssetClass,
  type MethodologyAsset,
  type ThresholdKind,
  type Thresholds,
} from "../methodology/index.ts";

import { validate, type Obj } from "./catalog-validate.ts";

/** What a discount is measured against (interface 2.2). Derived from the class, never from `peg_target`. */
export const ANCHORS = ["USD", "FX", "NAV"] as const;
export type Anchor = (typeof ANCHORS)[number];

/** Which direction of the signed discount is the risk: `below` for USD and FX anchors, `either` for NAV. */
export const RISK_SIDES = ["below", "either"] as const;
export type RiskSide = (typeof RISK_SIDES)[number];

/** `provisional` if and only if the asset is monitoring-only. */
export const CALIBRATIONS = ["provisional", "calibrated"] as const;
export type Calibration = (typeof CALIBRATIONS)[number];

const ANCHOR_OF_CLASS: Readonly<Record<AssetClass, Anchor>> = {
  stable_fiat: "USD",
  stable_dn: "USD",
  stable_cdp: "USD",
  stable_fx: "FX",
  lst: "NAV",
  stable_yield: "NAV",
  synth_lev: "NAV",
};

export function anchorOf(cls: AssetClass): Anchor {
  return ANCHOR_OF_CLASS[cls];
}

export function riskSideOf(anchor: Anchor): RiskSide {
  return anchor === "NAV" ? "either" : "below";
}

/** A catalog entry exactly as shipped (same members, same order), deep-frozen. Hashed with JCS into receipts. */
export type CatalogEntry = Readonly<Record<string, unknown>>;

/** An `intrinsic` or `market` source as stored; `feed`, when present, names a key of `pyth_feeds`. */
export interface PriceSource {
  readonly kind: string;
  readonly feed?: string;
  readonly [member: string]: unknown;
}

/** One tracked token. Immutable. */
export interface CatalogAsset {
  /** The raw entry, untouched: use it (not the derived fields) wherever a receipt hashes the catalog entry. */
  readonly entry: CatalogEntry;
  /** Exact, case-sensitive key (`USD*`, `hyloSOL+`). */
  readonly symbol: string;
  readonly name: string;
  /** Token mint, base58 of 32 bytes. */
  readonly mint: string;
  readonly class: AssetClass;
  /** Target currency as stored (`USD`, `SOL`, `BRL`, ...); informative only, the anchor comes from the class. */
  readonly pegTarget: string;
  /** Token decimals, 0 to 18. */
  readonly decimals: number;
  readonly active: boolean;
  readonly monitoringOnly: boolean;
  /** Non-null if and only if monitoringOnly. */
  readonly monitoringReason: string | null;
  /** `YYYY-MM-DD`; non-null if and only if monitoringOnly. */
  readonly monitoringSince: string | null;
  /** As stored: spread form in whole bps, or collateral-ratio form in whole percent. */
  readonly thresholds: Thresholds;
  readonly thresholdKind: ThresholdKind;
  readonly anchor: Anchor;
  readonly riskSide: RiskSide;
  readonly calibration: Calibration;
  readonly intrinsic: PriceSource;
  readonly market: PriceSource;
  /** Pyth price-feed id (`0x` + 64 hex) used as the oracle cross-check, or null. */
  readonly oracleFeedId: string | null;
  /** The members the methodology interprets, read from `entry` by the methodology itself. */
  readonly methodology: MethodologyAsset;
}

/** The validated, immutable catalog. Lookups are O(1). */
export interface Catalog {
  /** Every asset, in file order. */
  readonly all: readonly CatalogAsset[];
  /** Assets with `active: true`, in file order. */
  readonly active: readonly CatalogAsset[];
  /** Exact, case-sensitive symbol lookup (`usdc` does not find `USDC`). Includes inactive assets. */
  bySymbol(symbol: string): CatalogAsset | undefined;
  /** Exact mint lookup. Includes inactive assets: callers that serve only active ones check `active`. */
  byMint(mint: string): CatalogAsset | undefined;
  /** Pyth feed name (`SOL/USD`) -> feed id (`0x` + 64 hex), in file order. */
  readonly pythFeeds: ReadonlyMap<string, string>;
  /** Maximum publish age in seconds for a feed: its own entry in `pyth_staleness_secs`, else `default`. */
  stalenessSecs(feedName: string): number;
  /**
   * Lowercase hex SHA-256 of the JCS (RFC 8785) canonical form of the whole parsed document, so reformatting the
   * file (whitespace, member order) keeps the version and any value change moves it.
   */
  readonly version: string;
}

export const CATALOG_ERROR_CODES = { invalidCatalog: "invalid_catalog" } as const;

/** The catalog document is malformed. `issues` lists every problem found, each naming the asset and the field. */
export class CatalogError extends Error {
  readonly code = CATALOG_ERROR_CODES.invalidCatalog;
  readonly issues: readonly string[];
  constructor(issues: readonly string[]) {
    super(`invalid catalog (${issues.length} problem${issues.length === 1 ? "" : "s"}):\n  ${issues.join("\n  ")}`);
    this.name = "CatalogError";
    this.issues = Object.freeze([...issues]);
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

function buildAsset(entry: CatalogEntry): CatalogAsset {
  const methodology = deepFreeze(methodologyAssetFrom(entry));
  const cls = entry["class"] as AssetClass;
  const anchor = anchorOf(cls);
  const monitoringOnly = entry["monitoring_only"] as boolean;
  const thresholds = entry["thresholds"] as Thresholds;
  return Object.freeze({
    entry,
    symbol: entry["symbol"] as string,
    name: entry["name"] as string,
    mint: entry["mint"] as string,
    class: cls,
    pegTarget: entry["peg_target"] as string,
    decimals: entry["decimals"] as number,
    active: entry["active"] as boolean,
    monitoringOnly,
    monitoringReason: monitoringOnly ? (entry["monitoring_reason"] as string) : null,
    monitoringSince: monitoringOnly ? (entry["monitoring_since"] as string) : null,
    thresholds,
    thresholdKind: thresholdKind(thresholds),
    anchor,
    riskSide: riskSideOf(anchor),
    calibration: monitoringOnly ? "provisional" : "calibrated",
    intrinsic: entry["intrinsic"] as PriceSource,
    market: entry["market"] as PriceSource,
    oracleFeedId: (entry["oracle_feed_id"] as string | null | undefined) ?? null,
    methodology,
  });
}

/**
 * Validates a parsed catalog document and builds the catalog. The input is copied first (as JSON), so the caller's
 * object is neither frozen nor retained. Throws CatalogError listing every problem at once.
 */
export function loadCatalog(raw: unknown): Catalog {
  let doc: unknown;
  try {
    const text = JSON.stringify(raw) as string | undefined;
    if (text === undefined) throw new TypeError(`${typeof raw} has no JSON form`);
    doc = JSON.parse(text);
  } catch (e) {
    throw new CatalogError([`catalog is not JSON data: ${e instanceof Error ? e.message : String(e)}`]);
  }
  const issues = validate(doc);
  if (issues.length > 0) throw new CatalogError(issues);
  const root = deepFreeze(doc as Obj);

  const all: CatalogAsset[] = [];
  for (const [i, entry] of (root["assets"] as readonly CatalogEntry[]).entries()) {
    try {
      all.push(buildAsset(entry));
    } catch (e) {
      // Unreachable while validate() is at least as strict as the methodology's reader; kept so a drift between
      // the two still reports as a catalog problem rather than a stray exception.
      if (!(e instanceof ReceiptFormatError)) throw e;
      issues.push(`assets[${i}] (${String(entry["symbol"])}): ${e.message}`);
    }
  }
  if (issues.length > 0) throw new CatalogError(issues);

  const bySymbol = new Map(all.map((a) => [a.symbol, a] as const));
  const byMint = new Map(all.map((a) => [a.mint, a] as const));
  const pythFeeds: ReadonlyMap<string, string> = new Map(Object.entries(root["pyth_feeds"] as Readonly<Record<string, string>>));
  const staleness = new Map(Object.entries(root["pyth_staleness_secs"] as Readonly<Record<string, number>>));
  const defaultSecs = staleness.get("default")!;
  const version = createHash("sha256").update(canonicalize(root)!, "utf8").digest("hex");

  return Object.freeze({
    all: Object.freeze(all),
    active: Object.freeze(all.filter((a) => a.active)),
    bySymbol: (symbol: string) => bySymbol.get(symbol),
    byMint: (mint: string) => byMint.get(mint),
    pythFeeds,
    stalenessSecs: (feedName: string) => staleness.get(feedName) ?? defaultSecs,
    version,
  });
}

/** Location of the catalog shipped with this module. */
export const SHIPPED_CATALOG_URL = new URL("./assets.json", import.meta.url);

let shipped: Catalog | undefined;

/** The catalog shipped next to this module (`assets.json`), read and validated once per process. */
export function loadShippedCatalog(): Catalog {
  if (shipped === undefined) {
    const text = readFileSync(SHIPPED_CATALOG_URL, "utf8");
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new CatalogError([`${SHIPPED_CATALOG_URL.pathname} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`]);
    }
    shipped = loadCatalog(raw);
  }
  return shipped;
}
