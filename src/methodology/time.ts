/** Epoch milliseconds. Every instant inside the engine is an integer count of milliseconds since 1970 UTC. */
export type EpochMs = number;

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** RFC 3339 UTC with exactly three fractional digits and `Z`, e.g. `2026-06-12T10:00:00.000Z`. */
export function timestampToWire(ms: EpochMs): string {
  // A few instants (a tick's, the states' since-instants, the oracles' publish times) repeat across every asset's
  // sample, message, snapshot and row: the recent ones are kept.
  const known = wireOf.get(ms);
  if (known !== undefined) return known;
  if (!Number.isSafeInteger(ms)) throw new RangeError(`not an integer epoch-ms timestamp: ${String(ms)}`);
  const text = new Date(ms).toISOString();
  if (wireOf.size >= MEMO_SIZE) wireOf.clear();
  wireOf.set(ms, text);
  return text;
}
/** Entries of each memo (cleared when full): enough for the instants of a few ticks. */
const MEMO_SIZE = 256;
const wireOf = new Map<EpochMs, string>();
const parsedOf = new Map<string, EpochMs>();

/**
 * Parses an RFC 3339 timestamp (any offset, up to nanosecond digits) to epoch milliseconds. Sub-millisecond digits
 * are truncated toward the past. Returns null when the text is not a valid RFC 3339 instant (including impossible
 * calendar dates such as 2026-02-30).
 */
export function parseTimestamp(text: unknown): EpochMs | null {
  if (typeof text !== "string") return null;
  const known = parsedOf.get(text);
  if (known !== undefined) return known;
  const ms = parseRfc3339(text);
  if (ms !== null) {
    if (parsedOf.size >= MEMO_SIZE) parsedOf.clear();
    parsedOf.set(text, ms);
  }
  return ms;
}

function parseRfc3339(text: string): EpochMs | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const year = +y!, month = +mo!, day = +d!, hour = +h!, minute = +mi!, second = +s!;
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  // Date.UTC maps years 0-99 to 1900-1999; setUTCFullYear does not.
  const check = new Date(Date.UTC(2000, 0, 1, hour, minute, second));
  check.setUTCFullYear(year, month - 1, day);
  const base = check.getTime();
  if (check.getUTCDate() !== day || check.getUTCMonth() !== month - 1) return null;
  const millis = frac ? +(frac + "00").slice(0, 3) : 0;
  let offsetMin = 0;
  if (zone !== "Z") {
    const sign = zone!.startsWith("-") ? -1 : 1;
    const oh = +zone!.slice(1, 3), om = +zone!.slice(4, 6);
    if (oh > 23 || om > 59) return null;
    offsetMin = sign * (oh * 60 + om);
  }
  return base + millis - offsetMin * 60_000;
}
