/**
 * The advisory routes and the peg feed's `systemic` block through the real route stack (Router, every answer checked
 * against the generated OpenAPI document), and over a real uWebSockets.js server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADVISORY_NOTE, lendingPosition, loopExposureByMint, type ExposureReader, type ExposureSnapshot, type LendingPosition } from "../../src/advisory/index.ts";
import { ApiError } from "../../src/http/errors.ts";
import { createPipeline } from "../../src/http/pipeline.ts";
import { Router } from "../../src/http/router.ts";
import { openApiDocument, publicRoutes, type DocumentedRoute } from "../../src/http/routes/index.ts";
import { ApiErrorSchema } from "../../src/http/schemas/index.ts";
import type { HttpResult } from "../../src/http/types.ts";
import { serveUws, uwsIsNative, type UwsServer } from "../../src/http/uws-adapter.ts";
import { PositionsBook, simulatedPositions } from "../../src/streams/positions/index.ts";
import { asset, fakeReadModel, NOW } from "../http/fixtures.ts";
import { expectDocumented, type Answer } from "../http/helpers.ts";

type Obj = Record<string, unknown>;

const JITO = asset("jitoSOL").mint;
const USDC = asset("USDC").mint;
const USDT = asset("USDT").mint;
const UPDATED = NOW - 30_000;

const pos = (mint: string, protocol: string, collateral: string, debt: string): LendingPosition =>
  lendingPosition({ protocol, collateral_mint: mint, collateral_usd: collateral, debt_usd: debt, liquidation_threshold: "0.9" });
const times = (n: number, p: () => LendingPosition) => Array.from({ length: n }, p);

/**
 * jitoSOL: a book with one rung's increment withheld; USDC: a fully publishable book; USDT: a protocol below the floor
 * (drift) and its complementary partner (marginfi) left out; nothing else is tracked.
 */
const BOOK: LendingPosition[] = [
  ...times(5, () => pos(JITO, "kamino", "1000", "880")),
  ...times(2, () => pos(JITO, "kamino", "1000", "860")),
  ...times(4, () => pos(JITO, "kamino", "1000", "850")),
  ...times(6, () => pos(JITO, "kamino", "1000", "700")),
  ...times(5, () => pos(USDC, "kamino", "2000.005", "1000")),
  ...times(5, () => pos(USDC, "marginfi", "3000", "2900")),
  ...times(6, () => pos(USDT, "kamino", "1000", "950")),
  ...times(6, () => pos(USDT, "marginfi", "500", "400")),
  ...times(3, () => pos(USDT, "drift", "1000", "950")),
];

class FixedReader implements ExposureReader {
  constructor(public snap: ExposureSnapshot | null) {}
  snapshot(): ExposureSnapshot | null {
    return this.snap;
  }
}

function stack(advisory?: ExposureReader) {
  const rm = fakeReadModel();
  const routes = publicRoutes(rm, advisory === undefined ? {} : { advisory });
  const router = new Router(routes);
  const doc = openApiDocument(routes) as Obj;
  const routeOf = (rawPath: string): DocumentedRoute | undefined => {
    const parts = rawPath.split("/");
    const found = routes.filter((r) => r.method === "GET" && r.path.split("/").length === parts.length && r.path.split("/").every((s, i) => s.startsWith("{") || s === parts[i]));
    return found.sort((a, b) => b.path.split("/").filter((s) => !s.startsWith("{")).length - a.path.split("/").filter((s) => !s.startsWith("{")).length)[0];
  };
  async function get(path: string, status = 200, headers: Record<string, string> = {}): Promise<Answer> {
    const q = path.indexOf("?");
    const rawPath = q < 0 ? path : path.slice(0, q);
    let result: HttpResult;
    try {
      result = await router.handle({ method: "GET", path: rawPath, query: new URLSearchParams(q < 0 ? "" : path.slice(q + 1)), headers, ip: "127.0.0.1", requestId: "t", body: null });
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      result = { status: e.status, json: e.toBody(), ...(e.extra.headers === undefined ? {} : { headers: e.extra.headers }) };
    }
    const text = result.text === undefined ? undefined : Buffer.from(result.text).toString("utf8");
    const body = result.json !== undefined ? JSON.parse(JSON.stringify(result.json)) : text !== undefined && text !== "" ? JSON.parse(text) : undefined;
    const answer: Answer = { status: result.status, headers: result.headers ?? {}, body, text, contentType: result.contentType, result };
    expectDocumented(doc, routeOf(rawPath)!, answer);
    if (result.status >= 400) expect(ApiErrorSchema.safeParse(body).success, JSON.stringify(body)).toBe(true);
    expect(answer.status, `${path}: ${JSON.stringify(body)}`).toBe(status);
    return answer;
  }
  return { rm, routes, doc, get };
}

const reader = new FixedReader({ updatedAt: UPDATED, byMint: loopExposureByMint(BOOK) });
const s = stack(reader);

describe("GET /v1/assets/{symbol}/loop-exposure", () => {
  it("answers the loop exposure object with cent-rounded decimal figures; a withheld increment repeats the previous rung", async () => {
    const body = (await s.get("/v1/assets/jitoSOL/loop-exposure")).body as Obj;
    expect(body).toEqual({
      asset: "jitoSOL",
      loop_exposure_usd: "17000",
      debt_usd: "13720",
      coverage: "partial",
      by_protocol: [{ protocol: "kamino", collateral_lev_usd: "17000", debt_usd: "13720" }],
      cascade: [
        { shock_bps: 100, liquidatable_usd: "0", positions: "0" },
        { shock_bps: 250, liquidatable_usd: "5000", positions: "5-9" },
        { shock_bps: 500, liquidatable_usd: "5000", positions: "5-9" },
        { shock_bps: 1000, liquidatable_usd: "11000", positions: "10-24" },
        { shock_bps: 2000, liquidatable_usd: "11000", positions: "10-24" },
      ],
      updated_at: new Date(UPDATED).toISOString(),
      advisory_note: ADVISORY_NOTE,
    });
    const usdc = (await s.get("/v1/assets/USDC/loop-exposure")).body as Obj;
    // 5 x 2000.005 = 10000.025 -> 10000.02 (half-even), plus 15000.
    expect(usdc).toMatchObject({ loop_exposure_usd: "25000.02", debt_usd: "19500", coverage: "full" });
    expect(usdc["by_protocol"]).toEqual([
      { protocol: "kamino", collateral_lev_usd: "10000.02", debt_usd: "5000" },
      { protocol: "marginfi", collateral_lev_usd: "15000", debt_usd: "14500" },
    ]);
  });

  it("leaves a withheld protocol out of by_protocol, the totals and the cascade: decimal strings, never null", async () => {
    const body = (await s.get("/v1/assets/USDT/loop-exposure")).body as Obj;
    expect(body).toEqual({
      asset: "USDT",
      loop_exposure_usd: "6000",
      debt_usd: "5700",
      coverage: "partial",
      by_protocol: [{ protocol: "kamino", collateral_lev_usd: "6000", debt_usd: "5700" }],
      cascade: [100, 250, 500, 1000, 2000].map((shock_bps) => ({ shock_bps, liquidatable_usd: "6000", positions: "5-9" })),
      updated_at: new Date(UPDATED).toISOString(),
      advisory_note: ADVISORY_NOTE,
    });
    expect(JSON.stringify(body)).not.toMatch(/null|drift|marginfi/);
  });

  it("documents every advisory figure as a non-null decimal string", () => {
    const schemas = (s.doc["components"] as Obj)["schemas"] as Record<string, { properties: Record<string, Obj>; required: string[] }>;
    const figures: [string, string][] = [
      ["LoopExposure", "loop_exposure_usd"],
      ["LoopExposure", "debt_usd"],
      ["ProtocolExposure", "collateral_lev_usd"],
      ["ProtocolExposure", "debt_usd"],
      ["CascadeRung", "liquidatable_usd"],
      ["SimulateDepeg", "liquidatable_usd"],
      ["SimulateDepeg", "loop_exposure_usd"],
      ["Systemic", "loop_exposure_usd"],
    ];
    for (const [schema, field] of figures) {
      const prop = schemas[schema]!.properties[field]!;
      expect(prop["$ref"], `${schema}.${field}`).toBe("#/components/schemas/Decimal");
      expect(JSON.stringify(prop), `${schema}.${field}`).not.toMatch(/null|anyOf|oneOf/);
      expect(schemas[schema]!.required, `${schema}.${field}`).toContain(field);
    }
  });

  it("answers zeros and empty lists for an asset with no tracked leverage", async () => {
    expect((await s.get("/v1/assets/EURC/loop-exposure")).body).toMatchObject({ asset: "EURC", loop_exposure_usd: "0", debt_usd: "0", coverage: "full", by_protocol: [], cascade: [] });
  });

  it("404 asset_not_found for an unknown (or wrongly cased) symbol", async () => {
    for (const sym of ["NOPE", "jitosol", "USD%2A%2A"]) {
      const body = (await s.get(`/v1/assets/${sym}/loop-exposure`, 404)).body as Obj;
      expect(body["error"]).toBe("asset_not_found");
      expect(body["asset"]).toBe(decodeURIComponent(sym));
    }
  });

  it("503 not_ready before the positions are loaded, and when the deployment tracks none", async () => {
    const empty = stack(new FixedReader(null));
    const a = await empty.get("/v1/assets/jitoSOL/loop-exposure", 503);
    expect((a.body as Obj)["error"]).toBe("not_ready");
    expect(a.headers["retry-after"]).toBe("5");
    expect(((await stack().get("/v1/assets/jitoSOL/simulate-depeg?shock_bps=500", 503)).body as Obj)["error"]).toBe("not_ready");
  });

  it("never publishes a wallet, owner or authority", async () => {
    const text = JSON.stringify((await s.get("/v1/assets/jitoSOL/loop-exposure")).body);
    expect(text).not.toMatch(/owner|wallet|authority|obligation/i);
  });
});

describe("GET /v1/assets/{symbol}/simulate-depeg", () => {
  it("answers one preset rung plus the by_protocol breakdown", async () => {
    expect((await s.get("/v1/assets/jitoSOL/simulate-depeg?shock_bps=250")).body).toEqual({
      asset: "jitoSOL",
      shock_bps: 250,
      liquidatable_usd: "5000",
      positions: "5-9",
      loop_exposure_usd: "17000",
      coverage: "partial",
      by_protocol: [{ protocol: "kamino", collateral_lev_usd: "17000", debt_usd: "13720" }],
      updated_at: new Date(UPDATED).toISOString(),
      advisory_note: ADVISORY_NOTE,
    });
    expect((await s.get("/v1/assets/jitoSOL/simulate-depeg?shock_bps=500")).body).toMatchObject({ liquidatable_usd: "5000", positions: "5-9" });
    for (const shock of [100, 1000, 2000]) expect((await s.get(`/v1/assets/USDC/simulate-depeg?shock_bps=${shock}`)).body).toMatchObject({ shock_bps: shock });
    expect((await s.get("/v1/assets/EURC/simulate-depeg?shock_bps=2000")).body).toMatchObject({ liquidatable_usd: "0", positions: "0", by_protocol: [] });
  });

  it("400 invalid_query for a missing, repeated or non-preset shock", async () => {
    for (const q of ["", "?shock_bps=", "?shock_bps=300", "?shock_bps=0", "?shock_bps=-100", "?shock_bps=500.0", "?shock_bps=5e2", "?shock_bps=abc", "?shock_bps=100&shock_bps=250", "?shock=500"]) {
      const body = (await s.get(`/v1/assets/jitoSOL/simulate-depeg${q}`, 400)).body as Obj;
      expect(body["error"], q).toBe("invalid_query");
      expect(body["message"], q).toMatch(/shock_bps/);
    }
  });

  it("404 for an unknown symbol comes before the query check", async () => {
    expect(((await s.get("/v1/assets/NOPE/simulate-depeg?shock_bps=300", 404)).body as Obj)["error"]).toBe("asset_not_found");
  });

  it("documents shock_bps as a required preset", () => {
    const op = ((s.doc["paths"] as Obj)["/v1/assets/{symbol}/simulate-depeg"] as Obj)["get"] as Obj;
    const p = (op["parameters"] as Obj[]).find((x) => x["name"] === "shock_bps")!;
    expect(p["required"]).toBe(true);
    expect((p["schema"] as Obj)["enum"]).toEqual([100, 250, 500, 1000, 2000]);
  });
});

describe("the peg feed's systemic block", () => {
  it("carries systemic for tracked assets and omits it (no key) for the others", async () => {
    const body = (await s.get("/v1/peg/feed")).body as { data: Obj[] };
    const sig = (sym: string) => body.data.find((d) => d["symbol"] === sym)!;
    expect(sig("jitoSOL")["systemic"]).toEqual({
      loop_exposure_usd: "17000",
      protocols: ["kamino"],
      cascade: [
        { shock_bps: 100, liquidatable_usd: "0", positions: "0" },
        { shock_bps: 250, liquidatable_usd: "5000", positions: "5-9" },
        { shock_bps: 500, liquidatable_usd: "5000", positions: "5-9" },
        { shock_bps: 1000, liquidatable_usd: "11000", positions: "10-24" },
        { shock_bps: 2000, liquidatable_usd: "11000", positions: "10-24" },
      ],
      coverage: "partial",
      updated_at: new Date(UPDATED).toISOString(),
      advisory_note: ADVISORY_NOTE,
    });
    expect(sig("USDC")["systemic"]).toMatchObject({ loop_exposure_usd: "25000.02", protocols: ["kamino", "marginfi"], coverage: "full" });
    // The verifiable peg fields are untouched by it.
    expect(sig("USDC")).toMatchObject({ symbol: "USDC", mint: USDC });
    expect(sig("EURC")).not.toHaveProperty("systemic");
    const tracked = body.data.filter((d) => "systemic" in d).map((d) => d["symbol"]);
    expect(sig("USDT")["systemic"]).toMatchObject({ loop_exposure_usd: "6000", protocols: ["kamino"], coverage: "partial" });
    expect(tracked.sort()).toEqual(["USDC", "USDT", "jitoSOL"]);
  });

  it("is omitted everywhere without a positions book or before it loads", async () => {
    for (const st of [stack(), stack(new FixedReader(null))]) {
      const body = (await st.get("/v1/peg/feed")).body as { data: Obj[] };
      expect(body.data.some((d) => "systemic" in d)).toBe(false);
    }
  });

  it("changes the feed body and its ETag when a new positions snapshot arrives", async () => {
    const r = new FixedReader({ updatedAt: UPDATED, byMint: loopExposureByMint(BOOK) });
    const st = stack(r);
    const first = await st.get("/v1/peg/feed");
    const etag = first.headers["etag"]!;
    await st.get("/v1/peg/feed", 304, { "if-none-match": etag });
    r.snap = { updatedAt: UPDATED + 60_000, byMint: loopExposureByMint(BOOK.slice(0, 17)) };
    const second = await st.get("/v1/peg/feed", 200, { "if-none-match": etag });
    expect(second.headers["etag"]).not.toBe(etag);
    expect((second.body as { data: Obj[] }).data.find((d) => d["symbol"] === "USDC")).not.toHaveProperty("systemic");
  });
});

describe("with the simulated positions book (the default service)", () => {
  it("serves every active asset, with systemic exactly on the tracked ones", async () => {
    const rm = fakeReadModel();
    const book = new PositionsBook({ sources: [simulatedPositions({ assets: rm.catalog.active, seed: 1 })], clock: rm.clock });
    await book.start();
    await book.stop();
    const st = stack(book);
    const feed = (await st.get("/v1/peg/feed")).body as { data: Obj[] };
    const snap = book.snapshot()!;
    expect(snap.updatedAt).toBe(NOW);
    let tracked = 0;
    for (const a of rm.catalog.active) {
      const sig = feed.data.find((d) => d["mint"] === a.mint)!;
      const e = snap.byMint.get(a.mint);
      expect("systemic" in sig, a.symbol).toBe(e !== undefined && e.tracked);
      if (e?.tracked === true) tracked++;
      const le = (await st.get(`/v1/assets/${encodeURIComponent(a.symbol)}/loop-exposure`)).body as Obj;
      expect((le["cascade"] as unknown[]).length).toBe(e?.tracked === true ? 5 : 0);
    }
    expect(tracked).toBeGreaterThan(10);
  });
});

describe("over a real uWS server", () => {
  let server: UwsServer | undefined;
  let base = "";
  beforeAll(async () => {
    if (!uwsIsNative()) return;
    const pipeline = createPipeline({ router: new Router(s.routes), clock: s.rm.clock, ratePerMinute: 1_000, corsOrigins: [] });
    server = await serveUws(pipeline, { host: "127.0.0.1", port: 0, trustProxy: false });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server?.close());

  it.skipIf(!uwsIsNative())("answers the routes and the 400 in the ApiError shape", async () => {
    const ok = await fetch(`${base}/v1/assets/jitoSOL/loop-exposure`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toMatch(/^application\/json/);
    expect(ok.headers.get("x-request-id")).toBeTruthy();
    expect(((await ok.json()) as Obj)["loop_exposure_usd"]).toBe("17000");
    const bad = await fetch(`${base}/v1/assets/jitoSOL/simulate-depeg?shock_bps=750`);
    expect(bad.status).toBe(400);
    const err = (await bad.json()) as Obj;
    expect(err["error"]).toBe("invalid_query");
    expect(typeof err["message"]).toBe("string");
    const sim = await fetch(`${base}/v1/assets/USDC/simulate-depeg?shock_bps=1000`);
    expect(((await sim.json()) as Obj)["shock_bps"]).toBe(1000);
  });
});
