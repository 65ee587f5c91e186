/** Asset routes (interface 4.2): the card list, one card by symbol or mint, the state object and history. */
import { ApiError, invalidQuery } from "../errors.ts";
import type { ReadModel, SnapshotView } from "../read-model.ts";
import {
  AssetCard,
  AssetList,
  AssetListQuery,
  AssetState,
  HISTORY_DEFAULT_WINDOW_MS,
  HISTORY_LIMIT,
  HistoryList,
  HistoryQueryParams,
  PathParams,
  parseQuery,
  type AssetCardBody,
} from "../schemas/index.ts";
import { listEnvelope, timestampToWire } from "../../wire/index.ts";
import type { CatalogAsset } from "../../catalog/index.ts";
import type { MinuteHistoryRow, RawHistoryRow } from "../../store/index.ts";
import { buildAssetCard, buildAssetState, isStale } from "./asset-card.ts";
import { activeAsset, cardContext, clamp } from "./common.ts";
import { JSON_TYPE, jsonResult, type DocumentedRoute } from "./spec.ts";
import type { HttpResult } from "../types.ts";

/** How long the full card list is reused (interface part 8: "Asset list cache 5 seconds"), on the injected clock. */
const DAY_MS = 86_400_000;

/**
 * What a history window reaches of what is kept (HISTORY_RAW_DAYS / HISTORY_1M_DAYS back from now): when it starts
 * before the oldest instant kept, `x-history-kept-from` names that instant; when it ends before it, the answer is the
 * empty list without a store read, and `x-history-reason` says why, so an empty page does not read as "no data". The
 * body is what it always was (the list envelope): the client package's generated types are unchanged.
 */
function keptHeaders(rm: ReadModel, bucket: "raw" | "1m", from: number, to: number, now: number): { headers?: Record<string, string>; before: boolean } {
  const days = bucket === "raw" ? rm.config.history.rawDays : rm.config.history.rollupDays;
  const keptFrom = now - days * DAY_MS;
  if (from >= keptFrom) return { before: false };
  const headers: Record<string, string> = { "x-history-kept-from": timestampToWire(keptFrom) };
  if (to >= keptFrom) return { headers, before: false };
  const other = bucket === "raw" ? `; bucket=1m keeps ${rm.config.history.rollupDays} days` : "";
  headers["x-history-reason"] = `bucket=${bucket} history is kept for ${days} days: this window ends before ${timestampToWire(keptFrom)}${other}`;
  return { headers, before: true };
}

export const ASSET_LIST_TTL_MS = 5_000;

export function assetRoutes(rm: ReadModel): DocumentedRoute[] {
  let memo: { readonly at: number; readonly cards: Promise<AssetCardBody[]> } | null = null;
  /** The unfiltered list of the current memo as UTF-8 bytes: the common request is answered without serialising. */
  let listText: { readonly at: number; readonly text: Buffer } | null = null;

  async function buildCards(now: number): Promise<AssetCardBody[]> {
    const [snaps, windows] = await Promise.all([rm.snapshots(), rm.windows24h(now)]);
    const ctx = cardContext(rm, now);
    return rm.catalog.active.map((a) => buildAssetCard(a, snaps.get(a.mint), windows.get(a.mint), ctx));
  }

  /** The memoised card list of every active asset: rebuilt at most once per 5 s; a failed build is not kept. */
  async function cards(): Promise<{ at: number; cards: AssetCardBody[] }> {
    const now = rm.clock.now();
    if (memo === null || now - memo.at >= ASSET_LIST_TTL_MS || now < memo.at) {
      const entry = { at: now, cards: buildCards(now) };
      memo = entry;
      entry.cards.catch(() => {
        if (memo === entry) memo = null;
      });
    }
    return { at: memo.at, cards: await memo.cards };
  }

  async function listAnswer(q: { class?: string | undefined; peg?: string | undefined }): Promise<HttpResult> {
    const { at, cards: all } = await cards();
    if (q.class === undefined && q.peg === undefined) {
      if (listText === null || listText.at !== at) listText = { at, text: Buffer.from(JSON.stringify(listEnvelope(all, at))) };
      return { status: 200, text: listText.text, contentType: JSON_TYPE };
    }
    let data = all;
    if (q.class !== undefined) data = data.filter((c) => c.class === q.class);
    if (q.peg !== undefined) data = data.filter((c) => c.state === q.peg);
    return jsonResult(200, listEnvelope(data, at));
  }

  async function detailCard(a: CatalogAsset): Promise<AssetCardBody> {
    const now = rm.clock.now();
    const [snaps, windows] = await Promise.all([rm.snapshots(), rm.windows24h(now)]);
    return buildAssetCard(a, snaps.get(a.mint), windows.get(a.mint), cardContext(rm, now), true);
  }

  /**
   * The serialised state of a snapshot, fresh and stale-collapsed: the body depends only on the snapshot and on
   * whether it is past the staleness horizon, so it is built once per snapshot, not once per request.
   */
  const stateMemo = new WeakMap<SnapshotView, { fresh?: Buffer | null; stale?: Buffer | null }>();
  function stateText(a: CatalogAsset, snap: SnapshotView | undefined, now: number): Buffer | null {
    if (snap === undefined) return null;
    let m = stateMemo.get(snap);
    if (m === undefined) stateMemo.set(snap, (m = {}));
    const key = isStale(snap, now) ? "stale" : "fresh";
    let text = m[key];
    if (text === undefined) {
      const body = buildAssetState(a, snap, now);
      m[key] = text = body === null ? null : Buffer.from(JSON.stringify(body));
    }
    return text;
  }

  const symbolParam = { symbol: PathParams.symbol };

  return [
    {
      method: "GET",
      path: "/v1/assets",
      handler: (req) => {
        const q = parseQuery(req.query, AssetListQuery);
        // The common request (no filter, list already serialised within its 5 s) is answered synchronously.
        const now = rm.clock.now();
        if (q.class === undefined && q.peg === undefined && memo !== null && listText !== null && listText.at === memo.at && now - memo.at < ASSET_LIST_TTL_MS && now >= memo.at) {
          return { status: 200, text: listText.text, contentType: JSON_TYPE };
        }
        return listAnswer(q);
      },
      spec: {
        summary: "List active assets",
        description:
          "Every active asset's card, including series_24h and monitoring-only assets. Not paginated. Memoised for 5 s (generated_at is the build time of the memoised list).",
        tags: ["assets"],
        query: AssetListQuery,
        responses: { 200: AssetList },
        errors: ["invalid_query"],
      },
    },
    {
      method: "GET",
      path: "/v1/assets/by-mint/{mint}",
      handler: async (req) => {
        const mint = req.params["mint"] ?? "";
        const a = rm.catalog.byMint(mint);
        // `asset` is the offending symbol (interface 2.6): a mint no catalog entry has names no symbol, so it is omitted.
        if (a === undefined || !a.active) throw new ApiError("asset_not_found", `no active asset has mint "${mint.slice(0, 64)}"`, a === undefined ? {} : { asset: a.symbol });
        return jsonResult(200, await detailCard(a));
      },
      spec: {
        summary: "One asset by mint",
        description:
          "The same card as by symbol. 404 `asset_not_found` when no active asset has that mint; its `asset` names the symbol of an inactive catalog asset with that mint and is omitted for a mint the catalog does not have.",
        tags: ["assets"],
        params: { mint: PathParams.mint },
        responses: { 200: AssetCard },
        errors: ["asset_not_found", "invalid_query"],
      },
    },
    {
      method: "GET",
      path: "/v1/assets/{symbol}",
      handler: async (req) => jsonResult(200, await detailCard(activeAsset(rm, req.params["symbol"] ?? ""))),
      spec: {
        summary: "One asset by symbol",
        description: "The AssetCard with series_24h and, when an oracle annotation fires, oracle_degraded. The symbol is exact and case-sensitive; an unknown or inactive one is a 404 `asset_not_found`.",
        tags: ["assets"],
        params: symbolParam,
        responses: { 200: AssetCard },
        errors: ["asset_not_found", "invalid_query"],
      },
    },
    {
      method: "GET",
      path: "/v1/assets/{symbol}/state",
      handler: (req) => {
        const a = activeAsset(rm, req.params["symbol"] ?? "");
        const answer = (snaps: ReadonlyMap<string, SnapshotView>): HttpResult => {
          const text = stateText(a, snaps.get(a.mint), rm.clock.now());
          if (text === null) throw new ApiError("not_found", `no snapshot of ${a.symbol} yet`, { asset: a.symbol });
          return { status: 200, text, contentType: JSON_TYPE };
        };
        const cached = rm.peekSnapshots?.();
        return cached !== undefined ? answer(cached) : rm.snapshots().then(answer);
      },
      spec: {
        summary: "Latest state of one asset",
        description: "404 `asset_not_found` for an unknown symbol; 404 `not_found` (with `asset`) when the asset has no snapshot yet.",
        tags: ["assets"],
        params: symbolParam,
        responses: { 200: AssetState },
        errors: ["asset_not_found", "not_found", "invalid_query"],
      },
    },
    {
      method: "GET",
      path: "/v1/assets/{symbol}/history",
      handler: async (req) => {
        const a = activeAsset(rm, req.params["symbol"] ?? "");
        const q = parseQuery(req.query, HistoryQueryParams);
        const now = rm.clock.now();
        const to = q.to ?? now;
        const from = q.from ?? to - HISTORY_DEFAULT_WINDOW_MS;
        if (from > to) throw invalidQuery("from must not be after to");
        const bucket = q.bucket ?? "1m";
        const kept = keptHeaders(rm, bucket, from, to, now);
        const limit = clamp(q.limit ?? HISTORY_LIMIT.default, HISTORY_LIMIT.min, HISTORY_LIMIT.max);
        const rows = kept.before ? [] : await rm.history(a.mint, { bucket, from, to, limit });
        const data: readonly unknown[] =
          bucket === "raw"
            ? (rows as RawHistoryRow[]).map((r) => ({
                ts: timestampToWire(r.ts),
                discount: r.discount,
                discount_raw: r.discount_raw,
                state: r.state,
                market_usd: r.market_usd,
                intrinsic_usd: r.intrinsic_usd,
              }))
            : (rows as MinuteHistoryRow[]).map((r) => ({
                ts: timestampToWire(r.ts),
                discount: r.discount,
                min_discount: r.min_discount,
                max_discount: r.max_discount,
                samples: r.samples,
                state: r.state,
                discount_raw: null,
              }));
        return jsonResult(200, listEnvelope(data, now), kept.headers);
      },
      spec: {
        summary: "History of one asset",
        description: "Newest first. `raw` rows: {ts, discount (smoothed), discount_raw, state, market_usd, intrinsic_usd}; `1m` rows: {ts (minute start), discount (average), min_discount, max_discount, samples, state (last in minute), discount_raw: null}.",
        tags: ["assets"],
        params: symbolParam,
        query: HistoryQueryParams,
        responses: { 200: HistoryList },
        errors: ["asset_not_found", "invalid_query"],
      },
    },
  ];
}
