/**
 * The WebSocket hub on an in-memory transport (topics as sets): the protocol, subscriptions, replay seams, limits and
 * backpressure, without sockets. The same hub runs behind uWS in the service (test/ws/ws.test.ts).
 */
import { describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { WsHub, type LiveTransition, type WsConnection, type WsTransport } from "../../src/http/ws/hub.ts";
import { parseClientMessage, ProtocolError, WS_LIMITS } from "../../src/http/ws/protocol.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const USDT = catalog.bySymbol("USDT")!;
const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);

class FakeConn implements WsConnection {
  readonly received: Record<string, unknown>[] = [];
  readonly topics = new Set<string>();
  ended: { code: number; reason: string } | null = null;
  buffered = 0;
  constructor(private readonly bus: Bus) {}
  send(text: string): void {
    if (this.ended === null) this.received.push(JSON.parse(text) as Record<string, unknown>);
  }
  subscribe(topic: string): void {
    this.topics.add(topic);
    this.bus.subs.add(this);
  }
  unsubscribe(topic: string): void {
    this.topics.delete(topic);
  }
  end(code: number, reason: string): void {
    this.ended = { code, reason };
    this.bus.subs.delete(this);
  }
  bufferedAmount(): number {
    return this.buffered;
  }
  of(type: string): Record<string, unknown>[] {
    return this.received.filter((m) => m["type"] === type);
  }
}

class Bus implements WsTransport {
  readonly subs = new Set<FakeConn>();
  publish(topic: string, text: string): void {
    for (const c of this.subs) if (c.topics.has(topic)) c.send(text);
  }
}

function setup() {
  const clock = new SimulatedClock(T0);
  let wall = T0;
  const bus = new Bus();
  let closes = 0;
  const hub = new WsHub({ catalog, clock, transport: bus, wall: () => wall, onBackpressureClose: () => closes++ });
  const open = (ip = "10.0.0.1") => {
    const conn = new FakeConn(bus);
    const session = hub.connect(conn, ip);
    return { conn, session };
  };
  const send = (s: ReturnType<typeof open>, msg: unknown) => hub.message(s.session!, typeof msg === "string" ? msg : JSON.stringify(msg));
  return { clock, hub, bus, open, send, advance: (ms: number) => (wall += ms), closes: () => closes };
}

let nextSeq = 1;
function transition(mint: string, asset: string, seq = nextSeq++): LiveTransition {
  return { seq, alert_id: `00000000-0000-8000-8000-${String(seq).padStart(12, "0")}`, mint, asset, from_state: "PEGGED", to_state: "DRIFT", discount: "0.003", ts: new Date(T0).toISOString() };
}

describe("client messages", () => {
  it("parses the three operations and refuses everything else with invalid_message", () => {
    expect(parseClientMessage('{"op":"subscribe","assets":["USDC","*"],"since_seq":4}')).toEqual({ op: "subscribe", assets: ["USDC", "*"], sinceSeq: 4 });
    expect(parseClientMessage('{"op":"unsubscribe","assets":["USDC"]}')).toEqual({ op: "unsubscribe", assets: ["USDC"] });
    expect(parseClientMessage('{"op":"ping"}')).toEqual({ op: "ping" });
    for (const bad of ["", "nope", "[]", "null", '{"op":"dance"}', '{"op":"subscribe"}', '{"op":"subscribe","assets":[]}', '{"op":"subscribe","assets":[1]}', '{"op":"subscribe","assets":["USDC"],"since_seq":-1}', '{"op":"subscribe","assets":["USDC"],"since_seq":1.5}']) {
      expect(() => parseClientMessage(bad), bad).toThrow(ProtocolError);
    }
    const many = JSON.stringify({ op: "subscribe", assets: Array.from({ length: 300 }, (_, i) => `A${i}`) });
    expect(() => parseClientMessage(many)).toThrow(expect.objectContaining({ code: "too_many_assets" }));
  });
});

describe("the hub", () => {
  it("greets with the latest sequence, then snapshots each subscribed asset and streams its live messages only", () => {
    const t = setup();
    t.hub.seed([{ mint: USDC.mint, state: "DRIFT", discount: "0.003", at: T0 - 1000 }]);
    t.hub.transition(transition(USDT.mint, "USDT", 7));
    const c = t.open();
    expect(c.conn.received[0]).toMatchObject({ type: "hello", seq: 7, methodology: "1.0.0", server_time: new Date(T0).toISOString() });
    t.send(c, { op: "subscribe", assets: ["USDC"] });
    expect(c.conn.of("snapshot")).toEqual([{ type: "snapshot", seq: 7, asset: "USDC", state: "DRIFT", discount: "0.003", risk_score: expect.any(Number), updated_at: new Date(T0 - 1000).toISOString() }]);
    t.hub.transition(transition(USDT.mint, "USDT", 8));
    t.hub.transition(transition(USDC.mint, "USDC", 9));
    t.hub.state({ mint: USDC.mint, state: "DRIFT", discount: "0.004", at: T0 });
    t.hub.state({ mint: USDT.mint, state: "PEGGED", discount: "0", at: T0 });
    expect(c.conn.of("transition").map((m) => m["seq"])).toEqual([9]);
    expect(c.conn.of("transition")[0]).toMatchObject({ asset: "USDC", receipt_url: `/v1/audit/${transition(USDC.mint, "USDC", 9).alert_id}` });
    expect(c.conn.of("state")).toEqual([{ type: "state", seq: 9, asset: "USDC", state: "DRIFT", discount: "0.004", risk_score: expect.any(Number), updated_at: new Date(T0).toISOString() }]);
  });

  it("renders a state only when someone listens to its asset, and still snapshots the latest for a later subscriber", () => {
    const t = setup();
    const c = t.open();
    t.hub.state({ mint: USDC.mint, state: "DRIFT", discount: "0.004", at: T0 });
    expect(t.hub.stats.statesPublished).toBe(0); // nobody subscribed: not rendered
    t.send(c, { op: "subscribe", assets: ["USDT"] });
    t.advance(1000);
    t.hub.state({ mint: USDC.mint, state: "DRIFT", discount: "0.005", at: T0 + 1 });
    expect(t.hub.stats.statesPublished).toBe(0); // USDT's listener does not hear USDC
    t.send(c, { op: "subscribe", assets: ["USDC"] });
    expect(c.conn.of("snapshot").at(-1)).toMatchObject({ asset: "USDC", discount: "0.005" });
    t.advance(1000);
    t.hub.state({ mint: USDC.mint, state: "DRIFT", discount: "0.006", at: T0 + 2 });
    expect(c.conn.of("state").map((m) => m["discount"])).toEqual(["0.006"]);
    t.send(c, { op: "unsubscribe", assets: ["USDC"] });
    t.advance(1000);
    t.hub.state({ mint: USDC.mint, state: "DRIFT", discount: "0.007", at: T0 + 3 });
    expect(t.hub.stats.statesPublished).toBe(1);
    const all = t.open();
    t.send(all, { op: "subscribe", assets: ["*"] });
    t.advance(1000);
    t.hub.state({ mint: USDC.mint, state: "DRIFT", discount: "0.008", at: T0 + 4 });
    expect(all.conn.of("state").map((m) => m["discount"])).toEqual(["0.008"]);
    t.hub.disconnect(all.session!);
    t.advance(1000);
    t.hub.state({ mint: USDC.mint, state: "DRIFT", discount: "0.009", at: T0 + 5 });
    expect(t.hub.stats.statesPublished).toBe(2);
  });

  it("an asset never seen is an UNKNOWN snapshot; a snapshot older than 15 minutes collapses to UNKNOWN", () => {
    const t = setup();
    t.hub.seed([{ mint: USDT.mint, state: "PEGGED", discount: "0", at: T0 - 16 * 60_000 }]);
    const c = t.open();
    t.send(c, { op: "subscribe", assets: ["USDC", "USDT"] });
    expect(c.conn.of("snapshot").map((m) => [m["asset"], m["state"], m["risk_score"], m["discount"]])).toEqual([
      ["USDC", "UNKNOWN", null, null],
      ["USDT", "UNKNOWN", null, "0"],
    ]);
  });

  it("'*' subscribes every active asset through one topic: no message twice, even with explicit assets", () => {
    const t = setup();
    const c = t.open();
    t.send(c, { op: "subscribe", assets: ["USDC"] });
    t.send(c, { op: "subscribe", assets: ["*"] });
    t.send(c, { op: "subscribe", assets: ["USDC"] });
    expect(c.conn.topics).toEqual(new Set(["hb", "all"]));
    t.hub.transition(transition(USDC.mint, "USDC"));
    t.hub.transition(transition(USDT.mint, "USDT"));
    expect(c.conn.of("transition")).toHaveLength(2);
    // Unsubscribing one asset from '*' keeps every other asset, explicitly.
    t.send(c, { op: "unsubscribe", assets: ["USDT"] });
    expect(c.conn.topics.has("all")).toBe(false);
    expect(c.conn.topics.size).toBe(1 + catalog.active.length - 1);
    t.hub.transition(transition(USDT.mint, "USDT"));
    t.hub.transition(transition(USDC.mint, "USDC"));
    expect(c.conn.of("transition").map((m) => m["asset"])).toEqual(["USDC", "USDT", "USDC"]);
    t.send(c, { op: "unsubscribe", assets: ["*"] });
    expect(c.conn.topics).toEqual(new Set(["hb"]));
  });

  it("since_seq replays the missed transitions of the subscribed assets in order, then live, with no gap and no duplicate", () => {
    const t = setup();
    const seqs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const tr = transition(i % 2 === 0 ? USDC.mint : USDT.mint, i % 2 === 0 ? "USDC" : "USDT", 100 + i);
      t.hub.transition(tr);
      if (i % 2 === 0) seqs.push(tr.seq);
    }
    const c = t.open();
    t.send(c, { op: "subscribe", assets: ["USDC"], since_seq: 105 });
    t.hub.transition(transition(USDC.mint, "USDC", 120));
    const got = c.conn.of("transition").map((m) => m["seq"]);
    expect(got).toEqual([...seqs.filter((s) => s > 105), 120]);
    // Replay comes before the snapshot, the snapshot before anything live.
    const replayed = seqs.filter((s) => s > 105).length;
    expect(c.conn.received.map((m) => m["type"])).toEqual(["hello", ...Array<string>(replayed).fill("transition"), "snapshot", "transition"]);
  });

  it("says when since_seq reaches further back than the replay window", () => {
    const t = setup();
    t.hub.coverFrom(50);
    t.hub.transition(transition(USDC.mint, "USDC", 60));
    const c = t.open();
    t.send(c, { op: "subscribe", assets: ["USDC"], since_seq: 10 });
    expect(c.conn.of("error")).toEqual([{ type: "error", error: "replay_truncated", message: expect.stringContaining("50") }]);
    expect(c.conn.of("transition").map((m) => m["seq"])).toEqual([60]);
  });

  it("coalesces live state to at most 4 per second per asset, always ending on the latest", async () => {
    const t = setup();
    const c = t.open();
    t.send(c, { op: "subscribe", assets: ["USDC"] });
    for (let i = 0; i < 10; i++) t.hub.state({ mint: USDC.mint, state: "PEGGED", discount: `0.000${i}`, at: T0 + i });
    expect(c.conn.of("state").map((m) => m["discount"])).toEqual(["0.0000"]);
    await new Promise((r) => setTimeout(r, 300));
    expect(c.conn.of("state").map((m) => m["discount"])).toEqual(["0.0000", "0.0009"]);
  });

  it("refuses the 21st connection of an address (error, then close 1008)", () => {
    const t = setup();
    for (let i = 0; i < WS_LIMITS.connectionsPerIp; i++) expect(t.open().session).not.toBeNull();
    const extra = t.open();
    expect(extra.session).toBeNull();
    expect(extra.conn.received).toEqual([{ type: "error", error: "too_many_connections", message: expect.any(String) }]);
    expect(extra.conn.ended?.code).toBe(1008);
    expect(t.open("10.0.0.2").session).not.toBeNull();
  });

  it("answers bad messages with an error and keeps the connection", () => {
    const t = setup();
    const c = t.open();
    t.send(c, "not json");
    t.hub.message(c.session!, null);
    t.send(c, { op: "subscribe", assets: ["NOPE", "USDC"] });
    t.advance(1000);
    t.send(c, { op: "ping" });
    expect(c.conn.of("error").map((m) => m["error"])).toEqual(["invalid_message", "invalid_message", "unknown_asset"]);
    expect(c.conn.of("snapshot")).toHaveLength(0);
    expect(c.conn.of("pong")).toHaveLength(1);
    expect(c.conn.ended).toBeNull();
  });

  it("limits client messages to 10 per second (one rate_limited error), and closes a flood", () => {
    const t = setup();
    const c = t.open();
    for (let i = 0; i < 15; i++) t.send(c, { op: "ping" });
    expect(c.conn.of("pong")).toHaveLength(10);
    expect(c.conn.of("error").map((m) => m["error"])).toEqual(["rate_limited"]);
    t.advance(1000);
    t.send(c, { op: "ping" });
    expect(c.conn.of("pong")).toHaveLength(11);
    for (let i = 0; i < 60; i++) t.send(c, { op: "ping" });
    expect(c.conn.ended?.code).toBe(1008);
    expect(t.hub.stats.clients).toBe(0);
  });

  it("closes a client with more than 1 MiB queued with 1013 and counts it", () => {
    const t = setup();
    const slow = t.open();
    const fine = t.open();
    slow.conn.buffered = WS_LIMITS.backpressureBytes + 1;
    fine.conn.buffered = WS_LIMITS.backpressureBytes;
    t.hub.sweepBackpressure();
    expect(slow.conn.ended).toEqual({ code: 1013, reason: expect.any(String) });
    expect(fine.conn.ended).toBeNull();
    expect(t.closes()).toBe(1);
    expect(t.hub.stats.backpressureCloses).toBe(1);
  });
});
