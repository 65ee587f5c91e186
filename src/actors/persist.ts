import {
  FieldError,
  BANDS,
  CONFIDENCES,
  GATES,
  PEG_STATES,
  decimalToWire,
  parseDecimal,
  parseTimestamp,
  sampleFromWire,
  sampleToWire,
  timestampToWire,
  type AssetState,
  type Decimal,
  type SampleWire,
} from "../methodology/index.ts";

/** One asset's engine state in JSON (the `peg_actors` KV value and the host snapshot's per-asset entry). */
export interface AssetStateJSON {
  readonly committed: string;
  readonly candidate: string | null;
  readonly candidate_since: string | null;
  readonly ewma: string | null;
  readonly ewma_prev: string | null;
  readonly last: SampleWire | null;
  readonly published: string | null;
  readonly gate: string | null;
  readonly discount_raw: string | null;
  readonly confidence: string | null;
  readonly evaluated_at: string | null;
  /** "sample" or "dwell_timer"; absent in snapshots written before it existed (read as null). */
  readonly last_trigger?: string | null;
  readonly published_since: string | null;
  readonly committed_since: string | null;
}

/** A persisted engine state that does not parse; `field` names the member. */
export class SnapshotFormatError extends FieldError {
  constructor(field: string, message: string) {
    super("invalid_snapshot", field, message);
  }
}

const dOrNull = (d: Decimal | null) => (d === null ? null : decimalToWire(d));
const tOrNull = (t: number | null) => (t === null ? null : timestampToWire(t));

export function assetStateToJSON(s: AssetState): AssetStateJSON {
  return {
    committed: s.committed,
    candidate: s.candidate,
    candidate_since: tOrNull(s.candidateSince),
    ewma: dOrNull(s.ewma),
    ewma_prev: dOrNull(s.ewmaPrev),
    last: s.last === null ? null : sampleToWire(s.last),
    published: s.published,
    gate: s.gate,
    discount_raw: dOrNull(s.discountRaw),
    confidence: s.confidence,
    evaluated_at: tOrNull(s.evaluatedAt),
    last_trigger: s.lastTrigger,
    published_since: tOrNull(s.publishedSince),
    committed_since: tOrNull(s.committedSince),
  };
}

function pick<T extends string>(o: Record<string, unknown>, key: string, values: readonly T[], nullable: boolean): T | null {
  const v = o[key];
  if (v === null && nullable) return null;
  if (typeof v !== "string" || !(values as readonly string[]).includes(v)) {
    throw new SnapshotFormatError(key, `must be one of ${values.join(", ")}${nullable ? " or null" : ""}`);
  }
  return v as T;
}

function dec(o: Record<string, unknown>, key: string): Decimal | null {
  if (o[key] === null) return null;
  const d = parseDecimal(o[key]);
  if (d === null) throw new SnapshotFormatError(key, "must be a decimal string or null");
  return d;
}

function time(o: Record<string, unknown>, key: string): number | null {
  if (o[key] === null) return null;
  const t = parseTimestamp(o[key]);
  if (t === null) throw new SnapshotFormatError(key, "must be an RFC 3339 timestamp or null");
  return t;
}

/** Parses a persisted engine state, checking every member and the invariants the engine relies on. */
export function assetStateFromJSON(value: unknown): AssetState {
  if (typeof value !== "object" || value === null) throw new SnapshotFormatError("state", "must be an object");
  const o = value as Record<string, unknown>;
  const candidate = pick(o, "candidate", BANDS, true);
  const candidateSince = time(o, "candidate_since");
  if ((candidate === null) !== (candidateSince === null)) {
    throw new SnapshotFormatError("candidate_since", "must be set exactly when a candidate is tracked");
  }
  let last = null;
  if (o["last"] !== null) {
    try {
      last = sampleFromWire(o["last"]);
    } catch (e) {
      throw new SnapshotFormatError("last", e instanceof Error ? e.message : String(e));
    }
  }
  const ewma = dec(o, "ewma");
  if ((ewma === null) !== (last === null)) throw new SnapshotFormatError("ewma", "must be set exactly when a last sample is");
  return {
    committed: pick(o, "committed", BANDS, false)!,
    candidate,
    candidateSince,
    ewma,
    ewmaPrev: dec(o, "ewma_prev"),
    last,
    published: pick(o, "published", PEG_STATES, true),
    gate: pick(o, "gate", GATES, true),
    discountRaw: dec(o, "discount_raw"),
    confidence: pick(o, "confidence", CONFIDENCES, true),
    evaluatedAt: time(o, "evaluated_at"),
    lastTrigger: o["last_trigger"] === undefined ? null : pick(o, "last_trigger", ["sample", "dwell_timer"] as const, true),
    publishedSince: time(o, "published_since"),
    committedSince: time(o, "committed_since"),
  };
}
