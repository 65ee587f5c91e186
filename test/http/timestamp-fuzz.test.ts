/**
 * Timestamp query parameters over a real store (issue 14, security): year-0000 instants passed validation and
 * PostgreSQL (here PGlite) refused them, a 500. Every timestamp parameter of every route is found from the route specs
 * (the parameters parsed by `timestampParam`) and fuzzed through the real pipeline, routes, accounts model and store
 * read model: never a 5xx; an instant outside TIMESTAMP_RANGE (1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z,
 * after the offset) is a 400 `invalid_query`; one inside it is never refused for its range.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { parseConfig } from "../../src/config.ts";
import { createStoreAccountsModel } from "../../src/http/accounts-model.ts";
import { createPipeline, type HandledResult } from "../../src/http/pipeline.ts";
import { createStoreReadModel } from "../../src/http/read-model-store.ts";
import { Router } from "../../src/http/router.ts";
import { publicRoutes, type DocumentedRoute } from "../../src/http/routes/index.ts";
import { TIMESTAMP_RANGE, timestampParam } from "../../src/http/schemas/index.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { catalog, NOW } from "./fixtures.ts";
import { BOT_TOKEN, JWT_SECRET, fakeResolve, widgetPayload } from "./helpers.ts";

fc.configureGlobal({ seed: Number(process.env["FUZZ_SEED"] ?? 20261214) });

interface Target {
  readonly route: DocumentedRoute;
  readonly path: string;
  readonly param: string;
  /** The route's other timestamp parameters (sent alongside, fuzzed too). */
  readonly others: readonly string[];
}

const clock = new SimulatedClock(NOW);
let store: Store;
let handle: ReturnType<typeof createPipeline>;
let targets: Target[];
let token: string;
const failures: unknown[] = [];

beforeAll(async () => {
  store = await openStore({ kind: "pglite-memory" }, clock);
  const config = parseConfig({ JWT_SECRET, TELEGRAM_BOT_TOKEN: BOT_TOKEN });
  const rm = createStoreReadModel({
    store,
    catalog,
    clock,
    config,
    readiness: async () => ({ database: true, nats: true, engine: true, snapshot_age_secs: 0 }),
  });
  const routes = publicRoutes(rm, { accounts: { model: createStoreAccountsModel(store), resolve: fakeResolve } });
  handle = createPipeline({ router: new Router(routes), clock, ratePerMinute: 1_000_000, corsOrigins: [], onError: (e) => failures.push(e) });
  targets = routes.flatMap((route) => {
    const stamps = Object.entries(route.spec.query ?? {})
      .filter(([, q]) => q.schema === timestampParam)
      .map(([name]) => name);
    const path = route.path.replace("{symbol}", "USDC");
    return stamps.map((param) => ({ route, path, param, others: stamps.filter((s) => s !== param) }));
  });
  const login = await send("POST", "/v1/auth/messenger", {}, JSON.stringify(widgetPayload({ id: 4711, first_name: "Fuzz" }, clock.now(), BOT_TOKEN)));
  expect(login.status, JSON.stringify(login.json)).toBe(200);
  token = (login.json as { token: string }).token;
}, 60_000);

afterAll(async () => {
  await store?.close();
});

async function send(method: string, path: string, query: Record<string, string>, body: string | null = null, bearer = false): Promise<HandledResult> {
  clock.increment(120_000); // a fresh CSV bucket (10 per minute) for every request
  return handle({
    method,
    path,
    query: new URLSearchParams(query),
    headers: { ...(bearer ? { authorization: `Bearer ${token}` } : {}), ...(body === null ? {} : { "content-type": "application/json" }) },
    ip: "192.0.2.44",
    body: body === null ? null : new TextEncoder().encode(body),
  });
}

const call = (t: Target, query: Record<string, string>) => send("GET", t.path, query, null, t.route.spec.security === "bearer");

/** The instant a generated RFC 3339 text names, computed independently of the parser (years 0-99 included). */
function instant(p: { year: number; month: number; day: number; h: number; m: number; s: number; ms: number; offsetMin: number }): number {
  const d = new Date(Date.UTC(2000, 0, 1, p.h, p.m, p.s, p.ms));
  d.setUTCFullYear(p.year, p.month - 1, p.day);
  return d.getTime() - p.offsetMin * 60_000;
}

const pad = (n: number, w: number) => String(n).padStart(w, "0");

/** Well-formed RFC 3339 texts over the whole four-digit year range, any offset, with the instant they name. */
const rfc3339 = fc
  .record({
    year: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(0, 1, 1969, 1970, 9999)),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 28 }),
    h: fc.integer({ min: 0, max: 23 }),
    m: fc.integer({ min: 0, max: 59 }),
    s: fc.integer({ min: 0, max: 59 }),
    ms: fc.integer({ min: 0, max: 999 }),
    offsetMin: fc.oneof(fc.constant(0), fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 })),
    zulu: fc.boolean(),
  })
  .map((p) => {
    const off = p.offsetMin === 0 && p.zulu ? "Z" : `${p.offsetMin < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(p.offsetMin) / 60), 2)}:${pad(Math.abs(p.offsetMin) % 60, 2)}`;
    const text = `${pad(p.year, 4)}-${pad(p.month, 2)}-${pad(p.day, 2)}T${pad(p.h, 2)}:${pad(p.m, 2)}:${pad(p.s, 2)}.${pad(p.ms, 3)}${off}`;
    return { text, at: instant(p) };
  });

/** Anything else a client may send: extended years from Date#toISOString, near misses, junk. */
const otherText = fc.oneof(
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom("0000-00-00T00:00:00Z", "0000-01-01T00:00:00+23:59", "9999-12-31T23:59:59.999-23:59", "+010000-01-01T00:00:00Z", "-000001-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z", "2026-02-30T00:00:00Z", "now", ""),
  fc.string({ maxLength: 40 }),
);

function expectNo5xx(r: HandledResult, what: string): void {
  const cause = failures.at(-1);
  expect(r.status, `${r.status} for ${what}: ${cause === undefined ? JSON.stringify(r.json) : String((cause as Error).message ?? cause)}`).toBeLessThan(500);
}

describe("timestamp query parameters", () => {
  it("are found on every route that has them", () => {
    expect(targets.map((t) => `${t.route.path} ${t.param}`).sort()).toEqual([
      "/v1/alerts since",
      "/v1/assets/{symbol}/history from",
      "/v1/assets/{symbol}/history to",
      "/v1/audit from",
      "/v1/audit to",
      "/v1/audit.csv from",
      "/v1/audit.csv to",
      "/v1/me/alerts since",
    ]);
  });

  it("refuse year 0000 and the other out-of-range edges with 400 invalid_query, and accept the range's ends", async () => {
    for (const t of targets) {
      for (const text of ["0000-01-01T00:00:00Z", "0001-01-02T00:00:00Z", "1969-12-31T23:59:59.999Z", "1970-01-01T00:30:00+01:00", "9999-12-31T23:59:59-00:01"]) {
        const r = await call(t, { [t.param]: text });
        expect(r.status, `${t.path} ${t.param}=${text}: ${JSON.stringify(r.json)}`).toBe(400);
        expect(r.json, `${t.path} ${t.param}=${text}`).toMatchObject({ error: "invalid_query", message: expect.stringContaining(TIMESTAMP_RANGE.text) });
      }
      // Both ends, each with the route's other bound at the same instant (a window of zero length is valid).
      for (const text of ["1970-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999+00:00"]) {
        const query = Object.fromEntries([t.param, ...t.others].map((p) => [p, text]));
        const r = await call(t, query);
        expect(r.status, `${t.path} ${JSON.stringify(query)}: ${JSON.stringify(r.json)}`).toBe(200);
      }
    }
  });

  it("never answer 5xx, and refuse exactly the instants outside the range (fuzzed, every parameter)", async () => {
    for (const t of targets) {
      await fc.assert(
        fc.asyncProperty(rfc3339, fc.option(fc.oneof(rfc3339.map((x) => x.text), otherText), { nil: undefined }), async (v, other) => {
          const query: Record<string, string> = { [t.param]: v.text };
          if (other !== undefined && t.others.length > 0) query[t.others[0]!] = other;
          const r = await call(t, query);
          const what = `${t.path}?${new URLSearchParams(query).toString()}`;
          expectNo5xx(r, what);
          const outside = v.at < TIMESTAMP_RANGE.min || v.at > TIMESTAMP_RANGE.max;
          const message = String((r.json as { message?: unknown } | undefined)?.message);
          const refusedForRange = r.status === 400 && message.startsWith(`invalid query parameter ${t.param}=`) && message.includes(TIMESTAMP_RANGE.text);
          if (outside) expect(r.json, what).toMatchObject({ error: "invalid_query" });
          if (outside && other === undefined) expect(refusedForRange, what).toBe(true);
          if (!outside) expect(refusedForRange, what).toBe(false);
        }),
        { numRuns: 120 },
      );
      await fc.assert(
        fc.asyncProperty(otherText, fc.option(otherText, { nil: undefined }), async (text, other) => {
          const query: Record<string, string> = { [t.param]: text };
          if (other !== undefined && t.others.length > 0) query[t.others[0]!] = other;
          expectNo5xx(await call(t, query), `${t.path}?${new URLSearchParams(query).toString()}`);
        }),
        { numRuns: 60 },
      );
    }
    expect(failures).toEqual([]);
  });
});
