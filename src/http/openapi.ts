/**
 * The OpenAPI 3.1 description of the routes (interface 4.7a), generated from each route's `spec`: the zod schemas
 * its handler serves become `components.schemas` (referenced by `$ref`), its parameter definitions become
 * `parameters`, and every error it can answer is listed with the ApiError schema.
 */
import { z } from "zod";
import { ERROR_STATUS, type ErrorCode } from "./errors.ts";
import { responseSpec, type DocumentedRoute, type ResponseSpec } from "./routes/spec.ts";
import { ApiErrorSchema, apiSchemas, componentId, TIMESTAMP_RANGE } from "./schemas/index.ts";

/** Version of the interface description (interface part 9). */
export const API_VERSION = "1.0.0";

type Json = Record<string, unknown>;

const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });

const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No content",
  304: "Not modified",
  400: "Invalid request",
  401: "Unauthorized",
  404: "Not found",
  405: "Method not allowed",
  409: "Conflict",
  410: "Gone",
  413: "Payload too large",
  415: "Unsupported media type",
  429: "Rate limited",
  500: "Internal error",
  503: "Not ready",
};

const TAGS: readonly { readonly name: string; readonly description: string }[] = [
  { name: "health", description: "Liveness and readiness probes (not rate limited)." },
  { name: "assets", description: "Tracked assets and their peg state." },
  { name: "feeds", description: "Transitions, aggregates, the peg feed and the methodology status." },
  { name: "audit", description: "Public, cacheable transition receipts." },
  { name: "meta", description: "Deployment facts for webhook receivers." },
  { name: "docs", description: "This description and its interactive reference." },
  { name: "auth", description: "Sign-in (login widget, magic links) and sign-out; sessions are HS256 JWTs valid 7 days." },
  { name: "me", description: "The signed-in user's profile, preferences, alert subscriptions and webhooks (Bearer JWT)." },
];

/** Drops the safe-integer bounds zod puts on every integer: they say nothing a JSON number does not. */
function stripSafeBounds<T>(v: T): T {
  if (Array.isArray(v)) return v.map(stripSafeBounds) as T;
  if (typeof v !== "object" || v === null) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === "minimum" && x === Number.MIN_SAFE_INTEGER) continue;
    if (k === "maximum" && x === Number.MAX_SAFE_INTEGER) continue;
    out[k] = stripSafeBounds(x);
  }
  return out as T;
}

/** A standalone JSON Schema of a schema (inlined, no `$schema`). */
function inlineSchema(schema: z.ZodType): Json {
  const { $schema: _s, ...rest } = z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as Json;
  return stripSafeBounds(rest);
}

function schemaOrRef(schema: z.ZodType): Json {
  const id = componentId(schema);
  return id === undefined ? inlineSchema(schema) : ref(id);
}

let components: Json | undefined;

/** `components.schemas`: every registered schema, cross-referenced by `$ref`. */
export function componentSchemas(): Json {
  if (components === undefined) {
    const out = z.toJSONSchema(apiSchemas, { uri: (id) => `#/components/schemas/${id}`, unrepresentable: "any" });
    const schemas: Json = {};
    for (const id of Object.keys(out.schemas).sort()) {
      const { $schema: _s, $id: _i, ...rest } = out.schemas[id] as Json;
      schemas[id] = stripSafeBounds(rest);
    }
    components = schemas;
  }
  return components;
}

function operationId(route: DocumentedRoute): string {
  if (route.spec.operationId !== undefined) return route.spec.operationId;
  const words = route.path
    .replace(/[{}]/g, "")
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== "");
  return route.method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
}

function headersOf(r: ResponseSpec): Json | undefined {
  if (r.headers === undefined) return undefined;
  const out: Json = {};
  for (const [name, h] of Object.entries(r.headers)) out[name] = { description: h.description, schema: { type: h.type } };
  return out;
}

function contentOf(r: ResponseSpec): Json | undefined {
  const types = r.contentType === undefined ? ["application/json"] : typeof r.contentType === "string" ? [r.contentType] : [...r.contentType];
  if (r.schema === null && r.contentType === undefined) return undefined;
  const content: Json = {};
  for (const t of types) {
    content[t] = { schema: r.schema === null ? { type: "string" } : schemaOrRef(r.schema) };
  }
  return content;
}

/** The error codes a route may answer: its own plus `internal`, `rate_limited` (when limited) and path decoding. */
export function routeErrorCodes(route: DocumentedRoute): ErrorCode[] {
  const codes = new Set<ErrorCode>(route.spec.errors);
  codes.add("internal");
  if (route.unlimited !== true) codes.add("rate_limited");
  if (route.path.includes("{")) codes.add("invalid_query");
  return [...codes];
}

function operation(route: DocumentedRoute): Json {
  const { spec } = route;
  const parameters: Json[] = [];
  for (const [name, p] of Object.entries(spec.params ?? {})) {
    parameters.push({ name, in: "path", required: true, description: p.description, schema: inlineSchema(p.schema) });
  }
  for (const [name, q] of Object.entries(spec.query ?? {})) {
    const schema = inlineSchema(q.doc ?? q.schema);
    if (q.default !== undefined) schema["default"] = q.default;
    parameters.push({ name, in: "query", required: q.required === true, description: q.description, schema });
  }

  const responses: Record<string, Json> = {};
  for (const [status, entry] of Object.entries(spec.responses)) {
    const r = responseSpec(entry);
    const content = contentOf(r);
    const headers = headersOf(r);
    responses[status] = {
      description: r.description ?? STATUS_TEXT[Number(status)] ?? "Response",
      ...(headers === undefined ? {} : { headers }),
      ...(content === undefined ? {} : { content }),
    };
  }

  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of routeErrorCodes(route)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const list = `\`error\`: ${codes.map((c) => `\`${c}\``).join(", ")}.`;
    const existing = responses[String(status)];
    if (existing !== undefined) {
      // The route's own body for this status (e.g. the on-chain 404) or an ApiError.
      const json = (existing["content"] as Json | undefined)?.["application/json"] as Json | undefined;
      const own = json?.["schema"] as Json | undefined;
      responses[String(status)] = {
        ...existing,
        description: `${String(existing["description"])} Otherwise an ApiError with ${list}`,
        content: { "application/json": { schema: own === undefined ? ref("ApiError") : { anyOf: [own, ref("ApiError")] } } },
      };
      continue;
    }
    const headers: Json | undefined =
      status === 429 ? { "Retry-After": { description: "Whole seconds after which the same client's request is admitted (waiting exactly this long suffices).", schema: { type: "integer" } } } : undefined;
    responses[String(status)] = {
      description: `${STATUS_TEXT[status] ?? "Error"}: ApiError with ${list}`,
      ...(headers === undefined ? {} : { headers }),
      content: { "application/json": { schema: schemaOrRef(ApiErrorSchema) } },
    };
  }

  const ordered: Record<string, Json> = {};
  for (const k of Object.keys(responses).sort()) ordered[k] = responses[k]!;
  const body = spec.requestBody;
  return {
    operationId: operationId(route),
    summary: spec.summary,
    ...(spec.description === undefined ? {} : { description: spec.description }),
    tags: [...spec.tags],
    ...(spec.security === "bearer" ? { security: [{ [BEARER_SCHEME]: [] }] } : {}),
    ...(parameters.length === 0 ? {} : { parameters }),
    ...(body === undefined
      ? {}
      : {
          requestBody: {
            required: body.required ?? true,
            ...(body.description === undefined ? {} : { description: body.description }),
            content: { "application/json": { schema: schemaOrRef(body.schema) } },
          },
        }),
    responses: ordered,
  };
}

/** Name of the session security scheme in `components.securitySchemes`. */
export const BEARER_SCHEME = "bearerAuth";

/** The OpenAPI 3.1 document of `routes` (every path item and method the router serves). */
export function openApiDocument(routes: readonly DocumentedRoute[]): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of [...routes].sort((a, b) => a.path.localeCompare(b.path))) {
    const item = (paths[route.path] ??= {});
    item[route.method.toLowerCase()] = operation(route);
  }
  const used = new Set(routes.flatMap((r) => r.spec.tags));
  return {
    openapi: "3.1.0",
    info: {
      title: "Peg-risk oracle API",
      version: API_VERSION,
      summary: "Class-aware peg state, discounts, history, transitions and verifiable receipts for Solana stablecoins and liquid-staking tokens.",
      description:
        `Public reads need no key; the \`me\` routes need a session JWT (Bearer). Everything is rate-limited per IP, IPv6 clients per /64 network by default (RateLimit-* headers, 429 with Retry-After: the whole seconds after which the same client's request is admitted); a route with its own budget (the CSV export, 10 per minute) shows that budget in RateLimit-Limit/-Remaining/-Reset and lists both policies in RateLimit-Policy and RateLimit. Decimals are exact JSON strings, timestamps RFC 3339 UTC with milliseconds; a timestamp query parameter names an instant from ${TIMESTAMP_RANGE.text} (anything else is a 400 \`invalid_query\`). OPTIONS on a known path answers 204 with \`Allow\` listing that path's methods (plus HEAD where GET is, and OPTIONS), exactly as a 405 \`method_not_allowed\` lists them; CORS preflights answer the same methods in Access-Control-Allow-Methods. JSON request bodies are UTF-8: a Content-Type charset other than utf-8 is a 415 \`unsupported_media_type\`. Paging cursors (\`next_before\`, sent back as \`before\`) are opaque and signed: send them back as received, to the listing that issued them; anything else is a 400 \`invalid_cursor\`. With CORS configured every response carries \`Vary: Origin\`. Every error is an ApiError \`{error, message, asset?}\`: branch on \`error\`.`,
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
    },
    servers: [{ url: "/", description: "This deployment" }],
    security: [],
    tags: TAGS.filter((t) => used.has(t.name)).map((t) => ({ ...t })),
    paths,
    components: {
      schemas: componentSchemas(),
      ...(routes.some((r) => r.spec.security === "bearer")
        ? { securitySchemes: { [BEARER_SCHEME]: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "Session token from /v1/auth/messenger or /v1/auth/magic/consume (HS256, 7 days)." } } }
        : {}),
    },
  };
}
