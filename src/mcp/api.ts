/**
 * The public REST routes, called in-process. The agent tools answer with exactly what the REST API answers (the same
 * card builder, feed memo, audit lookup and error codes, over the same read model and its caches): they run the
 * route handlers of the process that serves the API, without a socket, the rate limiter or a second copy of anything.
 */
import { randomUUID } from "node:crypto";
import { ApiError } from "../http/errors.ts";
import { Router, type Route } from "../http/router.ts";
import { TOOL_ERROR_CODES, ToolError, type ToolErrorCode } from "./errors.ts";

/** One answer of a route: its status, headers and parsed JSON body (null for no body). */
export interface ApiAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
}

/** GET requests against the public routes. */
export interface ApiCaller {
  get(path: string, query?: Readonly<Record<string, string | undefined>>): Promise<ApiAnswer>;
}

const decoder = new TextDecoder();

function parseBody(text: string | Uint8Array | undefined, json: unknown): unknown {
  if (json !== undefined) return json;
  if (text === undefined) return null;
  const s = typeof text === "string" ? text : decoder.decode(text);
  return s === "" ? null : (JSON.parse(s) as unknown);
}

/** Calls `routes` in-process. An ApiError a handler throws becomes the answer it would have been on the wire. */
export function routeCaller(routes: readonly Route[]): ApiCaller {
  const router = new Router(routes);
  return {
    async get(path, query = {}) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, v);
      try {
        const r = await router.handle({ method: "GET", path, query: q, headers: { accept: "application/json" }, ip: "127.0.0.1", requestId: randomUUID(), body: null });
        return { status: r.status, headers: r.headers ?? {}, body: parseBody(r.text, r.json) };
      } catch (e) {
        if (e instanceof ApiError) return { status: e.status, headers: e.extra.headers ?? {}, body: e.toBody() };
        throw e;
      }
    },
  };
}

/** REST error codes and the tool error each becomes. */
const FROM_API: Readonly<Record<string, ToolErrorCode>> = {
  invalid_query: "invalid_input",
  invalid_state: "invalid_input",
  asset_not_found: "asset_not_found",
  not_found: "not_found",
  gone: "receipt_gone",
  not_ready: "not_ready",
};

/**
 * The body of a 200 answer, or the ToolError of any other: the REST error code mapped to the tool's (a 202 is a
 * receipt not persisted yet: `receipt_pending` with the answer's Retry-After).
 */
export function okBody(a: ApiAnswer): unknown {
  if (a.status === 200) return a.body;
  const body = (a.body ?? {}) as Record<string, unknown>;
  if (a.status === 202) {
    const retry = Number(a.headers["retry-after"] ?? "2");
    throw new ToolError("receipt_pending", "the alert is known but its receipt is not persisted yet; call again shortly", { retry_after_secs: retry });
  }
  const code = typeof body["error"] === "string" ? FROM_API[body["error"]] : undefined;
  const message = typeof body["message"] === "string" ? body["message"] : `the service answered ${a.status}`;
  const extra = typeof body["asset"] === "string" ? { asset: body["asset"] } : {};
  throw new ToolError(code ?? TOOL_ERROR_CODES.internal, message, extra);
}
