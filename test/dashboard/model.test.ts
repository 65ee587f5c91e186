/** View-model helpers: the transition feed, live card updates, filters and sorting; and the REST helper. */
import { describe, expect, it } from "vitest";
import { ApiError, errorText, getJson, retryAfterSecs } from "../../public/static/api.js";
import { Feed, applyLive, filterCards, mergeRest, normaliseTransition, sortCards, stateSummary, type Card } from "../../public/static/model.js";

const alertRow = (id: string, at: string) => ({
  id,
  asset: "USDC",
  from_state: "PEGGED",
  to_state: "DRIFT",
  discount: "0.004",
  discount_bps: 40,
  detected_at: at,
  receipt_url: `/v1/audit/${id}`,
  monitoring_only: false,
});
const wsTransition = (id: string, ts: string) => ({
  type: "transition",
  seq: 1,
  alert_id: id,
  asset: "USDT",
  from_state: "DRIFT",
  to_state: "DEPEG",
  discount: "0.012",
  ts,
  receipt_url: `/v1/audit/${id}`,
});

describe("Feed", () => {
  it("normalises REST rows and stream messages to one shape", () => {
    expect(normaliseTransition(alertRow("a", "2026-01-01T00:00:00.000Z"))).toEqual({
      id: "a",
      asset: "USDC",
      from_state: "PEGGED",
      to_state: "DRIFT",
      discount: "0.004",
      at: "2026-01-01T00:00:00.000Z",
      receipt_url: "/v1/audit/a",
      monitoring_only: false,
    });
    expect(normaliseTransition(wsTransition("b", "2026-01-01T00:00:01.000Z"))?.at).toBe("2026-01-01T00:00:01.000Z");
    // A stream transition does not say whether the asset is monitoring only: its card does.
    expect(normaliseTransition(wsTransition("b", "2026-01-01T00:00:01.000Z"))?.monitoring_only).toBeNull();
    expect(normaliseTransition({ ...alertRow("c", "2026-01-01T00:00:00.000Z"), monitoring_only: true })?.monitoring_only).toBe(true);
    expect(normaliseTransition({ asset: "x" })).toBeNull();
  });

  it("keeps the newest first, drops duplicates, holds at most max rows", () => {
    const f = new Feed(3);
    expect(f.add([alertRow("a", "2026-01-01T00:00:01.000Z"), alertRow("b", "2026-01-01T00:00:03.000Z")])).toBe(true);
    expect(f.add([wsTransition("c", "2026-01-01T00:00:02.000Z")])).toBe(true);
    expect(f.rows.map((r) => r.id)).toEqual(["b", "c", "a"]);
    expect(f.add([wsTransition("b", "2026-01-01T00:00:03.000Z")])).toBe(false);
    f.add([wsTransition("d", "2026-01-01T00:00:04.000Z")]);
    expect(f.rows.map((r) => r.id)).toEqual(["d", "b", "c"]);
  });

  it("caps at 100 by default", () => {
    const f = new Feed();
    f.add(Array.from({ length: 150 }, (_, i) => alertRow(`id${i}`, new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString())));
    expect(f.rows).toHaveLength(100);
    expect(f.rows[0]!.id).toBe("id149");
  });
});

describe("cards", () => {
  const card: Card = { symbol: "USDC", class: "stable_fiat", state: "PEGGED", discount: "0.0001", risk_score: 1, updated_at: "2026-01-01T00:00:10.000Z", series_24h: [0.0001] };

  it("applies newer live state and ignores older", () => {
    const next = applyLive(card, { type: "state", asset: "USDC", state: "DRIFT", discount: "0.004", risk_score: 30, updated_at: "2026-01-01T00:00:11.000Z" });
    expect(next).toMatchObject({ state: "DRIFT", discount: "0.004", risk_score: 30, series_24h: [0.0001], class: "stable_fiat" });
    expect(applyLive(card, { state: "DEPEG", updated_at: "2026-01-01T00:00:09.000Z" })).toBe(card);
  });

  it("a REST refresh keeps live fields that are newer than it", () => {
    const liveCard = { ...card, state: "DRIFT", updated_at: "2026-01-01T00:00:20.000Z" };
    const fresh = { ...card, series_24h: [0.0002], updated_at: "2026-01-01T00:00:15.000Z" };
    expect(mergeRest<Card>(liveCard, fresh)).toMatchObject({ state: "DRIFT", series_24h: [0.0002], updated_at: "2026-01-01T00:00:20.000Z" });
    const newer = { ...fresh, state: "PEGGED", updated_at: "2026-01-01T00:00:30.000Z" };
    expect(mergeRest<Card>(liveCard, newer)).toBe(newer);
    expect(mergeRest(undefined, fresh)).toBe(fresh);
  });

  const cards: Card[] = [
    { symbol: "USDC", class: "stable_fiat", state: "PEGGED", discount: "0.0001", risk_score: 1 },
    { symbol: "JitoSOL", class: "lst", state: "DEPEG", discount: "-0.02", risk_score: 60 },
    { symbol: "USDT", class: "stable_fiat", state: "DRIFT", discount: "0.003", risk_score: 30 },
    { symbol: "hyloSOL+", class: "lst", state: null, discount: null, risk_score: null },
    { symbol: "USD*", class: "stable_yield", state: "UNKNOWN", discount: "0.05", risk_score: null },
  ];

  it("filters by class and state; a missing state is UNKNOWN", () => {
    expect(filterCards(cards, { cls: "lst" }).map((c) => c.symbol)).toEqual(["JitoSOL", "hyloSOL+"]);
    expect(filterCards(cards, { state: "UNKNOWN" }).map((c) => c.symbol)).toEqual(["hyloSOL+", "USD*"]);
    expect(filterCards(cards, { cls: "stable_fiat", state: "DRIFT" }).map((c) => c.symbol)).toEqual(["USDT"]);
    expect(filterCards(cards)).toHaveLength(5);
  });

  it("sorts by severity, symbol, |discount| and risk", () => {
    expect(sortCards(cards).map((c) => c.symbol)).toEqual(["JitoSOL", "USDT", "USD*", "USDC", "hyloSOL+"]);
    expect(sortCards(cards, "symbol").map((c) => c.symbol)).toEqual(["JitoSOL", "USD*", "USDC", "USDT", "hyloSOL+"]);
    expect(sortCards(cards, "discount").map((c) => c.symbol)).toEqual(["USD*", "JitoSOL", "USDT", "USDC", "hyloSOL+"]);
    expect(sortCards(cards, "risk").map((c) => c.symbol)).toEqual(["JitoSOL", "USDT", "USDC", "USD*", "hyloSOL+"]);
  });
});

describe("getJson", () => {
  const respond = (status: number, body: string, headers: Record<string, string> = {}) => async () => ({
    status,
    statusText: "",
    headers: { get: (n: string) => headers[n.toLowerCase()] ?? null },
    text: async () => body,
  });

  it("returns 200 and 202 bodies with Retry-After", async () => {
    await expect(getJson("/x", { fetchImpl: respond(200, '{"a":1}') })).resolves.toEqual({ status: 200, body: { a: 1 }, retryAfter: 2 });
    const pending = await getJson("/x", { fetchImpl: respond(202, '{"id":"i","evidence_status":"pending"}', { "retry-after": "3" }) });
    expect(pending).toMatchObject({ status: 202, retryAfter: 3 });
  });

  it("turns ApiError bodies into ApiError exceptions", async () => {
    const e = await getJson("/x", { fetchImpl: respond(410, '{"error":"gone","message":"dead-lettered"}') }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ status: 410, code: "gone", message: "dead-lettered" });
    expect(errorText(e)).toBe("dead-lettered (410 gone)");
    const bare = await getJson("/x", { fetchImpl: respond(502, "<html>") }).catch((x: unknown) => x);
    expect(bare).toMatchObject({ status: 502, code: "http_502" });
  });

  it("reads Retry-After seconds", () => {
    expect(retryAfterSecs("2")).toBe(2);
    expect(retryAfterSecs(null)).toBe(2);
    expect(retryAfterSecs("Wed, 21 Oct 2015 07:28:00 GMT", 4)).toBe(4);
    expect(retryAfterSecs("0")).toBe(1);
    expect(retryAfterSecs("9999")).toBe(60);
  });
});

describe("stateSummary", () => {
  it("counts every state (a missing or unknown one as UNKNOWN), the total and the monitoring-only assets", () => {
    const cards: Card[] = [
      { symbol: "A", state: "PEGGED" },
      { symbol: "B", state: "PEGGED", monitoring_only: true },
      { symbol: "C", state: "DEPEG", monitoring_only: true },
      { symbol: "D", state: null },
      { symbol: "E" },
      { symbol: "F", state: "BOGUS" },
      { symbol: "G", state: "BLACK_SWAN", monitoring_only: false },
    ];
    expect(stateSummary(cards)).toEqual({
      total: 7,
      counts: { PEGGED: 2, DRIFT: 0, DEPEG: 1, CRITICAL: 0, BLACK_SWAN: 1, UNKNOWN: 3 },
      monitoringOnly: 2,
    });
    expect(stateSummary([])).toEqual({ total: 0, counts: { PEGGED: 0, DRIFT: 0, DEPEG: 0, CRITICAL: 0, BLACK_SWAN: 0, UNKNOWN: 0 }, monitoringOnly: 0 });
  });
});
