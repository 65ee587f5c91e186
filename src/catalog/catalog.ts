import canonicalize from "canonicalize";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  ASSET_CLASSES,
  methodologyAssetFrom,
  parseTimestamp,
  ReceiptFormatError,
  thresholdKind,
  type AssetClass,
  type MethodologyAsset,
  type ThresholdKind,
  type Thresholds,
} from "../methodology/index.ts";
import { Base58Error, base58Decode } from "./base58.ts";

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

type Obj = Readonly<Record<string, unknown>>;

const FEED_ID = /^0x[0-9a-fA-F]{64}$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const SPREAD_KEYS = ["drift_bps", "depeg_bps", "critical_bps", "black_swan_bps"] as const;
const CR_KEYS = ["cr_drift", "cr_depeg", "cr_critical", "cr_black_swan"] as const;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const has = (o: Obj, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);
const show = (v: unknown): string => (v === undefined ? "missing" : JSON.stringify(v));
const isPositiveInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v > 0;
const isNonEmptyString = (v: unknown): v is string => typeof v === "string" && v !== "";

function isIsoDate(v: unknown): v is string {
  return typeof v === "string" && DATE.test(v) && parseTimestamp(`${v}T00:00:00Z`) !== null;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

function checkThresholds(t: unknown, issue: (msg: string) => void): void {
  if (!isObj(t)) {
    issue(`thresholds must be an object, got ${show(t)}`);
    return;
  }
  const keys = Object.keys(t);
  const crKeys = keys.filter((k) => (CR_KEYS as readonly string[]).includes(k));
  const spreadKeys = keys.filter((k) => (SPREAD_KEYS as readonly string[]).includes(k));
  if (crKeys.length > 0 && spreadKeys.length > 0) {
    issue(`thresholds mixes the spread form (${spreadKeys.join(", ")}) with the collateral-ratio form (${crKeys.join(", ")})`);
    return;
  }
  const cr = crKeys.length > 0;
  const allowed: readonly string[] = cr ? CR_KEYS : SPREAD_KEYS;
  for (const k of keys) {
    if (!allowed.includes(k)) issue(`thresholds.${k} is not a threshold (allowed: ${allowed.join(", ")})`);
  }
  const required: readonly string[] = cr ? CR_KEYS : SPREAD_KEYS.slice(0, 3);
  for (const k of required) if (!has(t, k)) issue(`thresholds.${k} is missing (${cr ? "the collateral-ratio form needs all four" : "the spread form needs drift_bps, depeg_bps and critical_bps"})`);
  const present = allowed.filter((k) => has(t, k));
  let ok = true;
  for (const k of present) {
    if (!isPositiveInt(t[k])) {
      issue(`thresholds.${k} must be a positive integer, got ${show(t[k])}`);
      ok = false;
    }
  }
  if (!ok) return;
  const values = present.map((k) => t[k] as number);
  const ordered = values.every((v, i) => i === 0 || (cr ? v < values[i - 1]! : v > values[i - 1]!));
  if (!ordered) {
    const chain = present.map((k) => `${k} ${String(t[k])}`).join(cr ? " > " : " < ");
    issue(`thresholds must be strictly ${cr ? "decreasing" : "increasing"}: need ${chain}`);
  }
}

function checkSource(name: "intrinsic" | "market", s: unknown, feeds: Obj | null, issue: (msg: string) => void): void {
  if (!isObj(s)) {
    issue(`${name} must be an object, got ${show(s)}`);
    return;
  }
  if (!isNonEmptyString(s["kind"])) issue(`${name}.kind must be a non-empty string, got ${show(s["kind"])}`);
  if (has(s, "feed")) {
    const feed = s["feed"];
    if (typeof feed !== "string") issue(`${name}.feed must be a string, got ${show(feed)}`);
    else if (feeds !== null && !has(feeds, feed)) issue(`${name}.feed ${JSON.stringify(feed)} is not in pyth_feeds`);
  }
}

function checkAsset(a: Obj, feeds: Obj | null, issue: (msg: string) => void): void {
  if (!isNonEmptyString(a["symbol"])) issue(`symbol must be a non-empty string, got ${show(a["symbol"])}`);
  if (!isNonEmptyString(a["name"])) issue(`name must be a non-empty string, got ${show(a["name"])}`);
  const mint = a["mint"];
  if (typeof mint !== "string") issue(`mint must be a base58 string, got ${show(mint)}`);
  else {
    try {
      const n = base58Decode(mint).length;
      if (n !== 32) issue(`mint ${JSON.stringify(mint)} decodes to ${n} bytes, not 32`);
    } catch (e) {
      if (!(e instanceof Base58Error)) throw e;
      issue(`mint ${JSON.stringify(mint)} is not base58: ${e.message}`);
    }
  }
  if (!(ASSET_CLASSES as readonly unknown[]).includes(a["class"])) {
    issue(`class ${show(a["class"])} is not one of ${ASSET_CLASSES.join(", ")}`);
  }
  if (!isNonEmptyString(a["peg_target"])) issue(`peg_target must be a non-empty string, got ${show(a["peg_target"])}`);
  const decimals = a["decimals"];
  if (typeof decimals !== "number" || !Number.isInteger(decimals) || decimals < 0 || decimals > 18) {
    issue(`decimals must be an integer from 0 to 18, got ${show(decimals)}`);
  }
  if (typeof a["active"] !== "boolean") issue(`active must be a boolean, got ${show(a["active"])}`);
  const monitoring = a["monitoring_only"];
  if (typeof monitoring !== "boolean") issue(`monitoring_only must be a boolean, got ${show(monitoring)}`);
  else if (monitoring) {
    if (!isNonEmptyString(a["monitoring_reason"])) {
      issue(`monitoring_reason must be a non-empty string when monitoring_only is true, got ${show(a["monitoring_reason"])}`);
    }
    if (!isIsoDate(a["monitoring_since"])) {
      issue(`monitoring_since must be a YYYY-MM-DD date when monitoring_only is true, got ${show(a["monitoring_since"])}`);
    }
  } else {
    for (const k of ["monitoring_reason", "monitoring_since"]) {
      if (a[k] != null) issue(`${k} must be null when monitoring_only is false, got ${show(a[k])}`);
    }
  }
  checkThresholds(a["thresholds"], issue);
  const oracle = a["oracle_feed_id"];
  if (oracle != null && !(typeof oracle === "string" && FEED_ID.test(oracle))) {
    issue(`oracle_feed_id must be null or 0x followed by 64 hex digits, got ${show(oracle)}`);
  }
  checkSource("intrinsic", a["intrinsic"], feeds, issue);
  checkSource("market", a["market"], feeds, issue);
}

/** Every problem of the document, in document order; empty when it is valid. */
function validate(doc: unknown): string[] {
  const issues: string[] = [];
  if (!isObj(doc)) return [`catalog must be a JSON object, got ${Array.isArray(doc) ? "an array" : show(doc)}`];

  let feeds: Obj | null = null;
  if (!isObj(doc["pyth_feeds"])) issues.push(`pyth_feeds must be an object of feed name -> id, got ${show(doc["pyth_feeds"])}`);
  else {
    feeds = doc["pyth_feeds"];
    for (const [name, id] of Object.entries(feeds)) {
      if (typeof id !== "string" || !FEED_ID.test(id)) {
        issues.push(`pyth_feeds[${JSON.stringify(name)}] must be 0x followed by 64 hex digits, got ${show(id)}`);
      }
    }
  }

  const staleness = doc["pyth_staleness_secs"];
  if (!isObj(staleness)) issues.push(`pyth_staleness_secs must be an object of feed name -> seconds, got ${show(staleness)}`);
  else {
    if (!has(staleness, "default")) issues.push(`pyth_staleness_secs.default is missing`);
    for (const [name, secs] of Object.entries(staleness)) {
      if (!isPositiveInt(secs)) issues.push(`pyth_staleness_secs[${JSON.stringify(name)}] must be a positive integer, got ${show(secs)}`);
      if (name !== "default" && feeds !== null && !has(feeds, name)) {
        issues.push(`pyth_staleness_secs[${JSON.stringify(name)}] names no feed in pyth_feeds`);
      }
    }
  }

  const assets = doc["assets"];
  if (!Array.isArray(assets)) {
    issues.push(`assets must be an array, got ${show(assets)}`);
    return issues;
  }
  const symbols = new Map<string, string>();
  const mints = new Map<string, string>();
  assets.forEach((a: unknown, i) => {
    const symbol = isObj(a) && isNonEmptyString(a["symbol"]) ? a["symbol"] : null;
    const where = symbol === null ? `assets[${i}]` : `assets[${i}] (${symbol})`;
    const issue = (msg: string): void => void issues.push(`${where}: ${msg}`);
    if (!isObj(a)) {
      issue(`must be an object, got ${show(a)}`);
      return;
    }
    checkAsset(a, feeds, issue);
    if (symbol !== null) {
      const first = symbols.get(symbol);
      if (first !== undefined) issue(`symbol ${JSON.stringify(symbol)} duplicates ${first}`);
      else symbols.set(symbol, where);
    }
    const mint = a["mint"];
    if (isNonEmptyString(mint)) {
      const first = mints.get(mint);
      if (first !== undefined) issue(`mint ${JSON.stringify(mint)} duplicates ${first}`);
      else mints.set(mint, where);
    }
  });
  return issues;
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
