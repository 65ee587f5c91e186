/** The live socket: subscribe, resume from the highest seq, de-duplicate transitions, back off, heartbeat. */
import { describe, expect, it } from "vitest";
import { IdSet, LiveSocket, backoffDelay, wsUrl, type SocketLike, type Status } from "../../public/static/ws.js";

class FakeSocket implements SocketLike {
  static all: FakeSocket[] = [];
  readyState = 0;
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: unknown) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  sent: unknown[] = [];
  closed: number | null = null;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }
  close(code = 1000): void {
    this.closed = code;
    this.readyState = 3;
  }
  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }
  receive(msg: unknown): void {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }
  drop(): void {
    this.readyState = 3;
    this.onclose?.({});
  }
}

/** Manual timers: `advance(ms)` fires what is due. */
function fakeTimers() {
  let now = 0;
  let next = 1;
  const pending = new Map<number, { at: number; f: () => void; every: number | null }>();
  return {
    now: () => now,
    timers: {
      setTimeout: (f: () => void, ms: number) => (pending.set(next, { at: now + ms, f, every: null }), next++),
      clearTimeout: (h: unknown) => void pending.delete(h as number),
      setInterval: (f: () => void, ms: number) => (pending.set(next, { at: now + ms, f, every: ms }), next++),
      clearInterval: (h: unknown) => void pending.delete(h as number),
    },
    advance(ms: number) {
      const end = now + ms;
      for (;;) {
        const due = [...pending.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
        if (due === undefined) break;
        const [h, t] = due;
        now = t.at;
        if (t.every === null) pending.delete(h);
        else t.at += t.every;
        t.f();
      }
      now = end;
    },
    pendingCount: () => pending.size,
  };
}

function setup(assets = ["*"]) {
  FakeSocket.all = [];
  const clock = fakeTimers();
  const messages: Record<string, unknown>[] = [];
  const statuses: [Status, { delayMs?: number }][] = [];
  const live = new LiveSocket({
    url: "ws://host/v1/ws",
    assets,
    WebSocketImpl: FakeSocket,
    timers: clock.timers,
    now: clock.now,
    onMessage: (m) => messages.push(m),
    onStatus: (s, d) => statuses.push([s, d]),
  });
  const last = (): FakeSocket => FakeSocket.all[FakeSocket.all.length - 1]!;
  return { live, clock, messages, statuses, last };
}

describe("helpers", () => {
  it("backs off from 0.5 s doubling to 10 s", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 50].map((n) => backoffDelay(n))).toEqual([500, 1000, 2000, 4000, 8000, 10000, 10000, 10000]);
  });

  it("matches the page's protocol", () => {
    expect(wsUrl({ protocol: "http:", host: "localhost:8080" })).toBe("ws://localhost:8080/v1/ws");
    expect(wsUrl({ protocol: "https:", host: "oracle.example" })).toBe("wss://oracle.example/v1/ws");
  });

  it("IdSet forgets the oldest beyond its limit", () => {
    const s = new IdSet(2);
    expect(s.add("a")).toBe(true);
    expect(s.add("a")).toBe(false);
    s.add("b");
    s.add("c");
    expect(s.has("a")).toBe(false);
    expect(s.has("c")).toBe(true);
  });
});

describe("LiveSocket", () => {
  it("subscribes on open, passes messages on, swallows heartbeats", () => {
    const { live, messages, statuses, last } = setup();
    live.start();
    expect(last().url).toBe("ws://host/v1/ws");
    last().open();
    expect(last().sent).toEqual([{ op: "subscribe", assets: ["*"] }]);
    expect(statuses.map((s) => s[0])).toEqual(["connecting", "connected"]);
    last().receive({ type: "hello", seq: 40, server_time: "1970-01-01T00:00:05.000Z", methodology: "1.0.0" });
    last().receive({ type: "ping" });
    last().receive({ type: "snapshot", seq: 41, asset: "USDC", state: "PEGGED", discount: "0.0001", risk_score: 1, updated_at: "x" });
    expect(messages.map((m) => m["type"])).toEqual(["hello", "snapshot"]);
    expect(live.clockOffsetMs).toBe(5000);
    expect(live.lastSeq).toBe(41); // hello's seq is not a message we received
    // A server clock running ahead (a fast scenario): the estimate follows what it publishes, never backwards.
    last().receive({ type: "state", seq: 41, asset: "USDC", state: "PEGGED", discount: "0", risk_score: 1, updated_at: "1970-01-01T00:00:09.000Z" });
    expect(live.clockOffsetMs).toBe(9000);
    last().receive({ type: "state", seq: 41, asset: "USDC", state: "PEGGED", discount: "0", risk_score: 1, updated_at: "1970-01-01T00:00:07.000Z" });
    expect(live.clockOffsetMs).toBe(9000);
  });

  it("de-duplicates transitions by alert_id", () => {
    const { live, messages, last } = setup();
    live.start();
    last().open();
    const t = { type: "transition", seq: 7, alert_id: "a1", asset: "USDC", from_state: "PEGGED", to_state: "DRIFT" };
    last().receive(t);
    last().receive({ ...t, seq: 8 });
    last().receive({ ...t, alert_id: "a2", seq: 9 });
    expect(messages.map((m) => m["alert_id"])).toEqual(["a1", "a2"]);
    expect(live.lastSeq).toBe(9);
  });

  it("reconnects with backoff and resumes from the highest seq seen", () => {
    const { live, clock, statuses, last } = setup(["USDC"]);
    live.start();
    last().open();
    last().receive({ type: "transition", seq: 12, alert_id: "a1", asset: "USDC" });
    last().receive({ type: "state", seq: 15, asset: "USDC", state: "DRIFT" });
    last().drop();
    expect(statuses[statuses.length - 1]).toEqual(["reconnecting", { attempt: 1, delayMs: 500 }]);
    clock.advance(499);
    expect(FakeSocket.all).toHaveLength(1);
    clock.advance(1);
    expect(FakeSocket.all).toHaveLength(2);
    // The second attempt fails before opening: the delay doubles.
    last().drop();
    expect(statuses[statuses.length - 1]).toEqual(["reconnecting", { attempt: 2, delayMs: 1000 }]);
    clock.advance(1000);
    expect(FakeSocket.all).toHaveLength(3);
    last().open();
    expect(last().sent).toEqual([{ op: "subscribe", assets: ["USDC"], since_seq: 15 }]);
    // A replayed transition already shown is dropped.
    last().receive({ type: "hello", seq: 20 });
    expect(live.attempt).toBe(0);
    expect(live.lastSeq).toBe(15);
  });

  it("caps the backoff at 10 s", () => {
    const { live, clock, statuses, last } = setup();
    live.start();
    for (let i = 0; i < 8; i++) {
      last().drop();
      clock.advance(10_000);
    }
    const delays = statuses.filter((s) => s[0] === "reconnecting" && (s[1].delayMs ?? 0) > 0).map((s) => s[1].delayMs);
    expect(delays).toEqual([500, 1000, 2000, 4000, 8000, 10000, 10000, 10000]);
  });

  it("pings every 20 s and replaces a connection silent for 45 s", () => {
    const { live, clock, last } = setup();
    live.start();
    const first = last();
    first.open();
    clock.advance(20_000);
    expect(first.sent).toContainEqual({ op: "ping" });
    first.receive({ type: "pong" });
    clock.advance(40_000); // 20 s + 40 s: last frame at 20 s, checked at 40 s (20 s idle) and 60 s (40 s idle)
    expect(first.closed).toBeNull();
    clock.advance(20_000); // 80 s: 60 s without a frame
    expect(first.closed).toBe(4000);
    clock.advance(500);
    expect(FakeSocket.all).toHaveLength(2);
  });

  it("stops for good", () => {
    const { live, clock, statuses, last } = setup();
    live.start();
    last().open();
    live.stop();
    expect(last().closed).toBe(1000);
    expect(statuses[statuses.length - 1]![0]).toBe("closed");
    clock.advance(60_000);
    expect(FakeSocket.all).toHaveLength(1);
    expect(clock.pendingCount()).toBe(0);
  });

  it("sends a new subscription at once when connected", () => {
    const { live, last } = setup(["USDC"]);
    live.start();
    last().open();
    live.subscribe(["USDT"]);
    expect(last().sent[1]).toEqual({ op: "subscribe", assets: ["USDT"] });
  });
});
