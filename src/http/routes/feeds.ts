/** Feeds and aggregates (interface 4.3): alerts, stats, calibration, the peg feed and the methodology status. */
import { createHash } from "node:crypto";
import { systemicBody, type ExposureReader, type SystemicBody } from "../../advisory/index.ts";
import type { CatalogAsset } from "../../catalog/index.ts";
import {
  D,
  PEG_STATES,
  isCrThresholds,
  parseRelease,
  spreadEntryLevels,
  timestampToWire,
  type EpochMs,
  type MethodologyRelease,
  type PegState,
} from "../../methodology/index.ts";
import type { AlertRecord } from "../../store/index.ts";
import { listEnvelope, timestampOrNull } from "../../wire/index.ts";
import type { CalibrationFigures, ReadModel, SnapshotView } from "../read-model.ts";
import {
  ALERTS_LIMIT,
  ALERTS_OFFSET,
  AlertList,
  AlertsQueryParams,
  CalibrationList,
  MethodologyStatus,
  PegFeed,
  Stats,
  parseQuery,
  type AlertRowBody,
  type CalibrationRowBody,
  type MethodologyStatusBody,
  type PegFeedSignalBody,
  type StatsBody,
} from "../schemas/index.ts";
import type { HttpResult } from "../types.ts";
import { marketCapOf, publishedOf, riskScoreOf } from "./asset-card.ts";
import { receiptPath } from "./common.ts";
import { JSON_TYPE, jsonResult, type DocumentedRoute } from "./spec.ts";

export interface FeedRouteOptions {
  readonly wsClients?: () => number;
  /** The positions book behind each signal's advisory `systemic` block; absent: no signal carries one. */
  readonly advisory?: ExposureReader;
}

export function alertRow(a: AlertRecord): AlertRowBody {
  return {
    id: a.id,
    asset: a.asset,
    mint: a.mint,
    class: a.class,
    from_state: a.from_state,
    to_state: a.to_state,
    discount: a.discount,
    discount_bps: a.discount_bps,
    ...(a.state_reason === null ? {} : { state_reason: a.state_reason }),
    detected_at: timestampToWire(a.detected_at),
    dispatched_at: timestampOrNull(a.dispatched_at),
    methodology_version: a.methodology_version,
    receipt_url: receiptPath(a.id),
    monitoring_only: a.monitoring_only,
    calibration: a.calibration === "provisional" ? "provisional" : "calibrated",
  };
}

const zeroStates = (): Record<PegState, number> => Object.fromEntries(PEG_STATES.map((s) => [s, 0])) as Record<PegState, number>;

/** ceil(p99 x 1.25), exactly (decimal, not float). */
export function suggestedDriftBps(p99: number | null): number | null {
  return p99 === null ? null : new D(p99).times("1.25").ceil().toNumber();
}

/**
 * One calibration row (addendum A) from the store's figures. Without figures or rows: `days_covered` 0 (or what the
 * store counted), the three percentiles and `suggested_drift_bps` null, `transitions_7d` as counted, `status` "ok"
 * (nothing shows the asset noisy). A collateral-ratio asset has no drift_bps to compare against: always "ok".
 */
export function calibrationRow(a: CatalogAsset, f: CalibrationFigures | undefined): CalibrationRowBody {
  const p95 = f?.p95_abs_bps_7d ?? null;
  const p99 = f?.p99_abs_bps_7d ?? null;
  // The collateral-ratio asset's discount does not drive its band: it is never "noisy" against a spread threshold.
  const drift = isCrThresholds(a.thresholds) ? null : spreadEntryLevels(a.thresholds).drift;
  return {
    asset: a.symbol,
    class: a.class,
    calibration: a.calibration,
    monitoring_only: a.monitoringOnly,
    ...(a.monitoringOnly && a.monitoringReason !== null ? { monitoring_reason: a.monitoringReason } : {}),
    ...(a.monitoringOnly && a.monitoringSince !== null ? { monitoring_since: a.monitoringSince } : {}),
    thresholds: a.thresholds as CalibrationRowBody["thresholds"],
    days_covered: f?.days_covered ?? 0,
    p50_abs_bps_7d: f?.p50_abs_bps_7d ?? null,
    p95_abs_bps_7d: p95,
    p99_abs_bps_7d: p99,
    transitions_7d: f?.transitions_7d ?? 0,
    suggested_drift_bps: suggestedDriftBps(p99),
    status: drift !== null && p95 !== null && p95 > drift ? "noisy" : "ok",
  };
}

/** One feed signal; `systemic` (advisory, interface 2.8) is omitted, not null, when no leverage is tracked. */
export function pegSignal(a: CatalogAsset, snap: SnapshotView | undefined, latestAlert: string | undefined, now: EpochMs, systemic?: SystemicBody): PegFeedSignalBody {
  const p = snap === undefined ? null : publishedOf(snap, now);
  return {
    mint: a.mint,
    symbol: a.symbol,
    state: p?.state ?? "UNKNOWN",
    ...(p?.stateReason == null ? {} : { state_reason: p.stateReason }),
    discount: snap?.discount ?? null,
    intrinsic_usd: snap?.intrinsic_usd ?? null,
    market_usd: snap?.market_usd ?? null,
    risk_score: p === null ? null : riskScoreOf(a, p),
    market_cap: marketCapOf(snap),
    calibration: a.calibration,
    monitoring_only: a.monitoringOnly,
    stale: p === null || p.stale,
    receipt_url: latestAlert === undefined ? null : receiptPath(latestAlert),
    updated_at: snap === undefined ? null : timestampToWire(snap.updated_at),
    ...(systemic === undefined ? {} : { systemic }),
  };
}

/** Whether an If-None-Match header matches `etag` (weak comparison, RFC 9110 13.1.2). */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const bare = (t: string): string => t.trim().replace(/^W\//, "");
  return header.split(",").some((t) => t.trim() === "*" || bare(t) === etag);
}

/**
 * The /v1/methodology/current body (interface 2.12) of a lifecycle registry entry, checked again here because a
 * caller may hand in any object: `fix_url` is present only when broken (and then always).
 */
export function methodologyStatus(release: MethodologyRelease): MethodologyStatusBody {
  const r = parseRelease(release);
  return {
    version: r.version,
    status: r.status,
    git_tag: r.git_tag,
    released_at: r.released_at,
    status_reason: r.status_reason,
    superseded_by: r.superseded_by,
    ...(r.status === "broken" && r.fix_url !== null ? { fix_url: r.fix_url } : {}),
  };
}

/**
 * The feed, calibration, stats and alert routes. The methodology status and the feed envelope's `methodology` come
 * from the lifecycle registry entry in `rm.config.methodology` (shipped registry or METHODOLOGY_REGISTRY).
 */
export function feedRoutes(rm: ReadModel, opts: FeedRouteOptions = {}): DocumentedRoute[] {
  const methodology = methodologyStatus(rm.config.methodology);
  /** The last served feed: reused while its content is unchanged, so its bytes (and strong ETag) stay identical. */
  let feedMemo: { readonly content: string; readonly body: Buffer; readonly etag: string; headers: Readonly<Record<string, string>> | null } | null = null;
  let feedInputs: { readonly at: number; readonly snaps: unknown; readonly latest: unknown; readonly advisory: unknown } | null = null;

  /** The feed for these inputs: the same snapshot and alert maps within a second give the same signals (not rebuilt). */
  function feedAnswer(ifNoneMatch: string | undefined, snaps: ReadonlyMap<string, SnapshotView>, latest: ReadonlyMap<string, string>): HttpResult {
    const now = rm.clock.now();
    const adv = opts.advisory?.snapshot() ?? null;
    if (feedInputs === null || feedInputs.snaps !== snaps || feedInputs.latest !== latest || feedInputs.advisory !== adv || now - feedInputs.at >= 1_000 || now < feedInputs.at) {
      const systemic = (mint: string) => (adv === null ? undefined : systemicBody(adv.byMint.get(mint), adv.updatedAt));
      const data = rm.catalog.active.map((a) => pegSignal(a, snaps.get(a.mint), latest.get(a.mint), now, systemic(a.mint)));
      const content = JSON.stringify(data);
      if (feedMemo === null || feedMemo.content !== content) {
        const body = Buffer.from(JSON.stringify(listEnvelope(data, now, { methodology: methodology.version })));
        feedMemo = { content, body, etag: `"${createHash("sha256").update(body).digest("hex")}"`, headers: null };
      }
      feedInputs = { at: now, snaps, latest, advisory: adv };
    }
    if (feedMemo === null) throw new Error("unreachable: the feed memo is built above");
    const headers = (feedMemo.headers ??= { etag: feedMemo.etag, "cache-control": "no-cache" });
    if (ifNoneMatchHits(ifNoneMatch, feedMemo.etag)) return { status: 304, headers };
    return { status: 200, headers, text: feedMemo.body, contentType: JSON_TYPE };
  }

  return [
    {
      method: "GET",
      path: "/v1/alerts",
      handler: async (req) => {
        const q = parseQuery(req.query, AlertsQueryParams);
        const rows = await rm.alerts({
          ...(q.since === undefined ? {} : { since: q.since }),
          limit: q.limit ?? ALERTS_LIMIT.default,
          offset: q.offset ?? ALERTS_OFFSET.default,
        });
        return jsonResult(200, listEnvelope(rows.map(alertRow), rm.clock.now()));
      },
      spec: {
        summary: "State transitions",
        description: "Every published transition, newest first, monitoring-only assets included and labelled. Walk with `since`, `limit` and `offset`.",
        tags: ["feeds"],
        query: AlertsQueryParams,
        responses: { 200: AlertList },
        errors: ["invalid_query"],
      },
    },
    {
      method: "GET",
      path: "/v1/stats",
      handler: async () => {
        const now = rm.clock.now();
        const [snaps, counts] = await Promise.all([rm.snapshots(), rm.stats(now)]);
        const byState = zeroStates();
        for (const a of rm.catalog.active) {
          const snap = snaps.get(a.mint);
          byState[snap === undefined ? "UNKNOWN" : publishedOf(snap, now).state]++;
        }
        const transitions = zeroStates();
        for (const [k, v] of Object.entries(counts.transitions_by_state_24h)) {
          if ((PEG_STATES as readonly string[]).includes(k)) transitions[k as PegState] = v;
        }
        const body: StatsBody = {
          generated_at: timestampToWire(now),
          assets_tracked: rm.catalog.active.length,
          assets_by_state: byState,
          alerts_24h: counts.alerts_24h,
          transitions_by_state_24h: transitions,
          last_sample_at: timestampOrNull(counts.last_sample_at),
          ws_clients: opts.wsClients?.() ?? 0,
          delivery: { ...counts.delivery },
        };
        return jsonResult(200, body);
      },
      spec: {
        summary: "Aggregate counters",
        description: "Assets by published state (stale snapshots count as UNKNOWN), transitions and delivery health over the trailing 24 h, live WebSocket clients.",
        tags: ["feeds"],
        responses: { 200: Stats },
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/v1/calibration",
      handler: async () => {
        const now = rm.clock.now();
        const figures = new Map((await rm.calibration(now)).map((f) => [f.mint, f] as const));
        const data = rm.catalog.active.map((a) => calibrationRow(a, figures.get(a.mint)));
        return jsonResult(200, listEnvelope(data, now));
      },
      spec: {
        summary: "Threshold calibration",
        description:
          "Per active asset, the trailing-7-day |discount| distribution of its 1-minute rows against its thresholds: nearest-rank p50/p95/p99 in floor bps, suggested_drift_bps = ceil(p99 x 1.25), status `noisy` when p95 is above the drift threshold. Without rows the percentiles and the suggestion are null and the status is `ok`.",
        tags: ["feeds"],
        responses: { 200: CalibrationList },
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/v1/peg/feed",
      handler: (req): HttpResult | Promise<HttpResult> => {
        const snaps = rm.peekSnapshots?.();
        const latest = rm.peekLatestAlertIds?.();
        if (snaps !== undefined && latest !== undefined) return feedAnswer(req.headers["if-none-match"], snaps, latest);
        return Promise.all([rm.snapshots(), rm.latestAlertIds()]).then(([s, l]) => feedAnswer(req.headers["if-none-match"], s, l));
      },
      spec: {
        summary: "Peg feed",
        description:
          "One signal per active asset, `methodology` on the envelope. The strong ETag is the quoted SHA-256 of the body; the body (and its generated_at) is reused while the signals are unchanged, so If-None-Match answers 304 with no body.",
        tags: ["feeds"],
        responses: {
          200: { schema: PegFeed, headers: { ETag: { type: "string", description: "Quoted SHA-256 of the body." } } },
          304: { schema: null, description: "Not modified: If-None-Match matched the current ETag.", headers: { ETag: { type: "string", description: "The current ETag." } } },
        },
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/v1/methodology/current",
      handler: () => jsonResult(200, methodology),
      spec: {
        summary: "Methodology status",
        description: "Version, lifecycle status and release of the methodology this deployment implements. `fix_url` only when broken.",
        tags: ["feeds"],
        responses: { 200: MethodologyStatus },
        errors: [],
      },
    },
  ];
}
