/**
 * The catalog document's validation (interface 2.2): every problem of `assets.json` as one message each, so a bad
 * catalog is refused at start with the whole list, not the first problem.
 */
import { ASSET_CLASSES, parseTimestamp } from "../methodology/index.ts";
import { Base58Error, base58Decode } from "./base58.ts";

export type Obj = Readonly<Record<string, unknown>>;

const FEED_ID = /^0x[0-9a-fA-F]{64}$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const SPREAD_KEYS = ["drift_bps", "depeg_bps", "critical_bps", "black_swan_bps"] as const;
const CR_KEYS = ["cr_drift", "cr_depeg", "cr_critical", "cr_black_swan"] as const;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const has = (o: Obj, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);
const show = (v: unknown): string => (v === undefined ? "missing" : JSON.stringify(v));
const isPositiveInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v > 0;
const isNonEmptyString = (v: unknown): v is string => typeof v === "string" && v !== "";

function isIsoDate(v: unknown): v is string {
  return typeof v === "string" && DATE.test(v) && parseTimestamp(`${v}T00:00:00Z`) !== null;
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
export function validate(doc: unknown): string[] {
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
