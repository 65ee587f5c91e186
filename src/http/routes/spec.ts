/**
 * Routes that carry their own OpenAPI description: the document (`openApiDocument`) is generated from the same
 * schemas and parameter definitions the handlers use.
 */
import type { z } from "zod";
import type { ErrorCode } from "../errors.ts";
import type { Route } from "../router.ts";
import type { PathParam, QueryParam } from "../schemas/query.ts";
import type { HttpResult } from "../types.ts";

export interface ResponseHeaderSpec {
  readonly description: string;
  readonly type: "string" | "integer";
}

/** A response with more than a JSON schema: another content type, headers or a description. */
export interface ResponseSpec {
  readonly description?: string;
  /** Default `application/json`. */
  readonly contentType?: string | readonly string[];
  /** Null: no body (or an undocumented byte body for non-JSON content). */
  readonly schema: z.ZodType | null;
  readonly headers?: Readonly<Record<string, ResponseHeaderSpec>>;
}

/** A zod schema of a JSON body, null for no body, or a full ResponseSpec. */
export type ResponseEntry = z.ZodType | null | ResponseSpec;

export interface RouteSpec {
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly operationId?: string;
  readonly params?: Readonly<Record<string, PathParam>>;
  readonly query?: Readonly<Record<string, QueryParam<unknown>>>;
  /** The JSON request body, validated with this schema (`parseJsonBody` in routes/auth.ts). */
  readonly requestBody?: { readonly schema: z.ZodType; readonly description?: string; readonly required?: boolean };
  /** `bearer`: the route needs `Authorization: Bearer <session JWT>` (interface part 5). Default: public. */
  readonly security?: "bearer";
  /** Non-error responses by status. */
  readonly responses: Readonly<Record<number, ResponseEntry>>;
  /** Error codes this route answers besides `internal` and `rate_limited` (added for every route as they apply). */
  readonly errors: readonly ErrorCode[];
}

export type DocumentedRoute = Route & { readonly spec: RouteSpec };

export function isZodSchema(v: unknown): v is z.ZodType {
  return typeof v === "object" && v !== null && "_zod" in v;
}

/** The ResponseSpec form of an entry. */
export function responseSpec(entry: ResponseEntry): ResponseSpec {
  if (entry === null) return { schema: null };
  if (isZodSchema(entry)) return { schema: entry };
  return entry;
}

export const JSON_TYPE = "application/json; charset=utf-8";

/** A JSON response with optional headers. */
export function jsonResult(status: number, json: unknown, headers?: Readonly<Record<string, string>>): HttpResult {
  return headers === undefined ? { status, json } : { status, json, headers };
}
