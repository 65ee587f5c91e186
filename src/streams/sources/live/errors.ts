/**
 * The few named errors of the live adapters. None of them ever reaches a subscriber: adapters catch them, count them
 * in their `SourceStats` and log them; they exist so the log line and the counter name the same cause.
 */

/** Stable codes, one per cause; used in log fields. */
export const LIVE_ERROR_CODES = {
  httpStatus: "http_status",
  rpcError: "rpc_error",
  malformed: "malformed_payload",
  tooLarge: "payload_too_large",
  idle: "idle_timeout",
} as const;

export type LiveErrorCode = (typeof LIVE_ERROR_CODES)[keyof typeof LIVE_ERROR_CODES];

/** A non-2xx HTTP answer. `retryAfterMs` is the server's Retry-After, when it sent one: wait that long, then retry. */
export class HttpStatusError extends Error {
  override readonly name = "HttpStatusError";
  readonly code = LIVE_ERROR_CODES.httpStatus;
  readonly status: number;
  readonly retryAfterMs: number | null;
  constructor(status: number, retryAfterMs: number | null) {
    super(`HTTP ${status}${retryAfterMs === null ? "" : ` (retry after ${retryAfterMs} ms)`}`);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/** A JSON-RPC 2.0 `error` object. Counted as an error; the next poll asks again (never retried within a cycle). */
export class RpcError extends Error {
  override readonly name = "RpcError";
  readonly code = LIVE_ERROR_CODES.rpcError;
  readonly rpcCode: number | null;
  constructor(rpcCode: number | null, message: string) {
    super(`JSON-RPC error ${rpcCode ?? "?"}: ${message}`);
    this.rpcCode = rpcCode;
  }
}

/** A payload that does not match the documented wire format. Logged and counted in `malformed`, then dropped. */
export class MalformedPayloadError extends Error {
  override readonly name = "MalformedPayloadError";
  readonly code = LIVE_ERROR_CODES.malformed;
}

/** A body or SSE event larger than the adapter's cap: dropped (a runaway body must not exhaust memory). */
export class PayloadTooLargeError extends Error {
  override readonly name = "PayloadTooLargeError";
  readonly code = LIVE_ERROR_CODES.tooLarge;
  constructor(limitBytes: number) {
    super(`payload exceeds ${limitBytes} bytes`);
  }
}

/** A stream that delivered no event for its idle window: treated as dead and reconnected. */
export class IdleTimeoutError extends Error {
  override readonly name = "IdleTimeoutError";
  readonly code = LIVE_ERROR_CODES.idle;
  constructor(idleMs: number) {
    super(`no event for ${idleMs} ms`);
  }
}

/** A short, safe description of anything thrown (never a stack, never a request URL with its query). */
export function describeError(e: unknown): string {
  if (e instanceof Error) {
    const cause = e.cause instanceof Error ? `: ${e.cause.message}` : "";
    return `${e.name}: ${e.message}${cause}`;
  }
  return String(e);
}
