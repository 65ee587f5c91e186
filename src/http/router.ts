import { ApiError } from "./errors.ts";
import type { Handler, HttpRequest, HttpResult, Method } from "./types.ts";

/** One route: a method, a path template with `{param}` segments, and its handler. */
export interface Route {
  readonly method: Method;
  /** e.g. `/v1/assets/{symbol}/history`. */
  readonly path: string;
  readonly handler: Handler;
  /** Exempt from rate limiting (health probes). */
  readonly unlimited?: boolean;
  /** Extra rate-limit bucket for expensive routes (the CSV export: 10/min). */
  readonly bucket?: { readonly name: string; readonly perMinute: number };
  /**
   * A rate budget of its own instead of the default one (the agents' `/mcp`: MCP_RATE_LIMIT_PER_MIN), per client IP.
   * Its requests count against this budget only.
   */
  readonly budget?: { readonly name: string; readonly perMinute: number };
  /** The body of an error the pipeline answers on this route (429, 413, 500), for a protocol with its own error shape. */
  readonly errorBody?: (e: ApiError) => unknown;
}

interface Compiled {
  readonly route: Route;
  readonly segments: readonly ({ readonly literal: string } | { readonly param: string })[];
}

export interface Match {
  readonly route: Route;
  readonly params: Record<string, string>;
}

function compile(route: Route): Compiled {
  const segments = route.path
    .split("/")
    .slice(1)
    .map((s) => (s.startsWith("{") && s.endsWith("}") ? { param: s.slice(1, -1) } : { literal: s }));
  return { route, segments };
}

/** Percent-decodes one path segment; a malformed escape is a 400, never a crash. */
function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new ApiError("invalid_query", `malformed percent-encoding in path segment "${s.slice(0, 64)}"`);
  }
}

/**
 * The route table. Literal segments win over parameters at the same position (`/v1/assets/by-mint/{mint}` before
 * `/v1/assets/{symbol}/...`). An unknown path is 404; a known path with another method is 405 with `Allow`.
 * Routes are indexed by segment count and first segment, so a lookup compares a handful of candidates.
 */
export class Router {
  readonly #routes: Compiled[] = [];
  /** segment count -> first segment -> candidates, most literal first. */
  #index = new Map<number, Map<string, Compiled[]>>();
  /** Recent match results by "METHOD path" (cleared when full, and whenever a route is added). */
  readonly #recent = new Map<string, Match | { readonly allow: readonly string[] } | null>();

  constructor(routes: readonly Route[] = []) {
    for (const r of routes) this.add(r);
  }

  add(route: Route): void {
    if (this.#routes.some((c) => c.route.method === route.method && c.route.path === route.path)) {
      throw new Error(`duplicate route ${route.method} ${route.path}`);
    }
    this.#routes.push(compile(route));
    // Most literal first, so a literal segment beats a parameter.
    this.#routes.sort((a, b) => score(b) - score(a));
    const index = new Map<number, Map<string, Compiled[]>>();
    for (const c of this.#routes) {
      let byFirst = index.get(c.segments.length);
      if (byFirst === undefined) index.set(c.segments.length, (byFirst = new Map()));
      const first = c.segments[0];
      const key = first === undefined || !("literal" in first) ? PARAM : first.literal;
      let list = byFirst.get(key);
      if (list === undefined) byFirst.set(key, (list = []));
      list.push(c);
    }
    this.#index = index;
    this.#recent.clear();
  }

  get routes(): readonly Route[] {
    return this.#routes.map((c) => c.route);
  }

  /**
   * Matches a raw (encoded) path. Returns the route, or the allowed methods when only the method is wrong. Recent
   * answers are remembered (bounded; the table never changes after start-up), so a hot path is matched once.
   */
  match(method: string, rawPath: string): Match | { readonly allow: readonly string[] } | null {
    const key = method + " " + rawPath;
    const hit = this.#recent.get(key);
    if (hit !== undefined) return hit;
    const m = this.#match(method, rawPath);
    if (rawPath.length <= 256) {
      if (this.#recent.size >= RECENT_MATCHES) this.#recent.clear();
      this.#recent.set(key, m);
    }
    return m;
  }

  #match(method: string, rawPath: string): Match | { readonly allow: readonly string[] } | null {
    const parts = rawPath.split("/");
    parts.shift();
    const byFirst = this.#index.get(parts.length);
    if (byFirst === undefined) return null;
    const effective = method === "HEAD" ? "GET" : method;
    let allow: Set<string> | null = null;
    for (const list of [byFirst.get(parts[0] ?? ""), byFirst.get(PARAM)]) {
      if (list === undefined) continue;
      for (const c of list) {
        const params = bind(c, parts);
        if (params === null) continue;
        if (c.route.method === effective) {
          for (const k in params) params[k] = decodeSegment(params[k]!);
          return { route: c.route, params: Object.freeze(params) }; // frozen: matches are shared between requests
        }
        (allow ??= new Set()).add(c.route.method);
      }
    }
    return allow === null ? null : { allow: [...allow] };
  }

  /** Runs a request through the table (used by tests without sockets; the pipeline runs its own match). */
  async handle(req: Omit<HttpRequest, "params">): Promise<HttpResult> {
    return this.run(this.match(req.method, req.path), req, req.requestId);
  }

  /**
   * Runs a request against the result of `match`: 404 when nothing matched, 405 with `Allow` for another method.
   * Answers synchronously when the handler does.
   */
  run(m: ReturnType<Router["match"]>, req: Omit<HttpRequest, "params" | "requestId">, requestId: string): Promise<HttpResult> | HttpResult {
    if (m === null) throw new ApiError("not_found", `no route for ${req.path.slice(0, 200)}`);
    if ("allow" in m) {
      throw new ApiError("method_not_allowed", `${req.method} is not allowed here`, { headers: { allow: allowHeader(m.allow) } });
    }
    return m.route.handler({ method: req.method, path: req.path, params: m.params, query: req.query, headers: req.headers, ip: req.ip, requestId, body: req.body });
  }
}

/** The order methods are listed in `Allow`. */
const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/**
 * The `Allow` value of a path whose routes have `methods`: those methods, HEAD wherever GET is (HEAD is answered
 * as GET), and OPTIONS (answered by the pipeline for every known path). The same value for a 405 and for OPTIONS.
 */
export function allowHeader(methods: readonly string[]): string {
  const all = new Set(methods);
  if (all.has("GET")) all.add("HEAD");
  all.add("OPTIONS");
  const rank = (m: string) => (METHOD_ORDER.includes(m) ? METHOD_ORDER.indexOf(m) : METHOD_ORDER.length);
  return [...all].sort((a, b) => rank(a) - rank(b)).join(", ");
}

/** How many recent match results the router keeps. */
const RECENT_MATCHES = 4096;

/** Index key of routes whose first segment is a parameter. */
const PARAM = "\u0000{param}";

/** The raw parameters of `parts` against one compiled route, or null when a literal differs or a parameter is empty. */
function bind(c: Compiled, parts: readonly string[]): Record<string, string> | null {
  let params: Record<string, string> | null = null;
  for (let i = 0; i < parts.length; i++) {
    const seg = c.segments[i]!;
    const part = parts[i]!;
    if ("literal" in seg) {
      if (seg.literal !== part) return null;
    } else {
      if (part === "") return null;
      (params ??= {})[seg.param] = part;
    }
  }
  return params ?? {};
}

function score(c: Compiled): number {
  return c.segments.reduce((n, s, i) => n + ("literal" in s ? 2 ** (16 - i) : 0), 0);
}
