/**
 * Fuzzing of the public HTTP surface (issue: "never a 500, always an ApiError with the documented code").
 *
 * In-process (no sockets), the real pipeline (request ids, CORS, rate limits, routing, error rendering) over the real
 * public routes and the fake read model is driven with every route template whose path parameters are arbitrary
 * strings (unicode, valid and malformed percent-escapes, dot segments, empty, very long), every documented query
 * parameter of the route (read from `spec.query`) with hostile values, arbitrary methods and arbitrary headers. Every
 * answer must satisfy `expectSound`: never 500; an error is an ApiError whose code maps (ERROR_STATUS) to the status
 * and is one the route documents; a success status is one the route documents; `x-request-id` is always present and
 * sane; CORS headers only for the allowed origin; no header value can split a response.
 *
 * Over a real uWS server on port 0 (the same pipeline) a smaller property sends raw paths, queries, methods, headers
 * and bodies through `fetch`, and the server must still answer GET /healthz 200 afterwards.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { DOCS_ASSETS, DOCS_INIT_FILE } from "../../src/http/docs-page.ts";
import { ERROR_STATUS, type ErrorCode } from "../../src/http/errors.ts";
import { routeErrorCodes } from "../../src/http/openapi.ts";
import { createPipeline, type HandledResult, type RawRequest } from "../../src/http/pipeline.ts";
import { Router } from "../../src/http/router.ts";
import { publicRoutes, type DocumentedRoute } from "../../src/http/routes/index.ts";
import { responseSpec } from "../../src/http/routes/spec.ts";
import { ApiErrorSchema, AUDIT_STATES } from "../../src/http/schemas/index.ts";
import { MAX_BODY_BYTES, serveUws, uwsIsNative, type UwsServer } from "../../src/http/uws-adapter.ts";
import { PEG_STATES } from "../../src/methodology/index.ts";
import { catalog, DEAD_ID, fakeReadModel, NOW, PENDING_ID, UNKNOWN_ID } from "./fixtures.ts";
import { TEST_CURSORS } from "./helpers.ts";

// A fixed seed keeps CI reproducible (the coverage check below depends on what was generated); set FUZZ_SEED to
// explore other inputs locally.
fc.configureGlobal({ seed: Number(process.env["FUZZ_SEED"] ?? 20261121) });

const ORIGIN = "https://app.example.com";
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const RUNS = 300;
const SOCKET_RUNS = 150;

// ---------------------------------------------------------------------------------------------------------------
// The system under test.

const rm = fakeReadModel();
// A positions book with no leverage tracked, so the advisory routes reach their handlers (without one they are 503).
const routes: DocumentedRoute[] = publicRoutes(rm, { cursors: TEST_CURSORS, advisory: { snapshot: () => ({ updatedAt: NOW, byMint: new Map() }) } });
const router = new Router(routes);
const clock = new SimulatedClock(NOW);
/** Unexpected errors the pipeline rendered as 500 (with the request), to explain a failing run. */
const unexpected: { error: unknown; req: RawRequest }[] = [];
const pipeline = createPipeline({
  router,
  clock,
  ratePerMinute: 1_000_000,
  corsOrigins: [ORIGIN],
  onError: (error, req) => unexpected.push({ error, req }),
});

/** Routes in the router's own order (most literal first), so the first raw match is the route the router picks. */
const ordered = router.routes as readonly DocumentedRoute[];

/** Segment-wise match of a raw (still encoded) path against a template, like the router but without decoding. */
function shapeMatches(template: string, rawPath: string): boolean {
  const segs = template.split("/").slice(1);
  const parts = rawPath.split("/").slice(1);
  if (segs.length !== parts.length) return false;
  return segs.every((s, i) => (s.startsWith("{") && s.endsWith("}") ? parts[i] !== "" : s === parts[i]));
}

/** The route the router dispatches `method rawPath` to, or undefined (404 or 405). */
function routeFor(method: string, rawPath: string): DocumentedRoute | undefined {
  const effective = method === "HEAD" ? "GET" : method;
  return ordered.find((r) => r.method === effective && shapeMatches(r.path, rawPath));
}

/** Per route template: the statuses seen, to check the fuzzing reaches the handlers (not only the router). */
const seen = new Map<string, Set<number>>();

/** Every header value must be a legal field value: no CR, LF or NUL (no response splitting). */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

function describeRequest(req: RawRequest): string {
  const q = req.query.toString();
  return `${JSON.stringify(req.method)} ${JSON.stringify(req.path.length > 300 ? `${req.path.slice(0, 300)}…(${req.path.length})` : req.path)}${q === "" ? "" : ` ?${q.slice(0, 300)}`} headers=${JSON.stringify(req.headers).slice(0, 400)}`;
}

/** The invariants every answer of the pipeline keeps. */
function expectSound(req: RawRequest, res: HandledResult): void {
  const what = describeRequest(req);
  const cause = unexpected.at(-1);
  expect(res.status, `500 for ${what}: ${cause === undefined ? "" : String((cause.error as Error)?.stack ?? cause.error)}`).not.toBe(500);
  expect(Number.isInteger(res.status) && res.status >= 200 && res.status <= 599, `status ${res.status} for ${what}`).toBe(true);

  // x-request-id: always, sane, and the caller's own when that was sane.
  const rid = res.headers["x-request-id"];
  expect(rid ?? "<missing>", `x-request-id for ${what}`).toMatch(SANE_REQUEST_ID);
  const incoming = req.headers["x-request-id"];
  if (incoming !== undefined && SANE_REQUEST_ID.test(incoming)) expect(rid).toBe(incoming);
  for (const [k, v] of Object.entries(res.headers)) {
    expect(typeof v, `header ${k} for ${what}`).toBe("string");
    expect(FIELD_VALUE.test(v), `header ${k}=${JSON.stringify(v)} for ${what}`).toBe(true);
  }

  // CORS: only the configured origin is ever echoed.
  if (req.headers["origin"] === ORIGIN) expect(res.headers["access-control-allow-origin"]).toBe(ORIGIN);
  else expect(res.headers["access-control-allow-origin"], `CORS for ${what}`).toBeUndefined();

  // The body must be serialisable by the adapter.
  if (res.json !== undefined) expect(() => JSON.stringify(res.json), `unserialisable body for ${what}`).not.toThrow();

  const route = req.method === "OPTIONS" ? undefined : routeFor(req.method, req.path);
  if (route !== undefined) {
    let s = seen.get(route.path);
    if (s === undefined) seen.set(route.path, (s = new Set()));
    s.add(res.status);
  }

  if (res.status < 400) {
    if (req.method === "OPTIONS") {
      expect(res.status, what).toBe(204);
      return;
    }
    expect(route, `success ${res.status} without a route for ${what}`).toBeDefined();
    expect(Object.keys(route!.spec.responses), `${route!.path} does not document ${res.status} (${what})`).toContain(String(res.status));
    return;
  }

  if (res.status === 503) {
    // Readiness has its own body; nothing else answers 503.
    expect(route?.path, what).toBe("/readyz");
    return;
  }
  expect(res.json, `error ${res.status} without a JSON body for ${what}`).toBeDefined();
  const body: unknown = JSON.parse(JSON.stringify(res.json));
  const parsed = ApiErrorSchema.safeParse(body);
  expect(parsed.success, `not an ApiError: ${JSON.stringify(body).slice(0, 300)} for ${what}`).toBe(true);
  const code = (body as { error: ErrorCode }).error;
  expect(ERROR_STATUS[code], `code ${code} with status ${res.status} for ${what}`).toBe(res.status);

  if (req.method === "OPTIONS") {
    // A preflight of an unknown path, or of a templated path whose parameter is malformed percent-encoding.
    expect(["not_found", "invalid_query"], what).toContain(code);
    if (code === "invalid_query") expect(ordered.some((r) => r.path.includes("{") && shapeMatches(r.path, req.path)), what).toBe(true);
  } else if (route !== undefined) {
    // A documented ApiError code of the route, or the route's own documented body for this status (the on-chain 404).
    const own = route.spec.responses[res.status];
    const ownSchema = own === undefined ? null : responseSpec(own).schema;
    if (ownSchema === null || !ownSchema.safeParse(body).success) {
      expect(routeErrorCodes(route), `${route.method} ${route.path} does not document ${code} (${what})`).toContain(code);
    }
  } else if (ordered.some((r) => shapeMatches(r.path, req.path))) {
    expect(code, what).toBe("method_not_allowed");
    expect(res.headers["allow"], what).toMatch(/GET/);
  } else {
    expect(code, what).toBe("not_found");
  }
}

/** One request through the pipeline; the clock moves two minutes first so the per-route buckets (CSV) refill. */
async function send(req: RawRequest): Promise<HandledResult> {
  clock.increment(120_000);
  const res = await pipeline(req);
  expectSound(req, res);
  return res;
}

// ---------------------------------------------------------------------------------------------------------------
// Text arbitraries.

const HEX = "0123456789ABCDEF";
const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** Percent-encodes the UTF-8 bytes of `s` (lone surrogates become U+FFFD); `all` encodes unreserved bytes too. */
function pctEncode(s: string, all = false): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(b);
    out += !all && b < 0x80 && UNRESERVED.test(c) ? c : `%${HEX[b >> 4]}${HEX[b & 15]}`;
  }
  return out;
}

const MALFORMED_ESCAPES = ["%", "%%", "%E0%A4%A", "%E0%A4", "%00", "%ff", "%FF%FE", "%C0%AF", "%C0%80", "%ED%A0%80", "%F4%90%80%80", "%u0041", "%G1", "%1", "%2", "%%30"];

const SPECIAL_TEXT = [
  "",
  ".",
  "..",
  "...",
  "%2e%2e",
  "%2E",
  "../../etc/passwd",
  "..%2F..%2Fetc%2Fpasswd",
  "%2F",
  "/",
  "//",
  "?",
  "#",
  "&",
  "=",
  "+",
  " ",
  "\t",
  "\r\n",
  "\u0000",
  "\uD800",
  "\uDFFF",
  "\uFEFF",
  "\u202E",
  "e\u0301",
  "💥",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "null",
  "undefined",
  "NaN",
  "true",
  "[]",
  "{}",
  "<script>",
  "' OR 1=1 --",
  "${7*7}",
  ...MALFORMED_ESCAPES,
];

/** Arbitrary text: any UTF-16 (lone surrogates included), graphemes, ASCII controls, specials, very long runs. */
const anyText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  { weight: 3, arbitrary: fc.string({ unit: "binary-ascii", maxLength: 40 }) },
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_TEXT) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom("A", "%", "é", "%41", "/"), fc.integer({ min: 200, max: 70_000 })).map(([c, n]) => c.repeat(n)) },
);

/** Text with a malformed escape spliced in. */
const withMalformedEscape = fc.tuple(anyText, fc.constantFrom(...MALFORMED_ESCAPES), anyText).map(([a, e, b]) => `${a.slice(0, 20)}${e}${b.slice(0, 20)}`);

/** How a value is put on the wire: percent-encoded, fully encoded, raw, or raw with a malformed escape. */
function onTheWire(value: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 5, arbitrary: value.map((s) => pctEncode(s)) },
    { weight: 1, arbitrary: value.map((s) => pctEncode(s, true)) },
    { weight: 2, arbitrary: value },
    { weight: 2, arbitrary: fc.tuple(value, fc.constantFrom(...MALFORMED_ESCAPES), fc.nat({ max: 40 })).map(([s, e, at]) => pctEncode(s).slice(0, at) + e + pctEncode(s).slice(at)) },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Path segments: known-good values (so handlers run), and hostile ones.

const symbols = [...new Set(catalog.all.map((a) => a.symbol))];
const mints = catalog.all.map((a) => a.mint);
const alertIds = rm.alertList.map((a) => a.id);
const uuidsKnown = [...alertIds, PENDING_ID, DEAD_ID, UNKNOWN_ID];
const docsFiles = [...Object.keys(DOCS_ASSETS), DOCS_INIT_FILE];

const KNOWN_PARAM: Readonly<Record<string, readonly string[]>> = {
  symbol: symbols,
  mint: mints,
  id: uuidsKnown,
  file: docsFiles,
};

/** A path parameter value, as a raw (encoded or not) segment. */
function segmentArb(param: string): fc.Arbitrary<string> {
  const known = KNOWN_PARAM[param] ?? symbols;
  const near = fc.oneof(
    fc.constantFrom(...known).map((s) => s.toUpperCase()),
    fc.constantFrom(...known).map((s) => s.toLowerCase()),
    fc.tuple(fc.constantFrom(...known), anyText).map(([s, t]) => s + t.slice(0, 8)),
    fc.constantFrom(...known).map((s) => s.slice(0, -1)),
    fc.uuid().map(String),
  );
  return fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...known).map((s) => pctEncode(s)) },
    { weight: 1, arbitrary: fc.constantFrom(...known).map((s) => pctEncode(s, true)) },
    { weight: 2, arbitrary: onTheWire(near) },
    { weight: 6, arbitrary: onTheWire(anyText) },
    { weight: 1, arbitrary: withMalformedEscape },
  );
}

/** A path for `route` with every `{param}` replaced by a generated segment. */
function filledPath(route: DocumentedRoute, segment: (param: string) => fc.Arbitrary<string> = segmentArb): fc.Arbitrary<string> {
  const parts = route.path.split("/").slice(1);
  return fc.tuple(...parts.map((p) => (p.startsWith("{") ? segment(p.slice(1, -1)) : fc.constant(p)))).map((xs) => `/${xs.join("/")}`);
}

/** Only known-good path parameters (the query then decides the answer). */
const knownSegment = (param: string): fc.Arbitrary<string> => {
  const known = KNOWN_PARAM[param] ?? symbols;
  const good = param === "symbol" ? known.filter((s) => catalog.bySymbol(s)?.active === true) : param === "id" ? alertIds : known;
  return fc.constantFrom(...good).map((s) => pctEncode(s));
};

const anyRoute = fc.constantFrom(...routes);

/** A path: mostly a filled template, sometimes mangled or entirely arbitrary. */
const anyPath: fc.Arbitrary<string> = fc.oneof(
  { weight: 10, arbitrary: anyRoute.chain((r) => filledPath(r)) },
  { weight: 1, arbitrary: anyRoute.chain((r) => filledPath(r)).map((p) => `${p}/`) },
  { weight: 1, arbitrary: anyRoute.chain((r) => filledPath(r)).map((p) => p.replace("/", "//")) },
  { weight: 1, arbitrary: anyRoute.map((r) => r.path) },
  { weight: 1, arbitrary: anyRoute.map((r) => r.path.toUpperCase()) },
  { weight: 1, arbitrary: fc.webPath() },
  { weight: 1, arbitrary: anyText.map((t) => `/${t}`) },
  { weight: 1, arbitrary: anyText },
);

// ---------------------------------------------------------------------------------------------------------------
// Query values by parameter kind.

const FIXED_QUERY_KEYS = ["class", "peg", "bucket", "from", "to", "limit", "offset", "since", "state", "asset", "before", "shock_bps"];

const integerText: fc.Arbitrary<string> = fc.oneof(
  fc.integer().map(String),
  fc.integer({ min: -3, max: 60_000 }).map(String),
  fc.constantFrom(
    ...["0", "1", "-1", "-0", "+0", "+1", "49", "50", "51", "99", "100", "101", "499", "500", "501", "4999", "5000", "5001"],
    ...["9999", "10000", "10001", "49999", "50000", "50001", "999999999999999", "-999999999999999", "1000000000000000"],
    ...["9007199254740993", "1e3", "1E2", "1e400", "1.0", "1.5", ".5", "5.", "0x10", "0b1", "0o7", "1_000", "1,000"],
    ...[" 5", "5 ", "", "NaN", "Infinity", "-Infinity", "\u0663", "\uFF11\uFF12", "00000000000000000001", "+-1", "--1", "١"],
  ),
  fc.double().map(String),
  fc.bigInt().map(String),
  fc.tuple(fc.integer(), fc.integer({ min: -400, max: 400 })).map(([m, e]) => `${m}e${e}`),
);

const pad = (n: number, w: number): string => String(n).padStart(w, "0");

/** RFC 3339 timestamps, valid and not: composed field by field over and past every bound, plus edge cases. */
const timestampText: fc.Arbitrary<string> = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ min: new Date("0000-01-01T00:00:00.000Z"), max: new Date("9999-12-31T23:59:59.999Z"), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ min: new Date(NOW - 200 * 86_400_000), max: new Date(NOW + 86_400_000), noInvalidDate: true }).map((d) => d.toISOString()),
  fc
    .record({
      y: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(2026, 1970, 0, 9999)),
      mo: fc.integer({ min: 0, max: 13 }),
      d: fc.integer({ min: 0, max: 32 }),
      h: fc.integer({ min: 0, max: 25 }),
      mi: fc.integer({ min: 0, max: 60 }),
      s: fc.integer({ min: 0, max: 61 }),
      frac: fc.option(fc.stringMatching(/^\d{1,12}$/), { nil: undefined }),
      t: fc.constantFrom("T", "T", "T", "t", " "),
      zone: fc.oneof(
        fc.constantFrom("Z", "Z", "z", "", "+00:00", "-00:00", "+23:59", "-23:59", "+24:00", "+00:60", "+0000", "+00", "UTC"),
        fc.tuple(fc.constantFrom("+", "-", " "), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 })).map(([sg, h, m]) => `${sg}${pad(h, 2)}:${pad(m, 2)}`),
      ),
    })
    .map((f) => `${pad(f.y, 4)}-${pad(f.mo, 2)}-${pad(f.d, 2)}${f.t}${pad(f.h, 2)}:${pad(f.mi, 2)}:${pad(f.s, 2)}${f.frac === undefined ? "" : `.${f.frac}`}${f.zone}`),
  fc.constantFrom(
    "2026-02-29T00:00:00Z",
    "2024-02-29T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-06-12T23:59:60Z",
    "2026-06-12T10:00:00.123456789Z",
    "2026-06-12T10:00:00.1234567890Z",
    "2026-06-12T10:00:00.Z",
    "0000-01-01T00:00:00Z",
    "0000-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59.999Z",
    "9999-12-31T23:59:59.999-23:59",
    "+275760-09-13T00:00:00.000Z",
    "-271821-04-20T00:00:00.000Z",
    "2026-06-12",
    "2026-06-12T10:00Z",
    "2026-06-12T10:00:00",
    "2026-06-12T10:00:00 02:00",
    "2026-06-12T10:00:00+02:00",
    "2026-06-12T10:00:00%2B02:00",
    "1781258400000",
    "now",
    "",
  ),
);

const validCursors = rm.alertList.map((a) => TEST_CURSORS.encode("audit", { detected_at: a.detected_at, id: a.id }));

const cursorText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...validCursors),
  fc
    .record({
      t: fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 8.64e15, 1e300), fc.double(), fc.string()),
      id: fc.oneof(fc.uuid().map(String), fc.constantFrom(...uuidsKnown), fc.string()),
    })
    .map((c) => Buffer.from(JSON.stringify(c), "utf8").toString("base64url")),
  fc.json().map((j) => Buffer.from(j, "utf8").toString("base64url")),
  fc.stringMatching(/^[A-Za-z0-9_-]{0,600}$/),
  fc.base64String({ maxLength: 80 }),
  anyText,
);

const classes = [...new Set(catalog.all.map((a) => a.class as string))];

/** A value for query parameter `key`: mostly of its kind (valid and hostile), sometimes anything. */
function queryValueArb(key: string): fc.Arbitrary<string> {
  const kinds: Readonly<Record<string, fc.Arbitrary<string>>> = {
      limit: integerText,
      offset: integerText,
      // The preset shocks (so simulate-depeg answers 200 too) and any integer text (mostly a 400).
      shock_bps: fc.oneof(fc.constantFrom("100", "250", "500", "1000", "2000"), integerText),
      from: timestampText,
      to: timestampText,
      since: timestampText,
      before: cursorText,
      bucket: fc.constantFrom("raw", "1m", "1M", "RAW", "5m", "1h", "raw ", "1m\u0000"),
      peg: fc.constantFrom(...PEG_STATES, ...PEG_STATES.map((s) => s.toLowerCase()), "BOGUS"),
      state: fc.constantFrom(...AUDIT_STATES, "UNKNOWN", ...AUDIT_STATES.map((s) => s.toLowerCase()), "BOGUS"),
      asset: fc.constantFrom(...symbols, ...symbols.map((s) => s.toLowerCase())),
      class: fc.constantFrom(...classes, "LST", "stable"),
  };
  // Own keys only: an arbitrary key may well be "constructor".
  const kind = Object.hasOwn(kinds, key) ? kinds[key] : undefined;
  return kind === undefined ? anyText : fc.oneof({ weight: 4, arbitrary: kind }, { weight: 1, arbitrary: anyText });
}

/** A query string for `route`: its documented keys (from `spec.query`), the fixed list, and arbitrary keys. */
function queryArb(route: DocumentedRoute | undefined): fc.Arbitrary<string> {
  const documented = Object.keys(route?.spec.query ?? {});
  const key = fc.oneof(
    ...(documented.length > 0 ? [{ weight: 8, arbitrary: fc.constantFrom(...documented) }] : []),
    { weight: 2, arbitrary: fc.constantFrom(...FIXED_QUERY_KEYS) },
    { weight: 1, arbitrary: fc.constantFrom(...FIXED_QUERY_KEYS).map((k) => k.toUpperCase()) },
    { weight: 1, arbitrary: anyText },
  );
  const pair = key.chain((k) =>
    fc.tuple(
      fc.oneof({ weight: 6, arbitrary: fc.constant(pctEncode(k)) }, { weight: 1, arbitrary: onTheWire(fc.constant(k)) }),
      onTheWire(queryValueArb(k)),
      fc.constantFrom("=", "=", "=", "", "==", "=&"),
    ),
  );
  const structured = fc
    .tuple(fc.array(pair, { maxLength: 5 }), fc.constantFrom("&", "&", "&", "&&", ";"), fc.boolean())
    .map(([pairs, sep, lead]) => (lead ? sep : "") + pairs.map(([k, v, eq]) => (eq === "" ? k : `${k}${eq}${v}`)).join(sep));
  // A documented key given twice (always an error).
  const repeated =
    documented.length === 0
      ? structured
      : fc
          .tuple(fc.constantFrom(...documented), fc.boolean())
          .chain(([k, same]) => fc.tuple(fc.constant(k), queryValueArb(k), same ? fc.constant(null) : queryValueArb(k)))
          .map(([k, a, b]) => `${k}=${pctEncode(a)}&${k}=${pctEncode(b ?? a)}`);
  return fc.oneof({ weight: 8, arbitrary: structured }, { weight: 1, arbitrary: repeated }, { weight: 1, arbitrary: anyText });
}

// ---------------------------------------------------------------------------------------------------------------
// Methods, headers, client addresses.

const methodArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 10, arbitrary: fc.constant("GET") },
  { weight: 3, arbitrary: fc.constant("HEAD") },
  { weight: 5, arbitrary: fc.constantFrom("POST", "PUT", "PATCH", "DELETE", "OPTIONS") },
  { weight: 2, arbitrary: fc.constantFrom("get", "Get", "head", "options", "CONNECT", "TRACE", "PROPFIND", "M-SEARCH", "", " GET", "GET ", "__proto__", "constructor") },
  { weight: 2, arbitrary: fc.string({ unit: "binary-ascii", maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
);

let feedEtag = '"none"';

const headerJunk: fc.Arbitrary<string> = fc.oneof(anyText, fc.string({ unit: "binary-ascii", maxLength: 200 }));

const requestIdArb: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/),
  fc.constantFrom("a".repeat(128), "a".repeat(129), "", " ", "abc def", "abc\r\nx-evil: 1", "ü", "a/b", "../x", "*"),
  headerJunk,
);

const headersArb: fc.Arbitrary<Record<string, string>> = fc
  .record(
    {
      "if-none-match": fc.oneof(
        fc.constant(null).map(() => feedEtag),
        fc.constant(null).map(() => `W/${feedEtag}`),
        fc.constant(null).map(() => `"x", ${feedEtag}`),
        fc.constantFrom("*", "", ",", '"', '""', "W/", ",,,*"),
        headerJunk,
      ),
      "x-request-id": requestIdArb,
      origin: fc.oneof(fc.constantFrom(ORIGIN, ORIGIN, "https://evil.example", "null", `${ORIGIN}/`, ORIGIN.toUpperCase(), `${ORIGIN}:443`, ""), headerJunk),
      "access-control-request-headers": fc.oneof(
        fc
          .array(fc.constantFrom("authorization", "Content-Type", "IF-NONE-MATCH", "x-request-id", "x-evil", "", " ", "cookie"), { maxLength: 6 })
          .map((xs) => xs.join(",")),
        headerJunk,
      ),
      "access-control-request-method": fc.oneof(methodArb, headerJunk),
      "x-forwarded-for": fc.oneof(
        fc.array(fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom("unknown", "", " ", "999.999.999.999"), headerJunk), { maxLength: 5 }).map((xs) => xs.join(", ")),
        headerJunk,
      ),
      authorization: fc.oneof(fc.constantFrom("Bearer", "Bearer ", "Basic Zm9vOmJhcg=="), headerJunk.map((t) => `Bearer ${t}`)),
      "content-type": fc.oneof(fc.constantFrom("application/json", "text/plain", "multipart/form-data; boundary=x"), headerJunk),
      accept: fc.oneof(fc.constantFrom("*/*", "text/csv", "application/json;q=0"), headerJunk),
    },
    { requiredKeys: [] },
  )
  .chain((known) => fc.dictionary(fc.string({ unit: "binary-ascii", minLength: 1, maxLength: 20 }).map((k) => k.toLowerCase()), headerJunk, { maxKeys: 3 }).map((extra) => ({ ...extra, ...known })));

const ipArb: fc.Arbitrary<string> = fc.oneof(fc.constant("127.0.0.1"), fc.ipV4(), fc.ipV6(), fc.constantFrom("", "unknown", "::ffff:127.0.0.1"), anyText);

const bodyArb: fc.Arbitrary<Uint8Array | null> = fc.option(fc.uint8Array({ maxLength: 64 }), { nil: null });

function rawRequest(method: string, pathAndQuery: { path: string; query: string }, headers: Record<string, string>, ip: string, body: Uint8Array | null): RawRequest {
  return { method, path: pathAndQuery.path, query: new URLSearchParams(pathAndQuery.query), headers, ip, body };
}

/** A route with a path (hostile or known-good segments) and a query for that route. */
function routeRequestArb(segments: "hostile" | "known"): fc.Arbitrary<{ route: string; path: string; query: string }> {
  return anyRoute.chain((route) =>
    fc.record({
      route: fc.constant(route.path),
      path: segments === "known" ? filledPath(route, knownSegment) : filledPath(route),
      query: queryArb(route),
    }),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// In-process properties.

describe("fuzzing the pipeline in-process (no sockets)", () => {
  beforeAll(async () => {
    const r = await pipeline({ method: "GET", path: "/v1/peg/feed", query: new URLSearchParams(), headers: {}, ip: "127.0.0.1", body: null });
    expect(r.status).toBe(200);
    feedEtag = r.headers["etag"]!;
  });

  it("(a) every route template with arbitrary path parameters", async () => {
    await fc.assert(
      fc.asyncProperty(anyRoute.chain((r) => filledPath(r)), fc.constantFrom("GET", "GET", "GET", "HEAD"), async (path, method) => {
        await send(rawRequest(method, { path, query: "" }, {}, "127.0.0.1", null));
      }),
      { numRuns: RUNS },
    );
  });

  it("(b) every documented query parameter of every route with hostile values", async () => {
    await fc.assert(
      fc.asyncProperty(routeRequestArb("known"), fc.constantFrom("GET", "GET", "GET", "HEAD"), async (r, method) => {
        await send(rawRequest(method, r, {}, "127.0.0.1", null));
      }),
      { numRuns: RUNS },
    );
  });

  it("(b') hostile path parameters and hostile queries together", async () => {
    await fc.assert(
      fc.asyncProperty(routeRequestArb("hostile"), async (r) => {
        await send(rawRequest("GET", r, {}, "127.0.0.1", null));
      }),
      { numRuns: RUNS },
    );
  });

  it("(c) arbitrary methods on every path", async () => {
    await fc.assert(
      fc.asyncProperty(anyPath, methodArb, bodyArb, async (path, method, body) => {
        await send(rawRequest(method, { path, query: "" }, {}, "127.0.0.1", body));
      }),
      { numRuns: RUNS },
    );
  });

  it("(d) arbitrary headers, client addresses and methods (CORS preflights included)", async () => {
    await fc.assert(
      fc.asyncProperty(routeRequestArb("known"), methodArb, headersArb, ipArb, async (r, method, headers, ip) => {
        await send(rawRequest(method, r, headers, ip, null));
      }),
      { numRuns: RUNS },
    );
  });

  it("(e) everything arbitrary at once", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(routeRequestArb("hostile"), routeRequestArb("known"), fc.record({ path: anyPath, query: queryArb(undefined) })),
        methodArb,
        headersArb,
        ipArb,
        bodyArb,
        async (r, method, headers, ip, body) => {
          await send(rawRequest(method, r, headers, ip, body));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("reached the handlers: every route gave one of its own documented responses, every route with parameters an error", () => {
    expect(unexpected.map((u) => describeRequest(u.req))).toEqual([]);
    for (const r of routes) {
      const statuses = [...(seen.get(r.path) ?? [])];
      // The WebSocket route upgrades in the transport (before the pipeline): in-process it can only refuse (426).
      const own = r.path === "/v1/ws" ? [426] : Object.keys(r.spec.responses).map(Number);
      expect(statuses.some((s) => own.includes(s)), `${r.path} never gave one of its own responses ${own.join(", ")} (saw ${statuses.join(", ")})`).toBe(true);
      if (r.path.includes("{") || Object.keys(r.spec.query ?? {}).length > 0) {
        expect(statuses.some((s) => s >= 400), `${r.path} never failed (saw ${statuses.join(", ")})`).toBe(true);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Over a real socket.

/** Characters fetch sends as-is in a path or query (no normalisation beyond dot segments), `%` included. */
const URL_CHARS = [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@%"];
const urlText = fc.oneof(
  fc.string({ unit: fc.constantFrom(...URL_CHARS), maxLength: 30 }),
  fc.constantFrom(...MALFORMED_ESCAPES),
  anyText.map((t) => pctEncode(t.slice(0, 200))),
);

/** A raw path for fetch: a filled template with URL-safe or percent-encoded segments, or a web path. */
const socketPath: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: anyRoute.chain((r) => filledPath(r, (p) => fc.oneof(knownSegment(p), urlText.filter((s) => s !== "" && s !== "." && s !== "..")))) },
  { weight: 2, arbitrary: fc.webPath() },
  { weight: 2, arbitrary: fc.array(urlText, { minLength: 1, maxLength: 5 }).map((xs) => `/${xs.join("/")}`) },
);

const socketQuery: fc.Arbitrary<string> = fc.oneof(
  fc.constant(""),
  // fetch percent-encodes what a URL may not hold raw; `#` would start a fragment. uWS resets the connection on a
  // request head over ~128 KB without an answer (a transport limit), so the query is cut at 4 000 characters (at
  // most ~36 KB once fetch has percent-encoded it).
  anyRoute.chain((r) => queryArb(r)).map((q) => q.replace(/#/g, "%23").slice(0, 4_000)),
  fc.string({ unit: fc.constantFrom(...URL_CHARS, "?", "/"), maxLength: 60 }),
);

/**
 * Methods uWS parses. uWS closes the connection without an answer on any other method (lowercase `patch`,
 * `PROPFIND`, `M-SEARCH`, ...) before the adapter sees the request; that is covered separately below. fetch
 * upper-cases the lowercase standard names except `patch`, and refuses CONNECT, TRACE and TRACK.
 */
const socketMethod: fc.Arbitrary<string> = fc.constantFrom("GET", "GET", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "get", "delete", "options");

/** Any token fetch will send as a method. */
const anyTokenMethod: fc.Arbitrary<string> = fc.stringMatching(/^[A-Za-z-]{1,10}$/).filter((m) => !["CONNECT", "TRACE", "TRACK"].includes(m.toUpperCase()));

const printable = fc.string({ unit: fc.constantFrom(...[..."abcXYZ019 -_.:;,/\"'()*%=+?!@#$&<>[]{}|\\^`~"]), maxLength: 60 }).map((s) => s.trim());

const socketHeaders: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    "x-request-id": fc.oneof(fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/), fc.constantFrom("a".repeat(129), "x y", "a/b"), printable),
    origin: fc.oneof(fc.constantFrom(ORIGIN, "https://evil.example", "null"), printable),
    "x-forwarded-for": fc.oneof(fc.array(fc.oneof(fc.ipV4(), fc.ipV6(), printable), { maxLength: 4 }).map((xs) => xs.join(", ")), printable),
    "if-none-match": fc.oneof(fc.constant(null).map(() => feedEtag), printable),
    "access-control-request-headers": printable,
  },
  { requiredKeys: [] },
);

/** A body: none, some text, or (a number) that many bytes, all under the 16 KiB cap. */
const socketBody: fc.Arbitrary<string | number | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: MAX_BODY_BYTES }) },
);

/** Bodies over the 16 KiB cap (the adapter answers 413 itself). */
const oversizedBody: fc.Arbitrary<number> = fc.integer({ min: MAX_BODY_BYTES + 1, max: 2 * MAX_BODY_BYTES });

const nativeUws = uwsIsNative();

describe.skipIf(!nativeUws)("fuzzing a real uWS server", () => {
  let server: UwsServer;
  let base: string;

  beforeAll(async () => {
    server = await serveUws(pipeline, { host: "127.0.0.1", port: 0, trustProxy: true });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server?.close());

  /** One request over the socket and the invariants of its answer. */
  async function sendOver(path: string, query: string, method: string, headers: Record<string, string>, body: string | number | undefined): Promise<Response> {
    clock.increment(120_000);
    const url = `${base}${path}${query === "" ? "" : `?${query}`}`;
    const upper = method.toUpperCase();
    const payload = body === undefined || upper === "GET" || upper === "HEAD" ? undefined : typeof body === "number" ? "x".repeat(body) : body;
    const what = `${method} ${url.slice(base.length, base.length + 300)} headers=${JSON.stringify(headers).slice(0, 300)} body=${payload === undefined ? "none" : `${Buffer.byteLength(payload)} bytes`}`;
    const res = await fetch(url, { method, headers, ...(payload === undefined ? {} : { body: payload }), signal: AbortSignal.timeout(5_000) });
    const text = await res.text();
    expect(res.status, `500 for ${what}: ${text.slice(0, 300)}`).not.toBe(500);
    expect(res.headers.get("x-request-id") ?? "<missing>", `x-request-id for ${what} (status ${res.status}, body ${text.slice(0, 200)})`).toMatch(SANE_REQUEST_ID);
    if (res.status >= 400 && res.status !== 503) {
      expect(res.headers.get("content-type"), what).toMatch(/^application\/json/);
      if (upper !== "HEAD") {
        const json: unknown = JSON.parse(text);
        expect(ApiErrorSchema.safeParse(json).success, `not an ApiError: ${text.slice(0, 300)} for ${what}`).toBe(true);
        const code = (json as { error: ErrorCode }).error;
        expect(ERROR_STATUS[code], `code ${code} with status ${res.status} for ${what}`).toBe(res.status);
      }
    }
    return res;
  }

  async function expectUp(): Promise<void> {
    const health = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5_000) });
    expect(health.status).toBe(200);
    expect(health.headers.get("x-request-id")).toMatch(SANE_REQUEST_ID);
    expect(await health.json()).toBeTruthy();
  }

  it("raw paths, queries, methods, headers and bodies: never a 500, errors are JSON ApiErrors with an x-request-id", async () => {
    await fc.assert(
      fc.asyncProperty(socketPath, socketQuery, socketMethod, socketHeaders, socketBody, async (path, query, method, headers, body) => {
        await sendOver(path, query, method, headers, body);
      }),
      { numRuns: SOCKET_RUNS },
    );
    await expectUp();
  });

  it("bodies over 16 KiB: 413 payload_too_large, still with an x-request-id (and CORS headers for the allowed origin)", async () => {
    await fc.assert(
      fc.asyncProperty(socketPath, fc.constantFrom("POST", "PUT", "PATCH", "DELETE"), oversizedBody, fc.constantFrom({}, { origin: ORIGIN }, { "x-request-id": "fuzz-413" }), async (path, method, size, headers) => {
        const res = await sendOver(path, "", method, headers, size);
        expect(res.status).toBe(413);
        if (headers["x-request-id"] !== undefined) expect(res.headers.get("x-request-id")).toBe(headers["x-request-id"]);
        if (headers.origin === ORIGIN) expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      }),
      { numRuns: 20 },
    );
    await expectUp();
  });

  it("arbitrary method tokens: either refused at the transport (uWS drops the connection) or a sound answer; the server stays up", async () => {
    let dropped = 0;
    await fc.assert(
      fc.asyncProperty(socketPath, anyTokenMethod, async (path, method) => {
        try {
          await sendOver(path, "", method, {}, undefined);
        } catch (e) {
          // uWS's parser knows only the standard methods and closes the connection on any other token.
          const cause = (e as { cause?: { code?: string } }).cause;
          if (!(e instanceof TypeError && cause?.code === "UND_ERR_SOCKET")) throw e;
          // Only a method the parser does not know may be dropped (fetch upper-cases the standard ones but PATCH).
          expect(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], `dropped ${method} ${path}`).not.toContain(method);
          dropped++;
        }
      }),
      { numRuns: 50 },
    );
    expect(dropped, "uWS is expected to drop most random method tokens").toBeGreaterThan(0);
    await expectUp();
  });
});
