/**
 * GET /v1/calibration end to end over a real store (addendum A): 1-minute rows seeded in PGlite and in a PostgreSQL
 * this test starts itself, read by the store's read model, answered by the real route and checked against the OpenAPI
 * document, with exact figures. Percentiles are nearest rank (the value at rank ceil(p x N / 100) of the ascending
 * |discount| values), in floor bps; both backends must give byte-identical bodies.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CatalogAsset } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { parseConfig } from "../../src/config.ts";
import { createStoreReadModel } from "../../src/http/read-model-store.ts";
import { Router } from "../../src/http/router.ts";
import { openApiDocument, publicRoutes } from "../../src/http/routes/index.ts";
import { D, decimalToWire, spreadEntryLevels, type Decimal } from "../../src/methodology/index.ts";
import { insertSamples, openStore, type SampleRow, type Store } from "../../src/store/index.ts";
import { ROLLUPS, ensurePartitions } from "../../src/store/partitions.ts";
import { DAY, MIN, catalog, runEngine, sample } from "../store/fixtures.ts";
import { describeWithPostgres } from "../support/postgres.ts";
import { expectDocumented, type Answer } from "./helpers.ts";

/** 2026-06-12T12:00:00.000Z; the trailing 8 UTC days are 06-05 .. 06-12, the 7-day window (06-05 12:00, 06-12 12:00]. */
const NOW = Date.UTC(2026, 5, 12, 12, 0, 0);
const SEC = 1_000;
const asset = (symbol: string): CatalogAsset => catalog.bySymbol(symbol)!;
const at = (day: number, hour: number, minute = 0): number => Date.UTC(2026, 5, day, hour, minute);

type Row = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------------------------
// Reference: nearest rank in exact decimals, written independently of the SQL.

const PCTS = [50, 95, 99] as const;

/** 1-based nearest rank of percentile p (an integer percent) among n values: ceil(p n / 100), in integers. */
const nearestRank = (p: number, n: number): number => Math.floor((p * n + 99) / 100);

function referenceBps(values: readonly Decimal[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = values.map((v) => v.abs()).sort((a, b) => a.cmp(b));
  return sorted[nearestRank(p, sorted.length) - 1]!.times(10_000).floor().toNumber();
}

// ---------------------------------------------------------------------------------------------------------------
// Seed data: hand-made minutes written through insertSamples (the rollups the service computes), plus large seeded
// distributions written as 1-minute rows directly.

/** One minute of samples at `minute` (seconds apart), or at the exact instants given. */
function minute(mint: string, start: number, discounts: readonly string[]): SampleRow[] {
  return discounts.map((d, i) => sample(mint, start + i * SEC, d));
}

const USDC = asset("USDC");
const USDT = asset("USDT");
const USDE = asset("USDe");
const HYUSD = asset("hyUSD");

function handMadeSamples(): SampleRow[] {
  const rows: SampleRow[] = [];
  // USDC (drift 15): 20 minutes inside the 7 days. Sorted by |average| in bps: 1 .. 9, then 15 exactly (mean of 14
  // and 16), eight in [15, 16), 16.33.. (mean of 16, 16, 17), 25.5 (mean of -25, -26) in the minute that starts at NOW.
  // Ranks: p50 = 10 -> 15; p95 = 19 -> 16; p99 = 20 -> 25.
  for (let i = 1; i <= 9; i++) {
    const day = i <= 5 ? at(5, 13) : at(7, 8);
    rows.push(...minute(USDC.mint, day + i * MIN, [decimalToWire(new D(i).div(10_000).times(i % 2 === 0 ? -1 : 1))]));
  }
  rows.push(...minute(USDC.mint, at(7, 9), ["0.0014", "0.0016"]));
  for (let i = 0; i < 8; i++) rows.push(...minute(USDC.mint, at(9, 10) + i * MIN, [i % 2 === 0 ? "0.0015" : "-0.00159999"]));
  rows.push(...minute(USDC.mint, at(12, 9), ["0.0016", "0.0016", "0.0017"]));
  rows.push(sample(USDC.mint, NOW, "-0.0025"), sample(USDC.mint, NOW, "-0.0026", { seq: 1 }));
  // Outside the 7 days: the minute starting exactly at NOW - 7 d and the first minute of 06-05 count as days covered
  // only; 06-04 23:59 and the minute after NOW count for nothing. Each would dominate the percentiles if counted.
  rows.push(...minute(USDC.mint, NOW - 7 * DAY, ["0.05"]));
  rows.push(...minute(USDC.mint, at(5, 0), ["0.05"]));
  rows.push(...minute(USDC.mint, at(5, 0) - MIN, ["0.05"]));
  rows.push(...minute(USDC.mint, NOW + MIN, ["0.05"]));

  // USDT (drift 15): p95 floors to exactly the drift threshold, which is not above it: status ok.
  for (let i = 0; i < 18; i++) rows.push(...minute(USDT.mint, at(12, 1) + i * MIN, ["0.0001"]));
  rows.push(...minute(USDT.mint, at(12, 2), ["-0.00159999"]));
  rows.push(...minute(USDT.mint, at(12, 3), ["0.004"]));

  // USDe: rows on the 8th day only (before NOW - 7 d): covered, but no percentiles.
  rows.push(...minute(USDE.mint, at(5, 0), ["0.01"]), ...minute(USDE.mint, at(5, 11, 59), ["0.01"]));

  // hyUSD (collateral-ratio thresholds): a wide discount never makes it noisy; there is no drift_bps.
  for (let i = 0; i < 5; i++) rows.push(...minute(HYUSD.mint, at(10, 6) + i * MIN, ["-0.2"]));
  return rows;
}

/** Deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Every minute start in (NOW - 7 d, NOW]: 10,080 of them, the most a 7-day window can hold per asset. */
const WINDOW_MINUTES = Array.from({ length: 7 * 1440 }, (_, i) => NOW - 7 * DAY + (i + 1) * MIN);

interface Distribution {
  readonly asset: CatalogAsset;
  /** minute start -> average discount (wire decimal). */
  readonly rows: ReadonlyMap<number, string>;
}

/** `n` distinct minutes of the 7 days with seeded discounts: signed, up to 8 decimals, with repeated values (ties). */
function distribution(symbol: string, n: number, seed: number): Distribution {
  const rnd = prng(seed);
  const minutes = [...WINDOW_MINUTES];
  for (let i = minutes.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [minutes[i], minutes[j]] = [minutes[j]!, minutes[i]!];
  }
  const pool = Array.from({ length: 7 }, () => Math.floor(rnd() * 300_000));
  const rows = new Map<number, string>();
  for (const m of minutes.slice(0, n)) {
    const units = rnd() < 0.2 ? pool[Math.floor(rnd() * pool.length)]! : Math.floor(rnd() * 300_000);
    rows.set(m, decimalToWire(new D(units).div(100_000_000).times(rnd() < 0.4 ? -1 : 1)));
  }
  return { asset: asset(symbol), rows };
}

/** Sizes around the rank boundaries, up to the full window. */
const DISTRIBUTIONS: readonly Distribution[] = [
  distribution("mSOL", 1, 1),
  distribution("bSOL", 2, 2),
  distribution("INF", 3, 3),
  distribution("bbSOL", 99, 4),
  distribution("JupSOL", 101, 5),
  distribution("PYUSD", 1_000, 6),
  distribution("jitoSOL", 10_080, 7),
];

async function insertRollups(store: Store, d: Distribution): Promise<void> {
  const rows = [...d.rows];
  await ensurePartitions(store.db, ROLLUPS, rows.map(([m]) => m));
  for (let i = 0; i < rows.length; i += 1_000) {
    const chunk = rows.slice(i, i + 1_000);
    // One sample a minute, PEGGED, 30 s into its minute: the average is the discount.
    await sql`insert into rollup_minutes (asset, minute, samples, last_ms, last_seq, last_state, sum_discount, min_discount, max_discount)
      select (select sample_id from assets where mint = ${d.asset.mint}), t.m, 1, ${30 * SEC}, 1, 0, t.a, t.a, t.a
      from unnest(${chunk.map(([m]) => new Date(m).toISOString())}::timestamptz[], ${chunk.map(([, a]) => a)}::numeric[]) as t (m, a)`.execute(store.db);
  }
}

/** USDC transitions: two runs inside the 7 days (one starting exactly at NOW - 7 d), one before, one after NOW. */
async function insertTransitions(store: Store): Promise<void> {
  for (const start of [NOW - 2 * 3_600_000, NOW - 7 * DAY, NOW - 8 * DAY, NOW + MIN]) {
    for (const r of runEngine(start).receipts) await store.insertTransition(r, { seq: null, monitoringOnly: false, calibration: "calibrated" });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Expected rows.

function baseRow(a: CatalogAsset): Row {
  return {
    asset: a.symbol,
    class: a.class,
    calibration: a.calibration,
    monitoring_only: a.monitoringOnly,
    ...(a.monitoringOnly && a.monitoringReason !== null ? { monitoring_reason: a.monitoringReason } : {}),
    ...(a.monitoringOnly && a.monitoringSince !== null ? { monitoring_since: a.monitoringSince } : {}),
    thresholds: a.thresholds,
  };
}

const EMPTY = { days_covered: 0, p50_abs_bps_7d: null, p95_abs_bps_7d: null, p99_abs_bps_7d: null, transitions_7d: 0, suggested_drift_bps: null, status: "ok" };

function expectedFromDistribution(d: Distribution): Row {
  const values = [...d.rows.values()].map((v) => new D(v));
  const [p50, p95, p99] = PCTS.map((p) => referenceBps(values, p)) as [number, number, number];
  const drift = spreadEntryLevels(d.asset.thresholds as Parameters<typeof spreadEntryLevels>[0]).drift;
  return {
    ...baseRow(d.asset),
    days_covered: new Set([...d.rows.keys()].map((m) => new Date(m).toISOString().slice(0, 10))).size,
    p50_abs_bps_7d: p50,
    p95_abs_bps_7d: p95,
    p99_abs_bps_7d: p99,
    transitions_7d: 0,
    suggested_drift_bps: Math.ceil((p99 * 125) / 100),
    status: p95 > drift ? "noisy" : "ok",
  };
}

// ---------------------------------------------------------------------------------------------------------------

it("PostgreSQL's float8 rank ceil(p x N) equals the exact nearest rank for p = 0.5, 0.95, 0.99 and N up to 20,160", () => {
  // percentile_disc computes its rank as ceil(percentile * N) in double precision; this is what makes it exact here.
  const mismatches: string[] = [];
  for (const p of PCTS) {
    for (let n = 1; n <= 20_160; n++) if (Math.ceil((p / 100) * n) !== nearestRank(p, n)) mismatches.push(`p ${p} n ${n}`);
  }
  expect(mismatches).toEqual([]);
  // The reference itself: ceil(95 x 20 / 100) = 19, ceil(99 x 101 / 100) = 100, ceil(50 x 1 / 100) = 1.
  expect([nearestRank(95, 20), nearestRank(99, 101), nearestRank(50, 1), nearestRank(50, 2)]).toEqual([19, 100, 1, 1]);
});

const bodies = new Map<string, string>();

function describeCalibration(name: string, open: (clock: SimulatedClock) => Promise<Store>): void {
  describe(`GET /v1/calibration over ${name}`, () => {
    const clock = new SimulatedClock(NOW);
    let store: Store;
    let router: Router;
    let doc: Record<string, unknown>;
    let routes: ReturnType<typeof publicRoutes>;

    beforeAll(async () => {
      store = await open(clock);
      await store.upsertAssets(catalog.all);
      // Module-level insertSamples: no raw-retention guard, so rows older than 7 days can be written.
      const result = await insertSamples(store.db, handMadeSamples());
      expect(result.stale).toBe(0);
      for (const d of DISTRIBUTIONS) await insertRollups(store, d);
      await insertTransitions(store);
      const rm = createStoreReadModel({
        store,
        catalog,
        clock,
        config: parseConfig({}),
        readiness: () => Promise.resolve({ database: true, nats: true, engine: true, snapshot_age_secs: 0 }),
      });
      routes = publicRoutes(rm);
      router = new Router(routes);
      doc = openApiDocument(routes) as Record<string, unknown>;
    }, 120_000);
    afterAll(async () => {
      await store?.close();
    });

    async function calibration(): Promise<{ body: { ok: boolean; generated_at: string; count: number; data: Row[] }; text: string }> {
      const result = await router.handle({ method: "GET", path: "/v1/calibration", query: new URLSearchParams(), headers: {}, ip: "127.0.0.1", requestId: "t", body: null });
      const text = JSON.stringify(result.json);
      const body = JSON.parse(text) as { ok: boolean; generated_at: string; count: number; data: Row[] };
      const answer: Answer = { status: result.status, headers: result.headers ?? {}, body, text: undefined, contentType: result.contentType, result };
      expectDocumented(doc, routes.find((r) => r.path === "/v1/calibration")!, answer);
      expect(result.status).toBe(200);
      return { body, text };
    }

    it("one row per active asset, catalog order, in the list envelope", async () => {
      const { body } = await calibration();
      expect(body.ok).toBe(true);
      expect(body.generated_at).toBe(new Date(NOW).toISOString());
      expect(body.count).toBe(catalog.active.length);
      expect(body.data.map((r) => r["asset"])).toEqual(catalog.active.map((a) => a.symbol));
      expect(body.data.map((r) => r["asset"])).not.toContain("BRZ"); // inactive
    });

    it("hand-made minutes: nearest-rank percentiles of the minute averages, floor bps, days of the trailing 8, transitions", async () => {
      const { body } = await calibration();
      const row = (a: CatalogAsset) => body.data.find((r) => r["asset"] === a.symbol);
      expect(row(USDC)).toEqual({
        ...baseRow(USDC),
        days_covered: 4, // 06-05 (12:00 and 00:00 rows, and 13:0x), 06-07, 06-09, 06-12
        p50_abs_bps_7d: 15,
        p95_abs_bps_7d: 16,
        p99_abs_bps_7d: 25,
        transitions_7d: 4,
        suggested_drift_bps: 32, // ceil(25 x 1.25 = 31.25)
        status: "noisy", // 16 > 15
      });
      expect(row(USDT)).toEqual({
        ...baseRow(USDT),
        days_covered: 1,
        p50_abs_bps_7d: 1,
        p95_abs_bps_7d: 15, // 15.9999 floors to the drift threshold itself: not above it
        p99_abs_bps_7d: 40,
        transitions_7d: 0,
        suggested_drift_bps: 50,
        status: "ok",
      });
      expect(row(USDE)).toEqual({ ...baseRow(USDE), ...EMPTY, days_covered: 1 });
      expect(row(HYUSD)).toEqual({
        ...baseRow(HYUSD),
        days_covered: 1,
        p50_abs_bps_7d: 2000,
        p95_abs_bps_7d: 2000,
        p99_abs_bps_7d: 2000,
        transitions_7d: 0,
        suggested_drift_bps: 2500,
        status: "ok",
      });
    });

    it("no data: days_covered 0, null percentiles and suggestion, status ok (monitoring-only rows labelled)", async () => {
      const { body } = await calibration();
      const empty = catalog.active.filter((a) => ![USDC, USDT, USDE, HYUSD, ...DISTRIBUTIONS.map((d) => d.asset)].includes(a));
      expect(empty.some((a) => a.monitoringOnly)).toBe(true);
      for (const a of empty) expect(body.data.find((r) => r["asset"] === a.symbol), a.symbol).toEqual({ ...baseRow(a), ...EMPTY });
    });

    it("seeded distributions of 1 to 10,080 minutes match the exact nearest-rank reference", async () => {
      const { body } = await calibration();
      for (const d of DISTRIBUTIONS) {
        const expected = expectedFromDistribution(d);
        expect(body.data.find((r) => r["asset"] === d.asset.symbol), `${d.asset.symbol} (${d.rows.size} rows)`).toEqual(expected);
      }
      // The full window covers all 8 days; its noisy/ok verdicts both occur in the set.
      expect(body.data.find((r) => r["asset"] === "jitoSOL")!["days_covered"]).toBe(8);
      expect(new Set(DISTRIBUTIONS.map((d) => expectedFromDistribution(d)["status"]))).toEqual(new Set(["ok", "noisy"]));
      bodies.set(name, (await calibration()).text);
    });
  });
}

describeCalibration("PGlite", (clock) => openStore({ kind: "pglite-memory" }, clock));

describeWithPostgres("PostgreSQL", (url) => {
  describeCalibration("PostgreSQL", (clock) => openStore({ kind: "postgres", url: url(), max: 4 }, clock));
});

it("PGlite and PostgreSQL answer byte-identical bodies", () => {
  expect(bodies.size).toBe(2);
  expect(bodies.get("PGlite")).toBe(bodies.get("PostgreSQL"));
});
