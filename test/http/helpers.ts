/**
 * Drives the public routes through the Router in-process (no sockets) and checks every answer against the generated
 * OpenAPI document: the status must be documented for that route and method, and a JSON body must satisfy the
 * document's schema for that status (its `$ref`s resolved to the zod components the document was generated from).
 */
import { createHash, createHmac } from "node:crypto";
import { sql } from "kysely";
import { expect } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { createStoreAccountsModel } from "../../src/http/accounts-model.ts";
import { CURSOR_KEY_PURPOSE, cursorCodec } from "../../src/http/cursor.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { ApiError } from "../../src/http/errors.ts";
import { Router } from "../../src/http/router.ts";
import { openApiDocument, publicRoutes, type DocumentedRoute, type PublicRoutesOptions } from "../../src/http/routes/index.ts";
import { ApiErrorSchema, schemaById } from "../../src/http/schemas/index.ts";
import type { HttpResult } from "../../src/http/types.ts";
import { testSecretBox } from "../support/secrets.ts";
import { fakeReadModel, NOW, type FakeReadModel } from "./fixtures.ts";

/** The cursors the harness's routes issue and take: signed as the service signs them under TEST_SECRETS_KEY. */
export const TEST_CURSORS = cursorCodec(testSecretBox().derive(CURSOR_KEY_PURPOSE));

/** released_at of methodology 1.0.0 in the shipped lifecycle registry (src/methodology/registry.json). */
export const RELEASED_AT = "2026-07-24T00:00:00.000Z";

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
  call(path: string, init?: CallInit): Promise<Answer>;
  /** Calls and asserts the status. */
  get(path: string, status?: number, headers?: Record<string, string>): Promise<Answer>;
}

type Json = Record<string, unknown>;

export interface CallInit {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  /** Raw request body (a string is sent as UTF-8). */
  readonly body?: string | Uint8Array;
}

export interface HarnessOptions {
  readonly wsClients?: () => number;
  /** Extra configuration variables of the fake read model (JWT_SECRET, TELEGRAM_BOT_TOKEN). */
  readonly env?: Readonly<Record<string, string>>;
  /** Serve the account routes over this model. */
  readonly accounts?: PublicRoutesOptions["accounts"];
  /** Where the fake read model's clock starts (default NOW); see FakeReadModelOptions. */
  readonly now?: number;
}

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

export function harness(opts: HarnessOptions = {}): Harness {
  const rm = fakeReadModel(opts.env, opts.now === undefined ? {} : { now: opts.now });
  const routes = publicRoutes(rm, {
    cursors: TEST_CURSORS,
    webhookIpsUpdatedAt: NOW - 60_000,
    ...(opts.wsClients === undefined ? {} : { wsClients: opts.wsClients }),
    ...(opts.accounts === undefined ? {} : { accounts: opts.accounts }),
  });
  const router = new Router(routes);
  const doc = openApiDocument(routes) as Json;

  async function call(path: string, init: CallInit = {}): Promise<Answer> {
    const method = init.method ?? "GET";
    const q = path.indexOf("?");
    const rawPath = q < 0 ? path : path.slice(0, q);
    const query = new URLSearchParams(q < 0 ? "" : path.slice(q + 1));
    let result: HttpResult;
    try {
      const body = init.body === undefined ? null : typeof init.body === "string" ? new TextEncoder().encode(init.body) : init.body;
      result = await router.handle({ method, path: rawPath, query, headers: init.headers ?? {}, ip: "127.0.0.1", requestId: "test", body });
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

// ---------------------------------------------------------------------------------------------------------------
// Account routes: the real accounts model over an in-memory PGlite store, a fake DNS resolver, and sign-in helpers.

export const JWT_SECRET = "test-session-key-0123456789abcdef-0123456789";
export const BOT_TOKEN = "123456:TEST-bot-token";

/** Host names the fake resolver knows; anything else does not resolve. */
export const FAKE_DNS: Readonly<Record<string, readonly string[]>> = {
  "hooks.example.com": ["93.184.216.34"],
  "other.example.net": ["2606:2800:220:1:248:1893:25c8:1946"],
  "hooks.slack.com": ["54.230.10.1"],
  "rebind.example.com": ["10.0.0.7"],
  "mixed.example.com": ["93.184.216.35", "169.254.169.254"],
};

export const fakeResolve = async (host: string): Promise<readonly string[]> => {
  const a = FAKE_DNS[host];
  if (a === undefined) throw new Error(`ENOTFOUND ${host}`);
  return a;
};

/** A login-widget payload signed with BOT_TOKEN (addendum C), `auth_date` = now unless given. */
export function widgetPayload(fields: { id: number; first_name: string; username?: string; auth_date?: number }, now: number, botToken = BOT_TOKEN): Record<string, string | number> {
  const payload: Record<string, string | number> = { id: fields.id, first_name: fields.first_name, auth_date: fields.auth_date ?? Math.floor(now / 1000) };
  if (fields.username !== undefined) payload["username"] = fields.username;
  const check = Object.keys(payload)
    .sort()
    .map((k) => `${k}=${String(payload[k])}`)
    .join("\n");
  const secret = createHash("sha256").update(botToken, "utf8").digest();
  return { ...payload, hash: createHmac("sha256", secret).update(check, "utf8").digest("hex") };
}

export interface AccountsHarness {
  readonly h: Harness;
  readonly store: Store;
  /** Signs in through POST /v1/auth/messenger; returns the session token and user id. */
  login(telegramId: number, name?: string): Promise<{ token: string; userId: number }>;
  /** A JSON request with the bearer token. */
  send(method: string, path: string, token: string | null, body?: unknown): Promise<Answer>;
  /** Empties the account tables and rebuilds the harness (its clock back at its start, NOW unless told). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

export interface AccountsHarnessOptions {
  /** Where the clocks (the read model's and the store's) start, epoch ms; default NOW. */
  readonly now?: number;
  /** Webhook destination ports allowed besides 443 (WEBHOOK_ALLOWED_PORTS); default none. */
  readonly allowedPorts?: readonly number[];
}

export async function accountsHarness(
  env: Readonly<Record<string, string>> = { JWT_SECRET, TELEGRAM_BOT_TOKEN: BOT_TOKEN },
  opts: AccountsHarnessOptions = {},
): Promise<AccountsHarness> {
  const start = opts.now ?? NOW;
  const store = await openStore({ kind: "pglite-memory" }, new SimulatedClock(start));
  const ports = opts.allowedPorts === undefined ? {} : { allowedPorts: opts.allowedPorts };
  const build = () => harness({ env, now: start, accounts: { model: createStoreAccountsModel(store), resolve: fakeResolve, ...ports } });
  let h = build();
  const send = (method: string, path: string, token: string | null, body?: unknown) =>
    h.call(path, {
      method,
      headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  return {
    get h() {
      return h;
    },
    store,
    send,
    async login(telegramId, name = "Alice") {
      const a = await send("POST", "/v1/auth/messenger", null, widgetPayload({ id: telegramId, first_name: name, username: name.toLowerCase() }, h.rm.clock.now()));
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      const token = (a.body as { token: string }).token;
      const me = await send("GET", "/v1/me", token);
      return { token, userId: (me.body as { id: number }).id };
    },
    async reset() {
      h = build(); // a fresh clock at its start (a simulated clock never goes back)
      await sql`truncate deliveries, webhooks, subscriptions, magic_links, revoked_tokens, users restart identity cascade`.execute(store.db);
    },
    close: () => store.close(),
  };
}
