import { FieldError } from "./errors.ts";
import { decimalToWire, parseDecimal, type Decimal } from "./decimal.ts";
import { parseTimestamp, timestampToWire } from "./time.ts";
import type { OracleEntry, Sample } from "./types.ts";

/**
 * A sample in wire form: the scenario-file line of addendum G and the `last` sample of a persisted actor snapshot.
 * Decimals are strings (never JSON numbers: a float must never reach a price); optional legs may be omitted or null.
 */
export interface SampleWire {
  readonly ts: string;
  readonly asset: string;
  readonly intrinsic_usd: string;
  readonly market_usd: string;
  readonly intrinsic_sol?: string | null;
  readonly market_sol?: string | null;
  readonly cr?: string | null;
  readonly oracle?: Readonly<Record<string, { readonly price: string; readonly conf: string; readonly publish_time: string }>>;
  readonly intrinsic_stale?: boolean;
}

/** A sample that does not parse; `field` names the offending member. */
export class SampleFormatError extends FieldError {
  constructor(field: string, message: string) {
    super("invalid_sample", field, message);
  }
}

const KNOWN = new Set(["ts", "asset", "intrinsic_usd", "market_usd", "intrinsic_sol", "market_sol", "cr", "oracle", "intrinsic_stale"]);

function need(o: Record<string, unknown>, key: string): Decimal {
  const d = parseDecimal(o[key]);
  if (d === null) throw new SampleFormatError(key, `must be a decimal string, got ${JSON.stringify(o[key]) ?? "nothing"}`);
  return d;
}

function optional(o: Record<string, unknown>, key: string): Decimal | null {
  return o[key] === undefined || o[key] === null ? null : need(o, key);
}

/** Parses a wire sample strictly: unknown members, JSON-number prices and invalid timestamps are errors. */
export function sampleFromWire(value: unknown): Sample {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new SampleFormatError("sample", "must be a JSON object");
  }
  const o = value as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!KNOWN.has(k)) throw new SampleFormatError(k, "is not a sample field");
  const ts = parseTimestamp(o["ts"]);
  if (ts === null) throw new SampleFormatError("ts", "must be an RFC 3339 timestamp");
  if (typeof o["asset"] !== "string" || o["asset"] === "") throw new SampleFormatError("asset", "must be a symbol");
  const oracle: Record<string, OracleEntry> = {};
  if (o["oracle"] !== undefined && o["oracle"] !== null) {
    const raw = o["oracle"];
    if (typeof raw !== "object" || Array.isArray(raw)) throw new SampleFormatError("oracle", "must be an object");
    for (const [name, e] of Object.entries(raw as Record<string, unknown>)) {
      if (typeof e !== "object" || e === null) throw new SampleFormatError(`oracle.${name}`, "must be an object");
      const entry = e as Record<string, unknown>;
      const publish = parseTimestamp(entry["publish_time"]);
      if (publish === null) throw new SampleFormatError(`oracle.${name}.publish_time`, "must be an RFC 3339 timestamp");
      const price = parseDecimal(entry["price"]);
      const conf = parseDecimal(entry["conf"]);
      if (price === null) throw new SampleFormatError(`oracle.${name}.price`, "must be a decimal string");
      if (conf === null) throw new SampleFormatError(`oracle.${name}.conf`, "must be a decimal string");
      oracle[name] = { price, conf, publish_time: publish };
    }
  }
  const stale = o["intrinsic_stale"];
  if (stale !== undefined && typeof stale !== "boolean") throw new SampleFormatError("intrinsic_stale", "must be a boolean");
  return {
    asset: o["asset"],
    ts,
    intrinsic_usd: need(o, "intrinsic_usd"),
    market_usd: need(o, "market_usd"),
    intrinsic_sol: optional(o, "intrinsic_sol"),
    market_sol: optional(o, "market_sol"),
    cr: optional(o, "cr"),
    oracle,
    intrinsic_stale: stale === true,
  };
}

/** Writes a sample in wire form; absent optional legs are written as null. */
export function sampleToWire(s: Sample): SampleWire {
  const oracle: Record<string, { price: string; conf: string; publish_time: string }> = {};
  for (const name of Object.keys(s.oracle).sort()) {
    const e = s.oracle[name]!;
    oracle[name] = { price: decimalToWire(e.price), conf: decimalToWire(e.conf), publish_time: timestampToWire(e.publish_time) };
  }
  return {
    ts: timestampToWire(s.ts),
    asset: s.asset,
    intrinsic_usd: decimalToWire(s.intrinsic_usd),
    market_usd: decimalToWire(s.market_usd),
    intrinsic_sol: s.intrinsic_sol === null ? null : decimalToWire(s.intrinsic_sol),
    market_sol: s.market_sol === null ? null : decimalToWire(s.market_sol),
    cr: s.cr === null ? null : decimalToWire(s.cr),
    oracle,
    intrinsic_stale: s.intrinsic_stale,
  };
}
