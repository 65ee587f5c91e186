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
 */
export class Router {
  readonly #routes: Compiled[] = [];

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
  }

  get routes(): readonly Route[] {
    return this.#routes.map((c) => c.route);
  }

  /** Matches a raw (encoded) path. Returns the route, or the allowed methods when only the method is wrong. */
  match(method: string, rawPath: string): Match | { readonly allow: readonly string[] } | null {
    const parts = rawPath.split("/").slice(1);
    const allow = new Set<string>();
    for (const c of this.#routes) {
      if (c.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let hit = true;
      for (let i = 0; i < parts.length; i++) {
        const seg = c.segments[i]!;
        const part = parts[i]!;
        if ("literal" in seg) {
          if (seg.literal !== part) {
            hit = false;
            break;
          }
        } else {
          if (part === "") {
            hit = false;
            break;
          }
          params[seg.param] = part;
        }
      }
      if (!hit) continue;
      const effective = method === "HEAD" ? "GET" : method;
      if (c.route.method === effective) {
        for (const k of Object.keys(params)) params[k] = decodeSegment(params[k]!);
        return { route: c.route, params };
      }
      allow.add(c.route.method);
    }
    return allow.size > 0 ? { allow: [...allow] } : null;
  }

  /** Runs a request through the table (used by the adapter and by tests without sockets). */
  async handle(req: Omit<HttpRequest, "params">): Promise<HttpResult> {
    const m = this.match(req.method, req.path);
    if (m === null) throw new ApiError("not_found", `no route for ${req.path.slice(0, 200)}`);
    if ("allow" in m) {
      throw new ApiError("method_not_allowed", `${req.method} is not allowed here`, { headers: { allow: [...m.allow, "OPTIONS"].join(", ") } });
    }
    return m.route.handler({ ...req, params: m.params });
  }
}

function score(c: Compiled): number {
  return c.segments.reduce((n, s, i) => n + ("literal" in s ? 2 ** (16 - i) : 0), 0);
}
