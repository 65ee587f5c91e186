/**
 * The one error type of the REST client. Every failed call (an error answer, a body that is not the documented
 * ApiError shape, or no answer at all) throws an `ApiError`; branch on `code`, never on `message`.
 */
import type { components } from "./generated/schema.ts";

/** The `error` codes the service answers with (the `ErrorCode` schema of its OpenAPI document). */
export type ServerErrorCode = components["schemas"]["ErrorCode"];

/**
 * Codes the client adds for failures that are not an answer of the service: `network_error` (no answer: refused,
 * reset, DNS, aborted or timed out; `cause` holds the underlying error) and `unexpected_response` (an error status
 * whose body is not an ApiError of a known code, e.g. a proxy's HTML page or a newer server's new code; `body` holds
 * what was parsed).
 */
export type ClientErrorCode = "network_error" | "unexpected_response";

export type ApiErrorCode = ServerErrorCode | ClientErrorCode;

/** Every code of `ServerErrorCode`, at run time. The type assertions below fail the typecheck if the document adds one. */
export const SERVER_ERROR_CODES = [
  "invalid_query",
  "invalid_state",
  "invalid_body",
  "invalid_cursor",
  "unauthorized",
  "invalid_token",
  "token_expired",
  "token_revoked",
  "not_found",
  "asset_not_found",
  "not_applicable",
  "not_committed_yet",
  "retry_exhausted",
  "wallet_drained",
  "persistence_failed",
  "method_not_allowed",
  "conflict",
  "gone",
  "payload_too_large",
  "upgrade_required",
  "unsupported_media_type",
  "rate_limited",
  "internal",
  "not_ready",
] as const satisfies readonly ServerErrorCode[];
type Missing = Exclude<ServerErrorCode, (typeof SERVER_ERROR_CODES)[number]>;
const _everyCodeListed: [Missing] extends [never] ? true : Missing = true;
void _everyCodeListed;

const KNOWN = new Set<string>(SERVER_ERROR_CODES);

/** Whether `code` is one the service documents (as opposed to one the client adds). */
export function isServerErrorCode(code: string): code is ServerErrorCode {
  return KNOWN.has(code);
}

export interface ApiErrorInit {
  /** HTTP status; 0 when there was no answer. */
  readonly status: number;
  /** Seconds the service asks to wait before retrying (`Retry-After`), when it sent one. */
  readonly retryAfterSecs?: number | null;
  /** The parsed error body (the ApiError shape, with any extra members such as `commit_status`). */
  readonly body?: Readonly<Record<string, unknown>> | null;
  /** `x-request-id` of the answer, to quote to the operator. */
  readonly requestId?: string | null;
  readonly cause?: unknown;
}

/**
 * A failed call. `code` is the service's `error` member (typed; see `ServerErrorCode`) or a client code. An
 * idempotent call was already retried (`PegClientOptions.retry`) before this is thrown: it is the last attempt's
 * failure, or a `Retry-After` longer than the client waits out (then `retryAfterSecs` says when to come back).
 *
 * @example
 * ```ts
 * try {
 *   await client.get("/v1/assets/{symbol}", { params: { path: { symbol: "NOPE" } } });
 * } catch (e) {
 *   if (e instanceof ApiError && e.code === "asset_not_found") console.log("no such asset:", e.asset);
 *   else if (e instanceof ApiError && e.code === "rate_limited") await sleep((e.retryAfterSecs ?? 1) * 1000);
 *   else throw e;
 * }
 * ```
 */
export class ApiError extends Error {
  readonly code: ApiErrorCode;
  /** HTTP status; 0 when there was no answer (`network_error`). */
  readonly status: number;
  /** `Retry-After` in seconds (429 `rate_limited`, 503 `not_ready`, ...); null when absent. */
  readonly retryAfterSecs: number | null;
  /** The asset of an asset-scoped error (`asset_not_found`); null otherwise. */
  readonly asset: string | null;
  /** The error body as received; null when there was none. */
  readonly body: Readonly<Record<string, unknown>> | null;
  readonly requestId: string | null;

  constructor(code: ApiErrorCode, message: string, init: ApiErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "ApiError";
    this.code = code;
    this.status = init.status;
    this.retryAfterSecs = init.retryAfterSecs ?? null;
    this.body = init.body ?? null;
    this.asset = typeof init.body?.["asset"] === "string" ? init.body["asset"] : null;
    this.requestId = init.requestId ?? null;
  }

  /** Whether retrying the same call later may succeed (rate limits, not ready, internal errors, no answer, aborted). */
  get retryable(): boolean {
    return this.code === "network_error" || this.code === "rate_limited" || this.code === "not_ready" || this.code === "internal" || this.status >= 502;
  }
}

/** `Retry-After` as seconds: the delta-seconds form the service sends, or an HTTP date relative to `now` (epoch ms). */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The ApiError of an error answer whose body (if any) was already read and parsed as `body`. */
export function apiErrorFromResponse(response: Response, body: unknown, now: number): ApiError {
  const init = {
    status: response.status,
    retryAfterSecs: parseRetryAfter(response.headers.get("retry-after"), now),
    requestId: response.headers.get("x-request-id"),
  };
  const obj = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : null;
  const code = obj?.["error"];
  const message = typeof obj?.["message"] === "string" ? obj["message"] : `HTTP ${response.status}`;
  if (typeof code === "string" && isServerErrorCode(code)) return new ApiError(code, message, { ...init, body: obj });
  const shown = typeof body === "string" ? body.slice(0, 200) : JSON.stringify(body)?.slice(0, 200);
  return new ApiError("unexpected_response", `HTTP ${response.status} without an ApiError body: ${shown ?? "(empty)"}`, {
    ...init,
    body: obj ?? (typeof body === "string" && body !== "" ? { text: body } : null),
  });
}
