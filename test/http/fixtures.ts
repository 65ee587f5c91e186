/**
 * An in-memory ReadModel with fixed data for the route tests: hand-written snapshots (fresh, stale, an LST, the
 * collateral-ratio asset, oracle annotations) and genuine receipts from running the real engine (ActorHost on a
 * SimulatedClock).
 */
import { ActorHost, type MachineView, type TransitionEvent } from "../../src/actors/index.ts";
import { loadShippedCatalog, type CatalogAsset } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { parseConfig } from "../../src/config.ts";
import type {
  AuditQuery,
  AuditRow,
  CalibrationFigures,
  ReadModel,
  Readiness,
  SnapshotView,
  StatsCounts,
  Window24h,
} from "../../src/http/read-model.ts";
import { D, parseTimestamp, type EpochMs, type Receipt, type Sample } from "../../src/methodology/index.ts";
import type { AlertRecord, HistoryQuery, MinuteHistoryRow, RawHistoryRow, StoredReceipt } from "../../src/store/index.ts";

export const catalog = loadShippedCatalog();
export const asset = (symbol: string): CatalogAsset => {
  const a = catalog.bySymbol(symbol);
  if (a === undefined) throw new Error(`no ${symbol} in the catalog`);
  return a;
};

/** 2026-06-12T12:00:00.000Z */
export const NOW = Date.UTC(2026, 5, 12, 12, 0, 0);
export const SEC = 1000;
export const MIN = 60 * SEC;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;

export const PENDING_ID = "0f0e0d0c-0b0a-8908-8706-050403020100";
export const DEAD_ID = "11111111-2222-8333-8444-555555555555";
export const UNKNOWN_ID = "99999999-9999-8999-8999-999999999999";

// ---------------------------------------------------------------------------------------------------------------
// Genuine receipts from the engine.

function sampleOf(symbol: string, ts: EpochMs, intrinsic: string, market: string): Sample {
  return {
    asset: symbol,
    ts,
    intrinsic_usd: new D(intrinsic),
    market_usd: new D(market),
    intrinsic_sol: null,
    market_sol: null,
    cr: null,
    oracle: {},
    intrinsic_stale: false,
  };
}

/**
 * USDC: par, 0.99 for 40 s (escalates through the dwell), par for 400 s (relaxes back). USDT: 0.997 for 40 s (DRIFT),
 * then left there. jitoSOL: par, then a 50 %
 * premium print (premium_sanity gate: UNKNOWN), then par again. Starts two hours before NOW.
 */
/** A live actor view of USDC with a dwelling DEPEG candidate (what the engine answers to `peg.machine.<mint>`). */
export function usdcMachineView(): MachineView {
  const clock = new SimulatedClock(NOW - 10 * SEC);
  const host = new ActorHost({ assets: [asset("USDC")], clock, gitSha: "" });
  host.ingest(sampleOf("USDC", clock.now(), "1", "1"));
  for (let i = 0; i < 5; i++) {
    clock.increment(SEC);
    host.ingest(sampleOf("USDC", clock.now(), "1", "0.97"));
  }
  host.ingest(sampleOf("USDC", clock.now(), "1", "0"));
  const view = host.inspect("USDC")!;
  host.stop();
  return view;
}

/** Every active asset's actor as the engine would answer: cold, except USDC (dwelling, see usdcMachineView). */
function machineViews(): Map<string, MachineView> {
  const host = new ActorHost({ assets: catalog.active, clock: new SimulatedClock(NOW), gitSha: "" });
  const views = new Map(catalog.active.map((a) => [a.mint, host.inspect(a.mint)!] as const));
  host.stop();
  views.set(asset("USDC").mint, usdcMachineView());
  return views;
}

export function runEngine(start = NOW - 2 * HOUR): Receipt[] {
  const clock = new SimulatedClock(start);
  const host = new ActorHost({ assets: [asset("USDC"), asset("USDT"), asset("jitoSOL")], clock, gitSha: "" });
  const receipts: Receipt[] = [];
  const sub = host.events$.subscribe((e) => {
    if (e.kind === "transition") receipts.push((e as TransitionEvent).receipt);
  });
  host.ingest(sampleOf("USDC", clock.now(), "1", "1"));
  host.ingest(sampleOf("USDT", clock.now(), "1", "1"));
  host.ingest(sampleOf("jitoSOL", clock.now(), "150", "150"));
  clock.increment(SEC);
  for (let i = 0; i < 40; i++) {
    host.ingest(sampleOf("USDC", clock.now(), "1", "0.99"));
    host.ingest(sampleOf("USDT", clock.now(), "1", "0.997"));
    clock.increment(SEC);
  }
  host.ingest(sampleOf("jitoSOL", clock.now(), "150", "225"));
  clock.increment(SEC);
  for (let i = 0; i < 400; i++) {
    host.ingest(sampleOf("USDC", clock.now(), "1", "1"));
    if (i < 10) host.ingest(sampleOf("jitoSOL", clock.now(), "150", "150"));
    clock.increment(SEC);
  }
  sub.unsubscribe();
  host.stop();
  return receipts;
}

const ANCHORED = new Set(["DEPEG", "CRITICAL", "BLACK_SWAN"]);

export function alertOf(r: Receipt): AlertRecord {
  const a = catalog.byMint(r.mint)!;
  return {
    id: r.alert_id,
    asset: r.asset,
    mint: r.mint,
    class: r.inputs_frozen.class,
    from_state: r.from_state,
    to_state: r.to_state,
    discount: r.discount,
    discount_bps: r.discount_bps,
    state_reason: r.state_reason,
    detected_at: parseTimestamp(r.detected_at)!,
    dispatched_at: null,
    methodology_version: r.methodology_version,
    monitoring_only: a.monitoringOnly,
    calibration: a.calibration,
    receipt_sha256: r.receipt_sha256,
    seq: null,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Snapshots.

function snap(symbol: string, s: Partial<SnapshotView>): SnapshotView {
  return {
    mint: asset(symbol).mint,
    state: "PEGGED",
    band: "PEGGED",
    gate: null,
    state_reason: null,
    discount: "0",
    discount_raw: "0",
    intrinsic_usd: "1",
    market_usd: "1",
    confidence: "medium",
    committed_since: null,
    published_since: null,
    updated_at: NOW - 2 * SEC,
    version: 1,
    sol_per_lst: null,
    oracle: null,
    circulating_supply: null,
    ...s,
  };
}

export function snapshots(): Map<string, SnapshotView> {
  const list = [
    // Fresh DRIFT held 1000 s (> 900: sustained); the oracle cross-check diverges by 30 bps (drift is 15).
    snap("USDC", {
      state: "DRIFT",
      band: "DRIFT",
      discount: "0.003",
      discount_raw: "0.0031",
      market_usd: "0.997",
      confidence: "high",
      committed_since: NOW - 1000 * SEC,
      published_since: NOW - 1000 * SEC,
      oracle: { "USDC/USD": { price: "1", conf: "0.0002", publish_time: NOW - 5 * SEC } },
      circulating_supply: "1000000.123456",
    }),
    // Last written 16 minutes ago: collapsed to UNKNOWN / stale_source.
    snap("USDT", { state: "DRIFT", band: "DRIFT", discount: "0.002", market_usd: "0.998", committed_since: NOW - HOUR, updated_at: NOW - 16 * MIN }),
    // LST at a small premium (carve-out: PEGGED, risk 0).
    snap("jitoSOL", {
      discount: "-0.0012",
      discount_raw: "-0.0013",
      intrinsic_usd: "185.2",
      market_usd: "185.42224",
      sol_per_lst: "1.2345",
      confidence: "medium",
    }),
    // Collateral-ratio thresholds: risk_score is always null.
    snap("hyUSD", { state: "DRIFT", band: "DRIFT", discount: "0.001", market_usd: "0.999", committed_since: NOW - 60 * SEC }),
    snap("USD*", { discount: "0.0004", intrinsic_usd: "1.0412", market_usd: "1.04078352", circulating_supply: "5000" }),
    // UNKNOWN by the oracle-confidence gate: no oracle_degraded even though the confidence is wide.
    snap("USDY", {
      state: "UNKNOWN",
      band: "PEGGED",
      gate: "oracle_confidence",
      discount: "0.0001",
      confidence: "low",
      oracle: { "USDY/USD": { price: "1.1", conf: "0.09", publish_time: NOW - 3 * SEC } },
    }),
    // Cross-check feed published two minutes ago (staleness 30 s) with a wide confidence (200 bps).
    snap("EURC", {
      intrinsic_usd: "1.08",
      market_usd: "1.0801",
      discount: "-0.0000925925925925925925925925925926",
      oracle: { "EURC/USD": { price: "1.08", conf: "0.0216", publish_time: NOW - 2 * MIN } },
    }),
    // Inactive asset: served nowhere.
    snap("BRZ", {}),
  ];
  return new Map(list.map((s) => [s.mint, s]));
}

export function windows(): Map<string, Window24h> {
  const series = Array.from({ length: 24 }, (_, i) => (i < 2 ? null : Number((0.0001 * i).toFixed(8))));
  return new Map([[asset("USDC").mint, { series, jitter: "0.0042", worst: "0.0051" }]]);
}

// ---------------------------------------------------------------------------------------------------------------
// The fake.

export interface FakeReadModel extends ReadModel {
  readonly clock: SimulatedClock;
  snapshotMap: Map<string, SnapshotView>;
  readinessState: Readiness;
  /** What the engine answers per mint (absent: no engine runs it). Null: no engine answers at all. */
  machines: Map<string, MachineView> | null;
  readonly receipts: Receipt[];
  readonly alertList: AlertRecord[];
  readonly stored: Map<string, StoredReceipt>;
  readonly historyCalls: { mint: string; q: HistoryQuery }[];
  readonly auditCalls: AuditQuery[];
  readonly alertCalls: { since?: EpochMs; mint?: string; limit: number; offset: number }[];
}

export interface FakeReadModelOptions {
  /**
   * Where the clock starts (epoch ms; default NOW). Only the clock moves: the fixture data (snapshots, receipts,
   * history) stay dated relative to NOW.
   */
  readonly now?: number;
}

/** `env`: extra configuration variables (e.g. JWT_SECRET for the account routes). */
export function fakeReadModel(env: Readonly<Record<string, string>> = {}, opts: FakeReadModelOptions = {}): FakeReadModel {
  const receipts = runEngine();
  const alertList = receipts.map(alertOf);
  const stored = new Map<string, StoredReceipt>(
    receipts.map((r) => [
      r.alert_id,
      {
        receipt: JSON.parse(JSON.stringify(r)) as Receipt,
        receipt_sha256: r.receipt_sha256,
        commit_status: ANCHORED.has(r.to_state) ? "not_committed_yet" : "not_applicable",
        monitoring_only: catalog.byMint(r.mint)!.monitoringOnly,
      },
    ]),
  );
  const byNewest = (a: { detected_at: number; id: string }, b: { detected_at: number; id: string }) =>
    b.detected_at - a.detected_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

  const rm: FakeReadModel = {
    catalog,
    clock: new SimulatedClock(opts.now ?? NOW),
    config: parseConfig({ WEBHOOK_IPS: "203.0.113.7,2001:db8::1", ...env }),
    snapshotMap: snapshots(),
    readinessState: { database: true, nats: true, engine: true, snapshot_age_secs: 2 },
    machines: machineViews(),
    receipts,
    alertList,
    stored,
    historyCalls: [],
    auditCalls: [],
    alertCalls: [],
    snapshots: async () => rm.snapshotMap,
    windows24h: async () => windows(),
    history: async (mint, q) => {
      rm.historyCalls.push({ mint, q });
      if (mint !== asset("USDC").mint) return [];
      if (q.bucket === "raw") {
        const raw: RawHistoryRow[] = [0, 1, 2].map((i) => ({
          ts: q.to - i * SEC,
          discount: "0.003",
          discount_raw: `0.00${3 + i}`,
          state: "DRIFT",
          market_usd: "0.997",
          intrinsic_usd: "1",
        }));
        return raw.slice(0, q.limit);
      }
      const minute: MinuteHistoryRow[] = [0, 1].map((i) => ({
        ts: NOW - (i + 1) * MIN,
        discount: "0.0029",
        min_discount: "0.0021",
        max_discount: "0.0035",
        samples: 60,
        state: "DRIFT",
        discount_raw: null,
      }));
      return minute.slice(0, q.limit);
    },
    alerts: async (q) => {
      rm.alertCalls.push(q);
      return alertList
        .filter((a) => (q.since === undefined || a.detected_at >= q.since) && (q.mint === undefined || a.mint === q.mint))
        .sort(byNewest)
        .slice(q.offset, q.offset + q.limit);
    },
    alertById: async (id) => alertList.find((a) => a.id === id),
    receiptById: async (id) => stored.get(id),
    latestAlertIds: async () => {
      const out = new Map<string, string>();
      for (const a of [...alertList].sort(byNewest)) if (!out.has(a.mint)) out.set(a.mint, a.id);
      return out;
    },
    pendingAlert: async (id) => id === PENDING_ID,
    deadLettered: async (id) => id === DEAD_ID,
    stats: async (): Promise<StatsCounts> => ({
      alerts_24h: alertList.length,
      transitions_by_state_24h: { DRIFT: 2, PEGGED: 3, BOGUS: 7 },
      last_sample_at: NOW - SEC,
      delivery: {
        attempts_24h: 10,
        delivered_24h: 9,
        failed_24h: 1,
        dead_lettered_24h: 0,
        success_rate_24h: 0.9,
        p50_latency_ms_24h: 120,
        p95_latency_ms_24h: 480.5,
        pending: 0,
      },
    }),
    calibration: async (): Promise<CalibrationFigures[]> => [
      // Integer bps, as the store's floor(|discount| x 10000) gives them: 19 x 1.25 = 23.75 -> 24, 9 x 1.25 = 11.25 -> 12.
      { mint: asset("USDC").mint, days_covered: 8, p50_abs_bps_7d: 2, p95_abs_bps_7d: 16, p99_abs_bps_7d: 19, transitions_7d: 4 },
      { mint: asset("USDT").mint, days_covered: 3, p50_abs_bps_7d: 1, p95_abs_bps_7d: 3, p99_abs_bps_7d: 9, transitions_7d: 0 },
    ],
    audit: async (q) => {
      rm.auditCalls.push(q);
      const rows: AuditRow[] = alertList
        .filter((a) => q.state === undefined || a.to_state === q.state)
        .filter((a) => q.mint === undefined || a.mint === q.mint)
        .filter((a) => a.detected_at >= q.from && a.detected_at <= q.to)
        .filter((a) => q.before === undefined || byNewest(a, { detected_at: q.before.detected_at, id: q.before.id }) > 0)
        .sort(byNewest)
        .map((a) => ({
          id: a.id,
          asset: a.asset,
          from_state: a.from_state,
          to_state: a.to_state,
          detected_at: a.detected_at,
          methodology_version: a.methodology_version,
          receipt_sha256: a.receipt_sha256,
          commit_status: stored.get(a.id)!.commit_status,
          monitoring_only: a.monitoring_only,
        }));
      return rows.slice(0, q.limit);
    },
    readiness: async () => rm.readinessState,
    machine: async (mint) => {
      if (rm.machines === null) return { kind: "unavailable", reason: "no responders" };
      const view = rm.machines.get(mint);
      return view === undefined ? { kind: "unknown" } : { kind: "ok", view };
    },
    receipt: async (id) => stored.get(id)?.receipt,
  };
  return rm;
}
