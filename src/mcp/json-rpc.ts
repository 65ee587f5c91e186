/**
 * The JSON-RPC error body `/mcp` answers with when it refuses a request before the MCP server sees it (a rate limit,
 * a Host or Origin check, a body over the limit): what MCP clients parse, so an SDK reports the reason rather than
 * "Error POSTing to endpoint". The shape is the SDK transport's own (`createJsonErrorResponse`): id null, as no
 * request was read.
 */
import type { ApiError } from "../http/errors.ts";

export interface JsonRpcErrorBody {
  readonly jsonrpc: "2.0";
  readonly error: { readonly code: number; readonly message: string; readonly data?: unknown };
  readonly id: null;
}

/** -32000: the JSON-RPC "server error" range the SDK's transport uses for its own HTTP-level refusals. */
export const TRANSPORT_REFUSED = -32000;

export function jsonRpcError(code: number, message: string, data?: unknown): JsonRpcErrorBody {
  return { jsonrpc: "2.0", error: { code, message, ...(data === undefined ? {} : { data }) }, id: null };
}

/** An HTTP-layer refusal as a JSON-RPC error; `data` keeps the REST error code (`rate_limited`, `payload_too_large`). */
export function jsonRpcFromApiError(e: ApiError): JsonRpcErrorBody {
  return jsonRpcError(TRANSPORT_REFUSED, e.message, { error: e.code });
}
