/**
 * The read-model queries (store/readmodel.ts) and the store-backed ReadModel (http/read-model-store.ts), run on PGlite
 * in memory and on a real PostgreSQL this test starts itself. Data comes from the real engine (ActorHost on a
 * SimulatedClock, USDC and jitoSOL from the shipped catalog) projected by the real projectors, plus small hand-made
 * sample sets where exact figures are checked.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { ActorHost, type StateEvent } from "../../src/actors/index.ts";
import type { CatalogAsset } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { parseConfig } from "../../src/config.ts";
import { createStoreReadModel } from "../../src/http/read-model-store.ts";
import type { ReadModel, Readiness } from "../../src/http/read-model.ts";
import { D, PEG_STATES, decimalToWire, parseTimestamp, type Decimal, type Receipt, type Sample } from "../../src/methodology/index.ts";
import { sampleMessage } from "../../src/streams/jetstream/messages.ts";
import type { BatchMessage } from "../../src/streams/jetstream/consumer.ts";
import { sampleProjector, snapshotVersion, transitionProjector, type ProjectorStats } from "../../src/streams/projector/projector.ts";
import { randomUUID } from "node:crypto";
import {
  auditPage,
  calibrationFigures,
  createWebhook,
  insertDelivery,
  insertSamples,
  upsertTelegramUser,
  latestAlertIds,
  openStore,
  snapshotFromStateEvent,
  statsCounts,
  windows24h,
  type SnapshotRow,
  type Store,
} from "../../src/store/index.ts";
import { describeWithPostgres } from "../support/postgres.ts";
import { DAY, MIN, USDC, USDT, catalog, runEngine, sample } from "./fixtures.ts";

const HOUR = 3_600_000;
const JITO: CatalogAsset = catalog.bySymbol("jitoSOL")!;
/** The store clock's now: 2026-06-12T12:00:00.000Z (fixtures.T0 + 2 h). */
const NOW = Date.UTC(2026, 5, 12, 12, 0, 0);
const enc = new TextEncoder();

const minuteOf = (ms: number): number => Math.floor(ms / MIN) * MIN;
const wire = (d: Decimal): string => decimalToWire(d);
const round8 = (d: Decimal): number => Number(decimalToWire(d.toDecimalPlaces(8, D.ROUND_HALF_EVEN)));

interface Run {
  readonly states: StateEvent[];
  readonly receipts: Receipt[];
}

function collect(host: ActorHost): Run & { stop(): void } {
  const states: StateEvent[] = [];
  const receipts: Receipt[] = [];
  const sub = host.events$.subscribe((e) => (e.kind === "state" ? states.push(e) : receipts.push(e.receipt)));
  return { states, receipts, stop: () => sub.unsubscribe() };
}

const SOL_USD = new D("150.25");
const SOL_PER_JITO = new D("1.2534");

function usdcSample(ts: number, market: string): Sample {
  return { asset: "USDC", ts, intrinsic_usd: new D(1), market_usd: new D(market), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
}

function jitoSample(ts: number, below: string): Sample {
  const intrinsic = SOL_PER_JITO.times(SOL_USD);
  const market = intrinsic.times(new D(1).minus(below));
  return {
    asset: "jitoSOL",
    ts,
    intrinsic_usd: intrinsic,
    market_usd: market,
    intrinsic_sol: SOL_PER_JITO,
    market_sol: market.div(SOL_USD),
    cr: null,
    oracle: {
      "SOL/USD": { price: SOL_USD, conf: new D("0.07"), publish_time: ts - 1_000 },
      "jitoSOL/USD": { price: new D("188.1"), conf: new D("0.2"), publish_time: ts - 2_000 },
    },
    intrinsic_stale: false,
  };
}

/**
 * USDC and jitoSOL every 10 s from NOW - 2 h - 90 s to NOW - 10 s: small wiggles, a USDC DEPEG episode (60 bps for
 * 400 s, through DRIFT) and a jitoSOL DRIFT episode (60 bps for 300 s), each back to PEGGED after the decay dwell.
 */
function runMarket(): Run {
  const start = NOW - 2 * HOUR - 90_000;
  const clock = new SimulatedClock(start);
  const host = new ActorHost({ assets: [USDC, JITO], clock, gitSha: "" });
  const run = collect(host);
  for (let i = 0, t = start; t < NOW; i++, t += 10_000) {
    clock.set(t);
    host.ingest(usdcSample(t, i >= 300 && i < 340 ? "0.994" : ["1", "0.9999", "1.0001", "0.99995", "1"][i % 5]!));
    host.ingest(jitoSample(t, i >= 500 && i < 530 ? "0.006" : ["0", "0.0002", "-0.0001"][i % 3]!));
  }
  clock.set(NOW);
  run.stop();
  host.stop();
  return run;
}

/** USDC and USDT on identical prices: every transition of one has a twin of the other at the same instant. */
function runTwins(episodes: number, start: number): Run {
  const clock = new SimulatedClock(start);
  const host = new ActorHost({ assets: [USDC, USDT], clock, gitSha: "" });
  const run = collect(host);
  const feed = (market: string) => {
    for (const asset of ["USDC", "USDT"]) host.ingest({ ...usdcSample(clock.now(), market), asset });
  };
  for (let e = 0; e < episodes; e++) {
    feed("1");
    clock.increment(1_000);
    for (let i = 0; i < 40; i++) {
      feed("0.99");
      clock.increment(1_000);
    }
    for (let i = 0; i < 200; i++) {
      feed("1");
      clock.increment(1_000);
    }
  }
  run.stop();
  host.stop();
  return run;
}

const market = runMarket();
const twins = runTwins(5, NOW - 3 * HOUR);

function sampleBatch(states: readonly StateEvent[]): BatchMessage[] {
  return states.map((e, i) => ({ seq: i + 1, subject: `peg.sample.${e.mint}`, data: enc.encode(JSON.stringify(sampleMessage(e))) }));
}

function transitionBatch(receipts: readonly Receipt[]): BatchMessage[] {
  return receipts.map((r, i) => ({ seq: i + 1, subject: `peg.transition.${r.mint}`, data: enc.encode(JSON.stringify(r)) }));
}

async function project(store: Store, run: Run, chunk = 250): Promise<void> {
  const stats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0 };
  const samples = sampleProjector(store, stats);
  const batch = sampleBatch(run.states);
  for (let i = 0; i < batch.length; i += chunk) await samples(batch.slice(i, i + chunk));
  await transitionProjector(store, catalog, stats)(transitionBatch(run.receipts));
  expect(stats).toMatchObject({ projected: run.states.length + run.receipts.length, rejected: 0 });
}

/** The trailing-24 h window computed by hand from the engine's own events (the rows the rollups were built from). */
function expectedWindow(states: readonly StateEvent[], mint: string, now: number) {
  const start = now - 24 * HOUR;
  const buckets = Array.from({ length: 24 }, () => ({ sum: new D(0), n: 0 }));
  let lo: Decimal | null = null;
  let hi: Decimal | null = null;
  for (const e of states) {
    const m = minuteOf(e.now);
    if (e.mint !== mint || m <= start || m > now) continue;
    const b = buckets[Math.ceil((m - start) / HOUR) - 1]!;
    b.sum = b.sum.plus(e.discount);
    b.n++;
    if (lo === null || e.discount.lt(lo)) lo = e.discount;
    if (hi === null || e.discount.gt(hi)) hi = e.discount;
  }
  return {
    series: buckets.map((b) => (b.n === 0 ? null : round8(b.sum.div(b.n)))),
    jitter: hi === null || lo === null ? null : wire(hi.minus(lo)),
    worst: hi === null || lo === null ? null : wire(D.max(hi.abs(), lo.abs())),
  };
}

/** Receipts in the ledger's order: detected_at desc, then id desc. */
function ledgerOrder(receipts: readonly Receipt[]): Receipt[] {
  const at = (r: Receipt) => parseTimestamp(r.detected_at)!;
  return [...receipts].sort((a, b) => at(b) - at(a) || (a.alert_id < b.alert_id ? 1 : a.alert_id > b.alert_id ? -1 : 0));
}

const readiness: Readiness = { database: true, nats: true, engine: true, snapshot_age_secs: 3 };

function describeReadModel(name: string, open: (clock: SimulatedClock) => Promise<Store>): void {
  describe(`read model: ${name}`, () => {
    const clock = new SimulatedClock(NOW);
    let store: Store;
    let rm: ReadModel;

    beforeAll(async () => {
      store = await open(clock);
      rm = createStoreReadModel({
        store,
        catalog,
        clock,
        config: parseConfig({}),
        readiness: () => Promise.resolve(readiness),
      });
    });
    afterAll(async () => {
      await store?.close();
    });
    beforeEach(async () => {
      await sql`truncate receipts, alerts, rollup_minutes, sample_rows, sample_minutes, asset_snapshots, assets`.execute(store.db);
      await store.upsertAssets(catalog.all);
    });

    test("the engine fixtures yield the transitions the assertions rely on", () => {
      const path = (mint: string) => market.receipts.filter((r) => r.mint === mint).map((r) => `${r.from_state}->${r.to_state}`);
      // d_smooth climbs through the DRIFT band before it reaches DEPEG.
      expect(path(USDC.mint)).toEqual(["PEGGED->DRIFT", "DRIFT->DEPEG", "DEPEG->PEGGED"]);
      expect(path(JITO.mint)).toEqual(["PEGGED->DRIFT", "DRIFT->PEGGED"]);
      expect(twins.receipts).toHaveLength(20);
      expect(market.states.at(-1)!.now).toBeLessThanOrEqual(NOW);
    });

    describe("snapshots", () => {
      test("the view carries sol_per_lst (jitoSOL only) and the last sample's oracle entries, as the state event says", async () => {
        await project(store, market);
        const views = await rm.snapshots();
        expect([...views.keys()].sort()).toEqual([USDC.mint, JITO.mint].sort());
        const seqOf = (e: StateEvent) => market.states.indexOf(e) + 1;
        const last = (mint: string) => market.states.filter((e) => e.mint === mint).at(-1)!;
        const lastJito = last(JITO.mint);
        const lastUsdc = last(USDC.mint);

        const jito = views.get(JITO.mint)!;
        expect(jito).toEqual(snapshotFromStateEvent(lastJito, snapshotVersion(seqOf(lastJito))));
        expect(jito.sol_per_lst).toBe("1.2534");
        expect(jito.oracle).toEqual({
          "SOL/USD": { price: "150.25", conf: "0.07", publish_time: lastJito.now - 1_000 },
          "jitoSOL/USD": { price: "188.1", conf: "0.2", publish_time: lastJito.now - 2_000 },
        });
        expect(jito.circulating_supply).toBeNull();

        const usdc = views.get(USDC.mint)!;
        expect(usdc).toEqual(snapshotFromStateEvent(lastUsdc, snapshotVersion(seqOf(lastUsdc))));
        expect(usdc.sol_per_lst).toBeNull();
        expect(usdc.oracle).toEqual({});
      });

      test("the sample projector reads absent or malformed display legs as null, never rejecting the sample", async () => {
        const e = market.states.filter((s) => s.mint === JITO.mint).at(-1)!;
        const msg = sampleMessage(e);
        const variants = [
          { ...msg, sample: { ...msg.sample, intrinsic_sol: "1e5", oracle: { "SOL/USD": { price: "150", conf: "0.1", publish_time: "yesterday" } } } },
          { ...msg, sample: { ...msg.sample, intrinsic_sol: undefined, oracle: undefined } },
        ];
        const stats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0 };
        for (const [i, v] of variants.entries()) {
          await sampleProjector(store, stats)([{ seq: 10 + i, subject: `peg.sample.${JITO.mint}`, data: enc.encode(JSON.stringify(v)) }]);
          const [row] = await store.latestSnapshots();
          expect(row).toMatchObject({ version: snapshotVersion(10 + i), sol_per_lst: null, oracle: null, discount: msg.discount });
        }
        expect(stats.rejected).toBe(0);
      });

      test("circulating_supply survives writes that do not carry it; oracle json round-trips; bad decimals are refused", async () => {
        const e = market.states.filter((s) => s.mint === JITO.mint).at(-1)!;
        const base: SnapshotRow = { ...snapshotFromStateEvent(e, 1), circulating_supply: "12345678.123456789" };
        expect(await store.upsertSnapshot(base)).toBe(true);
        expect(await store.upsertSnapshot({ ...base, updated_at: base.updated_at + 1, circulating_supply: null, oracle: null })).toBe(true);
        let [row] = await store.latestSnapshots();
        expect(row).toMatchObject({ circulating_supply: "12345678.123456789", oracle: null, sol_per_lst: "1.2534" });
        expect(await store.upsertSnapshot({ ...base, updated_at: base.updated_at + 2, circulating_supply: "99" })).toBe(true);
        [row] = await store.latestSnapshots();
        expect(row).toEqual({ ...base, updated_at: base.updated_at + 2, circulating_supply: "99" });

        const badOracle = { x: { price: "1e5", conf: "0", publish_time: 0 } };
        await expect(store.upsertSnapshot({ ...base, updated_at: base.updated_at + 3, oracle: badOracle })).rejects.toThrow(RangeError);
        await expect(store.upsertSnapshot({ ...base, updated_at: base.updated_at + 3, sol_per_lst: "NaN" })).rejects.toThrow(RangeError);
      });
    });

    describe("windows24h", () => {
      test("24 hourly buckets ending at now: nulls without data, averages and jitter/worst as computed from the events", async () => {
        await project(store, market);
        for (const now of [NOW, NOW + 30 * MIN + 17_000]) {
          const windows = await rm.windows24h(now);
          expect([...windows.keys()].sort()).toEqual([USDC.mint, JITO.mint].sort());
          for (const mint of [USDC.mint, JITO.mint]) {
            const w = windows.get(mint)!;
            expect(w.series).toHaveLength(24);
            expect(w).toEqual(expectedWindow(market.states, mint, now));
          }
        }
        // At NOW the data (NOW - 2 h - 2 min .. NOW) fills the last three buckets only; the minute starting exactly
        // at NOW - 2 h closes bucket 21 ((NOW - 3 h, NOW - 2 h]).
        const usdc = (await rm.windows24h(NOW)).get(USDC.mint)!;
        expect(usdc.series.map((v) => v !== null)).toEqual([...Array<boolean>(21).fill(false), true, true, true]);
        const bucket21 = market.states.filter((e) => e.mint === USDC.mint && minuteOf(e.now) <= NOW - 2 * HOUR);
        expect(bucket21.length).toBe(3 + 6 + 6); // minutes -122 (the first 30 s: 3 samples), -121 and -120 (6 each)
        expect(usdc.series[21]).toBe(round8(bucket21.reduce((s, e) => s.plus(e.discount), new D(0)).div(bucket21.length)));
        // A window past every row reports nothing.
        expect((await rm.windows24h(NOW + 25 * HOUR)).size).toBe(0);
      });

      test("exact hand-made figures: weighting by samples, half-even rounding, bucket edges", async () => {
        const start = NOW - 24 * HOUR;
        await store.insertSamples([
          sample(USDT.mint, start, "0.5"), // minute start == now - 24 h: outside (the window is open on the left)
          sample(USDT.mint, start + HOUR, "0.001"), // bucket 0 ends exactly at start + 1 h (inclusive)
          sample(USDT.mint, start + HOUR + 10_000, "0.002"),
          sample(USDT.mint, start + HOUR + MIN, "0.004"), // bucket 1: one sample at 0.004 ...
          sample(USDT.mint, start + HOUR + 30 * MIN, "0.001"), // ... and three at 0.001 in another minute
          sample(USDT.mint, start + HOUR + 30 * MIN + 1, "0.001"),
          sample(USDT.mint, start + HOUR + 30 * MIN + 2, "0.001"),
          sample(USDT.mint, start + 2 * HOUR + 30 * MIN, "0.00000012"), // bucket 2: mean 0.000000125, a tie
          sample(USDT.mint, start + 2 * HOUR + 30 * MIN + 5, "0.00000013"),
          sample(USDT.mint, NOW - MIN, "0.001"), // bucket 23
          sample(USDT.mint, NOW, "-0.0045"), // minute start == now: inside
          sample(USDT.mint, NOW + MIN, "-0.9"), // after now: outside
        ]);
        const w = (await windows24h(store.db, NOW)).get(USDT.mint)!;
        expect(w.series.slice(0, 3)).toEqual([0.0015, 0.00175, 0.00000012]); // not 0.0025 (unweighted), not 1.3e-7 (half-up)
        expect(w.series.slice(3, 23)).toEqual(Array<null>(20).fill(null));
        expect(w.series[23]).toBe(-0.00175);
        expect(w.jitter).toBe("0.0085");
        expect(w.worst).toBe("0.0045");
      });
    });

    describe("stats", () => {
      test("delivery figures come from the attempts of the trailing 24 h (test events and older attempts excluded)", async () => {
        const user = await upsertTelegramUser(store.db, { telegram_id: 9001, username: "ops", first_name: "Ops" }, NOW - DAY);
        const w = await createWebhook(store.db, user.id, { url: "https://hooks.example.com/x", asset: "USDC", mint: USDC.mint, threshold_bps: 10, format: "signed" }, NOW - DAY);
        if (w.kind !== "ok") throw new Error(`webhook not created: ${w.kind}`);
        const base = { webhook_id: w.value.id, event_id: randomUUID(), alert_id: null, max_attempts: 6, response_status: null, error: null, request_headers: null, response_body_excerpt: null, next_attempt_at: null };
        const attempt = (status: "pending" | "delivered" | "failed" | "dead_lettered", at: number, duration: number | null, test = false, n = 1) =>
          insertDelivery(store.db, { ...base, event_id: randomUUID(), attempt: n, status, duration_ms: duration, scheduled_at: at, sent_at: status === "pending" ? null : at, test });
        await attempt("delivered", NOW - HOUR, 40);
        await attempt("delivered", NOW - 2 * HOUR, 120);
        await attempt("delivered", NOW - 3 * HOUR, 80);
        await attempt("failed", NOW - HOUR, 5000);
        await attempt("dead_lettered", NOW - MIN, 5000, false, 6);
        await attempt("pending", NOW + MIN, null, false, 2);
        await attempt("delivered", NOW - HOUR, 1, true); // a test event: not counted
        await attempt("delivered", NOW - DAY, 10); // exactly 24 h ago: outside the window
        expect((await rm.stats(NOW)).delivery).toEqual({
          attempts_24h: 5,
          delivered_24h: 3,
          failed_24h: 2,
          dead_lettered_24h: 1,
          success_rate_24h: 0.6,
          p50_latency_ms_24h: 80,
          p95_latency_ms_24h: 120,
          pending: 1,
        });
        await sql`truncate deliveries, webhooks, users restart identity cascade`.execute(store.db);
      });

      test("alerts of the trailing 24 h by target state (every state present) and the last sample instant", async () => {
        expect(await rm.stats(NOW)).toEqual({
          alerts_24h: 0,
          transitions_by_state_24h: Object.fromEntries(PEG_STATES.map((s) => [s, 0])),
          last_sample_at: null,
          delivery: {
            attempts_24h: 0,
            delivered_24h: 0,
            failed_24h: 0,
            dead_lettered_24h: 0,
            success_rate_24h: null,
            p50_latency_ms_24h: null,
            p95_latency_ms_24h: null,
            pending: 0,
          },
        });
        await project(store, market);
        const s = await rm.stats(NOW);
        expect(s.alerts_24h).toBe(5);
        expect(s.transitions_by_state_24h).toEqual({ PEGGED: 2, DRIFT: 2, DEPEG: 1, CRITICAL: 0, BLACK_SWAN: 0, UNKNOWN: 0 });
        expect(s.last_sample_at).toBe(market.states.at(-1)!.now);
        // The window is (now - 24 h, now]: an alert detected exactly 24 h before `now` is out.
        const first = parseTimestamp(ledgerOrder(market.receipts).at(-1)!.detected_at)!;
        expect((await statsCounts(store.db, first + DAY)).alerts_24h).toBe(4);
        expect((await statsCounts(store.db, first + DAY - 1)).alerts_24h).toBe(5);
        expect((await statsCounts(store.db, first - 1)).alerts_24h).toBe(0);
      });
    });

    describe("calibration", () => {
      test("percentile_disc of |avg_discount| in floor bps over 7 days, days covered of the trailing 8, transitions", async () => {
        // 20 one-sample minutes inside (NOW - 7 d, NOW], signs alternating. Sorted by magnitude (bps):
        // 0.5 .. 8.5, 15 (exactly), 16.5 .. 25.5.
        const bps = [...Array.from({ length: 9 }, (_, i) => i + 0.5), 15, ...Array.from({ length: 10 }, (_, i) => i + 16.5)];
        const day = (d: number) => Date.UTC(2026, 5, d);
        const inWindow = [day(12), day(11), day(9), day(6), NOW - 7 * DAY + MIN];
        const rows = bps.map((b, i) =>
          sample(USDT.mint, inWindow[i % inWindow.length]! + (i + 1) * MIN, wire(new D(b).div(10_000).times(i % 2 === 0 ? 1 : -1))),
        );
        rows.push(
          sample(USDT.mint, NOW - 7 * DAY, "0.9"), // 2026-06-05 12:00: in the 8 days, not in the 7-day percentiles
          sample(USDT.mint, day(5) - MIN, "0.9"), // 2026-06-04 23:59: before both
          sample(USDT.mint, NOW + MIN, "0.9"), // after now
        );
        // Module-level insertSamples without `now`: no raw-retention guard, so rows older than 7 d can be written.
        await insertSamples(store.db, rows);
        await transitionProjector(store, catalog, { projected: 0, duplicates: 0, rejected: 0 })(transitionBatch(runEngine().receipts));

        const figures = await rm.calibration(NOW);
        expect(figures.map((f) => f.mint)).toEqual(catalog.all.map((a) => a.mint).sort());
        const usdt = figures.find((f) => f.mint === USDT.mint)!;
        // 06-05 (the 12:00 row and the first in-window row at 12:01+), 06-06, 06-09, 06-11, 06-12.
        expect(usdt).toEqual({ mint: USDT.mint, days_covered: 5, p50_abs_bps_7d: 15, p95_abs_bps_7d: 24, p99_abs_bps_7d: 25, transitions_7d: 0 });
        const usdc = figures.find((f) => f.mint === USDC.mint)!;
        expect(usdc).toEqual({ mint: USDC.mint, days_covered: 0, p50_abs_bps_7d: null, p95_abs_bps_7d: null, p99_abs_bps_7d: null, transitions_7d: 2 });
        // Seven days later the transitions (2026-06-12 10:00) have left the window.
        const later = await calibrationFigures(store.db, NOW + 7 * DAY);
        expect(later.find((f) => f.mint === USDC.mint)!.transitions_7d).toBe(0);
        // Then the 8 days are 06-12 .. 06-19: only 06-12 has rows, and the 7 days (06-12 12:00, 06-19 12:00] hold just the
        // row written one minute after NOW (|0.9| = 9,000 bps).
        expect(later.find((f) => f.mint === USDT.mint)).toMatchObject({ days_covered: 1, p50_abs_bps_7d: 9000, p99_abs_bps_7d: 9000 });
      });
    });

    describe("audit", () => {
      const ordered = ledgerOrder(twins.receipts);
      const all = { from: 0, to: NOW + DAY, limit: 100 };

      test("rows join the receipt's commit status, newest first, ties broken by id", async () => {
        await project(store, twins);
        const rows = await rm.audit(all);
        expect(rows.map((r) => r.id)).toEqual(ordered.map((r) => r.alert_id));
        // Twins share their detected_at: the order inside a millisecond is by id, descending.
        expect(rows[0]!.detected_at).toBe(rows[1]!.detected_at);
        const first = ordered[0]!;
        expect(rows[0]).toEqual({
          id: first.alert_id,
          asset: first.asset,
          from_state: first.from_state,
          to_state: first.to_state,
          detected_at: parseTimestamp(first.detected_at),
          methodology_version: first.methodology_version,
          receipt_sha256: first.receipt_sha256,
          commit_status: first.to_state === "DEPEG" ? "not_committed_yet" : "not_applicable",
          monitoring_only: false,
        });
        expect(new Set(rows.filter((r) => r.to_state === "DEPEG").map((r) => r.commit_status))).toEqual(new Set(["not_committed_yet"]));
        expect(new Set(rows.filter((r) => r.to_state === "PEGGED").map((r) => r.commit_status))).toEqual(new Set(["not_applicable"]));
      });

      test("keyset pages of 3 continue without overlap or gap, across same-millisecond ties", async () => {
        await project(store, twins);
        const seen: string[] = [];
        let before: { detected_at: number; id: string } | undefined;
        for (let page = 0; page < 10; page++) {
          const rows = await rm.audit({ ...all, limit: 3, ...(before === undefined ? {} : { before }) });
          expect(rows.length).toBeLessThanOrEqual(3);
          seen.push(...rows.map((r) => r.id));
          const last = rows.at(-1);
          if (rows.length < 3 || last === undefined) break;
          before = { detected_at: last.detected_at, id: last.id };
        }
        expect(seen).toEqual(ordered.map((r) => r.alert_id));
        await expect(auditPage(store.db, { ...all, before: { detected_at: NOW, id: "not-a-uuid" } })).rejects.toThrow(RangeError);
      });

      test("filters: to_state, mint, inclusive [from, to] window", async () => {
        await project(store, twins);
        const depeg = await rm.audit({ ...all, state: "DEPEG" });
        expect(depeg.map((r) => r.id)).toEqual(ordered.filter((r) => r.to_state === "DEPEG").map((r) => r.alert_id));
        expect(depeg).toHaveLength(10);
        const usdt = await rm.audit({ ...all, mint: USDT.mint, state: "PEGGED" });
        expect(usdt.map((r) => r.id)).toEqual(
          ordered.filter((r) => r.mint === USDT.mint && r.to_state === "PEGGED").map((r) => r.alert_id),
        );
        // The window of the middle episode, bounds exactly on its first and last transitions.
        const episode = ordered.slice(8, 12);
        const from = parseTimestamp(episode.at(-1)!.detected_at)!;
        const to = parseTimestamp(episode[0]!.detected_at)!;
        expect((await rm.audit({ from, to, limit: 100 })).map((r) => r.id)).toEqual(episode.map((r) => r.alert_id));
        expect(await rm.audit({ from: from + 1, to: to - 1, limit: 100 })).toHaveLength(0);
        expect(await rm.audit({ ...all, limit: 0 })).toEqual([]);
      });

      test("latestAlertIds: the newest alert of each mint", async () => {
        expect((await rm.latestAlertIds()).size).toBe(0);
        await project(store, twins);
        await transitionProjector(store, catalog, { projected: 0, duplicates: 0, rejected: 0 })(transitionBatch(market.receipts));
        const expected = new Map<string, string>();
        for (const r of ledgerOrder([...twins.receipts, ...market.receipts])) if (!expected.has(r.mint)) expected.set(r.mint, r.alert_id);
        expect(expected.size).toBe(3);
        expect(await latestAlertIds(store.db)).toEqual(expected);
        expect(await rm.latestAlertIds()).toEqual(expected);
      });
    });

    describe("delegation", () => {
      test("alerts, receipts, history and the injected lookups", async () => {
        await project(store, market);
        const r = market.receipts[0]!;
        expect(await rm.receipt(r.alert_id)).toEqual(r);
        expect(await rm.receipt("00000000-0000-0000-0000-000000000000")).toBeUndefined();
        expect((await rm.receiptById(r.alert_id))?.receipt_sha256).toBe(r.receipt_sha256);
        expect((await rm.alertById(r.alert_id))?.to_state).toBe(r.to_state);
        expect((await rm.alerts({ limit: 10, offset: 0 })).map((a) => a.id)).toEqual(ledgerOrder(market.receipts).map((x) => x.alert_id));
        const raw = await rm.history(USDC.mint, { bucket: "raw", from: 0, to: NOW, limit: 5 });
        expect(raw).toHaveLength(5);
        expect(await rm.pendingAlert(r.alert_id)).toBe(false);
        expect(await rm.deadLettered(r.alert_id)).toBe(false);
        expect(await rm.readiness()).toEqual(readiness);
        expect(rm.catalog).toBe(catalog);
        expect(rm.clock).toBe(clock);

        const pending = createStoreReadModel({
          store,
          catalog,
          clock,
          config: rm.config,
          pendingAlert: (id) => Promise.resolve(id === "x"),
          readiness: () => Promise.resolve(readiness),
        });
        expect(await pending.pendingAlert("x")).toBe(true);
        expect(await pending.pendingAlert("y")).toBe(false);
      });
    });
  });
}

describeReadModel("pglite in memory", (clock) => openStore({ kind: "pglite-memory" }, clock));

describeWithPostgres("postgres", (url) => {
  describeReadModel("postgres", (clock) => openStore({ kind: "postgres", url: url(), max: 4 }, clock));
});
