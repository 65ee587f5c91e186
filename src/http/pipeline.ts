import { randomUUID } from "node:crypto";
import type { Clock } from "../clock.ts";
import { DEFAULT_IPV6_PREFIX, rateLimitKey } from "./client-ip.ts";
import { addCorsHeaders, preflight } from "./cors.ts";
import { ApiError } from "./errors.ts";
import { addRateLimitHeaders, addRateLimitPolicy, rateLimitHeaders, SlidingWindowLimiter } from "./rate-limit.ts";
import { allowHeader, type Route, type Router } from "./router.ts";
import type { HttpRequest, HttpResult } from "./types.ts";

/**
 * A request as the adapter copied it: everything but the matched path parameters and the request id. `refused` is
 * set by a transport that refused the request before the pipeline (a body over the limit), so the answer still
 * carries the request id, CORS and the ApiError shape.
 */
export type RawRequest = Omit<HttpRequest, "params" | "requestId"> & { readonly refused?: "payload_too_large" };

export interface PipelineOptions {
  readonly router: Router;
  readonly clock: Clock;
  /** Requests per minute per client IP (RATE_LIMIT_PER_MIN). */
  readonly ratePerMinute: number;
  /** IPv6 clients share one budget per prefix of this many bits (RATE_LIMIT_IPV6_PREFIX). Default 64. */
  readonly ipv6Prefix?: number;
  /** Browser origins allowed by CORS (CORS_ORIGINS). Any at all: every answer carries `Vary: Origin`. */
  readonly corsOrigins: readonly string[];
  /** Called on unexpected errors (the client sees a 500 `internal`). */
  readonly onError?: (e: unknown, req: RawRequest) => void;
  /** Called after each request with the matched route template (or null) and the status. */
  readonly observe?: (route: string | null, method: string, status: number, ms: number) => void;
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface HandledResult extends HttpResult {
  readonly headers: Readonly<Record<string, string>>;
}

/** What the pipeline answers: synchronously when the route answered synchronously (a cached body), else later. */
export type Handled = HandledResult | Promise<HandledResult>;

const isPromise = <T>(v: T | Promise<T>): v is Promise<T> => typeof (v as { then?: unknown } | null)?.then === "function";

/**
 * The HTTP behaviour shared by every transport: request ids, CORS (preflight included), rate limiting per client IP
 * (plus per-route buckets such as the CSV export), routing, and one error shape. Pure over its inputs except the
 * limiter state, so it is tested without sockets. A route that answers synchronously (a cached body) is answered
 * synchronously: no promise is allocated on the hot path.
 */
export function createPipeline(opts: PipelineOptions): (req: RawRequest) => Handled {
  const origins = new Set(opts.corsOrigins);
  const varyOrigin = origins.size > 0;
  const limiter = new SlidingWindowLimiter(opts.ratePerMinute);
  const buckets = new Map<string, SlidingWindowLimiter>();
  const observe = opts.observe;
  const ipv6Prefix = opts.ipv6Prefix ?? DEFAULT_IPV6_PREFIX;
  let sweptAt = 0;
  /** A named budget's limiter (a route's own, or one on top of the default), made on first use. */
  const bucketOf = (spec: { readonly name: string; readonly perMinute: number }): SlidingWindowLimiter => {
    let b = buckets.get(spec.name);
    if (b === undefined) buckets.set(spec.name, (b = new SlidingWindowLimiter(spec.perMinute)));
    return b;
  };

  const failure = (e: unknown, raw: RawRequest, route: Route | null = null): HttpResult => {
    if (e instanceof ApiError) {
      const json = route?.errorBody === undefined ? e.toBody() : route.errorBody(e);
      return { status: e.status, json, ...(e.extra.headers === undefined ? {} : { headers: e.extra.headers }) };
    }
    opts.onError?.(e, raw);
    const internal = new ApiError("internal", "internal error; the request id identifies it in the logs");
    return { status: 500, json: route?.errorBody === undefined ? internal.toBody() : route.errorBody(internal) };
  };

  const finish = (raw: RawRequest, headers: Record<string, string>, result: HttpResult, route: string | null, started: number): HandledResult => {
    if (observe !== undefined) observe(route, raw.method, result.status, performance.now() - started);
    if (result.headers !== undefined) {
      const vary = headers["vary"];
      Object.assign(headers, result.headers);
      const own = result.headers["vary"];
      if (vary !== undefined && own !== undefined && own !== vary) headers["vary"] = `${vary}, ${own}`;
    }
    return {
      status: result.status,
      headers,
      ...(result.json === undefined ? {} : { json: result.json }),
      ...(result.text === undefined ? {} : { text: result.text }),
      ...(result.contentType === undefined ? {} : { contentType: result.contentType }),
    };
  };

  return (raw) => {
    const started = observe === undefined ? 0 : performance.now();
    const incoming = raw.headers["x-request-id"];
    const requestId = incoming !== undefined && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const now = opts.clock.now();
    if (now - sweptAt > 60_000) {
      sweptAt = now;
      limiter.sweep(now);
      for (const b of buckets.values()) b.sweep(now);
    }
    const headers: Record<string, string> = { "x-request-id": requestId };
    // With CORS configured, whether an answer carries the CORS headers depends on the request's Origin, so every
    // answer says so, also to a request without one: a shared cache must not serve an allowed origin the copy it
    // stored for a request without Origin (which lacks Access-Control-Allow-Origin).
    if (varyOrigin) headers["vary"] = "Origin";
    addCorsHeaders(headers, origins, raw.headers["origin"]);
    let routeTemplate: string | null = null;
    let matched: Route | null = null;
    try {
      if (raw.refused === "payload_too_large") {
        const m = opts.router.match(raw.method, raw.path); // for the route's own error shape
        matched = m !== null && "route" in m ? m.route : null;
        throw new ApiError("payload_too_large", "request bodies are limited to 16384 bytes");
      }
      if (raw.method === "OPTIONS") {
        // No route has OPTIONS, so a known path answers with the methods its routes have (what a 405 lists).
        const match = opts.router.match("OPTIONS", raw.path);
        if (match === null || !("allow" in match)) throw new ApiError("not_found", `no route for ${raw.path.slice(0, 200)}`);
        const allow = allowHeader(match.allow);
        const pf = preflight(origins, raw.headers["origin"], raw.headers["access-control-request-headers"], allow);
        return finish(raw, headers, { status: 204, headers: { ...pf, allow } }, null, started);
      }
      const match = opts.router.match(raw.method, raw.path);
      const route = match !== null && "route" in match ? match.route : null;
      matched = route;
      routeTemplate = route?.path ?? null;
      if (route !== null && route.budget !== undefined && route.unlimited !== true) {
        // A route with a budget of its own (the agents' /mcp) is counted there only, never against the default one.
        const { name } = route.budget;
        const d = bucketOf(route.budget).take(rateLimitKey(raw.ip, ipv6Prefix), now);
        addRateLimitHeaders(headers, d, name);
        if (!d.allowed) throw new ApiError("rate_limited", `more than ${d.limit} ${name} requests per minute from this address`, { headers: rateLimitHeaders(d, name) });
      } else if (route !== null && route.unlimited !== true) {
        const key = rateLimitKey(raw.ip, ipv6Prefix);
        const b = route.bucket === undefined ? undefined : bucketOf(route.bucket);
        const d = limiter.take(key, now);
        addRateLimitHeaders(headers, d);
        if (!d.allowed) {
          // Retry-After is when this request would pass: the route's own budget too, when it has one.
          const wait = b === undefined ? d : { ...d, retryAfterSecs: Math.max(d.retryAfterSecs, b.waitSecs(key, now)) };
          throw new ApiError("rate_limited", `more than ${d.limit} requests per minute from this address`, { headers: rateLimitHeaders(wait) });
        }
        if (b !== undefined && route.bucket !== undefined) {
          const bd = b.take(key, now);
          if (!bd.allowed) {
            // Refused here, so not counted against the default budget either: the default budget admitted this
            // request a moment ago and so still admits it after the route's Retry-After.
            limiter.refund(key, now);
            const h = rateLimitHeaders(bd, route.bucket.name);
            Object.assign(headers, h);
            throw new ApiError("rate_limited", `more than ${bd.limit} ${route.bucket.name} requests per minute from this address`, { headers: h });
          }
          // The headers show the route's own budget, the one its 429 enforces; the structured fields list the default budget too.
          addRateLimitHeaders(headers, bd, route.bucket.name);
          addRateLimitPolicy(headers, d);
        }
      }
      const result = opts.router.run(match, raw, requestId);
      if (!isPromise(result)) return finish(raw, headers, result, routeTemplate, started);
      const template = routeTemplate;
      return result.then(
        (r) => finish(raw, headers, r, template, started),
        (e: unknown) => finish(raw, headers, failure(e, raw, route), template, started),
      );
    } catch (e) {
      return finish(raw, headers, failure(e, raw, matched), routeTemplate, started);
    }
  };
}
