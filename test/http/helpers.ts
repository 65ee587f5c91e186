/**
 * Drives the public routes through the Router in-process (no sockets) and checks every answer against the generated
 * OpenAPI document: the status must be documented for that route and method, and a JSON body must satisfy the
 * document's schema for that status (its `$ref`s resolved to the zod components the document was generated from).
 */
import { expect } from "vitest";
import { ApiError } from "../../src/http/errors.ts";
import { Router } from "../../src/http/router.ts";
import { openApiDocument, publicRoutes, type DocumentedRoute } from "../../src/http/routes/index.ts";
import { ApiErrorSchema, schemaById } from "../../src/http/schemas/index.ts";
import type { HttpResult } from "../../src/http/types.ts";
import { fakeReadModel, NOW, type FakeReadModel } from "./fixtures.ts";

export const RELEASED_AT = "2026-06-01T00:00:00.000Z";

export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Parsed JSON body (from `json`, or from `text` with a JSON content type). */
  readonly body: unknown;
  readonly text: string | undefined;
  readonly contentType: string | undefined;
  readonly result: HttpResult;
}

export interface Harness {
  readonly rm: FakeReadModel;
  readonly routes: DocumentedRoute[];
  readonly router: Router;
  readonly doc: Record<string, unknown>;
  call(path: string, init?: { method?: string; headers?: Record<string, string> }): Promise<Answer>;
  /** Calls and asserts the status. */
  get(path: string, status?: number, headers?: Record<string, string>): Promise<Answer>;
}

type Json = Record<string, unknown>;

function resolve(schema: Json, body: unknown): { ok: boolean; why: string } {
  if (typeof schema["$ref"] === "string") {
    const id = (schema["$ref"] as string).replace("#/components/schemas/", "");
    const z = schemaById(id);
    if (z === undefined) return { ok: false, why: `unresolvable $ref ${String(schema["$ref"])}` };
    const r = z.safeParse(body);
    return r.success ? { ok: true, why: "" } : { ok: false, why: `${id}: ${JSON.stringify(r.error.issues.slice(0, 5))}` };
  }
  if (Array.isArray(schema["anyOf"])) {
    const tries = (schema["anyOf"] as Json[]).map((s) => resolve(s, body));
    return tries.some((t) => t.ok) ? { ok: true, why: "" } : { ok: false, why: tries.map((t) => t.why).join(" | ") };
  }
  return { ok: false, why: `response schema is not a $ref or anyOf: ${JSON.stringify(schema).slice(0, 200)}` };
}

/** Asserts that `answer` is what the document says `route` answers with this status. */
export function expectDocumented(doc: Json, route: DocumentedRoute, a: Answer): void {
  const op = ((doc["paths"] as Json)[route.path] as Json)[route.method.toLowerCase()] as Json;
  const responses = op["responses"] as Json;
  const response = responses[String(a.status)] as Json | undefined;
  expect(response, `${route.method} ${route.path} does not document status ${a.status}`).toBeDefined();
  const content = response!["content"] as Json | undefined;
  if (content === undefined) {
    expect(a.body, `${route.path} ${a.status} documents no body`).toBeUndefined();
    expect(a.text).toBeUndefined();
    return;
  }
  const json = content["application/json"] as Json | undefined;
  if (json === undefined) {
    const base = (a.contentType ?? "").split(";")[0]!.trim();
    expect(Object.keys(content), `${route.path} ${a.status} content type`).toContain(base);
    return;
  }
  const r = resolve(json["schema"] as Json, a.body);
  expect(r.ok, `${route.method} ${route.path} ${a.status} body does not match the document: ${r.why}`).toBe(true);
}

/** The route a raw path matches (without percent-decoding, so a malformed escape still names its route). */
function routeOf(routes: readonly DocumentedRoute[], method: string, rawPath: string): DocumentedRoute | undefined {
  const parts = rawPath.split("/");
  const candidates = routes.filter((r) => {
    const segs = r.path.split("/");
    return r.method === (method === "HEAD" ? "GET" : method) && segs.length === parts.length && segs.every((s, i) => s.startsWith("{") || s === parts[i]);
  });
  // Most literal first, like the router.
  const literals = (r: DocumentedRoute) => r.path.split("/").filter((s) => !s.startsWith("{")).length;
  return candidates.sort((a, b) => literals(b) - literals(a))[0];
}

export function harness(opts: { wsClients?: () => number } = {}): Harness {
  const rm = fakeReadModel();
  const routes = publicRoutes(rm, {
    methodology: { releasedAt: RELEASED_AT },
    webhookIpsUpdatedAt: NOW - 60_000,
    ...(opts.wsClients === undefined ? {} : { wsClients: opts.wsClients }),
  });
  const router = new Router(routes);
  const doc = openApiDocument(routes) as Json;

  async function call(path: string, init: { method?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
    const method = init.method ?? "GET";
    const q = path.indexOf("?");
    const rawPath = q < 0 ? path : path.slice(0, q);
    const query = new URLSearchParams(q < 0 ? "" : path.slice(q + 1));
    let result: HttpResult;
    try {
      result = await router.handle({ method, path: rawPath, query, headers: init.headers ?? {}, ip: "127.0.0.1", requestId: "test", body: null });
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      result = { status: e.status, json: e.toBody(), ...(e.extra.headers === undefined ? {} : { headers: e.extra.headers }) };
    }
    const text = result.text === undefined ? undefined : typeof result.text === "string" ? result.text : Buffer.from(result.text).toString("utf8");
    const isJson = result.json !== undefined || (result.contentType ?? "").startsWith("application/json");
    const body = result.json !== undefined ? JSON.parse(JSON.stringify(result.json)) : isJson && text !== undefined ? JSON.parse(text) : undefined;
    const answer: Answer = { status: result.status, headers: result.headers ?? {}, body, text, contentType: result.contentType, result };

    const route = routeOf(routes, method, rawPath);
    if (route !== undefined) {
      expectDocumented(doc, route, answer);
    } else {
      // Unknown path or wrong method: still an ApiError.
      expect(ApiErrorSchema.safeParse(body).success).toBe(true);
    }
    if (result.status >= 400 && result.status !== 503) {
      expect(ApiErrorSchema.safeParse(body).success, `error body ${JSON.stringify(body)}`).toBe(true);
    }
    return answer;
  }

  return {
    rm,
    routes,
    router,
    doc,
    call,
    async get(path, status = 200, headers = {}) {
      const a = await call(path, { headers });
      expect(a.status, `${path}: ${JSON.stringify(a.body)}`).toBe(status);
      return a;
    },
  };
}
