/**
 * Query and path parameters. Each query parameter is a zod schema from the raw text to the parsed value; the same
 * schema (its output side, or `doc` when the output has no JSON form) documents the parameter in the OpenAPI document,
 * so what is validated is what is documented.
 */
import { z } from "zod";
import { PEG_STATES, parseTimestamp, type EpochMs } from "../../methodology/index.ts";
import { ApiError } from "../errors.ts";

export interface QueryParam<T> {
  /** Parses the raw (percent-decoded) text. */
  readonly schema: z.ZodType<T, string>;
  /** The documented type, when `schema`'s output is not representable (a transform). */
  readonly doc?: z.ZodType;
  readonly description: string;
  /** Documented default (the handler applies it). */
  readonly default?: string | number;
  /** Documented as required (the handler refuses a request without it). Default false. */
  readonly required?: boolean;
  /** The error code of a bad value. Default `invalid_query`. */
  readonly errorCode?: "invalid_query" | "invalid_state" | "invalid_cursor";
}

export interface PathParam {
  readonly schema: z.ZodType;
  readonly description: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Parameter kinds.

const INTEGER_TEXT = /^[+-]?\d{1,15}$/;

/** An integer, optionally bounded (out of bounds is an error; unbounded ones may be clamped by the handler). */
export function intParam(bounds: { min?: number; max?: number } = {}): z.ZodType<number, string> {
  let n = z.int();
  if (bounds.min !== undefined) n = n.min(bounds.min);
  if (bounds.max !== undefined) n = n.max(bounds.max);
  return z
    .string()
    .regex(INTEGER_TEXT, "must be an integer")
    .transform((s) => Number(s))
    .pipe(n);
}

/**
 * The instants a timestamp parameter may name: 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z, after its offset
 * is applied. Both ends and every window derived from them (a default `from` is `to` minus at most 90 days) are
 * instants PostgreSQL's timestamptz and a JS Date hold, and a four-digit year in UTC; outside it is a 400.
 */
export const TIMESTAMP_RANGE = { min: 0, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999), text: "1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z" } as const;

const timestampText = z.string().meta({
  format: "date-time",
  description: `RFC 3339 timestamp (any offset) of an instant from ${TIMESTAMP_RANGE.text}; outside that range is a 400 \`invalid_query\`.`,
});

/**
 * An RFC 3339 timestamp (any offset), parsed to epoch milliseconds within TIMESTAMP_RANGE. A `+hh:mm` offset sent
 * unencoded arrives as a space (form decoding of `+`), so a space right before the offset is read as `+`.
 */
export const timestampParam: z.ZodType<EpochMs, string> = z.string().transform((s, ctx) => {
  const t = parseTimestamp(s.replace(/^(\d{4}-\d{2}-\d{2}T[\d:.]+) (\d{2}:\d{2})$/, "$1+$2"));
  if (t === null) {
    ctx.addIssue({ code: "custom", message: "must be an RFC 3339 timestamp such as 2026-06-12T10:00:00Z" });
    return z.NEVER;
  }
  if (t < TIMESTAMP_RANGE.min || t > TIMESTAMP_RANGE.max) {
    ctx.addIssue({ code: "custom", message: `must be an instant from ${TIMESTAMP_RANGE.text}` });
    return z.NEVER;
  }
  return t;
});

/**
 * A keyset cursor's position (`before` / `next_before` of the audit ledger and of a webhook's deliveries): the
 * position (instant, id) of the last row served, newest first. `detected_at` is the row's instant (a delivery's
 * `scheduled_at`). The API hands it out signed (src/http/cursor.ts), never as is.
 */
export interface AuditCursor {
  readonly detected_at: EpochMs;
  readonly id: string;
}

/** The latest instant a cursor holds, 2^47 - 1 ms (year 6429). */
export const CURSOR_MAX_MS = 2 ** 47 - 1;

/**
 * The texts a cursor can be, published as the parameter's `pattern`: 56 base64url characters (src/http/cursor.ts).
 * Matching is necessary, not sufficient: only a cursor the listing issued verifies.
 */
export const CURSOR_PATTERN = /^[A-Za-z0-9_-]{56}$/;

/** The `before` text as received; the route verifies it (`CursorCodec.verify`) for its listing. */
export const cursorParam: z.ZodType<string, string> = z.string().regex(CURSOR_PATTERN, "must be a next_before cursor returned by a previous page");

/** How a cursor is documented (parameters `before`, members `next_before`): a string of CURSOR_PATTERN. */
export const cursorText = z.string().regex(CURSOR_PATTERN);

/** The `before` parameter of a keyset-paged listing. */
export const beforeParam = {
  schema: cursorParam,
  doc: cursorText,
  description:
    "Opaque cursor: the `next_before` of the previous page of the same listing, as given. Anything else (altered, truncated, from another listing) is a 400 `invalid_cursor`.",
  errorCode: "invalid_cursor",
} as const satisfies QueryParam<string>;

// ---------------------------------------------------------------------------------------------------------------
// Bounds (interface part 8, addendum B).

export const HISTORY_LIMIT = { min: 1, max: 5000, default: 500 } as const;
export const ALERTS_LIMIT = { min: 1, max: 500, default: 50 } as const;
export const ALERTS_OFFSET = { min: 0, max: 10_000, default: 0 } as const;
export const AUDIT_LIMIT = { min: 1, max: 100, default: 50 } as const;
export const AUDIT_CSV_LIMIT = { min: 1, max: 50_000, default: 50_000 } as const;
export const AUDIT_MAX_WINDOW_MS = 90 * 86_400_000;
export const AUDIT_DEFAULT_WINDOW_MS = 7 * 86_400_000;
export const HISTORY_DEFAULT_WINDOW_MS = 86_400_000;

/** The audit `state` filter: the five graded bands (UNKNOWN is not a filter value). */
export const AUDIT_STATES = ["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN"] as const;

// ---------------------------------------------------------------------------------------------------------------
// Per-route parameter sets.

export const AssetListQuery = {
  class: {
    schema: z.string(),
    description: "Exact, case-sensitive class (lst, stable_fiat, stable_dn, stable_cdp, stable_yield, stable_fx, synth_lev). An unknown class gives an empty list.",
  },
  peg: {
    schema: z.enum(PEG_STATES),
    description: "Only assets whose published state (after the staleness collapse) is this PegState.",
  },
} satisfies Record<string, QueryParam<unknown>>;

export const HistoryQueryParams = {
  bucket: {
    schema: z.enum(["raw", "1m"]),
    description: "`raw` (every evaluated sample) or `1m` (1-minute rollups). Anything else is a 400.",
    default: "1m",
  },
  from: { schema: timestampParam, doc: timestampText, description: "Inclusive lower bound (RFC 3339). Default `to` minus 24 h." },
  to: { schema: timestampParam, doc: timestampText, description: "Inclusive upper bound (RFC 3339). Default now. Must not precede `from`." },
  limit: {
    schema: intParam(),
    description: `Maximum rows, an integer clamped to ${HISTORY_LIMIT.min}-${HISTORY_LIMIT.max}.`,
    default: HISTORY_LIMIT.default,
  },
} satisfies Record<string, QueryParam<unknown>>;

export const AlertsQueryParams = {
  since: { schema: timestampParam, doc: timestampText, description: "Inclusive lower bound on detected_at (RFC 3339)." },
  limit: { schema: intParam(ALERTS_LIMIT), description: "Page size; out of range is a 400.", default: ALERTS_LIMIT.default },
  offset: { schema: intParam(ALERTS_OFFSET), description: "Rows to skip; out of range is a 400.", default: ALERTS_OFFSET.default },
} satisfies Record<string, QueryParam<unknown>>;

const auditFilters = {
  state: {
    schema: z.enum(AUDIT_STATES),
    description: "Only transitions into this state. Any other value is a 400 `invalid_state`.",
    errorCode: "invalid_state",
  },
  asset: { schema: z.string().min(1), description: "Only this asset (exact, case-sensitive symbol). An unknown symbol is a 404 `asset_not_found`." },
  from: {
    schema: timestampParam,
    doc: timestampText,
    description: "Inclusive lower bound on detected_at. Default `to` minus 7 days; the window is at most 90 days.",
  },
  to: { schema: timestampParam, doc: timestampText, description: "Inclusive upper bound on detected_at. Default now." },
  before: beforeParam,
} satisfies Record<string, QueryParam<unknown>>;

export const AuditQueryParams = {
  ...auditFilters,
  limit: { schema: intParam(AUDIT_LIMIT), description: "Page size; out of range is a 400.", default: AUDIT_LIMIT.default },
} satisfies Record<string, QueryParam<unknown>>;

export const AuditCsvQueryParams = {
  ...auditFilters,
  limit: { schema: intParam(AUDIT_CSV_LIMIT), description: "Maximum rows; out of range is a 400.", default: AUDIT_CSV_LIMIT.default },
} satisfies Record<string, QueryParam<unknown>>;

export const PathParams = {
  symbol: { schema: z.string(), description: "Exact, case-sensitive asset symbol, percent-encoded (`USD%2A`, `hyloSOL%2B`)." },
  mint: { schema: z.string(), description: "Token mint address (base58)." },
  id: { schema: z.string().meta({ format: "uuid" }), description: "Alert id (UUID). A malformed id is a 404." },
  file: { schema: z.string(), description: "A Swagger UI asset file name." },
} satisfies Record<string, PathParam>;

// ---------------------------------------------------------------------------------------------------------------
// Parsing.

type Parsed<D extends Record<string, QueryParam<unknown>>> = {
  -readonly [K in keyof D]?: D[K] extends QueryParam<infer T> ? T : never;
};

/**
 * Parses the declared parameters of a query string (others are ignored). An absent parameter is absent from the
 * result; a repeated or invalid one is an ApiError (`invalid_query`, or the parameter's own code).
 */
export function parseQuery<D extends Record<string, QueryParam<unknown>>>(query: URLSearchParams, defs: D): Parsed<D> {
  const out: Record<string, unknown> = {};
  if (query.size === 0) return out as Parsed<D>; // the common request: nothing to parse
  for (const [name, def] of Object.entries(defs)) {
    const values = query.getAll(name);
    if (values.length === 0) continue;
    const code = def.errorCode ?? "invalid_query";
    if (values.length > 1) throw new ApiError(code, `query parameter "${name}" is given more than once`);
    const raw = values[0]!;
    const r = def.schema.safeParse(raw);
    if (!r.success) {
      const why = r.error.issues[0]?.message ?? "is invalid";
      throw new ApiError(code, `invalid query parameter ${name}=${JSON.stringify(raw.slice(0, 64))}: ${why}. ${def.description}`);
    }
    out[name] = r.data;
  }
  return out as Parsed<D>;
}
