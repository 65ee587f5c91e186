/** The list envelope every collection endpoint returns (interface 2.1). */
import { timestampToWire } from "./format.ts";

/**
 * `{ok, generated_at, count, data}`; the peg feed adds `methodology` (the methodology version string). Keys are built
 * in this order so responses read the same everywhere. `generated_at` is the response build time, not data freshness.
 */
export interface ListEnvelope<T> {
  readonly ok: true;
  /** RFC 3339 UTC, millisecond precision, `Z`. */
  readonly generated_at: string;
  /** Always `data.length`. */
  readonly count: number;
  /** Methodology version, only on the peg feed. */
  readonly methodology?: string;
  readonly data: readonly T[];
}

/** Optional envelope members. */
export interface ListEnvelopeExtra {
  /** Methodology version, e.g. `"1.0.0"`; omitted from the envelope when not given. */
  readonly methodology?: string;
}

/** Wraps already-serialised rows. `generatedAtMs` comes from the injected clock, never from `Date.now()` here. */
export function listEnvelope<T>(data: readonly T[], generatedAtMs: number, extra?: ListEnvelopeExtra): ListEnvelope<T> {
  const generated_at = timestampToWire(generatedAtMs);
  return extra?.methodology === undefined
    ? { ok: true, generated_at, count: data.length, data }
    : { ok: true, generated_at, count: data.length, methodology: extra.methodology, data };
}
