/**
 * The repository boundary: every value read from either driver passes through here, so callers see one shape on
 * PostgreSQL and PGlite alike. Timestamps become epoch-ms numbers, int8 becomes a safe integer, numerics become exact
 * wire decimal strings (never a JS number). Writes go the other way: RFC 3339 strings and wire decimals.
 */
import { decimalToWire, isDecimalText, parseDecimal, timestampToWire, type EpochMs } from "../methodology/index.ts";
import type { Executor } from "./schema.ts";

/** A value read back that does not have the expected type: a schema or driver bug, never user input. */
export class StoreDataError extends Error {
  readonly code = "store_data";
  constructor(column: string, value: unknown) {
    super(`unexpected ${typeof value} in column ${column}: ${String(value)}`);
    this.name = "StoreDataError";
  }
}

/** An epoch-ms instant as a timestamptz parameter. */
export const tsParam = (ms: EpochMs): string => timestampToWire(ms);

export const tsParamOrNull = (ms: EpochMs | null): string | null => (ms === null ? null : timestampToWire(ms));

/** A timestamptz read back (a Date from both drivers; an ISO string tolerated) as epoch ms. */
export function toMs(v: unknown, column: string): EpochMs {
  if (v instanceof Date) {
    const ms = v.getTime();
    if (Number.isSafeInteger(ms)) return ms;
  } else if (typeof v === "string") {
    const ms = Date.parse(v);
    if (Number.isSafeInteger(ms)) return ms;
  }
  throw new StoreDataError(column, v);
}

export function toMsOrNull(v: unknown, column: string): EpochMs | null {
  return v === null || v === undefined ? null : toMs(v, column);
}

/** int8 / count(*) read back: a string from node-postgres, a number (or bigint) from PGlite. */
export function toInt(v: unknown, column: string): number {
  const n = typeof v === "number" ? v : typeof v === "bigint" || typeof v === "string" ? Number(v) : NaN;
  if (!Number.isSafeInteger(n)) throw new StoreDataError(column, v);
  return n;
}

export function toIntOrNull(v: unknown, column: string): number | null {
  return v === null || v === undefined ? null : toInt(v, column);
}

/** numeric read back as exact text, in canonical wire form ("12.3400" -> "12.34"). A number is refused. */
export function toDecimal(v: unknown, column: string): string {
  const d = parseDecimal(v);
  if (d === null) throw new StoreDataError(column, v);
  return decimalToWire(d);
}

export function toDecimalOrNull(v: unknown, column: string): string | null {
  return v === null || v === undefined ? null : toDecimal(v, column);
}

/** A wire decimal parameter, validated before it reaches SQL (so "1e-5" or "NaN" never becomes a numeric). */
export function decimalParam(v: string, field: string): string {
  if (!isDecimalText(v)) throw new RangeError(`${field} must be a plain decimal string, got ${JSON.stringify(v)}`);
  return v;
}

export function decimalParamOrNull(v: string | null, field: string): string | null {
  return v === null ? null : decimalParam(v, field);
}

/**
 * Runs `fn` atomically: in a new transaction, or inside the caller's when `db` already is one (Kysely refuses nested
 * `transaction()` calls), so repositories compose under an outer transaction.
 */
export function atomically<T>(db: Executor, fn: (trx: Executor) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}

/** A text column holding one of a closed set of values (a state, a band): checked, so a bad row fails loudly. */
export function toEnum<T extends string>(v: unknown, values: readonly T[], column: string): T {
  if (typeof v === "string" && (values as readonly string[]).includes(v)) return v as T;
  throw new StoreDataError(column, v);
}

export function toEnumOrNull<T extends string>(v: unknown, values: readonly T[], column: string): T | null {
  return v === null || v === undefined ? null : toEnum(v, values, column);
}
